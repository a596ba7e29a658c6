"""Colored Huge Pages: the paper's claims that docs/systems/chp-results.md
opens with (`pagelab.headline`). Every runtime is core 0's cycles (the
workload's own, as in `perf.py`); every ratio is taken seed by seed, then
averaged over the workloads, then over the seeds."""

from __future__ import annotations

import pandas as pd

from pagelab.experiments.chp.frag import held_up_to, thp_success
from pagelab.headline import Claim, Effect, Order, Zero, column, made_equal, per_seed_ratio, per_seed_values

CYCLES = column("core0.cycles")
LLC_MISSES = column("core0.cache.llc.misses")
GRAPHS = ["bfs", "cc", "tc"]


def _fig1(scenario: str, where: dict | None = None):
    return lambda r: per_seed_ratio(r, "scenario", scenario, "alone", CYCLES, where)


def _fig4(scenario: str):
    return lambda r: per_seed_ratio(r, "scenario", scenario, "4k", CYCLES)


def _swap(colors: int, value, where: dict, reduce: str = "mean"):
    def measure(r: pd.DataFrame) -> pd.Series:
        d = r[r.colors.astype(int) == colors]
        if reduce == "mean":
            return per_seed_ratio(d, "os.chp.scheme", "swap", "chp", value, where)
        per = per_seed_values(d[d.workload.isin(where["workload"])], "os.chp.scheme", value, by="workload")
        return (per["swap"] / per["chp"]).groupby(level="seed").max()
    return measure


def _success(r: pd.DataFrame) -> pd.Series:
    """A run's success ratio: CHP's where it tried colored huge pages,
    else THP's (so the null model, CHP's runs given THP's statistics,
    reads THP's)."""
    return r["os.chp.success_ratio"].where(r["os.chp.attempts"] > 0, thp_success(r))


def _threshold_gap(workload: str):
    """Per seed: the F_i up to which CHP (the workload's 5 colors) keeps a
    success ratio of 0.99, minus THP's."""
    def measure(r: pd.DataFrame) -> pd.Series:
        d = pd.DataFrame({"case": r.case, "seed": r.seed, "frag_index": r["os.fragmentation.target"],
                          "success": _success(r)})[r.workload == workload]
        out = {}
        for seed, g in d.groupby("seed"):
            chp, thp = (held_up_to(g[g.case == c], "success") for c in ("chp/table3", "thp"))
            out[seed] = chp - thp
        return pd.Series(out)
    return measure


def _fig6_at(fi: float):
    def measure(r: pd.DataFrame) -> pd.DataFrame:
        d = r[(r["os.fragmentation.target"] - fi).abs() < 1e-9]
        return per_seed_values(d, "os.chp.submappings", column("os.chp.success_ratio")).rename(columns=str)
    return measure


def _table4(scenario: str, baseline: str):
    return lambda r: per_seed_ratio(r, "scenario", scenario, baseline, column("faults"))


FIG1_NULL = {"4k": "alone", "coloring": "alone", "thp": "alone"}

