"""`pagelab run`: outputs, overrides, the physical-reference export, and bad
input (exit code 2, one error line naming the key or file, no traceback, no
output files)."""

from __future__ import annotations

import json
import numbers
import re
import tomllib
from pathlib import Path

import pytest

import pagelab
from conftest import SMALL, run_cli, small, write_toml, zstd_decompress

LINE_RE = re.compile(r"^[RWP] 0x[0-9a-f]+$")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def read_stats(out_dir):
    return json.loads((out_dir / "stats.json").read_text())


def assert_ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


# --- outputs ------------------------------------------------------------------


def test_run_writes_flat_stats_json_and_resolved_config(tmp_path, small_toml):
    out = tmp_path / "out"
    proc = run_cli("run", small_toml, "--out", out)
    assert_ok(proc)
    # The summary table.
    assert "L2 TLB misses" in proc.stdout and "instructions" in proc.stdout

    stats = read_stats(out)
    assert isinstance(stats, dict) and stats
    for k, v in stats.items():
        assert isinstance(v, numbers.Real) and not isinstance(v, bool), f"{k} = {v!r}"
    # The CLI and the API run the same simulation.
    assert stats == pagelab.run(small_toml).stats

    resolved = (out / "config.resolved.toml").read_text()
    cfg = tomllib.loads(resolved)
    assert cfg["machine"]["phys_mem"] in ("256MiB", 256 << 20)
    assert "preset" in cfg["machine"] and "tlb" in cfg["machine"]


def test_resolved_config_runs_again_to_identical_stats(tmp_path, small_toml):
    first = tmp_path / "first"
    assert_ok(run_cli("run", small_toml, "--out", first, "--set", "os.policy=thp"))
    second = tmp_path / "second"
    assert_ok(run_cli("run", first / "config.resolved.toml", "--out", second))
    assert read_stats(first) == read_stats(second)
    assert (first / "config.resolved.toml").read_text() == (second / "config.resolved.toml").read_text()


def test_set_overrides_keys(tmp_path, small_toml):
    base, thp, quoted = tmp_path / "base", tmp_path / "thp", tmp_path / "quoted"
    assert_ok(run_cli("run", small_toml, "--out", base))
    assert_ok(run_cli("run", small_toml, "--out", thp, "--set", "os.policy=thp"))
    assert_ok(
        run_cli("run", small_toml, "--out", quoted, "--set", 'os.policy="thp"', "--set", "workload.accesses=20000")
    )
    assert read_stats(base)["mem.mapped.2m"] == 0
    assert read_stats(thp)["mem.mapped.2m"] > 0
    q = read_stats(quoted)
    assert q["mem.mapped.2m"] > 0
    assert q["instructions"] < read_stats(thp)["instructions"]
    resolved = tomllib.loads((quoted / "config.resolved.toml").read_text())
    assert resolved["os"]["policy"] == "thp"
    assert resolved["workload"]["accesses"] == 20000


def test_presets_lists_the_presets():
    proc = run_cli("presets")
    assert_ok(proc)
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert "skylake" in names
    assert names == list(pagelab.presets())  # one line each, in order, nothing else


def test_stats_list_declares_what_a_run_reports_and_is_docs_stats_md(tmp_path, small_toml):
    """Every statistic of a run is declared (name, unit, what it counts),
    and `--markdown` is docs/stats.md, which is generated from it."""
    proc = run_cli("stats", "--list")
    assert_ok(proc)
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert all(len(r) == 3 and r[2] for r in rows), "name, unit, what it counts"
    declared = {r[0]: r[1] for r in rows}
    assert declared["instructions"] == "count" and declared["cycles"] == "cycles"
    assert "coreN.tlb.ARRAY.hits" in declared and "walk.gtsm" in declared
    md = run_cli("stats", "--list", "--markdown")
    assert_ok(md)
    docs = Path(__file__).resolve().parents[1] / "docs" / "stats.md"
    assert md.stdout == docs.read_text(encoding="utf-8"), "regenerate docs/stats.md: pagelab stats --list --markdown"
    assert run_cli("stats").returncode == 2, "--list is the one mode"


# --- the physical-reference export ---------------------------------------------


