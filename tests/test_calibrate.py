"""`pagelab calibrate` (docs/validation.md): its decoders of CPUID and
sysfs on documented register values, the TLB probe's reading of a step,
the preset it builds, its simulation of the loops, and one small run of the
whole command (the table's shape, never a timing)."""

from __future__ import annotations

import csv
import platform
import shutil
import tomllib
from pathlib import Path

import pytest
import tomli_w

from conftest import run_cli
from pagelab import _pagelab
from pagelab.calibrate import machine, parse_footprints, predict, tlbprobe
from pagelab.calibrate.machine import Array, Cache
from pagelab.calibrate.native import MIB, CalibrateError

INTEL = {(0, 0): (0x20, 0x756E6547, 0x6C65746E, 0x49656E69)}  # "GenuineIntel"
AMD = {(0, 0): (0x10, 0x68747541, 0x444D4163, 0x69746E65)}  # "AuthenticAMD"


def test_vendor_and_signature_are_read_from_leaves_0_and_1():
    assert machine.vendor(INTEL) == "GenuineIntel"
    assert machine.vendor(AMD) == "AuthenticAMD"
    # 0x000a0678: family 6, extended model 0xa, model 7, stepping 8.
    assert machine.signature({(1, 0): (0x000A0678, 0, 0, 0)}) == (6, 0xA7, 8)
    # 0x00a10f11 (Zen 4): base family 0xf + extended 0xa = 0x19, model 0x11.
    assert machine.signature({(1, 0): (0x00A10F11, 0, 0, 0)}) == (0x19, 0x11, 1)


def intel_subleaf(kind: int, level: int, sizes: int, ways: int, sets: int, full: bool = False):
    return (0, sizes | ways << 16, sets, kind | level << 5 | (0x100 if full else 0))


def test_intel_leaf_0x18_gives_each_array_by_level_type_and_page_size():
    regs = dict(INTEL)
    regs[(0x18, 0)] = (3,) + intel_subleaf(4, 1, 0b0001, 6, 16)[1:]  # load-only L1, 4 KiB: 96 entries
    regs[(0x18, 1)] = intel_subleaf(4, 1, 0b0110, 4, 8)  # load-only L1, 2M/4M: 32
    regs[(0x18, 2)] = intel_subleaf(3, 2, 0b0011, 16, 128)  # unified L2, 4K and 2M: 2048
    regs[(0x18, 3)] = intel_subleaf(3, 2, 0b1000, 8, 128)  # unified L2, 1 GiB: 1024
    regs[(0x18, 4)] = intel_subleaf(5, 1, 0b0001, 16, 1, full=True)  # store-only: not a load's
    tlbs = machine.cpuid_tlbs(regs)
    assert tlbs == {"l1_4k": Array(96, 6), "l1_2m": Array(32, 4), "l2": Array(2048, 16), "l2_1g": Array(1024, 8)}


def test_amd_leaves_give_l1_l2_and_1g_arrays_with_encoded_ways():
    regs = dict(AMD)
    # Fn8000_0005: EAX 2M/4M L1 (0xFF ways: fully associative, 72 entries),
    # EBX 4 KiB L1 the same.
    regs[(0x80000005, 0)] = (0xFF48FF40, 0xFF48FF40, 0, 0)
    # Fn8000_0006: EAX 2M L2 and EBX 4 KiB L2: ways code 0x8 (16), 2048 entries.
    regs[(0x80000006, 0)] = (0x8800_0000 | 2048 << 16, 0x8000_0000 | 2048 << 16, 0, 0)
    # Fn8000_0019: EAX L1 1G fully associative (0xF), 64; EBX L2 1G 8-way (0x6), 1024.
    regs[(0x80000019, 0)] = (0xF000_0000 | 64 << 16, 0x6000_0000 | 1024 << 16, 0, 0)
    tlbs = machine.cpuid_tlbs(regs)
    assert tlbs == {"l1_4k": Array(72, 72), "l1_2m": Array(72, 72), "l2": Array(2048, 16),
                    "l1_1g": Array(64, 64), "l2_1g": Array(1024, 8)}


def test_a_hypervisor_that_hides_the_tlbs_leaves_them_unreported():
    # This project's machine: leaf 0x18 all zeros under its hypervisor.
    regs = dict(INTEL)
    regs[(0x18, 0)] = (0, 0, 0, 0)
    assert machine.cpuid_tlbs(regs) == {}


def test_the_hypervisor_bit_and_vendor_are_evidence(tmp_path):
    regs = {(1, 0): (0, 0, 1 << 31, 0), (0x40000000, 0): (0x40000001, 0x4B4D564B, 0x564B4D56, 0x4D)}
    virt = machine.detect_virtualization(regs, sys_hypervisor=tmp_path / "none")
    assert virt.inside
    assert "KVMKVMKVM" in virt.evidence["cpuid"]


