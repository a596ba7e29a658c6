"""Shared helpers for pagelab's Python tests.

Every configuration here is small (tens of MiB, ~10^5 accesses) so that the
whole suite runs in seconds on two shared cores.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: The statistics the core-engine issue makes a contract.
CONTRACT_STATS = [
    "instructions",
    "accesses",
    "dtlb.l1.misses",
    "dtlb.l2.misses",
    "walks",
    "walk.mem_refs",
    "pwc.hits",
    "faults",
    "faults.huge",
    "cache.l1d.misses",
    "cache.l2.misses",
    "cache.llc.accesses",
    "cache.llc.misses",
    "cycles",
    "cycles.translation",
    "cycles.data",
    "cycles.faults",
    "mem.mapped.4k",
    "mem.mapped.2m",
    "mem.mapped.1g",
    "phys.fi",
]

#: Of those, the ones that belong to a core (and have `coreN.` copies).
CORE_STATS = [
    s for s in CONTRACT_STATS if not s.startswith("mem.mapped.") and not s.startswith("phys.")
]

#: A small gups run: 32 MiB on a 256 MiB machine, 40k updates.
SMALL = {
    "machine": {"phys_mem": "256MiB"},
    "workload": {"kind": "gups", "footprint": "32MiB", "accesses": 40_000},
}

#: A fragmentation snapshot as `pagelab frag capture` writes it (a real
#: machine's buddyinfo and pagetypeinfo).
SNAPSHOT = """== /proc/buddyinfo
Node 0, zone   Normal    842   1511    705    184     97     22    623    448    148    227   1118
== /proc/pagetypeinfo
Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone   Normal, type    Unmovable    472    343    290      0     44     11      3      2      4      0      0
Node    0, zone   Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118
Node    0, zone   Normal, type  Reclaimable    370   1168    415    183     52     11      4      2      3      1      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate
Node 0, zone   Normal           44         2992          100            0            0
"""


def small(**sections) -> dict:
    """A deep copy of SMALL, with `sections` merged one level deep."""
    cfg = copy.deepcopy(SMALL)
    for name, table in sections.items():
        cfg.setdefault(name, {}).update(table)
    return cfg


_UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def nbytes(value) -> int:
    """A size as the resolved configuration writes it (`"32KiB"`, `"64"`, 64)."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]iB|B)?\s*", str(value))
    assert m, f"cannot read size {value!r}"
    return int(m.group(1)) * _UNITS[m.group(2) or ""]


def pagelab_command() -> list[str]:
    """The installed console script, or `python -m pagelab.cli`."""
    script = Path(sys.executable).parent / "pagelab"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "pagelab.cli"]


#: A hang guard, not a timing: on a machine shared by other jobs (load
#: average far above its cores) a tiny run can take ten times its quiet
#: time, so PAGELAB_TEST_TIMEOUT_SCALE stretches every command's limit.
TIMEOUT_SCALE = float(os.environ.get("PAGELAB_TEST_TIMEOUT_SCALE", "1"))


def run_cli(*args, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    """Runs `pagelab ARGS...`; a wide, colourless terminal so that rich
    neither wraps nor styles what the tests read."""
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", TERM="dumb")
    return subprocess.run(
        pagelab_command() + [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout * TIMEOUT_SCALE,
    )


def write_toml(path: Path, cfg: dict) -> Path:
    import tomli_w

    path.write_text(tomli_w.dumps(cfg))
    return path


def zstd_decompress(data: bytes) -> bytes | None:
    """Decompresses with the `zstandard` module or the `zstd` tool; None
    when neither is available."""
    try:
        import zstandard
    except ImportError:
        zstandard = None
    if zstandard is not None:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    tool = shutil.which("zstd")
    if tool is None:
        return None
    return subprocess.run([tool, "-dc"], input=data, capture_output=True, check=True).stdout


@pytest.fixture
def small_toml(tmp_path) -> Path:
    return write_toml(tmp_path / "small.toml", SMALL)


def proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state, parent, ...),
    or None when the process is gone or a zombie."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields


def live_children(pid: int) -> list[int]:
    """Live child processes of `pid`."""
    pids = (int(e) for e in os.listdir("/proc") if e.isdigit())
    return [p for p in pids if (f := proc_stat(p)) is not None and int(f[1]) == pid]


# -- Skipped tests in CI ---------------------------------------------------
#
# A test that skips for a missing tool passes silently, so CI could go green
# by skipping. With PAGELAB_ALLOWED_SKIPS naming a file (`.ci/run` sets it to
# `.ci/allowed-skips`), a skip whose reason matches no line of that file
# fails the run. Each line of the file is a substring of an allowed reason;
# `#` starts a comment.


def _unexpected_skips(config) -> list[str]:
    path = os.environ.get("PAGELAB_ALLOWED_SKIPS")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not path or reporter is None:
        return []
    lines = Path(path).read_text().splitlines()
    allowed = [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]
    unexpected = []
    for report in reporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        if not any(a in reason for a in allowed):
            unexpected.append(f"{report.nodeid}: {reason}")
    return unexpected


def pytest_sessionfinish(session, exitstatus):
    unexpected = _unexpected_skips(session.config)
    if unexpected:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line("Skipped without a place on the allow-list (PAGELAB_ALLOWED_SKIPS):", red=True)
        for line in unexpected:
            reporter.write_line(f"  {line}", red=True)
        session.exitstatus = 1
