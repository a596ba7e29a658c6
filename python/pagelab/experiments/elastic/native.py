"""et-native and et-sizes: the paper's Figure 8 (native, no fragmentation)
and the translation sizes of the same runs, on the analogues and the
scaled Neoverse N1 of `elastic.analogues`.

Columns (the issue's):

- `et-native`: `workload, system, cycles_norm, dtlb_l2_mpki`: cycles over
  the workload's `4k` run of the same seed, and data-side L2 TLB misses per
  1000 instructions (`dtlb.l2.mpki`), measured accesses only
  (`run.skip_init`); then `seeds` and each quantity's `_std`, `_ci95`.
- `et-sizes`: `workload, system, share_4k, share_64k, share_2m, share_32m,
  share_1g, count_4k, count_64k, count_2m, count_32m, count_1g`: the
  mapped footprint at the end of each run by translation size
  (`mem.mapped.*`: bytes; a share is a size's bytes over all mapped bytes,
  a count its bytes over the size: translations, 64 KiB and 32 MiB ones
  being contiguous ranges), averaged over seeds.

Systems, as the artifact's `scripts/run-eval-base.sh` runs its columns,
with its common settings (khugepaged every 1 ms, `KHUGE_SLEEP=1000`):

- `4k` (`PGSZ=pte`): `os.policy = "base"`.
- `thp`: `os.policy = "thp"`, khugepaged on.
- `mthp` (`PGSZ=thp-mthp`): 2 MiB, else 64 KiB, else 4 KiB at fault.
- `hawkeye` (`RUN=hwk`, `MODE=hawkeye`, `env/hwk.env`): `os.policy =
  "hawkeye"`: huge pages at fault as THP (`HWK_THP=1`), kbinmanager's
  access-bit sampling and khugepaged promoting the most covered 2 MiB
  regions first (`promotion_metric = 2`, no fallback to Linux's scan).
  Its sampling window, 30 s in the artifact's kernel, and its 1 s sleep
  are scaled as Leshy's epoch is (1/1000): 30 ms and 1 ms.
- `elastic` ("ET": `UNHINTED_FAULTS=1 MODE=etonline`): greedy faults,
  online Leshy every epoch over TLB-miss samples with 70% of the L2 TLB as
  its budget (`epochs.sh`'s slack), CoalaKhugepaged promoting its hints.
- `elastic-offline` ("ET-offline": `MODE=leshy COALA_KHUGE=1`): two runs
  per point. First a profiling run (`profiler`: base pages, online Leshy
  sampling with the whole L2 TLB as budget, `generate_hints.sh`'s slack
  100, writing its placement over the whole run's samples with
  `os.elastic.leshy_hints_out`); then the measured run, hints applied at
  fault time and by CoalaKhugepaged (`os.elastic.leshy = "offline"`). The
  profiling runs are run by the experiment before its sweep
  (`Experiment.prepare`: they are stored as experiment `et-native-profile`,
  their hint files under `OUT/et-hints/`).
- `hugetlb-1g`: a HugeTLB pool of 1 GiB pages (`machine.max_order = 18`),
  in `full` only: the `quick` and `tiny` footprints (512 and 128 MiB) are
  smaller than one 1 GiB page, so the pool could back none of their VMAs
  (the scaled machine has no page that plays 1 GiB's part). In `full`,
  VMAs under 1 GiB (the stream analogue's three arrays, the bfs graph's)
  fall back to 4 KiB pages too; where no VMA holds a 1 GiB page the row is
  left out of `et-native` (`unbacked_hugetlb`).

Online Leshy's and khugepaged's clocks: the artifact's runs last minutes
with 5 s epochs; these last milliseconds of simulated time, so the epoch
is 5 ms (1/1000) and the sample period 64 (1/16 of the artifact's 1024),
so that a run gives Leshy several epochs of samples.

Timing: the interval model (pagelab's default, which the CHP package was
re-measured under), not `MEASURED_TIMING`: ET's gains are walks removed,
and whether a walk stalls the core depends on what overlaps it (GUPS's
independent updates overlap their walks; a pointer chase's cannot). The
fixed model divides every walk by one `walk_mlp` whatever the workload,
which would give dependent and independent analogues the same share of
walk cycles. The write-up gives the measured comparison.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (error_bars, legend_beside, markdown_table, mean_over_seeds, paired, pyplot, seeds,
                                        share_axis, system_color, with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.elastic import PAPER
from pagelab.experiments.elastic.analogues import ORDER, SCALE, divisor, fit, footprint, machine, workloads
from pagelab.sweep import Sweep, run_sweep

NATIVE = "et-native"
SIZES_ID = "et-sizes"
SYSTEMS = ["4k", "thp", "mthp", "hawkeye", "elastic", "elastic-offline", "hugetlb-1g"]
#: Where a profiling run's hints go, below the output directory.
HINTS_DIR = "et-hints"
#: The artifact's ET clocks, scaled (see the module's docstring).
ET_CLOCKS = {"leshy_epoch_ms": 5.0, "leshy_sample_period": 64}
#: HawkEye's kbinmanager clocks (30 s window, 1 s sleep), scaled alike.
HAWKEYE = {"name": "hawkeye", "os.policy": "hawkeye", "os.hawkeye.access_window_ms": 30.0,
           "os.hawkeye.rescan_sleep_ms": 1.0}


def systems(variant: str) -> list[dict]:
    """The grid: each system's keys (Leshy's budget is set per workload,
    from its machine, by `analogues.fit`)."""
    online = {"os.policy": "elastic", "os.elastic.leshy": "online", **_et(ET_CLOCKS)}
    return [
        {"name": "4k", "os.policy": "base"},
        {"name": "thp", "os.policy": "thp"},
        {"name": "mthp", "os.policy": "mthp"},
        HAWKEYE,
        {"name": "elastic", **online},
        {"name": "elastic-offline", "os.policy": "elastic", "os.elastic.leshy": "offline"},
    ] + ([HUGETLB_1G] if any(w["footprint"] >= 1 << 30 for w in workloads(variant)) else [])


#: Only where the footprint holds a 1 GiB page: a smaller VMA cannot be
#: mapped by one, and the run would be a 4 KiB run under another name.
HUGETLB_1G = {"name": "hugetlb-1g", "os.policy": "hugetlb", "os.hugetlb.size": "1GiB", "machine.max_order": 18}


def _et(keys: dict) -> dict:
    return {f"os.elastic.{k}": v for k, v in keys.items()}


def profiler(variant: str) -> dict:
    """The profiling run of `elastic-offline`: base pages sampled from start
    to end, the whole L2 TLB as budget; the hint file is set per point by
    `shape`. The artifact samples a 4 KiB run (`bin/sample.sh`, THP off);
    pagelab samples only under `elastic`, so here every fault takes a
    4 KiB page (a VMA-size threshold no VMA reaches) placed by CoalaPaging,
    which makes 64 KiB ranges, and CoalaKhugepaged is off, so that the
    mappings stay what they were at fault time. (Profiled under greedy ET
    instead, whose 32 MiB ranges leave few misses to sample, the tiny
    grid's hints came out empty: 4 KiB regions covered every sample.)"""
    return {"name": "elastic-profile", "os.policy": "elastic", "os.elastic.leshy": "online", **_et(ET_CLOCKS),
            "os.elastic.khugepaged": False,
            "os.elastic.vma_threshold_32m": "1024GiB"}


def hints_path(hints_dir: Path, params: dict) -> str:
    return str(Path(hints_dir).resolve() / f"{params['workload']}-seed{params.get('seed', 0)}.hints")


def shape(config: dict, params: dict, variant: str, hints_dir: Path = Path(HINTS_DIR)) -> None:
    """Scales the point's machine for its workload (`analogues.fit`) and
    points one profiling run's file to its reader, or its writer."""
    fit(config, params, variant)
    elastic = config["os"]["elastic"]
    if params.get("system") == "elastic-offline":
        elastic["hints"] = hints_path(hints_dir, params)
    elif params.get("system") == "elastic-profile":
        elastic["leshy_hints_out"] = hints_path(hints_dir, params)


def base(variant: str) -> dict:
    return {
        "machine": machine(variant),
        # khugepaged every 1 ms, as the artifact's KHUGE_SLEEP=1000 (us).
        "os": {"thp": {"scan_sleep_ms": 1.0}},
        "run": {"skip_init": True},
    }


def sweep(variant: str, exp_id: str = NATIVE) -> Sweep:
    return Sweep(id=f"{exp_id}:{variant}", base=base(variant), grid={"system": systems(variant)},
                 workloads=workloads(variant), seeds=seeds(variant), shape=functools.partial(shape, variant=variant))


def profile_sweep(variant: str, hints_dir: Path) -> Sweep:
    return Sweep(id=f"{NATIVE}-profile:{variant}", base=base(variant), grid={"system": [profiler(variant)]},
                 workloads=workloads(variant), seeds=seeds(variant),
                 shape=functools.partial(shape, variant=variant, hints_dir=hints_dir))


def prepare(main: Sweep, out: Path, run: dict) -> Sweep:
    """Runs the profiling runs of `main`'s workloads (those not stored
    yet), checks that each wrote its hints, and returns the sweep reading
    them."""
    variant = main.id.rsplit(":", 1)[1]
    hints_dir = Path(out) / HINTS_DIR
    hints_dir.mkdir(parents=True, exist_ok=True)
    spec = dataclasses.replace(profile_sweep(variant, hints_dir), seeds=main.seeds, workloads=main.workloads)
    run_profiles(spec, out, run, f"{NATIVE}-profile", lambda params: hints_path(hints_dir, params))
    return dataclasses.replace(main, shape=functools.partial(main.shape, hints_dir=hints_dir))


def run_profiles(spec: Sweep, out: Path, run: dict, experiment: str, hints_of) -> None:
    """Runs profiling sweep `spec` (stored as `experiment`) and checks that
    every point wrote the hint file `hints_of(params)` names."""
    outcome = run_sweep(spec, out, experiment=experiment, **run)
    if outcome.errors:
        raise RuntimeError(f"{len(outcome.errors)} profiling run(s) failed: {next(iter(outcome.errors.values()))}")
    missing = [p for p in (hints_of(pt.params) for pt in outcome.points) if not Path(p).exists()]
    if missing:
        raise RuntimeError(f"profiling runs stored in {outcome.store_path} but their hints are gone ({missing[0]}): "
                           f"delete the store's {experiment} runs or the output directory and run again")


def _order(t: pd.DataFrame) -> pd.DataFrame:
    t = t.assign(_w=t.workload.map({w: i for i, w in enumerate(ORDER)}), _s=t.system.map({s: i for i, s in enumerate(SYSTEMS)}))
    return t.sort_values(["_w", "_s"]).drop(columns=["_w", "_s"])


# ---- et-native ----------------------------------------------------------------

#: The artifact's fig8 (cycles over 4 KiB's): THP, ET, ET-offline (the issue).
PAPER_FIG8 = {
    "gups": (0.48, 0.43, 0.43), "hashjoin": (0.65, 0.57, 0.57), "svm": (0.71, 0.63, 0.64),
    "btree": (0.68, 0.64, 0.67), "xsbench": (0.77, 0.74, 0.77), "canneal": (0.83, 0.80, 0.81),
    "bfs": (0.91, 0.91, 0.91), "omnetpp": (0.89, 0.93, 0.89), "astar": (0.94, 0.95, 0.94),
    "streamcluster": (0.97, 0.99, 0.99),
}


def unbacked_hugetlb(df: pd.DataFrame) -> pd.Series:
    """`hugetlb-1g` runs in which no VMA held a 1 GiB page (every array of
    the analogue under 1 GiB): 4 KiB runs under another name. The
    artifact's libhugetlbfs backs the whole heap with 1 GiB pages; pagelab
    backs each VMA of at least one page, so these rows are left out of
    `et-native` (et-sizes keeps them: their 4 KiB share is the fact)."""
    return (df.system == "hugetlb-1g") & (df["mem.mapped.1g"] == 0)


def native_table(df: pd.DataFrame) -> pd.DataFrame:
    df = df[~unbacked_hugetlb(df)]
    d = pd.DataFrame({"workload": df.workload, "system": df.system, "seed": df.seed})
    d["cycles_norm"] = df.cycles / paired(df, "cycles", ["workload", "seed"], df.system == "4k")
    d["dtlb_l2_mpki"] = df["dtlb.l2.mpki"]
    t = _order(mean_over_seeds(d, ["workload", "system"]))
    return with_spread(t, ["workload", "system", "cycles_norm", "dtlb_l2_mpki"]).reset_index(drop=True)


def beside_fig8(t: pd.DataFrame) -> pd.DataFrame:
    """pagelab's THP, ET and ET-offline beside the artifact's, per workload,
    with the ET - THP gap of each."""
    s = t.set_index(["workload", "system"]).cycles_norm
    rows = []
    for w in [w for w in ORDER if w in set(t.workload)]:
        p = PAPER_FIG8[w]
        got = [s.get((w, x), float("nan")) for x in ("thp", "elastic", "elastic-offline")]
        rows.append({"workload": w, "paper_thp": p[0], "paper_et": p[1], "paper_et_offline": p[2], "thp": got[0],
                     "et": got[1], "et_offline": got[2], "gap_paper": p[1] - p[0], "gap": got[1] - got[0]})
    return pd.DataFrame(rows)


def native_measured(t: pd.DataFrame) -> dict[str, object]:
    return gap_summary(beside_fig8(t))


def gap_summary(b: pd.DataFrame) -> dict[str, object]:
    """The ET - THP gaps of a beside-the-artifact table `b` (columns
    `workload`, `gap`, `gap_paper`) and where they agree."""
    agree = (b.gap - b.gap_paper).abs() <= 0.05
    return {
        "ET - THP gap in cycles_norm, per workload": ", ".join(f"{r.workload} {r.gap:+.2f}" for r in b.itertuples()),
        "workloads whose ET - THP gap is within 0.05 of the artifact's":
            f"{int(agree.sum())} of {len(b)}" + (f" ({', '.join(b.workload[agree])})" if agree.any() else ""),
    }


def grouped_bars(ax, t: pd.DataFrame, by: str, groups: list[str], col: str = "cycles_norm", lo: float | None = 0.0) -> None:
    """`col` of table `t` as bars per workload, one per value of column
    `by` in `groups`' order, with their 95% intervals (cut at `lo`: None
    for a quantity that may be negative)."""
    ws = list(dict.fromkeys(t.workload))
    width = 0.8 / len(groups)
    for i, g in enumerate(groups):
        sub = t[t[by] == g].set_index("workload").reindex(ws)
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(ws))]
        ax.bar(xs, sub[col].fillna(0), width, yerr=error_bars(sub, col, lo=lo), label=g, color=system_color(g, i))
    ax.set_xticks(range(len(ws)), ws, rotation=20)


def cycles_figure(t: pd.DataFrame, path: Path, systems: list[str], ylabel: str, title: str) -> Path:
    """Table `t`'s cycles_norm as bars per workload, one per system of
    `systems`, against the normalizer's 1."""
    plt = pyplot()
    ws = list(dict.fromkeys(t.workload))
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(ws)), 3.6))
    grouped_bars(ax, t, "system", systems)
    ax.axhline(1.0, color="black", lw=0.6, ls=":")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend_beside(fig, title="system")
    return write_figure(fig, path, seeds=t.seeds)


def plot_native(t: pd.DataFrame, path: Path) -> Path:
    return cycles_figure(t, path, SYSTEMS, "cycles / cycles on 4 KiB pages",
                         "et-native: Neoverse N1 (scaled), native, no fragmentation")


def setup_text(variant: str, apps: list[str] | None = None) -> str:
    _, phys, n = SCALE[variant]
    apps = apps or [w["name"] for w in workloads(variant)]
    each = ", ".join(f"{a} {footprint(variant, a) / 2**20:,.0f} MiB (1/{divisor(variant, a)})" for a in apps)
    return (f"Variant `{variant}`: preset `ampere-altra` with {phys / 2**30:g} GiB of memory; each analogue over "
            f"its footprint in the artifact and on a machine (TLBs, caches, page-walk caches) both scaled by the same "
            f"1/s: {each}; {n:,} measured accesses after the first touches, the interval timing model. Analogues, "
            "scaling and systems: `pagelab/experiments/elastic/analogues.py` and `native.py`; "
            "docs/systems/elastic-results.md.")


