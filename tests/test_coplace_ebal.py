"""COPLACE's eKSM and eBal (issue 35, docs/systems/coplace.md): a tiny run
of two VMs with both on, and their keys' errors: one line naming the key,
exit 2."""

from __future__ import annotations

import pytest

import pagelab
from conftest import run_cli, write_toml
from test_reliability import one_error_line


def _two_vms(ksm: dict | None = None, balloon: dict | None = None) -> dict:
    """Two VMs of 64 MiB sharing their data on a COPLACE host; the first
    boots with 8 MiB ballooned and gets them back once the second's balloon
    took 8 MiB."""
    vm = {"guest_mem": "64MiB", "os": {"policy": "base"},
          "workload": {"kind": "gups", "footprint": "8MiB", "accesses": 40_000, "contents": "shared"}}
    host = {
        "policy": "coplace",
        "ksm": {"enabled": True, "sleep_ms": 0.05, "pages_to_scan": 4096, "colors": "eksm", **(ksm or {})},
        "balloon": {"inflated_at_boot": ["8MiB"], "targets": ["0MiB", "8MiB"], "inflate_at_ms": 0.05,
                    "deflate": ["8MiB"], "deflate_at_ms": 0.1, "even_colors": True, **(balloon or {})},
    }
    return {
        "machine": {"phys_mem": "256MiB"},
        "virt": {"enabled": True, "host": host},
        "run": {"check_translations": True},
        "vms": [vm, vm],
    }


def test_a_tiny_run_with_eksm_and_ebal():
    stats = pagelab.run(_two_vms()).stats
    assert stats["host.balloon.deflated"] == 2048
    assert stats["balloon.pages"] == 2048
    assert stats["ksm.merges"] > 0
    for key in ("ksm.merges_across_colors", "ksm.refused_for_color", "ksm.scarce_scans",
                "host.balloon.taken_color_stddev", "host.balloon.freed_color_stddev"):
        assert key in stats


@pytest.mark.parametrize("ksm, balloon, key", [
    ({"colors": "loose"}, None, "colors"),
    ({"scarce": 1.5}, None, "virt.host.ksm.scarce"),
    (None, {"deflate": ["16MiB"]}, "virt.host.balloon.deflate[0]"),
    (None, {"inflated_at_boot": ["5000"]}, "virt.host.balloon.inflated_at_boot[0]"),
    (None, {"deflate_at_ms": -1.0}, "virt.host.balloon.deflate_at_ms"),
])
def test_a_bad_eksm_or_ebal_key_is_one_line_naming_it(tmp_path, ksm, balloon, key):
    path = write_toml(tmp_path / "c.toml", _two_vms(ksm, balloon))
    before = sorted(p.name for p in tmp_path.iterdir())
    one_error_line(run_cli("run", path, timeout=60), 2, key)
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "nothing written"