def test_sysfs_caches_are_read_and_shaped_for_pagelab(tmp_path):
    for i, (level, kind, size, ways, sets) in enumerate(
        [(1, "Data", "48K", 12, 64), (1, "Instruction", "32K", 8, 64), (2, "Unified", "2048K", 16, 2048),
         (3, "Unified", "107520K", 15, 114688)]
    ):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, value in [("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                            ("coherency_line_size", 64), ("number_of_sets", sets)]:
            (d / name).write_text(f"{value}\n")
    caches = machine.read_caches(tmp_path)
    assert caches["l1d"] == Cache(1, 48 << 10, 12, 64, 64)
    assert machine.model_shape(caches["l2"]) == (2 << 20, 16)
    # 56 slices of 2,048 sets: not a power of two; 131,072 sets of 13 ways
    # keep the capacity within 1%.
    assert machine.model_shape(caches["llc"]) == (104 << 20, 13)


def test_the_probe_reads_an_arrays_size_from_its_step():
    cands, fill = tlbprobe.L1_CANDIDATES, tlbprobe.L1_FILL
    points = {n: (2.1 if n <= 96 else 5.0) for n in tlbprobe.probe_counts(cands, fill)}
    reach = tlbprobe.find_reach(points, cands, fill)
    assert reach.entries == 96 and reach.plateau_ns == 2.1
    flat = {n: 2.1 for n in tlbprobe.probe_counts(cands, fill)}
    assert tlbprobe.find_reach(flat, cands, fill).entries is None, "no step: nothing found"
    # Each candidate's probe overflows the candidate below it.
    for cands, fill in ((tlbprobe.L1_CANDIDATES, tlbprobe.L1_FILL), (tlbprobe.L2_CANDIDATES, tlbprobe.L2_FILL)):
        assert all(round(c * fill) > below for below, c in zip(cands, cands[1:])), cands
    assert tlbprobe.assumed_ways(96) == 12 and tlbprobe.assumed_ways(2048) == 16 and tlbprobe.assumed_ways(72) == 9


def test_the_l2_probe_starts_past_the_l1ds_lines():
    l1d = Cache(1, 48 << 10, 12, 64, 64)  # 768 lines
    assert all(c * tlbprobe.L2_FILL >= 1152 for c in tlbprobe.l2_candidates(l1d))
    assert tlbprobe.l2_candidates(l1d)[0] == 1536


@pytest.mark.parametrize("text, message", [("16,x", "'x'"), ("1", "less than one 2 MiB page"), ("", "''")])
def test_bad_footprints_are_refused_by_name(text, message):
    with pytest.raises(CalibrateError, match="--footprints") as e:
        parse_footprints(text)
    assert message in str(e.value)


def test_footprints_are_mib_sorted_once():
    assert parse_footprints("64, 16,64") == [16 * MIB, 64 * MIB]


MACHINE = {"preset": "skylake", "tlb": {"l2_entries": 2048, "l2_ways": 16}}


@pytest.mark.parametrize("mode", predict.MODES)
def test_each_rows_configuration_is_valid_and_measures_what_it_should(mode):
    row = predict.Row("chase", "4k", 8 * MIB)
    cfg = predict.config(MACHINE, row, mode, base_cpi=2.5)
    text = _pagelab.resolve_config(tomli_w.dumps(cfg), "<t>", [])
    resolved = tomllib.loads(text)
    assert resolved["workload"]["instructions_per_access"] == 2
    assert resolved["virt"]["enabled"] == (mode != "native")


def test_a_simulated_row_measures_exactly_its_measured_accesses():
    # The warm-up counts the init pass's instructions (64 a page): if that
    # contract moved, the statistics would cover other accesses than these.
    from pagelab.api import run

    for row in (predict.Row("chase", "4k", 4 * MIB), predict.Row("random", "thp", 4 * MIB)):
        stats = run(predict.config(MACHINE, row, "native", base_cpi=1.0)).stats
        _, measured = predict.accesses(row)
        assert abs(stats["accesses"] - measured) <= 512, (row, stats["accesses"], measured)
        assert stats["faults"] == 0, "the init pass's faults are not in the measurement"


def test_bad_flags_are_one_line_and_exit_2(tmp_path):
    for argv in (["--footprints", "16,abc"], ["--repeats", "0"], ["--nonsense"]):
        proc = run_cli("calibrate", "--out", tmp_path / "o", *argv, cwd=tmp_path)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists(), "nothing written"


needs_machine = pytest.mark.skipif(
    platform.machine() != "x86_64" or not shutil.which("gcc"), reason="needs an x86-64 Linux machine and gcc"
)


@needs_machine
def test_calibrate_writes_the_table_of_a_small_footprint(tmp_path):
    out = tmp_path / "cal"
    proc = run_cli("calibrate", "--out", out, "--footprints", "4", "--repeats", "2", "--rounds", "1",
                   cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    with open(out / "calibrate.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["loop", "page_size", "footprint_mib", "measured_ns", "predicted_native_ns",
                                     "predicted_virt4k_ns", "predicted_virt2m_ns"]
        rows = list(reader)
    assert sorted((r["loop"], r["page_size"], r["footprint_mib"]) for r in rows) == [
        ("chase", "4k", "4"), ("chase", "thp", "4"), ("random", "4k", "4"), ("random", "thp", "4")]
    for r in rows:
        assert all(float(r[k]) > 0 for k in list(r)[3:]), r
    # The preset is a machine table pagelab accepts as it is.
    text = (out / "machine.toml").read_text() + '[workload]\nkind = "gups"\n'
    resolved = tomllib.loads(_pagelab.resolve_config(text, str(out / "machine.toml"), []))
    assert resolved["machine"]["tlb"]["l2_entries"] > 0
    assert "THP speedup" in proc.stdout and "judged rows" in proc.stdout
