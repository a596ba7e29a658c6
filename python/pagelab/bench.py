"""`pagelab bench`: the simulator's speed on the core issue's three target
cases, single thread, release build. Each case first runs the workload's
initialisation pass (one store per page: the page faults), untimed, then
times a fixed number of accesses. The best of `--repeat` runs is reported;
timings on shared machines are noisy, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from pagelab import _pagelab
from pagelab.api import overrides_list

#: (name, target accesses/s, overrides)
CASES = [
    (
        "gups 16GiB, 4KiB pages, translation only",
        15e6,
        {"workload.kind": "gups", "os.policy": "base", "machine.cache.enabled": False},
    ),
    (
        "gups 16GiB, 4KiB pages, full cache hierarchy",
        5e6,
        {"workload.kind": "gups", "os.policy": "base", "machine.cache.enabled": True},
    ),
    (
        "stream 16GiB, THP, full cache hierarchy",
        40e6,
        {"workload.kind": "stream", "os.policy": "thp", "machine.cache.enabled": True},
    ),
]


def measure(overrides: dict, footprint: int, accesses: int) -> float:
    """Accesses per second of the measured phase of one run."""
    base = {
        "machine.preset": "skylake",
        "machine.phys_mem": "32GiB",
        "workload.footprint": footprint,
        "workload.accesses": accesses,
        "os.thp.khugepaged": False,
    }
    sim = _pagelab.Simulation("", "<bench>", overrides_list({**base, **overrides}))
    init = footprint // 4096
    sim.step(init)
    before, _ = sim.progress()
    start = time.perf_counter()
    sim.step(accesses)
    seconds = time.perf_counter() - start
    after, _ = sim.progress()
    return (after - before) / seconds


def main(args: argparse.Namespace) -> int:
    footprint = (1 << 30) if args.quick else (16 << 30)
    accesses = 2_000_000 if args.quick else 20_000_000
    table = Table(title=f"pagelab bench ({'quick' if args.quick else 'full'}: best of {args.repeat})")
    for col in ("case", "accesses/s", "target", "met"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for name, target, overrides in CASES:
        rate = max(measure(overrides, footprint, accesses) for _ in range(args.repeat))
        table.add_row(name if not args.quick else name.replace("16GiB", "1GiB"), f"{rate / 1e6:.1f} M", f"{target / 1e6:.0f} M", "yes" if rate >= target else "no")
    Console().print(table)
    return 0
