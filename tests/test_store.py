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


# --- the hash across versions ----------------------------------------------


def _resolved(**overrides) -> str:
    from pagelab import _pagelab
    import tomli_w

    from conftest import SMALL

    return _pagelab.resolve_config(tomli_w.dumps(SMALL), "<t>", [f"{k}={v}" for k, v in overrides.items()])


def _with_key(toml_text: str, table: str, line: str) -> str:
    """The resolved TOML with one more key in `[table]`, as a later version
    of pagelab would write it."""
    header = f"[{table}]\n"
    assert header in toml_text
    return toml_text.replace(header, header + line + "\n", 1)


def test_a_new_key_at_its_default_keeps_the_hash(monkeypatch):
    from pagelab import store

    text = _resolved()
    defaults = dict(store.default_values())
    defaults["machine.tlb.prefetch_degree"] = 0
    monkeypatch.setattr(store, "default_values", lambda: defaults)
    assert "machine.tlb.prefetch_degree" not in store.store_keys()
    at_default = _with_key(text, "machine.tlb", "prefetch_degree = 0")
    assert config_hash(at_default) == config_hash(text)
    # The same key set otherwise is another configuration.
    assert config_hash(_with_key(text, "machine.tlb", "prefetch_degree = 2")) != config_hash(text)
    # A key nobody declared a default for always counts (never a false match).
    assert config_hash(_with_key(text, "machine.tlb", "unknown_knob = 0")) != config_hash(text)


def test_every_existing_key_counts_even_at_its_default():
    from pagelab import store

    text = _resolved()
    # l2_ways is at its default (12) in SMALL and is one of STORE_KEYS: a
    # change of its default must rerun stored points.
    assert "machine.tlb.l2_ways" in store.store_keys()
    assert store.default_values()["machine.tlb.l2_ways"] == 12
    assert '"machine.tlb.l2_ways":12' in store.canonical_config(text)
    assert config_hash(text.replace("l2_ways = 12", "l2_ways = 16")) != config_hash(text)
    assert config_hash(_resolved(**{"machine.tlb.l2_ways": 6})) != config_hash(text)


def test_the_hash_ignores_how_the_toml_is_written():
    text = _resolved()
    shuffled = "\n".join(reversed(text.split("\n\n")))  # tables in another order
    assert shuffled != text
    assert config_hash(shuffled) == config_hash(text)
