"""What this machine says about itself: its caches (sysfs), its TLBs and
identity (CPUID), whether it is a virtual machine, its load.

The CPUID decoders take the registers as `native.cpuid` returns them, so
they are tested on documented register values without the machine.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import subprocess
from pathlib import Path

CACHE_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")

Cpuid = dict[tuple[int, int], tuple[int, int, int, int]]


@dataclasses.dataclass(frozen=True)
class Cache:
    """One cache level as sysfs describes it."""

    level: int
    size: int
    ways: int
    line: int
    sets: int


@dataclasses.dataclass(frozen=True)
class Array:
    """A TLB array: its entries and ways (ways == entries: fully associative)."""

    entries: int
    ways: int


#: A TLB geometry: arrays by pagelab's key prefix (`l1_4k`, `l1_2m`,
#: `l1_1g`, `l2`, `l2_1g`); missing keys were not reported.
Tlbs = dict[str, Array]


def _size(text: str) -> int:
    """sysfs's sizes: `48K`, `2048K`, `105M`."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def read_caches(root: Path = CACHE_SYSFS) -> dict[str, Cache]:
    """The L1D, the L2 and the last level (`l1d`, `l2`, `llc`) from sysfs's
    cache directory of CPU 0."""
    found: dict[tuple[int, str], Cache] = {}
    for index in sorted(root.glob("index*")):
        read = lambda name: (index / name).read_text().strip()  # noqa: E731
        try:
            level, kind = int(read("level")), read("type")
            cache = Cache(level, _size(read("size")), int(read("ways_of_associativity")),
                          int(read("coherency_line_size")), int(read("number_of_sets")))
        except (OSError, ValueError, KeyError):
            continue
        found[(level, kind)] = cache
    l1d, l2 = found.get((1, "Data")), found.get((2, "Unified"))
    levels = sorted(level for (level, kind) in found if kind == "Unified")
    if l1d is None or l2 is None or not levels or levels[-1] < 3:
        raise LookupError(f"{root}: sysfs does not describe an L1D, an L2 and a last-level cache")
    return {"l1d": l1d, "l2": l2, "llc": found[(levels[-1], "Unified")]}


def model_shape(cache: Cache) -> tuple[int, int]:
    """(size, ways) as pagelab can build them (power-of-two sets), keeping
    the capacity as close as it can and, between equals, the ways: 105 MiB
    of 15 ways in 114,688 sets (56 slices of 2,048) become 131,072 sets of
    13 ways, 104 MiB."""
    if cache.sets & (cache.sets - 1) == 0:
        return cache.size, cache.ways
    lines = cache.size // cache.line
    best = None
    for sets in (1 << int(math.log2(cache.sets)), 1 << math.ceil(math.log2(cache.sets))):
        ways = max(1, round(lines / sets))
        key = (abs(sets * ways - lines), abs(ways - cache.ways))
        if best is None or key < best[0]:
            best = (key, sets * ways * cache.line, ways)
    return best[1], best[2]


def partitioned(cache: Cache, size: int) -> Cache:
    """The cache cut to about `size` bytes by its ways, its sets kept: what
    a partition of its ways gives a process (Intel's Cache Allocation
    Technology), the way a shared host's LLC can be smaller than sysfs says."""
    ways = max(1, min(cache.ways, round(cache.ways * size / cache.size)))
    return Cache(cache.level, cache.sets * ways * cache.line, ways, cache.line, cache.sets)


def vendor(regs: Cpuid) -> str:
    """`GenuineIntel`, `AuthenticAMD`, ... (leaf 0)."""
    _, b, c, d = regs.get((0, 0), (0, 0, 0, 0))
    return b"".join(r.to_bytes(4, "little") for r in (b, d, c)).decode("ascii", "replace").strip("\0")


def brand(regs: Cpuid) -> str:
    """The processor's brand string (leaves 0x80000002-4), or ''."""
    raw = b"".join(r.to_bytes(4, "little") for leaf in (0x80000002, 0x80000003, 0x80000004)
                   for r in regs.get((leaf, 0), (0, 0, 0, 0)))
    return raw.decode("ascii", "replace").strip("\0 ")


def signature(regs: Cpuid) -> tuple[int, int, int]:
    """(family, model, stepping) of leaf 1, extended fields folded in."""
    a = regs.get((1, 0), (0, 0, 0, 0))[0]
    base_family, base_model = (a >> 8) & 0xF, (a >> 4) & 0xF
    family = base_family + ((a >> 20) & 0xFF if base_family == 0xF else 0)
    model = base_model | (((a >> 16) & 0xF) << 4 if base_family in (0x6, 0xF) else 0)
    return family, model, a & 0xF


