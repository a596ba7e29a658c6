"""coplace-table2: the conflict levels of the paper's Table II, per
workload and host placement, the guest on Linux's default placement
(`os.policy = "base"`: the paper does not say which guest policy its
Table II used; its section V runs "bin-hopping", Linux's default, in the
guest, which is this).

The conflict level is the paper's own measure (section III), pagelab's
`core0.llc_conflict_level`: the distinct pages the workload's measured
accesses touch, as host frames, in batches of the LLC's capacity in pages
(7,040 on the paper's machine), the population standard deviation of
their counts over one slice's 32 LLC colors, averaged over the batches.

ID.csv has one row per (workload, host_policy): these columns (means over
seeds), then `seeds` and each quantity's `<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `workload` | the paper's workload, run as its analogue (common.WORKLOADS) |
| `host_policy` | `virt.host.policy`: `base` (the paper's "bin hopping"), `vmm-coloring` (its "page coloring"), `coplace`; and `coloring` (PALLOC's, not the paper's) |
| `conflict_level` | `core0.llc_conflict_level` |
| `host_memory` | `aged` (common.AGED: the host's free memory between frames in use; the paper's rows) or `fresh` (a freshly booted host) |
| `l2_conflict_level` | `core0.l2_conflict_level`: the same batches over the L2's 16 colors ("similar findings", section III) |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_figure, write_outputs, write_text)
from pagelab.experiments.coplace.common import HOST_MEMORY, WORKLOADS, vm_base, workload
from pagelab.sweep import Sweep

ID = "coplace-table2"
COLUMNS = ["workload", "host_policy", "conflict_level", "l2_conflict_level", "host_memory"]
#: pagelab's host placements, in the table's order (the paper's three, then PALLOC's).
POLICIES = ["base", "vmm-coloring", "coplace", "coloring"]
#: The paper's columns -> pagelab's policy.
PAPER_POLICY = {"bin hopping": "base", "page coloring": "vmm-coloring", "COPLACE": "coplace"}
#: Table II's rows.
PAPER_WORKLOADS = ["blackscholes", "water_spatial", "Xapian", "Img-dnn"]


def sweep(variant: str) -> Sweep:
    return Sweep(
        id=f"{ID}:{variant}",
        base=vm_base(variant),
        grid={"host_memory": [{"name": m, **keys} for m, keys in HOST_MEMORY.items()],
              "host_policy": [{"name": p, "virt.host.policy": p} for p in POLICIES]},
        workloads=[workload(w, variant) for w in WORKLOADS if w in PAPER_WORKLOADS],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({
        "workload": df.workload,
        "host_policy": df.host_policy,
        "host_memory": df.host_memory,
        "conflict_level": df["core0.llc_conflict_level"].astype(float),
        "l2_conflict_level": df["core0.l2_conflict_level"].astype(float),
        "seed": df.seed,
    })
    t = mean_over_seeds(d, ["host_memory", "workload", "host_policy"])
    order = {p: i for i, p in enumerate(POLICIES)}
    t = t.sort_values(["host_memory", "workload", "host_policy"],
                      key=lambda s: s.map(order) if s.name == "host_policy" else s)
    return with_spread(t, COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    states = list(dict.fromkeys(t.host_memory))
    fig, axes = plt.subplots(1, len(states), figsize=(5 * len(states), 3.2), sharey=True, squeeze=False)
    workloads = list(dict.fromkeys(t.workload))
    width = 0.8 / len(POLICIES)
    for ax, state in zip(axes[0], states):
        for i, p in enumerate(POLICIES):
            rows = t[(t.host_memory == state) & (t.host_policy == p)].set_index("workload").reindex(workloads)
            xs = [j + (i - (len(POLICIES) - 1) / 2) * width for j in range(len(workloads))]
            ax.bar(xs, rows.conflict_level, width, yerr=error_bars(rows, "conflict_level"), label=p,
                   color=system_color(p, i))
        ax.set_xticks(range(len(workloads)), workloads)
        ax.set_title(f"{state} host")
    axes[0][0].set_ylabel("conflict level (pages per LLC color, std. dev.)")
    axes[0][0].legend(title="host placement")
    fig.suptitle("coplace-table2: conflict levels, guest default placement")
    return write_figure(fig, path, seeds=t.seeds)


def measured(t: pd.DataFrame) -> dict[str, object]:
    """The paper's twelve cells, pagelab's beside each."""
    level = t[t.host_memory == "aged"].set_index(["workload", "host_policy"]).conflict_level
    return {f"{w}: {name}": float(level.get((w, policy), float("nan")))
            for w in PAPER_WORKLOADS for name, policy in PAPER_POLICY.items()}


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    text = f"""# coplace-table2: conflict levels (the paper's Table II)

Variant `{variant}`. One VM of one vCPU on the paper's machine
(`xeon-gold-6138`), the guest on Linux's default placement, each workload
run right after the VM boots; the host's placement varied. The conflict
level is `core0.llc_conflict_level` (the module's docstring says how it is
measured).

## Results

{markdown_table(t)}
## Beside the paper

{markdown_table(paper)}
Figure: `{ID}.png`. Columns: `pagelab/experiments/coplace/table2.py`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE Table II: conflict levels by host placement", sweep, analyze, paper="COPLACE (Table II)")
