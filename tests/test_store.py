"""The results store: one row per configuration, Parquet export."""

from __future__ import annotations

import pytest

import pagelab
from pagelab.store import Store, config_hash

from conftest import small

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def result():
    return pagelab.run(small())


def test_same_config_twice_is_one_row(tmp_path, result):
    with Store(tmp_path) as s:
        assert s.insert(config_toml=result.config_toml, stats=result.stats, seconds=result.seconds,
                        experiment="a", params={"workload": "gups", "seed": 1})
        assert not s.insert(config_toml=result.config_toml, stats=result.stats, seconds=1.0,
                            experiment="b", params={"workload": "gups", "seed": 1})
        assert len(s) == 1
        h = config_hash(result.config_toml)
        assert s.has(h) and s.hashes() == {h}
        assert s.stats(h) == result.stats
    # Reopened: still one row, with the first insert's experiment.
    with Store(tmp_path / "results.duckdb") as s:
        raw = s.raw()
        assert len(raw) == 1
        assert raw.experiment[0] == "a"
        assert raw.pagelab_version[0] == pagelab.__version__
        assert raw.config_toml[0] == result.config_toml


def test_hash_is_of_the_resolved_config(result):
    assert config_hash(result.config_toml) == config_hash(
        pagelab._pagelab.resolve_config(pagelab.load_config_text(small())[0], "<dict>", [])
    )


def test_frame_and_parquet(tmp_path, result):
    import pandas as pd

    other = pagelab.run(small(), **{"os.policy": "thp"})
    with Store(tmp_path) as s:
        for r, pol in ((result, "base"), (other, "thp")):
            s.insert(config_toml=r.config_toml, stats=r.stats, seconds=r.seconds, experiment="x",
                     params={"os.policy": pol, "workload": "gups"})
        wide = s.frame()
        assert len(wide) == 2
        assert set(wide["p.os.policy"]) == {"base", "thp"}
        for stat in ("cycles", "dtlb.l2.misses", "mem.mapped.2m"):
            assert stat in wide.columns
        path = s.to_parquet(tmp_path / "runs.parquet")
    back = pd.read_parquet(path)
    assert len(back) == 2
    assert set(back.config_hash) == {config_hash(result.config_toml), config_hash(other.config_toml)}
    row = back.set_index("p.os.policy").loc["thp"]
    assert row["cycles"] == other.stats["cycles"]
    assert set(back["p.workload"]) == {"gups"}
