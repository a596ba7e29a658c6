"""The issue's cross-check: pagelab's L1D, L2 and LLC miss counts equal
pycachesim's, exactly, on the physical stream pagelab exports.

Conditions under which both model the same thing: LRU at every level, a
non-inclusive LLC of one slice (pycachesim has no slices), and a read-only
stream (no init pass, which stores; workloads whose accesses are loads only).
Walk references (`P` lines) enter pagelab's caches at the L1D by default:
either they are kept out of the caches (`machine.walker.cache_level =
"none"`) and dropped from the replay, or they stay in and are replayed in
order with the data loads.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from conftest import nbytes, run_cli, write_toml

cachesim = pytest.importorskip("cachesim")

LEVELS = [("l1d", "cache.l1d"), ("l2", "cache.l2"), ("llc", "cache.llc")]

# (id, workload keys, LLC size, whether every level must see hits and misses)
CASES = [
    # Many page walks (32 MiB of 4 KiB pages), almost no data reuse.
    ("chase-32m", {"kind": "pointer-chase", "footprint": "32MiB"}, "8MiB", False),
    # Fits the LLC, not the L2; 4 nodes per line: hits and misses everywhere.
    ("chase-512k", {"kind": "pointer-chase", "footprint": "512KiB", "node_size": 16}, "8MiB", True),
    # Twice the LLC: LRU conflicts at every level.
    ("chase-4m-llc2m", {"kind": "pointer-chase", "footprint": "4MiB", "node_size": 32}, "2MiB", True),
    # An LLC only twice the L2: an inclusive LLC would back-invalidate here,
    # so this case tells non-inclusive from inclusive.
    ("chase-768k-llc512k", {"kind": "pointer-chase", "footprint": "768KiB", "node_size": 16}, "512KiB", True),
    # A strided sweep that wraps around inside the LLC.
    ("stride-192", {"kind": "stride", "footprint": "16MiB", "stride": 192, "write_fraction": 0.0}, "8MiB", False),
]


def config(workload: dict, llc_size: str, walker: str) -> dict:
    return {
        "machine": {
            "preset": "skylake",
            "phys_mem": "256MiB",
            "walker": {"cache_level": walker},
            # pycachesim has no prefetchers: the hardware's are switched off.
            "prefetch": {"enabled": False},
            "cache": {
                "enabled": True,
                "l1d": {"policy": "lru"},
                "l2": {"policy": "lru"},
                "llc": {"size": llc_size, "policy": "lru", "inclusive": False, "slices": 1, "slice_hash": "modulo"},
            },
        },
        "workload": {"accesses": 200_000, "init": "none", "seed": 3, **workload},
    }


def pycachesim_hierarchy(cache_cfg: dict):
    """L1D -> L2 -> LLC -> memory, LRU, geometry from the resolved config."""
    from cachesim import Cache, CacheSimulator, MainMemory

    memory = MainMemory()
    below = None
    levels = {}
    for name in ("llc", "l2", "l1d"):
        c = cache_cfg[name]
        line = c["line"]
        size = nbytes(c["size"])
        sets = size // (c["ways"] * line)
        assert sets * c["ways"] * line == size
        links = {} if below is None else {"store_to": below, "load_from": below}
        cache = Cache(name, sets, c["ways"], line, "LRU", **links)
        if below is None:
            memory.load_to(cache)
            memory.store_from(cache)
        levels[name] = cache
        below = cache
    return CacheSimulator(levels["l1d"], memory), levels


def run_and_replay(tmp_path, workload, llc_size, walker, feed_walks):
    cfg_path = write_toml(tmp_path / "xc.toml", config(workload, llc_size, walker))
    out = tmp_path / "out"
    phys = tmp_path / "phys.txt"
    proc = run_cli("run", cfg_path, "--out", out, "--export-phys", phys)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads((out / "stats.json").read_text())
    resolved = tomllib.loads((out / "config.resolved.toml").read_text())

    cache_cfg = resolved["machine"]["cache"]
    # The conditions of the cross-check, as pagelab understood them.
    assert cache_cfg["enabled"] is True
    for name, _ in LEVELS:
        assert cache_cfg[name]["policy"] == "lru"
    assert cache_cfg["llc"]["inclusive"] is False
    assert cache_cfg["llc"]["slices"] == 1
    assert resolved["machine"]["walker"]["cache_level"] == walker
    assert resolved["workload"]["init"] == "none"

    addrs = []
    tags = {"R": 0, "W": 0, "P": 0}
    with open(phys) as f:
        for line in f:
            tag = line[0]
            tags[tag] += 1  # any other tag is a KeyError: unexpected
            if tag == "R" or (tag == "P" and feed_walks):
                addrs.append(int(line[2:], 16))
    # Read-only: no store reached the caches.
    assert tags["W"] == 0 and stats["stores"] == 0
    assert tags["R"] == stats["loads"] == 200_000
    assert tags["P"] == stats["walk.mem_refs"] > 0

    sim, levels = pycachesim_hierarchy(cache_cfg)
    sim.load(addrs, length=1)
    return stats, levels, len(addrs)


def compare(stats, levels, n_refs, nontrivial):
    got = {name: (levels[name].LOAD_count, levels[name].MISS_count) for name, _ in LEVELS}
    want = {name: (stats[f"{key}.accesses"], stats[f"{key}.misses"]) for name, key in LEVELS}
    assert got["l1d"][0] == n_refs
    # Exact equality, level by level: accesses and misses.
    assert want == got
    if nontrivial:
        for name, (acc, miss) in got.items():
            assert 0 < miss < acc, f"{name}: {miss} misses of {acc}: the case tests nothing"


@pytest.mark.parametrize("workload, llc, nontrivial", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_data_only_stream_matches_pycachesim(tmp_path, workload, llc, nontrivial):
    """Walks kept out of the caches; the replay is the R lines alone."""
    stats, levels, n = run_and_replay(tmp_path, workload, llc, walker="none", feed_walks=False)
    assert n == stats["loads"]
    compare(stats, levels, n, nontrivial)


@pytest.mark.parametrize("workload, llc, nontrivial", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_stream_with_walks_matches_pycachesim(tmp_path, workload, llc, nontrivial):
    """Walks enter at the L1D; the replay is every R and P line, in order."""
    stats, levels, n = run_and_replay(tmp_path, workload, llc, walker="l1d", feed_walks=True)
    assert n == stats["loads"] + stats["walk.mem_refs"]
    compare(stats, levels, n, nontrivial)
