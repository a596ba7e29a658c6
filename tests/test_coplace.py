"""COPLACE's host policies (issue 35, docs/systems/coplace.md): a tiny run
per host placement, and the policies refused outside the hypervisor."""

from __future__ import annotations

import pytest

import pagelab
from conftest import run_cli, small, write_toml
from test_reliability import one_error_line


def _virt(host_policy: str) -> dict:
    """A VM of 64 MiB reading a file, then a stream over its freed array
    frames (COPLACE's varying workload, tiny), the host placing with
    `host_policy`."""
    return {
        "machine": {"phys_mem": "256MiB", "cache": {"llc": {"size": "1MiB", "ways": 16}}},
        "virt": {"enabled": True, "guest_mem": "64MiB", "host": {"policy": host_policy}},
        "run": {"conflict_level": True, "check_translations": True},
        "workloads": [
            {"kind": "file-read", "file": "f.data", "footprint": "2MiB", "accesses": 0},
            {"kind": "stream", "footprint": "512KiB", "accesses": 20_000, "after": "previous"},
        ],
    }


@pytest.mark.parametrize("policy, counter", [
    ("coplace", "host.coplace.color_fallbacks"),
    ("vmm-coloring", "host.vmm_coloring.color_fallbacks"),
])
def test_a_tiny_virtualized_run_per_host_policy(policy, counter):
    stats = pagelab.run(_virt(policy)).stats
    assert stats["host.os.faults.colored"] == stats["host.faults"] > 0
    assert stats[counter] == 0


def test_both_keep_the_colors_the_guest_gave_and_palloc_does_not():
    # The guest colors on the host's bits (the LLC's), so both policies put
    # each guest frame on its guest color: the stream's conflict level is
    # the guest's own, the same under both; PALLOC's coloring in the host
    # colors by fault order, which the reader's interleaving decided.
    level = {p: pagelab.run(_virt(p)).stats["core0.conflict_level"] for p in ("coplace", "vmm-coloring", "coloring")}
    assert level["coplace"] == level["vmm-coloring"] != level["coloring"]


def test_the_base_host_reports_the_counters_at_zero():
    stats = pagelab.run(_virt("base")).stats
    assert stats["host.coplace.color_fallbacks"] == 0 and stats["host.os.faults.colored"] == 0


@pytest.mark.parametrize("overrides, key", [
    ({"os": {"policy": "coplace"}}, "os.policy"),
    ({"os": {"systems": ["vmm-coloring"]}}, "os.systems"),
])
def test_a_host_policy_outside_the_host_is_a_config_error(tmp_path, overrides, key):
    proc = run_cli("run", write_toml(tmp_path / "c.toml", small(**overrides)), timeout=60)
    one_error_line(proc, 2, key, "virt.host.policy")
