"""virt-walks: what one two-dimensional page walk costs, for 4 KiB and
2 MiB pages in the guest and in the host, with and without the walk caches
(the paging-structure caches of both dimensions and the nested TLB).

ID.csv has one row per point: these columns (means over seeds), then
`seeds` and each quantity's `<col>_std` and `<col>_ci95` (`common.mean_over_seeds`):

| column | meaning |
|---|---|
| `guest_page`, `host_page` | `4k` (base pages) or `2m` (THP at fault, khugepaged off) in the guest (`os.policy`) and in the host (`virt.host.policy`) |
| `caches` | `on`: the Skylake preset's paging-structure caches in both dimensions and a 16-entry nested TLB; `off`: `machine.pwc.enabled = false`, `machine.nested_tlb.entries = 0` |
| `refs_per_walk` | `walk.mem_refs / walks`: guest page-table and EPT entries read per walk |
| `cycles_per_walk` | `cycles.translation / walks`: translation cycles per walk (the walk's references at the latency of the level that served them, the caches' lookups, and the L2 TLB lookup of every L1 TLB miss) |

gups over a footprint far beyond the TLBs' reach, measured after its
first-touch pass (`run.skip_init`), so that every guest frame is backed and
every guest PTE dirty: no walk meets an EPT violation or needs a dirty-bit
assist, and without caches every walk reads (g + 1)(h + 1) - 1 entries:
24, 19, 19, 15.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (PALETTE, error_bars, legend_beside, markdown_table, mean_over_seeds, pyplot, seeds,
                                        with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "virt-walks"
COLUMNS = ["guest_page", "host_page", "caches", "refs_per_walk", "cycles_per_walk"]
#: (guest_page, host_page) -> the references of an uncached 2D walk.
NO_CACHE = {("4k", "4k"): 24, ("4k", "2m"): 19, ("2m", "4k"): 19, ("2m", "2m"): 15}

GUEST = [
    {"name": "4k", "os.policy": "base"},
    {"name": "2m", "os.policy": "thp", "os.thp.khugepaged": False},
]
HOST = [
    {"name": "4k", "virt.host.policy": "base"},
    {"name": "2m", "virt.host.policy": "thp", "virt.host.thp.khugepaged": False},
]
CACHES = [
    {"name": "on"},
    {"name": "off", "machine.pwc.enabled": False, "machine.nested_tlb.entries": 0},
]

#: variant -> (host memory, guest memory, footprint, accesses)
SCALES = {
    "full": ("16GiB", "12GiB", "8GiB", 10_000_000),
    "quick": ("4GiB", "2GiB", "1GiB", 1_000_000),
    "tiny": ("1GiB", "512MiB", "256MiB", 20_000),
}
#: The Skylake L2 TLB reaches 3 GiB of 2 MiB pages: the full footprint
#: (8 GiB) walks with it, the smaller ones would not walk at all on 2 MiB
#: pages. Those variants get a TLB with the same organisation and a
#: sixteenth... of the entries, so every point walks: what is measured is
#: the cost of one walk, not how many there are.
SMALL_TLB = {
    "l1_4k_entries": 16, "l1_4k_ways": 4, "l1_2m_entries": 4, "l1_2m_ways": 4,
    "l2_entries": 16, "l2_ways": 4,
}


def sweep(variant: str) -> Sweep:
    host, guest, fp, n = SCALES[variant]
    machine = {"preset": "skylake", "phys_mem": host}
    if variant != "full":
        machine["tlb"] = dict(SMALL_TLB)
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": machine,
            "virt": {"enabled": True, "guest_mem": guest},
            "run": {"skip_init": True},
        },
        grid={"guest_page": GUEST, "host_page": HOST, "caches": CACHES},
        workloads=[{"name": "gups", "kind": "gups", "footprint": fp, "accesses": n}],
        seeds=seeds(variant),
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    walks = df["walks"].clip(lower=1)
    d = pd.DataFrame(
        {
            "guest_page": df.guest_page,
            "host_page": df.host_page,
            "caches": df.caches,
            "refs_per_walk": df["walk.mem_refs"] / walks,
            "cycles_per_walk": df["cycles.translation"] / walks,
            "seed": df.seed,
        }
    )
    t = mean_over_seeds(d, ["guest_page", "host_page", "caches"])
    order = {"4k": 0, "2m": 1, "off": 0, "on": 1}
    t = t.assign(_g=t.guest_page.map(order), _h=t.host_page.map(order), _c=t.caches.map(order))
    return with_spread(t.sort_values(["_c", "_g", "_h"]), COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    labels = [f"{g}/{h}" for g, h in NO_CACHE]
    for ax, col, title in [(axes[0], "refs_per_walk", "memory references per walk"),
                           (axes[1], "cycles_per_walk", "translation cycles per walk")]:
        for i, (caches, color) in enumerate([("off", PALETTE["grey"]), ("on", PALETTE["blue"])]):
            sub = t[t.caches == caches].set_index(["guest_page", "host_page"]).reindex(list(NO_CACHE))
            xs = [j + (i - 0.5) * 0.4 for j in range(len(labels))]
            ax.bar(xs, sub[col].fillna(0), 0.4, yerr=error_bars(sub, col), label=f"walk caches {caches}", color=color)
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlabel("guest page size / host page size")
        ax.set_ylabel(title)
    legend_beside(fig)
    fig.suptitle("virt-walks: the two-dimensional walk")
    return write_figure(fig, path, seeds=t.seeds)


def verdicts(t: pd.DataFrame) -> list[str]:
    out = []
    off = t[t.caches == "off"].set_index(["guest_page", "host_page"])
    for key, expected in NO_CACHE.items():
        if key not in off.index:
            continue
        got = off.loc[key, "refs_per_walk"]
        ok = abs(got - expected) < 1e-9
        out.append(f"- guest {key[0]} on host {key[1]}, no caches: {got:.3f} references per walk "
                   f"(expected {expected}: {'holds' if ok else 'does **not** hold'})")
    return out


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, out / f"{ID}.png")]
    host, guest, fp, n = SCALES[variant]
    tlb = "L2 TLB 1536 entries" if variant == "full" else "a TLB of 16 L2 entries (4-way) so that 2 MiB pages walk at this footprint"
    text = f"""# virt-walks: the two-dimensional page walk

Variant `{variant}`. One VM of {guest} on a host of {host} (preset
`skylake`, {tlb}; paging-structure caches PML4E 2, PDPTE 4, PDE 32 in each
dimension; nested TLB 16 entries); gups over {fp}, {n:,} measured accesses
after its first-touch pass (`run.skip_init`). Guest and host pages: `4k` =
base pages, `2m` = THP at fault (khugepaged off).

## Results

{markdown_table(t)}
Figure: `{ID}.png`. Columns are described in `pagelab/experiments/virt/walks.py`.

## Expected and measured

Without caches a walk of g guest levels over h EPT levels reads
(g + 1)(h + 1) - 1 entries (Bhargava et al., ASPLOS 2008):

{chr(10).join(verdicts(t))}

With the caches on, the guest's PDE cache and the EPT's PDE cache skip most
upper levels and the nested TLB most EPT walks of the guest's tables; what
remains is dominated by the guest PTE and the EPT walk of the data's frame.
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "references and cycles per two-dimensional walk, guest x host page size, caches on/off", sweep, analyze)
