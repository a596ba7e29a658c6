"""The local executor's worker processes: results, failures, and that no
worker outlives a run that failed."""

import os
import signal
import threading
import time

import pytest

from pagelab.executors import LocalExecutor, WorkerDied

from conftest import live_children

QUICK = {"machine": {"phys_mem": "64MiB"}, "workload": {"kind": "gups", "footprint": "8MiB", "accesses": 20000}}
LONG = {"machine": {"phys_mem": "256MiB"}, "workload": {"kind": "gups", "footprint": "64MiB", "accesses": 50_000_000}}


def _workers() -> list[int]:
    """Live worker processes of this process (spawned ones:
    multiprocessing's resource tracker, also a child, is not one)."""

    def spawned(pid: int) -> bool:
        try:
            return b"spawn_main" in open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            return False

    return [p for p in live_children(os.getpid()) if spawned(p)]


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


def test_every_task_comes_back_once():
    results = []
    tasks = [(f"h{i}", QUICK, [f"workload.seed={i}"]) for i in range(5)]
    LocalExecutor(2).run(tasks, results.append)
    assert sorted(r["hash"] for r in results) == [f"h{i}" for i in range(5)]
    assert all("stats" in r for r in results)
    # Different seeds, different runs: the results are not one run's copies.
    assert len({r["stats"]["cycles"] for r in results}) > 1
    assert _workers() == []


def test_a_simulator_error_comes_back_as_a_result():
    results = []
    bad = {"machine": {"phys_mem": "64MiB"}, "workload": {"kind": "no-such-kind"}}
    LocalExecutor(2).run([("ok", QUICK, []), ("bad", bad, [])], results.append)
    by_hash = {r["hash"]: r for r in results}
    assert "stats" in by_hash["ok"]
    assert "no-such-kind" in by_hash["bad"]["error"]
    assert _workers() == []


def test_a_crash_in_a_worker_names_the_run_and_stops_the_others():
    # A task of the wrong shape: a ValueError in the worker, not a simulator
    # error (a configuration of the wrong type is one now, a ConfigError).
    tasks = [("long", LONG, []), ("crash", QUICK, [], "a field too many")]
    with pytest.raises(WorkerDied, match=r"(?s)configuration crash raised.*ValueError"):
        LocalExecutor(2).run(tasks, lambda r: None)
    assert _workers() == [], "the worker still running was not stopped"


def test_a_worker_killed_mid_run_is_an_error_not_a_hang():
    def kill_a_worker():
        deadline = time.time() + 30
        while time.time() < deadline:
            kids = _workers()
            if len(kids) == 2:
                time.sleep(1.0)  # both are running their long task
                os.kill(kids[0], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    try:
        with pytest.raises(WorkerDied, match=r"ended \(exit code -9\) while running configuration (a|b)"):
            LocalExecutor(2).run([("a", LONG, []), ("b", LONG, [])], lambda r: None)
    finally:
        killer.join()
    assert _workers() == []
