"""pagelab reproduce: the registry and each experiment on its tiny grid."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pagelab import experiments

from conftest import run_cli

pytest.importorskip("duckdb")

COLUMNS = {
    "baseline-thp": {"workload", "policy", "dtlb_misses", "walk_refs", "cycles", "cycles_norm"},
    "frag-sweep": {"pattern", "frag_index", "fi_measured", "huge_coverage", "cycles", "cycles_norm"},
    "mem-tiers": {"workload", "slow_tier", "fast_share", "slow_accesses_share", "runtime_norm", "predicted_norm"},
    "chp-fig1": {"workload", "scenario", "runtime"},
    "chp-fig4": {"workload", "scenario", "runtime", "translation", "cache", "walk"},
    "chp-fig5": {"workload", "frag_index", "success_ratio"},
    "chp-fig6": {"submappings", "frag_index", "success_ratio"},
    "chp-swap": {"workload", "colors", "scheme", "llc_misses", "runtime"},
    "chp-table4": {"scenario", "faults", "fault_cycles_avg", "fault_cycles_p99", "fault_cycles_total"},
    "virt-walks": {"guest_page", "host_page", "caches", "refs_per_walk", "cycles_per_walk"},
    "virt-splinter": {"workload", "guest_policy", "host_policy", "dtlb_l2_misses", "walk_refs", "runtime"},
    "virt-ksm": {"pages_to_scan", "pages_shared", "pages_sharing", "memory_saved_mib", "cow_breaks", "runtime"},
    "coplace-table2": {"workload", "host_policy", "conflict_level"},
    "coplace-fig1": {"workload", "guest_policy", "host_policy", "llc_ways", "runtime_norm", "llc_miss_ratio_inc",
                     "l2_miss_ratio_inc"},
    "coplace-perf": {"workload", "system", "llc_ways", "runtime_norm", "request_cycles_mean", "request_cycles_p99"},
    "coplace-varying": {"phase", "system", "conflict_level", "runtime_norm"},
    "coplace-standin": {"workload", "host_policy", "slice_seed", "conflict_level", "llc_miss_ratio", "cycles"},
    "coplace-multivm": {"scenario", "system", "request_cycles_mean", "request_cycles_p99", "llc_miss_ratio",
                        "memory_saved"},
    "et-frag": {"workload", "fmfi", "system", "cycles_norm", "share_2m"},
    "et-hints": {"workload", "source", "cycles_norm", "share_32m"},
    "et-hugetlb": {"workload", "virtualized", "page_size", "cycles_norm"},
    "et-native": {"workload", "system", "cycles_norm", "dtlb_l2_mpki"},
    "et-virt": {"workload", "system", "cycles_norm", "dtlb_l2_mpki"},
    "et-walkcost": {"workload", "walk_latency", "system", "cycles_norm", "dtlb_l2_mpki"},
    "et-sizes": {
        "workload", "system", "share_4k", "share_64k", "share_2m", "share_32m", "share_1g",
        "count_4k", "count_64k", "count_2m", "count_32m", "count_1g",
    },
    "pp-fig7": {"distribution", "hole_kind", "degree", "portion", "system", "speedup", "dtlb_l2_mpki"},
    "pp-fig9": {"workload", "distribution", "degree", "portion", "system", "speedup"},
    "pp-virt": {
        "workload", "distribution", "degree", "portion", "system", "speedup", "refs_per_walk", "bitmap_refs_per_walk",
    },
    "pp-gtsm": {"workload", "system", "speedup", "huge_share"},
    "pp-redis": {"system", "dtlb_l2_mpki", "mem_bytes"},
    "pp-ksm": {"distribution", "system", "mem_saved", "huge_broken", "dtlb_l2_misses", "slowdown"},
    "pp-realfrag": {"snapshot", "placement", "huge_share", "perforated_share", "speedup_gain"},
    "pp-fig8": {
        "distribution", "hole_kind", "degree", "portion", "share_4k", "share_2m", "share_perforated",
        "share_bitmap", "share_hole", "bitmap_lookups", "filter_hits",
    },
}
def assert_columns(df, columns):
    """The issue's columns, in its order, then `seeds` and a `<col>_std`
    and `<col>_ci95` for every quantity (empty with one seed)."""
    spread = [f"{c}_{s}" for c in columns for s in ("std", "ci95") if df[c].dtype.kind in "fi" and c not in KEYS_NUMERIC]
    assert list(df.columns) == columns + ["seeds"] + spread
    assert (df.seeds == 1).all() and df[spread].isna().all().all()


#: Numeric grid labels: keys, not quantities (no spread).
KEYS_NUMERIC = {"degree", "portion", "frag_index", "colors", "submappings", "pages_to_scan", "fmfi", "fast_share",
                "walk_latency", "llc_ways", "slice_seed"}
#: Experiments whose result is a table only.
NO_FIGURE = {"chp-swap", "chp-table4"}


def test_list():
    r = run_cli("reproduce", "--list")
    assert r.returncode == 0, r.stderr
    listing, _, legend = r.stdout.partition("\n\n")
    lines = listing.splitlines()
    assert max(len(line) for line in r.stdout.splitlines()) <= 80, "the list fits an 80-column terminal"
    ids = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert ids == sorted(COLUMNS)
    # Under each experiment, its time per variant: recorded, or said not to be.
    assert sum(line.strip().startswith("time: full") for line in lines) == len(COLUMNS)
    assert legend.startswith("Times: wall clock")
    for exp in experiments.all_experiments():
        assert set(exp.sweeps) == {"full", "quick", "tiny"}


def test_recorded_times_come_from_whole_runs_only(tmp_path):
    """A `reproduce` that ran every run itself is recorded; one that reused
    the store is not (its wall clock is not the experiment's time)."""
    from pagelab.experiments import timings

    out = tmp_path / "fs"
    assert run_cli("reproduce", "frag-sweep", "--tiny", "--out", out, "--jobs", "2").returncode == 0
    table = tmp_path / "timings.csv"
    added = timings.record([out], table)
    assert [(r["id"], r["variant"], r["seeds"]) for r in added] == [("frag-sweep", "tiny", "1")]
    line = timings.expected_times(table).line("frag-sweep")
    assert "tiny " in line and "(1 seed, 2 jobs)" in line and "full not recorded" in line
    assert run_cli("reproduce", "frag-sweep", "--tiny", "--out", out, "--jobs", "2").returncode == 0
    assert timings.record([out], table) == []  # everything reused: not a measurement
    assert ("frag-sweep", "tiny") in timings.expected_times(table).rows  # the measurement stays


def test_unknown_experiment():
    r = run_cli("reproduce", "no-such-thing")
    assert r.returncode == 2
    assert "unknown experiment" in r.stderr


def test_variant_flags_conflict():
    r = run_cli("reproduce", "chp-fig4", "--quick", "--variant", "full")
    assert r.returncode == 2 and "not allowed with" in r.stderr
    r = run_cli("reproduce", "chp-fig4", "--variant", "huge")
    assert r.returncode == 2 and "invalid choice" in r.stderr


#: Experiments of a paper's package that the paper has no numbers for.
NO_PAPER = {"coplace-standin"}  # the stand-in slice hash is pagelab's


@pytest.mark.parametrize("exp_id", sorted(COLUMNS))
def test_reproduce_tiny(tmp_path, exp_id):
    # (300 s: chp-fig5 took 109 s of wall clock on a loaded 2-core machine.)
    r = run_cli("reproduce", exp_id, "--tiny", "--out", tmp_path, "--jobs", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(tmp_path / f"{exp_id}.csv")
    assert COLUMNS[exp_id] <= set(df.columns)
    assert len(df) > 0
    # One seed per point in the tiny variant (common.SEEDS): no spread yet.
    assert (df.seeds == 1).all() and df.filter(regex="_(std|ci95)$").isna().all().all()
    if exp_id not in NO_FIGURE:
        # Every figure as PNG and as PDF (vector, for a paper).
        pngs = list(tmp_path.glob(f"{exp_id}*.png"))
        assert pngs
        for png in pngs:
            assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    prov = json.loads((tmp_path / f"{exp_id}.provenance.json").read_text())
    assert (prov["id"], prov["variant"], prov["seeds"]) == (exp_id, "tiny", [1])
    md = (tmp_path / f"{exp_id}.md").read_text()
    # The write-up shows the rows it was written from: the CSV's header as
    # a table, or (experiments that print a narrower table) its columns.
    header = "| " + " | ".join(df.columns) + " |"
    assert header in md or all(c in md for c in COLUMNS[exp_id]), md
    if exp_id.startswith(("chp-", "pp-", "et-", "coplace-")) and exp_id not in NO_PAPER:
        # The paper's values beside pagelab's, one row per quantity of the
        # experiment's paper/ID.csv, in the write-up too.
        paper = pd.read_csv(tmp_path / f"{exp_id}.paper.csv", dtype=str, keep_default_na=False)
        assert list(paper.columns) == ["quantity", "paper", "pagelab", "source"]
        assert len(paper) > 0 and (paper.paper != "").all()
        assert "| quantity | paper | pagelab | source |" in md
    if exp_id.startswith("chp-"):
        CHP_CHECKS[exp_id](df)
        SENTENCES.get(exp_id, lambda df, md: None)(df, md)
    elif exp_id == "virt-walks":
        # Exactly the issue's columns, and the uncached walks' counts.
        assert_columns(df, ["guest_page", "host_page", "caches", "refs_per_walk", "cycles_per_walk"])
        off = df[df.caches == "off"].set_index(["guest_page", "host_page"]).refs_per_walk
        assert off.to_dict() == {("4k", "4k"): 24, ("4k", "2m"): 19, ("2m", "4k"): 19, ("2m", "2m"): 15}
        on = df[df.caches == "on"].set_index(["guest_page", "host_page"]).refs_per_walk
        assert (on < off).all()
    elif exp_id == "mem-tiers":
        assert_columns(df, ["workload", "slow_tier", "fast_share", "slow_accesses_share", "runtime_norm", "predicted_norm"])
        for _, sub in df.groupby("workload"):
            nvm = sub[sub.slow_tier == "nvm"].sort_values("fast_share", ascending=False)
            # A smaller fast tier: more slow references, a longer run.
            assert nvm.slow_accesses_share.is_monotonic_increasing and nvm.slow_accesses_share.iloc[-1] > 0.5
            assert nvm.runtime_norm.is_monotonic_increasing and nvm.runtime_norm.iloc[-1] > 1.1
            # At most the serial bound (480 cycles per slow reference, none
            # overlapped), and above it only where the window hid some.
            assert (nvm.runtime_norm <= nvm.predicted_norm + 1e-9).all()
            # All in DRAM (1.25 x the footprint): nothing served by the slow tier.
            assert nvm[nvm.fast_share > 1].slow_accesses_share.iloc[0] == 0
    elif exp_id == "virt-splinter":
        assert_columns(df, ["workload", "guest_policy", "host_policy", "dtlb_l2_misses", "walk_refs", "runtime"])
        assert set(df.workload) == {"gups", "bfs", "kv"}
        g = df[df.workload == "gups"].set_index(["guest_policy", "host_policy"])
        # Guest THP on host base pages keeps 4 KiB reach; THP on THP does not.
        assert g.loc[("thp", "base"), "dtlb_l2_misses"] > 0.9 * g.loc[("base", "base"), "dtlb_l2_misses"]
        assert g.loc[("thp", "thp"), "dtlb_l2_misses"] < 0.5 * g.loc[("thp", "base"), "dtlb_l2_misses"]
    elif exp_id == "virt-ksm":
        cols = ["pages_to_scan", "pages_shared", "pages_sharing", "memory_saved_mib", "cow_breaks", "full_scans", "runtime"]
        assert_columns(df, cols)
        off, on = df[df.pages_to_scan == 0], df[df.pages_to_scan > 0].sort_values("pages_to_scan")
        # KSM off saves nothing; on, memory saved is pages_sharing x 4 KiB;
        # a faster scan completes at least as many full scans; a page merges
        # during its second scan at the earliest, so a rate that did not
        # finish one full scan saved nothing; the fastest merged pages, and
        # the guests' stores copied some back.
        assert (off.memory_saved_mib == 0).all() and (off.runtime == 1.0).all()
        assert (on.memory_saved_mib == on.pages_sharing * 4096 / (1 << 20)).all()
        assert on.full_scans.is_monotonic_increasing
        assert (on[on.full_scans < 1].memory_saved_mib == 0).all() and (on.full_scans < 1).any()
        assert on.memory_saved_mib.iloc[-1] > 0 and on.cow_breaks.iloc[-1] > 0
    elif exp_id.startswith("pp-"):
        PP_CHECKS[exp_id](df)
    elif exp_id.startswith("coplace-"):
        COPLACE_CHECKS[exp_id](df)
    elif exp_id == "et-hugetlb":
        # Exactly the issue's columns; every size run (no 1 GiB column: the
        # tiny footprints hold no 1 GiB page), each normalized to its
        # workload's 4 KiB run. Canneal's dependent chase over 128 MiB on
        # the 10-entry L2 TLB: 2 MiB pages (20 MiB of reach) beat 4 KiB
        # ones, and 32 MiB pages (320 MiB: the whole footprint) at least
        # match them. (64 KiB is not ordered: on the tiny grid its cold
        # page-table lines dominate; docs/systems/elastic-results.md.)
        assert_columns(df, ["workload", "virtualized", "page_size", "cycles_norm"])
        assert set(df.page_size) == {"4k", "64k", "2m", "32m"} and set(df.virtualized) == {False, True}
        assert set(df.workload) == {"canneal", "streamcluster"} and len(df) == 2 * 2 * 4
        assert (df[df.page_size == "4k"].cycles_norm == 1.0).all()
        for virtualized in (False, True):
            g = df[(df.workload == "canneal") & (df.virtualized == virtualized)].set_index("page_size").cycles_norm
            assert g["2m"] < g["4k"] and g["32m"] <= g["2m"], (virtualized, g.to_dict())
    elif exp_id == "et-native":
        assert_columns(df, ["workload", "system", "cycles_norm", "dtlb_l2_mpki"])
        # 1 GiB pages only where the footprint holds one (not in tiny);
        # every other system ran.
        assert set(df.system) == {"4k", "thp", "mthp", "hawkeye", "elastic", "elastic-offline"}
        assert (df[df.system == "4k"].cycles_norm == 1.0).all()
        # GUPS over 128 MiB against a 10-entry L2 TLB: 4 KiB pages (40 KiB
        # of reach) miss on almost every update, 2 MiB pages (20 MiB) on
        # most; 32 MiB ranges (320 MiB) hold the whole table, whether
        # greedy ET made them at fault time or the profile's hints did.
        g = df[df.workload == "gups"].set_index("system")
        assert g.dtlb_l2_mpki["thp"] < g.dtlb_l2_mpki["4k"]
        for system in ("elastic", "elastic-offline"):
            assert g.dtlb_l2_mpki[system] < 0.01 * g.dtlb_l2_mpki["4k"], system
        assert g.cycles_norm["elastic"] < 1.0 and g.cycles_norm["thp"] < 1.0
        # HawkEye takes THP's huge page at every fault THP takes one: on an
        # unfragmented machine GUPS's table is all 2 MiB pages under both,
        # and nothing is left for HawkEye's promotions to change.
        assert g.dtlb_l2_mpki["hawkeye"] == g.dtlb_l2_mpki["thp"]
        # The profiling runs wrote the hints the offline runs read.
        assert sorted(p.name for p in (tmp_path / "et-hints").glob("*.hints")) == [
            "canneal-seed1.hints", "gups-seed1.hints", "streamcluster-seed1.hints"]
    elif exp_id == "et-virt":
        assert_columns(df, ["workload", "system", "cycles_norm", "dtlb_l2_mpki", "cycles_norm_host4k"])
        assert set(df.system) == {"4k", "thp", "hawkeye", "elastic", "4k-host4k", "thp-host4k", "hawkeye-host4k"}
        assert (df[df.system == "4k"].cycles_norm == 1.0).all()
        assert (df[df.system == "4k-host4k"].cycles_norm_host4k == 1.0).all()
        # GUPS over 128 MiB against a 10-entry L2 TLB, in a VM: THP in
        # guest and host gives 2 MiB combined entries (20 MiB of reach),
        # ET in both 32 MiB ones (320 MiB: the whole table), so ET's
        # misses are a small fraction of THP's and it runs faster.
        g = df[df.workload == "gups"].set_index("system")
        assert g.dtlb_l2_mpki["thp"] < g.dtlb_l2_mpki["4k"]
        assert g.dtlb_l2_mpki["elastic"] < 0.1 * g.dtlb_l2_mpki["thp"]
        assert g.cycles_norm["elastic"] < g.cycles_norm["thp"] < 1.0
        # Over 4 KiB stage-2 pages the guest's THP leaves its TLB 4 KiB
        # entries (as the artifact's own THP runs show): the 4 KiB run's
        # misses, and only the walks shortened by the guest's 2 MiB leaves.
        assert abs(g.dtlb_l2_mpki["thp-host4k"] / g.dtlb_l2_mpki["4k-host4k"] - 1) < 0.02
        assert g.cycles_norm_host4k["elastic"] < g.cycles_norm_host4k["thp-host4k"] < 1.0
        assert g.cycles_norm["4k-host4k"] > 1.0, "4 KiB stage-2 pages lengthen the 2D walks"
        # HawkEye in guest and host takes THP's huge pages at fault on
        # unfragmented memory: THP's translations, and ET ahead of it.
        assert g.dtlb_l2_mpki["hawkeye"] == g.dtlb_l2_mpki["thp"]
        assert g.cycles_norm["elastic"] < g.cycles_norm["hawkeye"]
    elif exp_id == "et-walkcost":
        assert_columns(df, ["workload", "walk_latency", "system", "cycles_norm", "dtlb_l2_mpki"])
        assert set(df.workload) == {"gups", "canneal"} and set(df.walk_latency) == {0, 17, 34, 44}
        b = pd.read_csv(tmp_path / "et-walkcost.saved.csv").set_index(["workload", "walk_latency"]).saved_per_walk
        # A dependent chase waits for each of its walks whole: every cycle
        # added to the walk is a cycle ET saves per walk it removes.
        assert abs(b[("canneal", 44)] - b[("canneal", 0)] - 44) < 1e-6
        assert abs(b[("canneal", 34)] - b[("canneal", 17)] - 17) < 1e-6
        # GUPS's independent loads overlap part of each walk.
        assert 0 < b[("gups", 44)] - b[("gups", 0)] < 44
    elif exp_id == "et-frag":
        assert_columns(df, ["workload", "fmfi", "system", "cycles_norm", "share_2m"])
        assert set(df.fmfi) == {0.5, 0.99} and set(df.workload) == {"canneal", "hashjoin"}
        assert set(df.system) == {"4k", "thp", "hawkeye", "elastic", "elastic-offline"}
        assert (df[df.system == "4k"].cycles_norm == 1.0).all() and (df[df.system == "4k"].share_2m == 0).all()
        # 128 MiB footprints beside 8 MiB of slack: at 99% memfrag releases
        # the footprint in 512 KiB chunks, so THP's 2 MiB pages come from
        # the slack alone (at most 8 / 128 of the footprint); at 50% about
        # half the footprint comes back in 32 MiB chunks.
        # HawkEye's huge pages come from the same blocks (at fault, as THP's,
        # and its promotions need a free 2 MiB block too).
        for system in ("thp", "hawkeye"):
            huge = df[df.system == system].set_index(["workload", "fmfi"]).share_2m
            for w in ("canneal", "hashjoin"):
                assert huge[(w, 0.99)] <= 8 / 128 < 0.3 < huge[(w, 0.5)], (system, w, huge.to_dict())
        # ET-offline read the unfragmented profiling runs' hints.
        assert sorted(p.name for p in (tmp_path / "et-hints").glob("*.hints")) == [
            "canneal-seed1.hints", "hashjoin-seed1.hints"]
    elif exp_id == "et-hints":
        assert_columns(df, ["workload", "source", "cycles_norm", "share_32m"])
        assert set(df.source) == {"tlb-miss", "access-bit"} and set(df.workload) == {"gups", "canneal", "streamcluster"}
        # Each source's profiling runs wrote hints, and ET-offline read
        # them: GUPS's 128 MiB table (within the 10-entry L2 TLB's reach at
        # 32 MiB) in 32 MiB translations from either source, faster than
        # 4 KiB pages. (Tiny cannot tell the sources apart: both hint every
        # 32 MiB region; the quick grid's footprint exceeds the budget.)
        for d in ("et-hints", "et-hints-access-bit"):
            files = sorted((tmp_path / d).glob("*.hints"))
            assert [p.name for p in files] == ["canneal-seed1.hints", "gups-seed1.hints", "streamcluster-seed1.hints"]
            assert all(p.read_text().strip() for p in files), d
        g = df[df.workload == "gups"].set_index("source")
        assert (g.share_32m > 0.9).all() and (g.cycles_norm < 1.0).all()
    elif exp_id == "et-sizes":
        cols = ["workload", "system"] + [f"{k}_{s}" for k in ("share", "count") for s in ("4k", "64k", "2m", "32m", "1g")]
        assert_columns(df, cols)
        shares = df[[c for c in cols if c.startswith("share_")]]
        assert ((shares.sum(axis=1) - 1.0).abs() < 1e-9).all(), "each run's shares sum to 1"
        s = df.set_index(["workload", "system"])
        # 4 KiB pages map everything with 4 KiB translations; greedy ET
        # maps GUPS's large VMA with 32 MiB ones.
        assert s.loc[("gups", "4k"), "share_4k"] == 1.0
        assert s.loc[("gups", "elastic"), "share_32m"] > 0
        assert s.loc[("gups", "4k"), "count_4k"] >= (128 << 20) // 4096, "GUPS's whole table in 4 KiB pages"
    elif exp_id == "baseline-thp":
        assert set(df.policy) == {"base", "thp", "hugetlb-2m", "hugetlb-1g"}
        assert set(df.workload) == {"gups", "bfs", "kv", "stream"}
        # Normalized to base, recomputed from the cycles of each workload.
        base = df[df.policy == "base"].set_index("workload").cycles
        assert df.cycles_norm.to_numpy() == pytest.approx((df.cycles / df.workload.map(base)).to_numpy())
        # gups on 4 KiB pages walks; THP removes (nearly) every walk.
        g = df[df.workload == "gups"].set_index("policy")
        assert g.loc["thp", "dtlb_misses"] < g.loc["base", "dtlb_misses"]
    else:
        assert set(df.pattern) == {"dispersed", "clustered"}
        assert df.frag_index.min() == 0.0 and df.frag_index.max() == 0.95
        fresh = df[df.frag_index == 0.0]
        assert (fresh.huge_coverage > 0.99).all()
    # Again, naming the variant: everything is in the store, nothing runs.
    r = run_cli("reproduce", exp_id, "--variant", "tiny", "--out", tmp_path, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert "0 to run" in r.stderr
    _analyze_with_two_seeds(exp_id, tmp_path)


def _analyze_with_two_seeds(exp_id, out):
    """The analysis of the same runs as if each had run with two seeds (a
    copy as seed 2): the figures then have error bars (of zero length), so
    every figure must say what they are (`write_figure(..., seeds=)`)."""
    from pagelab.store import Store

    with Store(out, read_only=True) as store:
        runs = store.frame(experiment=exp_id)
    # As `SweepOutcome.frame` gives them: parameters, config_hash, seconds, statistics.
    params = {c: c[2:] for c in runs.columns if c.startswith("p.")}
    meta = ["experiment", "config_toml", "pagelab_version", "python_version", "host", "finished_at"]
    df = runs.drop(columns=[c for c in runs.columns if c in params.values() or c in meta]).rename(columns=params)
    two = pd.concat([df, df.assign(seed=df.seed + 1000)], ignore_index=True)
    files = experiments.get(exp_id).analyze(two, out / "two-seeds", "tiny")
    for f in files:
        if f.suffix == ".png":
            assert f.with_suffix(".pdf").exists()
    table = pd.read_csv(out / "two-seeds" / f"{exp_id}.csv")
    assert (table.seeds == 2).all()


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", sorted(COLUMNS))
def test_reproduce_quick(tmp_path, exp_id):
    r = run_cli("reproduce", exp_id, "--quick", "--out", tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"{exp_id}.csv").exists()


def _chp_fig1(df):
    assert set(df.scenario) == {"alone", "4k", "thp", "coloring"}
    # Stressors on the other cores never make a workload faster.
    for _, g in df.groupby("workload"):
        s = g.set_index("scenario").runtime
        assert s["4k"] >= s["alone"]


def _chp_fig4(df):
    assert set(df.scenario) == {"4k", "thp", "coloring", "chp", "chp-projected", "chp-projected-walk"}
    for _, g in df.groupby("workload"):
        s = g.set_index("scenario")
        # Eq. 1 of the paper, recomputed from the other rows, with C as
        # translation cycles and as walk cycles (the paper's C).
        cache = s.loc["thp", "cache"] * s.loc["coloring", "cache"] / s.loc["4k", "cache"]
        assert s.loc["chp-projected", "runtime"] == pytest.approx(s.loc["thp", "translation"] + cache)
        rest = s.runtime - s.walk
        cache = rest["thp"] * rest["coloring"] / rest["4k"]
        assert s.loc["chp-projected-walk", "runtime"] == pytest.approx(s.loc["thp", "walk"] + cache)
        assert s.loc["chp-projected-walk", "translation"] == s.loc["chp-projected-walk", "walk"]
        # Walks are a part of translation.
        assert (s.walk.dropna() <= s.translation[s.walk.notna()] + 1e-12).all()
        # Colored huge pages walk less than 4 KiB pages. (Walks, not
        # translation cycles: under the interval model a walk that overlaps
        # a data miss stalls nothing, and tiny bfs's translation is zero.)
        assert s.loc["chp", "walks_pka"] < s.loc["4k", "walks_pka"]


def _chp_fig5(df):
    assert set(df.workload) == {"mcf", "bfs"}
    assert (df[df.frag_index == 0.0].success_ratio == 1.0).all()
    alone = df[df.co_runner == 0]
    # Using every color never needs more free blocks than 5 of 8.
    for (w, fi), g in alone[~alone.share_leftovers].groupby(["workload", "frag_index"]):
        s = g.set_index("colors").success_ratio
        assert s["all"] >= s["table3"], (w, fi)
    # Leftovers offered to a pool nobody draws from change nothing for the
    # workload: it carves the same blocks either way.
    for (w, fi), g in alone[alone.colors == "table3"].groupby(["workload", "frag_index"]):
        s = g.set_index("share_leftovers").success_ratio
        assert s[True] == s[False], (w, fi)
    assert set(df.co_runner[df.co_runner > 0]) and set(df.share_leftovers) == {False, True}


def _chp_fig6(df):
    assert set(df.submappings) == {1, 2, 4, 8}
    assert (df[df.frag_index == 0.0].success_ratio == 1.0).all()
    for fi, g in df.groupby("frag_index"):
        s = g.set_index("submappings").success_ratio
        assert s[8] >= s[1], fi


def _chp_swap(df):
    assert set(df.scheme) == {"chp", "swap"} and set(df.colors) == {5, 8}
    # The ratios are SWAP's counters over CHP's, row by row.
    chp = df[df.scheme == "chp"].set_index(["workload", "colors"])
    for r in df[df.scheme == "swap"].itertuples():
        base = chp.loc[(r.workload, r.colors)]
        assert r.llc_misses_vs_chp == pytest.approx(r.llc_misses / base.llc_misses)
        assert r.runtime_vs_chp == pytest.approx(r.runtime / base.runtime)


def _fig4_sentences(df, md):
    from pagelab.experiments.chp.perf import _walks_reading

    assert _walks_reading(df) in md
    for w in set(df.workload):
        assert f"{w} {df[(df.workload == w) & (df.scenario == 'chp')].walks_pka.iloc[0]:.2f}" in md


def _fig5_sentences(df, md):
    from pagelab.experiments.chp.frag import _held_reading

    assert "In these rows: " + _held_reading(df) in md
    assert "(11% of memory)" in md and "(28%)" in md  # mcf's and bfs's footprints / 16 GB


def _swap_sentences(df, md):
    from pagelab.experiments.chp.perf import _swap_mcf_reading

    reading = _swap_mcf_reading(df)
    assert reading and reading in md
    swap = df[(df.scheme == "swap") & (df.workload == "mcf")]
    worse = all(swap.llc_misses_vs_chp > 1) and all(swap.runtime_vs_chp > 1)
    assert ("the same direction as the paper" in md) == worse


SENTENCES = {"chp-fig4": _fig4_sentences, "chp-fig5": _fig5_sentences, "chp-swap": _swap_sentences}


def _chp_table4(df):
    s = df.set_index("scenario")
    # One fault per 2 MiB region instead of one per page.
    assert s.loc["chp", "faults"] * 10 < s.loc["4k", "faults"]
    # Table IV's finding: CHP's costly faults are so few that their total
    # stays below coloring's (fault counts are simulated; costs are inputs).
    assert s.loc["chp", "fault_cycles_total"] < s.loc["coloring", "fault_cycles_total"]


CHP_CHECKS = {
    "chp-fig1": _chp_fig1,
    "chp-fig4": _chp_fig4,
    "chp-fig5": _chp_fig5,
    "chp-fig6": _chp_fig6,
    "chp-swap": _chp_swap,
    "chp-table4": _chp_table4,
}


def _pp_fig7(df):
    assert_columns(df, ["distribution", "hole_kind", "degree", "portion", "system", "speedup", "dtlb_l2_mpki"])
    assert set(df.hole_kind) == {"allocated", "unallocated"}
    for _, g in df.groupby("hole_kind"):
        s = g.set_index("system")
        assert s.loc["base-4k", "speedup"] == 1.0
        # Random loads over 64 MiB: 4 KiB pages overflow the L2 TLB, 2 MiB do not.
        assert s.loc["ideal-2m", "dtlb_l2_mpki"] < s.loc["base-4k", "dtlb_l2_mpki"]
        assert s.loc["ideal-2m", "speedup"] > 1.0
        # Half the regions fragmented: perforated pages keep most of the reach
        # (at tiny scale the walks it saves are a few hundredths of a percent
        # of the run, so its speedup ties base-2m-4k's within 0.1%).
        assert s.loc["perforated", "dtlb_l2_mpki"] < s.loc["base-2m-4k", "dtlb_l2_mpki"] / 10
        assert s.loc["perforated", "speedup"] > s.loc["base-2m-4k", "speedup"] * 0.999
    # Unallocated holes are never touched: no hole walk, no hole entry. The
    # two kinds' speedups have different denominators (base-4k touches
    # allocated holes), so each is compared with its own best case.
    best = df[df.system == "ideal-2m"].set_index("hole_kind").speedup
    p = df[df.system == "perforated"].set_index("hole_kind")
    assert p.speedup["unallocated"] / best["unallocated"] >= p.speedup["allocated"] / best["allocated"]
    assert p.dtlb_l2_mpki["unallocated"] < p.dtlb_l2_mpki["allocated"]


def _pp_fig8(df):
    assert_columns(df, [
        "distribution", "hole_kind", "degree", "portion", "share_4k", "share_2m", "share_perforated",
        "share_bitmap", "share_hole", "bitmap_lookups", "filter_hits",
    ])
    shares = df[["share_4k", "share_2m", "share_perforated", "share_bitmap", "share_hole"]].sum(axis=1)
    assert ((shares - 1.0).abs() < 1e-9).all()
    assert (df.share_perforated > 0).all() and (df.bitmap_lookups + df.filter_hits > 0).all()
    assert (df[df.hole_kind == "unallocated"].share_hole == 0).all()


def _pp_gtsm(df):
    assert_columns(df, ["workload", "system", "speedup", "huge_share"])
    assert set(df.system) == {"base-4k", "gtsm", "perforated", "ideal-2m"}
    for _, g in df.groupby("workload"):
        s = g.set_index("system")
        assert s.loc["base-4k", "speedup"] == 1.0 and s.loc["base-4k", "huge_share"] == 0.0
        assert s.loc["ideal-2m", "huge_share"] > 0.9  # kv's small arrays are not whole 2 MiB regions
        # 5.5% of 4 KiB frames faulty: no fault-free 2 MiB region, every
        # region a perforated page; GTSM finds few chunks of 32 sub-blocks.
        assert s.loc["perforated", "huge_share"] == s.loc["ideal-2m", "huge_share"]
        assert 0 < s.loc["gtsm", "huge_share"] < 0.5


def _pp_redis(df):
    assert_columns(df, ["system", "dtlb_l2_mpki", "mem_bytes"])
    s = df.set_index("system")
    assert list(s.index) == ["4k", "2m", "perforated"]
    # 2 MiB pages miss less; they back the pad page of every 24 KiB value
    # extent that 4 KiB pages leave alone (a bloat of about 6 / 5, the
    # metadata diluting it); perforated pages leave it out as holes.
    assert s.dtlb_l2_mpki["2m"] < s.dtlb_l2_mpki["4k"]
    assert s.mem_bytes["4k"] > 64 * 2**20
    assert 1.15 < s.mem_bytes["2m"] / s.mem_bytes["4k"] <= 1.2
    assert s.mem_bytes["perforated"] == s.mem_bytes["4k"]
    assert s.dtlb_l2_mpki["perforated"] <= s.dtlb_l2_mpki["4k"]


def _pp_fig9(df):
    assert_columns(df, ["workload", "distribution", "degree", "portion", "system", "speedup"])
    assert list(dict.fromkeys(df.workload)) == [
        "mcf", "omnetpp", "libquantum", "zeusmp", "mummer", "tigr", "omnetpp17", "xz"]
    assert (df[df.system == "base-4k"].speedup == 1.0).all()
    # Perforated pages never map less with huge translations than the
    # conventional kernel: at worst (a streaming analogue) they tie.
    for _, g in df.groupby(["workload", "distribution", "degree", "portion"]):
        s = g.set_index("system").speedup
        assert s["ideal-2m"] >= s["base-2m-4k"] * 0.99


def _pp_realfrag(df):
    cols = ["snapshot", "placement", "huge_share", "perforated_share", "speedup_gain", "counted_huge_share",
            "counted_perforated_share", "base_huge_share", "reclaimed_share"]
    assert_columns(df, cols)
    s = df.set_index(["snapshot", "placement"])
    # The counting, from the constructed snapshots' free blocks.
    assert s.loc[("paper-first", "clustered"), "counted_huge_share"] == 226 / 1024
    assert s.loc[("paper-second", "clustered"), "counted_perforated_share"] == 512 / 1024
    # The booted machine (tiny: 1/32 of the snapshot, 32 regions, the
    # free order-10 blocks rounded at random: 2 regions each) gives THP
    # about the counted share; perforated pages some of the counted
    # ones, never more (a pageblock whose small free blocks all landed
    # elsewhere holds 128 used frames: not under 25%).
    assert ((s.huge_share - s.counted_huge_share).abs() <= 2 / 32).all()
    assert ((s.perforated_share > 0) & (s.perforated_share <= s.counted_perforated_share + 1 / 32)).all()
    # The gain's size is a result of the full run, not a check of the
    # code (at 1/32 scale, 64 MiB and 20,000 loads, it ranges from 1e-4 to
    # 0.19 with the walker's latency); perforated pages only add huge
    # translations beside THP's, so they never cost the run more than noise.
    assert (s.speedup_gain > -0.01).all()
    for placement in ["clustered", "dispersed"]:
        first, second = s.loc[("paper-first", placement)], s.loc[("paper-second", placement)]
        # The first run's machine had half as much free memory: its
        # allocation reclaimed more of the page cache.
        assert first.reclaimed_share > second.reclaimed_share


def _pp_virt(df):
    cols = ["workload", "distribution", "degree", "portion", "system", "speedup", "refs_per_walk", "bitmap_refs_per_walk"]
    assert_columns(df, cols)
    assert (df[df.system == "base-4k"].speedup == 1.0).all()
    # Only perforated pages read bitmaps.
    assert (df[df.system != "perforated"].bitmap_refs_per_walk.fillna(0) == 0).all()
    # mcf's analogue (pointer chasing with a hot set) at the paper's real
    # scenario: perforated pages beat the conventional kernel's 4 KiB
    # fallback in the VM, and no fragmented system beats ideal 2 MiB pages.
    s = df[(df.workload == "mcf") & (df.distribution == "clustered") & (df.degree == 0.25)].set_index("system")
    assert s.speedup["base-2m-4k"] < s.speedup["perforated"] < s.speedup["ideal-2m"]
    assert s.bitmap_refs_per_walk["perforated"] > 0


def _pp_ksm(df):
    assert_columns(df, ["distribution", "system", "mem_saved", "huge_broken", "dtlb_l2_misses", "slowdown"])
    assert list(zip(df.distribution, df.system)) == [
        (d, s) for d in ("clustered", "dispersed") for s in ("none", "thp-ksm", "pp-ksm")]
    for dist in ("clustered", "dispersed"):
        s = df[df.distribution == dist].set_index("system")
        assert (s.mem_saved["none"], s.huge_broken["none"], s.dtlb_l2_misses["none"], s.slowdown["none"]) == (0, 0, 1, 0)
        # The duplicates are 0.40 of mcf's regions, 0.55 of their pages:
        # both KSMs merge them all (p d / 2 = 0.11 of the memory saved)
        # and break every region holding one (0.40), less the guest's own
        # pages' dilution; the punch perforates what the split splits.
        assert 0.08 < s.mem_saved["thp-ksm"] == s.mem_saved["pp-ksm"] < 0.12
        assert 0.30 < s.huge_broken["thp-ksm"] == s.huge_broken["pp-ksm"] < 0.45
        # L2 TLB misses are defined (the TLBs are scaled below mcf's
        # footprint) and grow with KSM; a perforated page keeps its 2 MiB
        # entry for the parts that are not holes: fewer than the split's.
        assert 1 < s.dtlb_l2_misses["pp-ksm"] < s.dtlb_l2_misses["thp-ksm"]
        assert s.slowdown["thp-ksm"] > 0 and s.slowdown["pp-ksm"] > 0
    # The filter answers for the 256 KiB regions without a hole only when
    # the duplicates are clustered: dispersed ones cost pp-ksm more.
    pp = df[df.system == "pp-ksm"].set_index("distribution")
    assert pp.slowdown["clustered"] < pp.slowdown["dispersed"]


PP_CHECKS = {
    "pp-fig7": _pp_fig7, "pp-fig8": _pp_fig8, "pp-fig9": _pp_fig9, "pp-gtsm": _pp_gtsm, "pp-redis": _pp_redis,
    "pp-realfrag": _pp_realfrag, "pp-virt": _pp_virt, "pp-ksm": _pp_ksm,
}


def test_pp_realfrag_allocation_worked_by_hand():
    from pagelab.experiments.perforated import realfrag as rf

    # A run of 200 used frames at one of 313 places spans 5 filter
    # regions when it starts at 57..63 within a 64-page region (28 places).
    assert rf.filter_bits_accepted(200, "clustered") == 285 / 313
    assert rf.filter_bits_accepted(123, "clustered") == 1.0
    assert rf.filter_bits_accepted(4, "dispersed") == 1.0 and rf.filter_bits_accepted(5, "dispersed") == 0.0
    # 4 Unmovable pageblocks all used; 10 Movable: 2 free order-10 blocks
    # (4 pageblocks), the other 6 with 2 free frames each; 2 Reclaimable
    # with 389 free frames each (orders 8, 7, 2, 0): 123 used, under 25%.
    snap = {
        "pageblocks": [4, 10, 2],
        "free_unmovable": [0] * 11,
        "free_movable": [12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        "free_reclaimable": [2, 0, 2, 0, 0, 0, 0, 2, 2, 0, 0],
    }
    c = rf.allocation(snap, "clustered")
    assert (c.huge_share, c.perforated_share, c.degree) == (4 / 1024, 2 / 1024, 123 / 512)
    d = rf.allocation(snap, "dispersed")
    assert (d.huge_share, d.perforated_share) == (4 / 1024, 0.0)
    assert d.degree == (4 * 512 + 6 * 510 + 2 * 123) / 12 / 512
    # The booted machine: the snapshot's size in whole pageblocks.
    assert rf.machine_bytes("paper-first", 1.0) == 12 << 30
    assert rf.machine_bytes("this-vm", 1 / 4) == 6 << 30


def _coplace_table2(df):
    assert_columns(df, ["workload", "host_policy", "conflict_level", "l2_conflict_level", "host_memory"])
    assert set(df.host_memory) == {"aged", "fresh"} and (df.conflict_level >= 0).all()
    assert set(df.workload) == {"blackscholes", "water_spatial", "Xapian", "Img-dnn"}  # Table II's rows
    # On the aged host the default placement takes frames between pinned
    # ones, in fault order; the two placements that follow the guest frame
    # keep the guest's even spread.
    aged = df[df.host_memory == "aged"].groupby("host_policy").conflict_level.mean()
    assert aged["base"] > aged["vmm-coloring"] and aged["base"] > aged["coplace"]


def _coplace_fig1(df):
    assert_columns(df, ["workload", "guest_policy", "host_policy", "llc_ways", "runtime_norm", "llc_miss_ratio_inc",
                        "l2_miss_ratio_inc"])
    assert set(df.host_policy) == {"base", "vmm-coloring"} and set(df.llc_ways) == {11, 1}
    assert set(df.workload) == {"blackscholes", "water_spatial", "raytrace"}  # the paper's named three
    assert (df.runtime_norm > 0).all() and df[["llc_miss_ratio_inc", "l2_miss_ratio_inc"]].abs().le(100).all().all()


def _coplace_perf(df):
    assert_columns(df, ["workload", "system", "llc_ways", "runtime_norm", "request_cycles_mean", "request_cycles_p99"])
    xapian, bs = df[df.workload == "Xapian"], df[df.workload == "blackscholes"]
    # Requests only where the workload serves them; a tail at or above the mean.
    assert (xapian.request_cycles_p99 >= xapian.request_cycles_mean).all() and (xapian.request_cycles_mean > 0).all()
    assert bs.request_cycles_mean.isna().all()


def _coplace_varying(df):
    assert_columns(df, ["phase", "system", "conflict_level", "runtime_norm"])
    assert set(zip(df.phase, df.system)) == {(p, s) for p in ("sysbench", "pgsql", "pgsql-fresh")
                                             for s in ("baseline", "coplace")}
    assert (df.runtime_norm > 0).all()


def _coplace_multivm(df):
    assert_columns(df, ["scenario", "system", "request_cycles_mean", "request_cycles_p99", "llc_miss_ratio",
                        "memory_saved", "llc_conflict_level", "color_fallbacks", "freed_color_stddev", "deflated"])
    assert list(zip(df.scenario, df.system)) == [("eksm", "baseline"), ("eksm", "coplace-no-eksm"), ("eksm", "coplace"),
                                                 ("ebal", "baseline"), ("ebal", "coplace-no-ebal"), ("ebal", "coplace")]
    assert (df.request_cycles_p99 >= df.request_cycles_mean).all() and (df.request_cycles_mean > 0).all()
    eksm, ebal = df[df.scenario == "eksm"], df[df.scenario == "ebal"]
    # The VMs declare identical data: KSM merges some under every system.
    assert (eksm.memory_saved > 0).all() and eksm.color_fallbacks.isna().all()
    # The balloon gave VM 0 Xapian's tiny footprint (2 MiB) back under every
    # system (512 pages: fewer than COPLACE's 1,024 host colors, so the
    # tiny variant cannot show eBal's evenness; the quick one does).
    assert ebal.memory_saved.isna().all() and (ebal.deflated == 512).all()
    assert (ebal.llc_conflict_level > 0).all() and (ebal.color_fallbacks >= 0).all()


def _coplace_standin(df):
    assert_columns(df, ["workload", "host_policy", "slice_seed", "conflict_level", "llc_miss_ratio", "cycles"])
    assert set(df.slice_seed) == {0, 1, 2}
    # The paper's conflict level counts one slice's colors (set bits), which
    # no slice hash moves: equal under every stand-in for the placements
    # that do not read slice bits.
    for _, g in df[df.host_policy != "coplace"].groupby(["workload", "host_policy"]):
        assert g.conflict_level.nunique() == 1, g


COPLACE_CHECKS = {"coplace-standin": _coplace_standin, "coplace-table2": _coplace_table2, "coplace-fig1": _coplace_fig1,
                  "coplace-perf": _coplace_perf,
                  "coplace-varying": _coplace_varying, "coplace-multivm": _coplace_multivm}
