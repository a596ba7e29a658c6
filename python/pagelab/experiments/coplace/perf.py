"""coplace-perf: COPLACE against the paper's baseline on constant
workloads (section V-B, Fig. 5 and 6): blackscholes (throughput) and
Xapian (mean and tail latency), each run right after the VM boots, with
the whole LLC and with one way.

Systems: `baseline` (the paper's "VMM-PC-VM-BH": host page coloring,
`vmm-coloring`, guest default placement) and `coplace` (host `coplace`,
guest default placement); `native` is the reference of `runtime_norm`.

ID.csv has one row per (workload, system, llc_ways): these columns (means
over seeds), then `seeds` and each quantity's `<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `workload` | the paper's workload, run as its analogue (common.WORKLOADS) |
| `system` | `baseline` or `coplace` |
| `llc_ways` | LLC ways the core may fill |
| `runtime_norm` | `runtime.cycles` over the native run with the same ways and seed |
| `request_cycles_mean` | `core0.request.cycles_mean` (request-structured workloads; empty otherwise) |
| `request_cycles_p99` | `core0.request.cycles_p99` |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_figure, write_outputs, write_text)
from pagelab.experiments.coplace.common import native, vm_base, ways_mask, workload
from pagelab.sweep import Sweep

ID = "coplace-perf"
COLUMNS = ["workload", "system", "llc_ways", "runtime_norm", "request_cycles_mean", "request_cycles_p99"]
WORKLOADS = ["blackscholes", "Xapian"]
SYSTEMS = {"native": None, "baseline": "vmm-coloring", "coplace": "coplace"}
WAYS = [11, 1]


def sweep(variant: str) -> Sweep:
    systems = [native(s) if p is None else {"name": s, "virt.host.policy": p} for s, p in SYSTEMS.items()]
    return Sweep(
        id=f"{ID}:{variant}",
        base=vm_base(variant),
        grid={"system": systems,
              "llc_ways": [{"name": w, "machine.cache.llc.way_masks": ways_mask(w)} for w in WAYS]},
        workloads=[workload(w, variant) for w in WORKLOADS],
        seeds=seeds(variant),
    )


def _stat(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name].astype(float) if name in df else pd.Series(float("nan"), index=df.index)


def table(df: pd.DataFrame) -> pd.DataFrame:
    keys = ["workload", "llc_ways", "seed"]
    d = pd.DataFrame({"workload": df.workload, "system": df.system, "llc_ways": df.llc_ways.astype(int),
                      "seed": df.seed, "runtime": df["runtime.cycles"].astype(float),
                      "request_cycles_mean": _stat(df, "core0.request.cycles_mean"),
                      "request_cycles_p99": _stat(df, "core0.request.cycles_p99")})
    native = d[d.system == "native"].set_index(keys).runtime
    vm = d[d.system != "native"].copy()
    vm["runtime_norm"] = vm.runtime.to_numpy() / native.reindex(pd.MultiIndex.from_frame(vm[keys])).to_numpy()
    t = mean_over_seeds(vm[COLUMNS + ["seed"]], ["workload", "system", "llc_ways"])
    t = t.sort_values(["workload", "llc_ways", "system"], ascending=[True, False, True])
    return with_spread(t, COLUMNS).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    v = t.set_index(["workload", "system", "llc_ways"])

    def gain(col: str, w: str, ways: int) -> float:
        return float(v.loc[(w, "coplace", ways), col] / v.loc[(w, "baseline", ways), col] - 1)

    return {
        "blackscholes, 11 ways: throughput, COPLACE over baseline, minus 1": -gain("runtime_norm", "blackscholes", 11)
        / (1 + gain("runtime_norm", "blackscholes", 11)),
        "blackscholes, 1 way: throughput, COPLACE over baseline, minus 1": -gain("runtime_norm", "blackscholes", 1)
        / (1 + gain("runtime_norm", "blackscholes", 1)),
        "Xapian, 11 ways: mean latency, COPLACE over baseline, minus 1": gain("request_cycles_mean", "Xapian", 11),
        "Xapian, 11 ways: p99 latency, COPLACE over baseline, minus 1": gain("request_cycles_p99", "Xapian", 11),
        "Xapian, 1 way: mean latency, COPLACE over baseline, minus 1": gain("request_cycles_mean", "Xapian", 1),
    }


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, (col, label) in zip(axes, [("runtime_norm", "runtime in the VM / native"),
                                        ("request_cycles_mean", "mean request cycles"),
                                        ("request_cycles_p99", "p99 request cycles")]):
        d = t if col == "runtime_norm" else t[t.workload == "Xapian"]
        groups = list(dict.fromkeys(zip(d.workload, d.llc_ways)))
        for i, s in enumerate(["baseline", "coplace"]):
            rows = d[d.system == s].set_index(["workload", "llc_ways"]).reindex(groups)
            xs = [j + (i - 0.5) * 0.4 for j in range(len(groups))]
            ax.bar(xs, rows[col], 0.4, yerr=error_bars(rows, col), label=s, color=system_color(s, i))
        ax.set_xticks(range(len(groups)), [f"{w}\n{n} way{'s' if n > 1 else ''}" for w, n in groups])
        ax.set_ylabel(label)
    axes[0].legend()
    fig.suptitle("coplace-perf: COPLACE against the baseline (host page coloring)")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    text = f"""# coplace-perf: COPLACE on constant workloads (the paper's Fig. 5 and 6)

Variant `{variant}`. blackscholes and Xapian right after the VM boots,
the baseline (host page coloring, guest default) against COPLACE, with
11 LLC ways and with one (the module's docstring).

## Results

{markdown_table(t)}
## Beside the paper

{markdown_table(paper)}
Tail latencies are compared in direction only (the paper's kernel, I/O and
engine effects are not modelled). Figure: `{ID}.png`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE against the baseline on constant workloads", sweep, analyze,
        paper="COPLACE (section V-B, Fig. 5 and 6)")
