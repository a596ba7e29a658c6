"""et-frag: the paper's Figure 11 (native, fragmented memory), on the
analogues and the scaled Neoverse N1 of `elastic.analogues`.

Columns (the issue's): `workload, fmfi, system, cycles_norm, share_2m`:
cycles over the `4k` run of the same workload, FMFI and seed (the
artifact's `scripts/plots/fig11/create-csv.py` reads each FMFI's own
4 KiB run, `results/host/eval/frag{50,99}/*.4KB.base`, and
`plot-frag.py` divides by it), and the share of the mapped footprint in
2 MiB pages at the end of the run (`mem.mapped.2m` over all mapped bytes,
as `et-sizes`); then `seeds` and each quantity's `_std`, `_ci95`.

**Fragmentation** is `os.fragmentation.fmfi` (docs/configuration.md):
memfrag's fill and release, with frag.sh's settings (FMFI at order 9,
512 KiB and 32 MiB chunks, the target scaled to the footprint except 99).
frag.sh releases each benchmark's footprint plus its page cache
(`FRAG_RELEASE`); the analogues read no files, so they release their
footprint. Its `FRAG_SLACK` (1 GiB, memory memfrag leaves free) is scaled
with the workload's footprint and machine, 1 GiB / s (`analogues.py`:
s is the workload's divisor), so that the slack keeps its ratio to the
footprint, and THP finds 2 MiB pages at 99% only in the slack. What this
scaling cannot keep: the artifact's 1 GiB slack holds 32 free 32 MiB
blocks, the scaled one (32 MiB at s = 32, 8 MiB at s = 128) one or none,
so at 99% ET has almost no 32 MiB range to make
(docs/systems/elastic-results.md measures what that costs it).

**Workloads**: the analogues of fig11's six: BFS, Canneal, XSBench,
BTree, SVM, Hashjoin (`analogues.py`). `tiny` runs Canneal and Hashjoin
over 128 MiB.

**Systems**, fig11's columns (`FRAG_SYSTEMS`, one list: a system built
later joins it there), as `et-native` runs them (`native.systems`): `4k`
(the normalizer), `thp`, `hawkeye` (not a fig11 column: the slides
compare Leshy's 2 MiB memory with HawkEye's under fragmentation),
`elastic` (ET: online Leshy) and `elastic-offline` (ET-offline). ET-offline's hints are the unfragmented
profiling runs of `et-native` (`native.prepare`, stored as
`et-native-profile`, shared with `et-native` when both run into one
output directory): the artifact keeps one hint file per benchmark
(`hints/*.hints`) for all its figures, and its fig11 ET-offline cycles of
BFS and Canneal are the same number at 50% and 99%.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, legend_beside, markdown_table, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.elastic import PAPER, native
from pagelab.experiments.elastic.analogues import SCALE, divisor, footprint, workload
from pagelab.sweep import Sweep

FRAG = "et-frag"
#: fig11's columns, the normalizer first.
FRAG_SYSTEMS = ["4k", "thp", "hawkeye", "elastic", "elastic-offline"]
#: fig11's FMFI targets (`run-eval-base.sh`: FRAG_TARGET=50 and 99).
FMFIS = [0.5, 0.99]
#: fig11's workloads, in its order.
FRAG_APPS = ["bfs", "canneal", "xsbench", "btree", "svm", "hashjoin"]
TINY_APPS = ["canneal", "hashjoin"]
#: frag.sh's FRAG_SLACK, before scaling.
FRAG_SLACK = 1 * GIB

#: The artifact's fig11 (cycles over 4 KiB's at the same FMFI: THP, ET,
#: ET-offline), from `scripts/plots/fig11/cycles-{50,99}.csv` (branch `plots`).
PAPER_FIG11 = {
    (0.5, "bfs"): (0.970, 0.923, 0.902), (0.5, "canneal"): (0.831, 0.812, 0.809),
    (0.5, "xsbench"): (1.001, 0.844, 0.773), (0.5, "btree"): (0.702, 0.703, 0.667),
    (0.5, "svm"): (0.780, 0.691, 0.655), (0.5, "hashjoin"): (0.882, 0.818, 0.607),
    (0.99, "bfs"): (1.013, 0.938, 0.905), (0.99, "canneal"): (0.845, 0.822, 0.807),
    (0.99, "xsbench"): (1.013, 0.861, 0.782), (0.99, "btree"): (0.745, 0.743, 0.692),
    (0.99, "svm"): (0.832, 0.779, 0.699), (0.99, "hashjoin"): (1.002, 0.897, 0.872),
}


def frag_apps(variant: str) -> list[str]:
    return TINY_APPS if variant == "tiny" else FRAG_APPS


def frag_workloads(variant: str) -> list[dict]:
    n = SCALE[variant][2]
    return [workload(a, footprint(variant, a), n) for a in frag_apps(variant)]


def frag_systems(variant: str) -> list[dict]:
    return [s for s in native.systems(variant) if s["name"] in FRAG_SYSTEMS]


def slack(variant: str, app: str) -> int:
    """frag.sh's slack over the workload's scale divisor, in whole MiB."""
    return FRAG_SLACK // divisor(variant, app) // MIB * MIB


def shape(config: dict, params: dict, variant: str, **hints) -> None:
    """`native.shape`, and the slack of the point's workload."""
    native.shape(config, params, variant, **hints)
    config["os"].setdefault("fragmentation", {})["fmfi_slack"] = f"{slack(variant, params['workload']) // MIB}MiB"


