"""Outputs (issue 39): every file pagelab writes goes through one helper
(`pagelab_core::outfile`), which refuses what is not a regular file,
writes whole or not at all, removes its temporary file on an error or a
signal, and names the user's path; a capture never hangs or leaves a
cut-short trace. FIFOs and device nodes are made in the test's temporary
directory, never taken from /dev. Each case is listed in
docs/reliability.md."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SMALL, TIMEOUT_SCALE, pagelab_command, run_cli, small, write_toml
from test_reliability import one_error_line

needs_valgrind = pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("gcc")), reason="needs valgrind and gcc")


def listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def make_device(path: Path) -> None:
    """A character device like /dev/null (1, 3), made here: as root only."""
    if os.geteuid() != 0:
        pytest.skip("a device node can be made only as root")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))


def special(kind: str, path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        make_device(path)
    else:
        path.mkdir()
    return path


def still(kind: str, path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "dir": stat.S_ISDIR}[kind](mode)


LACKEY = "==1== Lackey\nI  04001000,3\n L 1ffefff000,8\n S 1ffefff008,8\n"

WHAT = {"fifo": "named pipe", "device": "is a device", "dir": "is a directory"}


# --- targets that are not regular files ----------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "dir"])
def test_an_export_over_a_fifo_a_device_or_a_directory_is_refused(tmp_path, kind):
    cfg = write_toml(tmp_path / "c.toml", SMALL)
    target = special(kind, tmp_path / "refs.txt")
    proc = run_cli("run", cfg, "--export-phys", target, timeout=60)
    line = one_error_line(proc, 2, "refs.txt", WHAT[kind])
    assert ".tmp" not in line and ".partial" not in line, "names the user's path only"
    assert still(kind, target), "left as it was"
    assert listing(tmp_path) == ["c.toml", "refs.txt"]


@pytest.mark.parametrize("kind", ["fifo", "device", "dir"])
def test_a_conversion_over_a_fifo_a_device_or_a_directory_is_refused(tmp_path, kind):
    src = tmp_path / "t.lackey"
    src.write_text(LACKEY)
    target = special(kind, tmp_path / "t.pgl")
    line = one_error_line(run_cli("trace", "convert", src, target), 2, "t.pgl", WHAT[kind])
    assert ".tmp" not in line
    assert still(kind, target)
    assert listing(tmp_path) == ["t.lackey", "t.pgl"], "no full-size temporary file left beside it"


def test_a_conversion_onto_its_own_input_is_refused(tmp_path):
    src = tmp_path / "t.lackey"
    src.write_text(LACKEY)
    one_error_line(run_cli("trace", "convert", src, src), 2, "t.lackey", "is the input")
    assert src.read_text() == LACKEY


def test_an_output_through_a_link_replaces_the_file_and_keeps_the_link(tmp_path):
    src = tmp_path / "t.lackey"
    src.write_text(LACKEY)
    real = tmp_path / "real.pgl"
    real.write_text("old")
    (tmp_path / "link.pgl").symlink_to(real)
    assert run_cli("trace", "convert", src, tmp_path / "link.pgl").returncode == 0
    assert (tmp_path / "link.pgl").is_symlink() and real.read_bytes()[:4] != b"old"


# --- signals ---------------------------------------------------------------


def _open_writer(fifo: Path) -> int | None:
    """The FIFO's write end, opened without blocking: None (ENXIO) while no
    reader has it open."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None


def _wait_for(pred, seconds: float, step: float = 0.01):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    return None


