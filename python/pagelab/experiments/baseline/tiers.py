"""mem-tiers: DRAM and a slow tier (`machine.memory.tiers`), the fast
tier's size swept so that a growing share of the footprint lands in the
slow one; a check of the tiers' timing against arithmetic.

ID.csv has one row per (workload, slow_tier, fast_share), the mean over
seeds, then `seeds` and each quantity's `<col>_std` and `<col>_ci95`
(`common.mean_over_seeds`):

| column | meaning |
|---|---|
| `workload` | gups or stream |
| `slow_tier` | `nvm`: the slow tier reads in 720 cycles and writes in 1200 (3x and 5x the DRAM tier's 240; illustrative values, not a device's); `same`: the slow tier is as fast as DRAM (240/240) |
| `fast_share` | the DRAM tier's size over the footprint (the allocator fills DRAM first; page tables take a little of it) |
| `slow_accesses_share` | `tier.slow.accesses` over all memory references of the tiers |
| `runtime_norm` | `runtime.cycles` over that of the same machine without tiers (one memory of 240 cycles) |
| `predicted_norm` | the serial bound: the `same` run's cycles plus 480 cycles (720 - 240 for a read; 1200 - 720 beyond a read for a writeback) per slow-tier reference of the `nvm` run, over the runtime without tiers: what the slow tier would add if none of its references overlapped another; empty for `same` rows |

The machine runs the interval model, as every experiment does: the slow
tier's extra latency overlaps where the core has independent work (gups'
updates), so an `nvm` run lies between its `same` run and the serial
bound, nearer the bound the fewer references overlap.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.experiments import declare
from pagelab.experiments.common import (MIB, error_bars, legend_beside, markdown_table, mean_over_seeds, paired,
                                        pyplot, seeds, with_spread, write_csv, write_figure, write_text)
from pagelab.sweep import Sweep

ID = "mem-tiers"
COLUMNS = ["workload", "slow_tier", "fast_share", "slow_accesses_share", "runtime_norm", "predicted_norm"]
DRAM = (240, 240)
SLOW = {"nvm": (720, 1200), "same": (240, 240)}
#: Extra cycles of a slow-tier reference of the `nvm` run over the `same` one.
EXTRA = 480
FAST_SHARES = [0.25, 0.5, 0.75, 1.25]

#: variant -> (phys_mem MiB, footprint MiB, accesses)
SCALES = {
    "full": (16384, 8192, 10_000_000),
    "quick": (4096, 1024, 1_000_000),
    "tiny": (256, 64, 20_000),
}

TIERS = [{"name": "none"}] + [{"name": f"{slow}-{share}"} for slow in SLOW for share in FAST_SHARES]


def tier_list(phys_mib: int, footprint_mib: int, label: str) -> list[dict] | None:
    """The `machine.memory.tiers` of a grid label (`nvm-0.5`), None for `none`."""
    if label == "none":
        return None
    slow, share = label.split("-")
    fast = max(4, int(float(share) * footprint_mib) // 4 * 4)
    read, write = SLOW[slow]
    return [
        {"name": "dram", "size": f"{fast}MiB", "read_latency": DRAM[0], "write_latency": DRAM[1]},
        {"name": "slow", "size": f"{phys_mib - fast}MiB", "read_latency": read, "write_latency": write},
    ]


def sweep(variant: str) -> Sweep:
    phys, fp, n = SCALES[variant]

    def shape(config: dict, params: dict) -> None:
        tiers = tier_list(phys, fp, params["tiers"])
        if tiers is not None:
            config["machine"].setdefault("memory", {})["tiers"] = tiers

    return Sweep(
        id=f"{ID}:{variant}",
        base={
            "machine": {"preset": "skylake", "phys_mem": f"{phys}MiB"},
            "run": {"skip_init": True},
        },
        grid={"tiers": TIERS},
        workloads=[
            {"name": "gups", "kind": "gups", "footprint": f"{fp}MiB", "accesses": n},
            {"name": "stream", "kind": "stream", "footprint": f"{fp}MiB", "accesses": n},
        ],
        seeds=seeds(variant),
        shape=shape,
    )


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df else pd.Series(0.0, index=df.index)


def table(df: pd.DataFrame) -> pd.DataFrame:
    label = df["tiers"].astype(str)
    slow_acc, dram_acc = _col(df, "tier.slow.accesses").fillna(0), _col(df, "tier.dram.accesses").fillna(0)
    d = pd.DataFrame(
        {
            "workload": df.workload,
            "slow_tier": label.str.split("-").str[0],
            "fast_share": label.map(lambda s: float(s.split("-")[1]) if "-" in s else float("nan")),
            "seed": df.seed,
            "cycles": df["runtime.cycles"],
            "slow_accesses": slow_acc,
            "slow_accesses_share": slow_acc / (slow_acc + dram_acc).where(slow_acc + dram_acc > 0),
        }
    )
    none = paired(d, "cycles", ["workload", "seed"], d.slow_tier == "none").astype(float)
    d["runtime_norm"] = d.cycles / none
    same = d[d.slow_tier == "same"].set_index(["workload", "seed", "fast_share"]).cycles
    at = pd.MultiIndex.from_frame(d[["workload", "seed", "fast_share"]])
    same_cycles = pd.Series(same.reindex(at).to_numpy(), index=d.index)
    predicted = (same_cycles + d.slow_accesses * EXTRA) / none
    d["predicted_norm"] = predicted.where(d.slow_tier == "nvm")
    d = d[d.slow_tier != "none"]
    t = mean_over_seeds(d.drop(columns=["cycles", "slow_accesses"]), ["workload", "slow_tier", "fast_share"])
    t = t.sort_values(["workload", "slow_tier", "fast_share"], ascending=[True, True, False])
    return with_spread(t, COLUMNS).reset_index(drop=True)


def plot(t: pd.DataFrame, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for (w, slow), sub in t.groupby(["workload", "slow_tier"]):
        ax.errorbar(sub.slow_accesses_share, sub.runtime_norm, yerr=error_bars(sub, "runtime_norm"), marker="o",
                    label=f"{w}, slow tier {slow}")
    ax.set_xlabel("share of memory references served by the slow tier")
    ax.set_ylabel("runtime / runtime without tiers")
    legend_beside(fig)
    fig.suptitle("mem-tiers: runtime against the slow tier's share")
    return write_figure(fig, path, seeds=t.seeds)


def verdicts(t: pd.DataFrame) -> list[str]:
    out = []
    for w, sub in t.groupby("workload"):
        nvm = sub[sub.slow_tier == "nvm"].sort_values("slow_accesses_share")
        grows = nvm.runtime_norm.is_monotonic_increasing
        same = sub[sub.slow_tier == "same"].set_index("fast_share").runtime_norm
        floor = same.reindex(nvm.fast_share).to_numpy()
        bounded = ((nvm.runtime_norm.to_numpy() >= floor - 1e-9) & (nvm.runtime_norm <= nvm.predicted_norm + 1e-9)).all()
        extra = nvm.predicted_norm.to_numpy() - floor
        hidden = [1 - (r - f) / e for r, f, e in zip(nvm.runtime_norm, floor, extra) if e > 0]
        out.append(
            f"- **{w}**: with the `nvm` slow tier the runtime grows with the slow share "
            f"({'holds' if grows else 'does **not** hold'}: x{nvm.runtime_norm.min():.3f} to "
            f"x{nvm.runtime_norm.max():.3f}); between the `same` run and the serial bound: "
            f"{'holds' if bounded else 'does **not** hold'}, the window hiding "
            f"{min(hidden, default=0):.0%} to {max(hidden, default=0):.0%} of the slow tier's extra latency; "
            f"a slow tier as fast "
            f"as DRAM gives x{same.min():.4f} to x{same.max():.4f}."
        )
    return out


def analyze(df: pd.DataFrame, out: Path, variant: str) -> list[Path]:
    t = table(df)
    files = [write_csv(t, out / f"{ID}.csv"), plot(t, out / f"{ID}.png")]
    phys, fp, n = SCALES[variant]
    text = f"""# mem-tiers: a DRAM tier and a slow tier

