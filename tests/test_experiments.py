"""The experiments' registry: discovery of the packages below
`pagelab.experiments`, and what happens when one of them is broken."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pagelab import experiments

#: package below pagelab.experiments -> the IDs its modules declare. A new
#: paper's package adds a line here (and nothing in pagelab.experiments).
DECLARED = {
    "baseline": {"baseline-thp", "frag-sweep", "mem-tiers"},
    "chp": {"chp-fig1", "chp-fig4", "chp-fig5", "chp-fig6", "chp-swap", "chp-table4"},
    "virt": {"virt-ksm", "virt-splinter", "virt-walks"},
    "perforated": {"pp-fig7", "pp-fig8", "pp-fig9", "pp-gtsm", "pp-ksm", "pp-realfrag", "pp-redis", "pp-virt"},
    "elastic": {"et-frag", "et-hints", "et-hugetlb", "et-native", "et-sizes", "et-virt", "et-walkcost"},
    "coplace": {"coplace-fig1", "coplace-multivm", "coplace-perf", "coplace-standin", "coplace-table2",
                "coplace-varying"},
}

ROOT = Path(experiments.__file__).parent


def _modules_on_disk() -> set[str]:
    """Every module below pagelab.experiments, from the file system."""
    names = set()
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            names.add(".".join(("pagelab.experiments", *parts)))
    return names


def test_discovery_imports_every_module():
    experiments.all_experiments()
    on_disk = _modules_on_disk()
    assert on_disk <= set(sys.modules), on_disk - set(sys.modules)
    names = experiments.import_all(experiments.__path__, "pagelab.experiments.")
    assert set(names) == on_disk
    # Deterministic: each package's modules in sorted order, the package first.
    assert names == experiments.import_all(experiments.__path__, "pagelab.experiments.")
    assert names.index("pagelab.experiments.chp") < names.index("pagelab.experiments.chp.common") < names.index("pagelab.experiments.chp.frag")


def test_registry_is_what_the_packages_declare():
    exps = experiments.all_experiments()
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(DECLARED), "a package without a DECLARED line, or a line without a package"
    found: dict[str, set[str]] = {}
    for exp in exps:
        module = exp.analyze.__module__
        assert module.startswith("pagelab.experiments."), (exp.id, module)
        found.setdefault(module.split(".")[2], set()).add(exp.id)
    assert found == DECLARED
    assert {e.id for e in exps} == set().union(*DECLARED.values())
    assert {e.paper for e in exps if e.id.startswith("chp-")} == {"colored-huge-pages"}


def test_an_id_declared_twice_is_an_error():
    exp = experiments.get("chp-fig1")

    def analyze(df, out, variant):  # a function of another module
        return []

    analyze.__module__ = "pagelab.experiments.someone_else"
    twin = experiments.Experiment(id=exp.id, title="twin", sweeps=exp.sweeps, analyze=analyze)
    with pytest.raises(ValueError, match="chp-fig1.*declared twice"):
        experiments.register(twin)
    assert experiments.get("chp-fig1") is exp


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package `fake_exps` on sys.path: modules a, b, and sub/ with z."""
    name = "fake_exps"
    pkg = tmp_path / name
    (pkg / "sub").mkdir(parents=True)
    for rel in ("__init__.py", "sub/__init__.py", "b.py", "a.py", "sub/z.py"):
        (pkg / rel).write_text("IMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for mod in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[mod]


def test_import_all_is_sorted_and_recursive(fake_package):
    names = experiments.import_all([str(fake_package)], "fake_exps.")
    assert names == ["fake_exps.a", "fake_exps.b", "fake_exps.sub", "fake_exps.sub.z"]


@pytest.mark.parametrize(
    "body, cause",
    [
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("import no_such_module_anywhere\n", "ModuleNotFoundError"),
        ("def broken(:\n", "SyntaxError"),
    ],
)
def test_a_broken_module_is_named(fake_package, body, cause):
    (fake_package / "sub" / "y.py").write_text(body)
    with pytest.raises(ImportError, match=r"fake_exps\.sub\.y failed to import") as info:
        experiments.import_all([str(fake_package)], "fake_exps.")
    assert cause in str(info.value)
    assert info.value.name == "fake_exps.sub.y"


def test_chp_spec_analogues_scatter_their_hot_sets():
    # Issue 16 part 6: the SPEC analogues' hot sets are spread over the
    # footprint in whole 4 KiB chunks, not its first MiBs.
    from pagelab.experiments.chp.common import APPS, app_workload

    pointer_chases = [a for a, (table, _, _) in APPS.items() if table["kind"] == "pointer-chase"]
    assert pointer_chases == ["mcf", "astar", "omnetpp"]
    for app in pointer_chases:
        w = app_workload(app, 1 << 30, 1000)
        assert w["hot_layout"] == "scattered" and w["hot_chunk"] == 4096
        assert w["hot_chunk"] <= w["hot_set"] <= w["footprint"] // 2


def test_et_analogues_keep_the_paper_footprints_ratio_to_the_l2_tlb_reach():
    from pagelab.experiments.elastic import analogues as a
    from pagelab.experiments.elastic import native
    from pagelab.sweep import expand

    # Each workload's footprint in the artifact (bin/frag.sh) against the
    # N1's 1280 x 2 MiB and 1280 x 32 MiB, kept by each scaled run (the
    # footprint rounded to whole 2 MiB pages).
    for variant in ("full", "quick"):
        for app, paper_fp in a.PAPER_FOOTPRINTS.items():
            fp, entries = a.footprint(variant, app), a.l2_entries(variant, app)
            for page in (2 << 20, 32 << 20):
                assert fp / (entries * page) == pytest.approx(paper_fp / (1280 * page), rel=0.01), (variant, app)
            m = a.machine(variant, app)
            assert m["tlb"]["l2_entries"] == entries and entries % 5 == 0 and m["tlb"]["l2_ways"] == 5
            # A VM's second dimension is scaled as the guest's caches are.
            s = a.divisor(variant, app)
            assert m["ept_pwc"] == m["pwc"] and m["pwc"]["pde_entries"] == max(1, 32 // s)
            assert m["nested_tlb"]["entries"] == max(1, 16 // s)
            # Scaled no further than MIN_SCALED allows: the small
            # workloads run unscaled, on the whole N1.
            assert fp >= min(paper_fp, a.MIN_SCALED) - (2 << 20)
    assert a.divisor("full", "omnetpp") == 1 and a.l2_entries("full", "omnetpp") == 1280
    assert a.divisor("full", "gups") == 32 and a.footprint("full", "gups") == 33 * 1024**3 // 32
    # Leshy's budget is the point's own L2 TLB (70% online), set with its machine.
    pts = {(p.params["workload"], p.params["system"]): p for p in expand(native.sweep("quick"))}
    for (app, system), want in {("gups", "elastic"): 7, ("gups", "elastic-offline"): 10,
                                ("astar", "elastic"): 896, ("astar", "elastic-offline"): 1280}.items():
        p = pts[(app, system)]
        assert p.config["os"]["elastic"]["leshy_budget"] == want
        assert "os.elastic.leshy_budget" not in p.overrides
    # All ten of fig8's programs have an analogue, in its order; Hashjoin,
    # SVM and XSBench are generators of their own (not another row's
    # generator under a second name).
    assert a.ORDER == list(native.PAPER_FIG8) and set(a.ORDER) == set(a.APPS)
    assert {app: a.APPS[app]["kind"] for app in ("hashjoin", "svm", "xsbench")} == {
        "hashjoin": "hashjoin", "svm": "svm", "xsbench": "xsbench"}
    # The offline run reads what the profiling run of its workload and
    # seed writes, and no other system is pointed at a hint file.
    cfgs = {}
    for system in ("elastic-offline", "elastic-profile", "elastic"):
        c: dict = {}
        native.shape(c, {"system": system, "workload": "gups", "seed": 2}, "quick", hints_dir=Path("/h"))
        cfgs[system] = c["os"]["elastic"]
    assert cfgs["elastic-offline"]["hints"] == cfgs["elastic-profile"]["leshy_hints_out"] == "/h/gups-seed2.hints"
    assert cfgs["elastic"] == {"leshy_budget": 7}


def test_et_analogues_of_the_artifacts_programs_run_on_the_scaled_n1():
    # Hashjoin's, SVM's and XSBench's tables run as et-native gives them
    # (the tiny grids run others), on their quick machine, over 16 MiB:
    # each measured access is the program's (the build and the solver's
    # first sweep skipped) and its loop's instruction density is kept.
    import pagelab
    from pagelab.experiments.elastic import analogues as a

    per_access = {}
    for app in ("hashjoin", "svm", "xsbench"):
        cfg = {"machine": a.machine("quick", app), "os": {"policy": "thp"}, "run": {"skip_init": True},
               "workload": a.workload(app, 16 << 20, 20_000)}
        s = pagelab.run(cfg).stats
        per_access[app] = s["instructions"] / 20_000
        assert s["dtlb.l2.misses"] > 0, app
    # 127 instructions per 9-access probe; 51 + 15 x 11 per 51-access
    # step; XSBench's lookups about 13 per access.
    assert per_access["hashjoin"] == pytest.approx(127 / 9, rel=0.01)
    assert per_access["svm"] == pytest.approx((51 + 15 * 11) / 51, rel=0.01)
    assert 10 < per_access["xsbench"] < 16


def test_et_native_leaves_out_a_hugetlb_run_that_mapped_no_1g_page():
    # A hugetlb-1g run whose VMAs are all under 1 GiB is a 4 KiB run under
    # another name: et-native drops it; one that mapped 1 GiB pages stays.
    import pandas as pd

    from pagelab.experiments.elastic import native

    rows = []
    for w, mapped_1g in (("gups", 2 << 30), ("bfs", 0)):
        rows += [
            {"workload": w, "system": "4k", "seed": 1, "cycles": 100.0, "dtlb.l2.mpki": 5.0, "mem.mapped.1g": 0},
            {"workload": w, "system": "hugetlb-1g", "seed": 1, "cycles": 60.0 if mapped_1g else 100.0,
             "dtlb.l2.mpki": 0.0 if mapped_1g else 5.0, "mem.mapped.1g": mapped_1g},
        ]
    t = native.native_table(pd.DataFrame(rows))
    assert set(zip(t.workload, t.system)) == {("gups", "4k"), ("gups", "hugetlb-1g"), ("bfs", "4k")}
    assert t[(t.workload == "gups") & (t.system == "hugetlb-1g")].cycles_norm.item() == pytest.approx(0.6)
    assert "bfs" in native._unbacked_note(pd.DataFrame(rows))


def test_coplace_multivm_points_are_each_scenario_with_its_systems():
    from pagelab.sweep import expand

    points = expand(experiments.get("coplace-multivm").sweeps["tiny"])
    got = {(p.params["scenario"], p.params["system"]): p.config for p in points}
    assert set(got) == {(s, r) for s in ("eksm", "ebal") for r in ("baseline", "coplace-stock", "coplace")}
    host = {k: c["virt"]["host"] for k, c in got.items()}
    # eKSM's: eleven VMs, KSM's colors by system, no balloon.
    assert [host["eksm", r]["ksm"]["colors"] for r in ("baseline", "coplace-stock", "coplace")] == \
        ["ignore", "ignore", "eksm"]
    assert all(len(got["eksm", r]["vms"]) == 11 and "balloon" not in host["eksm", r] for r in ("baseline", "coplace"))
    # eBal's: the receiver and the donor, the balloon's colors by system,
    # the receiver's Xapian after the deflation (it waits on its vCPU).
    assert [(host["ebal", r]["policy"], host["ebal", r]["balloon"]["even_colors"])
            for r in ("baseline", "coplace-stock", "coplace")] == \
        [("vmm-coloring", False), ("coplace", False), ("coplace", True)]
    receiver, donor = got["ebal", "coplace"]["vms"]
    assert [w.get("after") for w in receiver["workloads"]] == [None, "previous", None]
    assert receiver["workloads"][1]["kind"] == "xapian" and "ksm" not in host["ebal", "coplace"]
    assert donor["workloads"][1]["after"] == "previous"
