"""`pagelab trace champsim-gen`: synthetic ChampSim traces for checking the
timing model against ChampSim (docs/timing.md, "Validation against ChampSim").

Three kinds, each a loop whose iteration is one 8-byte load followed by
`LOOP_BODY - 1` filler instructions:

- ``chase``: a dependent pointer chase. Every load reads register 1 and
  writes register 1 (``mov r1, [r1]``), so each load's address is the
  previous load's data; the addresses are distinct random cache lines of the
  footprint (a random cyclic list, visited in list order).
- ``random``: a random independent-load loop. The loads read no register and
  write registers 1-4 in turn (distinct destinations), at random cache lines
  of the footprint (drawn with replacement).
- ``stream``: sequential 8-byte loads over the footprint from its start
  (independent, as ``random``), wrapping around at its end.

How the instructions between loads are modelled: the filler instructions
name no register and no memory operand (a nop to both simulators). ChampSim
charges them its pipeline's widths and its reorder buffer; they hold no
physical register, so ChampSim's register file (128 entries) does not cap
the window before its reorder buffer and load queue do. pagelab counts them
in the base CPI. There are no branch records: the instruction pointers
cycle over the loop body's `LOOP_BODY` addresses (always L1I hits in
ChampSim; a loop's branch would be predicted anyway), so neither simulator
sees a branch misprediction.

Records are ChampSim's standard 64-byte `input_instr` (docs/trace-format.md),
compressed with xz. Output is a function of (kind, instructions, footprint,
seed) alone: the same arguments write the same bytes.
"""

from __future__ import annotations

import lzma
import random
import struct
from pathlib import Path
from typing import Iterator

from pagelab.output import output_file

KINDS = ("chase", "random", "stream")

# One load and three filler instructions per iteration.
LOOP_BODY = 4
LINE = 64
# Where the loop's code and its data sit in the virtual address space
# (user-space addresses of an ordinary x86-64 process).
CODE_BASE = 0x401000
DATA_BASE = 0x10000000

# ChampSim's `input_instr`: ip; is_branch, branch_taken; destination
# registers [2]; source registers [4]; destination memory [2]; source memory [4].
RECORD = struct.Struct("<QBB2B4B2Q4Q")
assert RECORD.size == 64

# A chase's loads read and write register 1; the independent kinds' loads
# write registers 1-4 in turn and read none.
CHASE_REG = 1
INDEPENDENT_REGS = (1, 2, 3, 4)


_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from `4096` or `16MiB` (binary suffixes, as the configuration's sizes)."""
    t = text.strip()
    digits = len(t) - len(t.lstrip("0123456789"))
    unit = t[digits:].strip().lower()
    if digits == 0 or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 4096, 64KiB, 16MiB)")
    return int(t[:digits]) * _UNITS[unit]


def _check(kind: str, footprint: int) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown ChampSim trace kind {kind!r}; known: {', '.join(KINDS)}")
    if footprint < LINE or footprint % LINE:
        raise ValueError(f"footprint must be a positive multiple of {LINE} bytes, not {footprint}")


def load_addresses(kind: str, loads: int, footprint: int, seed: int) -> list[int]:
    """The virtual address of each load, in program order."""
    _check(kind, footprint)
    return list(_addresses(kind, loads, footprint, seed))


def _addresses(kind: str, loads: int, footprint: int, seed: int) -> Iterator[int]:
    """`load_addresses`, one at a time: a chase holds one lap (its list of
    lines) at once, the other kinds nothing."""
    lines = footprint // LINE
    rng = random.Random(seed)
    if kind == "stream":
        words = footprint // 8
        yield from (DATA_BASE + 8 * (i % words) for i in range(loads))
    elif kind == "random":
        yield from (DATA_BASE + LINE * rng.randrange(lines) for _ in range(loads))
    else:
        # A chase visits a random cyclic list of every line once per lap; a
        # trace shorter than a lap needs only its first `loads` nodes.
        left = loads
        while left > 0:
            lap = rng.sample(range(lines), min(lines, left))
            left -= len(lap)
            yield from (DATA_BASE + LINE * line for line in lap)


def chase_lap_bytes(instructions: int, footprint: int) -> int:
    """Host bytes a chase's lap takes while it is written (a Python list of
    ints: about 40 bytes a line)."""
    return 40 * min(footprint // LINE, -(-instructions // LOOP_BODY))


def record_chunks(kind: str, instructions: int, footprint: int, seed: int, chunk: int = 1 << 16) -> Iterator[bytes]:
    """The uncompressed trace, `instructions` records, in pieces of about
    `chunk` loop iterations (what `write` streams, so that a long trace
    never sits in memory whole)."""
    _check(kind, footprint)
    loads = -(-instructions // LOOP_BODY)
    # The filler records never change: one per position in the loop body.
    fillers = b"".join(RECORD.pack(CODE_BASE + 4 * k, *[0] * 14) for k in range(1, LOOP_BODY))
    left = instructions * RECORD.size
    out = bytearray()
    for i, addr in enumerate(_addresses(kind, loads, footprint, seed)):
        if kind == "chase":
            dst, src = CHASE_REG, CHASE_REG
        else:
            dst, src = INDEPENDENT_REGS[i % len(INDEPENDENT_REGS)], 0
        out += RECORD.pack(CODE_BASE, 0, 0, dst, 0, src, 0, 0, 0, 0, 0, addr, 0, 0, 0)
        out += fillers
        if len(out) >= chunk * LOOP_BODY * RECORD.size:
            piece = bytes(out[:left])
            left -= len(piece)
            out.clear()
            yield piece
    if left > 0:
        yield bytes(out[:left])


def records(kind: str, instructions: int, footprint: int, seed: int) -> bytes:
    """The uncompressed trace: `instructions` records."""
    return b"".join(record_chunks(kind, instructions, footprint, seed))


def write(path: str | Path, kind: str, instructions: int, footprint: int, seed: int, *, level: int = 6) -> dict:
    """Writes the trace, xz-compressed (`level`: xz's preset, which changes
    the file's size, never its records), whole or not at all; returns a
    summary."""
    if instructions < 1:
        raise ValueError(f"instructions must be at least 1, not {instructions}")
    _check(kind, footprint)
    if kind == "chase":
        _check_host_memory(chase_lap_bytes(instructions, footprint))
    with output_file(path) as tmp:
        with lzma.open(tmp, "wb", preset=level) as f:
            for piece in record_chunks(kind, instructions, footprint, seed):
                f.write(piece)
        size = tmp.stat().st_size
    return {"kind": kind, "instructions": instructions, "loads": -(-instructions // LOOP_BODY), "bytes": size}


def _check_host_memory(need: int) -> None:
    """Refuses a chase whose lap would not fit the host (--host-mem)."""
    from pagelab import _pagelab

    limit = _pagelab.host_memory_limit()
    if limit is not None and need > limit:
        raise _pagelab.ConfigError(
            f"configuration error at `--footprint`: a chase's lap of this many lines needs about "
            f"{need / (1 << 30):.1f} GiB of host memory, more than this host allows ({limit / (1 << 30):.1f} GiB; "
            "PAGELAB_HOST_MEM or --host-mem sets it)"
        )