def analyze_native(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = native_table(df)
    files, paper = write_outputs(__file__, NATIVE, t, plot_native, native_measured(t), out)
    text = f"""# {NATIVE}: the paper's Figure 8 (native, no fragmentation)

{setup_text(variant)}

## Against the artifact

{markdown_table(paper)}
{markdown_table(beside_fig8(t))}
Agreement as the issue defines it: the same ranking of systems per
workload and the ET - THP gap within 0.05 of the artifact's. Each
disagreement is discussed in docs/systems/elastic-results.md.

## The runs

{markdown_table(t)}{_unbacked_note(df)}
"""
    files.append(write_text(text, out / f"{NATIVE}.md"))
    return files


def _unbacked_note(df: pd.DataFrame) -> str:
    left_out = sorted(set(df.workload[unbacked_hugetlb(df)]), key=ORDER.index)
    if not left_out:
        return ""
    return (f"\n`hugetlb-1g` is left out for {', '.join(left_out)}: none of the analogue's arrays reaches 1 GiB, "
            "so the pool backed nothing and the run equals `4k` (`unbacked_hugetlb`).\n")


# ---- et-sizes -----------------------------------------------------------------

SIZE_BYTES = {"4k": 4 << 10, "64k": 64 << 10, "2m": 2 << 20, "32m": 32 << 20, "1g": 1 << 30}


def sizes_table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({"workload": df.workload, "system": df.system, "seed": df.seed})
    total = sum(df[f"mem.mapped.{s}"] for s in SIZE_BYTES)
    for s in SIZE_BYTES:
        d[f"share_{s}"] = df[f"mem.mapped.{s}"] / total
    for s, b in SIZE_BYTES.items():
        d[f"count_{s}"] = (df[f"mem.mapped.{s}"] // b).astype("int64")
    t = _order(mean_over_seeds(d, ["workload", "system"]))
    cols = [f"share_{s}" for s in SIZE_BYTES] + [f"count_{s}" for s in SIZE_BYTES]
    return with_spread(t, ["workload", "system"] + cols).reset_index(drop=True)


def sizes_measured(t: pd.DataFrame) -> dict[str, object]:
    et = t[t.system == "elastic"]
    return {"ET's share of the footprint in 32 MiB translations, per workload":
            ", ".join(f"{r.workload} {r.share_32m:.2f}" for r in et.itertuples())}


def plot_sizes(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    labels = [f"{r.workload}/{r.system}" for r in t.itertuples()]
    fig, ax = plt.subplots(figsize=(max(7, 0.25 * len(labels)), 4))
    bottom = pd.Series(0.0, index=t.index)
    for i, s in enumerate(SIZE_BYTES):
        ax.bar(range(len(t)), t[f"share_{s}"], bottom=bottom, label=s, color=system_color(s, i))
        bottom = bottom + t[f"share_{s}"]
    ax.set_xticks(range(len(t)), labels, rotation=90, fontsize=6)
    ax.set_xlabel("workload / system")
    share_axis(ax, "share of the mapped footprint")
    ax.set_title("et-sizes: translation sizes at the end of each run")
    legend_beside(fig, title="translation size")
    return write_figure(fig, path, seeds=t.seeds)


def analyze_sizes(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = sizes_table(df)
    files, paper = write_outputs(__file__, SIZES_ID, t, plot_sizes, sizes_measured(t), out)
    text = f"""# {SIZES_ID}: translation sizes of the mapped footprint

{setup_text(variant)} The same runs as `{NATIVE}` (the results store shares
them). A share is a size's mapped bytes over all mapped bytes at the end
of the run (`mem.mapped.*`); a count is how many translations of that
size map them (64 KiB and 32 MiB: contiguous ranges).

{markdown_table(paper)}
{markdown_table(t)}
"""
    files.append(write_text(text, out / f"{SIZES_ID}.md"))
    return files


declare(NATIVE, "Elastic Translations Fig. 8: native, no fragmentation", sweep, analyze_native, paper=PAPER,
        prepare=prepare)
declare(SIZES_ID, "Elastic Translations: translation sizes of the native runs", sweep, analyze_sizes, paper=PAPER,
        prepare=prepare)
