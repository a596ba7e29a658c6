"""What COPLACE's experiments share: the paper's machine and VM, the
workload analogues at each variant's scale, the host placements by the
paper's names, and the statistics each table reads.

The paper (section III): a Xeon Gold 6138 (pagelab's `xeon-gold-6138`:
27.5 MiB 11-way LLC in 20 slices, victim fill, 1 MiB 16-way L2), a VM of
one vCPU and 8 GiB, guest and host Linux 5.3. Its host placements
(footnote 1): "bin hopping" is Linux's default (pagelab's host `base`,
the buddy allocator), "page coloring" is FreeBSD's ported to the host
(pagelab's `vmm-coloring`: the color follows the guest frame); pagelab's
`coloring` (PALLOC's round-robin in fault order) is reported beside them.
Host huge pages are off (docs/systems/coplace.md, "Under host THP").
"""

from __future__ import annotations

import pandas as pd

#: The paper's names of the host placements -> `virt.host.policy`.
HOST_POLICIES = {"bin-hopping": "base", "page-coloring": "vmm-coloring", "coplace": "coplace"}

#: variant -> (host memory, guest memory, accesses per measured program).
#: The full variant is the paper's VM (8 GiB). The host backs only what the
#: guest touches, so it needs room for that alone (the paper's had 256 GB):
#: a small host keeps the aged host's clean remainder (`AGED`) negligible.
#: The shorter variants shrink memory and the run, not the workloads'
#: working sets against the LLC, except tiny, which only checks the code.
SCALES = {
    "full": ("4GiB", "8GiB", 20_000_000),
    "quick": ("2GiB", "2GiB", 2_000_000),
    "tiny": ("1GiB", "512MiB", 150_000),
}

#: The paper's workload -> the analogue's table at full and quick scale,
#: and its footprint at tiny. `accesses` is the variant's. Footprints:
#: Xapian's is the paper's (~20 MB, section V); blackscholes's,
#: water_spatial's and raytrace's scene are pagelab's choice, just under
#: the 27.5 MiB LLC, where placement decides their misses (PARSEC's native blackscholes, 280 MB,
#: streams through the LLC, and one of its 100 passes alone is 70 M
#: accesses; the paper gives neither program's input); Img-dnn's is the
#: analogue's example (the paper gives none).
WORKLOADS = {
    "blackscholes": ({"kind": "blackscholes", "footprint": "24MiB"}, "3MiB"),
    "water_spatial": ({"kind": "water-spatial", "footprint": "24MiB"}, "2MiB"),
    "raytrace": ({"kind": "raytrace", "footprint": "24MiB"}, "1MiB"),
    "Xapian": ({"kind": "xapian", "footprint": "20MiB"}, "2MiB"),
    "Img-dnn": ({"kind": "img-dnn", "footprint": "6MiB"}, "1MiB"),
}


def workload(name: str, variant: str, **extra) -> dict:
    """The analogue of the paper's workload `name` at `variant`'s scale,
    labelled with the paper's name."""
    _, _, accesses = SCALES[variant]
    table, tiny = WORKLOADS[name]
    w = dict(table, name=name, accesses=accesses, **extra)
    if variant == "tiny":
        w["footprint"] = tiny
    return w


def machine(variant: str) -> dict:
    host, _, _ = SCALES[variant]
    return {"preset": "xeon-gold-6138", "phys_mem": host}


#: An aged host's memory (`*.fragmentation`): the paper's host is a
#: server that has run other work, whose free memory lies between frames
#: in use, where a freshly booted simulated host hands out consecutive
#: frames (and its default placement then follows the guest frame as the
#: colored ones do: docs/systems/coplace.md, "Measured"). pagelab's model,
#: not the paper's (it does not describe its host's state): all but 0.1%
#: of the pageblocks (the most `fragmentation.target` allows) hold 256
#: pinned frames, one at random in each pair of frames, so half of memory
#: is in use, spread over every color. Fragmented pageblocks turn
#: UNMOVABLE and the clean 0.1% are taken first: 4 MiB on the full
#: variant's 4 GiB host.
AGED = {"target": 0.999, "holes": 256}
#: Host memory states -> the keys that make them.
HOST_MEMORY = {
    "aged": {f"virt.host.fragmentation.{k}": v for k, v in AGED.items()},
    "fresh": {"virt.host.fragmentation.target": 0.0},
}


def vm_base(variant: str, guest_policy: str = "base") -> dict:
    """One VM of one vCPU with the variant's guest memory, booted on an
    aged host (`AGED`), the host's placement to be set
    (`virt.host.policy`), host THP off, the paper's conflict levels on,
    statistics from the end of the init pass (`run.skip_init`)."""
    _, guest, _ = SCALES[variant]
    return {
        "machine": machine(variant),
        "virt": {"enabled": True, "guest_mem": guest, "host": {"policy": "base", "fragmentation": dict(AGED)}},
        "os": {"policy": guest_policy},
        # The measured accesses only: a constant workload's first touches
        # (the host's faults among them) happen once, in its init pass,
        # which a run of seconds to minutes amortizes and a simulated run
        # of millions of accesses would not.
        "run": {"conflict_level": True, "skip_init": True},
    }


def native(name: str = "native") -> dict:
    """The grid bundle of a native run on the same aged machine: the
    workload's OS is the machine's (its fragmentation the host's)."""
    return {"name": name, "virt.enabled": False, **{f"os.fragmentation.{k}": v for k, v in AGED.items()}}


def ways_mask(ways: int) -> list[int]:
    """Core 0's CAT mask for `ways` of the LLC's ways (the lowest)."""
    return [(1 << ways) - 1]


def miss_ratio(df: pd.DataFrame, level: str) -> pd.Series:
    """Misses over accesses at `level` (`l2`, `llc`), in percent (the paper's
    points): the whole run's, the init pass included, as the paper's counters
    cover the program."""
    return 100.0 * df[f"cache.{level}.misses"] / df[f"cache.{level}.accesses"]
