"""The results store: one embedded DuckDB file (`results.duckdb` in a sweep's
output directory), one row per run.

A row is keyed by `config_hash`, the SHA-256 of a canonical form of the
run's resolved configuration (the TOML the core writes with every key
spelled out), so the same configuration is never stored twice. The
canonical form (`canonical_config`) is the configuration's keys and values,
sorted, as JSON, leaving out every key that is not in `STORE_KEYS` (the keys
of pagelab when this form was fixed, `store_keys.txt`) and is at its
default: a key added later with a default that keeps the old behaviour
does not change the hash of the runs stored before it, so they are not
run again. A key of `STORE_KEYS` always counts, so changing an existing
default does rerun. (The canonical form replaced the hash of the TOML text;
runs stored before it are run once more.) Each run is inserted
in its own transaction once it has finished: killing the writer at any
moment loses only the runs still in flight.

Columns of `runs`:

| column | meaning |
|---|---|
| `config_hash` | SHA-256 (hex) of `config_toml`; primary key |
| `experiment` | the experiment or sweep that first stored the run |
| `params` | the point's parameters (grid labels, workload, seed) as JSON |
| `workload`, `seed` | two of those parameters as columns |
| `stats` | every statistic (docs/stats.md), one flat JSON object |
| `config_toml` | the resolved configuration; runs again as is |
| `seconds` | wall-clock seconds of the simulation |
| `pagelab_version`, `python_version`, `host` | where it ran |
| `finished_at` | UTC timestamp of the insert |

`Store.frame()` expands `params` and `stats` into columns (a wide pandas
DataFrame); `Store.to_parquet(path)` exports that table.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import functools
import hashlib
import json
import platform
import socket
from pathlib import Path
from typing import Any, Iterable, Mapping

from pagelab import _pagelab

FILENAME = "results.duckdb"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    config_hash     VARCHAR PRIMARY KEY,
    experiment      VARCHAR,
    params          VARCHAR,
    workload        VARCHAR,
    seed            BIGINT,
    stats           VARCHAR,
    config_toml     VARCHAR,
    seconds         DOUBLE,
    pagelab_version VARCHAR,
    python_version  VARCHAR,
    host            VARCHAR,
    finished_at     TIMESTAMP
)
"""

_COLUMNS = [
    "config_hash",
    "experiment",
    "params",
    "workload",
    "seed",
    "stats",
    "config_toml",
    "seconds",
    "pagelab_version",
    "python_version",
    "host",
    "finished_at",
]


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys; tables in arrays (`[[workloads]]`) by index."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(v, f"{prefix}{k}.", out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flat(v, f"{prefix}{i}.", out)
    else:
        out[prefix[:-1]] = value
    return out


def _pattern(key: str) -> str:
    """`workloads.1.kind` -> `workloads.*.kind`."""
    return ".".join("*" if part.isdigit() else part for part in key.split("."))


