"""coplace-varying: the paper's varying workload (section V-C): in one VM,
SysBench reads a large file into an array (its page-cache pages and its
array's pages allocated interleaved, the array freed at its exit, the
page cache kept), then PgSql joins a 5 MB and a 500 MB table on the
array's old guest frames, which the host backed while SysBench ran: no
host fault places the join's pages.

Programs: `file-read` (SysBench fileio's sequential read) and the join's
analogue (common.JOIN), one after the other on one vCPU
(`workload.after`). Systems: the paper's baseline (host page coloring,
`vmm-coloring`, guest default placement) and COPLACE (host `coplace`,
guest default placement), plus the join alone on a freshly booted VM
(the paper: 23.6% slower after SysBench than fresh). A phase's cycles are
the run's minus those of the same run without it (docs/stats.md: a
program's own statistics); `runtime_norm` is over the same phase run
natively.

ID.csv has one row per (phase, system): these columns (means over seeds),
then `seeds` and each quantity's `<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `phase` | `sysbench` (the reader), `pgsql` (the join after it), `pgsql-fresh` (the join alone) |
| `system` | `baseline` (host `vmm-coloring`), `coplace` (host `coplace`); guest `base` both |
| `conflict_level` | `core0.llc_conflict_level` of the phase's program (the core's last) |
| `runtime_norm` | the phase's execution cycles (`core0.cycles` but `.faults` and `.virt`) over the same phase's natively |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_figure, write_outputs, write_text)
from pagelab.experiments.coplace.common import SCALES, native, vm_base
from pagelab.sweep import Sweep

ID = "coplace-varying"
COLUMNS = ["phase", "system", "conflict_level", "runtime_norm"]
SYSTEMS = {"native": None, "baseline": "vmm-coloring", "coplace": "coplace"}
#: scenario -> the programs it runs, in order.
SCENARIOS = {"sysbench": ["sysbench"], "both": ["sysbench", "pgsql"], "fresh": ["pgsql"]}

#: variant -> (the file SysBench reads, the join's small and large tables).
#: The paper gives the tables (5 MB, 500 MB), not the file: pagelab's is
#: larger than the join so that the join runs on frames SysBench freed.
SIZES = {
    "full": ("1GiB", "5MiB", "500MiB"),
    "quick": ("512MiB", "5MiB", "250MiB"),
    "tiny": ("64MiB", "1MiB", "16MiB"),
}


#: variant -> host memory: room for the file's page cache, the reader's
#: array and the join, beside the aged host's pinned half.
HOST = {"full": "8GiB", "quick": "4GiB", "tiny": "1GiB"}


def program(name: str, variant: str, after: bool) -> dict:
    file, small, large = SIZES[variant]
    _, _, accesses = SCALES[variant]
    if name == "sysbench":
        w = {"kind": "file-read", "file": "sysbench.data", "footprint": file, "accesses": 0}
    else:
        w = {"kind": "pgsql-join", "build_relation": small, "footprint": large, "accesses": accesses}
    w["name"] = name
    if after:
        w["after"] = "previous"
    return w


def shape(variant: str):
    def apply(config: dict, params: dict) -> None:
        names = SCENARIOS[params["scenario"]]
        config.pop("workload", None)
        config["workloads"] = [program(n, variant, i > 0) for i, n in enumerate(names)]
    return apply


def sweep(variant: str) -> Sweep:
    systems = [native(s) if p is None else {"name": s, "virt.host.policy": p} for s, p in SYSTEMS.items()]
    base = vm_base(variant)
    # Whole phases: the join's point is that its pages need no host fault,
    # so its first touches stay in (and the reader has no init pass).
    base["run"]["skip_init"] = False
    base["machine"]["phys_mem"] = HOST[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base=base,
        grid={"system": systems, "scenario": [{"name": s} for s in SCENARIOS]},
        seeds=seeds(variant),
        shape=shape(variant),
    )


def execution_cycles(df: pd.DataFrame) -> pd.Series:
    """Core 0's cycles but its page faults' and VM exits' (`cycles.faults`,
    `cycles.virt`): what the program's instructions, translations and data
    took. A phase's first touches fault in the guest and, on a fresh VM, in
    the host, once per page; the paper's runs of seconds amortize them, a
    simulated run of millions of accesses would not, and the join after
    SysBench faults only in the guest (its frames are backed): keeping them
    would measure the host's fault cost, not the caches."""
    return (df["core0.cycles"] - df["core0.cycles.faults"] - df["core0.cycles.virt"].fillna(0)).astype(float)


