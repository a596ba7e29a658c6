"""Perforated Pages, III-C: real fragmentation. How much of a 2 GB
allocation a fragmented machine can back with 2 MiB pages and with
perforated pages under the paper's creation rule, and the random-access
microbenchmark's gain from the perforated share: the simulated machine
booted into each snapshot answers it.

Columns of `pp-realfrag`: `snapshot, placement, huge_share,
perforated_share, speedup_gain`, then `counted_huge_share`,
`counted_perforated_share` (the snapshot's free blocks counted,
`allocation`), `base_huge_share` and `reclaimed_share`.

- `snapshot`: a file of `snapshots/` (`pagelab frag capture`'s format):
  `this-vm` was captured on the machine pagelab was built on;
  `paper-first` and `paper-second` are constructed to match the paper's
  two runs (their headers and docs/systems/perforated-results.md say how).
  The machine is booted into it (`os.fragmentation.snapshot`) at the
  snapshot's own size (`full`) or a fraction of it (`SCALES`), the
  allocation the same fraction of 2 GiB.
- `placement`: where the snapshot's Unmovable and Reclaimable pageblocks
  sit, which `/proc/pagetypeinfo` does not say (`os.fragmentation.placement`):
  `clustered` (each type one run of pageblocks) or `dispersed` (scattered
  at random). Inside a pageblock the used frames are what its free blocks
  leave (a free order-8 block is half of it): the snapshot decides that.
- `huge_share`, `perforated_share`: `mem.mapped.2m` and
  `mem.mapped.perforated` of the `perforated` run over the allocation
  (random loads over it, every page touched first).
- `speedup_gain`: the paper's "performance improvement" of a system with
  those huge and perforated pages over the conventional one (THP, 4 KiB
  pages where no 2 MiB block is free): cycles of `base-2m-4k` over cycles
  of `perforated`, minus 1, seed by seed, each run on its own booted
  machine (the same snapshot and seed).
- `base_huge_share`: `base-2m-4k`'s `mem.mapped.2m` share;
  `reclaimed_share`: the snapshot's page cache that the `perforated` run's
  allocation reclaimed (`phys.reclaimed`), as a share of the allocation.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pandas as pd

from pagelab import _pagelab
from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, PALETTE, error_bars, legend_beside, mean_over_seeds, paired, pyplot, seeds,
                                        share_axis, with_spread, write_figure, write_outputs)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.common import labels, microbenchmark, paper_machine, write_up
from pagelab.sweep import Sweep

ID = "pp-realfrag"
SNAPSHOTS = Path(__file__).parent / "snapshots"
#: The paper's allocation: 2 GB, in 2 MiB regions.
REGIONS = 1024
PLACEMENTS = ["clustered", "dispersed"]
#: The paper's creation rule (III-C), `os.perforated`'s defaults.
MAX_UNMOVABLE = 0.25
MAX_FILTER_BITS = 4
TYPES = ["unmovable", "movable", "reclaimable"]

#: The paper's allocation, in bytes.
ALLOCATION = 2 * GIB
#: variant -> (scale, accesses, snapshots): the machine is the snapshot's
#: size times `scale` (the snapshot scaled onto it, `phys::snapshot`), the
#: allocation ALLOCATION times `scale`, so that the shares stay the
#: snapshot's (up to the rounding of scaled counts, at random per seed).
SCALES = {
    "full": (1.0, 4_000_000, ["this-vm", "paper-first", "paper-second"]),
    "quick": (1 / 4, 1_000_000, ["this-vm", "paper-first", "paper-second"]),
    "tiny": (1 / 32, 20_000, ["paper-first", "paper-second"]),
}
#: The experiment's placement -> `os.fragmentation.placement`.
PAGEBLOCK_PLACEMENT = {"clustered": "clustered", "dispersed": "random"}
#: System -> its `os` keys: THP with and without perforated pages.
SYSTEMS = {"base-2m-4k": {"policy": "thp"}, "perforated": {"policy": "perforated"}}


@dataclasses.dataclass(frozen=True)
class Allocation:
    """What a snapshot gives the 2 GB allocation under one placement."""

    huge_share: float
    perforated_share: float
    #: Used share of the pageblocks the rule accepts (their holes), or of
    #: every partly used pageblock when it accepts none.
    degree: float


def filter_bits_accepted(used: int, placement: str) -> float:
    """The share of pageblocks with `used` frames in use that set at most
    MAX_FILTER_BITS of the 8 filter bits: dispersed frames are evenly
    spaced (min(used, 8) bits); clustered ones are one run at a uniformly
    random place, as `os.holes.distribution = "clustered"` puts it."""
    if placement == "dispersed":
        return float(min(used, 8) <= MAX_FILTER_BITS)
    starts = range(0, 512 - used + 1)
    ok = sum(1 for s in starts if (s + used - 1) // 64 - s // 64 + 1 <= MAX_FILTER_BITS)
    return ok / len(starts)


def allocation(snap: dict, placement: str) -> Allocation:
    """The 2 GB allocation on a snapshot (`_pagelab.frag_snapshot`'s dict).

    Assumptions (pagetypeinfo counts free blocks per type, not per
    pageblock): every frame in use is non-movable (pagelab's snapshot
    pins it; the paper counts the page cache as non-movable); a free block
    of order 9 or more is wholly free pageblocks; each migratetype's free
    blocks below order 9 are spread evenly over its other pageblocks. The
    allocation takes wholly free pageblocks first (2 MiB pages), then the
    partly used ones the rule accepts (strictly under MAX_UNMOVABLE used,
    at most MAX_FILTER_BITS filter bits) as perforated pages."""
    whole, accepted, weighted, used_all, partial_all = 0, 0.0, 0.0, 0.0, 0
    for t, blocks in zip(TYPES, snap["pageblocks"]):
        counts = snap[f"free_{t}"]
        free_blocks = sum(n << (o - 9) for o, n in enumerate(counts) if o >= 9)
        small = sum(n << o for o, n in enumerate(counts) if o < 9)
        partial = max(blocks - free_blocks, 0)
        whole += free_blocks
        if partial == 0:
            continue
        used = max(512 - round(small / partial), 0)
        used_all += used * partial
        partial_all += partial
        if 0 < used and used / 512 < MAX_UNMOVABLE:
            n = partial * filter_bits_accepted(used, placement)
            accepted += n
            weighted += n * used
    huge = min(whole, REGIONS)
    perforated = min(accepted, REGIONS - huge)
    if accepted:
        degree = weighted / accepted / 512
    else:
        degree = used_all / partial_all / 512 if partial_all else MAX_UNMOVABLE
    return Allocation(huge / REGIONS, perforated / REGIONS, degree)


def snapshot_path(name: str) -> Path:
    return SNAPSHOTS / f"{name}.txt"


def load(name: str) -> dict:
    return _pagelab.frag_snapshot(str(snapshot_path(name)))


@functools.lru_cache(maxsize=None)
def allocation_of(name: str, placement: str) -> Allocation:
    """`allocation` of a shipped snapshot (every point of a sweep asks)."""
    return allocation(load(name), placement)


@functools.lru_cache(maxsize=None)
def machine_bytes(name: str, scale: float) -> int:
    """The booted machine's memory: the snapshot's times `scale`, in whole
    pageblocks (2 MiB)."""
    return round(load(name)["frames"] * scale / 512) * 2 * MIB


def shape(config: dict, params: dict, scale: float) -> None:
    """A point: the machine booted into its snapshot, at its scale, with
    its pageblock placement, and its system."""
    config["machine"]["phys_mem"] = machine_bytes(params["snapshot"], scale)
    os_ = config.setdefault("os", {})
    os_.update(SYSTEMS[params["system"]])
    os_["fragmentation"] = {
        "snapshot": str(snapshot_path(params["snapshot"])),
        "placement": PAGEBLOCK_PLACEMENT[params["placement"]],
    }


def sweep(variant: str) -> Sweep:
    scale, n, names = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base=paper_machine(machine_bytes(names[0], scale)),
        grid={"snapshot": labels(names), "placement": labels(PLACEMENTS), "system": labels(list(SYSTEMS))},
        workloads=[microbenchmark(round(ALLOCATION * scale), n)],
        seeds=seeds(variant),
        shape=functools.partial(shape, scale=scale),
    )


KEYS = ["snapshot", "placement"]


#: The table's columns: the issue's, then the counted shares beside them.
COLUMNS = KEYS + ["huge_share", "perforated_share", "speedup_gain", "counted_huge_share",
                  "counted_perforated_share", "base_huge_share", "reclaimed_share"]


def table(df: pd.DataFrame) -> pd.DataFrame:
    by = KEYS + ["seed"]
    p = df[df.system == "perforated"]
    base = df.system == "base-2m-4k"
    # The allocation: all the process maps (a perforated page's sub-pages
    # are 4 KiB leaves of its table, so they count under `4k` too).
    size = p["mem.mapped.4k"] + p["mem.mapped.2m"]
    d = pd.DataFrame({k: p[k] for k in by})
    d["huge_share"] = p["mem.mapped.2m"] / size
    d["perforated_share"] = p["mem.mapped.perforated"] / size
    d["speedup_gain"] = paired(df, "cycles", by, base)[p.index] / p.cycles - 1
    # The counting's shares (used frames clustered inside a pageblock,
    # which is what the snapshots' large free blocks leave).
    counted = [allocation_of(s, "clustered") for s in d.snapshot]
    d["counted_huge_share"] = [a.huge_share for a in counted]
    d["counted_perforated_share"] = [a.perforated_share for a in counted]
    d["base_huge_share"] = paired(df, "mem.mapped.2m", by, base)[p.index] / size
    d["reclaimed_share"] = p["phys.reclaimed"] * 4096 / size
    t = mean_over_seeds(d, KEYS)
    order = {s: i for i, s in enumerate(SCALES["full"][2])}
    t = t.assign(_s=t.snapshot.map(order)).sort_values(["_s", "placement"]).drop(columns="_s")
    return with_spread(t, COLUMNS).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    """pagelab's value of each quantity of paper/pp-realfrag.csv."""
    got = {}
    for snap, run in [("paper-first", "first run"), ("paper-second", "second run")]:
        r = t[(t.snapshot == snap) & (t.placement == "clustered")]
        for q in ["huge_share", "perforated_share", "speedup_gain"]:
            got[f"{run} ({snap}, clustered): {q}"] = float(r[q].iloc[0]) if len(r) else "not in this variant"
    return got


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    xs = [f"{s}\n{p}" for s, p in zip(t.snapshot, t.placement)]
    a.bar(xs, t.huge_share, label="2 MiB pages", color=PALETTE["blue"])
    a.bar(xs, t.perforated_share, bottom=t.huge_share, label="perforated pages", color=PALETTE["vermillion"])
    share_axis(a, "share of the 2 GB allocation")
    # A gain may be negative: its interval is not cut at 0.
    b.bar(xs, t.speedup_gain, yerr=error_bars(t, "speedup_gain", lo=None), color=PALETTE["vermillion"])
    b.axhline(0, color="black", lw=0.6)
    b.set_ylabel("gain of perforated over base-2m-4k\n(cycles ratio - 1)")
    for ax in (a, b):
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("snapshot, placement")
    legend_beside(fig)
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    scale, n = SCALES[variant][:2]
    head = f"""# {ID}: a 2 GB allocation on fragmented machines

Variant `{variant}`. The paper's machine booted into each snapshot at
{scale:g} of its size; random loads over {round(ALLOCATION * scale) >> 20} MiB
({n:,} measured accesses, every page touched first). `huge_share`,
`perforated_share`: `mem.mapped.2m` and `mem.mapped.perforated` of the
`perforated` run over the allocation; `counted_*`: the snapshot's free
blocks counted (`realfrag.allocation`). `speedup_gain`: cycles of
`base-2m-4k` over `perforated`, minus 1, paired by seed."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages III-C: huge and perforated pages on real fragmentation", sweep, analyze, paper=PAPER)
