"""Bad input from the command line: one line naming the culprit, no
traceback, exit status 2; a run that fails: exit status 1. Each case here is
listed in docs/reliability.md."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import SMALL, run_cli, write_toml


def one_error_line(proc, status: int, *names: str) -> str:
    assert proc.returncode == status, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], proc.stderr
    return lines[0]


# --- arguments -------------------------------------------------------------


@pytest.mark.parametrize("argv, names", [
    (["bench", "--repeat", "0"], ["--repeat", "at least 1"]),
    (["bench", "--repeat", "x"], ["--repeat"]),
    (["sweep", "s.toml", "--jobs", "0"], ["--jobs", "at least 1"]),
])
def test_counts_below_one_are_usage_errors(tmp_path, argv, names):
    proc = run_cli(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    for name in names:
        assert name in last, proc.stderr


def test_ray_executor_without_ray_is_bad_input(tmp_path, monkeypatch, capsys):
    from pagelab import cli

    sweep = tmp_path / "s.toml"
    sweep.write_text('id = "s"\n[base.machine]\nphys_mem = "256MiB"\n[base.workload]\nkind = "gups"\n'
                     'footprint = "1MiB"\naccesses = 100\n')
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    status = cli.main(["sweep", str(sweep), "--executor", "ray", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "--executor ray" in err and "Ray is not installed" in err, err


# --- sweep files -----------------------------------------------------------


@pytest.mark.parametrize("text, names", [
    ("base = 1\n", ["base", "expected a table"]),
    ("id = 3\n", ["id", "3"]),
    ('id = "../x"\n', ["id"]),
    ("grid = [1]\n", ["grid", "expected a table"]),
    (b"id = \"\xff\"\n", ["not UTF-8"]),
])
def test_sweep_files_with_ill_typed_keys_are_bad_input(tmp_path, text, names):
    p = tmp_path / "bad.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    proc = run_cli("sweep", p, "--out", tmp_path / "out")
    one_error_line(proc, 2, "bad.toml", *names)
    assert not (tmp_path / "out").exists()


# --- report ----------------------------------------------------------------


@pytest.mark.parametrize("name, content, names", [
    ("empty.csv", b"", ["empty.csv", "empty CSV"]),
    ("bad.csv", b'a,b\n1,2\n3,4,5,6\n', ["bad.csv", "line 3"]),
    ("quote.csv", b'a,b\n"1,2\n', ["quote.csv"]),
    ("latin1.md", "caf\u00e9\n".encode("latin-1"), ["latin1.md", "not UTF-8"]),
])
def test_report_on_unreadable_files_is_bad_input(tmp_path, name, content, names):
    d = tmp_path / "results"
    d.mkdir()
    pd.DataFrame({"x": [1]}).to_csv(d / "good.csv", index=False)
    (d / name).write_bytes(content)
    proc = run_cli("report", d)
    one_error_line(proc, 2, *names)
    assert not (d / "report.html").exists()


def test_report_of_a_directory_with_nothing_to_show_is_bad_input(tmp_path):
    one_error_line(run_cli("report", tmp_path / "nowhere"), 2, "nowhere")


# --- exit statuses ---------------------------------------------------------


def test_exit_status_of_each_error_class():
    import pagelab
    from pagelab import cli
    from pagelab.executors import ExecutorUnavailable, WorkerDied

    assert cli.exit_status(pagelab.ConfigError("x")) == 2
    assert cli.exit_status(pagelab.TraceError("x")) == 2
    assert cli.exit_status(pagelab.PagelabError("x")) == 2  # I/O on an input file
    assert cli.exit_status(ExecutorUnavailable("x")) == 2
    assert cli.exit_status(OSError(2, "x")) == 2
    assert cli.exit_status(pagelab.SimulationError("x")) == 1
    assert cli.exit_status(pagelab.InternalError("x")) == 1
    assert cli.exit_status(WorkerDied("x")) == 1
    assert cli.exit_status(ValueError("x")) == 1


def test_an_unexpected_python_error_is_one_line_and_status_1(monkeypatch, capsys):
    from pagelab import cli

    def boom(_args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(cli, "cmd_presets", boom)
    status = cli.main(["presets"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and "internal error" in err and "ZeroDivisionError: boom" in err, err
    assert "--debug" in err
    status = cli.main(["--debug", "presets"])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" in err and "boom" in err
    monkeypatch.delenv("PAGELAB_DEBUG", raising=False)


# --- panics ----------------------------------------------------------------

PANIC = """
from pagelab import _pagelab
try:
    _pagelab._panic_for_tests("an invariant broke")
except _pagelab.InternalError as e:
    print(e)
