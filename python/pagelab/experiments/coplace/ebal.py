"""coplace-multivm's `ebal` scenario (section V-D, Fig. 8(c)-(d)): a
two-vCPU VM whose Xapian gets pages through a balloon, beside a memory hog,
on a host with no free memory but what another VM's balloon releases.
Its design, each choice's reason, and the measured sizes are in
multivm.py's docstring and docs/systems/coplace.md ("eBal", "Measured").
"""

from __future__ import annotations

from pagelab.experiments.coplace.common import machine, workload

#: system -> (host placement, `virt.host.balloon.even_colors`).
SYSTEMS = {"baseline": ("vmm-coloring", False), "coplace-no-ebal": ("coplace", False), "coplace": ("coplace", True)}

#: Both guests' color map: COPLACE's host colors on `xeon-gold-6138`
#: (bits 12-21: 32 colors per slice and the 5 slice bits), so that eBal
#: evens the colors the host places by (docs/systems/coplace.md, "eBal").
COLOR_BITS = list(range(12, 22))

#: variant -> sizes, each measured or chosen as multivm.py's docstring says:
#: the receiver's guest memory and its hog's footprint; the accesses of the
#: program Xapian waits for, of Xapian, and of the hog; the donor's guest
#: memory and its job's footprint; the balloons' moment (ms); host memory.
SCALES = {
    "full": dict(guest="512MiB", hog="480MiB", wait=8_000_000, xapian=4_000_000, hog_accesses=12_500_000,
                 donor="128MiB", job="40MiB", at_ms=514.0, host="554MiB"),
    "quick": dict(guest="256MiB", hog="224MiB", wait=8_000_000, xapian=2_000_000, hog_accesses=10_500_000,
                  donor="128MiB", job="40MiB", at_ms=241.0, host="298MiB"),
    "tiny": dict(guest="64MiB", hog="58MiB", wait=2_000_000, xapian=150_000, hog_accesses=2_200_000,
                 donor="32MiB", job="8MiB", at_ms=62.1, host="82MiB"),
}
#: An aged donor (`vms[1].os.fragmentation`): in all but 0.1% of its
#: pageblocks, one random frame of each pair pinned by its kernel, so its
#: free memory is single frames, whose colors a largest-first balloon takes
#: as they come (the same state as common.AGED, here in a guest).
DONOR_AGED = {"target": 0.999, "holes": 256}


def balloon_bytes(variant: str) -> str:
    """The receiver's extra memory: Xapian's footprint (the paper's 20 MB,
    "roughly equal to the working set size of Xapian")."""
    return workload("Xapian", variant)["footprint"]


def vms(variant: str) -> list[dict]:
    s = SCALES[variant]
    xapian = workload("Xapian", variant, after="previous")
    xapian["accesses"] = s["xapian"]
    # Xapian's index is static and its per-query buffer reuses the frames
    # it freed (the guest's buddy allocator takes the smallest, lowest free
    # block): only a Xapian that starts after the deflation allocates on
    # ballooned-in pages, so it waits on its vCPU for a small program to end.
    # (In the L2, 192 KiB: its accesses add nothing to core 0's LLC counts.)
    wait = {"name": "wait", "kind": "stream", "footprint": "192KiB", "accesses": s["wait"]}
    hog = {"name": "memory-hog", "kind": "stream", "footprint": s["hog"], "accesses": s["hog_accesses"]}
    guest_os = {"policy": "base", "coloring": {"bits": list(COLOR_BITS)}}
    receiver = {"guest_mem": s["guest"], "os": dict(guest_os), "workloads": [wait, xapian, hog]}
    job = {"name": "donor-job", "kind": "stream", "footprint": s["job"], "accesses": 10_000}
    service = {"name": "donor-service", "kind": "gups", "footprint": "1MiB", "accesses": s["hog_accesses"],
               "after": "previous"}
    donor = {"guest_mem": s["donor"], "os": dict(guest_os, fragmentation=dict(DONOR_AGED)),
             "workloads": [job, service]}
    return [receiver, donor]


def config(variant: str) -> dict:
    """The scenario's whole configuration; the system sets
    `virt.host.policy` and `virt.host.balloon.even_colors`."""
    s = SCALES[variant]
    m = machine(variant)
    m["phys_mem"] = s["host"]
    # Xapian, the hog and the donor each on their own LLC way(s).
    m["cache"] = {"llc": {"way_masks": [1, 2, 0x7FC]}}
    moved = balloon_bytes(variant)
    balloon = {"inflated_at_boot": [moved], "deflate": [moved], "deflate_at_ms": s["at_ms"],
               "targets": ["0MiB", moved], "inflate_at_ms": s["at_ms"]}
    # The whole run's statistics (its first touches, where the host's color
    # fallbacks happen, included), with Xapian's conflict level as the
    # paper measures it.
    run = {"conflict_level": True}
    return {"machine": m, "virt": {"enabled": True, "host": {"policy": "coplace", "balloon": balloon}},
            "vms": vms(variant), "run": run}


def apply_system(config: dict, system: str) -> None:
    policy, even = SYSTEMS[system]
    config["virt"]["host"]["policy"] = policy
    config["virt"]["host"]["balloon"]["even_colors"] = even