def test_export_phys_writes_tagged_hex_lines(tmp_path, small_toml):
    path = tmp_path / "phys.txt"
    out = tmp_path / "out"
    assert_ok(run_cli("run", small_toml, "--out", out, "--export-phys", path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "phys.txt", "small.toml"], "no temporary file left"
    counts = {"R": 0, "W": 0, "P": 0}
    with open(path) as f:
        for n, line in enumerate(f):
            line = line.rstrip("\n")
            assert LINE_RE.match(line), f"line {n + 1}: {line!r}"
            counts[line[0]] += 1
    stats = read_stats(out)
    assert counts == {"R": stats["loads"], "W": stats["stores"], "P": stats["walk.mem_refs"]}
    assert all(counts.values())


def test_export_phys_zst_is_compressed(tmp_path, small_toml):
    plain = tmp_path / "phys.txt"
    packed = tmp_path / "phys.txt.zst"
    assert_ok(run_cli("run", small_toml, "--export-phys", plain))
    assert_ok(run_cli("run", small_toml, "--export-phys", packed))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phys.txt", "phys.txt.zst", "small.toml"]
    data = packed.read_bytes()
    assert data[:4] == ZSTD_MAGIC
    assert len(data) < plain.stat().st_size
    text = zstd_decompress(data)
    if text is None:
        pytest.skip("neither the zstandard module nor the zstd tool is available to decompress")
    # Same configuration, same references: compression changes nothing else.
    assert text == plain.read_bytes()


# --- bad input ----------------------------------------------------------------

UNKNOWN_IN_FILE = {**SMALL, "machine": {"phys_mem": "256MiB", "tlb": {"l2_entriez": 4}}}

# (id, files to write: name -> bytes|dict, argv after `run`, text the error must name)
BAD = [
    ("unknown-key", {}, ["small.toml", "--set", "machine.tlb.l2_entriez=4"], "machine.tlb.l2_entriez"),
    ("unknown-key-in-file", {"c.toml": UNKNOWN_IN_FILE}, ["c.toml"], "machine.tlb.l2_entriez"),
    ("unknown-top-level-key", {}, ["small.toml", "--set", "bogus=1"], "bogus"),
    ("ill-typed-key", {}, ["small.toml", "--set", 'machine.tlb.l2_ways="many"'], "machine.tlb.l2_ways"),
    ("negative-count", {}, ["small.toml", "--set", "workload.accesses=-1"], "workload.accesses"),
    ("impossible-size", {}, ["small.toml", "--set", 'machine.phys_mem="3MiB"'], "machine.phys_mem"),
    ("not-a-size", {}, ["small.toml", "--set", 'machine.phys_mem="lots"'], "machine.phys_mem"),
    ("bad-cache-geometry", {}, ["small.toml", "--set", 'machine.cache.llc.size="3MiB"'], "machine.cache.llc.size"),
    ("unknown-kind", {}, ["small.toml", "--set", "workload.kind=redis"], "workload.kind"),
    ("override-without-value", {}, ["small.toml", "--set", "os.policy"], "os.policy"),
    ("missing-file", {}, ["nowhere.toml"], "nowhere.toml"),
    ("directory", {"adir/x": b""}, ["adir"], "adir"),
    ("not-toml", {"garbage.toml": b"this is [not toml\n"}, ["garbage.toml"], "garbage.toml"),
    ("truncated-toml", {"cut.toml": b'[workload]\nkind = "gu'}, ["cut.toml"], "cut.toml"),
    ("binary-file", {"binary.toml": b"\x28\xb5\x2f\xfd\x00\xff\xfe\x00binary"}, ["binary.toml"], "binary.toml"),
    ("no-workload", {"empty.toml": b""}, ["empty.toml"], "workload"),
]


def prepare(tmp_path, files):
    write_toml(tmp_path / "small.toml", SMALL)
    for name, content in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            write_toml(p, content)
        else:
            p.write_bytes(content)


def error_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("files, argv, names", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_exits_2_naming_the_culprit_and_writes_nothing(tmp_path, files, argv, names):
    prepare(tmp_path, files)
    before = set(tmp_path.rglob("*"))
    proc = run_cli("run", *argv, "--out", "out", "--export-phys", "phys.txt", cwd=tmp_path)
    assert proc.returncode == 2, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = error_lines(proc)
    assert lines and lines[0].startswith("pagelab: error:"), proc.stderr
    assert names in lines[0], proc.stderr
    # No output: no directory, no export, no partial export.
    assert set(tmp_path.rglob("*")) == before
    assert proc.stdout.strip() == ""


@pytest.mark.parametrize("files, argv, names", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_error_is_one_line(tmp_path, files, argv, names):
    prepare(tmp_path, files)
    proc = run_cli("run", *argv, cwd=tmp_path)
    assert proc.returncode == 2
    lines = error_lines(proc)
    assert len(lines) == 1, "expected one error line, got:\n" + proc.stderr


def test_unknown_key_is_named_once(tmp_path, small_toml):
    proc = run_cli("run", small_toml, "--set", "machine.tlb.l2_entriez=4")
    assert proc.returncode == 2
    assert "l2_entriez.l2_entriez" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("export", ["phys.txt", "phys.txt.zst"])
def test_workload_larger_than_memory_is_an_error_not_a_crash(tmp_path, small_toml, export):
    # 8 GiB of footprint on a 1 GiB machine.
    proc = run_cli(
        "run",
        small_toml,
        "--set",
        'workload.footprint="8GiB"',
        "--set",
        'machine.phys_mem="1GiB"',
        "--out",
        tmp_path / "out",
        "--export-phys",
        tmp_path / export,
        timeout=60,
    )
    # A run that fails (simulated memory exhausted) is 1, not bad input's 2.
    assert proc.returncode == 1, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("pagelab: error:"), proc.stderr
    assert "memory" in lines[0]
    # A failed run leaves no FILE, no FILE.partial, no --out directory.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_export_into_a_missing_directory_is_an_error(tmp_path, small_toml):
    target = tmp_path / "nodir" / "phys.txt"
    proc = run_cli("run", small_toml, "--export-phys", target, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "nodir" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_out_that_is_a_file_is_an_error_not_a_traceback(tmp_path, small_toml):
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory\n")
    proc = run_cli("run", small_toml, "--out", blocker)
    assert proc.returncode == 2, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "taken" in proc.stderr
    assert blocker.read_text() == "not a directory\n"


def test_usage_errors_exit_2():
    proc = run_cli("run")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    proc = run_cli("frobnicate")
    assert proc.returncode == 2


def test_export_in_dram_simulator_formats(tmp_path):
    """Ramulator 2 (LoadStoreTrace) and DRAMsim3 lines; --export-memory-only
    keeps exactly the references memory served."""
    import re as _re

    cfg = tmp_path / "c.toml"
    cfg.write_text('[machine]\nphys_mem = "256MiB"\n[workload]\nkind = "gups"\nfootprint = "16MiB"\naccesses = 20000\n')
    ram, dram, out = tmp_path / "r.txt", tmp_path / "d.txt", tmp_path / "out"
    assert run_cli("run", cfg, "--export-phys", ram, "--export-format", "ramulator2").returncode == 0
    lines = ram.read_text().splitlines()
    assert lines and all(_re.fullmatch(r"(LD|ST) 0x[0-9a-f]+", l) for l in lines)
    proc = run_cli("run", cfg, "--out", out, "--export-phys", dram, "--export-format", "dramsim3", "--export-memory-only")
    assert proc.returncode == 0, proc.stderr
    lines = dram.read_text().splitlines()
    assert all(_re.fullmatch(r"0x[0-9a-f]+ (READ|WRITE) \d+", l) for l in lines)
    cycles = [int(l.split()[2]) for l in lines]
    assert cycles == sorted(cycles)  # one core: its clock never goes back
    stats = json.loads((out / "stats.json").read_text())
    assert len(lines) == stats["mem.accesses"] == stats["cache.llc.misses"]


def test_the_export_is_what_readme_and_help_say(tmp_path):
    """Every reference from the first access on: under `run.skip_init` the
    statistics leave the first-touch pass out, the export keeps it (one
    store per page before the measured accesses), L1 hits included; the
    README and --help name the four kinds of line (R/W/P/I) and
    --export-memory-only."""
    from pathlib import Path

    cfg = write_toml(tmp_path / "c.toml", small(run={"skip_init": True}))
    path, out = tmp_path / "phys.txt", tmp_path / "out"
    assert_ok(run_cli("run", cfg, "--out", out, "--export-phys", path))
    stats = read_stats(out)
    lines = path.read_text().splitlines()
    pages = (32 << 20) // 4096
    assert sum(line[0] == "W" for line in lines) == stats["stores"] + pages
    assert sum(line[0] == "R" for line in lines) == stats["loads"]
    assert len(lines) > stats["cache.l1d.misses"] + pages  # hits too
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    help_text = run_cli("run", "--help").stdout
    for text in (readme, help_text):
        assert "R/W/P/I" in text and "first-touch pass" in text and "--export-memory-only" in text
    assert "R/W/P;" not in readme


def test_the_run_table_says_what_each_count_includes(tmp_path, small_toml):
    r = run_cli("run", small_toml)
    assert_ok(r)
    assert "data accesses (loads + stores)" in r.stdout
    assert "L1D misses (data + walk refs)" in r.stdout and "of which walk refs" in r.stdout