"""


@pytest.mark.parametrize("debug", [False, True])
def test_a_caught_panic_prints_one_line(debug):
    env = {k: v for k, v in os.environ.items() if k != "PAGELAB_DEBUG"}
    if debug:
        env["PAGELAB_DEBUG"] = "1"
    proc = subprocess.run([sys.executable, "-c", PANIC], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("internal error (please report): an invariant broke")
    if debug:
        # The location, in the exception and from Rust's own hook.
        assert "lib.rs:" in proc.stdout and "panicked" in proc.stderr, (proc.stdout, proc.stderr)
    else:
        assert proc.stderr == "", proc.stderr
        assert "lib.rs" not in proc.stdout


# --- host memory -----------------------------------------------------------


def test_a_run_too_large_for_the_host_is_refused_before_it_is_built(tmp_path):
    cfg = {"machine": {"phys_mem": "1GiB"}, "workload": {"kind": "graph", "scale": 30}}
    path = write_toml(tmp_path / "big.toml", cfg)
    out = tmp_path / "out"
    # The limit as --host-mem gives it: refused at once, naming the key.
    proc = run_cli("--host-mem", "4GiB", "run", path, "--out", out, timeout=60)
    line = one_error_line(proc, 2, "workload.scale", "host memory", "4.0 GiB")
    assert "a graph of scale 30" in line
    assert not out.exists()
    # The same configuration at scale 10 runs under that limit.
    cfg["workload"].update(scale=10, accesses=10_000)
    small = write_toml(tmp_path / "small.toml", cfg)
    assert run_cli("--host-mem", "4GiB", "run", small).returncode == 0


@pytest.mark.parametrize("second, names", [
    ({"name": "nvm", "size": "100MiB", "read_latency": 700, "write_latency": 2000},
     ["machine.memory.tiers", "add up to 164MiB", "256MiB"]),
    ({"name": "dram", "size": "192MiB", "read_latency": 700, "write_latency": 2000},
     ["machine.memory.tiers[1].name", "`dram` names two tiers"]),
    ({"name": "nvm", "size": "192MiB", "read_latency": 700, "write_latency": 0},
     ["machine.memory.tiers[1].write_latency", "nvm"]),
])
def test_bad_memory_tiers_are_bad_input_naming_key_and_entry(tmp_path, second, names):
    dram = {"name": "dram", "size": "64MiB", "read_latency": 240, "write_latency": 240}
    cfg = {**SMALL, "machine": {"phys_mem": "256MiB", "memory": {"tiers": [dram, second]}}}
    one_error_line(run_cli("run", write_toml(tmp_path / "t.toml", cfg), timeout=60), 2, *names)


def test_a_malformed_host_memory_limit_is_bad_input(tmp_path, monkeypatch):
    path = write_toml(tmp_path / "c.toml", SMALL)
    monkeypatch.setenv("PAGELAB_HOST_MEM", "lots")
    one_error_line(run_cli("run", path, timeout=60), 2, "PAGELAB_HOST_MEM")


def test_a_sweep_divides_the_host_memory_among_its_workers(monkeypatch):
    from pagelab import executors

    monkeypatch.setenv("PAGELAB_HOST_MEM", "8GiB")
    assert executors.host_memory_share(4) == 2 << 30
    # Rounded down (a limit is at least 1 MiB: 3 bytes is refused now).
    monkeypatch.setenv("PAGELAB_HOST_MEM", str((3 << 20) + 1))
    assert executors.host_memory_share(2) == 3 << 19


# --- Elastic Translations' hint files ----------------------------------------


@pytest.mark.parametrize("content, names", [
    ("0x7f0000000000-0x7f0002000000\n0x7f0000001000-0x7f0000011000\n", ["hints.txt", "line 2", "aligned"]),
    ("0x7f0000000000-0x7f0000003000\n", ["hints.txt", "line 1", "64KiB"]),
    (None, ["hints.txt", "cannot read"]),
])
def test_a_bad_leshy_hint_file_is_bad_input_naming_file_and_line(tmp_path, content, names):
    hints = tmp_path / "hints.txt"
    if content is not None:
        hints.write_text(content)
    os_table = {"policy": "elastic", "elastic": {"leshy": "offline", "hints": str(hints)}}
    cfg = {"machine": {"preset": "ampere-altra", "phys_mem": "256MiB"}, "os": os_table,
           "workload": {"kind": "gups", "footprint": "4MiB", "accesses": 1000}}
    proc = run_cli("run", write_toml(tmp_path / "c.toml", cfg), cwd=tmp_path)
    one_error_line(proc, 2, "os.elastic.hints", *names)
