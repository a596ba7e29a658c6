"""Perforated Pages, Fig. 7 and Fig. 8: the random-access microbenchmark
under the fragmentation scenario. Set-up in `perforated.common`.

Columns:

- `pp-fig7`: `distribution, hole_kind, degree, portion, system, speedup,
  dtlb_l2_mpki`; `speedup` = cycles of `base-4k` / cycles of the system
  (the paper's IPC normalized to 4 KiB pages: same work); `dtlb_l2_mpki` =
  L2 TLB misses (page walks) per thousand instructions.
- `pp-fig8`: `distribution, hole_kind, degree, portion, share_4k, share_2m,
  share_perforated, share_bitmap, share_hole, bitmap_lookups, filter_hits`
  for `perforated`: the mean share of the L2 TLB's valid entries of each
  kind (`dtlb.l2.share.*`, sampled after every quantum), and the L2 hits on
  perforated entries that consulted a bitmap or that the filter answered.

Every quantity is the mean over seeds (`speedup` taken seed by seed: a
system's run over `base-4k`'s of the same seed), followed by `seeds` and
each quantity's `<col>_std` and `<col>_ci95` (`common.mean_over_seeds`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, legend_beside, mean_over_seeds, paired, pyplot, share_axis, system_color,
                                        with_spread, write_figure, write_outputs)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.common import SCALES, SYSTEMS, sweep, write_up

KEYS = ["distribution", "hole_kind", "degree", "portion"]
#: The L2 TLB's entry kinds of Fig. 8.
SHARES = ["4k", "2m", "perforated", "bitmap", "hole"]
FIG7 = "pp-fig7"
FIG8 = "pp-fig8"


def fig7_table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({k: df[k] for k in KEYS + ["system", "seed"]})
    d["speedup"] = paired(df, "cycles", KEYS + ["seed"], df.system == "base-4k") / df.cycles
    d["dtlb_l2_mpki"] = df["dtlb.l2.mpki"]
    t = mean_over_seeds(d, KEYS + ["system"])
    order = {s: i for i, s in enumerate(SYSTEMS)}
    t = t.assign(_s=t.system.map(order)).sort_values(KEYS + ["_s"])
    return with_spread(t, KEYS + ["system", "speedup", "dtlb_l2_mpki"]).reset_index(drop=True)


def fig8_table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({k: df[k] for k in KEYS + ["seed"]})
    for kind in SHARES:
        d[f"share_{kind}"] = df[f"dtlb.l2.share.{kind}"]
    d["bitmap_lookups"] = df["perforated.bitmap_lookups"]
    d["filter_hits"] = df["perforated.filter_hits"]
    t = mean_over_seeds(d, KEYS).sort_values(KEYS)
    return with_spread(t, KEYS + [f"share_{k}" for k in SHARES] + ["bitmap_lookups", "filter_hits"]).reset_index(drop=True)


def _point(t: pd.DataFrame, **kv) -> pd.DataFrame:
    m = pd.Series(True, index=t.index)
    for k, v in kv.items():
        m &= t[k] == v
    return t[m]


ABSENT = "not in this variant's grid"


def fig7_measured(t: pd.DataFrame) -> dict[str, object]:
    """pagelab's value of each quantity of paper/pp-fig7.csv."""
    q50 = "portion 50%, degree 25%, clustered, allocated: perforated / base-2m-4k speedup"
    q100 = "portion 100%, degree 90%, dispersed, unallocated: perforated"
    got = {q50: ABSENT, f"{q100} below ideal-2m": ABSENT, f"{q100} / base-2m-4k speedup": ABSENT}
    p = _point(t, distribution="clustered", hole_kind="allocated", degree=0.25, portion=0.5).set_index("system")
    if {"perforated", "base-2m-4k"} <= set(p.index):
        got[q50] = p.speedup["perforated"] / p.speedup["base-2m-4k"]
    p = _point(t, distribution="dispersed", hole_kind="unallocated", degree=0.9, portion=1.0).set_index("system")
    if {"perforated", "base-2m-4k", "ideal-2m"} <= set(p.index):
        got[f"{q100} below ideal-2m"] = 1 - p.speedup["perforated"] / p.speedup["ideal-2m"]
        got[f"{q100} / base-2m-4k speedup"] = p.speedup["perforated"] / p.speedup["base-2m-4k"]
    return got


def fig7_reading(t: pd.DataFrame) -> list[str]:
    """The paper's two numbers beside ours, where the grid has the point."""
    out = []
    p = _point(t, distribution="clustered", hole_kind="allocated", degree=0.25, portion=0.5).set_index("system")
    if {"perforated", "base-2m-4k"} <= set(p.index):
        gain = p.speedup["perforated"] / p.speedup["base-2m-4k"] - 1
        out.append(f"- portion 50%, degree 25%, clustered, allocated: perforated pages are {gain:+.1%} against "
                   f"`base-2m-4k` (paper: +59.4%).")
    p = _point(t, distribution="dispersed", hole_kind="unallocated", degree=0.9, portion=1.0).set_index("system")
    if {"perforated", "base-2m-4k", "ideal-2m"} <= set(p.index):
        below = 1 - p.speedup["perforated"] / p.speedup["ideal-2m"]
        ratio = p.speedup["perforated"] / p.speedup["base-2m-4k"]
        out.append(f"- portion 100%, degree 90%, dispersed, unallocated: {below:.1%} below `ideal-2m` (paper: "
                   f"31.2%) and {ratio:.2f}x `base-2m-4k` (paper: 2.4x).")
    if not out:
        out.append("- this variant's grid has neither of the paper's two quoted points.")
    return out


