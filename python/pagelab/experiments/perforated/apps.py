"""Perforated Pages, Fig. 9: the paper's eight programs under the
fragmentation scenario, as analogues built from pagelab's generators.

Columns of `pp-fig9`: `workload, distribution, degree, portion, system,
speedup` (`speedup` = cycles of `base-4k` / cycles of the system, same
work; allocated holes only, as the paper: "these workloads do not free
unused pages"), the mean over seeds of the speedup taken seed by seed, then
`seeds`, `speedup_std` and `speedup_ci95` (`common.mean_over_seeds`).

The analogues (reference/workloads.md; none runs the real program, so
expect trends, not the paper's band), with what each keeps:

- `mcf`: pointer chasing over a node array with a hot set (mcf's network
  simplex follows tree links among nodes beside a large arc array);
- `omnetpp`: pointer chasing over many small (64-byte) heap objects
  (discrete-event simulation over small messages and modules);
- `libquantum`: a strided sweep of 64 bytes over the state array (one
  access per line, the quantum register's linear sweeps);
- `zeusmp`: a strided sweep of 4 KiB + 64 bytes (a 3-D stencil's plane
  stride: every access a new page);
- `mummer`: pointer chasing over 32-byte nodes, no hot set (suffix-tree
  matching: dependent, random loads);
- `tigr`: random loads over the footprint (gups without stores: assembly
  over a large table of overlaps, no locality);
- `omnetpp17`: `omnetpp` with a larger footprint (SPEC 2017's bigger
  inputs);
- `xz`: random loads over 192 MiB (LZMA's match finder over a
  160-250 MiB buffer).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, error_bars, legend_beside, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_figure, write_outputs)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.common import SYSTEMS, base_config, labels, shape, write_up
from pagelab.sweep import Sweep

ID = "pp-fig9"
KEYS = ["workload", "distribution", "degree", "portion"]

#: variant -> (phys_mem, footprint scale, accesses, degrees, portions)
SCALES = {
    "full": (8 * GIB, 1.0, 4_000_000, [0.25, 0.5], [0.25, 0.5, 0.75, 1.0]),
    "quick": (4 * GIB, 0.5, 1_000_000, [0.25, 0.5], [0.5]),
    "tiny": (512 * MIB, 1 / 32, 20_000, [0.25, 0.5], [0.5]),
}


def analogues(scale: float, n: int) -> list[dict]:
    """The eight programs' analogues; footprints (at scale 1) after the
    programs' reference inputs, 2 MiB-rounded."""

    def fp(mib: int) -> int:
        return max(4, int(mib * scale) // 2 * 2) * MIB

    def chase(name, mib, node, hot=0):
        w = {"name": name, "kind": "pointer-chase", "footprint": fp(mib), "node_size": node, "accesses": n}
        if hot:
            w.update({"hot_set": fp(hot), "hot_ops": 0.5})
        return w

    def sweep_(name, mib, stride):
        return {"name": name, "kind": "stride", "footprint": fp(mib), "stride": stride, "accesses": n}

    def random(name, mib):
        return {"name": name, "kind": "gups", "footprint": fp(mib), "write_fraction": 0.0, "accesses": n}

    return [
        chase("mcf", 1700, 128, hot=64),
        chase("omnetpp", 256, 64),
        sweep_("libquantum", 512, 64),
        sweep_("zeusmp", 1024, 4096 + 64),
        chase("mummer", 1024, 32),
        random("tigr", 1024),
        chase("omnetpp17", 768, 64),
        random("xz", 192),
    ]


def sweep(variant: str) -> Sweep:
    phys, scale, n, degrees, portions = SCALES[variant]
    return programs_sweep(f"{ID}:{variant}", base_config(phys), scale, n, degrees, portions, variant)


def programs_sweep(sweep_id: str, base: dict, scale: float, n: int, degrees: list, portions: list,
                   variant: str) -> Sweep:
    """The analogues at `scale` of their footprints, `n` accesses each,
    under every system and scenario of the grid, on the machine `base`."""
    return Sweep(
        id=sweep_id,
        base=base,
        grid={
            "distribution": labels(["clustered", "dispersed"]),
            "hole_kind": labels(["allocated"]),
            "degree": labels(degrees),
            "portion": labels(portions),
            "system": labels(list(SYSTEMS)),
        },
        workloads=analogues(scale, n),
        seeds=seeds(variant),
        shape=shape,
    )


def table(df: pd.DataFrame, extra: dict[str, pd.Series] | None = None) -> pd.DataFrame:
    """Per point, the speedup over `base-4k` (paired by seed) and the
    `extra` quantities (one value per run, as `df`'s rows), each the mean
    over seeds with its spread; in the analogues' and systems' order."""
    extra = extra or {}
    d = pd.DataFrame({k: df[k] for k in KEYS + ["system", "seed"]})
    d["speedup"] = paired(df, "cycles", KEYS + ["seed"], df.system == "base-4k") / df.cycles
    for name, values in extra.items():
        d[name] = values
    t = mean_over_seeds(d, KEYS + ["system"])
    wl = {w: i for i, w in enumerate(dict.fromkeys(df.workload))}
    order = {s: i for i, s in enumerate(SYSTEMS)}
    t = t.assign(_w=t.workload.map(wl), _s=t.system.map(order)).sort_values(["_w"] + KEYS[1:] + ["_s"])
    return with_spread(t, KEYS + ["system", "speedup", *extra]).reset_index(drop=True)


def _at(t: pd.DataFrame, dist: str, degree: float, portion: float) -> pd.DataFrame:
    p = t[(t.distribution == dist) & (t.degree == degree) & (t.portion == portion)]
    return p.pivot_table(index="workload", columns="system", values="speedup")


def measured(t: pd.DataFrame, df: pd.DataFrame) -> dict[str, object]:
    p = _at(t, "clustered", 0.25, 0.5)
    of_ideal = p["perforated"] / p["ideal-2m"]
    over_conv = p["perforated"] / p["base-2m-4k"]
    got = {
        "portion 50%, degree 25%, clustered: perforated / ideal-2m, lowest of the programs": of_ideal.min(),
        "portion 50%, degree 25%, clustered: perforated / ideal-2m, highest of the programs": of_ideal.max(),
        "portion 50%, degree 25%, clustered: perforated / base-2m-4k, lowest of the programs": over_conv.min(),
        "portion 50%, degree 25%, clustered: perforated / base-2m-4k, highest of the programs": over_conv.max(),
    }
    m = df[(df.workload == "mcf") & (df.system == "perforated") & (df.degree == 0.5) & (df.portion == 0.5)]
    # Means over the seeds of each distribution.
    c, d = (m[m.distribution == dist][["perforated.bitmap_lookups", "dtlb.l2.share.bitmap"]].mean()
            for dist in ("clustered", "dispersed"))
    got["mcf, portion 50%, degree 50%: fewer bitmap accesses, clustered against dispersed holes"] = (
        1 - c["perforated.bitmap_lookups"] / d["perforated.bitmap_lookups"])
    got["mcf, portion 50%, degree 50%: fewer bitmap entries in the L2 TLB, clustered against dispersed"] = (
        1 - c["dtlb.l2.share.bitmap"] / d["dtlb.l2.share.bitmap"])
    return got


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    ws = list(dict.fromkeys(t.workload))
    fig, axes = plt.subplots(2, 4, figsize=(14, 6.2), squeeze=False)
    for ax, w in zip(axes.flat, ws):
        sub = t[t.workload == w]
        for (system, dist, degree), s in sub.groupby(["system", "distribution", "degree"]):
            if system in ("base-4k", "ideal-2m") and (dist, degree) != ("clustered", sub.degree.min()):
                continue
            label = system if system in ("base-4k", "ideal-2m") else f"{system}, {dist}, {degree:.0%} holes"
            ls = "-" if dist == "clustered" else "--"
            ax.errorbar(s.portion, s.speedup, yerr=error_bars(s, "speedup"), marker="o", ls=ls, label=label)
        ax.set_title(w)
        ax.set_xlabel("share of 2 MiB regions with holes")
    for ax in axes.flat[len(ws):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("speedup over base-4k")
    legend_beside(fig)
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t, df), out)
    phys, scale, n, _, _ = SCALES[variant]
    head = f"""# {ID}: the paper's programs (analogues) under fragmentation

Variant `{variant}`: the paper's machine (preset `gem5-skylake`), {phys >> 20} MiB of
memory, analogues of the eight programs at {scale:g} of their footprints,
{n:,} measured accesses each, allocated holes. `speedup` is cycles of
`base-4k` over the system's. The analogues keep the programs' access
patterns, not their code: expect trends, not the paper's band."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages Fig. 9: the programs' analogues under fragmentation", sweep, analyze, paper=PAPER)