@functools.lru_cache(maxsize=1)
def store_keys() -> frozenset[str]:
    """The keys (as patterns) whose values always count in the hash."""
    text = (Path(__file__).parent / "store_keys.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


@functools.lru_cache(maxsize=1)
def default_values() -> dict[str, Any]:
    """Every key's default, as a pattern: the resolved configuration of a
    minimal one (the keys of one core's `[workload]` also stand for those
    of each `[[workloads]]` table)."""
    import tomllib

    from pagelab import _pagelab

    resolved = tomllib.loads(_pagelab.resolve_config('[workload]\nkind = "gups"\n', "<defaults>", []))
    flat = {_pattern(k): v for k, v in _flat(resolved, "", {}).items()}
    flat.update({"workloads.*." + k[len("workload."):]: v for k, v in flat.items() if k.startswith("workload.")})
    return flat


def canonical_config(config_toml: str) -> str:
    """The form of a resolved configuration that the hash is taken of (see
    the module's text): sorted keys and values as JSON, without the keys
    outside `store_keys()` that are at their defaults."""
    import tomllib

    flat = _flat(tomllib.loads(config_toml), "", {})
    keys, defaults = store_keys(), default_values()
    _missing = object()
    kept = {
        k: v for k, v in flat.items()
        if _pattern(k) in keys or defaults.get(_pattern(k), _missing) != v
    }
    return json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_hash(config_toml: str) -> str:
    """The key of a run: SHA-256 of `canonical_config(config_toml)`."""
    return hashlib.sha256(canonical_config(config_toml).encode("utf-8")).hexdigest()


class Store:
    """A results store. `Store(DIR)` opens (or creates) DIR/results.duckdb;
    a path ending in `.duckdb` is used as is. One process writes at a time."""

    def __init__(self, path: str | Path, read_only: bool = False):
        import duckdb

        path = Path(path)
        if path.suffix != ".duckdb":
            path = path / FILENAME
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        if path.exists() and not path.is_file():
            raise OSError(errno.EISDIR if path.is_dir() else errno.EINVAL, "not a results store file", str(path))
        try:
            self.con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as e:
            if "lock" in str(e).lower():
                raise OSError(errno.EBUSY, "in use by another process (one sweep writes a store at a time)", str(path)) from None
            raise _pagelab.TraceError(f"{path}: not a readable results store: {_first_line(e)}") from None
        try:
            if not read_only:
                self.con.execute(_SCHEMA)
            self._check_columns()
        except BaseException:
            self.con.close()
            raise

    def _check_columns(self) -> None:
        """A store whose `runs` table is missing or has other columns (a
        DuckDB file of something else) is refused, named."""
        import duckdb

        try:
            cols = [r[0] for r in self.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs' ORDER BY ordinal_position"
            ).fetchall()]
        except duckdb.Error as e:
            raise _pagelab.TraceError(f"{self.path}: not a readable results store: {_first_line(e)}") from None
        missing = [c for c in _COLUMNS if c not in cols]
        if missing:
            what = "no runs table" if not cols else f"its runs table has no column {missing[0]}"
            raise _pagelab.TraceError(f"{self.path}: not a pagelab results store ({what})")

    def row_json(self, text: str, h: str) -> dict[str, Any]:
        """A row's JSON object (`params`, `stats`); damaged text names the
        store and the row."""
        try:
            value = json.loads(text)
        except (TypeError, ValueError) as e:
            raise _pagelab.TraceError(f"{self.path}: run {h[:12]}: not JSON ({e})") from None
        if not isinstance(value, dict):
            raise _pagelab.TraceError(f"{self.path}: run {h[:12]}: expected a JSON object, got {type(value).__name__}")
        return value

    def _query(self, sql: str, params: list | None = None):
        """Runs a read; a store damaged past its header (DuckDB fails on a
        page it reads) is bad input naming the file, not an internal error."""
        import duckdb

        try:
            return self.con.execute(sql, params or [])
        except duckdb.Error as e:
            raise _pagelab.TraceError(f"{self.path}: not a readable results store: {_first_line(e)}") from None

    # -- context manager -------------------------------------------------
    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading ---------------------------------------------------------
    def hashes(self) -> set[str]:
        return {h for (h,) in self._query("SELECT config_hash FROM runs").fetchall()}

    def has(self, h: str) -> bool:
        return self._query("SELECT 1 FROM runs WHERE config_hash = ?", [h]).fetchone() is not None

    def __len__(self) -> int:
        return self._query("SELECT count(*) FROM runs").fetchone()[0]

    def stats(self, h: str) -> dict[str, Any] | None:
        row = self._query("SELECT stats FROM runs WHERE config_hash = ?", [h]).fetchone()
        return None if row is None else self.row_json(row[0], h)

    def raw(self, hashes: Iterable[str] | None = None):
        """The `runs` table (or the rows of `hashes`) as a pandas DataFrame,
        `params` and `stats` still JSON text."""
        if hashes is None:
            return self._query("SELECT * FROM runs ORDER BY finished_at, config_hash").df()
        hs = list(hashes)
        return self._query(
            "SELECT * FROM runs WHERE list_contains(?, config_hash) ORDER BY finished_at, config_hash",
            [hs],
        ).df()

    def frame(self, hashes: Iterable[str] | None = None, experiment: str | None = None):
        """The wide table: one row per run, one column per parameter
        (`p.NAME`) and per statistic (its own name)."""
        import pandas as pd

        df = self.raw(hashes)
        if experiment is not None:
            df = df[df.experiment == experiment]
        df = df.reset_index(drop=True)
        params = pd.DataFrame([self.row_json(p, h) for p, h in zip(df.params, df.config_hash)], index=df.index)
        params = params.add_prefix("p.")
        stats = pd.DataFrame([self.row_json(s, h) for s, h in zip(df.stats, df.config_hash)], index=df.index)
        meta = df.drop(columns=["params", "stats"])
        return pd.concat([meta, params, stats], axis=1)

    # -- writing ---------------------------------------------------------
    def insert(
        self,
        *,
        config_toml: str,
        stats: Mapping[str, Any],
        seconds: float,
        experiment: str = "",
        params: Mapping[str, Any] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        """Stores one finished run in one transaction. False (and nothing
        written) when its configuration is already stored."""
        h = config_hash(config_toml)
        params = dict(params or {})
        v = dict(versions or local_versions())
        seed = params.get("seed")
        row = [
            h,
            experiment,
            json.dumps(params, sort_keys=True, default=str),
            None if params.get("workload") is None else str(params["workload"]),
            seed if isinstance(seed, int) else None,
            json.dumps(dict(stats), sort_keys=True),
            config_toml,
            float(seconds),
            v.get("pagelab"),
            v.get("python"),
            v.get("host"),
            _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None),
        ]
        # Ctrl-C would interrupt DuckDB mid-transaction; hold it until the
        # row is committed (it is delivered right after).
        with _signals_held():
            self.con.execute("BEGIN TRANSACTION")
            try:
                cur = self.con.execute(
                    f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                    "ON CONFLICT (config_hash) DO NOTHING RETURNING config_hash",
                    row,
                )
                inserted = cur.fetchone() is not None
                self.con.execute("COMMIT")
            except BaseException:
                try:
                    self.con.execute("ROLLBACK")
                except Exception:
                    pass
                raise
        return inserted

    def to_parquet(self, path: str | Path, hashes: Iterable[str] | None = None) -> Path:
        """Writes the wide table (see `frame`) to a Parquet file, whole or
        not at all (`output.output_file`)."""
        from pagelab.output import output_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        df = self.frame(hashes)
        with output_file(path) as tmp:
            df.to_parquet(tmp, index=False)
        return path


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


@contextlib.contextmanager
def _signals_held():
    """Defers Ctrl-C (SIGINT) and SIGTERM until the block is done: they are
    blocked, so DuckDB, which polls for signals, is not interrupted
    mid-transaction, and delivered as usual once unblocked (the handlers
    stay those in place: Python's, and the core's cleanup on SIGTERM)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def local_versions() -> dict[str, str]:
    import pagelab

    return {
        "pagelab": pagelab.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }
