"""`pagelab.run(config, **overrides)`: inputs, the statistics contract,
timeseries, determinism, several cores, and the exception classes."""

from __future__ import annotations

import math
import numbers
import re

import pytest

import pagelab
from conftest import CONTRACT_STATS, CORE_STATS, SMALL, small, write_toml

FOOTPRINT = 32 << 20


def is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


# --- inputs ---------------------------------------------------------------


def test_dict_and_toml_path_give_the_same_run(tmp_path):
    from_dict = pagelab.run(small())
    path = write_toml(tmp_path / "c.toml", SMALL)
    from_path = pagelab.run(path)
    from_str_path = pagelab.run(str(path))
    assert from_dict.stats == from_path.stats == from_str_path.stats
    assert from_dict.config_toml == from_path.config_toml


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(lambda cfg: pagelab.run(cfg, **{"os.policy": "thp"}), id="dotted-kwargs"),
        pytest.param(lambda cfg: pagelab.run(cfg, os__policy="thp"), id="double-underscore"),
        pytest.param(lambda cfg: pagelab.run(cfg, set=["os.policy=thp"]), id="set-list"),
        pytest.param(lambda cfg: pagelab.run(cfg, set=['os.policy="thp"']), id="set-list-quoted"),
    ],
)
def test_overrides_reach_the_simulation(how):
    base = pagelab.run(small())
    thp = how(small())
    assert re.search(r'^policy = "thp"$', thp.config_toml, re.M), thp.config_toml
    assert thp.stats["mem.mapped.2m"] > 0
    assert base.stats["mem.mapped.2m"] == 0
    # All forms are the same override.
    assert thp.stats == pagelab.run(small(os={"policy": "thp"})).stats


def test_override_wins_over_the_file(tmp_path):
    path = write_toml(tmp_path / "c.toml", small(os={"policy": "thp"}))
    r = pagelab.run(path, **{"os.policy": "base"})
    assert r.stats["mem.mapped.2m"] == 0
    assert r.stats["mem.mapped.4k"] == FOOTPRINT


# --- the statistics contract ------------------------------------------------


@pytest.fixture(scope="module")
def gups_stats():
    return pagelab.run(small()).stats


def test_stats_is_one_flat_dict_of_numbers(gups_stats):
    assert isinstance(gups_stats, dict)
    for k, v in gups_stats.items():
        assert isinstance(k, str)
        assert is_number(v), f"{k} = {v!r} is not a number"
        assert math.isfinite(v), f"{k} = {v!r}"


def test_stat_names_repeat_no_component(gups_stats):
    # e.g. `core0.pwc.pwc.lookups` for `core0.pwc.lookups`.
    doubled = [k for k in gups_stats if any(a == b for a, b in zip(k.split("."), k.split(".")[1:]))]
    assert doubled == []


@pytest.mark.parametrize("name", CONTRACT_STATS)
def test_contract_statistic_present(gups_stats, name):
    assert name in gups_stats
    assert is_number(gups_stats[name])


@pytest.mark.parametrize("name", CORE_STATS)
def test_per_core_copy_of_core_statistics(gups_stats, name):
    assert f"core0.{name}" in gups_stats
    # One core: the copy equals the total.
    assert gups_stats[f"core0.{name}"] == pytest.approx(gups_stats[name], rel=1e-12)
    assert "core1." + name not in gups_stats


def test_counters_are_consistent(gups_stats):
    s = gups_stats
    assert s["instructions"] >= s["accesses"] > 0
    assert s["accesses"] >= 40_000
    assert s["dtlb.l2.misses"] <= s["dtlb.l1.misses"] <= s["accesses"]
    assert s["faults.huge"] <= s["faults"]
    assert s["cache.l2.misses"] <= s["cache.l1d.misses"]
    assert s["cache.llc.misses"] <= s["cache.llc.accesses"]
    # Non-inclusive hierarchy: every L2 miss looks the LLC up.
    assert s["cache.llc.accesses"] == s["cache.l2.misses"]
    assert s["walk.mem_refs"] > 0 and s["walks"] > 0
    assert 0.0 <= s["phys.fi"] <= 1.0


def _lackey(path, loads: int):
    """`loads` loads of one address, one instruction each (lackey text)."""
    path.write_text("I  04000000,4\n L 10000000,8\n" * loads)
    return path


#: The fixed timing model (docs/stats.md, engine/timing/mod.rs) on the
#: default preset (skylake): load-to-use latencies, L2 TLB latency, a walk's
#: fixed part (page-walk-cache lookup 1 + the walker's own 34), base CPI,
#: MLP, the base fault's cost.
L1, MEM, L2_TLB, PWC, CPI, MLP, FAULT_4K = 4, 240, 9, 1 + 34, 0.5, 2.0, 1537


