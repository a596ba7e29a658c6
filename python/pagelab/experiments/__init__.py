"""Experiments: named, declared sweeps plus the code that turns their runs
into a table (ID.csv), figures (ID*.png) and a text (ID.md).

    pagelab reproduce --list
    pagelab reproduce ID [--quick] [--seeds N] [--out DIR] [--jobs N] [--executor local|ray]

An `Experiment` has a sweep per variant: `full` (a scale worth publishing),
`quick` (under two minutes on two cores) and `tiny` (seconds; the tests use
it). `analyze(df, out, variant)` gets one row per run (parameters and every
statistic) and returns the files it wrote.

Layout: one package per paper (`chp/` for Colored Huge Pages; `baseline/`
for the experiments that belong to no paper), each module of which calls
`declare(...)` (or `register(Experiment(...))`) as it is imported; `common.py` holds the
helpers several packages use. Nothing here lists them: `_load()` imports
every module and package below `pagelab.experiments`, in sorted order, so a
new paper adds a package and no line here. A module that fails to import
raises an ImportError that names it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import pkgutil
import time
from pathlib import Path
from typing import Callable

import pandas as pd

from pagelab import _pagelab, provenance
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
    #: Runs what the sweep's runs depend on before them (e.g. profiling
    #: runs whose files the measured runs read) and returns the sweep to
    #: run: (sweep, out dir, run_sweep's keyword arguments) -> sweep.
    prepare: Callable[[Sweep, Path, dict], Sweep] | None = None


REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Adds `exp` to the registry; experiment modules call it as they are
    imported. An ID declared by two modules is an error (the same module
    imported again replaces its own)."""
    old = REGISTRY.get(exp.id)
    if old is not None and _owner(old) != _owner(exp):
        raise ValueError(f"experiment {exp.id!r} declared twice: in {_owner(old)} and in {_owner(exp)}")
    REGISTRY[exp.id] = exp
    return exp


def declare(id: str, title: str, sweep: Callable[[str], Sweep], analyze, paper: str | None = None,
            prepare=None) -> Experiment:
    """Registers an experiment whose sweeps are `sweep(variant)` for every
    variant."""
    sweeps = {v: sweep(v) for v in VARIANTS}
    return register(Experiment(id=id, title=title, sweeps=sweeps, analyze=analyze, paper=paper, prepare=prepare))


def _owner(exp: Experiment) -> str | None:
    """The module that declares `exp` (its `analyze`'s)."""
    return getattr(exp.analyze, "__module__", None)


def get(exp_id: str) -> Experiment:
    _load()
    try:
        return REGISTRY[exp_id]
    except KeyError:
        shown = _pagelab.cap_value(repr(exp_id))
        raise KeyError(f"unknown experiment {shown}: one of {', '.join(sorted(REGISTRY))} (pagelab reproduce --list)") from None


def all_experiments() -> list[Experiment]:
    _load()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


_loaded = False


def _load() -> None:
    """Imports, once, every module below this package (they register)."""
    global _loaded
    if not _loaded:
        import_all(__path__, f"{__name__}.")
        _loaded = True


def import_all(path, prefix: str) -> list[str]:
    """Imports every module and package on `path` (a package's `__path__`),
    and recursively what lies below each package, in sorted order of name,
    so that the registry fills the same way on every machine; returns the
    names imported. A module that fails to import raises ImportError naming
    it (`pkgutil.walk_packages` would skip a package whose import fails)."""
    names = []
    for info in sorted(pkgutil.iter_modules(path, prefix), key=lambda m: m.name):
        try:
            module = importlib.import_module(info.name)
        except Exception as e:
            raise ImportError(f"experiment module {info.name} failed to import: {type(e).__name__}: {e}", name=info.name) from e
        names.append(info.name)
        if info.ispkg:
            names += import_all(module.__path__, f"{info.name}.")
    return names


