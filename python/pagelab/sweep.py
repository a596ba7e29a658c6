"""Sweeps: a grid over configuration keys, a list of workloads and seeds,
run once per distinct configuration and stored in a results store.

See docs/sweeps.md for the SWEEP.toml format. In Python:

    >>> spec = Sweep(id="demo", base={"machine": {"phys_mem": "1GiB"}},
    ...              grid={"os.policy": ["base", "thp"]},
    ...              workloads=[{"kind": "gups", "footprint": "256MiB"}], seeds=[1, 2])
    >>> df = run_sweep(spec, "out/demo", jobs=2)

Every point is resolved (`pagelab._pagelab.resolve_config`, the canonical
TOML with every key) and hashed before anything runs; points whose hash is
in the store are not run again, so a sweep interrupted by Ctrl-C or kill -9
and started again redoes no finished run and loses none.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import json
import sys
from pathlib import Path
from typing import Any, Mapping

from pagelab import _pagelab
from pagelab.api import _toml, overrides_list
from pagelab.store import Store, config_hash, local_versions


@dataclasses.dataclass
class Sweep:
    """A declared sweep."""

    id: str
    #: The configuration every point starts from (a config dict).
    base: dict
    #: Dimension -> values. A dimension named by a dotted key takes scalar
    #: values (`{"os.policy": ["base", "thp"]}`); a value that is a table
    #: is a bundle of overrides, labelled by its `name` key.
    grid: dict[str, list] = dataclasses.field(default_factory=dict)
    #: Workload tables, one per point (each replaces `base["workload"]`),
    #: labelled by `name` (default: kind). Empty: the base's workload.
    workloads: list[dict] = dataclasses.field(default_factory=list)
    #: Each sets `workload.seed` and `run.seed`; a graph workload keeps the
    #: graph of the first seed (`workload.graph_seed`). Empty: the base's seeds.
    seeds: list[int] = dataclasses.field(default_factory=list)
    #: Called as `shape(config, params)` on every point's configuration
    #: before it is resolved, for points that differ by more than keys:
    #: the cores a scenario runs (experiments only; not in SWEEP.toml).
    shape: Any = None


@dataclasses.dataclass
class Point:
    #: Labels: one per grid dimension, plus `workload` and `seed`.
    params: dict[str, Any]
    config: dict
    overrides: dict[str, Any]
    config_toml: str = ""
    hash: str = ""

    def task(self):
        return (self.hash, self.config, overrides_list(self.overrides))


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables -> dotted keys (`{"os": {"policy": x}}` -> `{"os.policy": x}`)."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _label(value: Any) -> Any:
    if isinstance(value, Mapping):
        if "name" in value:
            return value["name"]
        return json.dumps(flatten(value), sort_keys=True)
    return value


def expand(spec: Sweep) -> list[Point]:
    """The cartesian product, in a fixed order: workloads, then the grid's
    dimensions in declaration order, then seeds."""
    dims = list(spec.grid.items())
    workloads: list[dict | None] = list(spec.workloads) or [None]
    seeds: list[int | None] = list(spec.seeds) or [None]
    points = []
    for w in workloads:
        for combo in itertools.product(*[values for _, values in dims]):
            for seed in seeds:
                config = copy.deepcopy(spec.base)
                params: dict[str, Any] = {}
                if w is not None:
                    w = dict(w)
                    config.pop("workloads", None)
                    config["workload"] = {k: v for k, v in w.items() if k != "name"}
                    params["workload"] = w.get("name", w.get("kind"))
                else:
                    wl = config.get("workload", {})
                    params["workload"] = wl.get("name", wl.get("kind"))
                overrides: dict[str, Any] = {}
                for (dim, _), value in zip(dims, combo):
                    params[dim] = _label(value)
                    if isinstance(value, Mapping):
                        overrides.update({k: v for k, v in flatten(value).items() if k != "name"})
                    else:
                        overrides[dim] = value
                if seed is not None:
                    params["seed"] = seed
                    overrides["run.seed"] = seed
                    if spec.shape is None:
                        overrides["workload.seed"] = seed
                if spec.shape is not None:
                    spec.shape(config, params)
                    _seed_workloads(config, seed)
                _fix_graph_seeds(config, seeds[0], shaped=spec.shape is not None)
                points.append(Point(params, config, overrides))
    return points


def _seed_workloads(config: dict, seed: int | None) -> None:
    """Seeds every workload of a shaped point (a `workload.seed` override
    would not reach the `[[workloads]]` of several cores)."""
    if seed is None:
        return
    for i, w in enumerate(_workload_tables(config)):
        w["seed"] = _core_seed(seed, i)


def _core_seed(seed: int, core: int) -> int:
    return seed * 1000 + core


def _workload_tables(config: dict) -> list[dict]:
    if "vms" in config:
        # Several VMs (`[[vms]]`): each VM's workload or workloads.
        return [w for vm in config["vms"] for w in _workload_tables(vm)]
    return config["workloads"] if "workloads" in config else [config.setdefault("workload", {})]


def _fix_graph_seeds(config: dict, first_seed: int | None, shaped: bool) -> None:
    """Gives every graph workload without a `graph_seed` the seed that the
    sweep's first seed gives its workload, so that all the seeds of a point
    run on one graph (built once, one cache entry) and differ in their
    access streams (bfs's sources) and `run.seed`; the first seed's runs
    are those of a sweep before `graph_seed` existed."""
    if first_seed is None:
        return
    for i, w in enumerate(_workload_tables(config)):
        if w.get("kind") == "graph" and "graph_seed" not in w:
            w["graph_seed"] = _core_seed(first_seed, i) if shaped else first_seed


def resolve(points: list[Point], source: str = "<sweep>") -> None:
    """Fills each point's canonical TOML and hash (raises ConfigError)."""
    for p in points:
        p.config_toml = _pagelab.resolve_config(_toml(p.config), source, overrides_list(p.overrides))
        p.hash = config_hash(p.config_toml)


def load_sweep(path: str | Path) -> Sweep:
    """Reads a SWEEP.toml (docs/sweeps.md)."""
    import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise _pagelab.ConfigError(f"cannot read sweep {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise _pagelab.ConfigError(f"{path}: not UTF-8 text (byte offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise _pagelab.ConfigError(f"{path}: {e}") from None
    known = {"id", "base", "grid", "workloads", "seeds"}
    unknown = set(data) - known
    if unknown:
        shown = _pagelab.cap_value(", ".join(sorted(unknown)))
        raise _pagelab.ConfigError(f"{path}: unknown key(s) {shown} (known: {', '.join(sorted(known))})")
    sweep_id = data.get("id", path.stem)
    if not _a_directory_name(sweep_id):
        raise _pagelab.ConfigError(
            f"{path}: id: expected a name usable as a directory (a non-empty string of at most {MAX_ID_BYTES} bytes, "
            f"without `/`, not `.` or `..`), got {_pagelab.cap_value(repr(sweep_id))}")
    for key in ("base", "grid"):
        if not isinstance(data.get(key, {}), dict):
            raise _pagelab.ConfigError(f"{path}: {key}: expected a table ([{key}]), got {_pagelab.cap_value(repr(data[key]))}")
    grid = {}
    for key, values in flatten(data.get("grid", {})).items():
        if not isinstance(values, list) or not values:
            raise _pagelab.ConfigError(f"{path}: grid.{key}: expected a non-empty list of values")
        grid[key] = values
    seeds = data.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
        raise _pagelab.ConfigError(f"{path}: seeds: expected a list of integers")
    workloads = data.get("workloads", [])
    if not isinstance(workloads, list) or not all(isinstance(w, dict) for w in workloads):
        raise _pagelab.ConfigError(f"{path}: workloads: expected [[workloads]] tables")
    for i, w in enumerate(workloads):
        # TOML puts every key after a `[[workloads]]` header into that
        # table, so a sweep's own key written below one lands there.
        misplaced = sorted(set(w) & known)
        if misplaced:
            key = misplaced[0]
            raise _pagelab.ConfigError(
                f"{path}: workloads[{i}].{key}: `{key}` is a key of the sweep, not of a workload: "
                "write it at the top of the file, before the first [[workloads]] "
                "(TOML reads every key after a [[workloads]] header into that table)")
    return Sweep(id=sweep_id, base=data.get("base", {}), grid=grid, workloads=workloads, seeds=seeds)


#: The longest sweep id, in bytes. It names a directory and the files
#: `ID.csv` and `ID.provenance.json`, which are written beside as
#: `.ID.provenance.json.PID-N.tmp` first: 200 leaves room for those affixes
#: under Linux's 255-byte file names (NAME_MAX).
MAX_ID_BYTES = 200


def _a_directory_name(name: object) -> bool:
    return (isinstance(name, str) and bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")
            and len(name.encode("utf-8", "surrogatepass")) <= MAX_ID_BYTES)


def progress_bar(speed_estimate_period: float = 30.0):
    """The bar of a sweep's runs, shown when stderr is a terminal: done of
    total, elapsed, ETA. `speed_estimate_period`: the seconds of recent
    progress the ETA's speed is taken over (rich's default, 30 s, suits
    runs of seconds; runs of minutes need the whole elapsed time)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        disable=not sys.stderr.isatty(),
        transient=True,
        speed_estimate_period=speed_estimate_period,
    )


class SharedBar:
    """One bar over the runs of several sweeps (`pagelab reproduce --all`):
    each adds its runs to the total as it learns them."""

    def __init__(self, bar, task):
        self.bar, self.task = bar, task

    def total(self) -> int:
        return int(next(t.total for t in self.bar.tasks if t.id == self.task) or 0)

    def add(self, runs: int) -> None:
        self.bar.update(self.task, total=self.total() + runs)

    def advance(self) -> None:
        self.bar.advance(self.task)


@contextlib.contextmanager
def _runs_bar(shared: SharedBar | None, runs: int):
    """`shared` with `runs` more to do, or a bar of this sweep's own."""
    if shared is not None:
        shared.add(runs)
        yield shared
        return
    with progress_bar() as bar:
        yield SharedBar(bar, bar.add_task("runs", total=runs))


@dataclasses.dataclass
class SweepOutcome:
    points: list[Point]
    #: Runs done now, runs found in the store, runs that failed (hash -> error).
    ran: int
    reused: int
    errors: dict[str, str]
    store_path: Path

    def frame(self, store: Store | None = None):
        """One row per point: its parameters, `config_hash`, `seconds` and
        every statistic (points that failed are left out). `store`: the
        store already open (for writing), else it is opened to read."""
        import pandas as pd

        with contextlib.nullcontext(store) if store is not None else Store(self.store_path, read_only=True) as store:
            runs = store.raw(p.hash for p in self.points)
            by_hash = {r.config_hash: r for r in runs.itertuples()}
            stats = {h: store.row_json(r.stats, h) for h, r in by_hash.items()}
        rows = []
        for p in self.points:
            r = by_hash.get(p.hash)
            if r is None:
                continue
            row = dict(stats[p.hash])
            row.update(p.params)
            row["config_hash"] = p.hash
            row["seconds"] = r.seconds
            rows.append(row)
        df = pd.DataFrame(rows)
        if len(df):
            front = list(self.points[0].params) + ["config_hash", "seconds"]
            df = df[[c for c in front if c in df] + [c for c in df.columns if c not in front]]
        return df


def sweep_to_dir(spec: Sweep, out: str | Path, *, jobs: int | None = None, executor: str = "local",
                 address: str | None = None, log=None):
    """What `pagelab sweep` and `pagelab.run_sweep` do: runs the sweep into
    OUT's store, then writes `OUT/ID.csv` (one row per point) and
    `OUT/ID.provenance.json` (version, commit, date, machine, wall-clock
    seconds, runs done and reused). Returns the outcome and the table."""
    import time

    from pagelab import provenance
    from pagelab.output import write_atomic

    out = Path(out)
    started = time.perf_counter()
    outcome = run_sweep(spec, out, jobs=jobs, executor=executor, address=address, log=log)
    df = outcome.frame()
    if len(df):
        write_atomic(out / f"{spec.id}.csv", df.to_csv(index=False))
    provenance.write(out / f"{spec.id}{provenance.SUFFIX}", provenance.collect(
        kind="sweep", id=spec.id, points=len(outcome.points), ran=outcome.ran, reused=outcome.reused,
        failed=len(outcome.errors), jobs=jobs, executor=executor, seconds=round(time.perf_counter() - started, 1)))
    return outcome, df


def run_sweep(
    spec: Sweep,
    out: str | Path,
    *,
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    experiment: str | None = None,
    log=None,
    progress: SharedBar | None = None,
) -> SweepOutcome:
    """Runs every point not yet in DIR/results.duckdb and stores it.
    `progress`: a bar shared with other sweeps (else one of its own)."""
    from pagelab.executors import make_executor

    out = Path(out)
    points = expand(spec)
    resolve(points, f"<sweep {spec.id}>")
    store = Store(out)
    try:
        stored = store.hashes()
        todo: dict[str, Point] = {}
        for p in points:
            if p.hash not in stored and p.hash not in todo:
                todo[p.hash] = p
        reused = len({p.hash for p in points} & stored)
        ex = make_executor(executor, jobs, address)
        versions = local_versions()
        errors: dict[str, str] = {}
        name = experiment or spec.id
        if log:
            log(f"{spec.id}: {len(points)} points, {reused} already stored, {len(todo)} to run ({ex.name}, {getattr(ex, 'jobs', None) or 'all'} jobs)")
        with _runs_bar(progress, len(todo)) as bar:

            def on_result(res: dict) -> None:
                store_result(store, todo[res["hash"]], res, experiment=name, versions=versions, errors=errors, log=log)
                bar.advance()

            ex.run([p.task() for p in todo.values()], on_result)
    finally:
        store.close()
    return SweepOutcome(points, len(todo) - len(errors), reused, errors, store.path)


def store_result(store: Store, p: Point, res: dict, *, experiment: str, versions: dict, errors: dict[str, str],
                 log=None) -> None:
    """Stores the result `res` of point `p` (an executor's), or records its
    error in `errors` (hash -> message) and logs it."""
    if "error" in res:
        errors[p.hash] = res["error"]
        if log:
            log(f"failed {p.params}: {res['error']}")
        return
    if config_hash(res["config_toml"]) != p.hash:
        raise RuntimeError(f"run {p.params}: resolved configuration differs from the one hashed")
    store.insert(config_toml=res["config_toml"], stats=res["stats"], seconds=res["seconds"], experiment=experiment,
                 params=p.params, versions=versions)
