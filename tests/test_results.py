"""Results as committed data: `pagelab reproduce ID --save-results` and the
runs committed under results/ (pagelab.results)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pagelab import experiments, results

from conftest import run_cli

pytest.importorskip("duckdb")

REPO = Path(__file__).resolve().parent.parent
#: A small experiment to save: 8 points of one-line walks, seconds in all.
SMALL_EXP = "virt-walks"


def test_refuses_a_quick_run_before_running(tmp_path):
    out, root = tmp_path / "out", tmp_path / "results"
    r = run_cli("reproduce", SMALL_EXP, "--quick", "--out", out, "--save-results", root)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "only full runs" in r.stderr, r.stderr
    # Refused before anything ran: no store, nothing saved.
    assert not out.exists() and not root.exists()


def test_refuses_fewer_than_three_seeds(tmp_path):
    out, root = tmp_path / "out", tmp_path / "results"
    r = run_cli("reproduce", SMALL_EXP, "--seeds", "2", "--out", out, "--save-results", root)
    assert r.returncode == 2
    assert "at least 3 seeds" in r.stderr and "would run 2" in r.stderr, r.stderr
    assert not out.exists() and not root.exists()


@pytest.fixture
def saved_tiny(tmp_path, monkeypatch):
    """SMALL_EXP's tiny variant with 3 seeds, saved as if it were full (the
    full variant would take minutes): the writer's own checks see 'tiny' as
    the saved variant."""
    monkeypatch.setattr(results, "SAVED_VARIANT", "tiny")
    root = tmp_path / "results"
    experiments.reproduce(SMALL_EXP, tmp_path / "out", variant="tiny", seeds=3, jobs=2, save_results=root)
    return root / "virt" / SMALL_EXP


def test_saved_run_holds_its_data_and_provenance(saved_tiny, tmp_path):
    d = saved_tiny
    record, runs = results.load(d)
    assert sorted(p.name for p in d.iterdir()) == sorted(record["files"] + [results.PROVENANCE])
    assert {f"{SMALL_EXP}.csv", results.RUNS} <= set(record["files"])
    # The experiment's table is the one reproduce wrote.
    assert (d / f"{SMALL_EXP}.csv").read_text() == (tmp_path / "out" / f"{SMALL_EXP}.csv").read_text()
    assert record["experiment"] == SMALL_EXP and record["package"] == "virt"
    assert record["variant"] == "tiny" and record["seeds"] == [1, 2, 3]
    # Every point with each seed, every run named by its configuration.
    points = len(pd.read_csv(d / f"{SMALL_EXP}.csv"))
    assert len(runs) == record["runs"] == 3 * points
    assert record["config_hash"] == results.experiment_hash(runs.config_hash)
    assert record["runs_now"] == len(runs) and record["runs_reused"] == 0
    assert record["wall_clock_seconds"] > 0 and record["run_seconds_total"] > 0
    assert record["commit"] is None or len(record["commit"]) == 40
    assert {"host", "cpu", "cpus", "memory_gib", "virtualized"} <= set(record["machine"])
    # Every statistic of every run: the frame the analysis was given.
    assert {"walk.mem_refs", "cycles", "os.chp.attempts"} <= set(runs.columns)
    assert results.problems(d) == []
    assert d.stat().st_mode & 0o755 == 0o755, "readable by all, as mkdir makes it"


def test_committed_run_checks_catch_bad_provenance(saved_tiny, monkeypatch):
    d = saved_tiny
    monkeypatch.setattr(results, "SAVED_VARIANT", "full")
    assert any("variant 'tiny'" in p for p in results.problems(d))
    monkeypatch.setattr(results, "SAVED_VARIANT", "tiny")
    record = json.loads((d / results.PROVENANCE).read_text())
    (d / results.PROVENANCE).write_text(json.dumps(dict(record, seeds=[1, 2])))
    assert any("2 seed(s), fewer than 3" in p for p in results.problems(d))
    (d / results.PROVENANCE).write_text(json.dumps(record))
    runs = pd.read_csv(d / results.RUNS)
    runs.iloc[1:].to_csv(d / results.RUNS, index=False)
    found = results.problems(d)
    assert any("without every seed" in p for p in found) and any("config_hash" in p for p in found)


def test_saving_again_replaces_whole_or_not_at_all(saved_tiny, tmp_path, monkeypatch):
    d = saved_tiny
    before = {p.name: p.read_bytes() for p in d.iterdir()}

    def broken(path, data):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(results, "write_atomic", broken)
    with pytest.raises(OSError):
        experiments.reproduce(SMALL_EXP, tmp_path / "out", variant="tiny", seeds=3, save_results=d.parent.parent)
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    assert [p.name for p in d.parent.iterdir()] == [SMALL_EXP], "no temporary directory left behind"
    monkeypatch.undo()
    monkeypatch.setattr(results, "SAVED_VARIANT", "tiny")
    experiments.reproduce(SMALL_EXP, tmp_path / "out", variant="tiny", seeds=3, save_results=d.parent.parent)
    record, _ = results.load(d)
    assert record["runs_reused"] == record["runs"], "the second save reused the stored runs"
    assert [p.name for p in d.parent.iterdir()] == [SMALL_EXP]


def test_committed_runs_are_full_with_three_seeds():
    """Every run under results/ is a full one with three seeds or more,
    saved under its own package and experiment."""
    packages = {results.package_of(e): e for e in experiments.all_experiments()}
    found = []
    for saved in results.saved_dirs(REPO / "results"):
        found += results.problems(saved)
        if saved.parent.name not in packages or saved.name not in experiments.REGISTRY:
            found.append(f"{saved}: no such package or experiment")
    assert found == []
