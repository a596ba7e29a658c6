"""Colored Huge Pages under fragmentation: the paper's Fig. 5 and Fig. 6.

The machine is fragmented to F_i (`os.fragmentation.target`: unmovable
pages pinned in random free pageblocks) before the workload alone faults
its whole footprint in; the success ratio is `os.chp.success_ratio`, the
2 MiB regions backed by colored huge pages over the regions attempted. THP
runs beside it on the same machines (`thp_success` = THP faults over THP
faults plus fallbacks) and the expected critical threshold for THP, 1 -
footprint / memory, is marked.

- `chp-fig5`: `workload, frag_index, success_ratio` for mcf and bfs, plus
  `colors` (`table3`: the workload's 5 colors of 8, as in the performance
  runs; `all`: every color), `thp_success` and `critical_fi`, then
  `share_leftovers` (`os.chp.share_leftovers`: the allocator cache's
  leftovers of colors the workload may not use offered to the color pool)
  and `co_runner` (the footprint, as a share of memory, of a 4 KiB colored
  process on the other 3 colors faulting beside the workload: the
  leftovers' size, 3/5 of the workload's; 0 = alone). The table3 curve is
  measured with the option off and on, alone and with that co-runner.
- `chp-fig6`: `submappings, frag_index, success_ratio` for bfs with 1, 2,
  4 and 8 sub-mappings (8 system colors: blocks of 2, 4, 8 and 16 MiB).

Success ratios are means over seeds (each seed fragments the machine
anew: `run.seed` chooses the pageblocks), followed by `seeds` and each
ratio's `<col>_std` and `<col>_ci95` (`common.mean_over_seeds`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.chp import PAPER
from pagelab.experiments.chp.common import (APPS, PAPER_MEM, USED_COLORS, app_colors, app_workload, base_config, footprint,
                                           labels)
from pagelab.experiments.common import (GIB, MIB, PALETTE, beside_paper, error_bars, legend_beside, markdown_table, mean_over_seeds, paired,
                                        pyplot, seeds, share_axis, with_spread, write_csv, write_figure,
                                        write_text)
from pagelab.sweep import Sweep

#: variant -> (phys_mem, targets)
SCALES = {
    "full": (16 * GIB, [round(0.05 * i, 2) for i in range(20)]),  # 0 to 0.95
    "quick": (GIB, [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]),
    "tiny": (256 * MIB, [0.0, 0.6, 0.9]),
}
#: The run after the first-touch pass: a token number of accesses.
ACCESSES = 1000


#: (policy, colors, os.chp.share_leftovers, co-runner) per case; THP
#: ignores colors, so it runs once. With all colors nothing is left over.
CASES = {
    "chp/table3": ("chp", "table3", False, False),
    "chp/all": ("chp", "all", False, False),
    "thp": ("thp", "", False, False),
    "chp/table3/share": ("chp", "table3", True, False),
    "chp/table3/co-runner": ("chp", "table3", False, True),
    "chp/table3/co-runner/share": ("chp", "table3", True, True),
}


def co_runner_bytes(app: str, phys_mem: int) -> int:
    """The co-runner's footprint: the leftovers of the workload's blocks,
    (8 - k) / k of its footprint, in whole 4 KiB pages."""
    k = len(app_colors(app))
    return footprint(app, phys_mem) * (USED_COLORS - k) // k // 4096 * 4096


def shape_fig5(config: dict, params: dict) -> None:
    policy, colors, share, co_runner = CASES[params["case"]]
    config["os"]["policy"] = policy
    app = config["workload"]
    if colors == "table3":
        app["colors"] = app_colors(params["workload"])
    elif colors == "all":
        app["colors"] = list(range(USED_COLORS))
    if share:
        config["os"].setdefault("chp", {})["share_leftovers"] = True
    if co_runner:
        # A 4 KiB colored process on the colors the workload lacks, faulting
        # beside it (cores interleave), as the paper's PALLOC-colored others.
        theirs = [c for c in range(USED_COLORS) if c not in app["colors"]]
        phys = config["machine"]["phys_mem"]
        other = {"name": "other", "kind": "gups", "footprint": co_runner_bytes(params["workload"], phys),
                 "accesses": ACCESSES, "init": "pages", "chp": False, "colors": theirs}
        config["workloads"] = [config.pop("workload"), other]


def sweep_fig5(variant: str) -> Sweep:
    phys, targets = SCALES[variant]
    return Sweep(
        id=f"chp-fig5:{variant}",
        base=base_config(phys, skip_init=False),  # the faults are what is measured
        grid={"case": labels(list(CASES)), "os.fragmentation.target": targets},
        workloads=[app_workload(a, phys, ACCESSES) for a in ("mcf", "bfs")],
        seeds=seeds(variant),
        shape=shape_fig5,
    )


def sweep_fig6(variant: str) -> Sweep:
    phys, targets = SCALES[variant]
    return Sweep(
        id=f"chp-fig6:{variant}",
        base=base_config(phys, policy="chp", skip_init=False),
        grid={"os.chp.submappings": [1, 2, 4, 8], "os.fragmentation.target": targets},
        workloads=[app_workload("bfs", phys, ACCESSES, colors=app_colors("bfs"))],
        seeds=seeds(variant),
    )


def critical(app: str) -> float:
    return 1 - APPS[app][1] / PAPER_MEM


def thp_success(df: pd.DataFrame) -> pd.Series:
    thp = df["os.faults.thp"]
    return thp / (thp + df["os.thp.fault_fallback"]).clip(lower=1)


def held_up_to(g: pd.DataFrame, col: str, good: float = 0.99) -> float:
    """The largest F_i up to which every success ratio of `col` is at
    least `good` (NaN when even the lowest F_i measured falls short)."""
    g = g.sort_values("frag_index")
    held = g.frag_index[(g[col] >= good).cummin()]
    return held.max() if len(held) else float("nan")


def _success_at(t: pd.DataFrame, submappings: int, fi: float) -> str:
    """bfs's success ratio with `submappings` at the measured F_i nearest `fi`."""
    g = t[t.submappings == submappings]
    if g.empty:
        return ""
    row = g.iloc[(g.frag_index - fi).abs().argmin()]
    return f"{row.success_ratio:.3f}" + ("" if abs(row.frag_index - fi) < 1e-9 else f" (at F_i = {row.frag_index:g})")


