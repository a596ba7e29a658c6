"""The `pagelab calibrate` command: measure, build the preset, simulate,
compare, write."""

from __future__ import annotations

import dataclasses
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from pagelab.calibrate import machine, measure, native, predict, preset, report
from pagelab.calibrate.native import MIB, CalibrateError
from pagelab.calibrate.predict import MODES, Row
from pagelab.calibrate.summary import print_summary, write_outputs

THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")
#: A THP region with less than this share in huge pages is reported.
HUGE_ENOUGH = 0.9


def parse_footprints(text: str) -> list[int]:
    """`--footprints`: comma-separated MiB, each a whole number of at least
    2 (a 2 MiB page), in bytes."""
    out = []
    for part in text.split(","):
        try:
            mib = int(part.strip())
        except ValueError:
            raise CalibrateError(f"--footprints: {part.strip()!r} is not a whole number of MiB") from None
        if mib < 2:
            raise CalibrateError(f"--footprints: {mib} MiB is less than one 2 MiB page")
        out.append(mib * MIB)
    return sorted(set(out))


def check_machine(footprints: list[int], out: Path) -> None:
    """Refuses an `--out` that cannot be a directory, a machine the loops
    cannot measure, and footprints its free memory cannot hold (a quarter
    spare)."""
    if out.exists() and not out.is_dir():
        raise CalibrateError(f"--out: {out} exists and is not a directory")
    if platform.machine() not in ("x86_64", "AMD64"):
        raise CalibrateError(f"calibrate measures x86-64 machines (CPUID); this one is {platform.machine()}")
    if not Path("/proc/self/smaps").exists():
        raise CalibrateError("calibrate needs Linux's /proc/self/smaps (to check the huge pages it got)")
    check_memory(max(footprints), "--footprints")


def check_memory(footprint: int, what: str) -> None:
    """Refuses a mapping the available memory cannot hold with a quarter
    to spare."""
    free = machine.available_memory()
    if free is not None and footprint * 5 // 4 > free:
        raise CalibrateError(f"{what}: {footprint // MIB} MiB does not fit this machine's available memory "
                             f"({free // MIB} MiB) with a quarter to spare")


def thp_setting() -> str:
    """Linux's THP mode (`always`, `madvise`, `never`), or 'unknown'."""
    try:
        text = THP_SETTING.read_text()
    except OSError:
        return "unknown"
    return text[text.find("[") + 1:text.find("]")] if "[" in text else text.strip()


def huge_page_warnings(regions: list[native.Region]) -> list[str]:
    """Regions whose pages are not what they asked for."""
    out = []
    for r in regions:
        share = r.huge_share()
        if r.page_size == "thp" and share < HUGE_ENOUGH:
            out.append(f"THP {r.footprint / MIB:g} MiB got huge pages for {share:.0%} of it")
        if r.page_size == "4k" and share > 0:
            out.append(f"4 KiB {r.footprint / MIB:g} MiB got huge pages for {share:.0%} of it")
    return out


def row_jobs(footprints: list[int]) -> dict[str, native.Job]:
    return {f"row:{size}:{fp}": native.Job(size, fp, native.LOOPS) for size in native.PAGE_SIZES for fp in footprints}


@dataclasses.dataclass
class Calibration:
    """What the preset was built from, and the preset."""

    caches: dict[str, machine.Cache]
    tlbs: machine.Tlbs
    plateaus: dict[str, measure.Plateau]
    latencies: measure.Latencies
    llc_scan: dict[int, float]
    effective_llc: int | None
    machine: dict
    notes: dict[str, str]
    ghz: float


def identify(exe: Path) -> tuple[dict, machine.Cpuid, dict[str, machine.Cache]]:
    """The machine's facts (CPU, hypervisor, THP, load, clock), its CPUID
    and its caches."""
    regs = native.cpuid(exe)
    try:
        caches = machine.read_caches()
    except LookupError as e:
        raise CalibrateError(str(e)) from None
    family, model, stepping = machine.signature(regs)
    virt = machine.detect_virtualization(regs)
    facts = {
        "cpu": {"vendor": machine.vendor(regs), "brand": machine.brand(regs), "family": family, "model": model,
                "stepping": stepping},
        "virtualization": {"inside": virt.inside, "evidence": virt.evidence},
        "thp_setting": thp_setting(),
        "load_average": {"before": machine.load_average()},
        "clock_ghz": {"before": native.clock_ghz(exe)},
    }
    return facts, regs, caches


