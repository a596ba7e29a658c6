"""`pagelab reproduce --all`: every declared experiment in one batch.

    pagelab reproduce --all [--quick | --variant V] [--seeds N] [--jobs N] [--out DIR] [--save-results [ROOT]]
    pagelab reproduce --all --list [--out DIR] [--jobs N]

One results store (`OUT/results.duckdb`, default `out/all/`) holds every
experiment's runs, and each experiment's files land in OUT exactly as
`pagelab reproduce ID --out OUT` lays them out (`ID.csv`, `ID.md`,
figures, `ID.provenance.json`), written by the same functions.

Every experiment's points are expanded and hashed first (an experiment
with a `prepare` step runs its profiling runs then, as `reproduce ID`
does); a configuration declared by several experiments runs once, for the
first of them in the registry's order, and counts as shared for the
others. All runs then go through one executor, in experiment order, under
one progress bar; an experiment is analyzed as soon as its last run is in
(its workers go on with the next runs meanwhile). An experiment that fails
(a run, its preparation or its analysis) is reported and the others go
on. At the end a table: per experiment its runs, how many ran now, were
shared and were reused from the store, and the simulation seconds of its
runs; then the batch's wall clock.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

from pagelab import experiments, provenance
from pagelab.experiments import Experiment, failed_runs, variant_sweep, write_results
from pagelab.experiments.timings import duration
from pagelab.store import Store, local_versions
from pagelab.sweep import Point, SharedBar, Sweep, SweepOutcome, expand, progress_bar, resolve, store_result

#: The default output directory.
DEFAULT_OUT = Path("out") / "all"
#: The ETA's speed is the average over the whole batch (runs take minutes:
#: rich's 30-second window would hold no run most of the time).
ETA_WINDOW_SECONDS = 7 * 24 * 3600.0


@dataclasses.dataclass
class Entry:
    """One experiment of the batch and what became of it."""

    exp: Experiment
    sweep: Sweep
    points: list[Point] = dataclasses.field(default_factory=list)
    #: Distinct runs: run now for it (the first to declare them), run now
    #: for an earlier experiment of the batch, found in the store.
    ran: int = 0
    shared: int = 0
    reused: int = 0
    #: Runs not yet in; it is analyzed when this empties.
    pending: set[str] = dataclasses.field(default_factory=set)
    #: Simulation seconds of its runs (as the store records them).
    run_seconds: float = 0.0
    files: list[Path] = dataclasses.field(default_factory=list)
    error: str | None = None

    def hashes(self) -> list[str]:
        return list(dict.fromkeys(p.hash for p in self.points))


@dataclasses.dataclass
class Batch:
    entries: list[Entry]
    #: Runs the experiments' `prepare` steps ran now (profiling runs).
    prepared: int
    wall_seconds: float
    #: Simulation seconds of the batch's distinct runs, and the jobs.
    run_seconds: float
    jobs: int

    @property
    def failed(self) -> list[Entry]:
        return [e for e in self.entries if e.error is not None]


def select(only: list[str] | None = None) -> list[Experiment]:
    """Every experiment in the registry's order, or those of `only`
    (KeyError naming an unknown one)."""
    if only is None:
        return experiments.all_experiments()
    return [experiments.get(i) for i in sorted(set(only))]


def run_all(out: str | Path, *, variant: str = "full", seeds: int | None = None, jobs: int | None = None,
            executor: str = "local", address: str | None = None, save_results: str | Path | None = None,
            log=None, only: list[str] | None = None) -> Batch:
    """Runs the batch into OUT (see the module's text). Raises
    `results.SaveRefused` before anything runs when `save_results` is
    given for runs that may not be saved."""
    from pagelab.executors import make_executor

    exps = select(only)
    entries = [Entry(e, variant_sweep(e, variant, seeds, saving=save_results is not None)) for e in exps]
    out = Path(out)
    started = (time.perf_counter(), provenance.utc_now())
    ex = make_executor(executor, jobs, address)
    run = dict(jobs=jobs, executor=executor, address=address, log=log)
    with progress_bar(ETA_WINDOW_SECONDS) as live:
        bar = SharedBar(live, live.add_task("runs", total=0))
        for e in entries:
            _plan(e, out, run, bar)
        prepared = bar.total()
        store = Store(out)
        try:
            todo, owner, waiting = _assign(entries, store.hashes())
            bar.add(len(todo))
            if log:
                log(_plan_line(entries, len(todo), ex))
            versions, errors = local_versions(), {}

            def finish(e: Entry) -> None:
                _finish(e, out, store, errors, variant=variant, started=started, save_results=save_results, run=run)

            for e in entries:
                if e.error is None and not e.pending:
                    finish(e)

            def on_result(res: dict) -> None:
                h = res["hash"]
                store_result(store, todo[h], res, experiment=owner[h].exp.id, versions=versions, errors=errors, log=log)
                bar.advance()
                for e in waiting[h]:
                    e.pending.discard(h)
                    if not e.pending:
                        finish(e)

            ex.run([p.task() for p in todo.values()], on_result)
            run_seconds = _run_seconds(entries, store)
        finally:
            store.close()
    jobs_used = getattr(ex, "jobs", None) or os.cpu_count() or 1
    return Batch(entries, prepared, time.perf_counter() - started[0], run_seconds, jobs_used)


def _plan(e: Entry, out: Path, run: dict, bar: SharedBar) -> None:
    """Runs `e`'s preparation (its runs under the batch's bar) and expands
    and hashes its points; a failure is recorded, not raised."""
    try:
        if e.exp.prepare is not None:
            e.sweep = e.exp.prepare(e.sweep, out, dict(run, progress=bar))
        e.points = expand(e.sweep)
        resolve(e.points, f"<experiment {e.exp.id}>")
    except Exception as err:  # an experiment's failure, reported at the end
        e.error = f"{type(err).__name__}: {err}"
        if run.get("log"):
            run["log"](f"{e.exp.id}: failed: {e.error}")


def _assign(entries: list[Entry], stored: set[str]):
    """Each distinct run not in the store goes to the first experiment that
    declares it. Returns the runs to do (hash -> point, in experiment
    order), each one's owner, and the experiments waiting for each."""
    todo: dict[str, Point] = {}
    owner: dict[str, Entry] = {}
    waiting: dict[str, list[Entry]] = {}
    for e in entries:
        if e.error is not None:
            continue
        for p in {p.hash: p for p in e.points}.values():
            if p.hash in stored:
                e.reused += 1
                continue
            if p.hash in todo:
                e.shared += 1
            else:
                todo[p.hash], owner[p.hash] = p, e
                e.ran += 1
            waiting.setdefault(p.hash, []).append(e)
            e.pending.add(p.hash)
    return todo, owner, waiting