def sweep(variant: str) -> Sweep:
    fmfi = [{"name": f, "os.fragmentation.fmfi": f} for f in FMFIS]
    return Sweep(id=f"{FRAG}:{variant}", base=native.base(variant), grid={"fmfi": fmfi, "system": frag_systems(variant)},
                 workloads=frag_workloads(variant), seeds=seeds(variant), shape=functools.partial(shape, variant=variant))


def _order(t: pd.DataFrame) -> pd.DataFrame:
    rank = {"_w": (t.workload, FRAG_APPS), "_s": (t.system, FRAG_SYSTEMS)}
    t = t.assign(**{k: col.map({v: i for i, v in enumerate(order)}) for k, (col, order) in rank.items()})
    return t.sort_values(["fmfi", "_w", "_s"]).drop(columns=list(rank))


def frag_table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({"workload": df.workload, "fmfi": df.fmfi, "system": df.system, "seed": df.seed})
    d["cycles_norm"] = df.cycles / paired(df, "cycles", ["workload", "fmfi", "seed"], df.system == "4k")
    d["share_2m"] = df["mem.mapped.2m"] / sum(df[f"mem.mapped.{s}"] for s in native.SIZE_BYTES)
    t = _order(mean_over_seeds(d, ["workload", "fmfi", "system"]))
    return with_spread(t, ["workload", "fmfi", "system", "cycles_norm", "share_2m"]).reset_index(drop=True)


def beside_fig11(t: pd.DataFrame) -> pd.DataFrame:
    """pagelab's THP, ET and ET-offline beside the artifact's, per FMFI and
    workload, with the ET - THP gap of each."""
    s = t.set_index(["fmfi", "workload", "system"]).cycles_norm
    rows = []
    for f in FMFIS:
        for w in [w for w in FRAG_APPS if w in set(t.workload)]:
            p = PAPER_FIG11[(f, w)]
            got = [s.get((f, w, x), float("nan")) for x in ("thp", "elastic", "elastic-offline")]
            rows.append({"fmfi": f, "workload": w, "paper_thp": p[0], "paper_et": p[1], "paper_et_offline": p[2],
                         "thp": got[0], "et": got[1], "et_offline": got[2], "gap_paper": p[1] - p[0],
                         "gap": got[1] - got[0]})
    return pd.DataFrame(rows)


