"""Perforated Pages, III-C: real fragmentation. How much of a 2 GB
allocation a fragmented machine can back with 2 MiB pages and with
perforated pages under the paper's creation rule, and the random-access
microbenchmark's gain from the perforated share.

Columns of `pp-realfrag`: `snapshot, placement, huge_share,
perforated_share, speedup_gain`.

- `snapshot`: a file of `snapshots/` (`pagelab frag capture`'s format):
  `this-vm` was captured on the machine pagelab was built on;
  `paper-first` and `paper-second` are constructed to match the paper's
  two runs (their headers and docs/systems/perforated-results.md say how).
- `placement`: where a partly used pageblock's used frames sit, which
  `/proc/pagetypeinfo` does not say: `clustered` (one run) or `dispersed`
  (evenly spaced). It decides the filter bits, so the rule's second half.
- `huge_share`, `perforated_share`: shares of the 2 GB (1024 regions) that
  wholly free pageblocks back, then that pageblocks the rule accepts back
  (`allocation`).
- `speedup_gain`: the paper's "performance improvement" of a system with
  those huge and perforated pages over the conventional one with the same
  huge pages and 4 KiB pages elsewhere: cycles of `base-2m-4k` over cycles
  of `perforated`, minus 1, seed by seed, on the Fig. 7 microbenchmark with
  the scenario the shares give (`scenario`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pandas as pd

from pagelab import _pagelab
from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, error_bars, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_figure, write_outputs)
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

#: variant -> (phys_mem, footprint, accesses, snapshots)
SCALES = {
    "full": (8 * GIB, 2 * GIB, 4_000_000, ["this-vm", "paper-first", "paper-second"]),
    "quick": (4 * GIB, 2 * GIB, 1_000_000, ["this-vm", "paper-first", "paper-second"]),
    "tiny": (512 * MIB, 64 * MIB, 20_000, ["paper-first", "paper-second"]),
}


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


def scenario(a: Allocation) -> dict | None:
    """`os.holes` giving the microbenchmark's regions the allocation's mix:
    the regions not under 2 MiB pages are fragmented (`portion`), those
    the rule refuses dispersed (`spread`: every filter bit set), the rest
    with the placement's holes at the accepted pageblocks' degree (at
    least 8 holes, so that a spread region does set every bit). `None`
    when every region gets a 2 MiB page."""
    portion = 1.0 - a.huge_share
    if portion <= 0:
        return None
    degree = min(max(a.degree, 8 / 512), 500 / 512)
    return {"portion": portion, "degree": degree, "spread": 1.0 - a.perforated_share / portion}


def shape(config: dict, params: dict) -> None:
    a = allocation_of(params["snapshot"], params["placement"])
    os_ = config.setdefault("os", {})
    os_.update({"policy": "perforated"} if params["system"] == "perforated" else
               {"policy": "thp", "systems": ["holes", "thp", "base"]})
    holes = scenario(a)
    if holes:
        os_["holes"] = {**holes, "distribution": params["placement"], "kind": "allocated"}


def sweep(variant: str) -> Sweep:
    phys, fp, n, names = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base=paper_machine(phys),
        grid={"snapshot": labels(names), "placement": labels(PLACEMENTS), "system": labels(["base-2m-4k", "perforated"])},
        workloads=[microbenchmark(fp, n)],
        seeds=seeds(variant),
        shape=shape,
    )


KEYS = ["snapshot", "placement"]


def table(df: pd.DataFrame) -> pd.DataFrame:
    p = df[df.system == "perforated"]
    d = pd.DataFrame({k: p[k] for k in KEYS + ["seed"]})
    # The shares depend on the snapshot only (the same for every seed).
    shares = [allocation_of(s, pl) for s, pl in zip(d.snapshot, d.placement)]
    d["huge_share"] = [a.huge_share for a in shares]
    d["perforated_share"] = [a.perforated_share for a in shares]
    d["speedup_gain"] = paired(df, "cycles", KEYS + ["seed"], df.system == "base-2m-4k")[p.index] / p.cycles - 1
    t = mean_over_seeds(d, KEYS)
    order = {s: i for i, s in enumerate(SCALES["full"][3])}
    t = t.assign(_s=t.snapshot.map(order)).sort_values(["_s", "placement"]).drop(columns="_s")
    return with_spread(t, KEYS + ["huge_share", "perforated_share", "speedup_gain"]).reset_index(drop=True)


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
    a.bar(xs, t.huge_share, label="2 MiB pages")
    a.bar(xs, t.perforated_share, bottom=t.huge_share, label="perforated pages")
    a.set_ylabel("share of the 2 GB allocation")
    a.legend(fontsize=7)
    b.bar(xs, t.speedup_gain, yerr=error_bars(t, "speedup_gain"), capsize=2)
    b.set_ylabel("gain of perforated over base-2m-4k")
    for ax in (a, b):
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return write_figure(fig, path)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    phys, fp, n = SCALES[variant][:3]
    head = f"""# {ID}: a 2 GB allocation on fragmented machines

Variant `{variant}`. Shares: of 2 GB (1024 regions), from the snapshot's
free blocks under the stated assumptions (`realfrag.allocation`).
`speedup_gain`: cycles of `base-2m-4k` over `perforated`, minus 1, on
random loads over {fp >> 20} MiB ({n:,} measured accesses), the paper's
machine with {phys >> 20} MiB, the regions fragmented as the shares say."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages III-C: huge and perforated pages on real fragmentation", sweep, analyze, paper=PAPER)
