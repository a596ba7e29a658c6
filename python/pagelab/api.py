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
    """What a run produced."""

    #: One flat dict of statistics (see docs/stats.md).
    stats: dict[str, float | int]
    #: Statistics snapshots, one per `run.epoch` instructions of core 0.
    timeseries: list[dict[str, float | int]]
    #: The configuration with every default written out, as TOML.
    config_toml: str
    #: Wall-clock seconds the simulation took.
    seconds: float

    def timeseries_frame(self):
        """The epochs as a pandas DataFrame (one row per epoch)."""
        import pandas as pd

        return pd.DataFrame(self.timeseries)


def toml_value(value: Any) -> str:
    """A Python value as a TOML literal, for a `KEY=VALUE` override."""
    text = tomli_w.dumps({"v": value})
    return text.split("=", 1)[1].strip()


def overrides_list(overrides: Mapping[str, Any]) -> list[str]:
    return [f"{key.replace('__', '.')}={toml_value(v)}" for key, v in overrides.items()]


def load_config_text(config: str | os.PathLike | Mapping[str, Any]) -> tuple[str, str]:
    """(TOML text, source name) of a path or a dict."""
    if isinstance(config, Mapping):
        return tomli_w.dumps(dict(config)), "<dict>"
    path = Path(config)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except OSError as e:
        raise _pagelab.ConfigError(f"cannot read configuration {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise _pagelab.ConfigError(f"{path}: not UTF-8 text (byte offset {e.start})") from None


def run(
    config: str | os.PathLike | Mapping[str, Any],
    *,
    export_phys: str | os.PathLike | None = None,
    export_format: str = "pagelab",
    export_memory_only: bool = False,
    progress: Callable[[int, int | None], None] | None = None,
    set: list[str] | None = None,  # noqa: A002 - mirrors the CLI's --set
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
    """
    import time

    text, source = load_config_text(config)
    items = list(set or []) + overrides_list(overrides)
    started = time.perf_counter()
    sim = _pagelab.Simulation(text, source, items)
    partial = None
    if export_phys is not None:
        partial = Path(str(export_phys) + ".partial")
        sim.export_phys(str(export_phys), export_format, export_memory_only)
    try:
        while not sim.step(STEP):
            if progress:
                progress(*sim.progress())
        sim.finish()
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    if progress:
        done, _ = sim.progress()
        progress(done, done)
    return Result(
        stats=dict(sim.stats()),
        timeseries=[dict(s) for s in sim.timeseries()],
        config_toml=sim.resolved_config(),
        seconds=time.perf_counter() - started,
    )
