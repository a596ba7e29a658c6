"""The tables pagelab prints: `pagelab run`'s summary, and the helpers
that keep every printed table readable in an 80-column terminal (compact
numbers; the full ones are in the CSV and stats.json)."""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table

_SUFFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


def compact(n: float) -> str:
    """A count in at most 7 characters: 1.99 M, 12.3 k, 987 (three
    significant digits; `1,988,123` does not fit a narrow column)."""
    if not math.isfinite(n):
        return str(n)
    for scale, suffix in _SUFFIXES:
        if abs(n) >= scale * 0.9995:
            v = n / scale
            return f"{v:.3g} {suffix}" if abs(v) < 999.5 else f"{v:.0f} {suffix}"
    return f"{n:.0f}" if float(n).is_integer() or abs(n) >= 100 else f"{n:.3g}"


def narrow_table(title: str) -> Table:
    """A table with no vertical rules and one space between columns:
    eight columns of numbers then fit in 80 with their names whole."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)


def text_column(table: Table, header: str, values) -> None:
    """A left-aligned column as wide as its longest value (never cut)."""
    width = max([len(header), *(len(str(v)) for v in values)])
    table.add_column(header, no_wrap=True, min_width=width)


def numeric_column(table: Table, header: str) -> None:
    """A right-aligned column that never wraps or cuts its numbers (the
    text columns give way instead)."""
    table.add_column(header, justify="right", no_wrap=True, overflow="fold")


#: (statistic, label, format). Each label says what its count includes,
#: so that no two rows that count different things read as comparable:
#: "data accesses" are loads and stores (a read-modify-write once, as the
#: workload made it), while a cache level's lookups include the page
#: walks' references.
SUMMARY = [
    ("instructions", "instructions", "{:,.0f}"),
    ("accesses", "data accesses (loads + stores)", "{:,.0f}"),
    ("ifetches", "instruction fetches", "{:,.0f}"),
    ("dtlb.l1.misses", "L1 DTLB misses", "{:,.0f}"),
    ("dtlb.l2.misses", "L2 TLB misses (walks)", "{:,.0f}"),
    ("walk.mem_refs", "walk references", "{:,.0f}"),
    ("pwc.hits", "page-walk-cache hits", "{:,.0f}"),
    ("faults", "page faults", "{:,.0f}"),
    ("faults.huge", "huge-page faults", "{:,.0f}"),
    ("cache.l1d.misses", "L1D misses (data + walk refs)", "{:,.0f}"),
    ("cache.l1d.walk_misses", "  of which walk refs", "{:,.0f}"),
    ("cache.l2.misses", "L2 misses (data + walk refs)", "{:,.0f}"),
    ("cache.llc.misses", "LLC misses (data + walk refs)", "{:,.0f}"),
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


def summary_rows(stats: dict) -> list[tuple[str, str]]:
    """(label, formatted value) of each SUMMARY statistic the run has
    (instruction fetches only when there were any)."""
    rows = []
    for key, label, fmt in SUMMARY:
        if key in stats and not (key == "ifetches" and not stats[key]):
            rows.append((label, fmt.format(stats[key])))
    return rows


def run_title(config_toml: str, seconds: float) -> str:
    """`gups, os.policy = thp, 1 core, 0.42 s`: what ran, in one line."""
    import tomllib

    try:
        cfg = tomllib.loads(config_toml)
    except tomllib.TOMLDecodeError:
        return f"{seconds:.2f} s"
    def workloads_of(table: dict) -> list[dict]:
        return table.get("workloads") or ([table["workload"]] if "workload" in table else [])

    vms = cfg.get("vms", [])
    workloads = [w for t in [cfg, *vms] for w in workloads_of(t)]
    kinds = ", ".join(sorted({str(w.get("kind", "?")) for w in workloads})) or "?"
    cores = len(workloads)
    policy = "os.policy = " + str(cfg.get("os", {}).get("policy", "?"))
    if vms:  # each VM's guest has its own
        policy = f"{len(vms)} VMs, os.policy = " + ", ".join(str(vm.get("os", {}).get("policy", "?")) for vm in vms)
    elif cfg.get("virt", {}).get("enabled"):
        policy += ", virtualized"
    return f"{kinds}, {policy}, {cores} core{'s' if cores != 1 else ''}, {seconds:.2f} s"


def print_summary(stats: dict, seconds: float, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"pagelab run ({seconds:.2f} s)", show_header=True)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for label, value in summary_rows(stats):
        table.add_row(label, value)
    console.print(table)