@pytest.mark.parametrize("loads", [1, 100])
def test_cycles_of_one_cold_4k_walk_one_fault_and_l1_hits_worked_by_hand(tmp_path, loads):
    """The first load misses both TLBs and walks a fresh page table: the
    PML4 entry from memory (empty: a page fault, base cost), then, after the
    fault, a second walk: the PML4 line again (now an L1D hit) and the
    PDPT, PD and PT lines from memory. Its data comes from memory. The
    other loads hit the L1 TLB and the L1D, inside the base CPI."""
    machine = {"phys_mem": "256MiB", "timing": {"model": "fixed"}}
    r = pagelab.run({"machine": machine, "workload": {"kind": "trace", "path": str(_lackey(tmp_path / "t.lackey", loads))}})
    s = r.stats
    assert (s["walks"], s["walk.refs.mem"], s["walk.refs.l1d"], s["faults"]) == (2, 4, 1, 1)
    translation = L2_TLB + 2 * PWC + 4 * MEM + 1 * L1  # walk_mlp = 1
    assert s["cycles.walk"] == translation - L2_TLB
    data = (MEM - L1) / MLP
    base = CPI * loads
    assert s["cycles.translation"] == translation == 1043
    assert s["cycles.data"] == data == 118
    assert s["cycles.faults"] == FAULT_4K
    assert s["cycles.base"] == base
    assert s["cycles"] == base + translation + data + FAULT_4K  # 2698.5 for 1 load, 2748 for 100
    assert s["cycles"] == {1: 2698.5, 100: 2748.0}[loads]


@pytest.mark.parametrize("loads", [1, 100])
def test_the_interval_model_on_the_same_loads_worked_by_hand(tmp_path, loads):
    """The same trace under the interval model (the default). The fault
    comes first (the window is empty): the clock is at 1537 when the first
    load dispatches (0.5 later). Then its L2 TLB lookup (9), the second
    walk (its fixed part 35, then the first walk's PML4 reference from
    memory, the PML4 line from the L1D and three lines from memory: 964,
    one after the other: 999) and its data (236 beyond the L1D): back at
    1537.5 + 9 + 999 + 236 = 2781.5. The other loads hit, and dispatch
    under that miss (99 x 0.5 of 224 reorder-buffer entries): the run ends
    at 2781.5 either way. The core waits from the last dispatch (1537.5,
    or 1587 with 100 loads) to 2781.5. Had the load translated at once
    (its translation: 1537.5 to 2545.5, 1008 cycles, of which the walk 999
    from 1546.5) it would not have waited: the stall's first 1008 cycles
    are translation (999 of them the walk), the rest data (236, or 186.5
    when 49.5 cycles of dispatching hid part of the load's latency). (The
    first walk, which faulted, is before the window: the fault serialises
    it.)"""
    r = pagelab.run({"machine": {"phys_mem": "256MiB"}, "workload": {"kind": "trace", "path": str(_lackey(tmp_path / "t.lackey", loads))}})
    s = r.stats
    assert (s["walks"], s["walk.refs.mem"], s["walk.refs.l1d"], s["faults"]) == (2, 4, 1, 1)
    last_dispatch = FAULT_4K + CPI * loads
    assert s["cycles"] == 2781.5
    issue = FAULT_4K + CPI
    assert s["cycles.translation"] == 2545.5 - issue == 1008
    assert s["cycles.walk"] == 2545.5 - (issue + L2_TLB) == 999
    assert s["cycles.data"] == (2781.5 - last_dispatch) - 1008 == {1: MEM - L1, 100: 186.5}[loads]
    assert s["cycles.faults"] == FAULT_4K and s["cycles.base"] == CPI * loads


def test_thp_maps_2m_pages_and_base_maps_none():
    base = pagelab.run(small(os={"policy": "base"})).stats
    thp = pagelab.run(small(os={"policy": "thp"})).stats
    assert base["mem.mapped.2m"] == 0
    assert base["mem.mapped.4k"] == FOOTPRINT
    assert base["faults.huge"] == 0
    assert thp["mem.mapped.2m"] > 0
    assert thp["mem.mapped.2m"] % (2 << 20) == 0
    assert thp["mem.mapped.2m"] + thp["mem.mapped.4k"] == FOOTPRINT
    assert thp["faults.huge"] > 0
    # Fewer, larger pages: far fewer walks.
    assert thp["dtlb.l2.misses"] < base["dtlb.l2.misses"]


# --- timeseries -------------------------------------------------------------


def test_timeseries_empty_without_epoch():
    assert pagelab.run(small()).timeseries == []


