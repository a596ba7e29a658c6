"""Experiments: named, declared sweeps plus the code that turns their runs
into a table (ID.csv), figures (ID*.png) and a text (ID.md).

    pagelab reproduce --list
    pagelab reproduce ID [--quick] [--out DIR] [--jobs N] [--executor local|ray]

An `Experiment` has a sweep per variant: `full` (a scale worth publishing),
`quick` (under two minutes on two cores) and `tiny` (seconds; the tests use
it). `analyze(df, out, variant)` gets one row per run (parameters and every
statistic) and returns the files it wrote.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

import pandas as pd

from pagelab.sweep import Sweep, run_sweep

VARIANTS = ("full", "quick", "tiny")


@dataclasses.dataclass
class Experiment:
    id: str
    title: str
    #: Variant name -> sweep.
    sweeps: dict[str, Sweep]
    #: (runs, out dir, variant) -> files written.
    analyze: Callable[[pd.DataFrame, Path, str], list[Path]]
    paper: str | None = None


REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    REGISTRY[exp.id] = exp
    return exp


def get(exp_id: str) -> Experiment:
    _load()
    try:
        return REGISTRY[exp_id]
    except KeyError:
        raise KeyError(f"unknown experiment {exp_id!r} (pagelab reproduce --list: {', '.join(sorted(REGISTRY))})") from None


def all_experiments() -> list[Experiment]:
    _load()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _load() -> None:
    from pagelab.experiments.baseline import frag_sweep, thp  # noqa: F401  (they register)
    from pagelab.experiments.chp import frag, perf  # noqa: F401


def reproduce(
    exp_id: str,
    out: str | Path,
    *,
    variant: str = "full",
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    log=None,
) -> list[Path]:
    """Runs (what is not yet stored of) an experiment and analyzes it. The
    runs go to OUT/results.duckdb; the files to OUT/ID.{csv,md} and ID*.png."""
    exp = get(exp_id)
    if variant not in exp.sweeps:
        raise KeyError(f"experiment {exp_id} has no {variant!r} variant ({', '.join(exp.sweeps)})")
    out = Path(out)
    started = time.perf_counter()
    outcome = run_sweep(exp.sweeps[variant], out, jobs=jobs, executor=executor, address=address, experiment=exp.id, log=log)
    if outcome.errors:
        raise RuntimeError(f"{len(outcome.errors)} run(s) of {exp_id} failed: {next(iter(outcome.errors.values()))}")
    df = outcome.frame()
    files = exp.analyze(df, out, variant)
    if log:
        log(f"{exp_id} ({variant}): {outcome.ran} run(s) now, {outcome.reused} reused, {time.perf_counter() - started:.1f} s")
    return files
