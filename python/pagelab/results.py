"""Results as committed data: an experiment's full-scale run, saved under
`results/<package>/<ID>/` by `pagelab reproduce ID --save-results`, so
that every number on a results page can be checked without re-running.

A saved run holds:

| file | what |
|---|---|
| `ID.csv` (and any other CSV the experiment writes) | the experiment's table, as `reproduce` writes it |
| `ID.paper.csv` | the paper's values beside pagelab's |
| `runs.csv.gz` | one row per run: its parameters, `seed`, `config_hash`, `seconds`, `finished_at`, `host`, and every statistic (the frame `analyze` was given, so an experiment's analysis runs on it again) |
| `provenance.json` | the variant, seeds, the runs' combined configuration hash, dates, commit, machine, wall-clock time |

Only a full run (`--variant full`) with at least `MIN_SEEDS` seeds is
saved: a headline's 95% interval needs seeds, and a quick run is not the
reproduction. `problems(dir)` says what is wrong with a saved run; a test
applies it to every run under `results/`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from pagelab import provenance
from pagelab.output import write_atomic

#: The variant that may be saved, and the fewest seeds a saved run has.
SAVED_VARIANT = "full"
MIN_SEEDS = 3
PROVENANCE = "provenance.json"
RUNS = "runs.csv.gz"
#: Where `--save-results` writes without an argument (relative to the
#: current directory: the repository's root when run from there).
DEFAULT_ROOT = Path("results")
#: Columns of `runs.csv` that are not parameters or statistics.
RUN_META = ("config_hash", "seconds", "finished_at", "host")


class SaveRefused(ValueError):
    """A run that may not be saved (another variant, too few seeds)."""


def package_of(exp) -> str:
    """The experiments package `exp` belongs to (`chp`, `elastic`...): the
    package of the module that declares it."""
    parts = exp.analyze.__module__.split(".")
    if len(parts) < 4 or parts[:2] != ["pagelab", "experiments"]:
        raise ValueError(f"experiment {exp.id} is declared outside an experiments package ({exp.analyze.__module__})")
    return parts[2]


def check_saveable(exp_id: str, variant: str, seeds: list[int]) -> None:
    """Raises SaveRefused unless a run of `variant` with `seeds` may be
    saved: called before anything runs, so that hours are not spent on a
    run that would be refused."""
    if variant != SAVED_VARIANT:
        raise SaveRefused(f"--save-results keeps only full runs: {exp_id} --variant {variant} is not the reproduction")
    if len(set(seeds)) < MIN_SEEDS:
        raise SaveRefused(f"--save-results needs at least {MIN_SEEDS} seeds for a 95% interval; "
                          f"{exp_id} would run {len(set(seeds))} (--seeds {MIN_SEEDS} or more)")


def experiment_hash(config_hashes) -> str:
    """The hash of a whole experiment's configuration: SHA-256 of its runs'
    configuration hashes (each that of the resolved configuration,
    `store.config_hash`), sorted, one per line. It changes when any run's
    configuration does, and not with the order the runs finished in."""
    text = "".join(f"{h}\n" for h in sorted(set(config_hashes)))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def runs_table(frame: pd.DataFrame, store_rows: pd.DataFrame) -> pd.DataFrame:
    """The runs as saved: the sweep's frame (parameters, `config_hash`,
    `seconds`, every statistic) with each run's `finished_at` and `host`
    from the store beside `seconds`."""
    meta = store_rows.set_index("config_hash")[["finished_at", "host"]]
    t = frame.copy()
    t.insert(t.columns.get_loc("seconds") + 1, "finished_at",
             pd.to_datetime(t.config_hash.map(meta.finished_at)).dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    t.insert(t.columns.get_loc("finished_at") + 1, "host", t.config_hash.map(meta.host))
    return t


def _gzip_csv(df: pd.DataFrame) -> bytes:
    """`df` as CSV, gzipped with no timestamp in the header, so the same
    runs give the same bytes (most statistics of a run are zeros of
    systems it does not use: they compress to almost nothing)."""
    return gzip.compress(df.to_csv(index=False).encode("utf-8"), mtime=0)


def save(exp, out: Path, root: Path, *, variant: str, seeds: list[int], frame: pd.DataFrame,
         store_rows: pd.DataFrame, files: list[Path], started: str, wall_seconds: float,
         jobs: int | None, executor: str, runs_now: int, runs_reused: int) -> Path:
    """Writes `root/<package>/<ID>/` whole or not at all (a temporary
    directory beside it, then renames) and returns it."""
    check_saveable(exp.id, variant, seeds)
    dest = Path(root) / package_of(exp) / exp.id
    runs = runs_table(frame, store_rows)
    csvs = sorted({Path(f).name for f in files if Path(f).suffix == ".csv"})
    record = {
        "experiment": exp.id,
        "package": package_of(exp),
        "title": exp.title,
        "paper": exp.paper,
        "variant": variant,
        "seeds": sorted(set(seeds)),
        "runs": len(runs),
        "runs_now": runs_now,
        "runs_reused": runs_reused,
        "config_hash": experiment_hash(runs.config_hash),
        "started": started,
        "finished": provenance.utc_now(),
        "runs_finished": [runs.finished_at.min(), runs.finished_at.max()],
        "wall_clock_seconds": round(wall_seconds, 1),
        "run_seconds_total": round(float(runs.seconds.sum()), 1),
        "jobs": jobs,
        "executor": executor,
        **provenance.source_commit(),
        "machine": provenance.machine(),
        "files": csvs + [RUNS],
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{exp.id}.tmp-"))
    try:
        # mkdtemp makes it 0700; give it the mode mkdir would.
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        for name in csvs:
            shutil.copyfile(out / name, tmp / name)
        write_atomic(tmp / RUNS, _gzip_csv(runs))
        write_atomic(tmp / PROVENANCE, json.dumps(record, indent=1) + "\n")
        _replace_dir(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _replace_dir(new: Path, dest: Path) -> None:
    """Puts directory `new` in the place of `dest` (which may not exist):
    the old one is renamed aside first, so that `dest` is always either
    the old run or the new one, never a mixture."""
    old = None
    if dest.exists():
        old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.old-"))
        dest.rename(old / dest.name)
    new.rename(dest)
    if old is not None:
        shutil.rmtree(old)


def load(directory: Path) -> tuple[dict, pd.DataFrame]:
    """A saved run's provenance and its runs."""
    directory = Path(directory)
    record = json.loads((directory / PROVENANCE).read_text(encoding="utf-8"))
    return record, pd.read_csv(directory / RUNS)


