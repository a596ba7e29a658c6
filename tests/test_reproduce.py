"""pagelab reproduce: the registry and each experiment on its tiny grid."""

from __future__ import annotations

import pandas as pd
import pytest

from pagelab import experiments

from conftest import run_cli

pytest.importorskip("duckdb")

COLUMNS = {
    "baseline-thp": {"workload", "policy", "dtlb_misses", "walk_refs", "cycles", "cycles_norm"},
    "frag-sweep": {"pattern", "frag_index", "fi_measured", "huge_coverage", "cycles", "cycles_norm"},
}


def test_list():
    r = run_cli("reproduce", "--list")
    assert r.returncode == 0, r.stderr
    ids = [line.split()[0] for line in r.stdout.splitlines()]
    assert ids == sorted(COLUMNS)
    for exp in experiments.all_experiments():
        assert set(exp.sweeps) == {"full", "quick", "tiny"}


def test_unknown_experiment():
    r = run_cli("reproduce", "no-such-thing")
    assert r.returncode == 2
    assert "unknown experiment" in r.stderr


@pytest.mark.parametrize("exp_id", sorted(COLUMNS))
def test_reproduce_tiny(tmp_path, exp_id):
    r = run_cli("reproduce", exp_id, "--tiny", "--out", tmp_path, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(tmp_path / f"{exp_id}.csv")
    assert COLUMNS[exp_id] <= set(df.columns)
    assert len(df) > 0
    assert list(tmp_path.glob(f"{exp_id}*.png"))
    md = (tmp_path / f"{exp_id}.md").read_text()
    assert "expected" in md.lower() and "| " in md
    if exp_id == "baseline-thp":
        assert set(df.policy) == {"base", "thp", "hugetlb-2m", "hugetlb-1g"}
        assert set(df.workload) == {"gups", "bfs", "kv", "stream"}
        assert (df[df.policy == "base"].cycles_norm == 1.0).all()
        # gups on 4 KiB pages walks; THP removes (nearly) every walk.
        g = df[df.workload == "gups"].set_index("policy")
        assert g.loc["thp", "dtlb_misses"] < g.loc["base", "dtlb_misses"]
    else:
        assert set(df.pattern) == {"dispersed", "clustered"}
        assert df.frag_index.min() == 0.0 and df.frag_index.max() == 0.95
        fresh = df[df.frag_index == 0.0]
        assert (fresh.huge_coverage > 0.99).all()
    # Again: everything is in the store, nothing runs.
    r = run_cli("reproduce", exp_id, "--tiny", "--out", tmp_path, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert "0 to run" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", sorted(COLUMNS))
def test_reproduce_quick(tmp_path, exp_id):
    r = run_cli("reproduce", exp_id, "--quick", "--out", tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"{exp_id}.csv").exists()
