"""What the Perforated Pages experiments share: the paper's machine, the
random-access microbenchmark over 2 GB (VII-B: it fits the 1536-entry L2
TLB with 2 MiB pages, 1024 entries, and not with 4 KiB ones), the four
systems and the fragmentation scenario (`os.holes`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments.common import GIB, MIB, markdown_table, seeds, write_text
from pagelab.sweep import Sweep

#: System -> its `os` keys. `base-2m-4k` is a conventional kernel under the
#: scenario (fragmented regions get 4 KiB pages: the `holes` system before
#: THP); `ideal-2m` is THP on unfragmented memory.
SYSTEMS = {
    "base-4k": {"policy": "base"},
    "base-2m-4k": {"policy": "thp", "systems": ["holes", "thp", "base"]},
    "perforated": {"policy": "perforated"},
    "ideal-2m": {"policy": "thp"},
}
#: The systems that see the scenario.
FRAGMENTED = {"base-2m-4k", "perforated"}

#: variant -> (phys_mem, footprint, accesses, degrees, portions, distributions, hole kinds)
SCALES = {
    "full": (
        8 * GIB,
        2 * GIB,
        4_000_000,
        [0.1, 0.25, 0.5, 0.9],
        [0.0, 0.25, 0.5, 0.75, 1.0],
        ["clustered", "dispersed"],
        ["allocated", "unallocated"],
    ),
    "quick": (
        4 * GIB,
        2 * GIB,
        1_000_000,
        [0.25, 0.9],
        [0.5, 1.0],
        ["clustered", "dispersed"],
        ["allocated", "unallocated"],
    ),
    "tiny": (512 * MIB, 64 * MIB, 20_000, [0.25], [0.5], ["clustered"], ["allocated", "unallocated"]),
}


def labels(values: list) -> list[dict]:
    """Grid values that only label a point (`shape` acts on them)."""
    return [{"name": v} for v in values]


def paper_machine(phys_mem: int) -> dict:
    """The paper's Table II machine (`gem5-skylake`) with `phys_mem`
    bytes, statistics of the measured accesses only, khugepaged off (the
    paper's mappings are set up before the measured region)."""
    return {
        "machine": {"preset": "gem5-skylake", "phys_mem": phys_mem},
        "run": {"skip_init": True},
        "os": {"thp": {"khugepaged": False}},
    }


def base_config(phys_mem: int) -> dict:
    """The paper's Table II machine (`gem5-skylake`; checked against the
    table: TLBs, page-structure caches, L1D, the 2 MB L2 as the last
    level, 2 GHz) with `phys_mem` bytes. khugepaged off: the paper's
    mappings are set up before the measured region. The paper's creation
    rule (III-C) is for real fragmentation; Fig. 7 and 8 make every
    fragmented region a perforated page, so the rule is opened up here."""
    config = paper_machine(phys_mem)
    config["os"]["perforated"] = {"max_unmovable": 1.0, "max_filter_bits": 8}
    return config


def microbenchmark(footprint: int, accesses: int) -> dict:
    """Random loads, uniform over the footprint (gups without its stores)."""
    return {"name": "random", "kind": "gups", "footprint": footprint, "accesses": accesses, "write_fraction": 0.0}


def shape(config: dict, params: dict) -> None:
    """A point's system, and the scenario for the systems that see it.
    Unallocated holes are pages the program never touches (VII-B), so every
    system runs that same program: the scenario goes to all four (the
    kernels without `holes` or `perforated` in their chain only skip the
    pages); with allocated holes the others run the same configuration
    whatever the scenario."""
    system = params["system"]
    os_ = config.setdefault("os", {})
    os_.update(SYSTEMS[system])
    if system in FRAGMENTED or params["hole_kind"] == "unallocated":
        os_["holes"] = {
            "portion": float(params["portion"]),
            "degree": float(params["degree"]),
            "distribution": params["distribution"],
            "kind": params["hole_kind"],
        }


def sweep(exp_id: str, variant: str, systems: list[str]) -> Sweep:
    phys, fp, n, degrees, portions, dists, kinds = SCALES[variant]
    return Sweep(
        id=f"{exp_id}:{variant}",
        base=base_config(phys),
        grid={
            "distribution": labels(dists),
            "hole_kind": labels(kinds),
            "degree": labels(degrees),
            "portion": labels(portions),
            "system": labels(systems),
        },
        workloads=[microbenchmark(fp, n)],
        seeds=seeds(variant),
        shape=shape,
    )


#: Where the package's write-ups send the reader for the discussion.
DISCUSSED = "docs/systems/perforated-results.md discusses the differences."


def write_up(path: Path, head: str, paper: pd.DataFrame, table: pd.DataFrame, reading: list[str] = (),
             section: str = "Against the paper", closing: str | None = DISCUSSED) -> Path:
    """An experiment's ID.md: `head` (its title and set-up), then the
    paper's values beside pagelab's, the reading of them, the table, and
    where the results page discusses them."""
    middle = "\n".join([markdown_table(paper), *reading])
    tail = f"\n{closing}\n" if closing else ""
    return write_text(f"{head}\n\n## {section}\n\n{middle}\n\n{markdown_table(table)}\n{tail}", path)
