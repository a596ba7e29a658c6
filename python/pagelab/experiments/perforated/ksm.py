"""Perforated Pages, II-B: the paper's motivation, two VMs under KSM.

The paper ran mcf in two Linux VMs with KSM on: KSM saved 11% of their
5.16 GB, broke 40% of the VMs' huge pages to merge their parts, and the
VMs then had 34% more TLB misses and ran 4.9% slower. Perforated pages
would keep the huge pages whole, the merged parts holes.

Here: two VMs on one host that backs them with THP (khugepaged off), each
running `pp-fig9`'s mcf analogue (pointer chasing with a hot set) whose
heap itself carries the duplicates: `contents = "partly-shared"`, a share
`PORTION` of its 2 MiB regions hold pages whose data is the same in both
VMs, a share `DEGREE` of each such region's 4 KiB pages, the rest of the
heap data of its own. Both VMs use the same `workload.shared.seed` (the
run's seed), so the same virtual pages are duplicates in both.

Portion and degree, derived from the paper's two numbers. With mcf's heap
the VM's memory (M pages each), p the portion and d the degree, each VM
holds p d M duplicated pages; merging keeps one copy of each, saving
p d M of the 2 M pages: mem_saved = p d / 2. Every region holding a
duplicate has its huge page broken by Linux's KSM: huge_broken = p. The
paper's 40% broken gives p = 0.40; its 11% saved gives p d = 0.22, d =
0.55 (282 of 512 pages). The guest's own pages (kernel, page tables) and
the regions mcf does not fill dilute both a little: expect slightly less.

The filter rule (at most 4 of 8 filter bits) would refuse every such
region: 282 pages in one run span 5 or 6 of the 8 256 KiB filter regions,
dispersed ones all 8. The host's KSM punch does not apply the rule
(`systems/ksm/host/punch.rs`: a region of merged, movable pages perforated is no
worse than the split that is the alternative): it punches every region,
never splits instead. Clustered and dispersed duplicates then differ only
in the hardware: the filter answers for the 256 KiB regions without a
hole (2 or 3 of 8 when clustered, none when dispersed); both are run
(`distribution`).

The TLBs are scaled with the footprint. On the paper's Table II machine
mcf's 1.7 GB fits the 1536-entry L2 TLB's 3 GiB of 2 MiB reach: no L2
TLB miss without KSM, so "more TLB misses" would be undefined; the paper's
real machine did miss (34% more with KSM), so its reach was below mcf's
footprint. Every TLB here has `TLB_SCALE` x the variant's footprint scale
of its Table II entries (ways kept, one set at least): the full variant's
L2 TLB has 384 entries (768 MiB of 2 MiB reach, 0.45 of mcf's 1700 MiB),
the quick 192 (0.45 of 850 MiB), the tiny 24 (0.45 of 106 MiB).

Systems (`system`):

| system | host |
|---|---|
| `none` | THP, KSM off |
| `thp-ksm` | THP, KSM that splits a huge page to merge a part (`split = "any-duplicate"`, Linux's behaviour) |
| `pp-ksm` | THP, KSM that punches holes (`split = "punch"`: the huge page becomes a perforated page, the merged part a hole) |

Columns of `pp-ksm`: `distribution, system, mem_saved, huge_broken,
dtlb_l2_misses, slowdown`, means over seeds, then `seeds` and each
quantity's `_std` and `_ci95`:

| column | meaning |
|---|---|
| `distribution` | where a region's duplicates lie: `clustered` (one run) or `dispersed` (evenly spaced) |
| `mem_saved` | `ksm.pages_sharing` x 4 KiB over the VMs' host-backed memory in the same seed's `none` run (`host.mem.mapped.4k + .2m`) |
| `huge_broken` | the share of `none`'s host 2 MiB leaves (`host.mem.mapped.2m`) that are no longer plain 2 MiB leaves: split, or made perforated pages |
| `dtlb_l2_misses` | `dtlb.l2.misses` over the same seed's `none` run |
| `slowdown` | `cycles` over the same seed's `none` run, less 1 |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (GIB, MIB, error_bars, legend_beside, mean_over_seeds, paired, pyplot, seeds, share_axis,
                                        system_color, with_spread, write_figure, write_outputs)
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.apps import analogues
from pagelab.experiments.perforated.common import labels, paper_machine, write_up
from pagelab.sweep import Sweep

ID = "pp-ksm"
KEYS = ["distribution", "system"]
COLUMNS = KEYS + ["mem_saved", "huge_broken", "dtlb_l2_misses", "slowdown"]
QUANTITIES = COLUMNS[2:]
SYSTEMS = {"none": None, "thp-ksm": "any-duplicate", "pp-ksm": "punch"}
DISTRIBUTIONS = ["clustered", "dispersed"]

#: The share of mcf's 2 MiB regions holding duplicates (the paper's 40%
#: of huge pages broken) and of 4 KiB pages duplicated in each (0.22 / 0.40:
#: the paper's 11% saved is half of p x d).
PORTION = 0.40
DEGREE = 0.55

#: The TLBs' entries at full footprint scale, as a share of Table II's.
TLB_SCALE = 0.25
#: Table II's TLBs: key -> (entries, ways).
TABLE_II_TLBS = {"l1_4k": (64, 4), "l1_2m": (32, 4), "l2": (1536, 12)}

#: variant -> (host memory, guest memory, mcf footprint scale, measured accesses per vCPU).
#: The full variant keeps the paper's mcf footprint (1700 MiB a VM) and
#: measures 1,000,000 accesses a vCPU, as quick does: sized to run in about
#: 40 minutes on the project's shared 2-core machine.
SCALES = {
    "full": (8 * GIB, 3 * GIB, 1.0, 1_000_000),
    "quick": (4 * GIB, 3 * GIB // 2, 0.5, 1_000_000),
    "tiny": (1 * GIB, 256 * MIB, 1 / 16, 50_000),
}

#: Accesses after the init pass that warm up (KSM converges), as a share
#: of the measured ones, and ksmd's sleep per measured access (ms): three
#: wake-ups take about a third of the warm-up at mcf's speed without KSM
#: (about 70 cycles an access at 2 GHz).
WARMUP = 0.25
SLEEP_MS_PER_ACCESS = 2e-6
#: The mcf analogue's instructions per access (pointer chasing) and per
#: init store (one a 4 KiB page, 64 instructions: workload/driver.rs).
INSTRS_PER_ACCESS = 2
INIT_BYTES_PER_INSTR = 64


def tlbs(scale: float) -> dict:
    """The TLB keys at `TLB_SCALE` x `scale` of Table II's entries: the
    largest power-of-two number of sets not above it, one at least."""
    out = {}
    for key, (entries, ways) in TABLE_II_TLBS.items():
        sets = max(1, int(entries * TLB_SCALE * scale) // ways)
        sets = 1 << (sets.bit_length() - 1)
        out[f"{key}_entries"] = sets * ways
    return out


def _mcf(scale: float, n: int) -> dict:
    """mcf's analogue running `n` accesses after its init pass, carrying
    duplicates (placed by `_shape`)."""
    mcf = dict(analogues(scale, n)[0], contents="partly-shared")
    mcf.pop("name")
    return mcf


def _vm(guest: int, mcf: dict) -> dict:
    return {"guest_mem": guest, "os": {"policy": "thp", "thp": {"khugepaged": False}}, "workloads": [dict(mcf)]}


def _shape(config: dict, params: dict) -> None:
    """Both VMs' duplicates at the point's distribution, placed by the
    run's seed (the same in both VMs)."""
    shared = {"portion": PORTION, "degree": DEGREE, "distribution": params["distribution"],
              "seed": int(params.get("seed", 1))}
    for vm in config["vms"]:
        vm["workloads"][0]["shared"] = dict(shared)


