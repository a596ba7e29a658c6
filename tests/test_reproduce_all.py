"""`pagelab reproduce --all` (pagelab.reproduce_all): one store, a point
two experiments declare run once, each experiment's files as `reproduce
ID` writes them. On two or three cheap experiments (`--only`, or a
registry of constructed ones): the tiny variants of all of them take a
quarter of an hour."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from pagelab import experiments, provenance, results
from pagelab.executors import RUN_LOG_ENV
from pagelab.experiments import Experiment, timings
from pagelab.reproduce_all import run_all, summary
from pagelab.store import Store
from pagelab.sweep import Sweep

from conftest import run_cli

pytest.importorskip("duckdb")

#: Two cheap experiments: 4 and 6 tiny runs.
CHEAP = "chp-swap,frag-sweep"


def test_all_with_an_id_is_a_usage_error(tmp_path):
    r = run_cli("reproduce", "--all", "chp-swap", "--out", tmp_path / "o")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "give no id ('chp-swap')" in r.stderr, r.stderr
    r = run_cli("reproduce", "--only", "chp-swap", "--out", tmp_path / "o")
    assert r.returncode == 2 and "--only goes with --all" in r.stderr
    assert not (tmp_path / "o").exists()


def test_all_refuses_to_save_a_quick_run_before_running(tmp_path):
    out, root = tmp_path / "out", tmp_path / "results"
    r = run_cli("reproduce", "--all", "--quick", "--out", out, "--save-results", root)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "only full runs" in r.stderr, r.stderr
    assert not out.exists() and not root.exists()


def test_all_list_sums_the_recorded_times(tmp_path):
    r = run_cli("reproduce", "--all", "--list", "--out", tmp_path / "none")
    assert r.returncode == 0, r.stderr
    table, _, legend = r.stdout.partition("\n\n")
    lines = table.splitlines()
    assert lines[0].split() == ["experiment", "full", "quick", "tiny"]
    ids = [e.id for e in experiments.all_experiments()]
    assert [ln.split()[0] for ln in lines[1:1 + len(ids)]] == ids
    recorded = timings.expected_times().rows
    # The tiny column: each recorded time, `-` for none, and their sum.
    for i, line in zip(ids, lines[1:]):
        row = recorded.get((i, "tiny"))
        assert line.endswith(" -" if row is None else f" {timings.duration(float(row['seconds']))}"), line
    total = sum(float(recorded[(i, "tiny")]["seconds"]) for i in ids if (i, "tiny") in recorded)
    assert lines[-2].split()[0] == "sum" and lines[-2].endswith(f" {timings.duration(total)}")
    missing = sum((i, "tiny") not in recorded for i in ids)
    assert lines[-1].startswith("not recorded") and lines[-1].split()[-1] == str(missing)
    assert "leaves out the experiments not recorded" in " ".join(legend.split())


def test_outputs_are_those_of_reproduce_id(tmp_path):
    """Each experiment's files are those `reproduce ID` writes on the same
    store, byte for byte; its provenance says it was part of a batch, which
    no timing records."""
    out = tmp_path / "all"
    r = run_cli("reproduce", "--all", "--only", CHEAP, "--tiny", "--out", out, "--jobs", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines()[1:3]}
    assert rows == {"chp-swap": ["4", "4", "0", "0", rows["chp-swap"][4], "ok"],
                    "frag-sweep": ["6", "6", "0", "0", rows["frag-sweep"][4], "ok"]}
    assert "10 runs declared, 10 distinct" in r.stdout and "wall clock" in r.stdout
    with Store(out, read_only=True) as store:
        assert len(store) == 10
    ids = CHEAP.split(",")
    written = {f"{i}.csv": (out / f"{i}.csv").read_bytes() for i in ids}
    for i in ids:
        info = provenance.read(out / f"{i}{provenance.SUFFIX}")
        assert info["batch"] == "reproduce --all" and info["shared"] == 0 and info["ran"] == info["points"]
    assert timings.record([out], tmp_path / "timings.csv") == []
    for i in ids:
        r = run_cli("reproduce", i, "--tiny", "--out", out, "--jobs", "2", timeout=300)
        assert r.returncode == 0, r.stderr
        assert "0 run(s) now" in r.stderr
    assert {name: (out / name).read_bytes() for name in written} == written


# ---- a registry of constructed experiments --------------------------------

BASE = {"machine": {"phys_mem": "256MiB"}, "run": {"skip_init": True},
        "workload": {"kind": "gups", "footprint": "32MiB", "accesses": 5_000}}


def _experiment(exp_id: str, quanta: list[int], fail: bool = False, base: dict = BASE) -> Experiment:
    """An experiment over `run.quantum` whose table is its runs' cycles."""

    def analyze(df: pd.DataFrame, out, variant):
        if fail:
            raise ValueError("a deliberately broken analysis")
        path = out / f"{exp_id}.csv"
        df[["run.quantum", "seed", "cycles"]].sort_values("run.quantum").to_csv(path, index=False)
        return [path]

    # The package `results.save` files it under.
    analyze.__module__ = "pagelab.experiments.testpkg.made"
    sweep = Sweep(id=exp_id, base=base, grid={"run.quantum": quanta}, seeds=[1])
    return Experiment(id=exp_id, title=f"constructed {exp_id}", sweeps={v: sweep for v in experiments.VARIANTS},
                      analyze=analyze)


