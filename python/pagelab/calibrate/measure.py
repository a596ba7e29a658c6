"""The measurements a preset of this machine takes from it: the TLBs'
geometry (CPUID, else the probe) and the latencies of the loops' plateaus
inside the caches and within the TLBs' reach.

No table row judges the model with what it was calibrated on: every
plateau here is a footprint the caches or the L1/L2 TLB hold, apart from
the rows `--footprints` asks for.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Callable

from pagelab.calibrate import native, tlbprobe
from pagelab.calibrate.machine import Cache, Cpuid, Tlbs, cpuid_tlbs, vendor
from pagelab.calibrate.native import MIB

HUGE = 2 * MIB
#: Timings of each probe at least, whatever `--repeats` says: a probe is
#: short, and a step misread changes the preset.
PROBE_REPEATS = 20
#: THP probes stop here (2 MiB each: 230 MiB at 0.9 x 128).
THP_L1_CANDIDATES = [c for c in tlbprobe.L1_CANDIDATES if c <= 128]


@dataclasses.dataclass(frozen=True)
class Geometry:
    """The TLBs as the preset takes them, where each array came from, and
    the probes' points (page count -> ns per access) for the record."""

    tlbs: Tlbs
    sources: dict[str, str]
    l2_tlb_ns: float | None
    probes: dict[str, dict[int, float]]
    thp_probe_huge_kib: int


def _cpuid_source(regs: Cpuid) -> str:
    v = vendor(regs)
    return "cpuid leaves 0x80000005/6/19" if v in ("AuthenticAMD", "HygonGenuine") else "cpuid leaf 0x18"


def tlb_geometry(exe: Path, regs: Cpuid, l1d: Cache, repeats: int, rounds: int,
                 log: Callable[[str], None]) -> Geometry:
    """CPUID's arrays where it reports them, the probe's otherwise. The
    probes always run: they give the L2 TLB's hit latency, and beside
    CPUID's figures they check them."""
    reported = cpuid_tlbs(regs)
    log("probing the TLBs (chases over N pages, lines in the L1D or L2)")
    repeats = max(repeats, PROBE_REPEATS)
    l1_counts = tlbprobe.probe_counts(tlbprobe.L1_CANDIDATES, tlbprobe.L1_FILL)
    l2_cands = tlbprobe.l2_candidates(l1d)
    l2_counts = tlbprobe.probe_counts(l2_cands, tlbprobe.L2_FILL)
    _, points_4k = native.probe(exe, "4k", sorted(set(l1_counts + l2_counts)), repeats, rounds)
    l1_4k = tlbprobe.find_reach(points_4k, tlbprobe.L1_CANDIDATES, tlbprobe.L1_FILL)
    l2 = tlbprobe.find_reach(points_4k, l2_cands, tlbprobe.L2_FILL)
    thp_counts = tlbprobe.probe_counts(THP_L1_CANDIDATES, tlbprobe.L1_FILL)
    huge_kib, points_2m = native.probe(exe, "thp", thp_counts, repeats, rounds)
    l1_2m = tlbprobe.find_reach(points_2m, THP_L1_CANDIDATES, tlbprobe.L1_FILL)
    if huge_kib * 1024 < HUGE * max(points_2m):
        l1_2m = tlbprobe.Reach(None, l1_2m.plateau_ns, points_2m)
    l2_tlb_ns = None
    stlb_n = tlbprobe.stlb_probe_count(l1_4k, l1d)
    if stlb_n is not None:
        _, stlb = native.probe(exe, "4k", [stlb_n], repeats, rounds)
        l2_tlb_ns = tlbprobe.l2_tlb_latency_ns(l1_4k, stlb[stlb_n])
    measured = tlbprobe.measured_tlbs(l1_4k, l2, l1_2m)
    tlbs, sources = {}, {}
    for key in ("l1_4k", "l1_2m", "l1_1g", "l2", "l2_1g"):
        if key in reported:
            tlbs[key], sources[key] = reported[key], _cpuid_source(regs)
            if key in measured and measured[key].entries != reported[key].entries:
                sources[key] += f" (the probe found {measured[key].entries} entries)"
        elif key in measured:
            tlbs[key] = measured[key]
            sources[key] = (f"measured: the probe's step after {measured[key].entries} pages "
                            f"(cpuid reports no TLBs); ways assumed")
    return Geometry(tlbs, sources, l2_tlb_ns, {"4k": points_4k, "thp": points_2m}, huge_kib)


@dataclasses.dataclass(frozen=True)
class Plateau:
    """One loop at one footprint chosen to sit on a plateau."""

    name: str
    loop: str
    page_size: str
    footprint: int
    ns: float
    anon_huge_kib: int


def _pow2_at_least(n: int) -> int:
    return 1 << math.ceil(math.log2(max(1, n)))