def sweep(variant: str) -> Sweep:
    host, guest, scale, n = SCALES[variant]
    config = paper_machine(host)
    del config["os"]
    config["machine"]["cores"] = 2
    config["machine"]["tlb"] = tlbs(scale)
    # The paper measured KSM's steady state: ksmd scans every guest page
    # at each wake-up (a page merges at its second scan at the earliest),
    # and statistics start after a warm-up of `WARMUP` x n accesses past
    # the init pass, long enough for three wake-ups (run.warmup counts the
    # init pass's instructions too).
    warm = int(n * WARMUP)
    mcf = _mcf(scale, n + warm)
    config["run"]["warmup"] = mcf["footprint"] // INIT_BYTES_PER_INSTR + INSTRS_PER_ACCESS * warm
    ksm = {"enabled": True, "pages_to_scan": 2 * guest // 4096, "sleep_ms": n * SLEEP_MS_PER_ACCESS}
    config["virt"] = {"enabled": True, "host": {"policy": "thp", "thp": {"khugepaged": False}, "ksm": ksm}}
    config["vms"] = [_vm(guest, mcf), _vm(guest, mcf)]
    systems = [{"name": name, "virt.host.ksm.enabled": split is not None} | ({"virt.host.ksm.split": split} if split else {})
               for name, split in SYSTEMS.items()]
    return Sweep(id=f"{ID}:{variant}", base=config, grid={"distribution": labels(DISTRIBUTIONS), "system": systems},
                 seeds=seeds(variant), shape=_shape)


def table(df: pd.DataFrame) -> pd.DataFrame:
    def stat(name: str) -> pd.Series:
        return df[name].fillna(0) if name in df else pd.Series(0.0, index=df.index)

    none = df.system == "none"
    by = ["distribution", "seed"]
    d = pd.DataFrame({"distribution": df.distribution, "system": df.system, "seed": df.seed})
    vm_bytes = paired(df.assign(vm=stat("host.mem.mapped.4k") + stat("host.mem.mapped.2m")), "vm", by, none)
    d["mem_saved"] = stat("ksm.pages_sharing") * 4096 / vm_bytes
    # (ksm.splits and ksm.perforated restart at warm-up's end, and KSM
    # merges during the init pass: the 2 MiB leaves lost are counted.)
    d["huge_broken"] = 1 - stat("host.mem.mapped.2m") / paired(df, "host.mem.mapped.2m", by, none)
    d["dtlb_l2_misses"] = df["dtlb.l2.misses"] / paired(df, "dtlb.l2.misses", by, none).where(lambda m: m > 0)
    d["slowdown"] = df["cycles"] / paired(df, "cycles", by, none) - 1
    t = mean_over_seeds(d, KEYS)
    t = t.assign(_d=t.distribution.map({s: i for i, s in enumerate(DISTRIBUTIONS)}),
                 _s=t.system.map({s: i for i, s in enumerate(SYSTEMS)}))
    return with_spread(t.sort_values(["_d", "_s"]), COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(QUANTITIES), figsize=(12, 3.3))
    width = 0.8 / len(SYSTEMS)
    dists = list(dict.fromkeys(t.distribution))
    # (label, range: a share in [0, 1]; the slowdown may be negative)
    meaning = {"mem_saved": ("memory saved (share)", (0, 1)), "huge_broken": ("2 MiB pages broken (share)", (0, 1)),
               "dtlb_l2_misses": ("L2 TLB misses / without KSM", (0, None)), "slowdown": ("cycles / without KSM, - 1", (None, None))}
    for ax, col in zip(axes, QUANTITIES):
        label, (lo, hi) = meaning.get(col, (col, (0, None)))
        for i, system in enumerate(SYSTEMS):
            s = t[t.system == system].set_index("distribution").reindex(dists)
            xs = [j + (i - 1) * width for j in range(len(dists))]
            ax.bar(xs, s[col], width, yerr=error_bars(s, col, lo=lo, hi=hi), color=system_color(system, i), label=system)
        ax.set_xticks(range(len(dists)), dists)
        ax.set_xlabel("duplicates' distribution")
        ax.set_title(label)
        if hi == 1:
            share_axis(ax)
    legend_beside(fig, title="KSM")
    fig.suptitle("pp-ksm: two VMs under KSM, splitting or punching")
    return write_figure(fig, path, seeds=t.seeds)


def measured(t: pd.DataFrame) -> dict[str, object]:
    # Linux's KSM (the paper's) with the clustered duplicates; the
    # dispersed ones and pp-ksm are in the table (the paper has no number).
    row = t.set_index(KEYS).loc[("clustered", "thp-ksm")]
    return {
        "thp-ksm: memory saved, share of the VMs' memory": row.mem_saved,
        "thp-ksm: share of the host's huge pages broken": row.huge_broken,
        "thp-ksm: L2 TLB misses over no KSM": row.dtlb_l2_misses,
        "thp-ksm: slowdown over no KSM": row.slowdown,
    }


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    host, guest, scale, n = SCALES[variant]
    tlb = tlbs(scale)
    head = f"""# {ID}: two VMs under KSM, huge pages split or perforated (II-B)

Variant `{variant}`: the paper's machine (preset `gem5-skylake`) with {host >> 20} MiB
of host memory backing two VMs of {guest >> 20} MiB with THP; in each VM the mcf
analogue at {scale:g} of its footprint, whose heap holds duplicates of the
other VM's: {PORTION:g} of its 2 MiB regions, {DEGREE:g} of each such region's pages
(clustered or dispersed); {n:,} measured accesses per vCPU after a warm-up of
{int(n * WARMUP):,} (KSM converged: it scans every guest page every {n * SLEEP_MS_PER_ACCESS:g} ms). TLBs scaled with the footprint: L1
{tlb["l1_4k_entries"]} (4 KiB) and {tlb["l1_2m_entries"]} (2 MiB) entries, L2 {tlb["l2_entries"]}. Ratios are to
the same seed's run without KSM."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages II-B: two VMs under KSM, huge pages split or perforated", sweep, analyze, paper=PAPER)
