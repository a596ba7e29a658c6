"""What the Colored Huge Pages experiments share: the machine, the
workload analogues, the contention set-up and the scenarios.

The machine is the paper's i7-10700 (preset `i7-10700`: 16 MiB 16-way LLC,
8 slices, colors from physical-address bits 12-15, so 16 hardware colors).
The paper uses 8 colors (Table II: "used / supported colors 8 / 16"): the
OS colors with bits 12-14 (`os.coloring.bits`), so each of its 8 colors is
two hardware colors, 2 MiB of the LLC, and the workload's k colors plus the
stressors' 8 - k cover the whole LLC. CHP's "number of system colors" is
then 8 and a sub-mapping comes from a 2 MiB block (256 KiB x 8).
`SYSTEM_COLORS` switches to all 16 bits (4 MiB blocks); docs/systems/chp.md
says why 8 is the default.

Workload analogues (footprints as fractions of the paper's 16 GB, kept
when the machine is scaled; colors from Table III):

| paper | analogue | why |
|---|---|---|
| mcf (1.7 GB, 5 colors) | `pointer-chase`, 128-byte nodes, 90% of loads on an 8 MiB hot cycle (`hot_set`) scattered over the footprint in 4 KiB chunks | network simplex follows tree and arc pointers; its node array is a hot set near the LLC's size (mcf slows 1.94x under contention in the paper, so its reuse must be LLC-sized) |
| astar (339 MB, 5) | `pointer-chase`, 64-byte nodes, 80% of loads on a 6 MiB hot cycle, scattered in 4 KiB chunks | a grid search works around a frontier (its open list is a heap of pointers) and jumps across the map |
| omnetpp (167 MB, 6) | `pointer-chase`, 128-byte nodes, 80% of loads on a 6 MiB hot cycle, scattered in 4 KiB chunks | discrete events follow pointers between many small heap objects, a few of them often |

The hot sets (at most half the footprint) were chosen, by trying a few
sizes, so that the analogues are LLC-sensitive in the paper's range (Fig. 1:
contention costs 1.41x on average, mcf 1.94x); they are not measured from
the programs. Without them a workload has no reuse for contention to take
away: a plain pointer chase over mcf's footprint measured 1.000x. `kv`
was tried for astar and omnetpp first, but its ~290 instructions per access
(a Redis-like store) hide memory stalls that SPEC's programs do not.

Where the hot set lies (`workload.hot_layout = "scattered"`,
`hot_chunk = 4 KiB`): whole 4 KiB chunks of nodes, chosen uniformly with
the workload's seed among all the footprint's chunks. Until 2026-11-23 the
hot set was the first `hot_set` bytes of nodes: four aligned 2 MiB pages
for mcf, so under SWAP (a huge page in one color) the whole hot set sat in
four colors and mcf's LLC misses rose 4-6x against the paper's +9.4-12%.
A real heap's hot objects are spread among cold ones over its whole
extent, but they come in runs (objects allocated together, one after the
other in a size class's pages), not one by one: chunks of 4 KiB keep the
hot set's count of 4 KiB pages (and so its 4 KiB TLB reach) as before and
change only how it spreads over huge pages and colors. Node-by-node
scattering (`hot_chunk` = the node size) would put a few hot nodes on
almost every 4 KiB page of the footprint, which would change the 4 KiB and
THP rows' translation too, not only how the hot set meets the colors.
| bfs, cc (4.5 GB, 5) | `graph` bfs / cc, the scale whose graph is nearest the footprint (21 on 1 GiB: 272 MiB; 25 on 16 GiB) | GAPBS's own kernels |
| tc (2.5 GB, 4) | `graph` tc | GAPBS's own kernel |

Contention: 4 cores of "cache stressors" like stress-ng's `--cache 4`:
each runs random read-modify-writes (`gups`) over a buffer the size of the
LLC. When the scenario partitions the cache they are confined by 4 KiB
coloring (PALLOC, `workload.chp = false`) to the colors the workload does
not get; otherwise they, like the workload, use the whole LLC.
"""

from __future__ import annotations

import math

