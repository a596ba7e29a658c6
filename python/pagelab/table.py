"""The summary table `pagelab run` prints."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

#: (statistic, label, format)
SUMMARY = [
    ("instructions", "instructions", "{:,.0f}"),
    ("accesses", "data accesses", "{:,.0f}"),
    ("dtlb.l1.misses", "L1 DTLB misses", "{:,.0f}"),
    ("dtlb.l2.misses", "L2 TLB misses (walks)", "{:,.0f}"),
    ("walk.mem_refs", "walk references", "{:,.0f}"),
    ("pwc.hits", "page-walk-cache hits", "{:,.0f}"),
    ("faults", "page faults", "{:,.0f}"),
    ("faults.huge", "huge-page faults", "{:,.0f}"),
    ("cache.l1d.misses", "L1D misses", "{:,.0f}"),
    ("cache.l2.misses", "L2 misses", "{:,.0f}"),
    ("cache.llc.misses", "LLC misses", "{:,.0f}"),
    ("cycles", "cycles", "{:,.0f}"),
    ("cycles.translation", "  translation", "{:,.0f}"),
    ("cycles.data", "  data", "{:,.0f}"),
    ("cycles.faults", "  faults", "{:,.0f}"),
    ("ipc", "IPC", "{:.3f}"),
    ("mem.mapped.4k", "mapped 4 KiB (bytes)", "{:,.0f}"),
    ("mem.mapped.2m", "mapped 2 MiB (bytes)", "{:,.0f}"),
    ("mem.mapped.1g", "mapped 1 GiB (bytes)", "{:,.0f}"),
    ("phys.fi", "F_i at the end", "{:.3f}"),
]


def print_summary(stats: dict, seconds: float, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"pagelab run ({seconds:.2f} s)", show_header=True)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, label, fmt in SUMMARY:
        if key in stats:
            table.add_row(label, fmt.format(stats[key]))
    console.print(table)
