"""Building and running the microbenchmarks of `loops.c` on this machine.

Every function here runs the compiled program and parses its lines; the
loops themselves, and what they print, are described in `loops.c`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

SOURCE = Path(__file__).with_name("loops.c")
MIB = 1 << 20
KIB = 1 << 10
PAGE_SIZES = ("4k", "thp")
LOOPS = ("chase", "random")

#: Instructions per access of each loop, as `loops.c` writes them in
#: assembly: the chase's two loads share a `sub; jnz`, the random loop's
#: load comes with the LCG step, the reduction and the loop branch.
INSTRUCTIONS_PER_ACCESS = {"chase": 2, "random": 7}


class CalibrateError(Exception):
    """What stops a calibration before or while measuring: one line for the
    user (a missing compiler, a machine it cannot measure, too little
    memory)."""


@dataclasses.dataclass(frozen=True)
class Timing:
    """One loop's timing: ns per access (the fastest timing), accesses per
    timing and timings taken."""

    ns: float
    accesses: int
    timings: int


@dataclasses.dataclass(frozen=True)
class Region:
    """What one mapping measured: its huge pages (KiB of AnonHugePages in
    /proc/self/smaps after the first touch) and each loop's timing."""

    page_size: str
    footprint: int
    anon_huge_kib: int
    loops: dict[str, Timing]

    def huge_share(self) -> float:
        """The share of the footprint that huge pages back."""
        return min(1.0, self.anon_huge_kib * KIB / self.footprint)


def compiler() -> str:
    """The system's C compiler: $CC, else cc, gcc or clang on the PATH."""
    for name in [os.environ.get("CC"), "cc", "gcc", "clang"]:
        if name and shutil.which(name):
            return name
    raise CalibrateError("no C compiler found (set CC, or install gcc: apt-get install gcc)")


def build(workdir: Path) -> Path:
    """Compiles `loops.c` into `workdir` and returns the program."""
    exe = workdir / "loops"
    cc = compiler()
    cmd = [cc, "-O2", "-o", str(exe), str(SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise CalibrateError(f"{cc} could not compile {SOURCE.name}: {first}")
    return exe


def _run(exe: Path, *args: str) -> list[list[str]]:
    done = subprocess.run([str(exe), *args], capture_output=True, text=True)
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        raise CalibrateError(f"the microbenchmark `loops {' '.join(args[:3])}` failed: {message}")
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def cpuid(exe: Path) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """Every CPUID leaf `loops cpuid` prints: (leaf, subleaf) -> (eax, ebx, ecx, edx)."""
    out = {}
    for words in _run(exe, "cpuid"):
        leaf, sub, *regs = words[1:]
        out[(int(leaf, 16), int(sub))] = tuple(int(r, 16) for r in regs)
    return out


def clock_ghz(exe: Path, repeats: int = 300) -> float:
    """The core's clock now, from a chain of one-cycle adds."""
    (words,) = _run(exe, "clock", str(repeats))
    return float(words[1])


def _timing(words: list[str]) -> Timing:
    return Timing(ns=float(words[0]), accesses=int(words[1]), timings=int(words[2]))


def measure(exe: Path, page_size: str, footprint: int, loops: list[str], repeats: int) -> Region:
    """The loops over one fresh mapping of `footprint` bytes."""
    lines = _run(exe, "run", page_size, str(footprint), str(repeats), *loops)
    huge = int(lines[0][1])
    timings = {words[0]: _timing(words[1:]) for words in lines[1:]}
    return Region(page_size, footprint, huge, timings)


@dataclasses.dataclass(frozen=True)
class Job:
    """One mapping to measure: its page size, footprint and loops."""

    page_size: str
    footprint: int
    loops: tuple[str, ...]


def fastest(a: Region, b: Region) -> Region:
    """Per loop, the faster of two measurements of one job (the huge pages
    of the first: a THP check fails if any round's fails)."""
    loops = {name: min(a.loops[name], b.loops[name], key=lambda t: t.ns) for name in a.loops}
    return Region(a.page_size, a.footprint, min(a.anon_huge_kib, b.anon_huge_kib), loops)


def measure_rounds(exe: Path, jobs: dict[str, Job], repeats: int, rounds: int,
                   log: Callable[[str], None]) -> dict[str, Region]:
    """Every job, `rounds` times over in turn, the fastest of each kept: on
    a shared host the memory's latency drifts by tens of percent over
    minutes, and rounds spread every job over the same stretch of time."""
    out: dict[str, Region] = {}
    for r in range(rounds):
        log(f"measuring, round {r + 1} of {rounds}: {len(jobs)} mappings")
        for key, job in jobs.items():
            region = measure(exe, job.page_size, job.footprint, list(job.loops), repeats)
            out[key] = fastest(out[key], region) if key in out else region
    return out


def probe(exe: Path, page_size: str, counts: list[int], repeats: int, rounds: int) -> tuple[int, dict[int, float]]:
    """The TLB probe: ns per access of a chase over N pages, for each N of
    `counts`, the fastest of `rounds` runs (as `measure_rounds`: here other
    tenants' vCPUs on the same core evicted the L2 TLB's entries through
    every timing of some runs); and the mapping's huge pages in KiB (the
    fewest)."""
    huge, points = None, {}
    for _ in range(rounds):
        lines = _run(exe, "probe", page_size, *map(str, counts), str(repeats))
        huge = min(int(lines[0][1]), huge if huge is not None else 1 << 62)
        for words in lines[1:]:
            n, ns = int(words[1]), float(words[2])
            points[n] = min(ns, points.get(n, ns))
    return huge, points
