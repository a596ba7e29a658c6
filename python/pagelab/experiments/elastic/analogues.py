"""The paper's workloads as analogues built from pagelab's generators, and
the scaled Neoverse N1 they run on (the `et-native` and `et-sizes`
experiments).

The artifact (cslab-ntua/elastic-translations-MICRO2024,
`bin/run-benchmarks.sh` and `src/benchmarks/`) runs ten programs. Each row
says what the analogue keeps of the program's access pattern and what it
does not. Hashjoin, SVM and XSBench have generators of their own, written
from the artifact's sources and its aarch64 binaries (each generator's file
in `crates/pagelab-core/src/workload/` lists what it keeps, with the
instructions per access read from the binary's loop).

| paper | analogue | keeps | does not keep |
|---|---|---|---|
| GUPS (`gups.c`: a 2^n-word table; each step of 128 LFSR streams reads `Table[elm]` and `Table[TableSize - elm]` and stores their combination to a small array) | `gups`, `write_fraction` 0, 9 instructions per load | uniform independent random reads, no reuse, no table writes; the loop's instruction density (17 AArch64 instructions per step of two table reads: the loop written anew and compiled by LLVM 14 for `-mcpu=neoverse-n1`), which bounds how many reads the N1's 128-entry window holds | the LFSR (another uniform stream); the L1-resident `ran` and `res` accesses (inside the base CPI) |
| Hashjoin (`hashjoin.c`: 10^9 keys, 10^9 buckets, 10^9 probes) | `hashjoin` (`workload/hashjoin.rs`), the build skipped (`skip_kernel_init`) | the probe: the probe relation read in order, a hash of each key, then four bucket loads, each followed by a dependent load of the element it points at (the first bucket waits for the key); the four element regions; 127 instructions per probe (14 per load) | MurmurHash3 itself (a cheaper hash of the key); the L1-resident stack and `matches` accesses; the build phase, which the artifact times apart (`hashjoin-init`) |
| SVM (liblinear `train` on kdd12: dual coordinate descent) | `svm` (`workload/svm.rs`), 11 nonzeros per instance, the first sweep and first shuffle skipped (`skip_kernel_init`) | the solver's coordinate steps in a shuffled instance order: per instance its label and pointer (random), its run of feature nodes (dependent on the pointer), a gather of `w` per node (dependent), then `alpha`, `QD` and a read-modify-write of `w` per node; the per-iteration shuffle of `index`; every array train allocates; 51 + 15 per nonzero instructions per step | kdd12's feature popularity (features uniform in one block per nonzero: no reuse of hot features); shrinking (every step updates, as in the first iteration); the parse of the data set (timed apart as `init`); 11 nonzeros is an estimate from the artifact's footprint |
| BTree (`btree1.c`, lookups of random keys) | `pointer-chase`, 10% of the nodes a hot front set taking half the loads | dependent loads; a small hot part (the upper levels) beside a large cold part (the leaves) | the tree's fan-out: a lookup is not a fixed-depth descent; the hot share is a guess, not measured |
| XSBench (`-s XL -l 128`: history-based lookups over the unionized grid) | `xsbench` (`workload/xsbench.rs`) | per lookup a material picked by the benchmark's distribution, a binary search of the unionized energy grid (dependent loads, the first steps the same few points in every lookup), then per nuclide of the material an index from the point's row of the index grid and the two grid points of that nuclide (independent of the other nuclides); the 355 nuclides and 12 materials; 10 instructions per search step, 39 per nuclide | the scaled grids: G points per nuclide where XL has 238,847, so a nuclide's grid is G x 48 bytes (not 11.5 MB) and several share a 2 MiB page, so THP's L2 TLB misses fall further below 4 KiB's than XL's (below, "XSBench's scaling"); the marks of dependence after the first nuclide (the search's end is not the most recent load) |
| Canneal (PARSEC, netlist swaps) | `pointer-chase`, no hot set | dependent random loads over the whole netlist | fan-in/fan-out locality between a swap's elements |
| BFS (GAPBS `bfs` on a graph) | `graph` bfs (Kronecker, scale from the footprint) | GAPBS's own kernel | the artifact's input (Friendster, `fr.el`), a real graph's locality |
| Omnetpp (SPEC, event simulation) | `pointer-chase`, 80% of loads on a scattered 4 KiB-chunk hot set of 1/16 of the footprint | as CHP's omnetpp analogue: dependent loads, a hot set spread over the heap in page-sized runs | the hot set's size is scaled with the footprint, not measured |
| Astar (SPEC, path finding) | the same, 64-byte nodes, hot set 1/8 | as above | as above |
| Streamcluster (PARSEC) | `stream` | sequential sweeps over the points | the distance computations' reuse of centres |

Hashjoin was `gups` (loads only, 6 instructions each) until 2026-11-28:
independent uniform loads with none of the probe's dependent element
loads. SVM and XSBench had no analogue before.

**XSBench's scaling.** Dividing the footprint by s divides G, the points
per nuclide grid, so the nuclide grids a lookup visits one after another
share 2 MiB pages (about 22 per page at s = 128, 5 at s = 32) where XL's
each span 5.5 (238,847 x 48 bytes). Measured on the quick machine scaled
by s (300,000 accesses, seed 1, THP against 4 KiB pages, 2026-11-28):
THP's L2 TLB misses over 4 KiB's 0.076 (s = 128, `quick`), 0.169 (32,
`full`), 0.542 (8), 0.617 (4: a nuclide's grid is 2.9 MiB, in huge pages of its own);
the artifact's 0.296 (fig8 `tlbmisses.csv`). THP's cycles over 4 KiB's
stayed 0.657-0.674 at every s (the artifact's 0.77; before main's
f56aece timing change, which moves s = 128's to 0.676): the misses THP
keeps are short walks. So the ratio of misses is not the artifact's at any
scale run here, and the cycles are insensitive to it.

**ET's 32 MiB VMA threshold is not scaled.** ET's fault path makes 64
KiB pages in a VMA under `os.elastic.vma_threshold_32m` (32 MiB) where
THP makes 2 MiB ones. Scaled by s, arrays that are hundreds of MiB in
the artifact fall under it (SVM's `w`, 437 MB in kdd12, is 3.3 MiB at s
= 128; XSBench's run maps 12 MiB at 64 KiB), so ET maps them more
finely than THP does. Measured on `quick`'s points (seed 1, 1,000,000
accesses, 2026-11-28, on main's timing of f56aece): ET - THP in cycles
over 4 KiB's svm +0.174, xsbench +0.069, hashjoin -0.004 (the artifact
-0.08, -0.03, -0.08); with the threshold set to 2 MiB, ET's cycles equal
THP's within 0.4% on svm and xsbench. The threshold stays the kernel's
until the re-measurement (issue 37 item 6) decides how it scales.

**Scaling.** Each analogue takes its workload's footprint in the
artifact, `bin/frag.sh`'s `FOOTPRINT` (what memfrag releases for it):
GUPS 33 GiB, Hashjoin 67.4 GiB, SVM 37.1 GiB, BTree 12 GiB, XSBench 124
GiB, Canneal 14.1 GiB, BFS 91 GiB, Omnetpp and Streamcluster 200 MiB,
Astar 400 MiB (`PAPER_FOOTPRINTS`). Against the N1's L2 TLB reach (1280 x
64 KiB = 80 MiB, 1280 x 2 MiB = 2.5 GiB, 1280 x 32 MiB = 40 GiB), GUPS,
Hashjoin, XSBench and BFS exceed even the 32 MiB reach, SVM, BTree and
Canneal only the 2 MiB one, and Omnetpp, Astar and Streamcluster fit the
2 MiB reach (as the artifact's `tlbmisses.csv`
shows: THP removes nearly all their walks). A workload's run scales its
footprint and its machine together by `1 / s`: the L2 TLB 1280 / s
entries (5-way, as the N1's), each L1 data array 48 / s entries (at least
one), so every ratio of footprint to reach is kept (Leshy's budget
follows the L2: the artifact's 1280 offline and 70% of it online). The
caches (L1D 64 KiB, L2 1 MiB, LLC 32 MiB) and the page-walk caches'
entries are divided by s too, so that the page tables keep their ratio to
the caches: unscaled, a 512 MiB footprint's 1 MiB of PTEs would sit in
the LLC and a walk would cost a fraction of what it costs at 64 GiB (128
MiB of PTEs against 32 MiB of LLC); measured on the tiny grid before that
change, GUPS ran as fast with 4 KiB pages as with 32 MiB ones. In a VM
the second dimension's caches are divided by s the same way (the nested
TLB's 16 entries and the EPT's paging-structure caches, at least one
entry each; since 2026-11-24 19:00 UTC: before, they kept pagelab's
defaults, so a scaled guest's 2D walks found nearly every EPT entry
cached). The keys are inert in native runs. s is the
variant's (`SCALE`: 32 in `full`, 128 in `quick`), halved for a workload
until its scaled footprint is at least 256 MiB (`MIN_SCALED`), and 1 for
the three small ones: scaled by 32, Omnetpp's 200 MiB would be 6 MiB,
three 2 MiB pages, where page granularity and alignment, not reach,
decide. (Before 2026-11-24 every analogue took GUPS's 64 GiB of `gups.c`
and one machine; docs/systems/elastic-results.md keeps those results
apart.) Latencies are the preset's. `tiny` keeps `quick`'s machine with
128 MiB for every analogue, so its ratios are not the paper's (it only
checks the code).
"""

