"""coplace-standin: how much the results hang on the stand-in slice hash.

The paper's machine has 20 LLC slices; Intel's slice hash is public only
for 2, 4 and 8 (docs/configuration.md, "LLC slices and the stand-in
hash"), so `xeon-gold-6138` uses a stand-in whose made-up parts
`machine.cache.llc.slice_seed` varies. This experiment reruns Table II's
setting (one VM on the aged host, the guest on Linux's default
placement, common.vm_base) under three stand-ins (seeds 0, the preset's,
1 and 2) for the paper's three host placements, on the two throughput
analogues (blackscholes and water_spatial: a full run of either takes
about 8 s, of Xapian 92 s and of Img-dnn 58 s on this machine, so the
latency analogues are left out).

The paper's conflict level counts pages per color of one slice (the set
bits, 12-16), which no slice hash moves: it should not change with the
stand-in, and a change would be a bug. What can change is what hangs on
which slice a line lands in: the LLC's misses and the runtime, and
COPLACE's own host colors, which take the slice-select bits (17-21) the
stand-in reads.

ID.csv has one row per (workload, host_policy, slice_seed): these columns
(means over seeds), then `seeds` and each quantity's `<col>_std` and
`<col>_ci95`:

| column | meaning |
|---|---|
| `workload` | `blackscholes` or `water_spatial`, run as its analogue (common.WORKLOADS) |
| `host_policy` | `virt.host.policy`: `base` (bin hopping), `vmm-coloring` (page coloring), `coplace` |
| `slice_seed` | `machine.cache.llc.slice_seed` |
| `conflict_level` | `core0.llc_conflict_level` |
| `llc_miss_ratio` | `cache.llc.misses / cache.llc.accesses`, in percent |
| `cycles` | `runtime.cycles` |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (markdown_table, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_csv, write_figure, write_text)
from pagelab.experiments.coplace.common import miss_ratio, vm_base, workload
from pagelab.sweep import Sweep

ID = "coplace-standin"
COLUMNS = ["workload", "host_policy", "slice_seed", "conflict_level", "llc_miss_ratio", "cycles"]
POLICIES = ["base", "vmm-coloring", "coplace"]
SLICE_SEEDS = [0, 1, 2]
WORKLOADS = ["blackscholes", "water_spatial"]
#: The quantities whose spread over the stand-ins the write-up shows.
MEASURES = ["conflict_level", "llc_miss_ratio", "cycles"]


def sweep(variant: str) -> Sweep:
    return Sweep(
        id=f"{ID}:{variant}",
        base=vm_base(variant),
        grid={"host_policy": [{"name": p, "virt.host.policy": p} for p in POLICIES],
              "slice_seed": [{"name": s, "machine.cache.llc.slice_seed": s} for s in SLICE_SEEDS]},
        workloads=[workload(w, variant) for w in WORKLOADS],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({
        "workload": df.workload, "host_policy": df.host_policy, "slice_seed": df.slice_seed.astype(int),
        "conflict_level": df["core0.llc_conflict_level"].astype(float),
        "llc_miss_ratio": miss_ratio(df, "llc"), "cycles": df["runtime.cycles"].astype(float), "seed": df.seed,
    })
    t = mean_over_seeds(d, ["workload", "host_policy", "slice_seed"])
    return with_spread(t, COLUMNS).reset_index(drop=True)


def spread(t: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, host placement): each measure's range over the
    stand-ins, in percent of its mean over them (0 when the mean is 0)."""
    rows = []
    for (w, p), g in t.groupby(["workload", "host_policy"], sort=False):
        row = {"workload": w, "host_policy": p}
        for m in MEASURES:
            mean = g[m].mean()
            row[f"{m}_range_pct"] = 0.0 if mean == 0 else 100.0 * (g[m].max() - g[m].min()) / mean
        rows.append(row)
    return pd.DataFrame(rows)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    workloads = list(dict.fromkeys(t.workload))
    width = 0.8 / (len(POLICIES) * len(SLICE_SEEDS))
    for ax, col, label in zip(axes, ["conflict_level", "llc_miss_ratio"], ["conflict level", "LLC miss ratio (%)"]):
        k = 0
        for i, p in enumerate(POLICIES):
            for s in SLICE_SEEDS:
                rows = t[(t.host_policy == p) & (t.slice_seed == s)].set_index("workload").reindex(workloads)
                xs = [j - 0.4 + (k + 0.5) * width for j in range(len(workloads))]
                ax.bar(xs, rows[col], width, color=system_color(p, i), alpha=1.0 - 0.25 * s,
                       label=f"{p}, stand-in {s}" if col == "conflict_level" else None)
                k += 1
        ax.set_xticks(range(len(workloads)), workloads)
        ax.set_ylabel(label)
    axes[0].legend(fontsize=6, ncol=3)
    fig.suptitle("coplace-standin: Table II's setting under three stand-in slice hashes")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    s = spread(t)
    files = [write_csv(t, out / f"{ID}.csv"), write_csv(s, out / f"{ID}.spread.csv"), plot(t, out / f"{ID}.png")]
    text = f"""# coplace-standin: the results under three stand-in slice hashes

Variant `{variant}`. Table II's setting (one VM on the aged host, guest
default placement) with `machine.cache.llc.slice_seed` 0 (the preset's),
1 and 2 (the module's docstring says what may and may not move).

## Results

{markdown_table(t)}
## Range over the stand-ins, percent of the mean

{markdown_table(s)}
No paper: the paper ran one machine. Figure: `{ID}.png`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE: Table II's setting under three stand-in slice hashes", sweep, analyze,
        paper="COPLACE (Table II; the stand-in is pagelab's)")