Variant `{variant}`. Preset `skylake` with {phys} MiB of memory as two tiers
(`machine.memory.tiers`): `dram` (240 cycles to read and to write) of
`fast_share` x the footprint, then `slow` for the rest; gups and stream over
{fp} MiB, {n:,} measured accesses after the first-touch pass
(`run.skip_init`); the interval timing model and the preset's
prefetchers; seeds {sorted(set(df.seed))}. The allocator fills the first
tier first, so the first-touch pass puts the first part of the footprint in
DRAM and the rest in the slow tier. No paper: the mechanism HugeScope's
tiered-memory policy will drive.

## Results

{markdown_table(t)}
Figure: `{ID}.png`. Columns are described in `pagelab/experiments/baseline/tiers.py`.

## Expected and measured

Every reference served by memory costs its tier's latency, and a
writeback its tier's write latency beyond a read. Between the `same` and
the `nvm` run of one fast share the placement is the same (latencies do not
move pages), so the `nvm` run's cycles lie between the `same` run's and the
`same` run's plus 480 per slow-tier reference (`predicted_norm`, the serial
bound: the interval model overlaps independent misses). A `same` run
differs from the machine without tiers only by where pages were placed (two
nodes fill otherwise than one: a node is used up, its migratetype fallbacks
included, before the next), which moves lines between cache sets.

{chr(10).join(verdicts(t))}
"""
    files.append(write_text(text, out / f"{ID}.md"))
    return files


EXPERIMENT = declare(ID, "DRAM and a slow tier: runtime against the slow tier's share", sweep, analyze)
