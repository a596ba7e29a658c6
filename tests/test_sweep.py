"""Sweeps: expansion, resume after kill -9, dedupe, local vs Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pagelab.executors import RUN_LOG_ENV
from pagelab.store import Store
from pagelab.sweep import Sweep, expand, load_sweep, run_sweep

from conftest import live_children, pagelab_command, proc_stat, run_cli

pytest.importorskip("duckdb")

SWEEP_TOML = """
id = "t"
seeds = [1, 2]

[base]
machine = { phys_mem = "256MiB" }
run = { skip_init = true }

[grid.os]
policy = ["base", "thp"]

[grid]
size = [{ name = "small", "workload.accesses" = 20000 }, { name = "big", "workload.accesses" = 40000 }]

[[workloads]]
name = "g"
kind = "gups"
footprint = "32MiB"

[[workloads]]
kind = "stream"
footprint = "32MiB"
"""


def small_sweep(n_quanta: int = 3) -> Sweep:
    return Sweep(
        id="s",
        base={"machine": {"phys_mem": "256MiB"}, "run": {"skip_init": True}},
        grid={"os.policy": ["base", "thp"], "run.quantum": [256 * (i + 1) for i in range(n_quanta)]},
        workloads=[{"kind": "gups", "footprint": "32MiB", "accesses": 30_000}],
        seeds=[1],
    )


def test_load_and_expand(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(SWEEP_TOML)
    spec = load_sweep(path)
    assert spec.id == "t"
    assert list(spec.grid) == ["os.policy", "size"]
    points = expand(spec)
    assert len(points) == 2 * 2 * 2 * 2
    p = points[0]
    assert p.params == {"workload": "g", "os.policy": "base", "size": "small", "seed": 1}
    assert p.overrides == {"os.policy": "base", "workload.accesses": 20000, "workload.seed": 1, "run.seed": 1}
    assert {q.params["workload"] for q in points} == {"g", "stream"}


def test_bad_sweep_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[grid]\n"os.policy" = "thp"\n')
    r = run_cli("sweep", path, "--out", tmp_path / "o")
    assert r.returncode == 2
    assert "grid.os.policy" in r.stderr


def test_cli_sweep_and_rerun(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(SWEEP_TOML)
    out = tmp_path / "out"
    r = run_cli("sweep", path, "--out", out, "--jobs", "2", "--parquet", tmp_path / "t.parquet")
    assert r.returncode == 0, r.stderr
    assert "16 points: 16 run now, 0 already stored" in r.stdout
    import pandas as pd

    df = pd.read_csv(out / "t.csv")
    assert len(df) == 16
    assert {"workload", "os.policy", "size", "seed", "config_hash", "cycles"} <= set(df.columns)
    assert len(pd.read_parquet(tmp_path / "t.parquet")) == 16
    r = run_cli("sweep", path, "--out", out, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert "16 points: 0 run now, 16 already stored" in r.stdout


def test_identical_points_run_once(tmp_path):
    spec = Sweep(
        id="d",
        base={"machine": {"phys_mem": "256MiB"}, "workload": {"kind": "gups", "footprint": "32MiB", "accesses": 10_000}},
        grid={"run.quantum": [512, 512, 256]},
    )
    log = tmp_path / "runs.log"
    os.environ[RUN_LOG_ENV] = str(log)
    try:
        o = run_sweep(spec, tmp_path, jobs=1)
    finally:
        del os.environ[RUN_LOG_ENV]
    assert len(o.points) == 3 and o.ran == 2
    assert len(log.read_text().split()) == 2
    with Store(tmp_path) as s:
        assert len(s) == 2
    assert len(o.frame()) == 3


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_workers_exit_when_the_sweep_is_killed(tmp_path):
    """kill -9 of the sweep alone (not its process group): its pool workers
    notice and exit instead of running their grid to the end."""
    path = tmp_path / "w.toml"
    path.write_text(
        """
