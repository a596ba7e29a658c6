"""Writing results: every file goes through the core's one output helper
(`pagelab_core::outfile`, as `_pagelab.OutputFile`): the target must be
absent or a regular file (a FIFO, a device or a directory is refused, not
replaced), the data is written to a temporary file beside it and renamed
over it whole, the temporary file is removed on any error and on a signal
that ends the process, and errors name the user's path."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

from pagelab import _pagelab
from pagelab.api import Result


@contextlib.contextmanager
def output_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yields the temporary path to write `path` through; renames it over
    `path` when the block ends without an exception, else removes it."""
    out = _pagelab.OutputFile(str(path))
    try:
        yield Path(out.temp)
    except BaseException:
        out.discard()
        raise
    # The temporary file has the mode of a new file (umask applied).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out.temp, 0o666 & ~umask)
    out.commit()


def write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with output_file(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")


#: The files `pagelab run --out DIR` writes: another run into DIR removes
#: those of them it does not write (and nothing else there).
RUN_FILES = ("stats.json", "config.resolved.toml", "timeseries.json", "provenance.json")


def write_run(out: Path, result: Result) -> None:
    """`stats.json` (one flat object), `config.resolved.toml`,
    `timeseries.json` when epochs were taken (one an earlier run left there
    is removed when this one took none), and `provenance.json` (pagelab's
    version and commit, date, machine, wall-clock seconds)."""
    from pagelab import provenance

    write_atomic(out / "stats.json", json.dumps(result.stats, indent=1, sort_keys=True) + "\n")
    write_atomic(out / "config.resolved.toml", result.config_toml)
    if result.timeseries:
        write_atomic(out / "timeseries.json", json.dumps(result.timeseries) + "\n")
    else:
        stale = out / "timeseries.json"
        if stale.is_file() and not stale.is_symlink():
            stale.unlink()
    provenance.write(out / provenance.RUN_FILE, provenance.collect(kind="run", seconds=round(result.seconds, 3)))


def check_out_dir(out: Path) -> None:
    """Refuses, before any work, an output directory (`--out`) that is a
    file or lies under one."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise _pagelab.PagelabError(f"--out {out}: {'not a directory' if p == out else f'{p} is not a directory'}")
            return


def check_run_out(out: Path) -> None:
    """Refuses, before a run, an `--out` that is not a directory or whose
    files cannot be written (a FIFO named stats.json...)."""
    check_out_dir(out)
    for name in RUN_FILES:
        _pagelab.check_output(str(out / name))


def save_figure(fig, path: Path) -> Path:
    """Saves a matplotlib figure as `path` (a PNG for screens and reports)
    and beside it as a PDF (vector, for papers), each whole or not at all;
    returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for target in dict.fromkeys([path, path.with_suffix(".pdf")]):
        with output_file(target) as tmp:
            # "tight": legends and captions outside the axes are kept.
            fig.savefig(tmp, format=target.suffix[1:] or "png", dpi=150, bbox_inches="tight", pad_inches=0.05)
    return path


def pyplot():
    """matplotlib's pyplot with pagelab's one figure style
    (`experiments.common.FIGURE_STYLE`), on the Agg backend (no display
    needed) unless pyplot was already imported with another (a notebook's
    inline backend stays)."""
    import sys

    import matplotlib

    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pagelab.experiments.common import FIGURE_STYLE

    plt.rcParams.update(FIGURE_STYLE)
    return plt
