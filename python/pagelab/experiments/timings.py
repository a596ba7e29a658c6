"""How long each experiment takes, per variant, as recorded: what
`pagelab reproduce --list` shows.

Every `pagelab reproduce` writes `OUT/ID.provenance.json` with its
wall-clock time, jobs, seeds and how many runs it did and reused. A run
that did all of its runs itself (none reused from the store) is a
measurement of the experiment's time; `record` adds those to
`timings.csv` beside this file, which the repository keeps:

    python -m pagelab.experiments.timings out/chp-fig4 out/frag-sweep ...

A variant never recorded shows as such, never as a guess.
"""

from __future__ import annotations

import csv
import dataclasses
import sys
import textwrap
from pathlib import Path

from pagelab import provenance

#: The recorded times (id, variant, seconds, jobs, seeds, runs, date,
#: commit, cpu, cores, and the host's load average when the run ended).
TIMINGS = Path(__file__).with_name("timings.csv")
COLUMNS = ["id", "variant", "seconds", "jobs", "seeds", "runs", "date", "commit", "cpu", "cores", "load"]
VARIANTS = ("full", "quick", "tiny")


def duration(seconds: float) -> str:
    """`45 s`, `3.5 min`, `2.1 h`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@dataclasses.dataclass
class Timings:
    #: (id, variant) -> the latest recorded row.
    rows: dict[tuple[str, str], dict[str, str]]

    def line(self, exp_id: str) -> str:
        """`time: full not recorded; quick 1.5 min (2 seeds, 2 jobs); tiny 6 s (1 seed, 2 jobs)`."""
        parts = []
        for v in VARIANTS:
            r = self.rows.get((exp_id, v))
            if r is None:
                parts.append(f"{v} not recorded")
            else:
                seeds = f"{r['seeds']} seed{'s' if r['seeds'] != '1' else ''}"
                parts.append(f"{v} {duration(float(r['seconds']))} ({seeds}, {r['jobs']} jobs)")
        return "time: " + "; ".join(parts)

    def legend(self) -> str:
        rows = list(self.rows.values())
        when = ""
        if rows:
            dates = sorted(r["date"][:10] for r in rows)
            cpus = ", ".join(sorted({f"{r['cpu']} x {r['cores']}" for r in rows}))
            loads = sorted(float(r["load"]) for r in rows if r.get("load"))
            load = f", load average {loads[0]:g} to {loads[-1]:g}" if loads else ""
            when = f" on {cpus}, {dates[0]} to {dates[-1]}{load}"
        return (f"Times: wall clock of a whole `pagelab reproduce` that ran every run itself{when} "
                f"({TIMINGS.name}); another machine, or other work on it, changes them.")


    def table(self, ids: list[str]) -> str:
        """`reproduce --all --list`: per experiment its recorded time in
        each variant (`-`: never recorded), the sums, and how many are
        missing from each sum."""
        width = max([len("experiment")] + [len(i) for i in ids])
        lines = [f"{'experiment':<{width}}" + "".join(f"  {v:>9}" for v in VARIANTS)]
        sums = {v: 0.0 for v in VARIANTS}
        missing = {v: 0 for v in VARIANTS}
        for i in ids:
            cells = []
            for v in VARIANTS:
                r = self.rows.get((i, v))
                if r is None:
                    missing[v] += 1
                    cells.append("-")
                else:
                    sums[v] += float(r["seconds"])
                    cells.append(duration(float(r["seconds"])))
            lines.append(f"{i:<{width}}" + "".join(f"  {c:>9}" for c in cells))
        lines.append(f"{'sum':<{width}}" + "".join(f"  {duration(sums[v]) if missing[v] < len(ids) else '-':>9}"
                                                    for v in VARIANTS))
        lines.append(f"{'not recorded':<{width}}" + "".join(f"  {missing[v]:>9}" for v in VARIANTS))
        legend = (f"{self.legend()} A sum leaves out the experiments not recorded (-), and adds times taken "
                  "one experiment at a time: `reproduce --all` runs a point two experiments declare once.")
        return "\n".join(lines) + "\n\n" + textwrap.fill(legend, 80)


@dataclasses.dataclass
class StoreTotal:
    """What a store's runs took: their simulation seconds (each run's
    `seconds`, as the store records it), and that over the jobs, the wall
    clock they would take if the jobs were always busy."""

    path: Path
    runs: int
    seconds: float
    jobs: int

    def line(self) -> str:
        return (f"{self.path}: {self.runs} runs, {self.seconds:.1f} run seconds; over {self.jobs} jobs "
                f"{duration(self.seconds / self.jobs)}")


def store_total(path: Path, jobs: int | None = None) -> StoreTotal:
    """Today's total of a store: the sum of its runs' `seconds` divided by
    `jobs` (default: every core, as `reproduce` runs)."""
    import os

    from pagelab.store import Store

    with Store(path, read_only=True) as store:
        runs = store.raw()
    return StoreTotal(store.path, len(runs), float(runs.seconds.sum()), jobs or os.cpu_count() or 1)


def expected_times(path: Path = TIMINGS) -> Timings:
    rows: dict[tuple[str, str], dict[str, str]] = {}
    if path.exists():
        with path.open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                rows[(r["id"], r["variant"])] = r
    return Timings(rows)


def row_of(info: dict) -> dict[str, str] | None:
    """The timing row of an experiment's provenance, or None when it is not
    a measurement (runs reused from the store, no wall-clock time, or one
    experiment of a `reproduce --all`, whose clock ran for the batch)."""
    if info.get("kind") != "experiment" or info.get("reused", 1) != 0 or "seconds" not in info or "batch" in info:
        return None
    return {"id": info["id"], "variant": info["variant"], "seconds": f"{float(info['seconds']):.1f}",
            "jobs": str(info.get("jobs") or info.get("cores")), "seeds": str(len(info.get("seeds", []))),
            "runs": str(info.get("ran", "")), "date": info["date"], "commit": info["commit"], "cpu": info["cpu"],
            "cores": str(info.get("cores", "")), "load": str(info.get("load_avg_1min", ""))}


def record(dirs: list[Path], path: Path = TIMINGS) -> list[dict[str, str]]:
    """Adds the measurements among `dirs`' provenance files to `path` (a
    later one of the same experiment and variant replaces the earlier)."""
    table = expected_times(path).rows
    added = []
    for d in dirs:
        for p in sorted(Path(d).glob(f"*{provenance.SUFFIX}")):
            info = provenance.read(p)
            row = row_of(info) if info else None
            if row is not None:
                table[(row["id"], row["variant"])] = row
                added.append(row)
    ordered = [table[k] for k in sorted(table)]
    from pagelab.output import write_atomic
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(ordered)
    write_atomic(path, buf.getvalue())
    return added


if __name__ == "__main__":
    for r in record([Path(a) for a in sys.argv[1:]]):
        print(f"{r['id']} {r['variant']}: {duration(float(r['seconds']))}")