from __future__ import annotations

from pagelab.experiments.common import GIB, MIB

#: Each workload's footprint in the artifact: `bin/frag.sh`'s FOOTPRINT.
PAPER_FOOTPRINTS = {
    "gups": 33 * GIB, "hashjoin": 69_000 * MIB, "svm": 38_000 * MIB, "btree": 12 * GIB, "xsbench": 124 * GIB,
    "canneal": 14_400 * MIB, "bfs": 91 * GIB, "omnetpp": 200 * MIB, "astar": 400 * MIB, "streamcluster": 200 * MIB,
}
N1_L2_ENTRIES = 1280
N1_L1_ENTRIES = 48
#: A workload's scale divisor is halved until its scaled footprint is at
#: least this (see the docstring).
MIN_SCALED = 256 * MIB
TINY_FOOTPRINT = 128 * MIB

#: variant -> (scale divisor s, phys_mem, accesses)
SCALE = {
    "full": (32, 8 * GIB, 10_000_000),
    "quick": (128, 2 * GIB, 1_000_000),
    "tiny": (128, 2 * GIB, 20_000),
}

#: name -> the generator's table (footprint and accesses added per variant).
APPS: dict[str, dict] = {
    # gups.c reads two table words per step and writes none; 17 instructions
    # per step of two reads (see the docstring's table): 9 per read.
    "gups": {"kind": "gups", "write_fraction": 0.0, "instructions_per_access": 9},
    # The probe loop; the build is timed apart by the artifact (hashjoin-init).
    "hashjoin": {"kind": "hashjoin", "skip_kernel_init": True},
    # The coordinate steps; the solver's first sweep and shuffle go before.
    "svm": {"kind": "svm", "skip_kernel_init": True},
    "btree": {"kind": "pointer-chase", "hot_fraction_of_footprint": 0.1, "hot_ops": 0.5},
    "xsbench": {"kind": "xsbench"},
    "canneal": {"kind": "pointer-chase"},
    "bfs": {"kind": "graph", "kernel": "bfs", "skip_kernel_init": True},
    "omnetpp": {"kind": "pointer-chase", "node_size": "128B", "hot_fraction_of_footprint": 1 / 16, "hot_ops": 0.8,
                "hot_layout": "scattered", "hot_chunk": 4096},
    "astar": {"kind": "pointer-chase", "hot_fraction_of_footprint": 1 / 8, "hot_ops": 0.8, "hot_layout": "scattered",
              "hot_chunk": 4096},
    "streamcluster": {"kind": "stream"},
}
#: The paper's order (fig8, left to right).
ORDER = ["gups", "hashjoin", "svm", "btree", "xsbench", "canneal", "bfs", "omnetpp", "astar", "streamcluster"]
#: tiny runs three: one uniform random, one dependent, one streaming.
TINY = ["gups", "canneal", "streamcluster"]