def reproduce(
    exp_id: str,
    out: str | Path,
    *,
    variant: str = "full",
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    seeds: int | None = None,
    save_results: str | Path | None = None,
    log=None,
) -> list[Path]:
    """Runs (what is not yet stored of) an experiment and analyzes it. The
    runs go to OUT/results.duckdb; the files to OUT/ID.{csv,md}, ID*.png and
    ID*.pdf (each figure in both), and OUT/ID.provenance.json (version,
    commit, date, machine, variant, seeds, wall-clock time).
    `seeds` = N runs every point with seeds 1..N instead of the variant's
    (`common.SEEDS`). `save_results` = ROOT also saves the run as data
    under ROOT/<package>/ID/ (`pagelab.results`): only a full run with at
    least three seeds, refused (`results.SaveRefused`) before anything
    runs otherwise."""
    exp = get(exp_id)
    sweep = variant_sweep(exp, variant, seeds, saving=save_results is not None)
    out = Path(out)
    started, started_at = time.perf_counter(), provenance.utc_now()
    run = dict(jobs=jobs, executor=executor, address=address, log=log)
    if exp.prepare is not None:
        sweep = exp.prepare(sweep, out, run)
    outcome = run_sweep(sweep, out, experiment=exp.id, **run)
    if outcome.errors:
        raise RuntimeError(failed_runs(exp.id, outcome.errors))
    return write_results(exp, out, outcome, variant=variant, seeds=sweep.seeds, started=(started, started_at),
                         save_results=save_results, **run)


def variant_sweep(exp: Experiment, variant: str, seeds: int | None, saving: bool = False) -> Sweep:
    """`exp`'s sweep of `variant`, with seeds 1..`seeds` if given. Raises
    KeyError for a variant it has not, and `results.SaveRefused` when
    `saving` a run that may not be saved."""
    from pagelab import results

    if variant not in exp.sweeps:
        raise KeyError(f"experiment {exp.id} has no {variant!r} variant ({', '.join(exp.sweeps)})")
    sweep = exp.sweeps[variant]
    if seeds is not None:
        sweep = dataclasses.replace(sweep, seeds=list(range(1, seeds + 1)))
    if saving:
        results.check_saveable(exp.id, variant, sweep.seeds)
    return sweep


def failed_runs(exp_id: str, errors: dict[str, str]) -> str:
    return f"{len(errors)} run(s) of {exp_id} failed: {next(iter(errors.values()))}"


def write_results(exp: Experiment, out: Path, outcome, *, variant: str, seeds: list[int], started: tuple[float, str],
                  save_results: str | Path | None = None, jobs: int | None = None, executor: str = "local",
                  address: str | None = None, log=None, store=None, shared: int | None = None) -> list[Path]:
    """Analyzes the runs of `outcome` (a `SweepOutcome`, all stored) into
    OUT's files and provenance, and saves them under `save_results`;
    returns the files. `started`: (perf_counter, UTC date) the wall clock
    is counted from. `store`: the results store, if open for writing.
    `shared` (`pagelab reproduce --all` only): how many of the runs
    `outcome.reused` counts another experiment of the same batch ran; the
    provenance says so, and its wall clock (from the batch's start) is
    not this experiment's time (`timings.row_of` leaves it out)."""
    from pagelab import results

    df = outcome.frame(store)
    files = exp.analyze(df, out, variant)
    # Every figure is also a PDF (`output.save_figure`): list it too.
    files += [f.with_suffix(".pdf") for f in files if f.suffix == ".png" and f.with_suffix(".pdf").exists()]
    seconds = time.perf_counter() - started[0]
    batch = {} if shared is None else {"batch": "reproduce --all", "shared": shared}
    files.append(provenance.write(out / f"{exp.id}{provenance.SUFFIX}", provenance.collect(
        kind="experiment", id=exp.id, title=exp.title, paper=exp.paper, variant=variant, seeds=list(seeds),
        points=len(outcome.points), ran=outcome.ran, reused=outcome.reused, jobs=jobs, executor=executor,
        seconds=round(seconds, 1), **batch)))
    if log:
        log(f"{exp.id} ({variant}): {outcome.ran} run(s) now, {outcome.reused} reused, {seconds:.1f} s")
    if save_results is not None:
        from pagelab.store import Store

        with contextlib.nullcontext(store) if store is not None else Store(outcome.store_path, read_only=True) as s:
            rows = s.raw(p.hash for p in outcome.points)
        saved = results.save(exp, out, Path(save_results), variant=variant, seeds=seeds, frame=df,
                             store_rows=rows, files=files, started=started[1], wall_seconds=seconds, jobs=jobs,
                             executor=executor, runs_now=outcome.ran, runs_reused=outcome.reused)
        files = files + [saved]
    return files
