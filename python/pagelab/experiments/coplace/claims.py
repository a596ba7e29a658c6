"""COPLACE: the paper's claims that docs/systems/coplace-results.md opens
with (`pagelab.headline`). A ratio is taken seed by seed, averaged over
the workloads (and policies) the claim names, then over the seeds; the
paper's value is the mean of its own per-workload ratios where it gives
them (Table II) and its stated average otherwise."""

from __future__ import annotations

import pandas as pd

from pagelab.experiments.coplace.common import WORKLOADS
from pagelab.experiments.coplace.varying import phases
from pagelab.headline import Claim, Effect, Order, column, made_equal, per_seed_ratio, per_seed_values

LEVEL = column("core0.llc_conflict_level")
RUNTIME = column("runtime.cycles")
REQUEST_MEAN = column("core0.request.cycles_mean")
#: Table II: (bin hopping, page coloring, COPLACE) per workload.
TABLE2 = {"blackscholes": (17.7, 8.2, 1.7), "water_spatial": (19.9, 6.1, 1.3), "Xapian": (22.2, 4.8, 1.1),
          "Img-dnn": (13.8, 7.6, 1.6)}
#: The paper's ratios over the workloads pagelab has analogues of.
ROWS = [TABLE2[w] for w in WORKLOADS if w in TABLE2]
PC_OVER_BH = sum(pc / bh for bh, pc, _ in ROWS) / len(ROWS)
CO_OVER_PC = sum(co / pc for _, pc, co in ROWS) / len(ROWS)
T2 = "coplace-table2: conflict levels"
F1 = "coplace-fig1: a VM's cost by placement"
PERF = "coplace-perf: COPLACE against the baseline"
VAR = "coplace-varying: the join after the file reader"
MULTI = "coplace-multivm: eleven VMs with eKSM"
BAL = "coplace-multivm: a balloon with eBal"


def _aged(r: pd.DataFrame) -> pd.DataFrame:
    """Table II's runs: the aged host (the fresh host's rows are pagelab's
    own, beside them)."""
    return r[r.host_memory == "aged"]


def REQ_MEAN(r: pd.DataFrame) -> pd.Series:
    """Each run's mean request cycles, averaged over its eleven VMs."""
    return pd.concat([r[f"vm{i}.core0.request.cycles_mean"] for i in range(11)], axis=1).mean(axis=1)


def XAPIAN_MEAN(r: pd.DataFrame) -> pd.Series:
    """The ebal scenario's Xapian (VM 0's core 0): its mean request cycles."""
    return r["vm0.core0.request.cycles_mean"]


def _in_vm(ways: int):
    """Per seed: the VMs' runtime over native, mean over workloads, guest
    and host placements, at `ways` LLC ways."""
    def measure(r: pd.DataFrame) -> pd.Series:
        d = r[r.llc_ways.astype(int) == ways]
        v = per_seed_values(d, "host_policy", RUNTIME, over="native")
        return v[["base", "vmm-coloring"]].mean(axis=1)
    return measure


def _host_colors(ways: int):
    def measure(r: pd.DataFrame) -> pd.Series:
        return per_seed_ratio(r[r.llc_ways.astype(int) == ways], "host_policy", "vmm-coloring", "base", RUNTIME)
    return measure


def _varying(r: pd.DataFrame, system: str, phase: str) -> pd.Series:
    p = phases(r)
    return p[(p.system == system) & (p.phase == phase)].set_index("seed").cycles


def _after_over_fresh(r: pd.DataFrame) -> pd.Series:
    return _varying(r, "baseline", "pgsql") / _varying(r, "baseline", "pgsql-fresh")


def _coplace_over_baseline(r: pd.DataFrame) -> pd.Series:
    return _varying(r, "coplace", "pgsql") / _varying(r, "baseline", "pgsql")


