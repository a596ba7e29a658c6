"""et-hugetlb: the paper's Figure 2 (`scripts/run-fig2-hugetlb.sh`): each
workload on HugeTLB pages of one size, 4 KiB (no hugetlb), 64 KiB (16
contiguous PTEs), 2 MiB, 32 MiB (16 contiguous PMDs) and 1 GiB, on the
paper's machine (preset `ampere-altra`, Neoverse N1).

Columns the issue's: `workload, virtualized, page_size, cycles_norm`
(cycles over the workload's 4 KiB run of the same seed, averaged over
seeds), then `seeds`, `cycles_norm_std` and `cycles_norm_ci95`
(`common.mean_over_seeds`).

Virtualized rows (`virtualized = true`): the workload in one VM whose guest
and host both use HugeTLB pages of the row's size (the guest's pool for
the workload's VMA, the host's for the VM's guest memory; `4k`: base pages
in both), as the artifact's `qemu.sh` sets it up for Figure 2
(`GUEST_HTLB_PGSIZE_KB` and `HOST_HTLB_PGSIZE_KB` of one size: a
`hugetlbfs` memory backend for QEMU and `hugepagesz=` in the guest). The
host has twice the native machine's memory and the guest the native
machine's, so that both pools fit; `cycles_norm` is over the virtualized
4 KiB run. With 64 KiB and 32 MiB pages both tables carry the contiguous
bit, so the combined TLB entries are 64 KiB and 32 MiB
(`engine/walk2d_contig.rs`).

Workloads (pagelab's generators; the artifact's fig2 runs astar, omnetpp,
streamcluster, hashjoin, svm and canneal, whose analogues `et-native` now
has in `elastic/analogues.py` (not svm), on a scaled machine; this
experiment still runs its two on the unscaled N1): `gups` (uniform random read-modify-writes: the GUPS benchmark, and
the random probes of hashjoin) and `chase` (dependent random loads over
one array: the pointer chasing of canneal and omnetpp). Footprints are not
the paper's (33-124 GiB): `full` uses 4 GiB, 1.6 times the N1 L2 TLB's
reach with 2 MiB pages (1280 x 2 MiB = 2.5 GiB) and a tenth of its reach
with 32 MiB pages (40 GiB).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (MEASURED_TIMING, error_bars, markdown_table, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.elastic import PAPER
from pagelab.sweep import Sweep

ID = "et-hugetlb"

#: page size -> its keys. 1 GiB blocks need a buddy allocator of order 18;
#: every pool is reserved at mmap time (pool 0), as much as can be had.
#: The host's keys are the guest's (read only in a virtualized run).
SIZES = [
    {"name": "4k", "os.policy": "base", "virt.host.policy": "base"},
    *({"name": name, "os.policy": "hugetlb", "os.hugetlb.size": size, "virt.host.policy": "hugetlb",
       "virt.host.hugetlb.size": size, **extra}
      for name, size, extra in [("64k", "64KiB", {}), ("2m", "2MiB", {}), ("32m", "32MiB", {}),
                                ("1g", "1GiB", {"machine.max_order": 18})]),
]
ORDER = [s["name"] for s in SIZES]

#: variant -> (phys_mem, footprint, accesses)
SCALES = {
    "full": ("8GiB", "4GiB", 20_000_000),
    "quick": ("4GiB", "1GiB", 2_000_000),
    "tiny": ("3GiB", "1GiB", 20_000),
}


def modes(variant: str) -> list[dict]:
    """Native, and virtualized with the host's memory doubled."""
    phys = SCALES[variant][0]
    host = f"{2 * int(phys.removesuffix('GiB'))}GiB"
    return [{"name": False},
            {"name": True, "virt.enabled": True, "virt.guest_mem": phys, "machine.phys_mem": host}]


def sweep(variant: str) -> Sweep:
    phys, fp, n = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": {"preset": "ampere-altra", "phys_mem": phys, **MEASURED_TIMING},
            # Statistics cover the measured accesses, not the first touches.
            "run": {"skip_init": True},
        },
        grid={"virtualized": modes(variant), "page_size": SIZES},
        workloads=[
            {"name": "gups", "kind": "gups", "footprint": fp, "accesses": n},
            {"name": "chase", "kind": "pointer-chase", "footprint": fp, "accesses": n},
        ],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    virt = df.virtualized.astype(str).str.lower() == "true"
    d = pd.DataFrame({"workload": df.workload, "virtualized": virt, "page_size": df.page_size, "seed": df.seed})
    d["cycles_norm"] = df.cycles / paired(d.assign(cycles=df.cycles), "cycles", ["workload", "virtualized", "seed"],
                                          df.page_size == "4k")
    t = mean_over_seeds(d, ["workload", "virtualized", "page_size"])
    t = t.assign(_p=t.page_size.map({p: i for i, p in enumerate(ORDER)}))
    t = t.sort_values(["workload", "virtualized", "_p"]).drop(columns=["_p"])
    return with_spread(t, ["workload", "virtualized", "page_size", "cycles_norm"]).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    """pagelab's value of each quantity of paper/et-hugetlb.csv."""
    s = t.set_index(["workload", "virtualized", "page_size"]).cycles_norm
    cases = list(dict.fromkeys(zip(t.workload, t.virtualized)))
    ratios = [f"{w}{' (virtualized)' if v else ''} {s[(w, v, '64k')] / s[(w, v, '2m')]:.2f}" for w, v in cases]
    return {"cycles with 64 KiB pages / cycles with 2 MiB pages": ", ".join(ratios)}


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    t = t.assign(case=t.workload + t.virtualized.map({True: " (virt)", False: ""}))
    workloads = list(dict.fromkeys(t.case))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(ORDER)
    for i, size in enumerate(ORDER):
        sub = t[t.page_size == size].set_index("case").reindex(workloads)
        xs = [j + (i - (len(ORDER) - 1) / 2) * width for j in range(len(workloads))]
        ax.bar(xs, sub.cycles_norm.fillna(0), width, yerr=error_bars(sub, "cycles_norm"), capsize=2, label=size)
    ax.axhline(1.0, color="black", lw=0.6, ls=":")
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("cycles / 4 KiB pages' cycles")
    ax.set_title("et-hugetlb: HugeTLB page sizes on Neoverse N1, native and virtualized")
    ax.legend(fontsize=8)
    return write_figure(fig, path)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    phys, fp, n = SCALES[variant]
    text = f"""# {ID}: HugeTLB page sizes (the paper's Figure 2), native and virtualized

Variant `{variant}`: preset `ampere-altra` (Neoverse N1) with {phys} of
memory; each workload over {fp}, {n:,} measured accesses after the first
touches. `cycles_norm` is cycles over the workload's 4 KiB run (native or
virtualized). Virtualized: one VM of {phys} on a host of twice that, guest
and host HugeTLB pages of the same size (`elastic/hugetlb.py`).

## Against the paper

{markdown_table(paper)}
The slides' "64KiB == 2MiB" is about the paper's workloads; these
analogues disagree, for reasons the runs show: uniform random accesses over
{fp} see 1280 x 64 KiB = 80 MiB of L2 TLB reach with 64 KiB pages (most
accesses still walk) against 2.5 GiB with 2 MiB pages (none do); and since
the first touches walk once per 64 KiB page rather than once per 4 KiB one,
the measured phase starts with colder page-table lines in the caches, which
short runs pay (more LLC misses on walks than with 4 KiB pages).

{markdown_table(t)}
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "Elastic Translations Fig. 2: HugeTLB page sizes", sweep, analyze, paper=PAPER)