#: The paper's 16 GB, in the unit of its footprints (Table III), so shares are its ratios.
PAPER_MEM = 16e9
USED_COLORS = 8
#: OS color bits per number of system colors.
SYSTEM_COLORS = {8: [12, 13, 14], 16: [12, 13, 14, 15]}

#: The SPEC analogues' hot sets: whole 4 KiB chunks spread over the footprint
#: (see the module's docstring for why chunks of a page).
SCATTERED = {"hot_layout": "scattered", "hot_chunk": 4096}
#: name -> (workload table without footprint, paper footprint in bytes, colors).
#: `hot_bytes` is a hot working set sized against the LLC (16 MiB), not
#: scaled with memory (`hot_set`, at most half the footprint).
APPS: dict[str, tuple[dict, float, int]] = {
    "mcf": ({"kind": "pointer-chase", "node_size": "128B", "hot_bytes": 8 << 20, "hot_ops": 0.9, **SCATTERED}, 1.7e9, 5),
    "astar": ({"kind": "pointer-chase", "node_size": "64B", "hot_bytes": 6 << 20, "hot_ops": 0.8, **SCATTERED}, 339e6, 5),
    "omnetpp": ({"kind": "pointer-chase", "node_size": "128B", "hot_bytes": 6 << 20, "hot_ops": 0.8, **SCATTERED}, 167e6, 6),
    "bfs": ({"kind": "graph", "kernel": "bfs"}, 4.5e9, 5),
    "cc": ({"kind": "graph", "kernel": "cc"}, 4.5e9, 5),
    "tc": ({"kind": "graph", "kernel": "tc"}, 2.5e9, 4),
}
LLC_BYTES = 16 << 20
STRESSORS = 4


def footprint(app: str, phys_mem: int) -> int:
    """The analogue's footprint on a machine of `phys_mem` bytes: the paper's
    share of 16 GB, rounded down to whole 4 KiB pages."""
    share = APPS[app][1] / PAPER_MEM
    return int(share * phys_mem) // 4096 * 4096


