"""Perforated Pages: the paper's claims that
docs/systems/perforated-results.md opens with (`pagelab.headline`). A
speedup is one system's cycles over another's in the same scenario and
seed; a "lowest / highest of the programs" is, per seed, the lowest /
highest over the eight analogues, then averaged over the seeds."""

from __future__ import annotations

import pandas as pd

from pagelab.headline import Claim, Effect, column, made_equal, per_seed_ratio, per_seed_values

CYCLES = column("cycles")
#: The paper's headline point of Fig. 7 and 9 (VII-B, VII-C).
POINT = {"distribution": "clustered", "hole_kind": "allocated", "degree": 0.25, "portion": 0.5}
#: Fig. 7's second quoted point.
WORST = {"distribution": "dispersed", "hole_kind": "unallocated", "degree": 0.9, "portion": 1.0}
APPS = {"distribution": "clustered", "degree": 0.25, "portion": 0.5}


def _at(where: dict):
    def select(r: pd.DataFrame) -> pd.DataFrame:
        m = pd.Series(True, index=r.index)
        for k, v in where.items():
            m &= r[k] == v
        return r[m]
    return select


def _speedup(faster: str, slower: str, where: dict, reduce: str = "mean"):
    """Per seed: cycles of `slower` over `faster` at the point `where`,
    averaged (or the lowest / highest) over the programs."""
    def measure(r: pd.DataFrame) -> pd.Series:
        d = _at(where)(r)
        if reduce == "mean":
            return per_seed_ratio(d, "system", slower, faster, CYCLES)
        per = per_seed_values(d, "system", CYCLES, by="workload")
        ratio = (per[slower] / per[faster]).groupby(level="seed")
        return ratio.min() if reduce == "min" else ratio.max()
    return measure


def _filter_share(r: pd.DataFrame) -> pd.Series:
    """Per seed: the share of bitmap lookups the filter answered, clustered
    holes at Fig. 7's headline point."""
    d = _at({**POINT})(r)
    hits, looked = d["perforated.filter_hits"], d["perforated.bitmap_lookups"]
    return (hits / (hits + looked)).groupby(d.seed).mean()


def _no_filter(r: pd.DataFrame) -> pd.DataFrame:
    """The null model of the filter: every lookup it answered goes to the bitmap."""
    out = r.copy()
    out["perforated.bitmap_lookups"] = out["perforated.bitmap_lookups"] + out["perforated.filter_hits"]
    out["perforated.filter_hits"] = 0
    return out


def _clustered_over_dispersed(stat: str, where: dict):
    return lambda r: per_seed_ratio(_at(where)(r), "distribution", "clustered", "dispersed", column(stat))


def _ksm(system: str, stat: str):
    return lambda r: per_seed_ratio(r, "system", system, "none", column(stat))


def _mem_saved(r: pd.DataFrame) -> pd.Series:
    """Per seed: memory KSM saved, over the VMs' memory without KSM (as pp-ksm's `mem_saved`)."""
    # (A run without KSM reports no `ksm.*` statistic: none shared.)
    d = pd.DataFrame({"distribution": r.distribution, "seed": r.seed, "system": r.system,
                      "_saved": r["ksm.pages_sharing"].fillna(0) * 4096,
                      "_vm": r["host.mem.mapped.4k"] + r["host.mem.mapped.2m"]})
    per = d.set_index(["distribution", "seed", "system"])[["_saved", "_vm"]].unstack("system")
    return (per["_saved"]["thp-ksm"] / per["_vm"]["none"]).groupby(level="seed").mean()


def _memory(r: pd.DataFrame) -> pd.Series:
    return (r["mem.mapped.4k"] + r["mem.mapped.2m"] + r["mem.mapped.1g"]).astype(float)


