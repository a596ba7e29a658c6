"""The Python API: `pagelab.run(config, **overrides)`.

A configuration is a TOML file path or a dict of the same shape; overrides
are dotted keys (`**{"os.policy": "thp"}`, or `os__policy="thp"` where a
double underscore stands for a dot). Validation happens once, in the Rust
core, which names the offending key in a `ConfigError`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import tomli_w

from pagelab import _pagelab

#: Accesses simulated between two progress updates.
STEP = 2_000_000


@dataclasses.dataclass
class Result:
    """What a run produced. It shows itself as a short summary (`repr`, and
    a small table in Jupyter); `stats` has every statistic."""

    #: One flat dict of statistics (see docs/stats.md).
    stats: dict[str, float | int]
    #: Statistics snapshots, one per `run.epoch` instructions of core 0.
    timeseries: list[dict[str, float | int]]
    #: The configuration with every default written out, as TOML.
    config_toml: str
    #: Wall-clock seconds the simulation took.
    seconds: float

    def timeseries_frame(self, all: bool = False):  # noqa: A002 - reads as `all=True`
        """The epochs as a pandas DataFrame, one row per epoch, with
        `epoch.instructions` (core 0's instructions since the start, which
        never resets) and `phase`: `init` (core 0 in its first-touch pass),
        `warm-up` (before the statistics were reset: `run.skip_init`,
        `run.warmup`) or `measured`. Statistics count from the last reset,
        so the first `measured` row after a `warm-up` or `init` one starts
        again from zero. By default only the rows that the final statistics
        cover are returned; `all=True` returns every row."""
        from pagelab.timeseries import frame

        return frame(self.timeseries, everything=all)

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) pairs of the main statistics (the table
        `pagelab run` prints)."""
        from pagelab.table import summary_rows

        return summary_rows(self.stats)

    def describe(self) -> str:
        """One line: workload, paging policy, cores, wall-clock time."""
        from pagelab.table import run_title

        return run_title(self.config_toml, self.seconds)

    def save(self, out: str | os.PathLike) -> Path:
        """Writes what `pagelab run --out DIR` writes: `stats.json`,
        `config.resolved.toml`, `timeseries.json` (with epochs) and
        `provenance.json`."""
        from pagelab.output import write_run

        write_run(Path(out), self)
        return Path(out)

    def __repr__(self) -> str:
        rows = self.summary()
        width = max((len(label) for label, _ in rows), default=0)
        lines = [f"<pagelab.Result {self.describe()}>"]
        lines += [f"  {label:<{width}}  {value}" for label, value in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        cells = "".join(
            f"<tr><td style='text-align:left'>{html.escape(label.strip())}</td>"
            f"<td style='text-align:right'>{html.escape(value)}</td></tr>"
            for label, value in self.summary()
        )
        return (f"<div><b>pagelab run</b>: {html.escape(self.describe())}"
                f"<table>{cells}</table><small>{len(self.stats)} statistics in <code>.stats</code>"
                "</small></div>")


def _not_toml(value: Any, key: str, path: tuple[int, ...] = ()) -> tuple[str, str] | None:
    """The dotted key of the first part of `value` TOML cannot hold (None,
    a set, an object, a table key that is not a string, a table or array
    that contains itself) and why, or None when all of it can be written."""
    import datetime

    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in path:
            return key, "contains itself"
        path = path + (id(value),)
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return key, f"a table key must be a string, not {type(k).__name__} {k!r}"
            bad = _not_toml(v, f"{key}.{k}" if key else k, path)
            if bad:
                return bad
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            bad = _not_toml(v, f"{key}[{i}]", path)
            if bad:
                return bad
        return None
    if isinstance(value, (str, bool, int, float, datetime.date, datetime.time)):
        return None
    return key, f"{type(value).__name__} {value!r:.60} has no TOML form (strings, numbers, booleans, arrays, tables)"


def _toml(value: Mapping[str, Any], key: str = "") -> str:
    """`value` as TOML text; a part TOML cannot hold is a ConfigError
    naming its key."""
    bad = _not_toml(value, key)
    if bad:
        raise _pagelab.ConfigError(f"configuration error at `{bad[0]}`: {bad[1]}")
    return tomli_w.dumps(dict(value))


def toml_value(value: Any, key: str = "value") -> str:
    """A Python value as a TOML literal, for a `KEY=VALUE` override."""
    bad = _not_toml(value, key)
    if bad:
        raise _pagelab.ConfigError(f"configuration error at `{bad[0]}`: {bad[1]}")
    text = tomli_w.dumps({"v": value})
    return text.split("=", 1)[1].strip()


def overrides_list(overrides: Mapping[str, Any]) -> list[str]:
    items = []
    for key, v in overrides.items():
        key = key.replace("__", ".")
        items.append(f"{key}={toml_value(v, key)}")
    return items


def load_config_text(config: str | os.PathLike | Mapping[str, Any]) -> tuple[str, str]:
    """(TOML text, source name) of a path or a dict."""
    if isinstance(config, Mapping):
        return _toml(config), "<dict>"
    if not isinstance(config, (str, os.PathLike)):
        raise _pagelab.ConfigError(f"configuration: expected a TOML file's path or a dict, got {type(config).__name__}")
    path = Path(config)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except OSError as e:
        raise _pagelab.ConfigError(f"cannot read configuration {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise _pagelab.ConfigError(f"{path}: not UTF-8 text (byte offset {e.start})") from None


def interruptible(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, a call into the core that may block or take long (a
    trace or hint file that is a FIFO no one writes yet, a large graph), on
    a helper thread: Python delivers Ctrl-C to the main thread only between
    its own instructions, which a call into the core never reaches. The
    main thread waits in `join`, which Ctrl-C interrupts; the helper is then
    abandoned (it ends with the process) and its temporary files are the
    core's cleanup table's (the command line empties it on Ctrl-C)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as e:  # re-raised on the main thread
            outcome["error"] = e

    helper = threading.Thread(target=call, daemon=True, name="pagelab-core-call")
    helper.start()
    helper.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run(
    config: str | os.PathLike | Mapping[str, Any],
    *,
    export_phys: str | os.PathLike | None = None,
    export_format: str = "pagelab",
    export_memory_only: bool = False,
    progress: Callable[[int, int | None], None] | None = None,
    set: list[str] | None = None,  # noqa: A002 - mirrors the CLI's --set
    out: str | os.PathLike | None = None,
    **overrides: Any,
) -> Result:
    """Runs one simulation to the end and returns its statistics.

    `set` takes CLI-style `KEY=VALUE` strings; keyword overrides take Python
    values. `progress(done, expected)` is called between steps with the
    accesses run and the total expected: exact for an uncompressed native
    trace (its end record) and for generators with `workload.accesses` set;
    None when unknown (other traces; a generator's own run length); at the
    end, `progress(done, done)`.
    `export_phys` writes every physical reference, in `export_format`
    ("pagelab", "ramulator2", "dramsim3"), or only those served by memory
    with `export_memory_only`.
    `out` writes what `pagelab run --out DIR` writes (`Result.save`), once
    the run has succeeded.
    """
    import time

    text, source = load_config_text(config)
    if isinstance(set, str) or not all(isinstance(item, str) for item in set or []):
        raise _pagelab.ConfigError("set: expected a list of \"KEY=VALUE\" strings")
    items = list(set or []) + overrides_list(overrides)
    started = time.perf_counter()
    sim = interruptible(_pagelab.Simulation, text, source, items)
    if export_phys is not None:
        # The core refuses an export over anything but a regular file or
        # one of the run's inputs; the configuration file is one too.
        inputs = [] if isinstance(config, Mapping) else [str(config)]
        _pagelab.check_output(str(export_phys), inputs)
        sim.export_phys(str(export_phys), export_format, export_memory_only)
    try:
        while not sim.step(STEP):
            if progress:
                progress(*sim.progress())
        sim.finish()
    except BaseException:
        # Its temporary file goes now, not when the traceback lets `sim` go.
        sim.discard_export()
        raise
    if progress:
        done, _ = sim.progress()
        progress(done, done)
    result = Result(
        stats=dict(sim.stats()),
        timeseries=[dict(s) for s in sim.timeseries()],
        config_toml=sim.resolved_config(),
        seconds=time.perf_counter() - started,
    )
    if out is not None:
        result.save(out)
    return result


def run_sweep(
    sweep: Any = None,
    out: str | os.PathLike | None = None,
    *,
    base: str | os.PathLike | Mapping[str, Any] | None = None,
    grid: Mapping[str, list] | None = None,
    workloads: list[Mapping[str, Any]] | None = None,
    seeds: list[int] | None = None,
    id: str | None = None,  # noqa: A002 - the sweep's `id`, as in SWEEP.toml
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
):
    """Runs a sweep and returns its table as a pandas DataFrame: one row per
    point, its labels (`workload`, each grid dimension, `seed`), then
    `config_hash`, `seconds` and every statistic. What `pagelab sweep`
    writes is written too: OUT/results.duckdb (runs already there are not
    run again), OUT/ID.csv and OUT/ID.provenance.json; OUT defaults to
    out/ID.

    `sweep` is a SWEEP.toml path (docs/sweeps.md) or a `pagelab.sweep.Sweep`;
    or leave it out and give the parts: `base` (a configuration: a dict or
    a TOML path), `grid` (`{"os.policy": ["base", "thp"]}`), `workloads`
    (tables, each replacing the base's workload), `seeds` and `id`
    (default "sweep"). A run that fails raises SimulationError after the
    others are stored.

    (`pagelab.sweep` is the module with the parts; this is the call.)
    """
    from pagelab.sweep import Sweep, load_sweep, sweep_to_dir

    if sweep is None:
        base_config: dict = {}
        if base is not None:
            import tomllib

            text, source = load_config_text(base)
            try:
                base_config = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise _pagelab.ConfigError(f"{source}: {e}") from None
        spec = Sweep(id=id or "sweep", base=base_config, grid={k.replace("__", "."): list(v) for k, v in (grid or {}).items()},
                     workloads=[dict(w) for w in workloads or []], seeds=list(seeds or []))
    elif isinstance(sweep, Sweep):
        spec = sweep
    else:
        spec = load_sweep(sweep)
    outcome, df = sweep_to_dir(spec, Path(out) if out is not None else Path("out") / spec.id,
                               jobs=jobs, executor=executor, address=address)
    if outcome.errors:
        first = next(iter(outcome.errors.values()))
        raise _pagelab.SimulationError(f"{len(outcome.errors)} of {len(outcome.points)} runs of sweep {spec.id} failed "
                                       f"(the others are stored in {outcome.store_path}): {first}")
    return df
