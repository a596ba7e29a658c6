"""The timing model against ChampSim (docs/timing.md, "Validation against
ChampSim"): the same synthetic traces, pagelab configured as ChampSim's stock
configuration (examples/champsim-stock.toml), ChampSim's measured numbers
stored in tests/data/champsim/validation.json (ChampSim itself cannot run
here: it is built by hand, outside the repository).

The issue's criterion: cycles per instruction within 25% of ChampSim's on
each trace. Where pagelab misses it, the test is a strict xfail naming the
reason (so it fails the day the two agree), not a looser bound.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
import struct
from pathlib import Path

import pytest

import pagelab
from conftest import run_cli
from pagelab import champsim_traces as ct

ROOT = Path(__file__).parent.parent
CONFIG = ROOT / "examples" / "champsim-stock.toml"
DATA = json.loads((Path(__file__).parent / "data" / "champsim" / "validation.json").read_text())
KINDS = ("chase", "random", "stream")
PAGES = ("4k", "2m")
POLICY = {"4k": "base", "2m": "thp"}

#: (trace, page size) pairs where pagelab misses ChampSim's CPI by more than
#: 25%, and why (docs/timing.md explains each in full).
_LEAF_PTE = (
    "ChampSim gives every page-table entry a page of its own (vmem.cc), so each walk reads its leaf entry "
    "from DRAM (LLC translation misses = STLB misses); pagelab's x86 tables put 8 entries in a line and "
    "16 MiB's entries fit in 32 KiB, served by the L1D or the L2"
)
DISAGREE: dict[tuple[str, str], str] = {
    ("chase", "4k"): _LEAF_PTE + ": pagelab is faster (0.64 of ChampSim's CPI)",
    ("random", "4k"): _LEAF_PTE + ": pagelab is faster (0.45)",
    ("stream", "4k"): (
        "ChampSim gives every 4 KiB page a random physical page (virtual_memory.randomization), so its stream "
        "opens new DRAM rows at every page (48% row-buffer hits); pagelab's pages are the buddy allocator's "
        "consecutive frames, whose lines stay in open rows (99% hits): pagelab is faster (0.53)"
    ),
}

#: Where the huge pages' gain is too small in one simulator to rank (under
#: 2% of CPI), and why.
RANK_TOO_CLOSE: dict[str, str] = {
    "random": (
        "pagelab's 4 KiB walks find their entries in the L1D or L2 and overlap behind the fill-buffer-bound data "
        "misses, so THP gains 0.1% where ChampSim's DRAM-bound walks give it 47%"
    ),
}


# --- the generator ---------------------------------------------------------


def test_a_chase_record_by_hand():
    rec = ct.records("chase", 4, 1 << 20, seed=7)
    assert len(rec) == 4 * 64
    ip, br, taken, d0, d1, s0, s1, s2, s3, dm0, dm1, sm0, sm1, sm2, sm3 = struct.unpack_from("<QBB2B4B2Q4Q", rec, 0)
    assert (ip, br, taken) == (ct.CODE_BASE, 0, 0)
    # mov r1, [r1]: register 1 is both the source and the destination.
    assert (d0, d1, s0, s1, s2, s3) == (1, 0, 1, 0, 0, 0)
    assert (dm0, dm1, sm1, sm2, sm3) == (0, 0, 0, 0, 0)
    assert ct.DATA_BASE <= sm0 < ct.DATA_BASE + (1 << 20) and sm0 % 64 == 0
    # Three fillers: the next instruction addresses, nothing else.
    for k in range(1, 4):
        fields = struct.unpack_from("<QBB2B4B2Q4Q", rec, 64 * k)
        assert fields[0] == ct.CODE_BASE + 4 * k and not any(fields[1:])


def test_independent_loads_and_the_stream_by_hand():
    rec = ct.records("random", 16, 1 << 20, seed=1)
    loads = [struct.unpack_from("<QBB2B4B2Q4Q", rec, 64 * n) for n in range(0, 16, 4)]
    # Destinations 1, 2, 3, 4 in turn; no source register.
    assert [r[3] for r in loads] == [1, 2, 3, 4]
    assert all(r[5:9] == (0, 0, 0, 0) for r in loads)
    addrs = ct.load_addresses("stream", 10, 64, seed=3)
    # 8-byte steps from the start, wrapping at the footprint's end.
    assert addrs == [ct.DATA_BASE + a for a in (0, 8, 16, 24, 32, 40, 48, 56, 0, 8)]


def test_a_chase_visits_distinct_lines():
    addrs = ct.load_addresses("chase", 1000, 64 * 1000, seed=2)
    assert sorted(addrs) == [ct.DATA_BASE + 64 * i for i in range(1000)]
    assert addrs != sorted(addrs)


def test_the_generator_is_deterministic_per_seed():
    a, b, c = (ct.records("random", 400, 1 << 24, seed=s) for s in (5, 5, 6))
    assert a == b and a != c
    with pytest.raises(ValueError, match="unknown ChampSim trace kind"):
        ct.records("zigzag", 4, 4096, seed=1)
    with pytest.raises(ValueError, match="multiple of 64"):
        ct.records("chase", 4, 100, seed=1)


def test_pagelab_reads_the_chase_as_dependent(tmp_path):
    """pagelab's ChampSim reader turns register 1 into dependence: the same
    addresses cost far more as a chase than as independent loads."""
    cpi = {}
    for kind in ("chase", "random"):
        path = tmp_path / f"{kind}.xz"
        # Same addresses: the chase's order, written under both register patterns.
        raw = bytearray(ct.records(kind, 40_000, 8 << 20, seed=1))
        if kind == "random":
            chase = ct.load_addresses("chase", 10_000, 8 << 20, seed=1)
            for i, addr in enumerate(chase):
                struct.pack_into("<Q", raw, 256 * i + 32, addr)
        path.write_bytes(lzma.compress(bytes(raw), preset=0))
        s = pagelab.run(CONFIG, **{"workload.path": str(path), "workload.instructions": 40_000, "run.warmup": 10_000}).stats
        cpi[kind] = s["cycles"] / s["instructions"]
    assert cpi["chase"] > 4 * cpi["random"]


def test_the_command_writes_what_the_function_does(tmp_path):
    out = tmp_path / "c.xz"
    proc = run_cli("trace", "champsim-gen", "chase", "--out", out, "--instructions", 1000, "--footprint", "1MiB", "--seed", 4)
    assert proc.returncode == 0, proc.stderr
    assert lzma.decompress(out.read_bytes()) == ct.records("chase", 1000, 1 << 20, seed=4)
    bad = run_cli("trace", "champsim-gen", "chase", "--out", out, "--instructions", 10, "--footprint", "100")
    assert bad.returncode == 2 and "--footprint" in bad.stderr and "multiple of 64" in bad.stderr


# --- pagelab against ChampSim's stored numbers ------------------------------


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """The traces ChampSim ran, generated again (xz level 0: the same records,
    quicker to write); their records must hash as the ones ChampSim read."""
    out = tmp_path_factory.mktemp("champsim")
    paths = {}
    for kind in KINDS:
        t = DATA["traces"][kind]
        raw = ct.records(kind, t["instructions"], ct.parse_size(t["footprint"]), t["seed"])
        assert hashlib.sha256(raw).hexdigest() == t["records_sha256"], f"the {kind} trace is not the one ChampSim ran"
        paths[kind] = out / f"{kind}.xz"
        paths[kind].write_bytes(lzma.compress(raw, preset=0))
    return paths


@functools.cache
def _pagelab_stats(path: str, kind: str, page: str) -> dict:
    t = DATA["traces"][kind]
    return pagelab.run(
        CONFIG,
        **{
            "workload.path": path,
            "workload.instructions": t["warmup"] + t["simulation"],
            "run.warmup": t["warmup"],
            "os.policy": POLICY[page],
        },
    ).stats


def pagelab_cpi(traces, kind: str, page: str) -> float:
    s = _pagelab_stats(str(traces[kind]), kind, page)
    return s["cycles"] / s["instructions"]


def champsim_cpi(kind: str, page: str) -> float:
    r = DATA["results"][kind][page]
    return r["cycles"] / r["instructions"]


def _cases():
    for kind in KINDS:
        for page in PAGES:
            reason = DISAGREE.get((kind, page))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(kind, page, marks=marks, id=f"{kind}-{page}")


@pytest.mark.parametrize("kind,page", list(_cases()))
def test_cpi_within_25_percent_of_champsim(traces, kind, page):
    ratio = pagelab_cpi(traces, kind, page) / champsim_cpi(kind, page)
    assert 0.75 <= ratio <= 1.25, f"pagelab / ChampSim CPI = {ratio:.2f}"


def _rank_cases():
    for kind in KINDS:
        reason = RANK_TOO_CLOSE.get(kind)
        yield pytest.param(kind, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [], id=kind)


@pytest.mark.parametrize("kind", list(_rank_cases()))
def test_huge_pages_rank_as_in_champsim(traces, kind):
    """ChampSim's 2 MiB build against its 4 KiB build, pagelab's THP
    against 4 KiB pages: the faster of the two is the same, by at least 2%
    in both (a smaller gap ranks nothing)."""
    champsim = champsim_cpi(kind, "2m") / champsim_cpi(kind, "4k")
    mine = pagelab_cpi(traces, kind, "2m") / pagelab_cpi(traces, kind, "4k")
    assert champsim < 0.98 and mine < 0.98, f"2 MiB / 4 KiB CPI: ChampSim {champsim:.3f}, pagelab {mine:.3f}"


@pytest.mark.parametrize("kind", ["chase", "random"])
def test_leaf_entries_from_dram_explain_the_4k_gap(traces, kind):
    """Not the criterion, a check of its explanation: with every walk
    reference served by memory (`machine.walker.cache_level = "none"`; the
    page-walk caches still skip to the leaf, so that is the leaf's one
    read), as ChampSim's page table makes it, pagelab comes within 25% of
    ChampSim on the two 4 KiB traces it otherwise misses."""
    t = DATA["traces"][kind]
    s = pagelab.run(
        CONFIG,
        **{
            "workload.path": str(traces[kind]),
            "workload.instructions": t["warmup"] + t["simulation"],
            "run.warmup": t["warmup"],
            "machine.walker.cache_level": "none",
        },
    ).stats
    assert s["walk.mem_refs"] == s["walks"]
    ratio = s["cycles"] / s["instructions"] / champsim_cpi(kind, "4k")
    assert 0.75 <= ratio <= 1.25, f"pagelab / ChampSim CPI = {ratio:.2f}"


@pytest.mark.parametrize("kind", KINDS)
def test_dram_row_hits_match_champsim_on_2m_pages(traces, kind):
    """The row-buffer model (`machine.memory.dram`: ChampSim's DDR4-3200,
    open rows and bank mapping in examples/champsim-stock.toml) against
    ChampSim's own DRAM: with 2 MiB pages both simulators place the trace's
    lines alike in physical memory, so the share of DRAM reads that find
    their row open must agree within 5 points (a stream: nearly all; the
    chase and the random loads: nearly none). On 4 KiB pages ChampSim
    shuffles the pages (see DISAGREE)."""
    s = _pagelab_stats(str(traces[kind]), kind, "2m")
    d = DATA["results"][kind]["2m"]["dram"]
    champsim = d["row_buffer_hit"] / (d["row_buffer_hit"] + d["row_buffer_miss"])
    mine = s["dram.reads.row_hits"] / s["dram.reads"]
    assert mine == pytest.approx(champsim, abs=0.05), f"row-buffer hits: pagelab {mine:.3f}, ChampSim {champsim:.3f}"


@pytest.mark.parametrize("kind", KINDS)
def test_tlb_misses_match_champsim(traces, kind):
    """The TLBs have ChampSim's geometry and see the same pages: misses
    agree within 2% (ChampSim counts a miss merged into an outstanding one
    to the same page apart, as `mshr_merge`)."""
    s = _pagelab_stats(str(traces[kind]), kind, "4k")
    r = DATA["results"][kind]["4k"]
    dtlb = r["dtlb"]["miss"] - r["dtlb"]["mshr_merge"]
    stlb = r["stlb"]["miss"] - r["stlb"]["mshr_merge"]
    assert s["dtlb.l1.misses"] == pytest.approx(dtlb, rel=0.02)
    assert s["dtlb.l2.misses"] == pytest.approx(stlb, rel=0.02)
