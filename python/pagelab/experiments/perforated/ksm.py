"""Perforated Pages, II-B: the paper's motivation, two VMs under KSM.

The paper ran mcf in two Linux VMs with KSM on: KSM saved 11% of their
5.16 GB, broke 40% of the VMs' huge pages to merge their parts, and the
VMs then had 34% more TLB misses and ran 4.9% slower. Perforated pages
would keep the huge pages whole, the merged parts holes.

Here: two VMs on one host that backs them with THP (khugepaged off), each
VM running `pp-fig9`'s mcf analogue (pointer chasing with a hot set,
contents of its own) and beside it a buffer whose contents are the same
in both VMs (`contents = "shared"`: page for page the same data), sized
`SHARED` of the mcf footprint, so that merging it saves about the paper's
11% (a shared share s of each VM's memory saves s / 2 of both VMs';
s = 0.22 gives 0.11). pagelab's workloads declare contents per process,
not per page, so the identical pages are whole 2 MiB regions of the
shared buffer, not parts scattered through mcf's heap as on the real
machine: a broken huge page here has all 512 parts merged.

Systems (`system`):

| system | host |
|---|---|
| `none` | THP, KSM off |
| `thp-ksm` | THP, KSM that splits a huge page to merge a part (`split = "any-duplicate"`, Linux's behaviour) |
| `pp-ksm` | THP, KSM that punches holes (`split = "punch"`: the huge page becomes a perforated page, the merged part a hole) |

Columns of `pp-ksm`: `system, mem_saved, huge_broken, dtlb_l2_misses,
slowdown`, means over seeds, then `seeds` and each quantity's `_std` and
`_ci95`:

| column | meaning |
|---|---|
| `mem_saved` | `ksm.pages_sharing` x 4 KiB over the VMs' host-backed memory in the same seed's `none` run (`host.mem.mapped.4k + .2m`) |
| `huge_broken` | the share of `none`'s host 2 MiB leaves (`host.mem.mapped.2m`) that are no longer plain 2 MiB leaves: split, or made perforated pages |
| `dtlb_l2_misses` | `dtlb.l2.misses` over the same seed's `none` run (empty when `none` has none: `tiny`) |
| `slowdown` | `cycles` over the same seed's `none` run, less 1 |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import GIB, MIB, error_bars, mean_over_seeds, paired, pyplot, seeds, with_spread, write_figure, write_outputs
from pagelab.experiments.perforated import PAPER
from pagelab.experiments.perforated.apps import analogues
from pagelab.experiments.perforated.common import paper_machine, write_up
from pagelab.sweep import Sweep

ID = "pp-ksm"
COLUMNS = ["system", "mem_saved", "huge_broken", "dtlb_l2_misses", "slowdown"]
QUANTITIES = COLUMNS[1:]
SYSTEMS = {"none": None, "thp-ksm": "any-duplicate", "pp-ksm": "punch"}

#: The shared buffer's size as a share of the mcf footprint: 0.28 makes it
#: 0.22 of a VM's memory, whose merging saves 0.11 of both VMs'.
SHARED = 0.28

#: variant -> (host memory, guest memory, mcf footprint scale, accesses per vCPU, ksm pages_to_scan)
SCALES = {
    "full": (8 * GIB, 3 * GIB, 1.0, 4_000_000, 16384),
    "quick": (4 * GIB, 3 * GIB // 2, 0.5, 1_000_000, 8192),
    "tiny": (1 * GIB, 256 * MIB, 1 / 16, 50_000, 4096),
}


def _vm(guest: int, scale: float, n: int) -> dict:
    mcf = dict(analogues(scale, n)[0], contents="unique")
    mcf.pop("name")
    shared = max(2 * MIB, int(mcf["footprint"] * SHARED) // (2 * MIB) * (2 * MIB))
    buffer = {"kind": "gups", "footprint": shared, "write_fraction": 0.0, "accesses": n, "contents": "shared"}
    return {"guest_mem": guest, "os": {"policy": "thp", "thp": {"khugepaged": False}}, "workloads": [mcf, buffer]}


def sweep(variant: str) -> Sweep:
    host, guest, scale, n, to_scan = SCALES[variant]
    config = paper_machine(host)
    del config["os"]
    config["machine"]["cores"] = 4
    # KSM wakes often enough to merge the buffers during the init pass
    # (two full scans: a page merges at its second scan at the earliest).
    ksm = {"enabled": True, "pages_to_scan": to_scan, "sleep_ms": 0.05}
    config["virt"] = {"enabled": True, "host": {"policy": "thp", "thp": {"khugepaged": False}, "ksm": ksm}}
    config["vms"] = [_vm(guest, scale, n), _vm(guest, scale, n)]
    systems = [{"name": name, "virt.host.ksm.enabled": split is not None} | ({"virt.host.ksm.split": split} if split else {})
               for name, split in SYSTEMS.items()]
    return Sweep(id=f"{ID}:{variant}", base=config, grid={"system": systems}, seeds=seeds(variant),
                 shape=lambda config, params: None)


def table(df: pd.DataFrame) -> pd.DataFrame:
    def stat(name: str) -> pd.Series:
        return df[name].fillna(0) if name in df else pd.Series(0.0, index=df.index)

    none = df.system == "none"
    d = pd.DataFrame({"system": df.system, "seed": df.seed})
    vm_bytes = paired(df.assign(vm=stat("host.mem.mapped.4k") + stat("host.mem.mapped.2m")), "vm", ["seed"], none)
    d["mem_saved"] = stat("ksm.pages_sharing") * 4096 / vm_bytes
    # (ksm.splits and ksm.perforated restart at warm-up's end, and KSM
    # merges during the init pass: the 2 MiB leaves lost are counted.)
    d["huge_broken"] = 1 - stat("host.mem.mapped.2m") / paired(df, "host.mem.mapped.2m", ["seed"], none)
    d["dtlb_l2_misses"] = df["dtlb.l2.misses"] / paired(df, "dtlb.l2.misses", ["seed"], none).where(lambda m: m > 0)
    d["slowdown"] = df["cycles"] / paired(df, "cycles", ["seed"], none) - 1
    t = mean_over_seeds(d, ["system"])
    t["order"] = t.system.map({s: i for i, s in enumerate(SYSTEMS)})
    return with_spread(t.sort_values("order").drop(columns="order"), COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(QUANTITIES), figsize=(12, 3.5))
    for ax, col in zip(axes, QUANTITIES):
        ax.bar(t.system, t[col], yerr=error_bars(t, col), color=["#888888", "#c44e52", "#4c72b0"][: len(t)])
        ax.set_title(col)
    fig.suptitle("pp-ksm: two VMs under KSM, splitting or punching")
    return write_figure(fig, path)


def measured(t: pd.DataFrame) -> dict[str, object]:
    row = t.set_index("system").loc["thp-ksm"]
    return {
        "thp-ksm: memory saved, share of the VMs' memory": row.mem_saved,
        "thp-ksm: share of the host's huge pages broken": row.huge_broken,
        "thp-ksm: L2 TLB misses over no KSM": row.dtlb_l2_misses,
        "thp-ksm: slowdown over no KSM": row.slowdown,
    }


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    host, guest, scale, n, to_scan = SCALES[variant]
    head = f"""# {ID}: two VMs under KSM, huge pages split or perforated (II-B)

Variant `{variant}`: the paper's machine (preset `gem5-skylake`) with {host >> 20} MiB
of host memory backing two VMs of {guest >> 20} MiB with THP; in each VM the mcf
analogue at {scale:g} of its footprint beside a buffer of the same data in both
VMs ({SHARED:g} of mcf's footprint), {n:,} measured accesses per vCPU; KSM scans
{to_scan} pages every 0.05 ms. Ratios are to the same seed's run without KSM."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages II-B: two VMs under KSM, huge pages split or perforated", sweep, analyze, paper=PAPER)