def test_timeseries_has_increasing_instructions():
    epoch = 50_000
    r = pagelab.run(small(run={"epoch": epoch}))
    ts = r.timeseries
    assert len(ts) >= 3
    instrs = [snap["instructions"] for snap in ts]
    assert all(b > a for a, b in zip(instrs, instrs[1:])), instrs
    assert instrs[0] >= epoch
    assert instrs[-1] <= r.stats["instructions"]
    # Roughly one snapshot per epoch (quanta make it inexact).
    assert len(ts) <= r.stats["instructions"] // epoch + 1
    for snap in ts:
        assert set(CONTRACT_STATS) <= set(snap)
    frame = r.timeseries_frame()
    assert len(frame) == len(ts)


# --- determinism ------------------------------------------------------------


def test_identical_runs_give_identical_stats():
    cfg = small(
        os={"policy": "thp", "fragmentation": {"target": 0.5}},
        workload={"kind": "gups", "footprint": "32MiB", "accesses": 40_000, "seed": 7},
    )
    a = pagelab.run(cfg).stats
    b = pagelab.run(cfg).stats
    assert a == b


def test_clustered_placement_fragments_as_much_but_elsewhere():
    # The same number of pageblocks spoilt (the same F_i), in one run instead
    # of spread: the THP run that follows sees other free blocks.
    def run(placement):
        cfg = small(
            os={"policy": "thp", "fragmentation": {"target": 0.5, "placement": placement}},
            workload={"kind": "gups", "footprint": "32MiB", "accesses": 20_000, "seed": 7},
        )
        return pagelab.run(cfg).stats

    random, clustered = run("random"), run("clustered")
    assert clustered == run("clustered")
    assert clustered != random


def test_a_different_workload_seed_gives_different_stats():
    a = pagelab.run(small(workload={"seed": 1})).stats
    b = pagelab.run(small(workload={"seed": 2})).stats
    assert a != b
    # The measured stream differs, not just some bookkeeping value.
    assert (a["cache.l1d.misses"], a["dtlb.l1.misses"]) != (b["cache.l1d.misses"], b["dtlb.l1.misses"])


def test_a_kv_run_reports_its_request_latencies():
    # kv serves requests (docs/timing.md, "Requests"): one per GET or SET,
    # each at least its 2,000 instructions of parsing and hashing.
    cfg = {
        "machine": {"phys_mem": "256MiB"},
        "workload": {"kind": "kv", "objects": 5000, "object_size": "256B", "accesses": 20_000},
    }
    s = pagelab.run(cfg).stats
    assert s["core0.requests"] > 1000
    mean = s["core0.request.cycles_mean"]
    assert s["core0.request.cycles_p99"] >= s["core0.request.cycles_p95"] >= s["core0.request.cycles_p90"]
    assert s["core0.request.cycles_p99"] >= mean > 2000 * 0.5
    # A program that serves no requests reports none.
    assert not any("request" in k for k in pagelab.run(small()).stats)


# --- several cores ------------------------------------------------------------

TWO_WORKLOADS = """
[machine]
phys_mem = "256MiB"
cores = 2

[[workloads]]
kind = "gups"
footprint = "16MiB"
accesses = 30000

[[workloads]]
kind = "pointer-chase"
footprint = "8MiB"
accesses = 20000
seed = 3
"""


@pytest.fixture(scope="module")
def two_core_stats(tmp_path_factory):
    path = tmp_path_factory.mktemp("two") / "two.toml"
    path.write_text(TWO_WORKLOADS)
    return pagelab.run(path).stats


@pytest.mark.parametrize("name", CORE_STATS)
def test_two_workloads_have_per_core_statistics(two_core_stats, name):
    s = two_core_stats
    assert f"core0.{name}" in s and f"core1.{name}" in s
    assert "core2." + name not in s
    assert s[name] == pytest.approx(s[f"core0.{name}"] + s[f"core1.{name}"], rel=1e-9, abs=1e-6)


def test_two_workloads_sum_instructions_exactly(two_core_stats):
    s = two_core_stats
    assert s["core0.instructions"] > 0 and s["core1.instructions"] > 0
    assert s["instructions"] == s["core0.instructions"] + s["core1.instructions"]
    # Different workloads: the cores did different things.
    assert s["core0.instructions"] != s["core1.instructions"]


def test_two_workloads_from_a_dict_match_the_file(two_core_stats):
    import tomllib

    assert pagelab.run(tomllib.loads(TWO_WORKLOADS)).stats == two_core_stats