#: The columns that tell one CHP curve of chp-fig5 from another.
CURVE = ["workload", "colors", "share_leftovers", "co_runner"]


def _curve_name(colors: str, shared: bool, co_runner: float) -> str:
    """A curve's name: its colors, then `shared` and `+ co-runner` when set."""
    return colors + (", shared" if shared else "") + (" + co-runner" if co_runner else "")


def _held_reading(t: pd.DataFrame, good: float = 0.99) -> str:
    """What the rows show: per workload and color set, the largest F_i up to
    which every success ratio is at least `good`, CHP's and THP's."""
    parts = []
    for (workload, colors, shared, co_runner), g in t.groupby(CURVE, sort=False):
        g = g.sort_values("frag_index")
        colors = _curve_name(colors, shared, co_runner)
        for name, col in (("CHP", "success_ratio"), ("THP", "thp_success")):
            ok = (g[col] >= good).cummin()
            held = g.frag_index[ok]
            where = f"F_i = {held.max():g}" if len(held) else f"no F_i measured (lowest {g.frag_index.min():g})"
            parts.append(f"{workload}, colors {colors}, {name}: success >= {good:g} up to {where}")
    return "; ".join(parts) + "." if parts else "no rows."


def analyze_fig5(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    df = df.assign(policy=df.case.map(lambda c: CASES[c][0]), colors=df.case.map(lambda c: CASES[c][1]))
    phys = SCALES[variant][0]
    co_runner = [CASES[c][3] and co_runner_bytes(w, phys) / phys for c, w in zip(df.case, df.workload)]
    d = pd.DataFrame(
        {
            "workload": df.workload,
            "policy": df.policy,
            "colors": df.colors,
            "share_leftovers": df.case.map(lambda c: CASES[c][2]),
            "co_runner": [round(float(x), 3) for x in co_runner],
            "frag_index": df["os.fragmentation.target"].astype(float),
            "success": df["os.chp.success_ratio"].where(df.policy == "chp", thp_success(df)),
            "seed": df.seed,
        }
    )
    # THP's run on the same machine: same workload, F_i and seed.
    d["thp_success"] = paired(d, "success", ["workload", "frag_index", "seed"], d.policy == "thp")
    chp = d[d.policy == "chp"].rename(columns={"success": "success_ratio"}).drop(columns="policy")
    chp = mean_over_seeds(chp, CURVE + ["frag_index"])
    chp["critical_fi"] = chp.workload.map(critical)
    chp = chp.sort_values(CURVE + ["frag_index"], ascending=[False, False, True, True, True]).reset_index(drop=True)
    t = with_spread(chp, ["workload", "frag_index", "success_ratio", "colors", "thp_success", "critical_fi",
                          "share_leftovers", "co_runner"])
    curves = t.assign(curve=[_curve_name(*k) for k in zip(t.colors, t.share_leftovers, t.co_runner)])
    files = [write_csv(t, out / "chp-fig5.csv"), _plot(curves, "curve", out / "chp-fig5.png", "chp-fig5: success ratio vs F_i")]
    share = {app: APPS[app][1] / PAPER_MEM for app in ("mcf", "bfs")}
    blocks = {app: USED_COLORS / len(app_colors(app)) for app in share}
    expected = {app: 1 - blocks[app] * share[app] for app in share}
    # The paper's curve: the workload alone, its leftovers kept (as measured before the option).
    table3 = t[(t.colors == "table3") & ~t.share_leftovers & (t.co_runner == 0)]
    paper, path = beside_paper(__file__, "chp-fig5", {
        **{f"{w}: THP succeeds up to F_i": held_up_to(t[t.workload == w].drop_duplicates("frag_index"), "thp_success")
           for w in ("mcf", "bfs")},
        **{f"{w}, its 5 colors: CHP near-perfect up to F_i": held_up_to(table3[table3.workload == w], "success_ratio")
           for w in ("mcf", "bfs")},
    }, out)
    files.append(path)
    text = f"""# chp-fig5: colored-huge-page allocation success under fragmentation

Variant `{variant}`: {SCALES[variant][0] / GIB:g} GiB i7-10700, 8 system colors (bits 12-14), mcf
({share['mcf']:.0%} of memory) and bfs ({share['bfs']:.0%}) faulting their whole footprint on a machine
fragmented to F_i. `colors = table3`: the workload's 5 colors, as in the
performance runs; `all`: all 8. `thp_success`: THP on the same machine.

"Up to F_i" is the largest F_i up to which every success ratio is at
least 0.99. The paper also says CHP degrades before THP, "as much as 10%
earlier for bfs".

{markdown_table(paper)}
{markdown_table(t)}
Reading: a sub-mapping takes the pages of one color from a 2 MiB block and
leaves the others in the allocator cache. With all 8 colors a process uses
every leftover, so CHP needs as many free 2 MiB blocks as THP; with k of 8
it takes 8/k blocks per 2 MiB of footprint ({blocks['bfs']:.2g} for {len(app_colors('bfs'))} colors), and its
threshold moves to about 1 - {blocks['bfs']:.2g} x footprint ({expected['mcf']:.2f} for mcf, {expected['bfs']:.2f} for bfs).

`shared` offers the leftovers of the 3 colors the workload may not use to
the color pool (`os.chp.share_leftovers`); `+ co-runner` adds a 4 KiB
colored process on those 3 colors whose footprint is the leftovers' size
({co_runner_bytes('bfs', phys) / phys:.0%} of memory beside bfs). Offering the leftovers frees no 2 MiB block:
the workload still takes 8/k blocks per 2 MiB, so its own threshold stays;
what moves is where the co-runner's pages come from (the leftovers instead
of the buddy allocator).

In these rows: {_held_reading(t)}
"""
    files.append(write_text(text, out / "chp-fig5.md"))
    return files


def analyze_fig6(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    d = pd.DataFrame(
        {
            "submappings": df["os.chp.submappings"].astype(int),
            "frag_index": df["os.fragmentation.target"].astype(float),
            "seed": df.seed,
            "success_ratio": df["os.chp.success_ratio"],
        }
    )
    t = mean_over_seeds(d, ["submappings", "frag_index"]).sort_values(["submappings", "frag_index"])
    t["critical_fi"] = critical("bfs")
    t = with_spread(t, ["submappings", "frag_index", "success_ratio", "critical_fi"]).reset_index(drop=True)
    files = [write_csv(t, out / "chp-fig6.csv"), _plot(t.assign(workload="bfs"), "submappings", out / "chp-fig6.png", "chp-fig6: bfs, sub-mappings")]
    paper, path = beside_paper(__file__, "chp-fig6", {
        "8 sub-mappings: success at F_i = 0.58": _success_at(t, 8, 0.58),
        "4 sub-mappings: success at F_i = 0.58": _success_at(t, 4, 0.58),
        "1 sub-mapping: success at F_i = 0.58": _success_at(t, 1, 0.58),
        "1 sub-mapping: success at F_i = 0.75": _success_at(t, 1, 0.75),
        "8 sub-mappings: success at F_i = 0.75": _success_at(t, 8, 0.75),
    }, out)
    files.append(path)
    text = f"""# chp-fig6: sub-mappings per colored huge page under fragmentation

Variant `{variant}`: bfs with its 5 of 8 colors, 1, 2, 4 or 8 sub-mappings
(one sub-mapping = Scattered Superpages: a strided run over a 16 MiB block
of contiguous huge pages). {SCALES[variant][0] / GIB:g} GiB machine.

{markdown_table(paper)}
{markdown_table(t)}"""
    files.append(write_text(text, out / "chp-fig6.md"))
    return files


def _plot(t: pd.DataFrame, series: str, path: Path, title: str) -> Path:
    plt = pyplot()
    workloads = list(dict.fromkeys(t.workload))
    fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 3.4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        sub = t[t.workload == w]
        for key, g in sub.groupby(series, sort=False):
            ax.errorbar(g.frag_index, g.success_ratio, yerr=error_bars(g, "success_ratio", hi=1), marker="o",
                        label=f"CHP, {series} = {key}")
        if "thp_success" in sub:
            g = sub.drop_duplicates("frag_index")
            ax.errorbar(g.frag_index, g.thp_success, yerr=error_bars(g, "thp_success", hi=1), ls="--",
                        color=PALETTE["grey"], label="THP")
        ax.axvline(critical(w), color="black", lw=0.7, ls=":", label="THP's critical F_i (1 - footprint/memory)")
        ax.set_xlabel("F_i: share of memory free 2 MiB\nblocks cannot back")
        share_axis(ax, "success ratio: 2 MiB regions\nbacked by huge pages")
        ax.set_title(w)
    legend_beside(fig)
    fig.suptitle(title)
    return write_figure(fig, path, seeds=t.seeds)


declare("chp-fig5", "CHP Fig. 5: success ratio vs fragmentation (mcf, bfs)", sweep_fig5, analyze_fig5, PAPER)
declare("chp-fig6", "CHP Fig. 6: success ratio vs fragmentation by sub-mappings (bfs)", sweep_fig6, analyze_fig6, PAPER)