CLAIMS = [
    Claim("Contention (4 cache stressors) slows the workloads on 4 KiB pages: mean runtime over alone (Fig. 1)",
          "chp-fig1", "1.41", Effect(1.41), _fig1("4k"),
          lambda r: made_equal(r, "scenario", "4k", "alone"), "chp-fig1: contention, THP and coloring"),
    Claim("... and mcf most (Fig. 1)", "chp-fig1", "1.94", Effect(1.94), _fig1("4k", {"workload": "mcf"}),
          lambda r: made_equal(r, "scenario", "4k", "alone"), "chp-fig1: contention, THP and coloring"),
    Claim("Coloring under contention: mean runtime over alone (Fig. 1)", "chp-fig1", "1.18", Effect(1.18),
          _fig1("coloring"), lambda r: made_equal(r, "scenario", "coloring", "alone"),
          "chp-fig1: contention, THP and coloring"),
    Claim("THP under contention rescues bfs: runtime over alone (Fig. 1)", "chp-fig1", "0.77", Effect(0.77),
          _fig1("thp", {"workload": "bfs"}), lambda r: made_equal(r, "scenario", "thp", "alone"),
          "chp-fig1: contention, THP and coloring"),
    Claim("... and cc (Fig. 1)", "chp-fig1", "0.78", Effect(0.78), _fig1("thp", {"workload": "cc"}),
          lambda r: made_equal(r, "scenario", "thp", "alone"), "chp-fig1: contention, THP and coloring"),
    Claim("THP under contention: mean runtime over 4 KiB (Fig. 4)", "chp-fig4", "0.790", Effect(0.790), _fig4("thp"),
          lambda r: made_equal(r, "scenario", "thp", "4k"), "chp-fig4: THP, coloring and CHP under contention"),
    Claim("Coloring under contention: mean runtime over 4 KiB (Fig. 4)", "chp-fig4", "0.826", Effect(0.826),
          _fig4("coloring"), lambda r: made_equal(r, "scenario", "coloring", "4k"),
          "chp-fig4: THP, coloring and CHP under contention"),
    Claim("CHP under contention: mean runtime over 4 KiB (Fig. 4: projected by Eq. 1; pagelab: simulated)", "chp-fig4",
          "0.663", Effect(0.663), _fig4("chp"), lambda r: made_equal(r, "scenario", "chp", "4k"),
          "chp-fig4: THP, coloring and CHP under contention"),
    Claim("CHP beats both THP and coloring (Fig. 4 means)", "chp-fig4", "chp 0.663, thp 0.790, coloring 0.826",
          Order((("chp", "thp"), ("chp", "coloring"))),
          lambda r: per_seed_values(r, "scenario", CYCLES, over="4k"),
          lambda r: made_equal(r, "scenario", ["thp", "coloring"], "chp"),
          "chp-fig4: THP, coloring and CHP under contention"),
    Claim("THP beats coloring under contention (Fig. 4 means)", "chp-fig4", "thp 0.790, coloring 0.826",
          Order((("thp", "coloring"),)), lambda r: per_seed_values(r, "scenario", CYCLES, over="4k"),
          lambda r: made_equal(r, "scenario", "coloring", "thp"), "chp-fig4: THP, coloring and CHP under contention"),
    Claim("SWAP (one color per huge page) costs mcf LLC misses over CHP, 5 colors (IV-B-4)", "chp-swap", "1.094",
          Effect(1.094), _swap(5, LLC_MISSES, {"workload": "mcf"}),
          lambda r: made_equal(r, "os.chp.scheme", "swap", "chp"), "chp-swap: SWAP against CHP"),
    Claim("... 8 colors", "chp-swap", "1.12", Effect(1.12), _swap(8, LLC_MISSES, {"workload": "mcf"}),
          lambda r: made_equal(r, "os.chp.scheme", "swap", "chp"), "chp-swap: SWAP against CHP"),
    Claim("... and runtime, 8 colors", "chp-swap", "1.131", Effect(1.131), _swap(8, CYCLES, {"workload": "mcf"}),
          lambda r: made_equal(r, "os.chp.scheme", "swap", "chp"), "chp-swap: SWAP against CHP"),
    Claim("SWAP leaves GAPBS's LLC misses unchanged: the largest ratio of bfs, cc, tc, 8 colors (IV-B-4)", "chp-swap",
          "within noise", Zero(0.05), _swap(8, LLC_MISSES, {"workload": GRAPHS}, reduce="max"),
          lambda r: made_equal(r, "os.chp.scheme", "swap", "chp"), "chp-swap: SWAP against CHP"),
    Claim("CHP (5 of 8 colors) degrades under fragmentation before THP: bfs's last F_i at 0.99 success, CHP - THP "
          "(Fig. 5)", "chp-fig5", "0.6 - 0.71 = -0.11", Effect(-0.11, 0.0), _threshold_gap("bfs"),
          lambda r: made_equal(r, "case", "chp/table3", "thp"), "chp-fig5 and chp-fig6: fragmentation"),
    Claim("... mcf (Fig. 5)", "chp-fig5", "0.6 - 0.89 = -0.29", Effect(-0.29, 0.0), _threshold_gap("mcf"),
          lambda r: made_equal(r, "case", "chp/table3", "thp"), "chp-fig5 and chp-fig6: fragmentation"),
    Claim("Fewer sub-mappings succeed less: bfs's success at F_i 0.6, 1 and 4 below 8 sub-mappings (Fig. 6, at 0.58)",
          "chp-fig6", "8: 1.0; 4 and 1: below 1", Order((("1", "8"), ("4", "8"))), _fig6_at(0.6),
          lambda r: made_equal(r, "os.chp.submappings", [1, 4], 8), "chp-fig5 and chp-fig6: fragmentation"),
    Claim("THP takes far fewer faults than 4 KiB pages: bfs's faults, THP over 4 KiB (Table IV)", "chp-table4",
          "2,878 / 1,179,711 = 0.0024", Effect(2878 / 1179711), _table4("thp", "4k"),
          lambda r: made_equal(r, "scenario", "thp", "4k"), "chp-table4: faults", digits=4),
    Claim("CHP takes as many faults as THP (Table IV)", "chp-table4", "2,876 / 2,878", Zero(0.05),
          _table4("chp", "thp"), lambda r: made_equal(r, "scenario", "chp", "thp"), "chp-table4: faults"),
]