def workload(app: str, footprint: int, accesses: int) -> dict:
    """The analogue's workload table over `footprint` bytes."""
    w = {k: v for k, v in APPS[app].items() if k != "hot_fraction_of_footprint"}
    w.update(name=app, footprint=footprint, accesses=accesses)
    share = APPS[app].get("hot_fraction_of_footprint")
    if share:
        w["hot_set"] = int(footprint * share) // 4096 * 4096
    if w["kind"] == "graph":
        # The scale whose degree-16 graph (about 153 bytes per vertex) is
        # nearest the footprint.
        w["scale"] = max(10, round((footprint / 153)).bit_length() - 1)
    return w


def divisor(variant: str, app: str | None = None) -> int:
    """The scale divisor of `app`'s runs in `variant` (the variant's own
    without an app, and in `tiny`)."""
    s = SCALE[variant][0]
    if app is None or variant == "tiny":
        return s
    while s > 1 and PAPER_FOOTPRINTS[app] // s < MIN_SCALED:
        s //= 2
    return s


def footprint(variant: str, app: str) -> int:
    """`app`'s scaled footprint, in whole 2 MiB."""
    if variant == "tiny":
        return TINY_FOOTPRINT
    return PAPER_FOOTPRINTS[app] // divisor(variant, app) // (2 * MIB) * (2 * MIB)