def _kill_group(proc) -> None:
    """Whatever of the test's process group is left (nothing, normally)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _hidden(d: Path) -> list[str]:
    return [n for n in os.listdir(d) if n.startswith(".")]


def test_sigterm_during_an_export_leaves_no_temporary_file(tmp_path):
    cfg = write_toml(tmp_path / "c.toml", small(workload={"accesses": 50_000_000}))
    proc = subprocess.Popen(pagelab_command() + ["run", str(cfg), "--export-phys", str(tmp_path / "refs.txt")],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: _hidden(tmp_path), 60), "the export's temporary file never appeared"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert listing(tmp_path) == ["c.toml"], "temporary export removed, nothing at the target"


def test_sigterm_during_a_graph_cache_write_leaves_no_temporary_file(tmp_path):
    cache = tmp_path / "cache"
    # Scale 20, the smallest cached, of three seeds (three keys): the
    # signal must land while a cache file is being written, which takes
    # a fraction of a second; one of the tries does.
    for seed in (1, 2, 3):
        cfg = write_toml(tmp_path / "g.toml", {"machine": {"phys_mem": "2GiB"},
                                              "workload": {"kind": "graph", "scale": 20, "accesses": 1000, "seed": seed}})
        env = dict(os.environ, PAGELAB_GRAPH_CACHE=str(cache))
        proc = subprocess.Popen(pagelab_command() + ["run", str(cfg)], env=env, stderr=subprocess.PIPE, text=True)
        try:
            caught = _wait_for(lambda: cache.is_dir() and _hidden(cache) and proc.send_signal(signal.SIGTERM) is None, 120, 0.002)
            proc.wait(timeout=60)
        finally:
            proc.kill()
        if caught and proc.returncode == -signal.SIGTERM:
            break
    else:
        pytest.fail("no SIGTERM landed during a cache write in three tries")
    assert _hidden(cache) == [], "the temporary graph file was removed"


def test_a_second_run_into_the_same_out_removes_only_its_own_stale_files(tmp_path):
    out = tmp_path / "out"
    cfg = write_toml(tmp_path / "c.toml", small(run={"epoch": 10_000}))
    assert run_cli("run", cfg, "--out", out).returncode == 0
    assert (out / "timeseries.json").exists()
    (out / "notes.txt").write_text("mine")
    plain = write_toml(tmp_path / "p.toml", SMALL)
    assert run_cli("run", plain, "--out", out).returncode == 0
    assert listing(out) == ["config.resolved.toml", "notes.txt", "provenance.json", "stats.json"], "the first run's series is gone"


def test_run_out_over_a_file_or_a_fifo_inside_is_refused_before_running(tmp_path):
    cfg = write_toml(tmp_path / "c.toml", small(workload={"accesses": 50_000_000}))
    (tmp_path / "file").write_text("x")
    start = time.monotonic()
    one_error_line(run_cli("run", cfg, "--out", tmp_path / "file", timeout=60), 2, "--out", "not a directory")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "stats.json")
    one_error_line(run_cli("run", cfg, "--out", out, timeout=60), 2, "stats.json", "named pipe")
    assert time.monotonic() - start < 30, "refused before the (long) run"
    assert stat.S_ISFIFO(os.lstat(out / "stats.json").st_mode)


# --- trace capture ---------------------------------------------------------


def _capture(tmp_path: Path, *program, propagate=False, timeout=120):
    """Runs a capture with its temporary directory under tmp_path/tmp."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    args = ["trace", "capture", *(["--propagate-status"] if propagate else []), "--out", str(tmp_path / "n.pgl"), "--"]
    return subprocess.run(pagelab_command() + args + [str(p) for p in program], env=env,
                          capture_output=True, text=True, timeout=timeout)


@needs_valgrind
def test_capturing_a_missing_or_unrunnable_program_fails_at_once(tmp_path):
    one_error_line(_capture(tmp_path, "/nonexistent/prog", timeout=60), 2, "/nonexistent/prog", "not found")
    script = tmp_path / "noexec"
    script.write_text("#!/bin/sh\n")
    one_error_line(_capture(tmp_path, script, timeout=60), 2, "noexec", "not executable")
    # Executable, but Valgrind cannot start it (its interpreter is missing):
    # it never opens its log, and the reader must not wait for it forever.
    bad = tmp_path / "badinterp"
    bad.write_text("#!/nonexistent/interpreter\n")
    bad.chmod(0o755)
    proc = _capture(tmp_path, bad, timeout=60)
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert "lackey.fifo" not in proc.stderr, "names the program, not the FIFO"
    assert listing(tmp_path) == ["badinterp", "noexec", "tmp"] and listing(tmp_path / "tmp") == []


def _compile(tmp_path: Path, name: str, code: str) -> Path:
    src, exe = tmp_path / f"{name}.c", tmp_path / name
    src.write_text(code)
    subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
    return exe


CRASH = r"""
#include <signal.h>
#include <stdlib.h>
int main(void) { volatile char *p = malloc(1 << 16); for (int i = 0; i < (1 << 16); i += 4096) p[i] = 1; raise(SIG); return 0; }
"""


@needs_valgrind
def test_a_crash_keeps_its_trace_and_propagates_as_a_shell_would(tmp_path):
    exe = _compile(tmp_path, "segv", CRASH.replace("SIG", "SIGSEGV"))
    proc = _capture(tmp_path, exe, propagate=True, timeout=300)
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr  # not 245
    assert "killed by SIGSEGV; its trace is kept" in proc.stdout
    assert (tmp_path / "n.pgl").exists()


@needs_valgrind
def test_a_program_stopped_by_a_signal_leaves_no_trace(tmp_path):
    exe = _compile(tmp_path, "killed", CRASH.replace("SIG", "SIGKILL"))
    proc = _capture(tmp_path, exe, timeout=300)
    one_error_line(proc, 1, "cut short", "SIGKILL")
    assert not (tmp_path / "n.pgl").exists(), "a cut-short capture writes no valid-looking trace"
    assert listing(tmp_path / "tmp") == []