FIG7 = "pp-fig7 and pp-fig8: sensitivity to fragmentation"
CLAIMS = [
    Claim("Perforated pages over a conventional kernel (`base-2m-4k`): speedup at portion 50%, degree 25%, clustered, "
          "allocated holes (VII-B, Fig. 7)", "pp-fig7", "1.594", Effect(1.594),
          _speedup("perforated", "base-2m-4k", POINT), lambda r: made_equal(r, "system", "perforated", "base-2m-4k"),
          FIG7),
    Claim("... at portion 100%, degree 90%, dispersed, unallocated holes (Fig. 7)", "pp-fig7", "2.4", Effect(2.4),
          _speedup("perforated", "base-2m-4k", WORST), lambda r: made_equal(r, "system", "perforated", "base-2m-4k"),
          FIG7),
    Claim("... and perforated pages 31.2% below ideal 2 MiB pages there: speedup of perforated over ideal-2m (Fig. 7)",
          "pp-fig7", "0.688", Effect(0.688), _speedup("ideal-2m", "perforated", WORST),
          lambda r: made_equal(r, "system", "perforated", "ideal-2m"), FIG7),
    Claim("With clustered holes the filter answers most bitmap lookups: its share at Fig. 7's headline point "
          "(VII-B, Fig. 8)", "pp-fig8", "0.68", Effect(0.68, 0.0), _filter_share, _no_filter, FIG7),
    Claim("Clustered holes leave fewer bitmap entries in the L2 TLB than dispersed ones: clustered over dispersed, "
          "Fig. 7's headline point (Fig. 8)", "pp-fig8", "1 - 0.58 = 0.42", Effect(0.42),
          _clustered_over_dispersed("dtlb.l2.share.bitmap", {k: v for k, v in POINT.items() if k != "distribution"}),
          lambda r: made_equal(r, "distribution", "clustered", "dispersed"), FIG7),
    Claim("The programs: perforated over base-2m-4k, lowest of the eight (portion 50%, degree 25%, clustered; VII-C, "
          "Fig. 9)", "pp-fig9", "1.020", Effect(1.020), _speedup("perforated", "base-2m-4k", APPS, "min"),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-fig9: the programs' analogues"),
    Claim("... highest of the eight (Fig. 9)", "pp-fig9", "1.115", Effect(1.115),
          _speedup("perforated", "base-2m-4k", APPS, "max"),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-fig9: the programs' analogues"),
    Claim("... perforated over ideal-2m, lowest of the eight (Fig. 9)", "pp-fig9", "0.932", Effect(0.932),
          _speedup("ideal-2m", "perforated", APPS, "min"), lambda r: made_equal(r, "system", "perforated", "ideal-2m"),
          "pp-fig9: the programs' analogues"),
    Claim("mcf: clustered holes need fewer bitmap lookups than dispersed ones: clustered over dispersed, "
          "portion and degree 50% (VII-C, 'up to 85%' fewer)", "pp-fig9", "0.15", Effect(0.15),
          _clustered_over_dispersed("perforated.bitmap_lookups",
                                    {"workload": "mcf", "system": "perforated", "degree": 0.5, "portion": 0.5}),
          lambda r: made_equal(r, "distribution", "clustered", "dispersed"), "pp-fig9: the programs' analogues"),
    Claim("In a VM (host THP): perforated over base-2m-4k, lowest of the eight (VII-E, Fig. 11)", "pp-virt", "1.072",
          Effect(1.072), _speedup("perforated", "base-2m-4k", APPS, "min"),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-virt: the programs in a VM"),
    Claim("... highest of the eight (Fig. 11)", "pp-virt", "1.480", Effect(1.480),
          _speedup("perforated", "base-2m-4k", APPS, "max"),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-virt: the programs in a VM"),
    Claim("On faulty memory (4 KiB faults) perforated pages beat GTSM: speedup over GTSM, mean of the workloads "
          "(VII-D, Fig. 10)", "pp-gtsm", "1.062", Effect(1.062),
          lambda r: per_seed_ratio(r[r.granularity == "4k"], "system", "gtsm", "perforated", CYCLES),
          lambda r: made_equal(r, "system", "perforated", "gtsm"), "pp-gtsm: against GTSM on faulty memory"),
    Claim("A Redis-like store: 2 MiB pages cut L2 TLB misses (MPKI over 4 KiB pages'; III-B)", "pp-redis",
          "1.05 / 1.75 = 0.60", Effect(1.05 / 1.75),
          lambda r: per_seed_ratio(r, "system", "2m", "4k", column("dtlb.l2.mpki")),
          lambda r: made_equal(r, "system", "2m", "4k"), "pp-redis: a Redis-like store"),
    Claim("... perforated pages keep most of the cut (III-B)", "pp-redis", "1.45 / 1.75 = 0.83", Effect(1.45 / 1.75),
          lambda r: per_seed_ratio(r, "system", "perforated", "4k", column("dtlb.l2.mpki")),
          lambda r: made_equal(r, "system", "perforated", "4k"), "pp-redis: a Redis-like store"),
    Claim("... and 2 MiB pages bloat its memory (III-B, Table I)", "pp-redis", "92.9 / 77.7 = 1.20", Effect(1.20),
          lambda r: per_seed_ratio(r, "system", "2m", "4k", _memory),
          lambda r: made_equal(r, "system", "2m", "4k"), "pp-redis: a Redis-like store"),
    Claim("On real fragmented machines perforated pages add speed: over the conventional system, the first "
          "snapshot (III-C)", "pp-realfrag", "1.203", Effect(1.203),
          lambda r: per_seed_ratio(_at({"snapshot": "paper-first", "placement": "clustered"})(r), "system",
                                   "base-2m-4k", "perforated", CYCLES),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-realfrag: real fragmented machines"),
    Claim("... the second snapshot (III-C)", "pp-realfrag", "1.694", Effect(1.694),
          lambda r: per_seed_ratio(_at({"snapshot": "paper-second", "placement": "clustered"})(r), "system",
                                   "base-2m-4k", "perforated", CYCLES),
          lambda r: made_equal(r, "system", "perforated", "base-2m-4k"), "pp-realfrag: real fragmented machines"),
    Claim("KSM under THP saves memory: its share of the two VMs' memory (II-B)", "pp-ksm", "0.11", Effect(0.11, 0.0),
          _mem_saved, lambda r: made_equal(r, "system", "thp-ksm", "none"), "pp-ksm: two VMs under KSM"),
    Claim("... and costs L2 TLB misses: over no KSM (II-B)", "pp-ksm", "1.34", Effect(1.34),
          _ksm("thp-ksm", "dtlb.l2.misses"), lambda r: made_equal(r, "system", "thp-ksm", "none"),
          "pp-ksm: two VMs under KSM"),
    Claim("... and time: cycles over no KSM (II-B)", "pp-ksm", "1.049", Effect(1.049), _ksm("thp-ksm", "cycles"),
          lambda r: made_equal(r, "system", "thp-ksm", "none"), "pp-ksm: two VMs under KSM"),
]