def _plan_line(entries: list[Entry], todo: int, ex) -> str:
    distinct = len({h for e in entries for h in e.hashes()})
    failed = sum(e.error is not None for e in entries)
    return (f"{len(entries)} experiments{f' ({failed} failed to prepare)' if failed else ''}: {distinct} distinct runs, "
            f"{distinct - todo} already stored, {todo} to run ({ex.name}, {getattr(ex, 'jobs', None) or 'all'} jobs)")


def _finish(e: Entry, out: Path, store: Store, errors: dict[str, str], *, variant: str, started, save_results,
            run: dict) -> None:
    """Writes `e`'s files as `reproduce ID` does, once all its runs are in."""
    mine = {h: errors[h] for h in e.hashes() if h in errors}
    if mine:
        e.error = failed_runs(e.exp.id, mine)
        return
    outcome = SweepOutcome(e.points, e.ran, e.reused + e.shared, {}, store.path)
    try:
        e.files = write_results(e.exp, out, outcome, variant=variant, seeds=e.sweep.seeds, started=started,
                                save_results=save_results, store=store, shared=e.shared, **run)
    except Exception as err:  # its analysis failed: reported, the batch goes on
        e.error = f"analysis failed: {type(err).__name__}: {err}"
        if run.get("log"):
            run["log"](f"{e.exp.id}: {e.error}")


