"""coplace-fig1: what a VM costs throughput workloads, by the guest's and
the host's placement, with the whole LLC and with one way (the paper's
Fig. 1, section III).

Each workload runs natively and in a VM of one vCPU right after it boots
(on an aged host, common.AGED; natively on the same aged machine),
the guest (or the native OS) on page coloring (`os.policy = "coloring"`)
or Linux's default placement (`base`), the host on its default placement
(`base`, the paper's "bin hopping") or the paper's host page coloring
(`vmm-coloring`), the core allowed all 11 LLC ways or one
(`machine.cache.llc.way_masks`, Intel CAT). A VM's run is normalized to
the native run with the same policy, ways and seed.

ID.csv has one row per (workload, guest_policy, host_policy, llc_ways):
these columns (means over seeds), then `seeds` and each quantity's
`<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `workload` | the paper's workload, run as its analogue (common.WORKLOADS) |
| `guest_policy` | `os.policy` in the guest (and natively) |
| `host_policy` | `virt.host.policy` |
| `llc_ways` | LLC ways the core may fill |
| `runtime_norm` | `runtime.cycles` in the VM over natively (the paper plots throughput, its inverse) |
| `llc_miss_ratio_inc` | the VM's LLC miss ratio minus the native one, in points (`cache.llc.misses / accesses`) |
| `l2_miss_ratio_inc` | the same for the L2 |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color, with_spread,
                                        write_figure, write_outputs, write_text)
from pagelab.experiments.coplace.common import miss_ratio, native, vm_base, ways_mask, workload
from pagelab.sweep import Sweep

ID = "coplace-fig1"
COLUMNS = ["workload", "guest_policy", "host_policy", "llc_ways", "runtime_norm", "llc_miss_ratio_inc",
           "l2_miss_ratio_inc"]
#: The paper's throughput workloads that pagelab has analogues of.
THROUGHPUT = ["blackscholes", "water_spatial", "raytrace"]
GUEST = ["coloring", "base"]
HOST = ["base", "vmm-coloring"]
WAYS = [11, 1]
NATIVE = "native"


def sweep(variant: str) -> Sweep:
    hosts = [native(NATIVE)] + [{"name": h, "virt.host.policy": h} for h in HOST]
    return Sweep(
        id=f"{ID}:{variant}",
        base=vm_base(variant),
        grid={
            "guest_policy": [{"name": g, "os.policy": g} for g in GUEST],
            "host_policy": hosts,
            "llc_ways": [{"name": w, "machine.cache.llc.way_masks": ways_mask(w)} for w in WAYS],
        },
        workloads=[workload(w, variant) for w in THROUGHPUT],
        seeds=seeds(variant),
    )


KEYS = ["workload", "guest_policy", "llc_ways", "seed"]


def per_run(df: pd.DataFrame) -> pd.DataFrame:
    """Each VM run beside the native run with the same workload, policy,
    ways and seed."""
    d = pd.DataFrame({
        "workload": df.workload, "guest_policy": df.guest_policy, "host_policy": df.host_policy,
        "llc_ways": df.llc_ways.astype(int), "seed": df.seed, "runtime": df["runtime.cycles"].astype(float),
        "llc": miss_ratio(df, "llc"), "l2": miss_ratio(df, "l2"),
    })
    native = d[d.host_policy == NATIVE].set_index(KEYS)
    vm = d[d.host_policy != NATIVE].copy()
    ref = native.reindex(pd.MultiIndex.from_frame(vm[KEYS]))
    vm["runtime_norm"] = vm.runtime.to_numpy() / ref.runtime.to_numpy()
    vm["llc_miss_ratio_inc"] = vm.llc.to_numpy() - ref.llc.to_numpy()
    vm["l2_miss_ratio_inc"] = vm.l2.to_numpy() - ref.l2.to_numpy()
    return vm


def table(df: pd.DataFrame) -> pd.DataFrame:
    vm = per_run(df)[COLUMNS + ["seed"]]
    t = mean_over_seeds(vm, ["workload", "guest_policy", "host_policy", "llc_ways"])
    t = t.sort_values(["llc_ways", "workload", "guest_policy", "host_policy"], ascending=[False, True, True, True])
    return with_spread(t, COLUMNS).reset_index(drop=True)


def averages(t: pd.DataFrame) -> dict[str, float]:
    """The paper's averages over the workloads and the four combinations."""
    out = {}
    for ways in WAYS:
        w = t[t.llc_ways == ways]
        by_host = w.groupby("host_policy").runtime_norm.mean()
        out[f"{ways} ways: slowdown in the VM"] = float(w.runtime_norm.mean() - 1)
        out[f"{ways} ways: throughput gain when the host colors"] = float(by_host["base"] / by_host["vmm-coloring"] - 1)
        out[f"{ways} ways: LLC miss ratio increase"] = float(w.llc_miss_ratio_inc.mean())
        out[f"{ways} ways: L2 miss ratio increase"] = float(w.l2_miss_ratio_inc.mean())
    return out


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.6), sharex=True)
    combos = [(g, h) for g in GUEST for h in HOST]
    workloads = list(dict.fromkeys(t.workload))
    width = 0.8 / len(combos)
    for r, ways in enumerate(WAYS):
        w = t[t.llc_ways == ways]
        for c, (col, label) in enumerate([("runtime_norm", "runtime in the VM / native"),
                                          ("llc_miss_ratio_inc", "LLC miss ratio increase (points)"),
                                          ("l2_miss_ratio_inc", "L2 miss ratio increase (points)")]):
            ax = axes[r][c]
            for i, (g, h) in enumerate(combos):
                rows = w[(w.guest_policy == g) & (w.host_policy == h)].set_index("workload").reindex(workloads)
                xs = [j + (i - (len(combos) - 1) / 2) * width for j in range(len(workloads))]
                ax.bar(xs, rows[col], width, yerr=error_bars(rows, col, lo=None if col.endswith("_inc") else 0.0), label=f"guest {g}, host {h}",
                       color=system_color(f"{g}/{h}", i))
            ax.set_xticks(range(len(workloads)), workloads)
            ax.set_title(f"{ways} LLC way{'s' if ways > 1 else ''}: {label}", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("coplace-fig1: throughput workloads in a VM against natively")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, averages(t), out)
    text = f"""# coplace-fig1: throughput workloads in a VM (the paper's Fig. 1)

Variant `{variant}`. Each workload natively and in a VM of one vCPU right
after it boots, on the paper's machine; guest and host placements and the
core's LLC ways varied; a VM's run over the native run with the same
policy and ways (the module's docstring).

## Results

{markdown_table(t)}
## Beside the paper (averages over the workloads and the four combinations)

{markdown_table(paper)}
The paper's averages are over ten throughput workloads; pagelab's over
{", ".join(THROUGHPUT)}. Figure: `{ID}.png`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE Fig. 1: throughput workloads in a VM, by placement and LLC ways", sweep, analyze,
        paper="COPLACE (Fig. 1)")
