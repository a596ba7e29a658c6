"""Seeds: the experiments' mean and spread over seeds (`common`), the
sweep keeping a graph's seed apart from the access stream's, and one
experiment run end to end with several seeds."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pandas as pd
import pytest

from pagelab import _pagelab
from pagelab.experiments import common
from pagelab.sweep import Sweep, expand, resolve

from conftest import run_cli


def test_t95_is_students_quantile():
    # Published two-sided 95% critical values of Student's t (any table),
    # by degrees of freedom n - 1: 1, 2, 4, 10, 30; the normal's 1.960 far out.
    for n, t in [(2, 12.706), (3, 4.303), (5, 2.776), (11, 2.228), (31, 2.042), (100_001, 1.960)]:
        assert common.t95(n) == pytest.approx(t, abs=6e-4), n
    assert math.isnan(common.t95(1))


def test_mean_over_seeds_by_hand():
    d = pd.DataFrame(
        {
            "w": ["a", "a", "a", "b"],
            "seed": [1, 2, 3, 1],
            "count": [10, 12, 14, 7],  # integer, whole means: stays integer
            "x": [1.0, 2.0, 6.0, 5.0],
        }
    )
    t = common.mean_over_seeds(d, ["w"]).set_index("w")
    assert list(t.columns) == ["seeds", "count", "x", "count_std", "count_ci95", "x_std", "x_ci95"]
    assert t.seeds.to_dict() == {"a": 3, "b": 1}
    assert t["count"].dtype == np.int64 and t["count"].to_dict() == {"a": 12, "b": 7}
    a = t.loc["a"]
    # x: mean 3, deviations -2, -1, 3: sum of squares 14, / (3 - 1) = 7.
    assert a.x == 3.0 and a.x_std == pytest.approx(math.sqrt(7))
    assert a.x_ci95 == pytest.approx(4.303 * math.sqrt(7) / math.sqrt(3), rel=1e-3)
    assert a.count_std == pytest.approx(2.0)
    # One seed: no spread (empty in the CSV).
    assert math.isnan(t.loc["b", "x_std"]) and math.isnan(t.loc["b", "x_ci95"])


def test_a_ratio_pairs_the_runs_of_one_seed():
    d = pd.DataFrame(
        {
            "system": ["base", "new", "base", "new"],
            "seed": [1, 1, 2, 2],
            "cycles": [100.0, 50.0, 200.0, 80.0],
        }
    )
    d["speedup"] = common.paired(d, "cycles", ["seed"], d.system == "base") / d.cycles
    assert d.speedup.tolist() == [1.0, 2.0, 1.0, 2.5]
    t = common.mean_over_seeds(d, ["system"]).set_index("system")
    # The mean of the per-seed ratios (2.25), not the ratio of the means
    # (150 / 65 = 2.31), and its spread is the ratio's own.
    assert t.speedup["new"] == 2.25 and t.speedup_std["new"] == pytest.approx(math.sqrt(0.125))
    assert t.speedup_std["base"] == 0.0


def test_markdown_shows_mean_and_half_width():
    t = common.mean_over_seeds(
        pd.DataFrame({"w": ["a", "a", "b"], "seed": [1, 2, 1], "x": [1.0, 3.0, 5.0]}), ["w"])
    md = common.markdown_table(t)
    assert md.splitlines()[0] == "| w | seeds | x |"
    assert f"| a | 2 | 2.000 ± {common.fmt(12.7062 * math.sqrt(2) / math.sqrt(2))} |" in md
    assert "| b | 1 | 5.000 |" in md


def test_error_bars_only_where_a_point_has_several_seeds():
    one = common.mean_over_seeds(pd.DataFrame({"w": ["a"], "seed": [1], "x": [1.0]}), ["w"])
    assert common.error_bars(one, "x") is None
    assert common.error_bars(one.drop(columns=["x_ci95"]), "x") is None
    two = common.mean_over_seeds(pd.DataFrame({"w": ["a", "a", "b"], "seed": [1, 2, 1], "x": [1.0, 3.0, 2.0]}), ["w"])
    below, above = common.error_bars(two, "x")
    assert above.tolist() == pytest.approx([12.7062, 0.0], rel=1e-4)
    assert below.tolist() == pytest.approx([2.0, 0.0])  # cut at 0, x's lower bound: a's mean is 2


def _resolved_workloads(point) -> list[dict]:
    config = tomllib.loads(point.config_toml)
    return config["workloads"] if "workloads" in config else [config["workload"]]


@pytest.mark.parametrize("shaped", [False, True])
def test_seeds_vary_the_stream_not_the_graph(shaped):
    """Every seed of a point runs the graph of the sweep's first seed
    (`workload.graph_seed`); the access stream's seed and `run.seed` vary."""

    def two_cores(config, params):
        w = config.pop("workload")
        config["workloads"] = [w, {"kind": "gups", "footprint": "4MiB", "accesses": 100}]

    spec = Sweep(
        id="s",
        base={"machine": {"phys_mem": "256MiB"}},
        workloads=[{"name": "bfs", "kind": "graph", "scale": 8, "accesses": 100},
                   {"name": "fixed", "kind": "graph", "scale": 8, "accesses": 100, "graph_seed": 42},
                   {"name": "gups", "kind": "gups", "footprint": "4MiB", "accesses": 100}],
        seeds=[3, 4, 5],
        shape=two_cores if shaped else None,
    )
    points = expand(spec)
    resolve(points)
    for name, graph_seed in [("bfs", 3000 if shaped else 3), ("fixed", 42), ("gups", None)]:
        mine = [p for p in points if p.params["workload"] == name]
        tables = [_resolved_workloads(p)[0] for p in mine]
        assert [t.get("graph_seed") for t in tables] == [graph_seed] * 3, name
        assert len({t["seed"] for t in tables}) == 3 and len({p.hash for p in mine}) == 3
        assert [tomllib.loads(p.config_toml)["run"]["seed"] for p in mine] == [3, 4, 5]
        if shaped:  # the second core is no graph: no graph seed
            assert "graph_seed" not in _resolved_workloads(mine[0])[1]


def test_graph_seed_on_another_kind_is_refused():
    with pytest.raises(_pagelab.ConfigError, match="workload.graph_seed"):
        _pagelab.resolve_config('[workload]\nkind = "stream"\ngraph_seed = 1\n', "<t>", [])


def test_reproduce_with_two_seeds_end_to_end(tmp_path):
    """`reproduce --seeds 2` of a whole experiment: each row averages two
    runs, its spread is theirs, the ratios are paired by seed, and bfs ran
    both seeds on one graph with different access streams."""
    r = run_cli("reproduce", "baseline-thp", "--tiny", "--seeds", "2", "--out", tmp_path, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    t = pd.read_csv(tmp_path / "baseline-thp.csv").set_index(["workload", "policy"])
    assert (t.seeds == 2).all()
    from pagelab.store import Store

    with Store(tmp_path, read_only=True) as store:
        raw = store.raw()
    runs = pd.DataFrame([{**json.loads(s.stats), **json.loads(s.params), "config": s.config_toml}
                         for s in raw.itertuples()])
    assert len(runs) == 2 * len(t)
    for (w, p), g in runs.groupby(["workload", "policy"]):
        cycles = g.sort_values("seed").cycles.to_numpy(dtype=float)
        row = t.loc[(w, p)]
        assert row.cycles == pytest.approx(cycles.mean())
        assert row.cycles_std == pytest.approx(cycles.std(ddof=1))
        assert row.cycles_ci95 == pytest.approx(12.7062 * cycles.std(ddof=1) / math.sqrt(2), rel=1e-4)
        base = runs[(runs.workload == w) & (runs.policy == "base")].sort_values("seed").cycles.to_numpy(dtype=float)
        assert row.cycles_norm == pytest.approx((cycles / base).mean())
    # Two seeds, two access streams: gups's runs differ.
    assert (t.xs("gups").cycles_std > 0).all()
    bfs = runs[runs.workload == "bfs"]
    workloads = [tomllib.loads(c)["workload"] for c in bfs.config]
    assert {w["graph_seed"] for w in workloads} == {1} and {w["seed"] for w in workloads} == {1, 2}
    md = (tmp_path / "baseline-thp.md").read_text()
    assert "seeds [1, 2]" in md and " ± " in md