def fig7_plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    groups = list(t.groupby(["distribution", "hole_kind"], sort=True))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.4), squeeze=False)
    for ax, ((dist, kind), sub) in zip(axes[0], groups):
        for (system, degree), s in sub.groupby(["system", "degree"]):
            if system in ("base-4k", "ideal-2m") and degree != sub.degree.min():
                continue  # the scenario does not touch them
            label = system if system in ("base-4k", "ideal-2m") else f"{system}, {degree:.0%} holes"
            ax.errorbar(s.portion, s.speedup, yerr=error_bars(s, "speedup"), marker="o",
                        ls="--" if system == "base-2m-4k" else "-", label=label)
        ax.set_title(f"{dist}, {kind} holes")
        ax.set_xlabel("share of 2 MiB regions with holes (portion)")
    axes[0][0].set_ylabel("speedup over base-4k\n(cycles of base-4k / cycles)")
    legend_beside(fig)
    return write_figure(fig, path, seeds=t.seeds)


def fig8_plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    groups = list(t.groupby(["distribution", "hole_kind", "degree"], sort=True))
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 3.2), squeeze=False)
    for ax, ((dist, kind, degree), sub) in zip(axes[0], groups):
        bottom = pd.Series(0.0, index=sub.index)
        xs = [f"{p:.0%}" for p in sub.portion]
        for i, k in enumerate(SHARES):
            # Each kind's error bar at the top of its own segment.
            ax.bar(xs, sub[f"share_{k}"], bottom=bottom, yerr=error_bars(sub, f"share_{k}", hi=1), label=k,
                   color=system_color(k, i))
            bottom = bottom + sub[f"share_{k}"]
        ax.set_title(f"{dist}, {kind} holes,\n{degree:.0%} holes per region")
        ax.set_xlabel("share of 2 MiB regions\nwith holes (portion)")
        share_axis(ax)
    axes[0][0].set_ylabel("share of the valid L2 TLB entries")
    legend_beside(fig, title="entry kind")
    return write_figure(fig, path, seeds=t.seeds)


def fig7_analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = fig7_table(df)
    files, paper = write_outputs(__file__, FIG7, t, fig7_plot, fig7_measured(t), out)
    phys, fp, n = SCALES[variant][:3]
    head = f"""# {FIG7}: sensitivity to the portion and degree of fragmentation

Variant `{variant}`: the paper's machine (preset `gem5-skylake`, Table II),
{phys >> 20} MiB of memory, random loads over {fp >> 20} MiB ({n:,} measured
accesses after the first touches). `speedup` is cycles of `base-4k` over
the system's; `dtlb_l2_mpki` its page walks per thousand instructions."""
    files.append(write_up(out / f"{FIG7}.md", head, paper, t, fig7_reading(t)))
    return files


def _clustered_vs_dispersed(t: pd.DataFrame):
    """Per grid point with both distributions: (hole kind, degree, portion,
    share of lookups the filter answers with clustered holes, how many
    fewer bitmap entries clustered holes leave than dispersed ones)."""
    for (kind, degree, portion), sub in t.groupby(["hole_kind", "degree", "portion"]):
        s = sub.set_index("distribution")
        if {"clustered", "dispersed"} <= set(s.index):
            c, d = s.loc["clustered"], s.loc["dispersed"]
            total = c.bitmap_lookups + c.filter_hits
            avoided = c.filter_hits / total if total else float("nan")
            fewer = 1 - c.share_bitmap / d.share_bitmap if d.share_bitmap else float("nan")
            yield kind, degree, portion, avoided, fewer


def fig8_reading(t: pd.DataFrame) -> list[str]:
    """Clustered against dispersed holes, point by point."""
    out = [f"- {kind}, degree {degree:.0%}, portion {portion:.0%}: clustered holes let the filter answer "
           f"{avoided:.0%} of the lookups; {fewer:.0%} fewer bitmap entries than dispersed."
           for kind, degree, portion, avoided, fewer in _clustered_vs_dispersed(t)]
    return out or ["- this variant's grid has only one distribution."]


def fig8_measured(t: pd.DataFrame) -> dict[str, object]:
    """pagelab's range over the grid's points of each quantity of
    paper/pp-fig8.csv (the paper quotes one figure for its sweep)."""
    points = list(_clustered_vs_dispersed(t))

    def span(col: int) -> str:
        v = [p[col] for p in points if p[col] == p[col]]
        return f"{min(v):.2f} - {max(v):.2f} ({len(v)} points)" if v else ABSENT

    return {
        "clustered holes: share of bitmap lookups the filter answers": span(3),
        "clustered against dispersed holes: fewer bitmap entries in the L2 TLB": span(4),
    }


def fig8_analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = fig8_table(df)
    files, paper = write_outputs(__file__, FIG8, t, fig8_plot, fig8_measured(t), out)
    head = f"""# {FIG8}: the L2 TLB's contents under perforated pages

Variant `{variant}`, the runs of `{FIG7}`'s `perforated` system. Shares are
the mean share of the L2 TLB's valid entries of each kind, sampled after
every quantum of the measured accesses."""
    section = "Against the paper (clustered against dispersed holes)"
    files.append(write_up(out / f"{FIG8}.md", head, paper, t, fig8_reading(t), section=section, closing=None))
    return files


declare(FIG7, "Perforated Pages Fig. 7: speedup under fragmentation", lambda v: sweep(FIG7, v, list(SYSTEMS)),
        fig7_analyze, paper=PAPER)
declare(FIG8, "Perforated Pages Fig. 8: L2 TLB contents by kind", lambda v: sweep(FIG8, v, ["perforated"]),
        fig8_analyze, paper=PAPER)
