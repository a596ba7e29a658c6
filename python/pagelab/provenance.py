"""Where a result came from: pagelab's version and commit, the date, the
machine. Every output directory carries it (`provenance.json` beside a
run's statistics, `ID.provenance.json` beside a sweep's or an experiment's
table) and every report shows it.

The commit is that of the git checkout the package is imported from
(`git describe`-like: the short hash, with `-dirty` when tracked files
differ from it); an installed wheel has none and says `unknown`. It is
looked up once per process.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

#: The file a run directory's provenance is written to.
RUN_FILE = "provenance.json"
#: Suffix of a sweep's or an experiment's provenance (`ID.provenance.json`).
SUFFIX = ".provenance.json"


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """The short commit of pagelab's checkout, `-dirty` when its tracked
    files were changed, or `unknown` outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def version_line() -> str:
    """`pagelab 0.1.0 (commit 1a2b3c4d5e6f)`: what `pagelab --version` prints."""
    import pagelab

    return f"pagelab {pagelab.__version__} (commit {commit()})"


def cpu_model() -> str:
    """The host's CPU model from /proc/cpuinfo, else the platform's name."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def collect(**extra: Any) -> dict[str, Any]:
    """The provenance of something made now: pagelab's version and commit,
    the UTC date, the host, its CPU and core count, the OS and Python, the
    host's load average (over the last minute); then `extra` (the variant,
    the seeds, the wall-clock seconds...)."""
    import pagelab

    info = {
        "pagelab": pagelab.__version__,
        "commit": commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        # What else ran: a wall-clock time means little without it.
        "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    info.update(extra)
    return info


def write(path: Path, info: dict[str, Any]) -> Path:
    """Writes `info` as JSON, atomically."""
    from pagelab.output import write_atomic

    write_atomic(path, json.dumps(info, indent=1, default=str) + "\n")
    return path


def read(path: Path) -> dict[str, Any] | None:
    """A provenance file's contents; None when absent or unreadable (a
    report of older results says so rather than failing)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