def _per_workload(rows: pd.DataFrame, col: str, fmt: str = "{:+.2f}") -> str:
    return ", ".join(f"{r.workload} {fmt.format(getattr(r, col))}" for r in rows.itertuples())


def frag_measured(t: pd.DataFrame) -> dict[str, object]:
    b = beside_fig11(t)
    at99 = b[b.fmfi == 0.99]
    agree = (at99.gap - at99.gap_paper).abs() <= 0.05
    share = t.set_index(["fmfi", "workload", "system"]).share_2m
    thp = t[(t.system == "thp")]
    return {
        "ET - THP gap in cycles_norm at FMFI 0.99, per workload": _per_workload(at99, "gap"),
        "workloads whose ET - THP gap at FMFI 0.99 is within 0.05 of the artifact's":
            f"{int(agree.sum())} of {len(at99)}" + (f" ({', '.join(at99.workload[agree])})" if agree.any() else ""),
        "ET-offline's cycles over THP's at FMFI 0.99, mean over the workloads":
            f"{(at99.et_offline / at99.thp).mean():.2f}",
        "THP's share of the footprint in 2 MiB pages, FMFI 0.5 -> 0.99, per workload":
            ", ".join(f"{w} {share.get((0.5, w, 'thp'), float('nan')):.2f} -> {share.get((0.99, w, 'thp'), float('nan')):.2f}"
                      for w in dict.fromkeys(thp.workload)),
        "ET's 2 MiB memory over HawkEye's at FMFI 0.99, per workload":
            ", ".join(f"{w} {_ratio(share, (0.99, w, 'elastic'), (0.99, w, 'hawkeye'))}"
                      for w in dict.fromkeys(thp.workload)),
    }


def _ratio(share: pd.Series, top: tuple, bottom: tuple) -> str:
    """share[top] / share[bottom], or "n/a" where either is missing or the
    bottom is 0."""
    a, b = share.get(top, float("nan")), share.get(bottom, float("nan"))
    return f"{a / b:.2f}" if b == b and a == a and b > 0 else "n/a"


def plot_frag(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(FMFIS), figsize=(11, 3.6), sharey=True)
    for ax, f in zip(axes, FMFIS):
        native.grouped_bars(ax, t[t.fmfi == f], "system", [s for s in FRAG_SYSTEMS if s != "4k"])
        ax.axhline(1.0, color="black", lw=0.6, ls=":")
        ax.set_title(f"FMFI {f:.0%} (free memory fragmentation index)")
    axes[0].set_ylabel("cycles / cycles on 4 KiB pages")
    legend_beside(fig, title="system")
    fig.suptitle("et-frag: Neoverse N1 (scaled), native, fragmented memory")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = frag_table(df)
    files, paper = write_outputs(__file__, FRAG, t, plot_frag, frag_measured(t), out)
    text = f"""# {FRAG}: the paper's Figure 11 (native, fragmented memory)

{native.setup_text(variant, frag_apps(variant))} Memory fragmented at boot to FMFI
{' and '.join(f'{f:.0%}' for f in FMFIS)} as the artifact's frag.sh and memfrag do
(`os.fragmentation.fmfi`; the slack frag.sh's 1 GiB over each workload's divisor:
{', '.join(f'{a} {slack(variant, a) / 2**20:g} MiB' for a in frag_apps(variant))}). Cycles over the 4 KiB run at the same FMFI, as the artifact's fig11.
The fragmentation and the systems: `pagelab/experiments/elastic/frag.py`.

## Against the artifact

{markdown_table(paper)}
{markdown_table(beside_fig11(t))}
## The runs

{markdown_table(t)}
"""
    files.append(write_text(text, out / f"{FRAG}.md"))
    return files


declare(FRAG, "Elastic Translations Fig. 11: native, fragmented memory (FMFI 50% and 99%)", sweep, analyze,
        paper=PAPER, prepare=native.prepare)
