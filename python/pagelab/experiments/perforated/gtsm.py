"""Perforated Pages, VII-D and Fig. 10: perforated pages against GTSM
(Gap-Tolerant Sequential Mapping) on memory with 5.5% faulty frames.

Columns of `pp-gtsm` (faults of 4 KiB frames; `pp-gtsm-64k.csv` has the
same for faults of 64 KiB blocks, the other reading of the paper's 5.5%):
`workload, system, speedup, huge_share`. `speedup` = cycles of `base-4k`
(on the same faulty memory) / cycles of the system; `huge_share` = the
share of the workload's mapped memory under 2 MiB translations of any
kind (huge, perforated or GTSM pages). Means over seeds (`speedup` taken
seed by seed), then `seeds` and each quantity's `<col>_std` and
`<col>_ci95` (`common.mean_over_seeds`).

Systems: `base-4k`; `gtsm` (32-entry L2 and L3 walk caches, as the paper
gives GTSM); `perforated` (THP, and perforated pages over regions with
faulty frames, the holes remapped; the creation rule opened as for
Fig. 7, since random faults set every filter bit); `ideal-2m` (THP on
memory without faults).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, beside_paper, error_bars, legend_beside, mean_over_seeds, paired, pyplot, seeds,
                                        system_color, with_spread, write_csv, write_figure)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.common import labels, microbenchmark, paper_machine, write_up
from pagelab.sweep import Sweep

ID = "pp-gtsm"
FAULTY = 0.055
SYSTEMS = ["base-4k", "gtsm", "perforated", "ideal-2m"]
#: System -> its `os` keys (faulty frames added by `shape`, save ideal-2m).
OS = {
    "base-4k": {"policy": "base"},
    "gtsm": {"policy": "gtsm"},
    "perforated": {"policy": "perforated", "perforated": {"max_unmovable": 1.0, "max_filter_bits": 8}},
    "ideal-2m": {"policy": "thp"},
}

#: variant -> (phys_mem, footprint, accesses, granularities)
SCALES = {
    "full": (8 * GIB, 2 * GIB, 4_000_000, ["4k", "64k"]),
    "quick": (4 * GIB, 1 * GIB, 1_000_000, ["4k", "64k"]),
    "tiny": (512 * MIB, 64 * MIB, 20_000, ["4k", "64k"]),
}


def workloads(footprint: int, accesses: int) -> list[dict]:
    """The random-access microbenchmark of Fig. 7 and a Redis-like store
    (pagelab's kv: hash buckets, chains, keys and 1000-byte values)."""
    return [microbenchmark(footprint, accesses), {"name": "kv", "kind": "kv", "footprint": footprint,
                                                  "accesses": accesses}]


def shape(config: dict, params: dict) -> None:
    system = params["system"]
    os_ = config.setdefault("os", {})
    os_.update({k: dict(v) if isinstance(v, dict) else v for k, v in OS[system].items()})
    if system != "ideal-2m":
        os_["faulty_frames"] = FAULTY
        os_["faulty_granularity"] = params["granularity"]
    if system == "gtsm":
        config.setdefault("machine", {})["pwc"] = {"pdpt_entries": 32, "pde_entries": 32}


def sweep(variant: str) -> Sweep:
    phys, fp, n, grans = SCALES[variant]
    return Sweep(
        id=f"{ID}:{variant}",
        base=paper_machine(phys),
        grid={"granularity": labels(grans), "system": labels(SYSTEMS)},
        workloads=workloads(fp, n),
        seeds=seeds(variant),
        shape=shape,
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    mapped = df["mem.mapped.4k"] + df["mem.mapped.2m"] + df["mem.mapped.1g"]
    wide = df["mem.mapped.2m"] + df["mem.mapped.1g"] + df["mem.mapped.perforated"] + df["mem.mapped.gtsm"]
    d = pd.DataFrame({"granularity": df.granularity, "workload": df.workload, "system": df.system, "seed": df.seed})
    d["speedup"] = paired(df, "cycles", ["granularity", "workload", "seed"], df.system == "base-4k") / df.cycles
    d["huge_share"] = wide / mapped.clip(lower=1)
    t = mean_over_seeds(d, ["granularity", "workload", "system"])
    order = {s: i for i, s in enumerate(SYSTEMS)}
    t = t.assign(_s=t.system.map(order)).sort_values(["granularity", "workload", "_s"])
    return with_spread(t, ["granularity", "workload", "system", "speedup", "huge_share"]).reset_index(drop=True)


def perforated_over_gtsm(t: pd.DataFrame) -> float:
    """Mean over workloads of perforated's speedup over GTSM's."""
    s = t.set_index(["workload", "system"]).speedup
    ws = sorted(set(t.workload))
    return sum(s[(w, "perforated")] / s[(w, "gtsm")] for w in ws) / len(ws)


def measured(t: pd.DataFrame) -> dict[str, object]:
    got = {}
    for gran in ["4k", "64k"]:
        sub = t[t.granularity == gran]
        if sub.empty:
            continue
        got[f"faults of {gran}: perforated / gtsm speedup, mean over workloads"] = perforated_over_gtsm(sub)
        got[f"faults of {gran}: gtsm huge-page share"] = sub[sub.system == "gtsm"].huge_share.mean()
    return got


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    grans = sorted(set(t.granularity))
    fig, axes = plt.subplots(1, len(grans), figsize=(4.5 * len(grans), 3.4), squeeze=False)
    for ax, gran in zip(axes[0], grans):
        sub = t[t.granularity == gran]
        ws = list(dict.fromkeys(sub.workload))
        width = 0.8 / len(SYSTEMS)
        for i, system in enumerate(SYSTEMS):
            s = sub[sub.system == system].set_index("workload").reindex(ws)
            ax.bar([j + (i - 1.5) * width for j in range(len(ws))], s.speedup, width, yerr=error_bars(s, "speedup"),
                   label=system, color=system_color(system, i))
        ax.set_xticks(range(len(ws)), ws)
        ax.set_title(f"{FAULTY:.1%} of frames faulty, {gran} faults")
    axes[0][0].set_ylabel("speedup over base-4k\n(cycles of base-4k / cycles)")
    legend_beside(fig)
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    cols = [c for c in t.columns if c != "granularity"]
    files = [write_csv(t[t.granularity == "4k"][cols].reset_index(drop=True), out / f"{ID}.csv"),
             write_csv(t[t.granularity == "64k"][cols].reset_index(drop=True), out / f"{ID}-64k.csv"),
             plot(t, out / f"{ID}.png")]
    paper, path = beside_paper(__file__, ID, measured(t), out)
    files.append(path)
    phys, fp, n, _ = SCALES[variant]
    head = f"""# {ID}: perforated pages against GTSM on faulty memory

Variant `{variant}`: the paper's machine (preset `gem5-skylake`), {phys >> 20} MiB
of memory, {FAULTY:.1%} of it faulty (each 4 KiB frame, or each 64 KiB block, with
that probability), workloads over {fp >> 20} MiB ({n:,} measured accesses).
`ideal-2m` runs on memory without faults."""
    closing = "docs/systems/perforated-results.md discusses the two readings of the paper's 5.5%."
    files.append(write_up(out / f"{ID}.md", head, paper, t, closing=closing))
    return files


declare(ID, "Perforated Pages Fig. 10: against GTSM on faulty memory", sweep, analyze, paper=PAPER)