def plateau_footprints(caches: dict[str, Cache], l2_tlb_entries: int) -> dict[str, int]:
    """Where each plateau is measured (THP; one line per 4 KiB page at
    offset 0, so a cache of S bytes holds the lines of S bytes of pages):
    the L1D's (4 pages: one set), the L2's (half the L2), the LLC's (4 x the
    L2, at most half the LLC) and memory's (8 x the LLC rounded up to a
    power of two, at most half the L2 TLB's reach in 2 MiB pages, at least
    256 MiB)."""
    l2, llc = caches["l2"].size, caches["llc"].size
    llc_fp = min(4 * l2, llc // 2)
    reach = l2_tlb_entries * HUGE
    memory = max(256 * MIB, min(_pow2_at_least(8 * llc), reach // 2))
    return {"l1": 16 << 10, "l2": l2 // 2, "llc": -(-llc_fp // HUGE) * HUGE, "memory": memory}


def plateau_jobs(caches: dict[str, Cache], l2_tlb_entries: int) -> dict[str, native.Job]:
    """The chase on each plateau, and the random loop inside the L1D (its
    base CPI), keyed `plateau:NAME`."""
    return {f"plateau:{name}": native.Job("thp", fp, ("chase", "random") if name == "l1" else ("chase",))
            for name, fp in plateau_footprints(caches, l2_tlb_entries).items()}


def plateaus(regions: dict[str, native.Region]) -> dict[str, Plateau]:
    """The plateaus out of the measured `plateau_jobs`; the random loop's
    inside the L1D as `random-l1`."""
    out = {}
    for key, region in regions.items():
        if not key.startswith("plateau:"):
            continue
        name = key.split(":", 1)[1]
        for loop, timing in region.loops.items():
            label = name if loop == "chase" else f"{loop}-{name}"
            out[label] = Plateau(label, loop, "thp", region.footprint, timing.ns, region.anon_huge_kib)
    return out


#: The LLC scan's step between footprints, and how far past the size sysfs
#: gives it goes.
SCAN_STEP = 1.25
SCAN_BEYOND = 1.5
#: A footprint whose chase is this much slower than the LLC's plateau has
#: left the LLC.
LLC_LEFT = 1.5


def llc_scan_jobs(caches: dict[str, Cache], l2_tlb_entries: int) -> dict[str, native.Job]:
    """The chase (THP) from twice the LLC plateau's footprint to
    `SCAN_BEYOND` times the LLC's size, by `SCAN_STEP`: where the LLC this
    process gets ends (on a shared host, less than sysfs says), keyed
    `scan:BYTES`."""
    fp = 2 * plateau_footprints(caches, l2_tlb_entries)["llc"]
    out = {}
    while fp <= SCAN_BEYOND * caches["llc"].size:
        out[f"scan:{fp}"] = native.Job("thp", fp, ("chase",))
        fp = -(-int(fp * SCAN_STEP) // HUGE) * HUGE
    return out


def llc_scan(regions: dict[str, native.Region]) -> dict[int, float]:
    return {r.footprint: r.loops["chase"].ns for key, r in regions.items() if key.startswith("scan:")}


def effective_llc(scan: dict[int, float], llc_ns: float) -> int | None:
    """The largest footprint of the scan still on the LLC's plateau, when a
    later one left it (None: the LLC held every footprint scanned)."""
    held = None
    for fp in sorted(scan):
        if scan[fp] > llc_ns * LLC_LEFT:
            return held
        held = fp
    return None


@dataclasses.dataclass(frozen=True)
class Latencies:
    """The preset's latencies in cycles, and each loop's base CPI."""

    l1d: int
    l2: int
    llc: int
    memory: int
    l2_tlb: int
    base_cpi: dict[str, float]


def latencies(plateaus: dict[str, Plateau], ghz: float, l2_tlb_ns: float, l1_2m_entries: int) -> Latencies:
    """Cycles from ns at the measured clock. Memory's plateau lies beyond
    the L1 TLB's reach in 2 MiB pages when it exceeds `l1_2m_entries` of
    them: each of its accesses then also paid an L2 TLB hit, taken out."""
    cycles = {name: p.ns * ghz for name, p in plateaus.items()}
    memory_tlb = l2_tlb_ns if plateaus["memory"].footprint > l1_2m_entries * HUGE else 0.0
    per_access = native.INSTRUCTIONS_PER_ACCESS
    return Latencies(
        l1d=round(cycles["l1"]),
        l2=round(cycles["l2"]),
        llc=round(cycles["llc"]),
        memory=round((plateaus["memory"].ns - memory_tlb) * ghz),
        l2_tlb=round(l2_tlb_ns * ghz),
        base_cpi={"chase": cycles["l1"] / per_access["chase"], "random": cycles["random-l1"] / per_access["random"]},
    )