def test_core_count_must_match_the_workloads():
    import tomllib

    cfg = tomllib.loads(TWO_WORKLOADS)
    with pytest.raises(pagelab.ConfigError, match="machine.cores"):
        pagelab.run(cfg, **{"machine.cores": 3})


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"machine.tlb.l2_entriez": 4}, "machine.tlb.l2_entriez"),
        ({"machine.tlb.l2_ways": "many"}, "machine.tlb.l2_ways"),
        ({"machine.phys_mem": "3MiB"}, "machine.phys_mem"),
        ({"machine.phys_mem": "lots"}, "machine.phys_mem"),
        ({"workload.kind": "redis"}, "workload.kind"),
        ({"os.policy": "magic"}, "os.policy"),
        ({"run.bogus": 1}, "run.bogus"),
        ({"os.fragmentation.placement": "scattered"}, "os.fragmentation.placement"),
    ],
)
def test_bad_config_raises_config_error_naming_the_key(overrides, key):
    with pytest.raises(pagelab.ConfigError) as info:
        pagelab.run(small(), **overrides)
    assert key in str(info.value)
    assert not isinstance(info.value, pagelab.InternalError)


def test_unknown_key_is_named_once():
    with pytest.raises(pagelab.ConfigError) as info:
        pagelab.run(small(), **{"machine.tlb.l2_entriez": 4})
    msg = str(info.value)
    assert "l2_entriez.l2_entriez" not in msg, msg


def test_unknown_key_in_a_dict_is_a_config_error():
    cfg = small()
    cfg["machine"]["tlb"] = {"l2_entriez": 4}
    with pytest.raises(pagelab.ConfigError, match=r"machine\.tlb\.l2_entriez"):
        pagelab.run(cfg)


def test_missing_file_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(pagelab.ConfigError, match="nowhere.toml"):
        pagelab.run(missing)


def test_file_that_is_not_toml_is_a_config_error_naming_it(tmp_path):
    path = tmp_path / "garbage.toml"
    path.write_text("this is [not toml\n")
    with pytest.raises(pagelab.ConfigError, match="garbage.toml"):
        pagelab.run(path)


def test_binary_file_is_a_config_error_naming_it(tmp_path):
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\x28\xb5\x2f\xfd\x00\xff\xfe binary \x00")
    with pytest.raises(pagelab.ConfigError, match="binary.toml"):
        pagelab.run(path)


def test_each_kind_of_failure_raises_its_own_class(tmp_path):
    """Bad input and failed runs are told apart by class (the command line's
    exit statuses 2 and 1 follow from it: tests/test_reliability.py)."""
    with pytest.raises(pagelab.PagelabError) as info:
        pagelab.run(tmp_path / "nowhere.toml")
    assert "nowhere.toml" in str(info.value) and not isinstance(info.value, pagelab.SimulationError)
    bad = tmp_path / "bad.lackey"
    bad.write_text("I  04000000,4\nthis is not lackey\n")
    with pytest.raises(pagelab.TraceError):
        pagelab.run({"machine": {"phys_mem": "256MiB"}, "workload": {"kind": "trace", "path": str(bad), "format": "lackey"}})
    with pytest.raises(pagelab.SimulationError) as info:
        pagelab.run(small(os={"policy": "coloring"}, workload={"colors": [0]}))
    assert not isinstance(info.value, (pagelab.ConfigError, pagelab.TraceError))


def test_workload_larger_than_memory_is_a_pagelab_error():
    # 8 GiB on a 1 GiB machine: refused up front (ConfigError) or when
    # memory runs out (SimulationError); never a panic or a hang.
    with pytest.raises((pagelab.SimulationError, pagelab.ConfigError)) as info:
        pagelab.run(small(machine={"phys_mem": "1GiB"}, workload={"footprint": "8GiB"}))
    assert "memory" in str(info.value) or "footprint" in str(info.value) or "phys_mem" in str(info.value)


def test_running_out_of_allowed_colors_is_a_simulation_error():
    # One page color of many: a few MiB may be allocated, 32 MiB are touched.
    with pytest.raises(pagelab.SimulationError):
        pagelab.run(small(os={"policy": "coloring"}, workload={"colors": [0]}))


def test_failed_run_leaves_no_export(tmp_path):
    out = tmp_path / "phys.txt"
    with pytest.raises(pagelab.PagelabError):
        pagelab.run(
            small(machine={"phys_mem": "1GiB"}, workload={"footprint": "8GiB"}),
            export_phys=out,
        )
    assert list(tmp_path.iterdir()) == []


def test_export_counts_match_the_statistics(tmp_path):
    out = tmp_path / "phys.txt"
    r = pagelab.run(small(), export_phys=out)
    assert [p.name for p in tmp_path.iterdir()] == ["phys.txt"], "no temporary file left"
    counts = {"R": 0, "W": 0, "P": 0}
    line_re = re.compile(r"^[RWP] 0x[0-9a-f]+$")
    with open(out) as f:
        for line in f:
            line = line.rstrip("\n")
            assert line_re.match(line), line
            counts[line[0]] += 1
    s = r.stats
    assert counts["R"] == s["loads"]
    assert counts["W"] == s["stores"]
    assert counts["P"] == s["walk.mem_refs"]
    # With walks entering at the L1D, the L1D sees exactly these references.
    assert sum(counts.values()) == s["cache.l1d.accesses"]
