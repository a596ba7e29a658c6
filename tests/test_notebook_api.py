"""What a notebook uses: a run that shows itself briefly and saves what the
command line saves, `pagelab.run_sweep` returning a table, `pagelab.Store`
at the top level, and epochs marked with their phase."""

from __future__ import annotations

import json
import os
import subprocess

import pandas as pd
import pytest

import pagelab
from conftest import pagelab_command, run_cli, small, write_toml


def test_a_run_shows_a_short_summary_not_its_statistics():
    r = pagelab.run(small(os={"policy": "thp"}))
    text = repr(r)
    assert text.startswith("<pagelab.Result gups, os.policy = thp, 1 core,")
    assert "L2 TLB misses (walks)" in text and f"{r.stats['dtlb.l2.misses']:,}" in text
    assert len(text) < 2000 and len(str(r.stats)) > 5 * len(text)
    page = r._repr_html_()
    assert page.count("<tr>") == len(r.summary()) and f"{len(r.stats)} statistics" in page


def test_run_with_out_writes_what_the_command_line_writes(tmp_path, small_toml):
    r = pagelab.run(small_toml, out=tmp_path / "py")
    cli = run_cli("run", small_toml, "--out", tmp_path / "cli")
    assert cli.returncode == 0, cli.stderr
    names = sorted(p.name for p in (tmp_path / "py").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert names == ["config.resolved.toml", "provenance.json", "stats.json"]
    for name in ("stats.json", "config.resolved.toml"):
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text()
    assert json.loads((tmp_path / "py" / "stats.json").read_text()) == r.stats
    prov = json.loads((tmp_path / "py" / "provenance.json").read_text())
    assert prov["pagelab"] == pagelab.__version__ and prov["commit"] and prov["host"] and prov["date"].endswith("Z")


def test_run_sweep_returns_the_table_and_writes_what_pagelab_sweep_writes(tmp_path):
    grid = {"os.policy": ["base", "thp"]}
    df = pagelab.run_sweep(base=small(), grid=grid, seeds=[1, 2], id="pols", out=tmp_path / "s", jobs=1)
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert list(df.columns[:4]) == ["workload", "os.policy", "seed", "config_hash"]
    assert (df[df["os.policy"] == "thp"]["mem.mapped.2m"] > 0).all()
    assert pd.read_csv(tmp_path / "s" / "pols.csv")["config_hash"].tolist() == df.config_hash.tolist()
    prov = json.loads((tmp_path / "s" / "pols.provenance.json").read_text())
    assert (prov["kind"], prov["points"], prov["ran"], prov["reused"]) == ("sweep", 4, 4, 0)
    # The same from a SWEEP.toml, into the same store: nothing runs again.
    sweep = tmp_path / "pols.toml"
    sweep.write_text('seeds = [1, 2]\n[grid]\n"os.policy" = ["base", "thp"]\n[base]\n'
                     'machine = { phys_mem = "256MiB" }\nworkload = { kind = "gups", footprint = "32MiB", accesses = 40_000 }\n')
    again = pagelab.run_sweep(sweep, out=tmp_path / "s")
    assert again.config_hash.tolist() == df.config_hash.tolist()
    assert json.loads((tmp_path / "s" / "pols.provenance.json").read_text())["ran"] == 0
    with pagelab.Store(tmp_path / "s") as store:
        assert len(store) == 4


def test_a_sweep_whose_runs_fail_raises_after_storing_the_others(tmp_path):
    with pytest.raises(pagelab.SimulationError, match="1 of 2 runs of sweep bad failed"):
        pagelab.run_sweep(base=small(), grid={"workload.footprint": ["32MiB", "512MiB"]}, id="bad", out=tmp_path, jobs=1)
    with pagelab.Store(tmp_path) as store:
        assert len(store) == 1


def test_a_sweep_key_written_below_a_workload_is_named_with_where_it_belongs(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text('[base]\nmachine = { phys_mem = "256MiB" }\n\n[[workloads]]\nkind = "gups"\nfootprint = "32MiB"\n\n'
                     "seeds = [1, 2, 3]\n")
    r = run_cli("sweep", sweep, "--out", tmp_path / "out")
    assert r.returncode == 2
    assert "workloads[0].seeds" in r.stderr and "before the first [[workloads]]" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_epochs_are_marked_init_warm_up_and_measured():
    # The first-touch pass over 64 MiB is 16,384 stores (64 instructions
    # each: about 1 M), then warm-up to 1.5 M instructions, then the
    # measured updates (3 instructions each).
    epoch = 100_000
    cfg = small(machine={"phys_mem": "512MiB"}, run={"epoch": epoch, "skip_init": True, "warmup": 1_500_000},
                workload={"kind": "gups", "footprint": "64MiB", "accesses": 300_000})
    r = pagelab.run(cfg)
    every = r.timeseries_frame(all=True)
    phases = list(dict.fromkeys(every.phase))
    assert phases == ["init", "warm-up", "measured"], phases
    # Core 0's position never goes back; the statistics restart at the
    # first counted row.
    assert every["epoch.instructions"].is_monotonic_increasing
    first = every.counted.idxmax()
    assert every.instructions[first] < every.instructions[first - 1]
    measured = r.timeseries_frame()
    assert measured.counted.all() and len(measured) == every.counted.sum()
    assert measured.instructions.iloc[-1] <= r.stats["instructions"]
    # Without a reset, the first-touch pass is counted and marked.
    plain = pagelab.run(small(run={"epoch": 4_000}))
    frame = plain.timeseries_frame()
    assert frame.counted.all() and frame.phase.iloc[0] == "init" and frame.phase.iloc[-1] == "measured"


def test_the_top_level_exports_what_a_notebook_needs():
    for name in ("run", "run_sweep", "Store", "diff", "Result"):
        assert name in pagelab.__all__ and getattr(pagelab, name)
    import importlib

    module = importlib.import_module("pagelab.sweep")
    assert pagelab.run_sweep is not module.run_sweep  # the module stays a module


def test_version_and_presets(tmp_path):
    r = run_cli("--version")
    assert r.returncode == 0
    assert r.stdout.startswith(f"pagelab {pagelab.__version__} (commit ") and r.stdout.count("\n") == 1
    # One line per preset, in any terminal: name, machine, source.
    for columns in ("200", "80"):
        p = subprocess.run(pagelab_command() + ["presets"], capture_output=True, text=True,
                           env=dict(os.environ, COLUMNS=columns, NO_COLOR="1", TERM="dumb"))
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert len(lines) == len(pagelab.presets())
        for name, line in zip(pagelab.presets(), lines):
            machine, source = pagelab._pagelab.preset_about(name)
            assert line.split()[0] == name and line.endswith(f"{machine}; values from {source}"), line


def test_bad_config_to_run_with_out_writes_nothing(tmp_path):
    path = write_toml(tmp_path / "c.toml", small(os={"policy": "nonesuch"}))
    with pytest.raises(pagelab.ConfigError):
        pagelab.run(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
