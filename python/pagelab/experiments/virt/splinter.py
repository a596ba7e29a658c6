"""virt-splinter: guest huge pages on host base pages get base-page TLB
reach. The TLBs hold the combined translation at the smaller of the guest's
and the host's page sizes, so THP in the guest over 4 KiB host pages
splinters into 4 KiB entries; huge pages pay off only when both layers
have them.

ID.csv has one row per (workload, guest_policy, host_policy): these
columns (means over seeds; `runtime` normalized seed by seed), then `seeds`
and each quantity's `<col>_std` and `<col>_ci95` (`common.mean_over_seeds`):

| column | meaning |
|---|---|
| `workload` | gups, graph bfs, kv |
| `guest_policy` | `base` (4 KiB) or `thp` (THP at fault, khugepaged off) in the guest (`os.policy`) |
| `host_policy` | `base`, `thp` (khugepaged off) or `hugetlb-1g` (hugetlbfs 1 GiB pages reserved when guest memory is mapped; `machine.max_order = 18`) in the host (`virt.host.policy`) |
| `dtlb_l2_misses` | `dtlb.l2.misses`: L2 TLB misses, each a two-dimensional walk |
| `walk_refs` | `walk.mem_refs`: guest page-table and EPT entries read |
| `runtime` | `runtime.cycles` divided by the workload's guest base / host base value |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, system_color, markdown_table, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "virt-splinter"
COLUMNS = ["workload", "guest_policy", "host_policy", "dtlb_l2_misses", "walk_refs", "runtime"]

GUEST = [
    {"name": "base", "os.policy": "base"},
    {"name": "thp", "os.policy": "thp", "os.thp.khugepaged": False},
]
HOST = [
    {"name": "base", "virt.host.policy": "base"},
    {"name": "thp", "virt.host.policy": "thp", "virt.host.thp.khugepaged": False},
    {"name": "hugetlb-1g", "virt.host.policy": "hugetlb", "virt.host.hugetlb.size": "1GiB"},
]
ORDER = {"base": 0, "thp": 1, "hugetlb-1g": 2}

#: variant -> (host memory, guest memory, footprint, accesses, bfs scale)
SCALES = {
    "full": ("24GiB", "12GiB", "8GiB", 10_000_000, 22),
    "quick": ("6GiB", "3GiB", "1GiB", 1_000_000, 18),
    "tiny": ("3GiB", "1GiB", "128MiB", 20_000, 12),
}


def sweep(variant: str) -> Sweep:
    host, guest, fp, n, scale = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            # 1 GiB host pages need 1 GiB buddy blocks (also in the guest: harmless).
            "machine": {"preset": "skylake", "phys_mem": host, "max_order": 18},
            "virt": {"enabled": True, "guest_mem": guest},
            "run": {"skip_init": True},
        },
        grid={"guest_policy": GUEST, "host_policy": HOST},
        workloads=[
            {"name": "gups", "kind": "gups", "footprint": fp, "accesses": n},
            {"name": "bfs", "kind": "graph", "kernel": "bfs", "scale": scale, "accesses": n},
            {"name": "kv", "kind": "kv", "footprint": fp, "accesses": n},
        ],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame(
        {
            "workload": df.workload,
            "guest_policy": df.guest_policy,
            "host_policy": df.host_policy,
            "dtlb_l2_misses": df["dtlb.l2.misses"],
            "walk_refs": df["walk.mem_refs"],
            "runtime": df["runtime.cycles"],
            "seed": df.seed,
        }
    )
    d["runtime"] = d.runtime / paired(d, "runtime", ["workload", "seed"], (d.guest_policy == "base") & (d.host_policy == "base"))
    t = mean_over_seeds(d, ["workload", "guest_policy", "host_policy"])
    wl = {w: i for i, w in enumerate(d.workload.unique())}
    t = t.assign(_w=t.workload.map(wl), _g=t.guest_policy.map(ORDER), _h=t.host_policy.map(ORDER))
    return with_spread(t.sort_values(["_w", "_g", "_h"]), COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    workloads = list(dict.fromkeys(t.workload))
    fig, axes = plt.subplots(1, len(workloads), figsize=(4 * len(workloads), 3.8), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        sub = t[t.workload == w]
        labels = [f"{g}/{h}" for g, h in zip(sub.guest_policy, sub.host_policy)]
        ax.bar(range(len(sub)), sub.runtime, yerr=error_bars(sub, "runtime"),
               color=[system_color(g) for g in sub.guest_policy])
        ax.axhline(1.0, color="black", lw=0.6, ls=":")
        ax.set_xticks(range(len(sub)), labels, rotation=45, ha="right")
        ax.set_xlabel("guest policy / host policy")
        ax.set_title(w)
    axes[0][0].set_ylabel("runtime / runtime of base on base")
    fig.suptitle("virt-splinter: guest page policy / host page policy")
    return write_figure(fig, path, seeds=t.seeds)


def verdicts(t: pd.DataFrame) -> list[str]:
    out = []
    for w, sub in t.groupby("workload", sort=False):
        s = sub.set_index(["guest_policy", "host_policy"])
        if ("thp", "base") not in s.index or ("base", "base") not in s.index or ("thp", "thp") not in s.index:
            continue
        bb, tb, tt = s.loc[("base", "base")], s.loc[("thp", "base")], s.loc[("thp", "thp")]
        ratio = tb.dtlb_l2_misses / bb.dtlb_l2_misses if bb.dtlb_l2_misses else float("nan")
        holds = ratio > 0.9 and tt.dtlb_l2_misses < tb.dtlb_l2_misses
        out.append(
            f"- **{w}**: guest THP on host base pages has {ratio:.2f}x the L2 TLB misses of base on base "
            f"(4 KiB reach); on host THP {tt.dtlb_l2_misses / max(bb.dtlb_l2_misses, 1):.2f}x. "
            + ("Holds." if holds else "Does **not** hold.")
        )
    return out


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, out / f"{ID}.png")]
    host, guest, fp, n, scale = SCALES[variant]
    text = f"""# virt-splinter: huge pages in one layer only

Variant `{variant}`. One VM of {guest} on a host of {host} (preset
`skylake`, `machine.max_order = 18`); gups and kv over {fp}, graph bfs on
a Kronecker graph of scale {scale}; {n:,} measured accesses after the
first-touch pass (`run.skip_init`).

## Results (`runtime` divided by base on base)

{markdown_table(t)}
Figure: `{ID}.png`. Columns are described in `pagelab/experiments/virt/splinter.py`.

## Expected and measured

A combined TLB entry covers the smaller of the two page sizes, so THP in
the guest over base pages in the host keeps 4 KiB reach: about as many L2
TLB misses as base on base (each walk is shorter: 19 entries instead of
24 without caches), and only huge pages in both layers cut the misses.

{chr(10).join(verdicts(t))}
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "guest x host page policy: splintering of guest huge pages on host base pages", sweep, analyze)
