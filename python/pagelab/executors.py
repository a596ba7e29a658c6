"""Executors: run a sweep's configurations somewhere and hand each result
back to the parent, which alone writes the results store.

- `LocalExecutor(jobs)`: a `ProcessPoolExecutor` with `jobs` worker
  processes (default: every core). Workers are spawned, not forked, so none
  of them inherits the parent's open DuckDB file.
- `RayExecutor(jobs, address)`: the same on a Ray cluster
  (`ray.init(address=...)`) or a local Ray instance (`num_cpus=jobs`, no
  dashboard), shut down again when the sweep ends if the executor started
  it; `ray` is imported only here, when it is asked for (`pip install
  pagelab[ray]`).

Both call `run_task` on a task `(config_hash, config_dict, overrides)` and
get back a plain dict, so both give identical rows.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

#: A task: (config hash, configuration dict, `KEY=VALUE` overrides).
Task = tuple[str, dict, list[str]]
OnResult = Callable[[dict], None]

#: When set, every worker appends the hash of each run it starts to this
#: file (one line per run): the tests count runs with it.
RUN_LOG_ENV = "PAGELAB_RUN_LOG"


def run_task(task: Task) -> dict[str, Any]:
    """Runs one configuration. Never raises a simulator error: it comes
    back as `{"hash", "error"}` so that every executor reports it alike."""
    import pagelab

    h, config, items = task
    log = os.environ.get(RUN_LOG_ENV)
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (h + "\n").encode())
        finally:
            os.close(fd)
    try:
        r = pagelab.run(config, set=items)
    except pagelab.PagelabError as e:
        return {"hash": h, "error": f"{type(e).__name__}: {e}"}
    return {"hash": h, "stats": r.stats, "config_toml": r.config_toml, "seconds": r.seconds}


def _worker_init(parent: int) -> None:
    """Workers leave Ctrl-C to the parent, which stops them; and they exit
    when the parent is gone (killed with SIGKILL, it cannot stop them, and
    a sweep's workers would run on for hours). The simulator releases the
    GIL, so the watching thread runs during a run."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="exit-with-parent").start()


def _exit_with_parent(parent: int, poll_seconds: float = 0.5) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(poll_seconds)
    os._exit(1)


class LocalExecutor:
    name = "local"

    def __init__(self, jobs: int | None = None):
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def run(self, tasks: Sequence[Task], on_result: OnResult) -> None:
        if not tasks:
            return
        if self.jobs == 1:
            for t in tasks:
                on_result(run_task(t))
            return
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        pool = ProcessPoolExecutor(
            max_workers=min(self.jobs, len(tasks)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        try:
            pending = {pool.submit(run_task, t) for t in tasks}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    on_result(f.result())
        except BaseException:
            # Ctrl-C (or a failure in the parent): stop at once; the runs in
            # flight are lost, and only they.
            procs = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
            raise
        pool.shutdown(wait=True)


class RayExecutor:
    name = "ray"

    def __init__(self, jobs: int | None = None, address: str | None = None):
        self.jobs = jobs
        self.address = address

    def run(self, tasks: Sequence[Task], on_result: OnResult) -> None:
        if not tasks:
            return
        try:
            import ray
        except ImportError:
            raise RuntimeError("the ray executor needs Ray: pip install 'pagelab[ray]'") from None
        started = not ray.is_initialized()
        if started:
            import logging

            # No dashboard, no workers' logs, no "Started a local Ray instance".
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
            if self.address:
                kwargs["address"] = self.address
            elif self.jobs:
                kwargs["num_cpus"] = self.jobs
            ray.init(**kwargs)
        try:
            remote = ray.remote(num_cpus=1)(run_task)
            pending = [remote.remote(t) for t in tasks]
            try:
                while pending:
                    ready, pending = ray.wait(pending, num_returns=1)
                    for ref in ready:
                        on_result(ray.get(ref))
            except BaseException:
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise
        finally:
            if started:
                # A local instance we started stops with the sweep (its
                # raylet and workers would otherwise outlive it until the
                # interpreter exits); a caller's own ray.init is left alone.
                ray.shutdown()


def make_executor(kind: str = "local", jobs: int | None = None, address: str | None = None):
    if kind == "local":
        return LocalExecutor(jobs)
    if kind == "ray":
        return RayExecutor(jobs, address)
    raise ValueError(f"unknown executor {kind!r} (local or ray)")
