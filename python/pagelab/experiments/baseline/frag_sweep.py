"""frag-sweep: THP's 2 MiB coverage and cycles as fragmentation rises.

Before each run the machine is fragmented to F_i = `os.fragmentation.target`
(unmovable pages pinned in free pageblocks; `dispersed` spreads the holes of
a pageblock, `clustered` puts them in one run), then gups runs under THP.

ID.csv has one row per (pattern, frag_index), the mean over seeds, then a
`<col>_std` and a `<col>_ci95` for each quantity below (`common.mean_over_seeds`;
`cycles_norm` is taken per seed, then averaged):

| column | meaning |
|---|---|
| `pattern` | `os.fragmentation.pattern` |
| `frag_index` | `os.fragmentation.target`: the F_i asked for |
| `seeds` | runs averaged |
| `fi_measured` | `phys.fi` at the end of the run (includes the workload's own memory) |
| `huge_coverage` | `mem.mapped.2m / (mem.mapped.2m + mem.mapped.4k)` |
| `dtlb_misses`, `walk_refs` | `dtlb.l2.misses`, `walk.mem_refs` |
| `cycles`, `cycles_norm` | `cycles`, and divided by the same pattern's value at F_i = 0 |
| `critical_fi` | 1 - footprint / phys_mem: beyond it free 2 MiB blocks cannot hold the footprint |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (PALETTE, error_bars, legend_beside, markdown_table, mean_over_seeds, paired,
                                        pyplot, seeds, share_axis, with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "frag-sweep"
PATTERNS = ["dispersed", "clustered"]
HOLES = 16

#: variant -> (phys_mem MiB, footprint MiB, accesses, targets)
SCALES = {
    "full": (16384, 4096, 10_000_000, [round(0.05 * i, 2) for i in range(20)] + [0.95]),
    "quick": (4096, 1024, 1_000_000, [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]),
    "tiny": (1024, 256, 20_000, [0.0, 0.5, 0.95]),
}


def sweep(variant: str) -> Sweep:
    phys, fp, n, targets = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": {"preset": "skylake", "phys_mem": f"{phys}MiB"},
            # 16 pinned pages per fragmented pageblock: with one, the two
            # patterns would place it alike and give identical runs.
            "os": {"policy": "thp", "fragmentation": {"holes": HOLES}},
            "run": {"skip_init": True},
        },
        grid={"os.fragmentation.pattern": PATTERNS, "os.fragmentation.target": targets},
        workloads=[{"name": "gups", "kind": "gups", "footprint": f"{fp}MiB", "accesses": n}],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame, critical: float) -> pd.DataFrame:
    mapped = (df["mem.mapped.2m"] + df["mem.mapped.4k"]).clip(lower=1)
    d = pd.DataFrame(
        {
            "pattern": df["os.fragmentation.pattern"],
            "frag_index": df["os.fragmentation.target"].astype(float),
            "fi_measured": df["phys.fi"],
            "huge_coverage": df["mem.mapped.2m"] / mapped,
            "dtlb_misses": df["dtlb.l2.misses"],
            "walk_refs": df["walk.mem_refs"],
            "cycles": df["cycles"],
            "seed": df.seed,
        }
    )
    d["cycles_norm"] = d.cycles / paired(d, "cycles", ["pattern", "seed"], d.frag_index == 0.0)
    t = mean_over_seeds(d, ["pattern", "frag_index"])
    t["critical_fi"] = critical
    t = t.assign(_p=t.pattern.map({p: i for i, p in enumerate(PATTERNS)})).sort_values(["_p", "frag_index"])
    cols = ["pattern", "frag_index", "seeds", "fi_measured", "huge_coverage", "dtlb_misses", "walk_refs", "cycles",
            "cycles_norm", "critical_fi"]
    return with_spread(t, cols).reset_index(drop=True)


def plot(t: pd.DataFrame, critical: float, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    styles = {"dispersed": (PALETTE["blue"], "o-"), "clustered": (PALETTE["orange"], "s--")}
    for pat, sub in t.groupby("pattern", sort=False):
        c, st = styles.get(pat, (PALETTE["black"], "x-"))
        for ax, col, hi in zip(axes, ("huge_coverage", "cycles_norm"), (1, None)):
            ax.errorbar(sub.frag_index, sub[col], yerr=error_bars(sub, col, hi=hi), fmt=st, color=c, label=f"{pat} placement")
    for ax in axes:
        ax.axvline(critical, color=PALETTE["vermillion"], ls=":", lw=1.2, label=f"1 - footprint/memory = {critical:.2f}")
        ax.set_xlabel("F_i before the run (os.fragmentation.target):\nshare of memory free 2 MiB blocks cannot back")
        ax.set_xlim(-0.02, 1.0)
    share_axis(axes[0], "share of the footprint on 2 MiB pages (THP)")
    axes[1].set_ylabel("cycles / cycles at F_i = 0")
    legend_beside(fig)
    fig.suptitle("frag-sweep: gups under THP on a fragmented machine")
    return write_figure(fig, path, seeds=t.seeds)


def findings(t: pd.DataFrame, critical: float) -> list[str]:
    out = []
    for pat, sub in t.groupby("pattern", sort=False):
        below = sub[sub.frag_index < critical - 1e-9]
        above = sub[sub.frag_index > critical + 1e-9]
        full_below = bool(len(below)) and bool((below.huge_coverage > 0.99).all())
        lost = sub[sub.huge_coverage < 0.99]
        first_loss = lost.frag_index.min() if len(lost) else None
        top = sub.iloc[-1]
        line = (
            f"- **{pat}**: coverage {sub.huge_coverage.iloc[0]:.0%} at F_i = {sub.frag_index.iloc[0]:.2f}, "
            f"{top.huge_coverage:.0%} at F_i = {top.frag_index:.2f} (cycles x{top.cycles_norm:.3f}); "
        )
        if first_loss is None:
            line += "coverage never dropped below 99%."
        else:
            line += f"coverage first drops below 99% at F_i = {first_loss:.2f}."
        declining = bool(len(above)) and above.huge_coverage.is_monotonic_decreasing
        holds = full_below and first_loss is not None and first_loss >= critical - 1e-9 and declining
        line += (
            " Holds: full coverage below the threshold, falling beyond it."
            if holds
            else " Does **not** fully hold (see the table)."
        )
        out.append(line)
    return out


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    phys, fp, n, targets = SCALES[variant]
    critical = 1 - fp / phys
    t = table(df, critical)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, critical, out / f"{ID}.png")]
    show = t.drop(columns=["critical_fi"])
    text = f"""# frag-sweep: THP coverage and cycles as F_i rises