def _run_seconds(entries: list[Entry], store: Store) -> float:
    """Fills each experiment's run seconds; returns the batch's (each
    distinct run once)."""
    hashes = {h for e in entries for h in e.hashes()}
    rows = store.raw(hashes)
    seconds = dict(zip(rows.config_hash, rows.seconds))
    for e in entries:
        e.run_seconds = sum(seconds.get(h, 0.0) for h in e.hashes())
    return float(sum(seconds.values()))


def summary(batch: Batch) -> str:
    """The table printed at the end, then the totals."""
    width = max([len("experiment")] + [len(e.exp.id) for e in batch.entries])
    lines = [f"{'experiment':<{width}}  {'runs':>5}  {'ran now':>7}  {'shared':>6}  {'reused':>6}  {'run seconds':>11}  result"]
    for e in batch.entries:
        result = "ok" if e.error is None else "FAILED"
        lines.append(f"{e.exp.id:<{width}}  {len(e.hashes()):>5}  {e.ran:>7}  {e.shared:>6}  {e.reused:>6}  "
                     f"{e.run_seconds:>11.1f}  {result}")
    declared = sum(len(e.hashes()) for e in batch.entries)
    distinct = len({h for e in batch.entries for h in e.hashes()})
    ran = sum(e.ran for e in batch.entries)
    shared = sum(e.shared for e in batch.entries)
    ok = len(batch.entries) - len(batch.failed)
    prepared = f" (plus {batch.prepared} runs of their preparation steps)" if batch.prepared else ""
    lines += [
        "",
        f"{len(batch.entries)} experiments ({ok} ok, {len(batch.failed)} failed): {declared} runs declared, "
        f"{distinct} distinct ({declared - distinct} declared by more than one experiment); "
        f"{ran} ran now{prepared}, {shared} shared with an earlier experiment, "
        f"{declared - ran - shared} reused from the store",
        f"run seconds {batch.run_seconds:.1f} over {batch.jobs} jobs = {duration(batch.run_seconds / batch.jobs)}; "
        f"wall clock {duration(batch.wall_seconds)} ({batch.wall_seconds:.1f} s)",
    ]
    return "\n".join(lines)


def main(args, log) -> int:
    """`pagelab reproduce --all` (the command line's part; usage checked)."""
    from pagelab.output import check_out_dir
    from pagelab.results import SaveRefused

    only = args.only.split(",") if args.only else None
    out = Path(args.out or DEFAULT_OUT)
    variant = args.variant or ("tiny" if args.tiny else "quick" if args.quick else "full")
    try:
        exps = select(only)
    except KeyError as e:
        print(f"pagelab: error: {e.args[0]}", file=sys.stderr)
        return 2
    if args.list:
        print(estimate(exps, out, args.jobs))
        return 0
    check_out_dir(out)
    try:
        batch = run_all(out, variant=variant, seeds=args.seeds, jobs=args.jobs, executor=args.executor,
                        address=args.address, save_results=args.save_results, log=log, only=only)
    except SaveRefused as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return 2
    print(summary(batch))
    for e in batch.failed:
        print(f"pagelab: error: {e.exp.id}: {e.error}", file=sys.stderr)
    return 1 if batch.failed else 0


def estimate(exps: list[Experiment], out: Path, jobs: int | None) -> str:
    """`reproduce --all --list`: the recorded time of every experiment per
    variant and their sums; and, when OUT holds a store, the total its
    runs took (`timings.store_total`)."""
    from pagelab.experiments.timings import expected_times, store_total

    text = expected_times().table([e.id for e in exps])
    store = out / "results.duckdb"
    if store.is_file():
        text += "\n\n" + store_total(store, jobs).line()
    return text
