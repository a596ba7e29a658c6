"""Perforated Pages, Fig. 11: `pp-fig9`'s analogues and scenario in a
virtual machine (VII-E).

The guest runs the four systems of `pp-fig9` (`os.*` is the guest's: its
kernel fragments and perforates guest-physical memory); the host backs
guest memory with THP (2 MiB EPT leaves, khugepaged off), so a guest
perforated page over a host huge page is one combined perforated entry
(docs/systems/perforated.md, "Virtualization"). The walk caches of both
dimensions are the machine's (the paper: "the state-of-art page caching
for two dimensional page walk").

Columns of `pp-virt`: `workload, distribution, degree, portion, system,
speedup, refs_per_walk, bitmap_refs_per_walk`, means over seeds, then
`seeds` and each quantity's `_std` and `_ci95`:

| column | meaning |
|---|---|
| `speedup` | cycles of `base-4k` (in the same VM) / the system's cycles, paired by seed |
| `refs_per_walk` | `walk.mem_refs / (walks + perforated.hole_walks)`: every memory reference of the translation path past the TLBs (guest table entries, EPT entries, bitmap reads, the hole walks' entries) per walk, a hole walk counting as a walk |
| `bitmap_refs_per_walk` | `perforated.bitmap_refs / (walks + perforated.hole_walks)`: bitmap reads from memory per walk |

A hole walk is the paper's "page table walk ... via the shadow PTE" (IV-D);
most of them follow an L2 TLB hit on a perforated entry, not a 2D walk, so
dividing by 2D walks alone would charge a perforated page's hole walks to
walks it never made. (A hole walk that finishes a 2D walk counts twice in
the divisor; a bitmap read after an L2 hit on a non-hole counts in the
references only.) Empty where no walk happened in the measured accesses
(ideal 2 MiB pages whose entries all fit the L2 TLB).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import GIB, MIB, seeds, write_outputs
from pagelab.experiments.perforated import PAPER, apps
from pagelab.experiments.perforated.apps import plot
from pagelab.experiments.perforated.common import base_config, write_up
from pagelab.sweep import Sweep

ID = "pp-virt"

#: variant -> (host memory, guest memory, footprint scale, accesses, degrees, portions)
SCALES = {
    "full": (12 * GIB, 8 * GIB, 1.0, 4_000_000, [0.25, 0.5], [0.25, 0.5, 0.75, 1.0]),
    "quick": (6 * GIB, 4 * GIB, 0.5, 1_000_000, [0.25, 0.5], [0.5]),
    "tiny": (1 * GIB, 512 * MIB, 1 / 32, 20_000, [0.25, 0.5], [0.5]),
}


def vm_config(host: int, guest: int) -> dict:
    """`pp-fig9`'s machine as the host, a VM of `guest` bytes on it whose
    memory the host backs with THP."""
    config = base_config(host)
    config["virt"] = {"enabled": True, "guest_mem": guest, "host": {"policy": "thp", "thp": {"khugepaged": False}}}
    return config


def sweep(variant: str) -> Sweep:
    host, guest, scale, n, degrees, portions = SCALES[variant]
    return apps.programs_sweep(f"{ID}:{variant}", vm_config(host, guest), scale, n, degrees, portions, variant)


def table(df: pd.DataFrame) -> pd.DataFrame:
    walks = (df["walks"] + df["perforated.hole_walks"]).where(lambda w: w > 0)
    per_walk = {"refs_per_walk": df["walk.mem_refs"] / walks, "bitmap_refs_per_walk": df["perforated.bitmap_refs"] / walks}
    return apps.table(df, per_walk)


def measured(t: pd.DataFrame) -> dict[str, object]:
    at = t[(t.distribution == "clustered") & (t.degree == 0.25) & (t.portion == 0.5)]
    p = at.pivot_table(index="workload", columns="system", values="speedup")
    of_ideal = p["perforated"] / p["ideal-2m"]
    over_conv = p["perforated"] / p["base-2m-4k"]
    walks = at[at.system == "perforated"].refs_per_walk
    return {
        "portion 50%, degree 25%, clustered: perforated / ideal-2m, lowest of the programs": of_ideal.min(),
        "portion 50%, degree 25%, clustered: perforated / ideal-2m, highest of the programs": of_ideal.max(),
        "portion 50%, degree 25%, clustered: perforated / base-2m-4k, lowest of the programs": over_conv.min(),
        "portion 50%, degree 25%, clustered: perforated / base-2m-4k, highest of the programs": over_conv.max(),
        "portion 50%, degree 25%, clustered: perforated's references per walk, mean of the programs": walks.mean(),
    }


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files, paper = write_outputs(__file__, ID, t, plot, measured(t), out)
    host, guest, scale, n, _, _ = SCALES[variant]
    head = f"""# {ID}: the paper's programs (analogues) under fragmentation, virtualized

Variant `{variant}`: the paper's machine (preset `gem5-skylake`) with {host >> 20} MiB
of host memory, one VM of {guest >> 20} MiB whose memory the host backs with THP;
in the guest, `pp-fig9`'s analogues at {scale:g} of their footprints, {n:,}
measured accesses each, allocated holes. `speedup` is cycles of `base-4k` in
the VM over the system's; `refs_per_walk` counts every reference past the
TLBs (both dimensions' table entries, bitmap reads, hole walks) per walk,
a hole walk counting as a walk."""
    files.append(write_up(out / f"{ID}.md", head, paper, t))
    return files


declare(ID, "Perforated Pages Fig. 11: the programs' analogues under fragmentation, virtualized", sweep, analyze,
        paper=PAPER)
