"""Perforated Pages, III-B and Table I: a Redis-like store of 16 KiB
objects under random GETs, on 4 KiB, 2 MiB and perforated pages, with the
paper's 1.5K-entry 12-way L2 TLB (preset `gem5-skylake`).

Columns of `pp-redis`: `system, dtlb_l2_mpki, mem_bytes`. `dtlb_l2_mpki`
= L2 TLB misses per thousand instructions over the measured GETs;
`mem_bytes` = the physical memory the store's mappings hold at the end
(`mem.mapped.4k + .2m + .1g`: with 2 MiB pages, whole huge pages; a
perforated page's sub-pages are 4 KiB leaves of its hole table, so they
count in `.4k`, and its unallocated holes do not).

The heap as jemalloc 5 lays out Redis's values (`workload.cache_oblivious`,
`kv.rs`): a 16 KiB value is an sds of 16,390 bytes (a 5-byte `sdshdr16`,
the bytes, a NUL), size class 20 KiB, in an extent of 24 KiB (jemalloc's
`opt.cache_oblivious` adds a page and starts the value at a random cache
line of the first one): one page in six is never touched. 4 KiB pages
leave it unbacked; THP backs it (the bloat: 24 / 20 = 1.2, the paper's
92.9 / 77.7 GB = 1.196); the perforated system makes each whole 2 MiB
region of the heap a perforated page whose holes are those pages,
unallocated, their frames free (`ProcessSpec::untouched`). The pad pages
set every filter bit, so the creation rule is opened as Fig. 7's is
(`common.base_config`).
Means over seeds, then `seeds` and each quantity's `<col>_std` and
`<col>_ci95` (`common.mean_over_seeds`).

Scaling: the paper's 4 million keys (64 GiB of values) and 1 million GETs
become `SCALES`' objects and GETs; the values alone stay several times the
L2 TLB's reach with 2 MiB pages (1536 x 2 MiB = 3 GiB) in `quick` (4 GiB)
and `full` (16 GiB).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, error_bars, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_figure, write_outputs)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.common import base_config, labels, write_up
from pagelab.sweep import Sweep

ID = "pp-redis"
SYSTEMS = {"4k": {"policy": "base"}, "2m": {"policy": "thp"}, "perforated": {"policy": "perforated"}}
OBJECT = 16 * 1024
#: The allocation of one value: Redis's sds of OBJECT bytes (`sdshdr16`'s
#: 5 bytes, the bytes, a NUL).
SDS_BYTES = 5 + OBJECT + 1
#: Accesses of one GET of a 16 KiB value: the bucket, the chain's entry
#: and key, the value header, and one load per 64-byte line of the reply
#: copy (about 260; `workload.accesses` counts accesses, not GETs).
ACCESSES_PER_GET = 260

#: variant -> (phys_mem, objects, GETs)
SCALES = {
    "full": (32 * GIB, 1 << 20, 400_000),
    "quick": (8 * GIB, 1 << 18, 100_000),
    "tiny": (512 * MIB, 4096, 200),
}


def store(objects: int, gets: int) -> dict:
    """pagelab's kv (docs: workload kv) as the paper's Redis: 16 KiB
    values, uniformly random keys, GETs only, every key loaded first (the
    init pass writes every page, as the load phase does)."""
    return {"name": "redis", "kind": "kv", "objects": objects, "object_size": SDS_BYTES, "cache_oblivious": True,
            "distribution": "uniform", "get_ratio": 1.0, "accesses": gets * ACCESSES_PER_GET}


def shape(config: dict, params: dict) -> None:
    config.setdefault("os", {}).update(SYSTEMS[params["system"]])


def sweep(variant: str) -> Sweep:
    phys, objects, gets = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base=base_config(phys),
        grid={"system": labels(list(SYSTEMS))},
        workloads=[store(objects, gets)],
        seeds=seeds(variant),
        shape=shape,
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({"system": df.system, "seed": df.seed, "dtlb_l2_mpki": df["dtlb.l2.mpki"],
                      "mem_bytes": df["mem.mapped.4k"] + df["mem.mapped.2m"] + df["mem.mapped.1g"]})
    t = mean_over_seeds(d, ["system"])
    order = {s: i for i, s in enumerate(SYSTEMS)}
    t = t.assign(_s=t.system.map(order)).sort_values("_s")
    return with_spread(t, ["system", "dtlb_l2_mpki", "mem_bytes"]).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    s = t.set_index("system")
    return {
        "L2 TLB MPKI, 4 KiB pages": s.dtlb_l2_mpki["4k"],
        "L2 TLB MPKI, 2 MiB pages": s.dtlb_l2_mpki["2m"],
        "L2 TLB MPKI, perforated pages": s.dtlb_l2_mpki["perforated"],
        "memory with 2 MiB pages / with 4 KiB pages": s.mem_bytes["2m"] / s.mem_bytes["4k"],
    }


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    colors = [system_color(s, i) for i, s in enumerate(t.system)]
    axes[0].bar(t.system, t.dtlb_l2_mpki, yerr=error_bars(t, "dtlb_l2_mpki"), color=colors)
    axes[0].set_ylabel("L2 TLB misses per\nthousand instructions")
    axes[1].bar(t.system, t.mem_bytes / 2**30, yerr=error_bars(t, "mem_bytes", scale=2**-30), color=colors)
    axes[1].set_ylabel("memory mapped (GiB)")
    for ax in axes:
        ax.set_xlabel("system")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    phys, objects, gets = SCALES[variant]
    head = f"""# {ID}: a Redis-like store of 16 KiB objects under random GETs

Variant `{variant}`: the paper's machine (preset `gem5-skylake`: L2 TLB of
1536 entries, 12 ways), {phys >> 20} MiB of memory, {objects:,} objects of 16 KiB
({objects * OBJECT >> 20} MiB of values; the paper: 4 million, 64 GiB), about
{gets:,} uniformly random GETs (the paper: 1 million) measured after the load."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages III-B: Redis, 16 KiB objects", sweep, analyze, paper=PAPER)
