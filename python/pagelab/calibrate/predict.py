"""The loops simulated: each row of the table as a pagelab run on this
machine's preset, natively and in a VM over host 4 KiB or 2 MiB pages.

The chase is pagelab's `pointer-chase` with 4 KiB nodes (one line per page
at offset 0, pages in a random cycle: `loops.c`'s chase); the random loop is
`gups` with no stores (random 8-byte words of the same pages). Both carry
their loop's instructions per access, and each its own base CPI: its cycles
per instruction inside the L1D, measured (`measure.latencies`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from pagelab.api import run
from pagelab.calibrate.native import INSTRUCTIONS_PER_ACCESS, MIB

MODES = ("native", "virt4k", "virt2m")
PAGE = 4096
#: The init pass (`workload.init = "pages"`) stores once per 4 KiB page,
#: each store carrying 64 instructions (`workload/driver.rs`, `init_step /
#: 64`); `run.warmup` counts them.
INIT_INSTRUCTIONS_PER_PAGE = 64
#: The random loop's warm-up: four loads per line of the footprint (most
#: lines touched: the caches' steady state), at most `RANDOM_WARMUP` (2 M:
#: beyond the LLC its random lines matter little, and the page-table lines
#: it holds for 4 GiB, 128 Ki of them, are touched several times over).
RANDOM_WARMUP = 1 << 21
#: Measured accesses of the random loop: its rate is steady within a
#: fraction of a percent from a few hundred thousand loads.
RANDOM_MEASURED = 1 << 18
#: The chase's measured accesses at least (small footprints repeat laps).
CHASE_MEASURED = 1 << 18


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the table: a loop over a footprint on one page size."""

    loop: str
    page_size: str
    footprint: int

    def label(self) -> str:
        return f"{self.loop} {self.page_size} {self.footprint / MIB:g} MiB"


def _memory_for(footprint: int) -> int:
    """Simulated memory for a footprint: a quarter more (at least 256 MiB)
    for page tables and the kernel, in whole 2 MiB."""
    need = footprint + max(footprint // 4, 256 * MIB)
    return -(-need // (2 * MIB)) * (2 * MIB)


def accesses(row: Row) -> tuple[int, int]:
    """(warm-up, measured) accesses: the chase warms over one lap and
    measures at least one; the random loop as `RANDOM_*`."""
    pages = row.footprint // PAGE
    if row.loop == "chase":
        return pages, max(pages, CHASE_MEASURED)
    return min(RANDOM_WARMUP, 4 * (row.footprint // 64)), RANDOM_MEASURED


def config(machine: dict[str, Any], row: Row, mode: str, base_cpi: float) -> dict[str, Any]:
    """The pagelab configuration of `row` in `mode`."""
    ipa = INSTRUCTIONS_PER_ACCESS[row.loop]
    warm, measured = accesses(row)
    workload: dict[str, Any] = {"footprint": row.footprint, "accesses": warm + measured,
                                "instructions_per_access": ipa, "seed": 1}
    if row.loop == "chase":
        workload.update(kind="pointer-chase", node_size=PAGE)
    else:
        workload.update(kind="gups", write_fraction=0.0)
    pages = row.footprint // PAGE
    guest = _memory_for(row.footprint)
    host = guest if mode == "native" else _memory_for(guest)
    cfg: dict[str, Any] = {
        "machine": {**machine, "phys_mem": host, "timing": {"base_cpi": base_cpi}},
        "os": {"policy": "base" if row.page_size == "4k" else "thp"},
        "workload": workload,
        "run": {"skip_init": True, "warmup": pages * INIT_INSTRUCTIONS_PER_PAGE + warm * ipa},
    }
    if mode != "native":
        cfg["virt"] = {"enabled": True, "guest_mem": guest,
                       "host": {"policy": "base" if mode == "virt4k" else "thp"}}
    return cfg


def ns_per_access(stats: dict[str, float], ghz: float) -> float:
    """The measured part's cycles per access, in ns at the machine's clock."""
    return stats["cycles"] / stats["accesses"] / ghz


def predict(machine: dict[str, Any], rows: list[Row], base_cpi: dict[str, float], ghz: float,
            modes: tuple[str, ...], log: Callable[[str], None]) -> dict[tuple[Row, str], float]:
    """ns per access of every row in every mode."""
    out = {}
    total = len(rows) * len(modes)
    for i, (row, mode) in enumerate(((r, m) for r in rows for m in modes), 1):
        log(f"simulating {row.label()}, {mode} ({i}/{total})")
        result = run(config(machine, row, mode, base_cpi[row.loop]))
        out[(row, mode)] = ns_per_access(result.stats, ghz)
    return out
