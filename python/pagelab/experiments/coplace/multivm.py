"""coplace-multivm: COPLACE with several VMs (section V-D, Fig. 8), two
scenarios.

`eksm`: eleven VMs each running the Xapian analogue on its own one-way LLC
partition, their instances declaring identical data (`workload.contents =
"shared"`) so that the host's KSM has pages to merge, under three systems
as the paper's Fig. 8: the baseline (host page coloring `vmm-coloring`,
stock KSM), COPLACE without eKSM (host `coplace`, stock KSM:
`virt.host.ksm.colors = "ignore"`), and COPLACE (`coplace` with
`colors = "eksm"`).

`ebal` (Fig. 8(c)-(d)): the baseline (`vmm-coloring`, Linux's balloon),
COPLACE without eBal (`coplace`, `virt.host.balloon.even_colors = false`:
the largest free blocks first) and COPLACE (`even_colors = true`). The
paper's VM, made concrete (module `ebal`):
- VM 0, the receiver: two vCPUs, each on its own LLC way. Core 0 runs
  Xapian, core 1 the memory hog (`stream` over most of the guest:
  examples/coplace-memory-hog.toml), which leaves about half of Xapian's
  footprint free beside the ballooned-in memory (quick: 11 MiB free
  before the deflation, `vm0.phys.free`), so that about half of Xapian's
  pages may come through the balloon (the paper's "about half"; an
  estimate: which free blocks the guest's allocator gives it is not
  counted).
  VM 0 boots with Xapian's footprint ballooned (`inflated_at_boot`: the
  paper's 20 MB, "roughly equal to the working set size of Xapian") and
  gets it back (`deflate`) once the hog's first touches are done.
  Xapian's analogue keeps its index for the run and its per-query buffer
  reuses its own freed frames (the guest's buddy allocator takes the
  smallest, lowest free block), so the paper's "gradually allocated"
  pages cannot reach it during its run: it starts after the deflation,
  waiting on its vCPU for a small program (`stream` over 192 KiB, `after`).
- VM 1, the donor (the paper does not say which VM gives up the 20 MB:
  pagelab's choice, a second VM): an aged guest (`ebal.DONOR_AGED`: its
  free memory single frames between its kernel's) whose job touched 40 MiB
  and exited, so that its free frames are backed; its balloon takes the
  20 MB at the same moment (inflation comes first in a round) and frees
  the host frames VM 0's new pages get. A balloon frees only what the host
  backed, so the job's frames are what it gives.
- Both guests' color map is COPLACE's host colors (bits 12-21: the slice's
  32 colors and 5 slice bits): eBal evens the guest's colors, and under
  COPLACE those are the host colors only if the guest knows them all.
- The host holds what is in use just before the deflation plus a small
  margin (`ebal.SCALES`: measured on a 2 GiB host, the arithmetic in
  docs/systems/coplace.md, "eBal"), so that VM 0's new pages can only get
  the frames the donor released and that margin. It is not aged
  (`common.AGED` pins half of memory, which would only raise the margin).
- The moment (`deflate_at_ms`, `inflate_at_ms`) lies between the end of
  the hog's first touches and Xapian's start: measured per variant
  (`ebal.SCALES`); the experiment checks that the donor freed host frames
  for most of what VM 0 was given (`host.balloon.freed`, `check_ebal`).

KSM's time is scaled with the run (as `virt-ksm` does): ksmd scans every
VM's pages once in about a tenth of a run, so that merging settles early
in it, as it would in the paper's long-running service.

ID.csv has one row per (scenario, system): these columns (means over
seeds), then `seeds` and each quantity's `<col>_std` and `<col>_ci95`:

| column | meaning |
|---|---|
| `scenario` | `eksm`, `ebal` |
| `system` | `baseline`, `coplace-no-eksm` (or `coplace-no-ebal`), `coplace` |
| `request_cycles_mean` | eksm: `vmN.core0.request.cycles_mean`, averaged over the VMs; ebal: Xapian's alone, `vm0.core0.request.cycles_mean` |
| `request_cycles_p99` | the same of `.cycles_p99` |
| `llc_miss_ratio` | eksm: `cache.llc.misses / cache.llc.accesses` over the machine; ebal: Xapian's core's (`vm0.core0.cache.llc.*`, its first touches included; the program before it stays in the L2); in percent |
| `memory_saved` | eksm: `ksm.pages_sharing` x 4 KiB at the end, in MiB; ebal: empty (the balloon moves the same 20 MiB under every system) |
| `llc_conflict_level` | ebal: Xapian's conflict level as the paper measures it (`vm0.core0.llc_conflict_level`); eksm: empty |
| `color_fallbacks` | ebal: host faults, over the run, given a frame of another color than the host placement wanted (`host.coplace.color_fallbacks`, `host.vmm_coloring.color_fallbacks`): VM 0's new pages after the deflation, and any of the last faults before it as the host fills; eksm: empty |
| `freed_color_stddev` | ebal: `host.balloon.freed_color_stddev`, the donor's freed host frames per host color (1,024 colors); eksm: empty |
| `deflated` | ebal: `host.balloon.deflated`, pages VM 0 got back; eksm: empty |

A run of the eksm scenario is labelled `system` = `baseline`,
`coplace-stock` or `coplace`, as one of the ebal scenario (the grid is
scenario x system); the table names `coplace-stock` by its scenario
(`coplace-no-eksm`, `coplace-no-ebal`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, markdown_table, mean_over_seeds, pyplot, seeds, system_color,
                                        with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.coplace import ebal
from pagelab.experiments.coplace.common import AGED, SCALES, machine, workload
from pagelab.sweep import Sweep

ID = "coplace-multivm"
COLUMNS = ["scenario", "system", "request_cycles_mean", "request_cycles_p99", "llc_miss_ratio", "memory_saved"]
#: The ebal scenario's own quantities, after the issue's columns.
EBAL_COLUMNS = ["llc_conflict_level", "color_fallbacks", "freed_color_stddev", "deflated"]
SCENARIOS = ("eksm", "ebal")
VMS = 11
#: eksm's system -> (host placement, KSM's colors).
SYSTEMS = {"baseline": ("vmm-coloring", "ignore"), "coplace-no-eksm": ("coplace", "ignore"),
           "coplace": ("coplace", "eksm")}
#: The grid's systems: the baseline, COPLACE with the stock mechanism
#: (KSM, balloon), COPLACE with its own (eKSM, eBal).
ROLES = {"baseline": {"eksm": "baseline", "ebal": "baseline"},
         "coplace-stock": {"eksm": "coplace-no-eksm", "ebal": "coplace-no-ebal"},
         "coplace": {"eksm": "coplace", "ebal": "coplace"}}
#: variant -> (guest memory per VM, accesses per VM, ksmd's sleep_ms, pages_to_scan).
SCALES_MULTI = {
    "full": ("1GiB", 2_000_000, 1.0, 6000),
    "quick": ("512MiB", 300_000, 0.2, 3000),
    "tiny": ("256MiB", 30_000, 0.02, 600),
}


def config(variant: str) -> dict:
    """The eksm scenario's configuration (its system's keys apart)."""
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


def shape(variant: str):
    """Each point's scenario (its whole configuration) and its system's
    keys (each VM's workload then gets its own seed)."""
    def apply(config: dict, params: dict) -> None:
        system = ROLES[params["system"]][params["scenario"]]
        if params["scenario"] == "ebal":
            config.clear()
            config.update(ebal.config(variant))
            ebal.apply_system(config, system)
            return
        policy, colors = SYSTEMS[system]
        config["virt"]["host"]["policy"] = policy
        config["virt"]["host"]["ksm"]["colors"] = colors
    return apply


def sweep(variant: str) -> Sweep:
    return Sweep(
        id=f"{ID}:{variant}",
        base=config(variant),
        grid={"scenario": [{"name": s} for s in SCENARIOS], "system": [{"name": r} for r in ROLES]},
        seeds=seeds(variant),
        shape=shape(variant),
    )


def _over_vms(df: pd.DataFrame, stat: str) -> pd.Series:
    return pd.concat([df[f"vm{i}.core0.{stat}"].astype(float) for i in range(VMS)], axis=1).mean(axis=1)


def _stat(df: pd.DataFrame, name: str) -> pd.Series:
    """A statistic as floats, NaN where a run has none."""
    return df[name].astype(float) if name in df else pd.Series(np.nan, index=df.index)


def _per_run(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run: each scenario's quantities (module docstring)."""
    ksm = df.scenario == "eksm"
    xapian_llc = 100.0 * _stat(df, "vm0.core0.cache.llc.misses") / _stat(df, "vm0.core0.cache.llc.accesses")
    fallbacks = _stat(df, "host.coplace.color_fallbacks").fillna(0) + \
        _stat(df, "host.vmm_coloring.color_fallbacks").fillna(0)
    ebal_only = lambda s: s.where(~ksm)  # noqa: E731 - NaN in the eksm rows
    return pd.DataFrame({
        "scenario": df.scenario, "seed": df.seed,
        "system": [ROLES[r][s] for r, s in zip(df.system, df.scenario)],
        "request_cycles_mean": _over_vms(df, "request.cycles_mean").where(ksm, _stat(df, "vm0.core0.request.cycles_mean")),
        "request_cycles_p99": _over_vms(df, "request.cycles_p99").where(ksm, _stat(df, "vm0.core0.request.cycles_p99")),
        "llc_miss_ratio": (100.0 * df["cache.llc.misses"] / df["cache.llc.accesses"]).where(ksm, xapian_llc),
        "memory_saved": (_stat(df, "ksm.pages_sharing") * 4096 / (1 << 20)).where(ksm),
        "llc_conflict_level": ebal_only(_stat(df, "vm0.core0.llc_conflict_level")),
        "color_fallbacks": ebal_only(fallbacks),
        "freed_color_stddev": ebal_only(_stat(df, "host.balloon.freed_color_stddev")),
        "deflated": ebal_only(_stat(df, "host.balloon.deflated")),
    })


def check_ebal(df: pd.DataFrame) -> None:
    """The ebal scenario's premise, per run: the donor's balloon freed host
    frames for most of what VM 0 got back. A balloon frees only frames the
    host backed: one that came before the donor's job exited would take
    frames never touched and free almost none. (eBal's takes some never
    touched ones too, of the colors the job's frames lack: 466 freed for
    512 given on the tiny variant.)"""
    runs = df[df.scenario == "ebal"]
    short = runs[runs["host.balloon.freed"].astype(float) < runs["host.balloon.deflated"].astype(float) / 2]
    if len(short):
        raise RuntimeError(f"{ID}: ebal runs whose donor freed under half the host frames VM 0 got back "
                           f"(the balloons' moment, ebal.SCALES, came before the donor's job exited): "
                           f"{len(short)} of {len(runs)}")


def table(df: pd.DataFrame) -> pd.DataFrame:
    check_ebal(df)
    t = mean_over_seeds(_per_run(df), ["scenario", "system"])
    order = {s: i for i, s in enumerate(["baseline", "coplace-no-eksm", "coplace-no-ebal", "coplace"])}
    t = t.assign(_sc=t.scenario.map({s: i for i, s in enumerate(SCENARIOS)}), _sy=t.system.map(order))
    return with_spread(t.sort_values(["_sc", "_sy"]), COLUMNS + EBAL_COLUMNS).reset_index(drop=True)


def _ratio(t: pd.DataFrame, scenario: str, col: str) -> float:
    v = t[t.scenario == scenario].set_index("system")
    return float(v.loc["coplace", col] / v.loc[ROLES["coplace-stock"][scenario], col] - 1)


def measured(t: pd.DataFrame) -> dict[str, object]:
    return {
        "eKSM: mean latency, COPLACE over COPLACE without eKSM, minus 1": _ratio(t, "eksm", "request_cycles_mean"),
        "eKSM: p99 latency, COPLACE over COPLACE without eKSM, minus 1": _ratio(t, "eksm", "request_cycles_p99"),
        "eBal: mean latency, COPLACE over COPLACE without eBal, minus 1": _ratio(t, "ebal", "request_cycles_mean"),
    }


#: Per scenario, the quantities plotted beside the latencies.
PLOTTED = {"eksm": ("memory_saved", "memory KSM saved (MiB)"), "ebal": ("color_fallbacks", "host color fallbacks")}


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(10, 6))
    for row, scenario in zip(axes, SCENARIOS):
        rows = t[t.scenario == scenario].set_index("system")
        systems = list(rows.index)
        for ax, (col, label) in zip(row, [("request_cycles_mean", "mean request cycles"),
                                          ("request_cycles_p99", "p99 request cycles"), PLOTTED[scenario]]):
            ax.bar(range(len(systems)), rows[col], yerr=error_bars(rows, col),
                   color=[system_color(s, i) for i, s in enumerate(systems)])
            ax.set_xticks(range(len(systems)), systems, fontsize=7)
            ax.set_ylabel(label)
            ax.set_title(scenario, fontsize=8)
    fig.suptitle(f"coplace-multivm: eksm ({VMS} Xapian VMs, KSM on), ebal (Xapian gets pages through a balloon)")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    guest, accesses, sleep_ms, pages = SCALES_MULTI[variant]
    s = ebal.SCALES[variant]
    text = f"""# coplace-multivm: eleven VMs with eKSM, a balloon with eBal (the paper's Fig. 8)

Variant `{variant}` (the module's docstring has the design).

- eksm: {VMS} VMs of {guest}, one vCPU each on its own LLC way, each
  running the Xapian analogue ({accesses:,} accesses) over identical data;
  KSM scans {pages} pages every {sleep_ms} ms of simulated time.
- ebal: VM 0 of {s["guest"]} (Xapian, {s["xapian"]:,} accesses, and a
  {s["hog"]} memory hog, one LLC way each) gets {ebal.balloon_bytes(variant)}
  back from its balloon at {s["at_ms"]} ms, when VM 1 (the donor, {s["donor"]})
  gives as much; the host has {s["host"]}.

## Results

{markdown_table(t)}
## Beside the paper

{markdown_table(paper)}
Tail latencies are compared in direction only. Figure: `{ID}.png`.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "COPLACE with several VMs: eKSM and eBal", sweep, analyze, paper="COPLACE (section V-D, Fig. 8)")
