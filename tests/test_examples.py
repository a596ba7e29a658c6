"""The configurations in examples/ stay valid and run."""

from pathlib import Path

import pytest

import pagelab
from pagelab import _pagelab

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_resolves(path):
    import tomllib

    resolved = _pagelab.resolve_config(path.read_text(), str(path), [])
    # Resolving is a fixed point: the resolved file resolves to itself.
    assert _pagelab.resolve_config(resolved, "resolved", []) == resolved
    # And keeps what the example says (its workload kind and policy).
    mine, full = tomllib.loads(path.read_text()), tomllib.loads(resolved)
    if "workload" in mine:
        assert full["workload"]["kind"] == mine["workload"]["kind"]
    if "policy" in mine.get("os", {}):
        assert full["os"]["policy"] == mine["os"]["policy"]


def test_thp_gups_example_runs_small():
    path = next(p for p in EXAMPLES if p.name == "thp-gups.toml")
    r = pagelab.run(path, **{"workload.footprint": "64MiB", "workload.accesses": 20_000, "machine.phys_mem": "1GiB"})
    assert r.stats["accesses"] == 20_000  # skip_init: the first touches are not counted
    assert r.stats["mem.mapped.2m"] > 0
