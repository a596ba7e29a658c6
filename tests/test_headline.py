"""The results pages' headline tables (pagelab.headline): generated from the
committed runs, each row's rule stated, and no rule that a model with no
effect passes."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from pagelab import experiments, headline, results
from pagelab.headline import Effect, Estimate, Order, Zero

pytest.importorskip("duckdb")

ROOT = headline.REPO / "results"


def test_pages_are_generated_from_the_committed_runs():
    """Every page's table (and the README's summary) is what results/
    gives today: regenerate with `python -m pagelab.headline`."""
    stale = [str(p.relative_to(headline.REPO)) for p, text in headline.render_pages(ROOT).items()
             if p.read_text(encoding="utf-8") != text]
    assert stale == [], f"regenerate with `.venv/bin/python -m pagelab.headline`: {stale}"


def _committed_claims():
    for package in headline.PAGES:
        runs = headline.load_runs(ROOT, package)
        for claim in headline.claims_of(package):
            if claim.experiment in runs:
                yield package, claim, runs[claim.experiment]


def test_null_model_disagrees_with_every_effect_row():
    """Each row's rule applied to a model in which the system equals its
    baseline (`Claim.null`): every effect and every ranking then reads
    "disagrees". (A row whose paper reports no effect agrees with such a
    model by design; its band is tested below.)"""
    passed = []
    for package, claim, runs in _committed_claims():
        if isinstance(claim.rule, Zero):
            continue
        _, verdict = claim.evaluate(claim.null(runs))
        if verdict != "disagrees":
            passed.append(f"{package}: {claim.text}: {verdict}")
    assert passed == []


def test_null_model_changes_only_the_system_rows():
    for _, claim, runs in _committed_claims():
        null = claim.null(runs)
        assert list(null.columns) == list(runs.columns) and len(null) == len(runs)
        assert null[headline.params(runs)].equals(runs[headline.params(runs)])


def test_every_claim_names_an_experiment_of_its_package_and_a_section_of_its_page():
    for package, page in headline.PAGES.items():
        ids = {e.id for e in experiments.all_experiments() if results.package_of(e) == package}
        text = (headline.REPO / page).read_text(encoding="utf-8")
        anchors = {headline.anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
        for claim in headline.claims_of(package):
            assert claim.experiment in ids, claim.text
            assert headline.anchor(claim.section) in anchors, f"{page} has no section {claim.section!r}"


# -- The rules, by hand --------------------------------------------------------


def est(mean: float, half: float = 0.01) -> Estimate:
    return Estimate(mean, half, 3)


def test_effect_rule():
    thp = Effect(0.790)  # a runtime ratio: the effect is -0.21
    assert thp.verdict(est(0.847)) == "agrees"  # -0.153: 0.73x
    assert thp.verdict(est(0.950)) == "direction"  # -0.05: 0.24x
    assert thp.verdict(est(0.600)) == "direction"  # -0.40: 1.9x
    assert thp.verdict(est(1.000)) == "disagrees"  # no effect
    assert thp.verdict(est(0.990, 0.02)) == "disagrees"  # the interval reaches 1: no sure sign
    assert thp.verdict(est(1.100)) == "disagrees"  # the other way
    gap = Effect(-0.05, 0.0)  # a gap in normalized cycles
    assert gap.verdict(est(-0.045, 0.002)) == "agrees"
    assert gap.verdict(est(0.0, 0.0)) == "disagrees"


def test_effect_rule_fails_what_the_old_et_rule_passed():
    """The old rule ("the gap within 0.05 of the artifact's") scored a model
    with ET equal to THP 7 of 8 on et-native; this one scores it 0."""
    gaps = {"gups": -0.05, "hashjoin": -0.08, "btree": -0.04, "canneal": -0.03, "omnetpp": 0.04, "astar": 0.01,
            "streamcluster": 0.02}
    assert sum(abs(0.0 - g) <= 0.05 for g in gaps.values()) >= 6
    assert all(Effect(g, 0.0).verdict(Estimate(0.0, 0.0, 3)) == "disagrees" for g in gaps.values())


def test_zero_rule_states_its_band():
    z = Zero(0.05)
    assert z.verdict(est(1.02, 0.01)) == "agrees"
    assert z.verdict(est(1.04, 0.02)) == "disagrees"  # reaches 1.06
    assert z.verdict(est(1.20)) == "disagrees"
    assert "1 ± 0.05" in z.rule()


def test_order_rule():
    order = Order((("chp", "thp"), ("chp", "coloring")))
    per_seed = pd.DataFrame({"chp": [0.55, 0.56, 0.54], "thp": [0.85, 0.84, 0.85], "coloring": [0.63, 0.64, 0.62]})
    assert order.verdict_of(per_seed) == "agrees"
    assert order.verdict_of(per_seed.assign(coloring=per_seed.chp)) == "disagrees"  # a tie is no order
    assert order.verdict_of(per_seed.assign(thp=[0.50, 0.60, 0.52])) == "disagrees"  # not sure over the seeds


def test_estimate_is_the_experiments_interval():
    from pagelab.experiments.common import mean_over_seeds

    v = pd.Series([1.0, 1.2, 1.1])
    t = mean_over_seeds(pd.DataFrame({"k": ["a"] * 3, "x": v, "seed": [1, 2, 3]}), ["k"])
    e = Estimate.of(v)
    assert e.mean == pytest.approx(t.x[0]) and e.half == pytest.approx(t.x_ci95[0])
