"""What `pagelab calibrate` prints before its table, and the files it
writes (all at the end, each whole: `output.write_atomic`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pagelab.calibrate import native, preset, report
from pagelab.calibrate.native import MIB
from pagelab.calibrate.predict import MODES
from pagelab.output import write_atomic

if TYPE_CHECKING:
    from pagelab.calibrate.command import Calibration


def machine_header(facts: dict) -> list[str]:
    cpu, virt = facts["cpu"], facts["virtualization"]
    where = "a virtual machine" if virt["inside"] else "no hypervisor detected"
    return [f"A preset of this machine, written by `pagelab calibrate`: {cpu['brand'] or cpu['vendor']}",
            f"(family {cpu['family']:#x}, model {cpu['model']:#x}), {where}.",
            "Use it as the [machine] table of a configuration; each value says where it came from."]


def print_summary(facts: dict, calib: Calibration, checks: dict, warnings: list[str]) -> None:
    cpu, virt, lat, tlbs = facts["cpu"], facts["virtualization"], calib.latencies, calib.tlbs
    clock, load = facts["clock_ghz"], facts["load_average"]
    print(f"{cpu['brand'] or cpu['vendor']}: clock {clock['before']:.2f} GHz before, {clock['after']:.2f} after; "
          f"load average {load['before']:.1f} before, {load['after']:.1f} after")
    evidence = "; ".join(f"{k}: {v}" for k, v in virt["evidence"].items())
    print(f"{'inside a VM' if virt['inside'] else 'native'} ({evidence})")
    print(f"TLBs: L1 {tlbs['l1_4k'].entries} x 4 KiB, {tlbs['l1_2m'].entries} x 2 MiB; L2 {tlbs['l2'].entries}; "
          f"latencies (cycles): L1D {lat.l1d}, L2 {lat.l2}, LLC {lat.llc}, memory {lat.memory}, L2 TLB {lat.l2_tlb}")
    llc = calib.caches["llc"].size
    held = f"{calib.effective_llc / MIB:g} MiB" if calib.effective_llc else "every footprint scanned"
    print(f"LLC: sysfs {llc / MIB:g} MiB; the chase stays on its LLC plateau up to {held} "
          f"(modelled: {facts['llc_model']})")
    for name, (m, p) in checks.items():
        print(f"calibration plateau {name}: measured {m:.2f} ns, the preset gives {p:.2f} ns")
    for w in warnings:
        print(f"warning: {w}")


def summary_json(facts: dict, calib: Calibration, table: report.Table, regions: list[native.Region],
                 checks: dict, warnings: list[str]) -> dict:
    lat = calib.latencies
    rows = [{"loop": r.loop, "page_size": r.page_size, "footprint_mib": r.footprint // MIB,
             "judges": table.judges(r), "measured_ns": table.measured[r],
             **{f"predicted_{m}_ns": table.predicted[(r, m)] for m in MODES}} for r in table.rows]
    return {
        **{k: v for k, v in facts.items() if k != "probes"},
        "probes": {size: {str(n): ns for n, ns in pts.items()} for size, pts in facts["probes"].items()},
        "tlbs": {k: {"entries": a.entries, "ways": a.ways} for k, a in calib.tlbs.items()},
        "latencies_cycles": {"l1d": lat.l1d, "l2": lat.l2, "llc": lat.llc, "memory": lat.memory,
                             "l2_tlb": lat.l2_tlb},
        "base_cpi": lat.base_cpi,
        "plateaus": {name: {"footprint_mib": p.footprint / MIB, "ns": p.ns, "anon_huge_kib": p.anon_huge_kib,
                            "preset_gives_ns": checks[name][1]} for name, p in calib.plateaus.items()},
        "llc_scan_ns": {f"{fp / MIB:g}": ns for fp, ns in sorted(calib.llc_scan.items())},
        "llc_effective_mib": calib.effective_llc / MIB if calib.effective_llc else None,
        "huge_pages": [{"page_size": r.page_size, "footprint_mib": r.footprint // MIB,
                        "anon_huge_kib": r.anon_huge_kib} for r in regions],
        "warnings": warnings,
        "rows": rows,
        "reach_bytes": table.reach,
        "targets": report.targets(table),
    }


def write_outputs(out: Path, facts: dict, calib: Calibration, table: report.Table, regions: list[native.Region],
                  checks: dict, warnings: list[str]) -> list[Path]:
    """calibrate.csv (the contract's columns), machine.toml (the preset)
    and calibrate.json (everything else measured)."""
    files = {
        "calibrate.csv": report.csv_text(table),
        "machine.toml": preset.machine_toml(calib.machine, calib.notes, machine_header(facts)),
        "calibrate.json": json.dumps(summary_json(facts, calib, table, regions, checks, warnings),
                                     indent=1, sort_keys=True) + "\n",
    }
    for name, text in files.items():
        write_atomic(out / name, text)
    return [out / name for name in files]
