"""virt-ksm: memory saved and copy-on-write breaks against KSM's scan rate.
Two VMs initialise the same buffer (gups with `contents = "shared"`: page
for page the same data) and then update it at random, a few updates in a
hundred storing; the host's KSM (`virt.host.ksm`) scans `pages_to_scan`
pages a wake-up and merges equal pages; a store to a merged page copies it
back (copy-on-write).

ID.csv has one row per `pages_to_scan` (0 = KSM off): these columns (means
over seeds; `runtime` normalized seed by seed), then `seeds` and each
quantity's `<col>_std` and `<col>_ci95` (`common.mean_over_seeds`):

| column | meaning |
|---|---|
| `pages_to_scan` | `virt.host.ksm.pages_to_scan` (0: KSM off) |
| `pages_shared` | `ksm.pages_shared` at the end: KSM pages in use |
| `pages_sharing` | `ksm.pages_sharing` at the end: guest pages mapped to a KSM page beyond the first of each |
| `memory_saved_mib` | `pages_sharing` x 4 KiB, in MiB: host memory the merging freed |
| `cow_breaks` | `ksm.cow_breaks`: stores that copied a merged page |
| `full_scans` | `ksm.full_scans` |
| `runtime` | `runtime.cycles` divided by the same seed's run with KSM off |
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (PALETTE, error_bars, markdown_table, mean_over_seeds, paired, pyplot, seeds,
                                        with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "virt-ksm"
COLUMNS = ["pages_to_scan", "pages_shared", "pages_sharing", "memory_saved_mib", "cow_breaks", "full_scans", "runtime"]

#: The share of gups updates that store (each store to a merged page copies it).
WRITE_FRACTION = 0.005

#: variant -> (host memory, guest memory, buffer, accesses per VM, ksm sleep_ms, pages_to_scan values)
#: (The shorter variants wake KSM more often, in proportion to their
#: shorter runs: Linux's 20 ms would not finish two full scans in them.)
SCALES = {
    "full": ("4GiB", "1GiB", "256MiB", 40_000_000, 20.0, [400, 1600, 6400, 25600]),
    "quick": ("1GiB", "256MiB", "32MiB", 1_000_000, 1.0, [100, 400, 1600, 6400]),
    "tiny": ("256MiB", "64MiB", "8MiB", 100_000, 0.1, [25, 100, 400, 1600]),
}


def _vm(guest: str, buffer: str, accesses: int) -> dict:
    workload = {"kind": "gups", "footprint": buffer, "accesses": accesses, "contents": "shared",
                "write_fraction": WRITE_FRACTION}
    return {"guest_mem": guest, "os": {"policy": "base"}, "workload": workload}


def sweep(variant: str) -> Sweep:
    host, guest, buffer, n, sleep_ms, rates = SCALES[variant]
    ksm = [{"name": 0, "virt.host.ksm.enabled": False}]
    ksm += [{"name": r, "virt.host.ksm.pages_to_scan": r} for r in rates]
    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": {"phys_mem": host},
            "virt": {"enabled": True, "host": {"policy": "base", "ksm": {"enabled": True, "sleep_ms": sleep_ms}}},
            "vms": [_vm(guest, buffer, n), _vm(guest, buffer, n)],
        },
        grid={"pages_to_scan": ksm},
        seeds=seeds(variant),
        # (Shaped: each VM's workload gets its own seed.)
        shape=lambda config, params: None,
    )


def table(df: pd.DataFrame) -> pd.DataFrame:
    def stat(name: str) -> pd.Series:
        return df[name].fillna(0) if name in df else pd.Series(0, index=df.index)

    d = pd.DataFrame(
        {
            "pages_to_scan": df.pages_to_scan.astype(int),
            "pages_shared": stat("ksm.pages_shared"),
            "pages_sharing": stat("ksm.pages_sharing"),
            "cow_breaks": stat("ksm.cow_breaks"),
            "full_scans": stat("ksm.full_scans"),
            "runtime": df["runtime.cycles"],
            "seed": df.seed,
        }
    )
    d["memory_saved_mib"] = d.pages_sharing * 4096 / (1 << 20)
    d["runtime"] = d.runtime / paired(d, "runtime", ["seed"], d.pages_to_scan == 0)
    t = mean_over_seeds(d, ["pages_to_scan"])
    return with_spread(t.sort_values("pages_to_scan"), COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    on = t[t.pages_to_scan > 0]
    a.errorbar(on.pages_to_scan, on.memory_saved_mib, yerr=error_bars(on, "memory_saved_mib"), marker="o")
    a.set_ylabel("memory saved at the end (MiB)")
    b.errorbar(on.pages_to_scan, on.cow_breaks, yerr=error_bars(on, "cow_breaks"), marker="o", color=PALETTE["vermillion"])
    b.set_ylabel("copy-on-write breaks")
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_xlabel("pages ksmd scans per wake-up (pages_to_scan)")
    fig.suptitle("virt-ksm: two VMs with the same buffer")
    return write_figure(fig, path, seeds=t.seeds)


def verdicts(t: pd.DataFrame) -> list[str]:
    on = t[t.pages_to_scan > 0].sort_values("pages_to_scan")
    saved = list(on.memory_saved_mib)
    grows = all(x <= y for x, y in zip(saved, saved[1:]))
    # A page merges during its second scan at the earliest, so nothing
    # merges before the first full scan ends.
    early = on[on.full_scans < 1]
    return [
        f"- Memory saved at the end, from the slowest to the fastest scan: {', '.join(f'{x:.2f}' for x in saved)} MiB: "
        + ("grows with the scan rate." if grows else "does **not** grow with the scan rate everywhere: a faster scan "
           "merges earlier and leaves the stores longer to copy merged pages back."),
        f"- Copy-on-write breaks: {', '.join(f'{x:.0f}' for x in on.cow_breaks)}; full scans: "
        f"{', '.join(f'{x:.0f}' for x in on.full_scans)}.",
        "- Rates that did not finish one full scan merged nothing (a page merges during its second scan at the earliest): "
        + ("holds." if (early.memory_saved_mib == 0).all() else "does **not** hold."),
    ]


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, out / f"{ID}.png")]
    host, guest, buffer, n, sleep_ms, _ = SCALES[variant]
    text = f"""# virt-ksm: memory saved and copy-on-write breaks against the scan rate

Variant `{variant}`. Two VMs of {guest} on a host of {host} (4 KiB pages in
both layers), each initialising a {buffer} gups table with the same data
(`contents = "shared"`) and then making {n:,} updates at random, {WRITE_FRACTION:.1%}
of them stores. KSM wakes every {sleep_ms} ms of simulated time (Linux: 20)
and scans `pages_to_scan` pages a wake-up.

## Results (`runtime` divided by KSM off)

{markdown_table(t)}
Figure: `{ID}.png`. Columns are described in `pagelab/experiments/virt/ksm.py`.

## Expected and measured

A page merges during its second full scan at the earliest (its content
must be the same at two scans in a row), so a faster scan merges more of the
buffer before the run ends; the stores then copy back the merged pages
they hit, so breaks grow with what was merged.

{chr(10).join(verdicts(t))}
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "two VMs with the same buffer: KSM's memory saved and copy-on-write breaks against its scan rate", sweep, analyze)