id = "w"
[base]
machine = { phys_mem = "256MiB" }
workload = { kind = "gups", footprint = "64MiB", accesses = 200000000 }
[grid]
"os.policy" = ["base", "thp"]
"""
    )
    log = tmp_path / "runs.log"
    env = dict(os.environ, **{RUN_LOG_ENV: str(log)})
    cmd = pagelab_command() + ["sweep", str(path), "--out", str(tmp_path / "out"), "--jobs", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (not log.exists() or len(log.read_text().split()) < 2):
            time.sleep(0.05)
        workers = live_children(proc.pid)
        assert len(workers) >= 2, "the pool's workers did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.time() + 15
        alive = workers
        while alive and time.time() < deadline:
            time.sleep(0.1)
            alive = [w for w in alive if proc_stat(w) is not None]
        assert not alive, f"workers {alive} outlived the sweep"
    finally:
        try:  # the workers share the sweep's new session and process group
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig,jobs", [(signal.SIGKILL, 1), (signal.SIGINT, 2)], ids=["kill-9", "ctrl-c"])
def test_resume_after_kill(tmp_path, sig, jobs):
    """Kill a sweep (kill -9, or Ctrl-C with a process pool) after its first
    runs landed; the restarted sweep stores every point exactly once and
    redoes no finished run."""
    n = 16
    grid = ", ".join(str(64 * (i + 1)) for i in range(n // 2))
    path = tmp_path / "k.toml"
    path.write_text(
        f"""
id = "k"
[base]
machine = {{ phys_mem = "256MiB" }}
workload = {{ kind = "gups", footprint = "64MiB", accesses = 600000 }}
[grid]
"os.policy" = ["base", "thp"]
"run.quantum" = [{grid}]
"""
    )
    out = tmp_path / "out"
    log = tmp_path / "runs.log"
    env = dict(os.environ, **{RUN_LOG_ENV: str(log)})
    cmd = pagelab_command() + ["sweep", str(path), "--out", str(out), "--jobs", str(jobs)]
    err = open(tmp_path / "stderr.txt", "w")
    # A shell without job control starts background jobs with SIGINT
    # ignored, and Python keeps an ignored SIGINT ignored: give the sweep
    # the default disposition, as an interactive Ctrl-C would find it.
    restore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True, preexec_fn=restore_sigint
    )
    try:
        deadline = time.time() + 60
        # Runs start in order: when run 3 + jobs starts, at least 3 finished
        # (with one job, they are stored; with a pool, nearly always).
        while time.time() < deadline and (not log.exists() or len(log.read_text().split()) < 3 + jobs):
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep finished before it could be killed; make it longer"
        time.sleep(0.1 * (jobs - 1))
        os.killpg(proc.pid, sig)
        rc = proc.wait(timeout=30)
        if sig == signal.SIGINT:
            assert rc == 130, (tmp_path / "stderr.txt").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        err.close()
    with Store(out) as s:
        finished = s.hashes()
    assert 1 <= len(finished) < n
    time.sleep(0.5)  # pool workers of a Ctrl-C'd sweep finish exiting
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    starts = log.read_text().split()
    with Store(out) as s:
        raw = s.raw()
    assert len(raw) == n and raw.config_hash.is_unique
    for h in finished:
        assert starts.count(h) == 1, "a finished run was redone"
    # Every point ran at least once, and only runs in flight at the kill twice.
    assert set(starts) == set(raw.config_hash)
    assert len(starts) - n <= 2 * jobs


def test_local_jobs_give_identical_rows(tmp_path):
    a = run_sweep(small_sweep(), tmp_path / "a", jobs=1).frame()
    b = run_sweep(small_sweep(), tmp_path / "b", jobs=2).frame()
    cols = [c for c in a.columns if c != "seconds"]
    assert a[cols].equals(b[cols])


@pytest.mark.ray
def test_local_and_ray_give_identical_rows(tmp_path):
    ray = pytest.importorskip("ray")
    a = run_sweep(small_sweep(2), tmp_path / "a", jobs=2).frame()
    try:
        # A local Ray instance with 2 CPUs, started and stopped by the executor.
        b = run_sweep(small_sweep(2), tmp_path / "b", jobs=2, executor="ray").frame()
        assert not ray.is_initialized(), "the executor leaves the Ray instance it started running"
    finally:
        ray.shutdown()
    cols = [c for c in a.columns if c != "seconds"]
    assert len(b) == len(a) > 0
    assert a[cols].equals(b[cols])
