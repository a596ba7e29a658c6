"""coplace-multivm: COPLACE with several VMs (section V-D, Fig. 8): eleven
VMs each running the Xapian analogue on its own one-way LLC partition,
their instances declaring identical data (`workload.contents = "shared"`)
so that the host's KSM has pages to merge, under three systems as the
paper's Fig. 8: the baseline (host page coloring `vmm-coloring`, stock
KSM), COPLACE without eKSM (host `coplace`, stock KSM:
`virt.host.ksm.colors = "ignore"`), and COPLACE (`coplace` with
`colors = "eksm"`). The paper's eBal scenario (a balloon moving 20 MB into
a two-vCPU VM beside a memory hog) is not built yet: its mechanisms are
(docs/systems/coplace.md, "eBal").

KSM's time is scaled with the run (as `virt-ksm` does): ksmd scans every
VM's pages once in about a tenth of a run, so that merging settles early
in it, as it would in the paper's long-running service.

ID.csv has one row per (scenario, system): these columns (means over
seeds), then `seeds` and each quantity's `<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `scenario` | `eksm` |
| `system` | `baseline`, `coplace-no-eksm`, `coplace` |
| `request_cycles_mean` | `vmN.core0.request.cycles_mean`, averaged over the VMs |
| `request_cycles_p99` | `vmN.core0.request.cycles_p99`, averaged over the VMs |
| `llc_miss_ratio` | `cache.llc.misses / cache.llc.accesses` over the machine, in percent |
| `memory_saved` | `ksm.pages_sharing` x 4 KiB at the end, in MiB |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color,
                                        with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.coplace.common import AGED, SCALES, machine, workload
from pagelab.sweep import Sweep

ID = "coplace-multivm"
COLUMNS = ["scenario", "system", "request_cycles_mean", "request_cycles_p99", "llc_miss_ratio", "memory_saved"]
VMS = 11
#: system -> (host placement, KSM's colors).
SYSTEMS = {"baseline": ("vmm-coloring", "ignore"), "coplace-no-eksm": ("coplace", "ignore"),
           "coplace": ("coplace", "eksm")}
#: variant -> (guest memory per VM, accesses per VM, ksmd's sleep_ms, pages_to_scan).
SCALES_MULTI = {
    "full": ("1GiB", 2_000_000, 1.0, 6000),
    "quick": ("512MiB", 300_000, 0.2, 3000),
    "tiny": ("256MiB", 30_000, 0.02, 600),
}


def config(variant: str) -> dict:
    guest, accesses, sleep_ms, pages = SCALES_MULTI[variant]
    w = workload("Xapian", variant, contents="shared")
    w["accesses"] = accesses
    w.pop("name")
    m = machine(variant)
    m["cache"] = {"llc": {"way_masks": [1 << i for i in range(VMS)]}}
    host = {"policy": "coplace", "fragmentation": dict(AGED),
            "ksm": {"enabled": True, "sleep_ms": sleep_ms, "pages_to_scan": pages}}
    return {
        "machine": m,
        "virt": {"enabled": True, "host": host},
        "vms": [{"guest_mem": guest, "os": {"policy": "base"}, "workload": dict(w)} for _ in range(VMS)],
    }


def sweep(variant: str) -> Sweep:
    systems = [{"name": s, "virt.host.policy": p, "virt.host.ksm.colors": c} for s, (p, c) in SYSTEMS.items()]
    return Sweep(
        id=f"{ID}:{variant}",
        base=config(variant),
        grid={"scenario": [{"name": "eksm"}], "system": systems},
        seeds=seeds(variant),
        # (Shaped: each VM's workload gets its own seed.)
        shape=lambda config, params: None,
    )


def _over_vms(df: pd.DataFrame, stat: str) -> pd.Series:
    return pd.concat([df[f"vm{i}.core0.{stat}"].astype(float) for i in range(VMS)], axis=1).mean(axis=1)


def table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({
        "scenario": df.scenario, "system": df.system, "seed": df.seed,
        "request_cycles_mean": _over_vms(df, "request.cycles_mean"),
        "request_cycles_p99": _over_vms(df, "request.cycles_p99"),
        "llc_miss_ratio": 100.0 * df["cache.llc.misses"] / df["cache.llc.accesses"],
        "memory_saved": df["ksm.pages_sharing"].astype(float) * 4096 / (1 << 20),
    })
    t = mean_over_seeds(d, ["scenario", "system"])
    order = {s: i for i, s in enumerate(SYSTEMS)}
    t = t.sort_values(["scenario", "system"], key=lambda s: s.map(order) if s.name == "system" else s)
    return with_spread(t, COLUMNS).reset_index(drop=True)


def measured(t: pd.DataFrame) -> dict[str, object]:
    v = t[t.scenario == "eksm"].set_index("system")
    return {
        "eKSM: mean latency, COPLACE over COPLACE without eKSM, minus 1":
            float(v.loc["coplace", "request_cycles_mean"] / v.loc["coplace-no-eksm", "request_cycles_mean"] - 1),
        "eKSM: p99 latency, COPLACE over COPLACE without eKSM, minus 1":
            float(v.loc["coplace", "request_cycles_p99"] / v.loc["coplace-no-eksm", "request_cycles_p99"] - 1),
    }


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    systems = list(SYSTEMS)
    for ax, (col, label) in zip(axes, [("request_cycles_mean", "mean request cycles"),
                                        ("request_cycles_p99", "p99 request cycles"),
                                        ("memory_saved", "memory KSM saved (MiB)")]):
        rows = t.set_index("system").reindex(systems)
        ax.bar(range(len(systems)), rows[col], yerr=error_bars(rows, col),
               color=[system_color(s, i) for i, s in enumerate(systems)])
        ax.set_xticks(range(len(systems)), systems, fontsize=7)
        ax.set_ylabel(label)
    fig.suptitle(f"coplace-multivm: {VMS} Xapian VMs, one LLC way each, KSM on")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    guest, accesses, sleep_ms, pages = SCALES_MULTI[variant]
    text = f"""# coplace-multivm: eleven VMs, eKSM (the paper's Fig. 8(a))

Variant `{variant}`. {VMS} VMs of {guest}, one vCPU each on its own LLC way,
each running the Xapian analogue ({accesses:,} accesses) over identical
data; KSM scans {pages} pages every {sleep_ms} ms of simulated time (the
module's docstring).

## Results

{markdown_table(t)}
## Beside the paper

{markdown_table(paper)}
Tail latencies are compared in direction only. Figure: `{ID}.png`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE with eleven VMs: eKSM", sweep, analyze, paper="COPLACE (section V-D, Fig. 8)")
