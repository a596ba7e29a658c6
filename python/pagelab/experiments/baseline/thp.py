"""baseline-thp: base pages, THP, hugetlbfs 2 MiB and hugetlbfs 1 GiB on
gups, graph bfs, kv and stream, on a fresh machine.

ID.csv has one row per (workload, policy), the mean over seeds, then a
`<col>_std` and a `<col>_ci95` for each quantity below (`common.mean_over_seeds`;
the `_norm` ratios are taken per seed, then averaged):

| column | meaning |
|---|---|
| `workload`, `policy` | the point (`policy`: base, thp, hugetlb-2m, hugetlb-1g) |
| `seeds` | runs averaged |
| `dtlb_misses` | `dtlb.l2.misses`: L2 TLB misses, each a page walk |
| `walk_refs` | `walk.mem_refs`: page-table entries read by the walker |
| `cycles`, `cycles_translation` | `cycles`, `cycles.translation` |
| `dtlb_misses_norm`, `walk_refs_norm`, `cycles_norm` | the same divided by the workload's base-page value |
| `share_2m`, `share_1g` | bytes mapped by 2 MiB / 1 GiB leaves over all bytes mapped |
| `seconds` | mean wall-clock seconds of a run |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, legend_beside, markdown_table, mean_over_seeds, paired, pyplot,
                                        seeds, system_color, with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "baseline-thp"

POLICIES = [
    {"name": "base", "os.policy": "base"},
    {"name": "thp", "os.policy": "thp"},
    {"name": "hugetlb-2m", "os.policy": "hugetlb", "os.hugetlb.size": "2MiB"},
    # 1 GiB blocks need a buddy allocator of order 18; the pool is reserved
    # at mmap time (pool = 0), best effort.
    {"name": "hugetlb-1g", "os.policy": "hugetlb", "os.hugetlb.size": "1GiB", "machine.max_order": 18},
]
ORDER = [p["name"] for p in POLICIES]

#: variant -> (phys_mem, footprint, accesses, bfs scale)
SCALES = {
    "full": ("32GiB", "16GiB", 20_000_000, 23),
    "quick": ("8GiB", "4GiB", 2_000_000, 20),
    "tiny": ("1GiB", "64MiB", 20_000, 12),
}


def sweep(variant: str) -> Sweep:
    phys, fp, n, scale = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": {"preset": "skylake", "phys_mem": phys},
            # Statistics cover the measured accesses, not the first touches.
            "run": {"skip_init": True},
        },
        grid={"policy": POLICIES},
        workloads=[
            {"name": "gups", "kind": "gups", "footprint": fp, "accesses": n},
            {"name": "bfs", "kind": "graph", "kernel": "bfs", "scale": scale, "accesses": n},
            {"name": "kv", "kind": "kv", "footprint": fp, "accesses": n},
            {"name": "stream", "kind": "stream", "footprint": fp, "accesses": n},
        ],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    mapped = df["mem.mapped.4k"] + df["mem.mapped.2m"] + df["mem.mapped.1g"]
    d = pd.DataFrame(
        {
            "workload": df.workload,
            "policy": df.policy,
            "dtlb_misses": df["dtlb.l2.misses"],
            "walk_refs": df["walk.mem_refs"],
            "cycles": df["cycles"],
            "cycles_translation": df["cycles.translation"],
            "share_2m": df["mem.mapped.2m"] / mapped.clip(lower=1),
            "share_1g": df["mem.mapped.1g"] / mapped.clip(lower=1),
            "seconds": df["seconds"],
        }
    )
    d.insert(2, "seed", df.seed)
    for col in ("dtlb_misses", "walk_refs", "cycles"):
        ref = paired(d, col, ["workload", "seed"], d.policy == "base").astype(float)
        d[f"{col}_norm"] = d[col] / ref.where(ref > 0)
    t = mean_over_seeds(d, ["workload", "policy"])
    wl = {w: i for i, w in enumerate(d.workload.unique())}
    t = t.assign(_w=t.workload.map(wl), _p=t.policy.map({p: i for i, p in enumerate(ORDER)}))
    t = t.sort_values(["_w", "_p"])
    cols = ["workload", "policy", "seeds", "dtlb_misses", "walk_refs", "cycles", "cycles_translation",
            "dtlb_misses_norm", "walk_refs_norm", "cycles_norm", "share_2m", "share_1g", "seconds"]
    return with_spread(t, cols).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    metrics = [("dtlb_misses_norm", "L2 TLB misses"), ("walk_refs_norm", "walk references"), ("cycles_norm", "cycles")]
    workloads = list(dict.fromkeys(t.workload))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    width = 0.8 / len(ORDER)
    for ax, (col, label) in zip(axes, metrics):
        for i, pol in enumerate(ORDER):
            sub = t[t.policy == pol].set_index("workload").reindex(workloads)
            xs = [j + (i - (len(ORDER) - 1) / 2) * width for j in range(len(workloads))]
            ax.bar(xs, sub[col].fillna(0), width, yerr=error_bars(sub, col), label=pol, color=system_color(pol, i))
        ax.axhline(1.0, color="black", lw=0.6, ls=":")
        ax.set_xticks(range(len(workloads)), workloads)
        ax.set_title(label)
    axes[0].set_ylabel("ratio to base (4 KiB pages)")
    legend_beside(fig, title="policy")
    fig.suptitle("baseline-thp: page size vs translation cost (fresh machine)")
    return write_figure(fig, path, seeds=t.seeds)


def verdicts(t: pd.DataFrame) -> list[str]:
    out = []
    for w, sub in t.groupby("workload", sort=False):
        s = sub.set_index("policy")
        parts = []
        for pol in ("thp", "hugetlb-2m", "hugetlb-1g"):
            if pol not in s.index:
                continue
            r = s.loc[pol]
            huge = r.share_2m + r.share_1g
            parts.append(
                f"{pol}: {huge:.0%} of memory in huge pages, TLB misses x{r.dtlb_misses_norm:.3f}, "
                f"walk refs x{r.walk_refs_norm:.3f}, cycles x{r.cycles_norm:.3f}"
            )
        b = s.loc["base"] if "base" in s.index else None
        tlb_share = (b.cycles_translation / b.cycles) if b is not None and b.cycles else float("nan")
        holds = all(
            (s.loc[p].cycles_norm <= 1.0005) and (s.loc[p].dtlb_misses_norm <= 1.0005 or pd.isna(s.loc[p].dtlb_misses_norm))
            for p in ("thp", "hugetlb-2m", "hugetlb-1g") if p in s.index
        )
        out.append(
            f"- **{w}** (translation is {tlb_share:.1%} of base-page cycles): " + "; ".join(parts)
            + (". Holds: no huge-page policy is worse than base." if holds else ". Does **not** hold: a huge-page policy is worse than base.")
        )
    return out


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, out / f"{ID}.png")]
    phys, fp, n, scale = SCALES[variant]
    one_g = t[t.policy == "hugetlb-1g"]
    partial = [(w, sh) for w, sh in zip(one_g.workload, one_g.share_1g) if sh < 0.99]
    show = t.drop(columns=["cycles_translation", "seconds"])
    text = f"""# baseline-thp: base pages, THP, hugetlbfs 2 MiB and 1 GiB

