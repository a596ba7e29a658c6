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


def _claims(root, skip=frozenset()):
    """(package, claim, runs) for every claim whose experiment has runs
    under `root`, but the claims (texts) in `skip`."""
    for package in headline.PAGES:
        runs = headline.load_runs(root, package)
        for claim in headline.claims_of(package):
            if claim.experiment in runs and claim.text not in skip:
                yield package, claim, runs[claim.experiment]


def null_model_passes(root, skip=frozenset()) -> list[str]:
    """The rows (but those of no effect, `Zero`) whose rule does not read
    "disagrees" on their null model (`Claim.null`: the system made equal
    to its baseline)."""
    passed = []
    for package, claim, runs in _claims(root, skip):
        if isinstance(claim.rule, Zero):
            continue
        _, verdict = claim.evaluate(claim.null(runs))
        if verdict != "disagrees":
            passed.append(f"{package}: {claim.text}: {verdict}")
    return passed


def null_model_changes(root, skip=frozenset()) -> list[str]:
    """The rows whose null model changes more than the statistics."""
    changed = []
    for package, claim, runs in _claims(root, skip):
        null = claim.null(runs)
        if not (list(null.columns) == list(runs.columns) and len(null) == len(runs)
                and null[headline.params(runs)].equals(runs[headline.params(runs)])):
            changed.append(f"{package}: {claim.text}")
    return changed


def test_null_model_disagrees_with_every_effect_row():
    """Each committed row's rule applied to a model in which the system
    equals its baseline: every effect and every ranking then reads
    "disagrees". (A row whose paper reports no effect agrees with such a
    model by design; its band is tested below.) `test_claims_on_tiny_runs`
    does the same on runs that exist before any full run is committed."""
    assert null_model_passes(ROOT) == []


def test_null_model_changes_only_the_system_rows():
    assert null_model_changes(ROOT) == []


#: The claims whose points the experiments' tiny grids do not hold (the
#: tiny grid's workloads or scenario points, in brackets): on tiny runs
#: they must fail as a run without the claim's points does.
BEYOND_TINY = {
    "... and cc (Fig. 1)": "chp-fig1 tiny: mcf, bfs",
    "SWAP leaves GAPBS's LLC misses unchanged: the largest ratio of bfs, cc, tc, 8 colors (IV-B-4)": "chp-swap tiny: mcf",
    "... at portion 100%, degree 90%, dispersed, unallocated holes (Fig. 7)": "pp-fig7 tiny: clustered, 25%, 50%",
    "... and perforated pages 31.2% below ideal 2 MiB pages there: speedup of perforated over ideal-2m (Fig. 7)":
        "pp-fig7 tiny: clustered, 25%, 50%",
    "Clustered holes leave fewer bitmap entries in the L2 TLB than dispersed ones: clustered over dispersed, Fig. 7's "
    "headline point (Fig. 8)": "pp-fig8 tiny: clustered",
    **{f"ET - THP gap in cycles over 4 KiB's, {w} (fig8)": "et-native tiny: gups, canneal, streamcluster"
       for w in ("hashjoin", "btree", "omnetpp")},
    "... bfs: no gap (fig8)": "et-native tiny: gups, canneal, streamcluster",
    "THP's cycles over 4 KiB's, hashjoin (fig8)": "et-native tiny: gups, canneal, streamcluster",
    "Cycles ET saves per walk it removes, btree, walk latency as the presets' (artifact's fig8 counts)":
        "et-walkcost tiny: gups, canneal",
    **{f"In a VM, guest over 4 KiB stage-2 pages (as the artifact's runs): ET - THP gap, {w} (fig10)":
       "et-virt tiny: gups, canneal, streamcluster" for w in ("hashjoin", "btree", "bfs")},
    "At FMFI 99%: ET - THP gap, bfs (fig11)": "et-frag tiny: canneal, hashjoin",
}


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory):
    """Every experiment a claim names, run at its tiny variant with three
    seeds and saved as `--save-results` saves a full run (the writer told
    that 'tiny' is the saved variant): the same files the generator reads
    from results/, in tens of minutes instead of days."""
    base = tmp_path_factory.mktemp("tiny-results")
    root = base / "results"
    ids = sorted({c.experiment for p in headline.PAGES for c in headline.claims_of(p)})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results, "SAVED_VARIANT", "tiny")
        for exp_id in ids:
            experiments.reproduce(exp_id, base / "out" / exp_id, variant="tiny", seeds=3, jobs=2, save_results=root)
    return root


@pytest.mark.slow
def test_claims_on_tiny_runs(tiny_root, monkeypatch):
    """Every claim's measure and null model run on saved runs of its
    experiment: a verdict for every claim the tiny grid can answer, the
    one-line failure for those it cannot (BEYOND_TINY), the null models
    "disagrees", and the pages render from that root."""
    assert set(BEYOND_TINY) <= {c.text for p in headline.PAGES for c in headline.claims_of(p)}
    for package, claim, runs in _claims(tiny_root):
        if claim.text in BEYOND_TINY:
            with pytest.raises(headline.ClaimError, match=f"results/{package}/{claim.experiment}: cannot answer"):
                _rows_of(package, claim, runs)
        else:
            assert claim.evaluate(runs)[1] in headline.VERDICTS, claim.text
    assert null_model_passes(tiny_root, BEYOND_TINY) == []
    assert null_model_changes(tiny_root, BEYOND_TINY) == []
    answerable = {p: [c for c in headline.claims_of(p) if c.text not in BEYOND_TINY] for p in headline.PAGES}
    monkeypatch.setattr(headline, "claims_of", lambda package: answerable[package])
    pages = headline.render_pages(tiny_root)
    for package, page in headline.PAGES.items():
        text = pages[headline.REPO / page]
        assert headline.NOT_COMMITTED not in text, page
        assert f"From `results/{package}/`" in text and "3 seeds" in text, page


def _rows_of(package, claim, runs):
    """`headline.rows` for one claim."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(headline, "claims_of", lambda _: [claim])
        return headline.rows(package, {claim.experiment: runs})


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


def test_a_run_that_cannot_answer_a_claim_is_one_line_and_writes_nothing(tmp_path, capsys):
    """A saved et-native run holding only gups's 4 KiB runs: the generator
    names the run and the claim it cannot answer, exits 2 and leaves every
    page as it was."""
    d = tmp_path / "results" / "elastic" / "et-native"
    d.mkdir(parents=True)
    runs = pd.DataFrame({"system": ["4k"] * 3, "workload": ["gups"] * 3, "seed": [1, 2, 3],
                         "config_hash": ["a", "b", "c"], "seconds": [1.0] * 3, "finished_at": ["x"] * 3,
                         "host": ["h"] * 3, "cycles": [10.0, 11.0, 12.0]})
    runs.to_csv(d / results.RUNS, index=False)
    (d / results.PROVENANCE).write_text('{"seeds": [1, 2, 3], "runs_finished": ["x", "x"]}')
    before = {p: p.read_bytes() for p in headline.render_pages(ROOT)}
    assert headline.main(["--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results/elastic/et-native: cannot answer" in err, err
    assert {p: p.read_bytes() for p in before} == before
