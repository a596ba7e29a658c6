"""A run's epochs (`run.epoch`) as a table, each row marked with where it
sits: the core's `epoch.*` markers (docs/stats.md) become the columns
`phase` and `counted`.

Statistics in a snapshot count from the last reset (`run.warmup`,
`run.skip_init`), so a table that mixes rows from before and after a reset
has counters that fall back to zero at a row: the first `counted` one. By
default only the rows the final statistics cover are kept.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

#: The phases, in the order they happen.
PHASES = ("init", "warm-up", "measured")


def phase_of(record: Mapping[str, Any]) -> str:
    """`init` while core 0 is in its first-touch pass (`workload.init`),
    `warm-up` after it but before the statistics were reset, `measured`
    otherwise. A record without markers (a sampled run's window) is
    `measured`."""
    if record.get("epoch.init", 0):
        return "init"
    return "measured" if counted(record) else "warm-up"


def counted(record: Mapping[str, Any]) -> bool:
    """Whether the final statistics include this record's counts (it
    follows the last reset, or there is none)."""
    return bool(record.get("epoch.counted", 1))


def frame(records: Iterable[Mapping[str, Any]], everything: bool = False):
    """The records as a pandas DataFrame with `phase` and `counted` first;
    without `everything`, only the counted rows (renumbered from 0)."""
    import pandas as pd

    rows = list(records)
    df = pd.DataFrame(rows)
    df.insert(0, "phase", [phase_of(r) for r in rows])
    df.insert(1, "counted", [counted(r) for r in rows])
    if not everything and len(df):
        df = df[df.counted].reset_index(drop=True)
    return df