Variant `{variant}`. A fresh Skylake machine (preset `skylake`, L2 TLB 1536
entries shared by 4 KiB and 2 MiB pages, 16 entries for 1 GiB) with
{phys} of memory; gups, kv and stream map {fp}, graph bfs a Kronecker graph
of scale {scale} (degree 16); {n:,} measured accesses each
(`run.skip_init = true`, so the first-touch pass and its faults are not
counted); seeds {sorted(set(df.seed))}. Policies: `base` (4 KiB), `thp` (2 MiB at fault,
khugepaged on), `hugetlb-2m` and `hugetlb-1g` (hugetlbfs, pool reserved at
mmap time; 1 GiB needs `machine.max_order = 18`). No paper: this experiment
exercises the framework.

## Results (means over seeds ± 95% confidence half-widths where there are several; `_norm` = divided by base, seed by seed)

{markdown_table(show)}
Figure: `{ID}.png`. Columns are described in `pagelab/experiments/baseline/thp.py`.

## Expected trend and whether it holds

From first principles: a 2 MiB page replaces 512 TLB entries and removes
the last level of the walk, so L2 TLB misses and walk references should fall
sharply with THP and hugetlb 2 MiB (which should agree with each other on a
fresh machine, where both get every 2 MiB page they ask for), and fall to
almost nothing with 1 GiB pages when the footprint is backed by them. Cycles
fall by at most the translation share of base-page cycles, so random-access
workloads (gups, kv) should gain most and streaming ones (stream, bfs over a
small graph) little.

What the runs show:

{chr(10).join(verdicts(t))}

"""
    if partial:
        text += (
            "hugetlb 1 GiB backed only part of the memory of "
            + ", ".join(f"{w} ({sh:.0%})" for w, sh in partial)
            + ". With `os.hugetlb.vmas` empty, hugetlbfs backs only VMAs at least one huge page "
            "long, and only their aligned 1 GiB ranges; what these workloads map outside them (smaller "
            "VMAs, tails, a graph smaller than 1 GiB) stays on 4 KiB pages, and there their numbers "
            "are those of base.\n"
        )
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "base vs THP vs hugetlbfs 2 MiB / 1 GiB on gups, bfs, kv, stream", sweep, analyze)
