"""`pagelab bench`: the simulator's speed on the core issue's three target
cases, single thread, release build. The cases are defined once, in the
core (`engine::bench`), and shared with `cargo bench -p pagelab-core`. Each
case first runs the workload's initialisation pass (one store per page: the
page faults), untimed, then times a fixed number of accesses. The best of
`--repeat` runs is reported; timings on shared machines are noisy, so
compare ratios within one run.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from pagelab import _pagelab


def main(args: argparse.Namespace) -> int:
    footprint = (1 << 30) if args.quick else (16 << 30)
    accesses = 2_000_000 if args.quick else 20_000_000
    size = "1GiB" if args.quick else "16GiB"
    table = Table(title=f"pagelab bench ({size} footprint, {accesses:,} accesses: best of {args.repeat})")
    for col in ("case", "accesses/s", "target", "met"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for name, target in _pagelab.bench_cases():
        rate = max(_pagelab.bench_case(name, footprint, accesses) for _ in range(args.repeat))
        if target > 0:
            table.add_row(name, f"{rate / 1e6:.1f} M", f"{target / 1e6:.0f} M", "yes" if rate >= target else "no")
        else:  # a comparison case (colored huge pages against THP), no target
            table.add_row(name, f"{rate / 1e6:.1f} M", "-", "-")
    Console().print(table)
    return 0