def intel_tlbs(regs: Cpuid) -> Tlbs:
    """Leaf 0x18 (deterministic address translation parameters): each
    subleaf an array, its type in EDX[4:0] (1 data, 3 unified, 4 load-only),
    level in EDX[7:5], page sizes in EBX[3:0] (4K, 2M, 4M, 1G), ways in
    EBX[31:16], sets in ECX, fully associative in EDX[8]."""
    out: Tlbs = {}
    for (leaf, _sub), (_a, b, c, d) in sorted(regs.items()):
        kind, level = d & 0x1F, (d >> 5) & 0x7
        if leaf != 0x18 or kind not in (1, 3, 4) or c == 0:
            continue
        ways = b >> 16
        array = Array(ways * c, ways * c if d & 0x100 else ways)
        sizes = {"4k": b & 1, "2m": b & 2, "1g": b & 8}
        for size, on in sizes.items():
            key = f"l1_{size}" if level == 1 else ("l2_1g" if size == "1g" else "l2")
            # A load-only array is what a load's translation looks up; it
            # wins over a store-only one or a duplicate.
            if on and level in (1, 2) and (key not in out or kind == 4):
                out[key] = array
    return out


#: AMD's associativity encoding of the L2 fields (AMD64 Architecture
#: Programmer's Manual, CPUID Fn8000_0006): code -> ways; 0xF fully
#: associative (-1 here).
_AMD_WAYS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 8: 16, 0xA: 32, 0xB: 48, 0xC: 64, 0xD: 96, 0xE: 128, 0xF: -1}


def _amd_array(entries: int, ways: int) -> Array | None:
    if entries == 0 or ways == 0:
        return None
    return Array(entries, entries if ways < 0 or ways >= entries else ways)


def amd_tlbs(regs: Cpuid) -> Tlbs:
    """Fn8000_0005 (L1: EBX 4K, EAX 2M/4M; ways in [31:24], 0xFF fully
    associative, entries in [23:16]), Fn8000_0006 (L2: EBX 4K, EAX 2M/4M;
    encoded ways in [31:28], entries in [27:16]) and Fn8000_0019 (1 GiB:
    EAX L1, EBX L2, as the L2 fields)."""
    out: Tlbs = {}
    l1 = regs.get((0x80000005, 0))
    if l1:
        for key, reg in (("l1_4k", l1[1]), ("l1_2m", l1[0])):
            ways = reg >> 24
            array = _amd_array((reg >> 16) & 0xFF, -1 if ways == 0xFF else ways)
            if array:
                out[key] = array
    l2 = regs.get((0x80000006, 0))
    one_g = regs.get((0x80000019, 0))
    fields = [("l2", l2[1] if l2 else 0)] + ([("l1_1g", one_g[0]), ("l2_1g", one_g[1])] if one_g else [])
    for key, reg in fields:
        array = _amd_array((reg >> 16) & 0xFFF, _AMD_WAYS.get(reg >> 28, 0))
        if array:
            out[key] = array
    return out


def cpuid_tlbs(regs: Cpuid) -> Tlbs:
    """The TLB geometry CPUID reports, by vendor ({} when none: some
    hypervisors pass no leaf 0x18 through)."""
    v = vendor(regs)
    if v == "AuthenticAMD" or v == "HygonGenuine":
        return amd_tlbs(regs)
    if v == "GenuineIntel":
        return intel_tlbs(regs)
    return {}


@dataclasses.dataclass(frozen=True)
class Virtualization:
    """Whether this machine is a virtual machine, and each piece of
    evidence looked at (source -> what it said)."""

    inside: bool
    evidence: dict[str, str]


def _hypervisor_vendor(regs: Cpuid) -> str:
    _, b, c, d = regs.get((0x40000000, 0), (0, 0, 0, 0))
    return b"".join(r.to_bytes(4, "little") for r in (b, c, d)).decode("ascii", "replace").strip("\0")


def _command(args: list[str]) -> str | None:
    if not shutil.which(args[0]):
        return None
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout


def detect_virtualization(regs: Cpuid, sys_hypervisor: Path = Path("/sys/hypervisor/type")) -> Virtualization:
    """The CPUID hypervisor bit (leaf 1 ECX bit 31) and vendor (leaf
    0x40000000), /sys/hypervisor, systemd-detect-virt and the kernel log,
    each where it is available."""
    evidence: dict[str, str] = {}
    inside = False
    if regs.get((1, 0), (0, 0, 0, 0))[2] >> 31 & 1:
        evidence["cpuid"] = f"hypervisor bit set, vendor {_hypervisor_vendor(regs)!r}"
        inside = True
    else:
        evidence["cpuid"] = "hypervisor bit clear"
    if sys_hypervisor.exists():
        evidence["/sys/hypervisor"] = sys_hypervisor.read_text().strip()
        inside = True
    detected = _command(["systemd-detect-virt"])
    if detected is not None:
        evidence["systemd-detect-virt"] = detected.strip() or "none"
        inside = inside or detected.strip() not in ("", "none")
    log = _command(["dmesg"])
    if log:
        lines = [line.split("]", 1)[-1].strip() for line in log.splitlines() if "Hypervisor detected" in line]
        if lines:
            evidence["dmesg"] = lines[0]
            inside = True
    return Virtualization(inside, evidence)


def load_average() -> float:
    """The one-minute load average (0 where unknown)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def available_memory() -> int | None:
    """MemAvailable in bytes, or None where /proc/meminfo says nothing."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None