def workloads(variant: str) -> list[dict]:
    n = SCALE[variant][2]
    return [workload(a, footprint(variant, a), n) for a in (TINY if variant == "tiny" else ORDER)]


def l2_entries(variant: str, app: str | None = None) -> int:
    """The scaled L2 TLB: 1280 / s entries, a whole number of 5-way sets."""
    return max(5, N1_L2_ENTRIES // divisor(variant, app) // 5 * 5)
#: The N1 preset's caches (size in bytes, ways), scaled with the footprint.
N1_CACHES = {"l1d": (64 << 10, 4), "l2": (1 << 20, 8), "llc": (32 << 20, 16)}
#: pagelab's page-walk caches (Intel's three; the N1's are not published).
PWC_ENTRIES = {"pml4_entries": 2, "pdpt_entries": 4, "pde_entries": 32}
#: pagelab's nested TLB (`machine.nested_tlb.entries`'s default; the N1's
#: stage-2 caching is not published either).
NESTED_TLB_ENTRIES = 16


def machine(variant: str, app: str | None = None) -> dict:
    """`ampere-altra` with the TLBs, caches and page-walk caches scaled
    for `app`'s runs (see the docstring)."""
    s, phys = divisor(variant, app), SCALE[variant][1]
    l1 = max(1, round(N1_L1_ENTRIES / s))
    tlb = {"l2_entries": l2_entries(variant, app), "l2_ways": 5}
    for array in ("l1_4k", "l1_64k", "l1_2m"):
        tlb[f"{array}_entries"], tlb[f"{array}_ways"] = l1, l1
    cache = {name: {"size": f"{max(64 * ways, size // s)}B"} for name, (size, ways) in N1_CACHES.items()}
    pwc = {k: max(1, n // s) for k, n in PWC_ENTRIES.items()}
    return {"preset": "ampere-altra", "phys_mem": phys, "tlb": tlb, "cache": cache, "pwc": pwc,
            "ept_pwc": dict(pwc), "nested_tlb": {"entries": max(1, NESTED_TLB_ENTRIES // s)}}


#: The share of the L2 TLB that a system's Leshy may spend: the artifact's
#: online runs used 70% (896 of 1280), offline and profiling runs all.
ONLINE_BUDGET_SHARE = 0.7


def fit(config: dict, params: dict, variant: str) -> None:
    """Scales one point's machine for its workload and sets Leshy's budget
    from that machine's L2 TLB (a `shape` step of every et-* sweep; the
    key is inert for systems without Leshy)."""
    app = params["workload"]
    config["machine"] = machine(variant, app)
    budget = l2_entries(variant, app)
    if params.get("system") == "elastic":
        budget = max(1, int(budget * ONLINE_BUDGET_SHARE))
    config.setdefault("os", {}).setdefault("elastic", {})["leshy_budget"] = budget
