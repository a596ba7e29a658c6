"""Executors: run a sweep's configurations somewhere and hand each result
back to the parent, which alone writes the results store.

- `LocalExecutor(jobs)`: `jobs` worker processes (default: every core),
  each fed one task at a time over its own pipe. Workers are spawned, not
  forked, so none of them inherits the parent's open DuckDB file.
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


def _worker_main(conn, parent: int, host_mem: int | None = None) -> None:
    """A local worker: runs the tasks the parent sends down `conn` until it
    sends None or goes away. Ctrl-C is left to the parent, which stops the
    workers; and a worker exits when the parent is gone (killed with
    SIGKILL, it cannot stop them, and a sweep's workers would run on for
    hours). The simulator releases the GIL, so the watching thread runs
    during a run."""
    import signal
    import threading
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if host_mem is not None:
        os.environ[HOST_MEM_VAR] = str(host_mem)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="exit-with-parent").start()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone: nothing to say, no one to say it to
        if task is None:
            return
        try:
            res = run_task(task)
        except Exception:
            # Not a simulator error: a bug, shown in the parent with its
            # traceback from here.
            res = {"hash": task[0], "crash": traceback.format_exc()}
        try:
            conn.send(res)
        except OSError:
            return  # the parent died during the run (a broken pipe)


def _exit_with_parent(parent: int, poll_seconds: float = 0.5) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(poll_seconds)
    os._exit(1)


class WorkerDied(RuntimeError):
    """A local worker process ended in the middle of a run (killed, or out
    of memory) or raised something other than a simulator error."""


class LocalExecutor:
    """`jobs` spawned worker processes (spawned, not forked: none inherits
    the parent's open DuckDB file), each with its own pipe; the parent
    sends one task at a time to each and waits on all pipes at once.

    Why not `concurrent.futures.ProcessPoolExecutor`, used before: after
    Ctrl-C the workers are terminated mid-run, and the pool's management
    thread, which the interpreter joins at exit, has known hangs then
    (CPython gh-132969); a sweep on it once failed to exit after Ctrl-C in
    CI (not reproduced here). Here the parent has no thread: a worker
    that dies closes its pipe, which the parent reads as end of file."""

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
        workers: list[_Worker] = []
        n = min(self.jobs, len(tasks))
        share = host_memory_share(n)
        try:
            for _ in range(n):
                workers.append(_Worker(share))
            _dispatch(workers, tasks, on_result)
            for w in workers:
                w.stop()
        except BaseException:
            # Ctrl-C (or a failure in the parent): stop at once; the runs in
            # flight are lost, and only they.
            for w in workers:
                w.stop(kill=True)
            raise


HOST_MEM_VAR = "PAGELAB_HOST_MEM"


def host_memory_share(workers: int) -> int | None:
    """Each of `workers` parallel runs' share of the host memory a run may
    use (the core refuses a run whose host structures would exceed it)."""
    from pagelab import _pagelab

    limit = _pagelab.host_memory_limit()
    return None if limit is None else limit // workers


class _Worker:
    def __init__(self, host_mem: int | None = None):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        # daemon: should the parent die of an exception before stopping it,
        # multiprocessing terminates it at exit.
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid(), host_mem), daemon=True, name="pagelab-worker")
        try:
            self.proc.start()
        finally:
            # The parent keeps only its end: when the worker dies, its end
            # closes and the parent reads end of file.
            child.close()
        self.task: Task | None = None

    def send(self, task: Task) -> None:
        self.task = task
        self.conn.send(task)

    def receive(self) -> dict[str, Any]:
        try:
            res = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(timeout=5)
            raise WorkerDied(
                f"a worker process ended (exit code {self.proc.exitcode}) while running configuration {self.task[0] if self.task else '?'}"
            ) from None
        if "crash" in res:
            raise WorkerDied(f"configuration {res['hash']} raised in its worker process:\n{res['crash']}")
        self.task = None
        return res

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.terminate()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass  # already gone
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _dispatch(workers: list[_Worker], tasks: Sequence[Task], on_result: OnResult) -> None:
    """Keeps every worker busy until `tasks` are done; results go to
    `on_result` as they arrive, after the worker has its next task (what
    `on_result` does, such as analyzing an experiment whose runs are all
    in, leaves no worker idle)."""
    from multiprocessing.connection import wait

    todo = iter(tasks)
    busy: dict[Any, _Worker] = {}
    for w in workers:
        t = next(todo, None)
        if t is None:
            break
        w.send(t)
        busy[w.conn] = w
    while busy:
        for conn in wait(list(busy)):
            w = busy.pop(conn)
            res = w.receive()
            t = next(todo, None)
            if t is not None:
                w.send(t)
                busy[conn] = w
            on_result(res)


class ExecutorUnavailable(Exception):
    """The executor asked for cannot run here (Ray not installed): bad
    input, exit status 2 on the command line."""


_NO_RAY = "--executor ray: Ray is not installed (pip install 'pagelab[ray]', or use --executor local)"


class RayExecutor:
    name = "ray"

    def __init__(self, jobs: int | None = None, address: str | None = None):
        # Checked before any run, so that a sweep fails at once.
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ExecutorUnavailable(_NO_RAY) from None
        self.jobs = jobs
        self.address = address

    def run(self, tasks: Sequence[Task], on_result: OnResult) -> None:
        if not tasks:
            return
        try:
            import ray
        except ImportError:
            raise ExecutorUnavailable(_NO_RAY) from None
        started = not ray.is_initialized()
        if started:
            import logging

            # No dashboard, no workers' logs, no "Started a local Ray instance".
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
            if self.address:
                kwargs["address"] = self.address
            else:
                # A local instance shares this host's memory among its
                # workers, as the local executor's do.
                cpus = self.jobs or os.cpu_count() or 1
                kwargs["num_cpus"] = cpus
                share = host_memory_share(cpus)
                if share is not None:
                    kwargs["runtime_env"] = {"env_vars": {HOST_MEM_VAR: str(share)}}
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
