"""et-hints: Leshy's source of observations, TLB-miss sampling against
access-bit tracking, as the artifact compares them (its Figure 13:
`run-eval-base.sh`, `MODE=leshy ACCESSBIT=1` beside `MODE=leshy`), on the
analogues and the scaled Neoverse N1 of `elastic.analogues`.

Columns (the issue's): `workload, source, cycles_norm, share_32m`: cycles
over the workload's `4k` run of the same seed (as `et-native`), and the
share of the mapped footprint in 32 MiB translations at the end of the run
(`mem.mapped.32m` over all mapped bytes, as `et-sizes`); then `seeds` and
each quantity's `_std`, `_ci95`.

Each `source` is ET-offline (`et-native`'s `elastic-offline`: hints
applied at fault time and by CoalaKhugepaged) reading the hints of a
profiling run (`native.profiler`: 4 KiB faults, the whole L2 TLB as
budget, the placement over the whole run) whose Leshy observed with:

- `tlb-miss`: `os.elastic.leshy = "online"`, one L2 TLB miss in
  `leshy_sample_period` sampled, as Arm's SPE gives them (the artifact's
  `hints/NAME.hints`; these are `et-native`'s profiling runs, their files
  shared under `OUT/et-hints/`);
- `access-bit`: `os.elastic.leshy = "access-bit"`, each epoch the accessed
  bits of every present leaf, counted per 4 KiB page and cleared, as the
  artifact's `idle` tool reads them (`hints/NAME.accessbit.hints`; files
  under `OUT/et-hints-access-bit/`).

Why offline: with online Leshy the faults stay greedy, and on unfragmented
memory greedy ET maps every large VMA with 32 MiB ranges at fault time,
whatever Leshy later hints; measured on the tiny grid (gups, canneal,
streamcluster), the two online sources gave the same cycles to the last
digit. Offline hints decide the faults, so the source shows.

The artifact's own hint files are the paper side: how much memory each
source hints at 32 MiB (`paper/et-hints.csv`); the slides show the cycles
in a figure without values.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (legend_beside, markdown_table, mean_over_seeds, paired, pyplot, seeds, share_axis,
                                        with_spread, write_figure, write_outputs, write_text)
from pagelab.experiments.elastic import PAPER, native
from pagelab.experiments.elastic.analogues import ORDER, fit, workloads
from pagelab.sweep import Sweep

HINTS = "et-hints"
#: Leshy's sources: the name in the table -> the profiling run's `os.elastic.leshy`.
SOURCES = {"tlb-miss": "online", "access-bit": "access-bit"}
#: Where each source's profiling runs write their hints, below the output
#: directory (TLB-miss's are et-native's own).
SOURCE_DIRS = {"tlb-miss": native.HINTS_DIR, "access-bit": f"{native.HINTS_DIR}-access-bit"}


def runs(variant: str) -> list[dict]:
    """The 4 KiB normalizer, then ET-offline once per source."""
    by_name = {s["name"]: s for s in native.systems(variant)}
    return [by_name["4k"]] + [{**by_name["elastic-offline"], "name": source} for source in SOURCES]


def profilers(variant: str) -> list[dict]:
    return [{**native.profiler(variant), "name": source, "os.elastic.leshy": mode} for source, mode in SOURCES.items()]


def _hints_file(out: Path, params: dict) -> str:
    return native.hints_path(Path(out) / SOURCE_DIRS[params["source"]], params)


def _shape(config: dict, params: dict, variant: str, out: Path, key: str) -> None:
    """Scales the point's machine for its workload (`analogues.fit`) and
    points a source's run at its hint file: `hints` to read it,
    `leshy_hints_out` to write it."""
    fit(config, params, variant)
    if params.get("source") in SOURCES:
        config.setdefault("os", {}).setdefault("elastic", {})[key] = _hints_file(out, params)


def sweep(variant: str) -> Sweep:
    return Sweep(id=f"{HINTS}:{variant}", base=native.base(variant), grid={"source": runs(variant)},
                 workloads=workloads(variant), seeds=seeds(variant),
                 shape=functools.partial(_shape, variant=variant, out=Path("."), key="hints"))


def prepare(main: Sweep, out: Path, run: dict) -> Sweep:
    """Runs both sources' profiling runs of `main`'s workloads (those not
    stored yet) and returns the sweep reading their hints."""
    variant = main.id.rsplit(":", 1)[1]
    for d in SOURCE_DIRS.values():
        (Path(out) / d).mkdir(parents=True, exist_ok=True)
    spec = Sweep(id=f"{HINTS}-profile:{variant}", base=native.base(variant), grid={"source": profilers(variant)},
                 workloads=main.workloads, seeds=main.seeds,
                 shape=functools.partial(_shape, variant=variant, out=Path(out), key="leshy_hints_out"))
    native.run_profiles(spec, out, run, f"{HINTS}-profile", functools.partial(_hints_file, out))
    return dataclasses.replace(main, shape=functools.partial(_shape, variant=variant, out=Path(out), key="hints"))


def hints_table(df: pd.DataFrame) -> pd.DataFrame:
    d = pd.DataFrame({"workload": df.workload, "source": df.source, "seed": df.seed})
    d["cycles_norm"] = df.cycles / paired(df, "cycles", ["workload", "seed"], df.source == "4k")
    d["share_32m"] = df["mem.mapped.32m"] / sum(df[f"mem.mapped.{s}"] for s in native.SIZE_BYTES)
    d = d[d.source != "4k"]
    t = d.assign(_w=d.workload.map({w: i for i, w in enumerate(ORDER)}), _s=d.source.map(list(SOURCES).index))
    t = mean_over_seeds(t.sort_values(["_w", "_s"]).drop(columns=["_w", "_s"]), ["workload", "source"])
    return with_spread(t, ["workload", "source", "cycles_norm", "share_32m"]).reset_index(drop=True)


def hints_measured(t: pd.DataFrame) -> dict[str, object]:
    s = t.set_index(["workload", "source"])
    ws = list(dict.fromkeys(t.workload))
    return {
        "share of the footprint in 32 MiB translations, TLB-miss -> access-bit, per workload":
            ", ".join(f"{w} {s.share_32m[(w, 'tlb-miss')]:.2f} -> {s.share_32m[(w, 'access-bit')]:.2f}" for w in ws),
        "access-bit's cycles over TLB-miss sampling's, per workload":
            ", ".join(f"{w} {s.cycles_norm[(w, 'access-bit')] / s.cycles_norm[(w, 'tlb-miss')]:.2f}" for w in ws),
    }


def plot_hints(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(max(9, 1.4 * t.workload.nunique()), 3.6))
    for ax, col, label in [(axes[0], "cycles_norm", "cycles / cycles on 4 KiB pages"),
                           (axes[1], "share_32m", "share of the footprint\nin 32 MiB translations")]:
        native.grouped_bars(ax, t, "source", list(SOURCES), col)
        ax.set_ylabel(label)
    share_axis(axes[1])
    legend_beside(fig, title="hints from")
    fig.suptitle("et-hints: ET-offline with hints from TLB-miss sampling or access bits")
    return write_figure(fig, path, seeds=t.seeds)


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = hints_table(df)
    files, paper = write_outputs(__file__, HINTS, t, plot_hints, hints_measured(t), out)
    text = f"""# {HINTS}: Leshy's source, TLB-miss sampling against access-bit tracking

{native.setup_text(variant)} ET-offline reading the hints of a profiling run whose Leshy
sampled TLB misses (`os.elastic.leshy = "online"`) or read accessed bits (`"access-bit"`), as
the artifact's Figure 13; cycles over the 4 KiB run. The artifact's hint files are the paper
side below; the sources: `pagelab/experiments/elastic/hints.py`.

{markdown_table(paper)}
{markdown_table(t)}
"""
    files.append(write_text(text, out / f"{HINTS}.md"))
    return files


declare(HINTS, "Elastic Translations: Leshy's TLB-miss sampling against access-bit tracking", sweep, analyze,
        paper=PAPER, prepare=prepare)