def app_workload(app: str, phys_mem: int, accesses: int, skip_kernel_init: bool = False,
                 sampled_sources: int | None = None, **extra) -> dict:
    """The analogue's workload table. `skip_kernel_init` fast-forwards a
    graph kernel past its initialization loop (`workload.skip_kernel_init`),
    so that the measured accesses are its traversal. `sampled_sources`
    makes a bfs or cc run sampled (`shape_contention` sets `run.sampling`):
    n > 0, a whole run (n bfs searches, or one cc), the init loop
    included; 0, a cheap span of 10 x `accesses` (the tiny grid). tc is
    measured as before."""
    table, _, _ = APPS[app]
    w = {"name": app, **table, "footprint": footprint(app, phys_mem), "accesses": accesses, "init": "pages"}
    hot = w.pop("hot_bytes", 0)
    if hot:
        w["hot_set"] = min(hot, w["footprint"] // 2)
    if w["kind"] == "graph":
        w["scale"] = graph_scale(w["footprint"])
        if sampled_sources is not None and w["kernel"] in GRAPH_ACCESSES_PER_VERTEX:
            w["sources"] = max(1, sampled_sources)
            whole = graph_run_accesses(w["kernel"], w["scale"], w["sources"])
            w["accesses"] = whole if sampled_sources > 0 else 10 * accesses
        elif skip_kernel_init:
            w["skip_kernel_init"] = True
    w.update(extra)
    return w


#: bfs searches per sampled run, by variant (GAPBS runs 64; each is a
#: whole traversal from a random source, so a few cover their variety at
#: a fraction of the cost; the quick grid's one keeps it cheap).
GRAPH_SOURCES = {"full": 4, "quick": 1, "tiny": 0}
#: Accesses per vertex of one run (a bfs search, its init loop included; a
#: cc), measured with the functional fast-forward: scale 18, 2 sources:
#: bfs 18.9, cc 22.0; scale 21, 1 source: bfs 17.5, cc 22.0.
GRAPH_ACCESSES_PER_VERTEX = {"bfs": 18.9, "cc": 22.0}


def graph_run_accesses(kernel: str, scale: int, sources: int) -> int:
    """About the accesses of the kernel's whole run at `scale`: bfs's
    `sources` searches, or one cc."""
    runs = sources if kernel == "bfs" else 1
    return int(GRAPH_ACCESSES_PER_VERTEX[kernel] * runs * 2**scale)


def graph_sampling(accesses: int) -> dict:
    """`run.sampling` over a run of `accesses` (core 0's): 2 to 20 windows
    (one per million accesses), measuring 1% of the run in all and warming
    up half as long before each, the windows spread evenly from the
    kernel's start to its end (docs/timing.md, "Sampled measurement")."""
    windows = min(20, max(2, accesses // 1_000_000))
    measure = max(1, accesses // (100 * windows))
    warmup = measure // 2
    period = (accesses - warmup - measure) // (windows - 1)
    return {"windows": windows, "warmup": warmup, "measure": measure, "fast_forward": period - warmup - measure}


#: Bytes per vertex of a degree-16 Kronecker graph in the graph generator's
#: arrays (about 8 x degree + 25; see workload.scale in docs/configuration.md).
GRAPH_BYTES_PER_VERTEX = 8 * 16 + 25


def graph_scale(footprint_bytes: int) -> int:
    """The scale whose graph is nearest the footprint (on a log scale). The
    generator's own choice from `footprint` is the largest graph that fits,
    up to half the footprint, which would halve bfs's share of memory."""
    return max(1, round(math.log2(footprint_bytes / GRAPH_BYTES_PER_VERTEX)))


def app_colors(app: str) -> list[int]:
    """The workload's colors: the first k of the 8 in use."""
    return list(range(APPS[app][2]))


def stressor(i: int, colors: list[int] | None, accesses: int) -> dict:
    w = {"name": f"stress{i}", "kind": "gups", "footprint": LLC_BYTES, "accesses": accesses, "chp": False}
    if colors is not None:
        w["colors"] = colors
    return w


#: scenario -> (os.policy, partitioned cache, contention).
SCENARIOS = {
    "alone": ("base", False, False),
    "4k": ("base", False, True),
    "thp": ("thp", False, True),
    "coloring": ("coloring", True, True),
    "chp": ("chp", True, True),
}


def shape_contention(config: dict, params: dict) -> None:
    """Turns a point's single workload into the scenario's cores: the
    workload on core 0 (colored when the scenario partitions), plus the
    stressors on the colors it does not get."""
    policy, partitioned, contention = SCENARIOS[params["scenario"]]
    app = dict(config.pop("workload"))
    sample_graph(config, app)
    name = params["workload"]
    config.setdefault("os", {})["policy"] = policy
    mine = app_colors(name)
    if partitioned:
        app["colors"] = mine
    cores = [app]
    if contention:
        theirs = [c for c in range(USED_COLORS) if c not in mine] if partitioned else None
        cores += [stressor(i, theirs, app["accesses"]) for i in range(STRESSORS)]
    config["workloads"] = cores


def sample_graph(config: dict, workload: dict) -> None:
    """A graph kernel made sampled by `app_workload(sampled_sources=...)`
    (no `skip_kernel_init`) is measured by sampling over its run; other
    workloads are left as they are."""
    if workload.get("kind") == "graph" and "sources" in workload and not workload.get("skip_kernel_init"):
        config.setdefault("run", {})["sampling"] = graph_sampling(workload["accesses"])


def labels(values: list) -> list[dict]:
    """Grid values that only label a point (`shape` acts on them)."""
    return [{"name": v} for v in values]


def base_config(phys_mem: int, system_colors: int = 8, policy: str | None = None, skip_init: bool = True) -> dict:
    """The paper's machine with `phys_mem` bytes and OS coloring over
    `system_colors` colors; `policy` sets `os.policy`; `skip_init = False`
    counts the first touches (and their faults) in the statistics."""
    os_table: dict = {"coloring": {"bits": SYSTEM_COLORS[system_colors]}, "thp": {"khugepaged": False}}
    if policy is not None:
        os_table["policy"] = policy
    return {
        "machine": {"preset": "i7-10700", "phys_mem": phys_mem},
        "os": os_table,
        "run": {"skip_init": skip_init},
    }