def phases(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (phase, system, seed): its cycles and conflict level."""
    d = df.assign(cycles=execution_cycles(df), level=df["core0.llc_conflict_level"].astype(float))
    runs = d.set_index(["system", "scenario", "seed"])
    out = []
    for (system, seed), _ in d.groupby(["system", "seed"]):
        r = lambda s: runs.loc[(system, s, seed)]  # noqa: E731
        out += [
            (system, seed, "sysbench", r("sysbench").cycles, r("sysbench").level),
            (system, seed, "pgsql", r("both").cycles - r("sysbench").cycles, r("both").level),
            (system, seed, "pgsql-fresh", r("fresh").cycles, r("fresh").level),
        ]
    return pd.DataFrame(out, columns=["system", "seed", "phase", "cycles", "conflict_level"])


def table(df: pd.DataFrame) -> pd.DataFrame:
    p = phases(df)
    native = p[p.system == "native"].set_index(["phase", "seed"]).cycles
    vm = p[p.system != "native"].copy()
    vm["runtime_norm"] = vm.cycles.to_numpy() / native.reindex(pd.MultiIndex.from_frame(vm[["phase", "seed"]])).to_numpy()
    t = mean_over_seeds(vm[COLUMNS + ["seed"]], ["phase", "system"])
    return with_spread(t, COLUMNS).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    v = t.set_index(["phase", "system"])
    return {
        "baseline: the join's conflict level after SysBench": float(v.loc[("pgsql", "baseline"), "conflict_level"]),
        "baseline: the join after SysBench over fresh, minus 1": float(
            v.loc[("pgsql", "baseline"), "runtime_norm"] / v.loc[("pgsql-fresh", "baseline"), "runtime_norm"] - 1),
        "the join after SysBench: COPLACE's throughput over the baseline's, minus 1": float(
            v.loc[("pgsql", "baseline"), "runtime_norm"] / v.loc[("pgsql", "coplace"), "runtime_norm"] - 1),
    }


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    phases_ = list(dict.fromkeys(t.phase))
    for ax, col, label in zip(axes, ["runtime_norm", "conflict_level"], ["runtime in the VM / native", "conflict level"]):
        for i, s in enumerate(["baseline", "coplace"]):
            rows = t[t.system == s].set_index("phase").reindex(phases_)
            xs = [j + (i - 0.5) * 0.4 for j in range(len(phases_))]
            ax.bar(xs, rows[col], 0.4, yerr=error_bars(rows, col), label=s, color=system_color(s, i))
        ax.set_xticks(range(len(phases_)), phases_)
        ax.set_ylabel(label)
    axes[0].legend()
    fig.suptitle("coplace-varying: the join after the file reader")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    file, small, large = SIZES[variant]
    text = f"""# coplace-varying: the join after the file reader (the paper's section V-C)

Variant `{variant}`. In one VM of one vCPU, SysBench's analogue reads a
{file} file into an array, exits, and the join of a {small} and a {large}
table runs next; the join alone on a fresh VM beside it (the module's
docstring).

## Results

{markdown_table(t)}
## Beside the paper

{markdown_table(paper)}
Figure: `{ID}.png`. Columns: `pagelab/experiments/coplace/varying.py`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE's varying workload: the join after the file reader", sweep, analyze,
        paper="COPLACE (section V-C, Fig. 7)")