CLAIMS = [
    Claim("Host page coloring lowers the conflict level from bin hopping: page coloring / bin hopping, mean over "
          "the workloads with an analogue (Table II)", "coplace-table2", f"{PC_OVER_BH:.3f}", Effect(PC_OVER_BH),
          lambda r: per_seed_ratio(_aged(r), "host_policy", "vmm-coloring", "base", LEVEL),
          lambda r: made_equal(r, "host_policy", "vmm-coloring", "base"), T2),
    Claim("COPLACE lowers it further: COPLACE / page coloring (Table II)", "coplace-table2", f"{CO_OVER_PC:.3f}",
          Effect(CO_OVER_PC), lambda r: per_seed_ratio(_aged(r), "host_policy", "coplace", "vmm-coloring", LEVEL),
          lambda r: made_equal(r, "host_policy", "coplace", "vmm-coloring"), T2),
    Claim("COPLACE < page coloring < bin hopping in conflict level (Table II)", "coplace-table2",
          " < ".join(f"{sum(r[i] for r in ROWS) / len(ROWS):.1f}" for i in (2, 1, 0)) + " (means)", Order((("coplace", "vmm-coloring"), ("vmm-coloring", "base"))),
          lambda r: per_seed_values(_aged(r), "host_policy", LEVEL),
          lambda r: made_equal(r, "host_policy", ["coplace", "vmm-coloring"], "base"), T2),
    Claim("A VM slows throughput workloads, whole LLC: runtime over native (Fig. 1(a))", "coplace-fig1", "1.098",
          Effect(1.098), _in_vm(11), lambda r: made_equal(r, "host_policy", ["base", "vmm-coloring"], "native"), F1),
    Claim("... with one LLC way (Fig. 1(d))", "coplace-fig1", "1.138", Effect(1.138), _in_vm(1),
          lambda r: made_equal(r, "host_policy", ["base", "vmm-coloring"], "native"), F1),
    Claim("Host page coloring speeds them, whole LLC: runtime, host coloring / bin hopping (12.9% more throughput)",
          "coplace-fig1", f"{1 / 1.129:.3f}", Effect(1 / 1.129), _host_colors(11),
          lambda r: made_equal(r, "host_policy", "vmm-coloring", "base"), F1),
    Claim("... with one LLC way (19.8% more throughput)", "coplace-fig1", f"{1 / 1.198:.3f}", Effect(1 / 1.198),
          _host_colors(1), lambda r: made_equal(r, "host_policy", "vmm-coloring", "base"), F1),
    Claim("COPLACE speeds blackscholes, whole LLC: runtime, COPLACE / baseline (Fig. 5: 8.8% more throughput)",
          "coplace-perf", f"{1 / 1.088:.3f}", Effect(1 / 1.088),
          lambda r: per_seed_ratio(r, "system", "coplace", "baseline", RUNTIME,
                                   where={"workload": "blackscholes", "llc_ways": 11}),
          lambda r: made_equal(r, "system", "coplace", "baseline"), PERF),
    Claim("COPLACE lowers Xapian's mean latency, whole LLC: mean request cycles, COPLACE / baseline (Fig. 6: 29.3% "
          "lower)", "coplace-perf", "0.707", Effect(0.707),
          lambda r: per_seed_ratio(r, "system", "coplace", "baseline", REQUEST_MEAN,
                                   where={"workload": "Xapian", "llc_ways": 11}),
          lambda r: made_equal(r, "system", "coplace", "baseline"), PERF),
    Claim("The join after SysBench is slower than on a fresh VM (baseline): cycles after / fresh (section V-C)",
          "coplace-varying", "1.236", Effect(1.236), _after_over_fresh,
          lambda r: made_equal(r, "scenario", "both", "fresh"), VAR),
    Claim("COPLACE speeds the join after SysBench: cycles, COPLACE / baseline (22.5% more throughput)",
          "coplace-varying", f"{1 / 1.225:.3f}", Effect(1 / 1.225), _coplace_over_baseline,
          lambda r: made_equal(r, "system", "coplace", "baseline"), VAR),
    Claim("eKSM lowers Xapian's mean latency further: COPLACE / COPLACE without eKSM, eleven VMs, one way each "
          "(Fig. 8(a): 22.6% lower)", "coplace-multivm", "0.774", Effect(0.774),
          lambda r: per_seed_ratio(r, "system", "coplace", "coplace-stock", REQ_MEAN, where={"scenario": "eksm"}),
          lambda r: made_equal(r, "system", "coplace", "coplace-stock"), MULTI),
    Claim("eBal lowers Xapian's mean latency further: COPLACE / COPLACE without eBal, about half of Xapian's pages "
          "through a balloon (Fig. 8(c): 45.9% lower)", "coplace-multivm", "0.541", Effect(0.541),
          lambda r: per_seed_ratio(r, "system", "coplace", "coplace-stock", XAPIAN_MEAN, where={"scenario": "ebal"}),
          lambda r: made_equal(r, "system", "coplace", "coplace-stock"), BAL),
]
