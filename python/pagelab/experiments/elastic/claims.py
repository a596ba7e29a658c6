"""Elastic Translations: the artifact's claims that
docs/systems/elastic-results.md opens with (`pagelab.headline`). The paper's
figures give cycles over 4 KiB pages' (`cycles_norm`); the ET - THP gap is
(ET's cycles - THP's) / 4 KiB's, per workload and seed. The artifact's
values are those its plot data give (the experiments' `paper/ID.csv`)."""

from __future__ import annotations

import pandas as pd

from pagelab.headline import Claim, Effect, Zero, column, made_equal, per_seed_ratio
from pagelab.experiments.elastic.walkcost import PRESETS_LATENCY

CYCLES = column("cycles")
#: The artifact's ET - THP gaps (fig8, fig10, fig11 at FMFI 99%).
NATIVE_GAPS = {"gups": -0.05, "hashjoin": -0.08, "btree": -0.04, "canneal": -0.03, "omnetpp": +0.04}
VIRT_GAPS = {"gups": -0.31, "hashjoin": -0.29, "btree": -0.30, "canneal": -0.19, "bfs": -0.12}
FRAG_GAPS = {"bfs": -0.08, "hashjoin": -0.11, "canneal": -0.02}
#: fig8's THP over 4 KiB.
NATIVE_THP = {"gups": 0.48, "hashjoin": 0.65}
#: The cycles the N1 saves per walk ET removes (fig8's cycles and tlbmisses).
SAVED_PER_WALK = {"btree": 45.9, "canneal": 50.0}

NATIVE = "et-native and et-sizes: the paper's Figure 8"
VIRT = "et-virt: the paper's Figure 10"
FRAG = "et-frag: the paper's Figure 11"


def _gap(workload: str, thp: str = "thp", base: str = "4k", where: dict | None = None):
    def measure(r: pd.DataFrame) -> pd.Series:
        d = r[r.workload == workload]
        for k, v in (where or {}).items():
            d = d[d[k] == v]
        return per_seed_ratio(d, "system", "elastic", thp, CYCLES, norm=base)
    return measure


def _saved_per_walk(workload: str, latency: int):
    """Per seed: (THP's cycles - ET's) / (THP's L2 TLB misses - ET's), at
    the walker's own latency `latency` (NaN where ET removes no walk)."""
    def measure(r: pd.DataFrame) -> pd.Series:
        d = r[(r.workload == workload) & (r.walk_latency.astype(int) == latency)]
        s = d.set_index(["seed", "system"])[["cycles", "dtlb.l2.misses"]].unstack("system")
        walks = s["dtlb.l2.misses"]["thp"] - s["dtlb.l2.misses"]["elastic"]
        return (s["cycles"]["thp"] - s["cycles"]["elastic"]) / walks.where(walks != 0)
    return measure


def _hugetlb_64k_over_2m(r: pd.DataFrame) -> pd.Series:
    native = r[r.virtualized.astype(str) == "False"]
    return per_seed_ratio(native, "page_size", "64k", "2m", CYCLES)


CLAIMS = [
    *[Claim(f"ET - THP gap in cycles over 4 KiB's, {w} (fig8)", "et-native", f"{g:+.2f}", Effect(g, 0.0), _gap(w),
            lambda r: made_equal(r, "system", "elastic", "thp"), NATIVE) for w, g in NATIVE_GAPS.items()],
    Claim("... bfs: no gap (fig8)", "et-native", "+0.00", Zero(0.01, 0.0), _gap("bfs"),
          lambda r: made_equal(r, "system", "elastic", "thp"), NATIVE),
    *[Claim(f"THP's cycles over 4 KiB's, {w} (fig8)", "et-native", f"{v:.2f}", Effect(v),
            lambda r, w=w: per_seed_ratio(r[r.workload == w], "system", "thp", "4k", CYCLES),
            lambda r: made_equal(r, "system", "thp", "4k"), NATIVE) for w, v in NATIVE_THP.items()],
    *[Claim(f"Cycles ET saves per walk it removes, {w}, walk latency as the presets' (artifact's fig8 counts)",
            "et-walkcost", f"{v:.1f}", Effect(v, 0.0), _saved_per_walk(w, PRESETS_LATENCY),
            lambda r: made_equal(r, "system", "elastic", "thp"), "et-walkcost: what a walk costs", digits=1)
      for w, v in SAVED_PER_WALK.items()],
    *[Claim(f"In a VM, guest over 4 KiB stage-2 pages (as the artifact's runs): ET - THP gap, {w} (fig10)", "et-virt",
            f"{g:+.2f}", Effect(g, 0.0), _gap(w, "thp-host4k", "4k-host4k"),
            lambda r: made_equal(r, "system", "elastic", "thp-host4k"), VIRT) for w, g in VIRT_GAPS.items()],
    *[Claim(f"At FMFI 99%: ET - THP gap, {w} (fig11)", "et-frag", f"{g:+.2f}", Effect(g, 0.0),
            _gap(w, where={"fmfi": 0.99}), lambda r: made_equal(r, "system", "elastic", "thp"), FRAG)
      for w, g in FRAG_GAPS.items()],
    Claim("64 KiB pages run as fast as 2 MiB pages: cycles with 64 KiB over 2 MiB, mean of the workloads, native "
          "(slides: '64KiB == 2MiB')", "et-hugetlb", "1.0", Zero(0.05), _hugetlb_64k_over_2m,
          lambda r: made_equal(r, "page_size", "64k", "2m"), "et-hugetlb: the paper's Figure 2"),
]