@needs_valgrind
def test_sigterm_during_a_capture_leaves_no_fifo_directory_or_trace(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen(pagelab_command() + ["trace", "capture", "--out", str(tmp_path / "n.pgl"), "--", "sleep", "5"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert _wait_for(lambda: any(tmp.glob("pagelab-capture-*/lackey.fifo")), 60)
        time.sleep(0.5)
        from conftest import live_children

        children = live_children(proc.pid)
        assert children, "Valgrind runs"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert _wait_for(lambda: not any(Path(f"/proc/{c}").exists() for c in children), 30), "Valgrind ends with it"
    finally:
        _kill_group(proc)
    assert proc.returncode == -signal.SIGTERM
    assert listing(tmp) == [], "the capture's directory and FIFO are removed"
    assert listing(tmp_path) == ["tmp"], "no trace, no temporary file"


# --- sweeps ----------------------------------------------------------------


SWEEP = """id = "s"
[base.machine]
phys_mem = "256MiB"
[base.workload]
kind = "gups"
footprint = "4MiB"
accesses = 2000
[grid]
"workload.footprint" = ["4MiB", "1GiB"]
"""


def test_a_failed_point_is_printed_once(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    proc = run_cli("sweep", sweep, "--out", tmp_path / "out", "--jobs", "1", timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.count("out of memory") == 1, proc.stderr


def test_a_bad_parquet_path_is_refused_before_the_sweep_runs(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    (tmp_path / "p").mkdir()
    one_error_line(run_cli("sweep", sweep, "--out", tmp_path / "out", "--parquet", tmp_path / "p"), 2, "is a directory")
    assert not (tmp_path / "out").exists(), "nothing ran"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_sweeps_workers_exit_quietly_when_their_parent_is_killed(tmp_path, sig):
    # Many short runs: a worker finishing one just after its parent died
    # once printed a traceback of its broken pipe.
    sweep = tmp_path / "s.toml"
    seeds = ", ".join(str(i) for i in range(1, 200))
    sweep.write_text(SWEEP.replace('accesses = 2000', 'accesses = 20000').replace('"workload.footprint" = ["4MiB", "1GiB"]',
                                                                                f'"run.seed" = [{seeds}]'))
    proc = subprocess.Popen(pagelab_command() + ["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    from conftest import live_children

    try:
        workers = _wait_for(lambda: len(live_children(proc.pid)) >= 2 and live_children(proc.pid), 60)
        assert workers, "the workers never started"
        time.sleep(2.5)
        proc.send_signal(sig)
        proc.wait(timeout=10)
        gone = _wait_for(lambda: all(not Path(f"/proc/{w}").exists() or open(f"/proc/{w}/stat").read().split()[2] == "Z"
                                     for w in workers), 60, 0.1)
        assert gone, "orphaned workers kept running"
    finally:
        _kill_group(proc)
    err = proc.stderr.read()
    assert "Traceback" not in err, err


def test_host_mem_zero_is_a_usage_error_naming_the_option(tmp_path):
    cfg = write_toml(tmp_path / "c.toml", SMALL)
    proc = run_cli("--host-mem", "0", "run", cfg)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "--host-mem" in last and "1.0 MiB" in last, proc.stderr
    assert "0.0 GiB" not in proc.stderr


def test_a_sweeps_store_is_kept_when_it_runs_again(tmp_path):
    # Resumable stores keep their contents: a second sweep into the same
    # --out reuses the first's runs (nothing is cleaned there).
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP.replace(', "1GiB"', ""))
    assert run_cli("sweep", sweep, "--out", tmp_path / "out").returncode == 0
    proc = run_cli("sweep", sweep, "--out", tmp_path / "out")
    assert proc.returncode == 0 and "1 already stored" in proc.stdout, proc.stdout
    assert "results.duckdb" in listing(tmp_path / "out")


# --- Ctrl-C in a call into the core ----------------------------------------


def test_ctrl_c_ends_a_trace_info_waiting_on_a_fifo_no_one_writes(tmp_path):
    # The core blocks in open(2), where Python never runs its Ctrl-C
    # handler: the call runs on a helper thread, the main thread waits.
    # Ctrl-C comes once the core has the FIFO open (a writer can then open
    # its end), so that it waits in read(2), never fed: a fixed sleep could
    # land in Python's start-up on a loaded machine.
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    proc = subprocess.Popen(pagelab_command() + ["trace", "info", str(fifo)], stderr=subprocess.PIPE, text=True)
    writer = _wait_for(lambda: _open_writer(fifo), 60 * TIMEOUT_SCALE)
    try:
        assert writer is not None, "trace info never opened the FIFO"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30 * TIMEOUT_SCALE)
    finally:
        proc.kill()
        if writer is not None:
            os.close(writer)
    assert proc.returncode == 130, proc.stderr.read()
    assert proc.stderr.read().strip() == "pagelab: interrupted"


def test_ctrl_c_during_a_conversion_leaves_no_temporary_file(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    proc = subprocess.Popen(pagelab_command() + ["trace", "convert", str(fifo), str(tmp_path / "t.pgl")],
                            stderr=subprocess.PIPE, text=True)
    writer = open(fifo, "w")  # the conversion has opened its end: it is reading
    try:
        writer.write(LACKEY * 100)
        writer.flush()
        assert _wait_for(lambda: _hidden(tmp_path), 30 * TIMEOUT_SCALE), "the conversion's temporary file"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30 * TIMEOUT_SCALE)
    finally:
        proc.kill()
        writer.close()
    assert proc.returncode == 130, proc.stderr.read()
    assert listing(tmp_path) == ["f"], "no trace, no temporary file"
