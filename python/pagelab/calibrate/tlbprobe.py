"""The TLBs measured: how many pages a chase can cycle over before its
time per access steps up (`loops probe`), and what an L2 TLB hit costs.

Each page's line lies at a different offset (`loops.c`, `probe_node`), so
that up to the L1D's lines the chase hits the L1D whatever the page count:
the only step is then the TLB's. A chase over a share (`fill`) of a
candidate's entries fits an array of that size (the share leaves room for
the stack's and the code's translations, and for replacement that is not
exact LRU, which blurs the step: the L2 TLB of this project's machine
missed now and then at 90% of its 2,048 entries) and overflows the
candidate below it (the candidates are spaced further apart than 1 /
fill); a size is accepted while its probe stays within `STEP` of the
plateau below it.
"""

from __future__ import annotations

import dataclasses

from pagelab.calibrate.machine import Array, Cache, Tlbs

#: Sizes TLB arrays come in (entries), and the share of them each probe
#: uses: every x86 core of the last decade has its arrays among these
#: (Skylake 64 and 1536, Golden Cove 96 and 2048, Zen 64 or 72 and 1536 to
#: 3072). The L1's steps are sharp (64 and 72 need 0.9); the L2's blur.
L1_CANDIDATES = [8, 12, 16, 24, 32, 48, 64, 72, 96, 128, 192, 256]
L1_FILL = 0.9
L2_CANDIDATES = [512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
L2_FILL = 0.8
#: A probe more than this much slower than the plateau has left the array.
STEP = 1.3
#: Associativity assumed where nothing reports it: the largest up to this
#: that gives power-of-two sets (an estimate; the loops' pages are
#: contiguous, so they spread over the sets evenly whatever the ways).
MAX_ASSUMED_WAYS = 16


def probe_counts(candidates: list[int], fill: float) -> list[int]:
    return [max(2, round(c * fill)) for c in candidates]


@dataclasses.dataclass(frozen=True)
class Reach:
    """An array's entries as the probe found them; None when no step showed
    within the candidates."""

    entries: int | None
    plateau_ns: float
    points: dict[int, float]


def find_reach(points: dict[int, float], candidates: list[int], fill: float) -> Reach:
    """The largest candidate whose probe (at `fill` of it) stays within
    `STEP` of the first probe's time, provided a later probe leaves it."""
    probes = list(zip(candidates, probe_counts(candidates, fill)))
    plateau = points[probes[0][1]]
    fits = None
    for size, n in probes:
        if points[n] > plateau * STEP:
            return Reach(fits, plateau, points)
        fits = size
    return Reach(None, plateau, points)


def assumed_ways(entries: int) -> int:
    """The largest associativity up to `MAX_ASSUMED_WAYS` dividing `entries`
    into a power-of-two number of sets (fully associative if none)."""
    for ways in range(min(MAX_ASSUMED_WAYS, entries), 0, -1):
        sets, rest = divmod(entries, ways)
        if rest == 0 and sets & (sets - 1) == 0:
            return ways
    return entries


def l2_candidates(l1d: Cache) -> list[int]:
    """The L2 TLB sizes worth probing: those whose probe overflows the L1D
    by half (its lines then come from the L2 cache at every count, so the
    L1D's own step is not mistaken for the TLB's)."""
    lines = l1d.size // l1d.line
    return [c for c in L2_CANDIDATES if c * L2_FILL >= 1.5 * lines]


def measured_tlbs(l1_4k: Reach, l2: Reach, l1_2m: Reach) -> Tlbs:
    """The arrays the probes found, with assumed ways."""
    out: Tlbs = {}
    for key, reach in (("l1_4k", l1_4k), ("l2", l2), ("l1_2m", l1_2m)):
        if reach.entries:
            out[key] = Array(reach.entries, assumed_ways(reach.entries))
    return out


def stlb_probe_count(l1_4k: Reach, l1d: Cache) -> int | None:
    """Pages for measuring an L2 TLB hit: twice the L1 TLB's entries, so
    that every access misses it, while their lines (at different offsets)
    still fit three quarters of the L1D. None when both cannot hold."""
    if l1_4k.entries is None:
        return None
    n = 2 * l1_4k.entries
    return n if n <= 0.75 * (l1d.size // l1d.line) else None


def l2_tlb_latency_ns(l1_4k: Reach, stlb_ns: float) -> float:
    """An L2 TLB hit's cost in ns: the chase over `stlb_probe_count` pages
    against the L1 TLB's plateau, both hitting the L1D."""
    return max(0.0, stlb_ns - l1_4k.plateau_ns)
