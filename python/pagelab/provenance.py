"""Where a result came from: the commit of pagelab's sources, the machine,
the time. Saved results (`pagelab reproduce ID --save-results`) carry it,
so that a number on a results page can be traced to the code and the host
that measured it."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
from pathlib import Path

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
