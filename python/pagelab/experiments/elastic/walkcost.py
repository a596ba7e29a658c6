"""et-walkcost: what a walk that THP leaves costs, and how the ET - THP gap
follows it. Not a figure of the paper: the test of `et-native`'s one
disagreement of size (docs/systems/elastic-results.md).

ET gains over THP exactly the cycles of the walks it removes. The artifact
gives both sides of that per workload (fig8's `cycles.csv` and
`tlbmisses.csv`), so the N1's cycles saved per walk removed,
(THP's cycles - ET's) / (THP's L2 TLB misses - ET's), are known: GUPS
3.6, Hashjoin 13.4, SVM 50.6, BTree 45.9, XSBench 14.1, Canneal 50.0.
This experiment measures
pagelab's on the same analogues, systems and scaled N1 as `et-native`,
with the walker's own latency beyond the walk's memory references and
its page-walk-cache lookup (`machine.walker.latency`, paid once per walk:
the L2 TLB miss's hand-over, the walker's own steps, the reply) at 0 (the
model before it had one), 34 (every preset's, an estimate from `pagelab
calibrate` on this project's machine, docs/timing.md "The walk's own
cost") and the estimate's range, 17 and 44. The N1's walker latency is
not published (neither its TRM nor a measurement found gives it), so this
is the estimate's sensitivity: on the dependent chases (BTree, Canneal),
where a walk is wholly on the critical path, the saving per walk is that
latency plus the walk's references, so the N1's figures say how much
latency the model's walk lacks, independently of the calibration; the
others then test it: GUPS's independent loads and Hashjoin's and
XSBench's independent gathers behind short dependent steps, whose saving
per walk depends on how much of the walk the window overlaps, and SVM's
gathers of `w`, each waiting for its feature node. (SVM and XSBench
joined on 2026-11-28 with their analogues; not yet run at full scale.)

Columns: `workload, walk_latency, system, cycles_norm, dtlb_l2_mpki`:
cycles over the `4k` run of the same latency and seed, and L2 TLB misses
per 1000 instructions; then `seeds` and the spread columns. Beside it,
`et-walkcost.saved.csv`: per workload and latency, the cycles saved per
walk removed and the ET - THP gap, with the artifact's.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (legend_beside, markdown_table, mean_over_seeds, paired, pyplot, seeds, with_spread,
                                        write_csv, write_figure, write_outputs, write_text)
from pagelab.experiments.elastic import PAPER
from pagelab.experiments.elastic.analogues import ORDER, workloads
from pagelab.experiments.elastic.native import base, gap_summary, grouped_bars, setup_text, shape
from pagelab.experiments.elastic.native import systems as native_systems
from pagelab.sweep import Sweep

ID = "et-walkcost"
SYSTEMS = ["4k", "thp", "elastic"]
#: The workloads whose THP runs keep walks (the others have none left).
APPS = ["gups", "hashjoin", "svm", "btree", "xsbench", "canneal"]
#: The walker's own latency in cycles (`machine.walker.latency`): none, the
#: estimate's low end, the presets' estimate, its high end.
LATENCIES = [0, 17, 34, 44]
#: The presets' `machine.walker.latency` (docs/timing.md, "The walk's own cost").
PRESETS_LATENCY = 34
#: The N1's cycles saved per walk ET removes (fig8's cycles.csv and
#: tlbmisses.csv: (THP - ET) / (THP's misses - ET's)).
PAPER_SAVED_PER_WALK = {"gups": 3.6, "hashjoin": 13.4, "svm": 50.6, "btree": 45.9, "xsbench": 14.1, "canneal": 50.0}
#: The artifact's fig8 ET - THP gap, cycles over 4 KiB's.
PAPER_GAP = {"gups": -0.05, "hashjoin": -0.08, "svm": -0.08, "btree": -0.04, "xsbench": -0.03, "canneal": -0.03}


def sweep(variant: str) -> Sweep:
    chosen = [s for s in native_systems(variant) if s["name"] in SYSTEMS]
    latency = [{"name": n, "machine.walker.latency": n} for n in LATENCIES]
    return Sweep(id=f"{ID}:{variant}", base=base(variant), grid={"walk_latency": latency, "system": chosen},
                 workloads=[w for w in workloads(variant) if w["name"] in APPS], seeds=seeds(variant),
                 shape=functools.partial(shape, variant=variant))


def table(df: pd.DataFrame) -> pd.DataFrame:
    latency = df.walk_latency.astype(int)
    d = pd.DataFrame({"workload": df.workload, "walk_latency": latency, "system": df.system, "seed": df.seed})
    by = ["workload", "walk_latency", "seed"]
    d["cycles_norm"] = df.cycles / paired(d.assign(cycles=df.cycles), "cycles", by, df.system == "4k")
    d["dtlb_l2_mpki"] = df["dtlb.l2.mpki"]
    t = mean_over_seeds(d, ["workload", "walk_latency", "system"])
    t = t.assign(_w=t.workload.map({w: i for i, w in enumerate(ORDER)}),
                 _s=t.system.map({s: i for i, s in enumerate(SYSTEMS)}))
    t = t.sort_values(["_w", "walk_latency", "_s"]).drop(columns=["_w", "_s"])
    return with_spread(t, ["workload", "walk_latency", "system", "cycles_norm", "dtlb_l2_mpki"]).reset_index(drop=True)


def saved_per_walk(df: pd.DataFrame) -> pd.DataFrame:
    """Per workload and latency: the cycles ET saves per walk it removes
    (sums over seeds, as the artifact's are sums over its run), and the
    ET - THP gap in cycles over 4 KiB's."""
    sums = df.assign(walk_latency=df.walk_latency.astype(int)).groupby(["workload", "walk_latency", "system"])[
        ["cycles", "dtlb.l2.misses"]].sum()
    rows = []
    for (w, lat), g in sums.groupby(level=[0, 1]):
        s = g.droplevel([0, 1])
        walks = s.loc["thp", "dtlb.l2.misses"] - s.loc["elastic", "dtlb.l2.misses"]
        rows.append({"workload": w, "walk_latency": lat,
                     "saved_per_walk": (s.loc["thp", "cycles"] - s.loc["elastic", "cycles"]) / walks if walks else float("nan"),
                     "paper_saved_per_walk": PAPER_SAVED_PER_WALK[w],
                     "gap": (s.loc["elastic", "cycles"] - s.loc["thp", "cycles"]) / s.loc["4k", "cycles"],
                     "gap_paper": PAPER_GAP[w]})
    b = pd.DataFrame(rows)
    return b.assign(_w=b.workload.map(ORDER.index)).sort_values(["_w", "walk_latency"]).drop(columns="_w")


def measured(df: pd.DataFrame) -> dict[str, object]:
    b = saved_per_walk(df)
    out = {}
    for lat, g in b.groupby("walk_latency"):
        out[f"cycles saved per walk removed, walk latency {lat}"] = ", ".join(
            f"{r.workload} {r.saved_per_walk:.1f}" for r in g.itertuples())
        summary = gap_summary(g)
        out[f"workloads whose ET - THP gap is within 0.05 of the artifact's, walk latency {lat}"] = summary[
            "workloads whose ET - THP gap is within 0.05 of the artifact's"]
    return out


def plot(b: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    # Cycles saved may be negative (ET slower than THP): not cut at 0.
    cycles = {n: f"{n} cycle{'s' if n != 1 else ''}" for n in LATENCIES}
    grouped_bars(ax, b.assign(walk_latency=b.walk_latency.map(cycles)), "walk_latency", list(cycles.values()),
                 col="saved_per_walk", lo=None)
    xs = range(len(dict.fromkeys(b.workload)))
    ax.scatter(xs, b.drop_duplicates("workload").paper_saved_per_walk, color="black", marker="_", s=400,
               label="Neoverse N1 (artifact)", zorder=3)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_ylabel("cycles saved per walk ET removes")
    ax.set_title("et-walkcost: by the walker's own latency (machine.walker.latency)")
    legend_beside(fig, title="walker latency")
    return write_figure(fig, path, note="Cycles and walks are summed over the seeds before the ratio, as the "
                                        "artifact's are sums over its run: no interval.")


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    b = saved_per_walk(df)
    files, paper = write_outputs(__file__, ID, t, lambda _t, path: plot(b, path), measured(df), out)
    files.append(write_csv(b, out / f"{ID}.saved.csv"))
    text = f"""# {ID}: what a walk THP leaves costs, by the walker's own latency

{setup_text(variant, [w for w in APPS if w in set(t.workload)])} `machine.walker.latency` (the walker's
own latency beyond the walk's references and its page-walk-cache lookup) at
{", ".join(map(str, LATENCIES))} cycles; the preset has 34 (an estimate).

## Against the artifact

{markdown_table(paper)}
{markdown_table(b)}
## The runs

{markdown_table(t)}
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


declare(ID, "Elastic Translations: the cost of THP's walks, by the walker's latency", sweep, analyze, paper=PAPER)