Variant `{variant}`. gups over {fp} MiB on a {phys} MiB Skylake machine under
THP (2 MiB at fault, khugepaged on). Before each run the machine is
fragmented to F_i = `os.fragmentation.target` in {targets} with the
`dispersed` and `clustered` patterns ({HOLES} unmovable 4 KiB pages per
fragmented pageblock, `os.fragmentation.holes`); {n:,} measured accesses (`run.skip_init = true`);
seeds {sorted(set(df.seed))}. No paper: this experiment exercises the framework.

## Results (means over seeds ± 95% confidence half-widths where there are several)

{markdown_table(show)}
Figure: `{ID}.png` (the dotted line is 1 - footprint/phys_mem = {critical:.2f}).
Columns are described in `pagelab/experiments/baseline/frag_sweep.py`.

## Expected trend and whether it holds

F_i is the fraction of memory that free 2 MiB blocks cannot back. The
workload needs footprint/phys_mem = {fp / phys:.2f} of memory in 2 MiB
blocks, so THP should keep full coverage while F_i < 1 - footprint/phys_mem
= {critical:.2f} and lose it roughly linearly beyond (coverage about
(1 - F_i) x phys_mem / footprint), with cycles rising as TLB misses return.
Any hole spoils a pageblock for an order-9 allocation, so both patterns
should give the same coverage; they differ only in which 4 KiB frames the
fallback pages get, which moves cycles slightly through the caches.

What the runs show:

{chr(10).join(findings(t, critical))}
"""
    pats = [sub.drop(columns="pattern").reset_index(drop=True) for _, sub in t.groupby("pattern", sort=False)]
    if len(pats) == 2 and pats[0].equals(pats[1]):
        text += "\nThe two patterns gave identical results.\n"
    elif len(pats) == 2:
        diff = (pats[0].huge_coverage - pats[1].huge_coverage).abs().max()
        cyc = (pats[0].cycles_norm - pats[1].cycles_norm).abs().max()
        text += (
            f"\nThe two patterns differ by at most {diff:.1%} in coverage and "
            f"{cyc:.1%} in normalized cycles.\n"
        )
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "THP 2 MiB coverage and cycles vs F_i (0 to 0.95), dispersed and clustered", sweep, analyze)
