"""Where a result came from: pagelab's version and commit, the date, the
machine. Every output directory carries it (`provenance.json` beside a
run's statistics, `ID.provenance.json` beside a sweep's or an experiment's
table) and every report shows it.

The commit is that of the git checkout the package is imported from
(`git describe`-like: the short hash, with `-dirty` when tracked files
differ from it); an installed wheel has none and says `unknown`. It is
looked up once per process.

Saved results (`pagelab reproduce ID --save-results`) carry the fuller
record of `source_commit` (the full hash) and `machine`.
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
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if dirty else "")


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


#: The source tree this package was imported from (an editable install
#: imports it from the repository itself).
SOURCE_DIR = Path(__file__).resolve().parent


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (`2026-11-28T16:03:20Z`)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(SOURCE_DIR), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def source_commit() -> dict:
    """The commit pagelab's sources are at (`commit`: the full hash, None
    outside a git checkout) and whether tracked files differ from it
    (`dirty`): a result from a dirty tree cannot be rebuilt from its
    commit alone."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def _cpuinfo() -> dict:
    """The CPU's model name and whether the CPU reports a hypervisor
    (the `hypervisor` flag: a TLB miss there is a two-dimensional walk)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {"cpu": platform.processor() or None, "virtualized": None}
    model, flags = None, ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = value
    return {"cpu": model, "virtualized": "hypervisor" in flags.split()}


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / (1 << 20), 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> dict:
    """The host a result was measured on: name, CPU model, logical CPUs,
    memory, whether it is a VM, the OS and Python."""
    info = {"host": socket.gethostname()}
    info.update(_cpuinfo())
    info.update({
        "cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
    })
    return info
