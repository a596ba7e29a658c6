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
    """`stats.json` (one flat object), `config.resolved.toml`, and
    `timeseries.json` when epochs were taken."""
    write_atomic(out / "stats.json", json.dumps(result.stats, indent=1, sort_keys=True) + "\n")
    write_atomic(out / "config.resolved.toml", result.config_toml)
    if result.timeseries:
        write_atomic(out / "timeseries.json", json.dumps(result.timeseries) + "\n")


def save_figure(fig, path: Path) -> Path:
    """Saves a matplotlib figure whole or not at all (temporary name, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(path)
    return path


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