def saved_dirs(root: Path = DEFAULT_ROOT) -> list[Path]:
    """Every saved run under `root` (`<package>/<ID>/` holding a provenance)."""
    return sorted(p.parent for p in Path(root).glob(f"*/*/{PROVENANCE}"))


def problems(directory: Path) -> list[str]:
    """What makes a saved run unfit to be committed, in words (empty when
    nothing does): another variant, fewer than MIN_SEEDS seeds, a point
    without every seed, a configuration hash its runs do not give, a
    missing file, a directory that does not match its experiment."""
    directory = Path(directory)
    try:
        record, runs = load(directory)
    except (OSError, ValueError) as e:
        return [f"{directory}: cannot read: {e}"]
    found = []
    if record.get("variant") != SAVED_VARIANT:
        found.append(f"variant {record.get('variant')!r}, not {SAVED_VARIANT!r}")
    seeds = record.get("seeds") or []
    if len(set(seeds)) < MIN_SEEDS:
        found.append(f"{len(set(seeds))} seed(s), fewer than {MIN_SEEDS}")
    if (directory.parent.name, directory.name) != (record.get("package"), record.get("experiment")):
        found.append(f"saved as {record.get('package')}/{record.get('experiment')}")
    found += [f"listed file {f} missing" for f in record.get("files", []) if not (directory / f).is_file()]
    if "seed" not in runs or "config_hash" not in runs:
        return found + ["runs.csv has no seed or config_hash column"]
    if sorted(runs.seed.unique()) != sorted(seeds):
        found.append(f"runs' seeds {sorted(runs.seed.unique())} differ from the provenance's {sorted(seeds)}")
    params = [c for c in runs.columns[: runs.columns.get_loc("config_hash")] if c != "seed"]
    per_point = runs.groupby(params, dropna=False).seed.nunique() if params else pd.Series([runs.seed.nunique()])
    if (per_point < len(set(seeds))).any():
        found.append(f"{int((per_point < len(set(seeds))).sum())} point(s) without every seed")
    if record.get("config_hash") != experiment_hash(runs.config_hash):
        found.append("config_hash differs from the runs' configurations")
    return [f"{directory}: {p}" for p in found]
