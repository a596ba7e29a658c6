"""`pagelab trace capture|convert|info` and traces as workloads."""

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import run_cli

import pagelab

PROGRAM = r"""
#include <stdlib.h>
int main(void) {
    long n = 1 << 14, s = 0;
    long *a = malloc(n * sizeof *a);
    for (long i = 0; i < n; i++) a[i] = i;
    for (long i = 0; i < n; i++) s += a[i];
    return (int)(s & 1);
}
"""

LACKEY = """==123== Lackey, an example Valgrind tool
I  04001000,3
 L 1ffefff000,8
I  04001003,4
 S 1ffefff008,8
 M 1ffefff010,4
I  04001007,2
 L 0602000,8
==123== done
"""


@pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("gcc")), reason="needs valgrind and gcc")
def test_capture_agrees_with_valgrinds_own_counts(tmp_path):
    src, exe, out = tmp_path / "t.c", tmp_path / "t", tmp_path / "t.pgl"
    src.write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
    proc = run_cli("trace", "capture", "--out", out, "--", exe, timeout=300)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(run_cli("trace", "info", out, "--json").stdout)
    cg = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64",
         "--LL=16777216,16,64", "--cachegrind-out-file=/dev/null", exe],
        # The same environment as the captured run: libc's start-up code
        # depends on its size.
        capture_output=True, text=True, env=dict(os.environ, COLUMNS="200", NO_COLOR="1", TERM="dumb"),
    ).stderr
    num = lambda pattern: int(re.search(pattern, cg).group(1).replace(",", ""))
    assert info["instructions"] == num(r"I\s+refs:\s+([\d,]+)")
    # D refs = loads + stores, a modify counted once.
    assert info["accesses"] == num(r"D\s+refs:\s+([\d,]+)")
    assert info["loads"] == num(r"\(([\d,]+) rd")
    assert info["stores"] - info["modifies"] == num(r"\+\s+([\d,]+) wr")
    assert info["accesses"] > 2 * (1 << 14)  # the program's own 32768 accesses and more
    # The captured trace runs, with automatic VMAs.
    s = pagelab.run({"machine": {"phys_mem": "256MiB"}, "workload": {"kind": "trace", "path": str(out)}}).stats
    assert s["accesses"] == info["loads"] + info["stores"]
    assert s["os.auto_vmas"] > 0


def test_convert_info_and_run_a_lackey_trace(tmp_path):
    text, native = tmp_path / "t.lackey", tmp_path / "t.pgl"
    text.write_text(LACKEY)
    assert run_cli("trace", "convert", text, native).returncode == 0
    for path in (text, native):
        info = json.loads(run_cli("trace", "info", path, "--json").stdout)
        assert (info["instructions"], info["loads"], info["stores"], info["modifies"]) == (3, 3, 2, 1)
        assert info["accesses"] == 4
    s = pagelab.run({"machine": {"phys_mem": "64MiB"}, "workload": {"kind": "trace", "path": str(native)}}).stats
    assert (s["instructions"], s["loads"], s["stores"]) == (3, 3, 2)


def test_a_truncated_trace_fails_the_run_naming_the_file(tmp_path):
    text, native, cut = tmp_path / "t.lackey", tmp_path / "t.pgl", tmp_path / "cut.pgl"
    text.write_text(LACKEY * 2000)
    assert run_cli("trace", "convert", text, native).returncode == 0
    data = native.read_bytes()
    cut.write_bytes(data[: len(data) - 20])
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[machine]\nphys_mem = "64MiB"\n[workload]\nkind = "trace"\npath = "{cut}"\n')
    out = tmp_path / "out"
    proc = run_cli("run", cfg, "--out", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cut.pgl" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