@pytest.fixture
def registry(monkeypatch):
    """Replaces the registry with the experiments a test registers."""
    reg: dict[str, Experiment] = {}
    monkeypatch.setattr(experiments, "REGISTRY", reg)
    monkeypatch.setattr(experiments, "_loaded", True)
    return reg


@pytest.fixture
def run_log(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    monkeypatch.setenv(RUN_LOG_ENV, str(log))
    return lambda: log.read_text().split() if log.exists() else []


def test_a_point_two_experiments_declare_runs_once(tmp_path, registry, run_log):
    registry["a"] = _experiment("a", [256, 512])
    registry["b"] = _experiment("b", [512, 1024])  # 512 is a's too
    batch = run_all(tmp_path, variant="tiny", jobs=1)
    ran = run_log()
    assert len(ran) == len(set(ran)) == 3
    a, b = batch.entries
    assert (a.ran, a.shared, a.reused) == (2, 0, 0) and (b.ran, b.shared, b.reused) == (1, 1, 0)
    assert not batch.failed
    with Store(tmp_path, read_only=True) as store:
        stored = store.raw()
    assert len(stored) == 3 and sorted(stored.experiment) == ["a", "a", "b"]
    # b's table holds the shared run, with a's statistics.
    ta, tb = (pd.read_csv(tmp_path / f"{i}.csv") for i in "ab")
    assert ta.set_index("run.quantum").cycles[512] == tb.set_index("run.quantum").cycles[512]
    assert json.loads((tmp_path / "b.provenance.json").read_text())["shared"] == 1
    assert "4 runs declared, 3 distinct (1 declared by more than one experiment)" in summary(batch)
    # Again: everything is in the store, nothing runs.
    again = run_all(tmp_path, variant="tiny", jobs=1)
    assert len(run_log()) == 3 and [(e.ran, e.reused) for e in again.entries] == [(0, 2), (0, 2)]


def test_a_failed_experiment_leaves_the_others_done(tmp_path, registry, capsys, monkeypatch):
    from pagelab import cli

    registry["a"] = _experiment("a", [256], fail=True)
    registry["b"] = _experiment("b", [256, 512])
    # A workload the core does not know: c fails before it runs.
    registry["c"] = _experiment("c", [256], base=dict(BASE, workload={"kind": "no-such-workload"}))
    batch = run_all(tmp_path, variant="tiny", jobs=1)
    assert [e.exp.id for e in batch.failed] == ["a", "c"]
    assert "deliberately broken" in batch.entries[0].error and "no-such-workload" in batch.entries[2].error
    assert (tmp_path / "b.csv").exists() and not (tmp_path / "a.csv").exists()
    # On the command line: the table, each failure on a line, exit status 1.
    monkeypatch.chdir(tmp_path)
    assert cli.main(["reproduce", "--all", "--tiny", "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert "b " in out and "FAILED" in out and "pagelab: error: a: analysis failed" in err


def test_all_saves_each_experiment_under_its_package(tmp_path, registry, monkeypatch):
    monkeypatch.setattr(results, "SAVED_VARIANT", "tiny")
    registry["a"] = _experiment("a", [256])
    registry["b"] = _experiment("b", [256, 512])
    root = tmp_path / "results"
    with pytest.raises(results.SaveRefused):
        run_all(tmp_path / "out", variant="tiny", jobs=1, save_results=root)  # one seed
    assert not (tmp_path / "out").exists()
    batch = run_all(tmp_path / "out", variant="tiny", seeds=3, jobs=1, save_results=root)
    assert not batch.failed
    for exp_id, runs in (("a", 3), ("b", 6)):
        record, frame = results.load(root / "testpkg" / exp_id)
        assert record["runs"] == len(frame) == runs
        assert (root / "testpkg" / exp_id / f"{exp_id}.csv").read_bytes() == (tmp_path / "out" / f"{exp_id}.csv").read_bytes()
    # b's runs of quantum 256 were a's.
    assert json.loads((root / "testpkg" / "b" / "provenance.json").read_text())["runs_reused"] == 3


def test_store_total_is_run_seconds_over_jobs(tmp_path, registry):
    registry["a"] = _experiment("a", [256, 512])
    run_all(tmp_path, variant="tiny", jobs=1)
    total = timings.store_total(tmp_path, jobs=2)
    with Store(tmp_path, read_only=True) as store:
        seconds = store.raw().seconds
    assert total.runs == 2 and total.seconds == pytest.approx(seconds.sum()) and total.jobs == 2
    assert f"{total.seconds:.1f} run seconds" in total.line()
    # `--all --list --out DIR` shows it beside the recorded times.
    r = run_cli("reproduce", "--all", "--list", "--out", tmp_path, "--jobs", "2")
    assert r.returncode == 0 and total.line() in r.stdout, r.stdout
    assert os.path.exists(tmp_path / "results.duckdb")
