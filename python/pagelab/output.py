"""Writing results: every file is written whole or not at all (a temporary
name beside it, then an atomic rename), and only after the run succeeded."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pagelab.api import Result


def write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        # mkstemp creates 0600; give the file the mode open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(out: Path, result: Result) -> None:
    """`stats.json` (one flat object), `config.resolved.toml`,
    `timeseries.json` when epochs were taken, and `provenance.json`
    (pagelab's version and commit, date, machine, wall-clock seconds)."""
    from pagelab import provenance

    write_atomic(out / "stats.json", json.dumps(result.stats, indent=1, sort_keys=True) + "\n")
    write_atomic(out / "config.resolved.toml", result.config_toml)
    if result.timeseries:
        write_atomic(out / "timeseries.json", json.dumps(result.timeseries) + "\n")
    provenance.write(out / provenance.RUN_FILE, provenance.collect(kind="run", seconds=round(result.seconds, 3)))


def save_figure(fig, path: Path) -> Path:
    """Saves a matplotlib figure as `path` (a PNG for screens and reports)
    and beside it as a PDF (vector, for papers), each whole or not at all
    (temporary name, rename); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for target in dict.fromkeys([path, path.with_suffix(".pdf")]):
        tmp = target.with_name(f".{target.stem}.tmp{target.suffix}")
        try:
            # "tight": legends and captions outside the axes are kept.
            fig.savefig(tmp, format=target.suffix[1:] or "png", dpi=150, bbox_inches="tight", pad_inches=0.05)
            tmp.replace(target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
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
