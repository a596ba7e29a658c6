"""`make demo`: base vs thp vs coloring, on gups and graph bfs, on a fresh and
on a fragmented machine. Prints a table (runtime normalized to base on the
fresh machine, per workload) and writes `demo.csv` and `demo.png`.

The coloring runs give the workload half of the LLC's colors, as if a
co-runner held the other half: on one core this shows what a partition
costs; the benefit of partitioning appears only under contention (the
Colored Huge Pages experiments).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from pagelab.api import run
from pagelab.experiments.common import PALETTE, legend_beside, write_figure
from pagelab.output import check_out_dir, pyplot, write_atomic
from pagelab.table import compact, narrow_table, numeric_column, text_column

POLICIES = ["base", "thp", "coloring"]
#: F_i before the run. 0.95 leaves free 2 MiB blocks for 5% of memory,
#: less than the gups footprint (25% of memory): THP covers only part of it.
MACHINES = {"fresh": 0.0, "fragmented": 0.95}


def workloads(quick: bool) -> dict[str, dict]:
    gups_fp, scale, n = ("256MiB", 17, 400_000) if quick else ("1GiB", 21, 4_000_000)
    return {
        "gups": {"kind": "gups", "footprint": gups_fp, "accesses": n},
        # Measured after InitParent, a sequential sweep of 3 x 2^scale accesses.
        "bfs": {"kind": "graph", "kernel": "bfs", "scale": scale, "degree": 16, "accesses": n, "skip_kernel_init": True},
    }


def config(workload: dict, policy: str, fi: float, quick: bool) -> dict:
    # The i7-10700 has 16 colors (bits 12-15); the workload gets half.
    colors = {"colors": list(range(8))} if policy == "coloring" else {}
    return {
        "machine": {"preset": "i7-10700", "phys_mem": "1GiB" if quick else "4GiB"},
        "os": {"policy": policy, "fragmentation": {"target": fi, "pattern": "dispersed"}},
        "workload": {**workload, **colors},
        # Statistics describe the measured accesses, not the first touches.
        "run": {"skip_init": True},
    }


def collect(quick: bool, console: Console) -> pd.DataFrame:
    rows = []
    for wname, w in workloads(quick).items():
        for mname, fi in MACHINES.items():
            for policy in POLICIES:
                r = run(config(w, policy, fi, quick))
                s = r.stats
                rows.append(
                    {
                        "workload": wname,
                        "machine": mname,
                        "policy": policy,
                        "cycles": s["cycles"],
                        "translation": s["cycles.translation"],
                        "data": s["cycles.data"],
                        "faults": s["cycles.faults"],
                        "daemon": s["cycles.daemon"],
                        "dtlb_l2_misses": s["dtlb.l2.misses"],
                        "walk_refs": s["walk.mem_refs"],
                        "llc_misses": s["cache.llc.misses"],
                        "huge_fraction": s["mem.mapped.2m"] / max(1, s["mem.mapped.2m"] + s["mem.mapped.4k"]),
                        "fi": s["phys.fi"],
                        "seconds": r.seconds,
                    }
                )
                console.log(f"{wname:5} {mname:10} {policy:9} {r.seconds:6.2f} s")
    df = pd.DataFrame(rows)
    base = df[(df.machine == "fresh") & (df.policy == "base")].set_index("workload").cycles
    df["runtime"] = df.cycles / df.workload.map(base)
    return df


def plot(df: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (wname, sub) in zip(axes, df.groupby("workload", sort=False)):
        labels = [f"{m}\n{p}" for m, p in zip(sub.machine, sub.policy)]
        x = range(len(sub))
        base = sub.cycles.iloc[0] / sub.runtime.iloc[0]
        parts = [("translation", PALETTE["vermillion"]), ("data", PALETTE["blue"]), ("faults", PALETTE["orange"]),
                 ("daemon", PALETTE["purple"])]
        bottom = [0.0] * len(sub)
        for col, color in parts:
            vals = list(sub[col] / base)
            ax.bar(x, vals, bottom=bottom, color=color, label=col)
            bottom = [b + v for b, v in zip(bottom, vals)]
        rest = [r - b for r, b in zip(sub.runtime, bottom)]
        ax.bar(x, rest, bottom=bottom, color=PALETTE["grey"], label="base CPI")
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_title(wname)
    axes[0].set_ylabel("runtime / runtime of base\non a fresh machine")
    legend_beside(fig, title="cycles")
    write_figure(fig, path)


def summary_table(df: pd.DataFrame) -> Table:
    """The demo's table, narrow enough for 80 columns (the CSV has every
    number in full)."""
    table = narrow_table("pagelab demo: runtime normalized to base, fresh machine")
    for col in ("workload", "machine", "policy"):
        text_column(table, col, df[col])
    for col in ("runtime", "TLB miss", "walk refs", "LLC miss", "2 MiB"):
        numeric_column(table, col)
    for r in df.itertuples():
        table.add_row(
            r.workload, r.machine, r.policy, f"{r.runtime:.3f}",
            compact(r.dtlb_l2_misses), compact(r.walk_refs), compact(r.llc_misses), f"{r.huge_fraction:.0%}",
        )
    table.caption = "TLB miss: L2 TLB misses; 2 MiB: share of the footprint mapped with 2 MiB pages"
    return table


def main(args: argparse.Namespace) -> int:
    console = Console()
    out = Path(args.out)
    check_out_dir(out)  # before the runs, not after them
    df = collect(args.quick, console)
    console.print(summary_table(df))
    write_atomic(out / "demo.csv", df.to_csv(index=False))
    plot(df, out / "demo.png")
    console.print(f"wrote {out / 'demo.csv'} and {out / 'demo.png'}")
    return 0
