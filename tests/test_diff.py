"""`pagelab diff A B` and `pagelab.diff`: two runs, two stores, bad input."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import pagelab
from conftest import run_cli, small

#: gups over 32 MiB: THP backs it with 2 MiB pages, base with 4 KiB ones.
THP_VS_BASE = dict(workload={"kind": "gups", "footprint": "32MiB", "accesses": 40_000})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    base = pagelab.run(small(**THP_VS_BASE), out=d / "base")
    thp = pagelab.run(small(**THP_VS_BASE), **{"os.policy": "thp"}, out=d / "thp")
    return d, base, thp


def test_the_ratio_of_l2_tlb_misses_is_thps_over_bases(two_runs):
    d, base, thp = two_runs
    diff = pagelab.diff(d / "base", d / "thp")
    row = diff.stats.set_index("statistic").loc["dtlb.l2.misses"]
    assert row.a == base.stats["dtlb.l2.misses"] and row.b == thp.stats["dtlb.l2.misses"]
    assert row.ratio == pytest.approx(thp.stats["dtlb.l2.misses"] / base.stats["dtlb.l2.misses"])
    assert row.ratio < 1  # 2 MiB pages: fewer walks
    # Only what differs, largest changes first.
    assert (diff.stats.a != diff.stats.b).all()
    sizes = [abs(math.log(r)) if 0 < r < math.inf else math.inf for r in diff.stats.ratio]
    assert sizes == sorted(sizes, reverse=True)
    # The configuration keys that differ: the policy, and nothing else.
    assert list(diff.config.key) == ["os.policy"]
    assert (diff.config.a[0], diff.config.b[0]) == ("base", "thp")
    # A Result compares as its run directory does.
    again = pagelab.diff(base, thp)
    assert again.stats.equals(diff.stats)


def test_the_command_prints_keys_and_ratios(two_runs, tmp_path):
    d, base, thp = two_runs
    r = run_cli("diff", d / "base", d / "thp", "--top", "0", "--csv", tmp_path / "d.csv")
    assert r.returncode == 0, r.stderr
    assert "os.policy: base -> thp" in r.stdout
    ratio = thp.stats["dtlb.l2.misses"] / base.stats["dtlb.l2.misses"]
    line = next(line for line in r.stdout.splitlines() if line.split()[:1] == ["dtlb.l2.misses"])
    assert line.split()[-1] == f"{ratio:.4g}"
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    table = pd.read_csv(tmp_path / "d.csv")
    assert "dtlb.l2.misses" in set(table.statistic)
    only = run_cli("diff", d / "base", d / "thp", "--stat", "dtlb.*")
    stats = [line.split()[0] for line in only.stdout.splitlines() if line.startswith("  dtlb.")]
    assert stats and all(s.startswith("dtlb.") for s in stats)
    assert "cycles " not in only.stdout


def _sweep(out, policy, seeds):
    return pagelab.run_sweep(base=small(**THP_VS_BASE, os={"policy": policy}), seeds=seeds, id=policy, out=out, jobs=1)


def test_two_stores_are_matched_by_parameters_and_seed(tmp_path):
    base = _sweep(tmp_path / "base", "base", [1, 2, 3])
    thp = _sweep(tmp_path / "thp", "thp", [1, 2])
    diff = pagelab.diff(tmp_path / "base", tmp_path / "thp")
    assert diff.matched == 2
    assert diff.unmatched["a"] == [{"seed": 3, "workload": "gups"}] and diff.unmatched["b"] == []
    row = diff.stats.set_index("statistic").loc["dtlb.l2.misses"]
    matched = base[base.seed <= 2]
    assert row.a == matched["dtlb.l2.misses"].sum() and row.b == thp["dtlb.l2.misses"].sum()
    per_seed = thp.set_index("seed")["dtlb.l2.misses"] / matched.set_index("seed")["dtlb.l2.misses"]
    assert row.ratio_min == pytest.approx(per_seed.min()) and row.ratio_max == pytest.approx(per_seed.max())
    assert row.pairs == 2
    assert set(diff.pairs.statistic) >= {"dtlb.l2.misses"}
    r = run_cli("diff", tmp_path / "base", tmp_path / "thp")
    assert r.returncode == 0, r.stderr
    assert "2 pairs of runs matched" in r.stdout and "seed=3" in r.stdout


@pytest.mark.parametrize("case", ["missing", "neither", "run-and-store"])
def test_bad_sides_are_one_line_and_exit_2(two_runs, tmp_path, case):
    d, _, _ = two_runs
    if case == "missing":
        a, b, word = tmp_path / "nope", d / "thp", "no such file"
    elif case == "neither":
        (tmp_path / "empty").mkdir()
        a, b, word = tmp_path / "empty", d / "thp", "neither a run directory"
    else:
        _sweep(tmp_path / "s", "base", [1])
        a, b, word = d / "base", tmp_path / "s", "compare two runs or two stores"
    r = run_cli("diff", a, b)
    assert r.returncode == 2, r.stdout
    assert word in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
