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

# Maps 16 MiB, touches every page, unmaps it, maps 8 MiB (which lands at
# the same address: the kernel reuses the hole) and touches every page.
MAPPER = r"""
#include <stdio.h>
#include <sys/mman.h>
#define MB (1L << 20)
int main(void) {
    long n = 16 * MB, m = 8 * MB;
    char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    for (long i = 0; i < n; i += 4096) p[i] = 1;
    if (munmap(p, n)) return 2;
    char *q = mmap(0, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return 3;
    for (long i = 0; i < m; i += 4096) q[i] = 2;
    printf("pagelab-test p=%p q=%p\n", (void *)p, (void *)q);
    return 0;
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


needs_valgrind = pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("gcc")), reason="needs valgrind and gcc")


def _capture(tmp_path, name: str, program: str):
    """Builds a C program and captures it; returns (executable, trace, cli result)."""
    src, exe, out = tmp_path / f"{name}.c", tmp_path / name, tmp_path / f"{name}.pgl"
    src.write_text(program)
    subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
    proc = run_cli("trace", "capture", "--out", out, "--", exe, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return exe, out, proc


@needs_valgrind
def test_capture_agrees_with_valgrinds_own_counts(tmp_path):
    exe, out, _ = _capture(tmp_path, "t", PROGRAM)
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


@needs_valgrind
def test_capture_records_the_programs_mappings_and_replays_them(tmp_path):
    _, out, proc = _capture(tmp_path, "m", MAPPER)
    p, q = (int(x, 16) for x in re.search(r"pagelab-test p=(0x[0-9a-f]+) q=(0x[0-9a-f]+)", proc.stdout).groups())
    events = json.loads(run_cli("trace", "events", out, "--json").stdout)
    mib = 1 << 20
    # The program's own three calls, in order, with their lengths.
    mine = [e for e in events if e["start"] in (p, q) and e["len"] in (16 * mib, 8 * mib)]
    assert [(e["kind"], e["start"], e["len"]) for e in mine] == [
        ("mmap", p, 16 * mib), ("munmap", p, 16 * mib), ("mmap", q, 8 * mib)
    ], events
    assert all(e["writable"] and e["name"] == "anon" for e in mine if e["kind"] == "mmap")
    # Every access to the 16 MiB lies between its mmap and its munmap.
    assert mine[1]["at"] - mine[0]["at"] >= 4096
    # The runtime's own mappings are there too (ld.so mapping libc).
    assert any(e["name"] == "file" for e in events)
    info = json.loads(run_cli("trace", "info", out, "--json").stdout)
    assert info["partial_maps"] and info["map_events"] == len(events)

    # Replayed with 4 KiB pages: each page faults at its first touch after
    # being mapped. q reuses p's addresses, so its 2048 pages fault a second
    # time: only a replayed munmap (which frees them) makes them fault again.
    assert q == p, "the kernel reused the hole (what this test relies on)"
    cfg = {"machine": {"phys_mem": "256MiB"}, "run": {"check_translations": True},
           "workload": {"kind": "trace", "path": str(out)}}
    s = pagelab.run(cfg).stats
    assert s["faults"] == info["pages_4k"] + (8 * mib) // 4096
    # One shootdown per munmap and mprotect (MAP_FIXED's implicit munmaps
    # included), nothing else on this policy.
    assert s["os.shootdowns"] == sum(e["kind"] in ("munmap", "mprotect") for e in events)
    # What exec mapped (binary, ld.so, stack) got automatic VMAs; nothing
    # was touched after its munmap.
    assert s["os.auto_vmas"] > 0
    assert s["os.auto_vmas_after_munmap"] == 0
    # With THP the 16 MiB and the 8 MiB are backed by huge pages.
    t = pagelab.run({**cfg, "os": {"policy": "thp", "thp": {"khugepaged": False}}}).stats
    assert t["faults.huge"] >= (16 + 8) // 2 - 2
    assert t["faults"] < s["faults"] // 4


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


def test_progress_knows_a_native_traces_total(tmp_path, monkeypatch):
    import pagelab.api

    monkeypatch.setattr(pagelab.api, "STEP", 1000)  # a progress call every ~1000 accesses
    text, native = tmp_path / "t.lackey", tmp_path / "t.pgl"
    text.write_text(LACKEY * 2000)  # 10,000 data accesses, 6,000 fetches
    assert run_cli("trace", "convert", text, native).returncode == 0

    def calls(path, **workload):
        seen = []
        cfg = {"machine": {"phys_mem": "64MiB"}, "workload": {"kind": "trace", "path": str(path), **workload}}
        pagelab.run(cfg, progress=lambda done, expected: seen.append((done, expected)))
        assert len(seen) > 5
        return seen

    # The native end record: the exact total from the first call.
    for ifetch, total in ((False, 10_000), (True, 16_000)):
        seen = calls(native, ifetch=ifetch)
        assert {e for _, e in seen} == {total} and seen[-1] == (total, total)
    # Lackey text cannot tell before it is read: unknown until the end.
    seen = calls(text)
    assert {e for _, e in seen[:-1]} == {None} and seen[-1] == (10_000, 10_000)
    # A generator with workload.accesses: exact too.
    seen = []
    pagelab.run({"machine": {"phys_mem": "64MiB"}, "workload": {"kind": "gups", "footprint": "1MiB", "accesses": 20_000, "init": "none"}},
                progress=lambda d, e: seen.append((d, e)))
    assert {e for _, e in seen} == {20_000}


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


FAILING = r"""
#include <stdlib.h>
int main(void) { volatile char *p = malloc(1 << 16); for (int i = 0; i < (1 << 16); i += 4096) p[i] = 1; return 3; }
"""


@needs_valgrind
def test_a_program_that_exits_non_zero_keeps_its_trace(tmp_path):
    src, exe, out = tmp_path / "f.c", tmp_path / "f", tmp_path / "f.pgl"
    src.write_text(FAILING)
    subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
    proc = run_cli("trace", "capture", "--out", out, "--", exe, timeout=300)
    # The program ran and failed: its trace is written and the status said.
    assert proc.returncode == 0, proc.stderr
    assert "exited with status 3; its trace is kept" in proc.stdout
    assert json.loads(run_cli("trace", "info", out, "--json").stdout)["stores"] >= 16
    out.unlink()
    proc = run_cli("trace", "capture", "--propagate-status", "--out", out, "--", exe, timeout=300)
    assert proc.returncode == 3, proc.stderr
    assert out.exists()


def test_the_events_table_fits_80_columns():
    import io

    from rich.console import Console

    from pagelab.trace import print_events

    events = [
        dict(at=123_456_789, kind="munmap", start=0x7F12_3456_7000, len=8 << 20, writable=True, name="anon"),
        dict(at=5, kind="mmap", start=0x4A2A000, len=12_388, writable=None, name="/usr/lib/x86_64-linux-gnu/libc.so.6"),
    ]
    buf = io.StringIO()
    print_events(events, Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80, text
    # Addresses and counts whole; lengths in units; the path folded, not cut.
    for whole in ("123,456,789", "0x7f1234567000", "0x7f1234d67000", "8 MiB", "12,388 B"):
        assert whole in text, text
    assert "libc.so.6" in text.replace("\n", "").replace(" ", "")


def test_convert_and_info_name_what_their_counts_count(tmp_path):
    """`trace convert` (as `trace capture`) counts data loads and stores as
    a run does, apart from instruction fetches; `trace info` says its
    `accesses` counts a modify once."""
    text = tmp_path / "t.lackey"
    text.write_text(LACKEY * 2000)  # 10,000 data loads and stores (2,000 modifies), 6,000 fetches
    r = run_cli("trace", "convert", text, tmp_path / "t.pgl")
    assert r.returncode == 0, r.stderr
    assert "10,000 data loads and stores (a modify is one of each), 6,000 instruction fetches" in r.stdout
    info = json.loads(run_cli("trace", "info", tmp_path / "t.pgl", "--json").stdout)
    assert (info["accesses"], info["modifies"], info["ifetches"]) == (8_000, 2_000, 6_000)
    shown = run_cli("trace", "info", tmp_path / "t.pgl")
    assert "a modify once" in shown.stdout
    # workload.ifetch: the fetches simulated, not only counted.
    workload = {"kind": "trace", "path": str(tmp_path / "t.pgl"), "ifetch": True}
    stats = pagelab.run({"machine": {"phys_mem": "64MiB"}, "workload": workload}).stats
    assert stats["accesses"] == 10_000 and stats["ifetches"] == 6_000