def build_preset(facts: dict, caches: dict[str, machine.Cache], geometry: measure.Geometry,
                 regions: dict[str, native.Region], llc_choice: str) -> Calibration:
    """The preset from the plateaus (and, with `--llc measured`, the LLC
    the scan found)."""
    tlbs, sources = preset.complete_tlbs(geometry.tlbs, geometry.sources)
    plateaus = measure.plateaus(regions)
    ghz = max(facts["clock_ghz"].values())
    l2_tlb_ns = geometry.l2_tlb_ns if geometry.l2_tlb_ns is not None else 0.0
    lat = measure.latencies(plateaus, ghz, l2_tlb_ns, tlbs["l1_2m"].entries)
    scan = measure.llc_scan(regions)
    effective = measure.effective_llc(scan, plateaus["llc"].ns)
    modelled = dict(caches)
    if llc_choice == "measured" and effective is not None:
        modelled["llc"] = machine.partitioned(caches["llc"], effective)
    table, notes = preset.machine_table(modelled, tlbs, sources, lat, plateaus, ghz, l2_tlb_ns)
    if modelled["llc"] is not caches["llc"]:
        preset.note_measured_llc(notes, caches["llc"], effective)
    return Calibration(caches, tlbs, plateaus, lat, scan, effective, table, notes, ghz)


def check_plateaus(calib: Calibration, log: Callable[[str], None]) -> dict[str, tuple[float, float]]:
    """Each plateau simulated natively on the preset built from it: it
    should come back (a check of the preset's construction, not of the
    model). name -> (measured, predicted) ns."""
    rows = {name: Row(p.loop, p.page_size, p.footprint) for name, p in calib.plateaus.items()}
    predicted = predict.predict(calib.machine, list(rows.values()), calib.latencies.base_cpi, calib.ghz,
                                ("native",), log)
    return {name: (calib.plateaus[name].ns, predicted[(row, "native")]) for name, row in rows.items()}


def measure_machine(args, footprints: list[int], log: Callable[[str], None]):
    """Everything measured on the machine: its facts, caches and TLBs, and
    every mapping (plateaus, the LLC scan, the rows), in rounds."""
    with tempfile.TemporaryDirectory(prefix="pagelab-calibrate-") as work:
        exe = native.build(Path(work))
        facts, regs, caches = identify(exe)
        geometry = measure.tlb_geometry(exe, regs, caches["l1d"], args.repeats, args.rounds, log)
        l2_entries = preset.complete_tlbs(geometry.tlbs, geometry.sources)[0]["l2"].entries
        jobs = {**measure.plateau_jobs(caches, l2_entries), **measure.llc_scan_jobs(caches, l2_entries),
                **row_jobs(footprints)}
        check_memory(jobs["plateau:memory"].footprint, "the memory plateau")
        regions = native.measure_rounds(exe, jobs, args.repeats, args.rounds, log)
        facts["clock_ghz"]["after"] = native.clock_ghz(exe)
        facts["load_average"]["after"] = machine.load_average()
    facts.update(probes=geometry.probes, thp_probe_huge_kib=geometry.thp_probe_huge_kib, llc_model=args.llc)
    return facts, caches, geometry, regions


def compare(calib: Calibration, regions: dict[str, native.Region], log: Callable[[str], None]) -> report.Table:
    """The rows measured against their simulations in every mode."""
    measured_rows = [r for key, r in regions.items() if key.startswith("row:")]
    rows = [Row(loop, r.page_size, r.footprint) for r in measured_rows for loop in native.LOOPS]
    measured = {Row(loop, r.page_size, r.footprint): r.loops[loop].ns for r in measured_rows for loop in native.LOOPS}
    predicted = predict.predict(calib.machine, rows, calib.latencies.base_cpi, calib.ghz, MODES, log)
    l2 = calib.tlbs["l2"].entries
    return report.Table(rows, measured, predicted, {"4k": l2 * 4096, "thp": l2 * 2 * MIB})


def main(args) -> int:
    started = time.monotonic()
    log = lambda msg: print(f"[{time.monotonic() - started:5.0f} s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    out = Path(args.out)
    try:
        footprints = parse_footprints(args.footprints)
        check_machine(footprints, out)
        facts, caches, geometry, regions = measure_machine(args, footprints, log)
    except CalibrateError as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return 2
    calib = build_preset(facts, caches, geometry, regions, args.llc)
    table = compare(calib, regions, log)
    checks = check_plateaus(calib, log)
    warnings = huge_page_warnings(list(regions.values()))
    print_summary(facts, calib, checks, warnings)
    report.print_tables(table)
    row_regions = [r for key, r in regions.items() if key.startswith("row:")]
    for path in write_outputs(out, facts, calib, table, row_regions, checks, warnings):
        print(f"wrote {path}")
    return 0
