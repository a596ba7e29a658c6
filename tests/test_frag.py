"""`pagelab frag capture/show` and `os.fragmentation.snapshot`."""

import os
from pathlib import Path

import pytest
from conftest import SNAPSHOT, run_cli

import pagelab
from pagelab import _pagelab



@pytest.fixture
def sample(tmp_path):
    p = tmp_path / "snap.txt"
    p.write_text(SNAPSHOT)
    return p


def test_snapshot_indices_follow_linux(sample):
    s = _pagelab.frag_snapshot(str(sample))
    assert s["frames"] == 3136 * 512
    assert s["free"][10] == 1118
    # Free frames in blocks of order >= 9: (227 * 512 + 1118 * 1024).
    assert s["fi"] == pytest.approx(1 - (227 * 512 + 1118 * 1024) / (3136 * 512))
    assert s["fragmentation_index"][9] == -1.0  # an order-9 request succeeds
    assert 0.0 < s["unusable_index"][9] < 1.0


def test_a_run_starts_in_the_snapshot_state_scaled(sample):
    cfg = {
        "machine": {"phys_mem": "1GiB"},
        "os": {"fragmentation": {"snapshot": str(sample)}},
        "workload": {"kind": "gups", "footprint": "4MiB", "accesses": 1000, "init": "none"},
    }
    s = pagelab.run(cfg).stats
    expected = _pagelab.frag_snapshot(str(sample))["fi"]
    assert s["phys.fi"] == pytest.approx(expected, abs=0.03)


def test_snapshot_and_target_together_are_refused(sample):
    cfg = {"os": {"fragmentation": {"snapshot": str(sample), "target": 0.5}}, "workload": {"kind": "gups"}}
    with pytest.raises(pagelab.ConfigError, match="snapshot"):
        pagelab.run(cfg)


def test_a_missing_or_corrupt_snapshot_is_a_clear_error(tmp_path):
    cfg = {"os": {"fragmentation": {"snapshot": str(tmp_path / "none.txt")}}, "workload": {"kind": "gups"}}
    with pytest.raises(pagelab.PagelabError, match="none.txt"):
        pagelab.run(cfg)
    bad = tmp_path / "bad.txt"
    bad.write_text("== /proc/buddyinfo\nNode 0, zone DMA 1 2\n")
    proc = run_cli("frag", "show", bad)
    assert proc.returncode == 2 and "bad.txt" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(not os.access("/proc/pagetypeinfo", os.R_OK), reason="/proc/pagetypeinfo needs root")
def test_capture_and_show_this_machine(tmp_path):
    snap, png = tmp_path / "here.txt", tmp_path / "here.png"
    assert run_cli("frag", "capture", snap).returncode == 0
    proc = run_cli("frag", "show", snap, "--out", png)
    assert proc.returncode == 0, proc.stderr
    assert "F_i" in proc.stdout and png.read_bytes()[:4] == b"\x89PNG"


def test_show_fits_80_columns(sample):
    import subprocess

    from conftest import pagelab_command

    proc = subprocess.run(
        pagelab_command() + ["frag", "show", str(sample)], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, NO_COLOR="1", TERM="dumb", COLUMNS="80"),
    )
    assert proc.returncode == 0, proc.stderr
    table = [line for line in proc.stdout.splitlines() if line.strip()]
    assert "…" not in proc.stdout, proc.stdout
    assert max(len(line) for line in table) <= 80, proc.stdout
    assert "frag idx" in proc.stdout and "unusable" in proc.stdout
