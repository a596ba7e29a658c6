"""Bad values (issue 39): every one is exit status 2 and one line naming
the key or the file and what is allowed, never a shifted or wrapped
number, a silently replaced setting, an internal error or a traceback.
Each case is listed in docs/reliability.md."""

from __future__ import annotations

import pytest

import pagelab
from conftest import SMALL, SNAPSHOT, run_cli, small, write_toml
from test_reliability import one_error_line


MOVABLE = "Node    0, zone   Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118"


def _snapshot_run(tmp_path, text: str):
    snap = tmp_path / "snap.txt"
    snap.write_text(text)
    cfg = small(os={"fragmentation": {"snapshot": str(snap)}})
    return run_cli("run", write_toml(tmp_path / "c.toml", cfg), timeout=60)


@pytest.mark.parametrize("edit, names", [
    # A negative count once became a word of the line's name: the counts
    # shifted by one order.
    ((MOVABLE, MOVABLE.replace("616", "-616")), ["snap.txt", "line 9", "`-616`", "negative"]),
    # Counts whose sum passes 2^64 once wrapped.
    (("1168", "18446744073709551615"), ["snap.txt", "line 10", "add up past"]),
    ((MOVABLE, MOVABLE.replace("1118", "18446744073709551616")), ["snap.txt", "not a count from 0 to"]),
    ((MOVABLE, MOVABLE.replace("   1118", "")), ["snap.txt", "line 9", "10 free counts for the header's 11 orders"]),
    (("Pages per block:  512", "Pages per block:  1024"), ["snap.txt", "line 5", "2^9 = 512"]),
    (("Page block order: 9", "Page block order: 99"), ["snap.txt", "line 4", "from 1 to 20"]),
    (("2992", "2"), ["snap.txt", "free blocks add up to", "more than"]),
])
def test_out_of_range_snapshot_numbers_are_bad_input_naming_file_and_line(tmp_path, edit, names):
    assert edit[0] in SNAPSHOT
    one_error_line(_snapshot_run(tmp_path, SNAPSHOT.replace(*edit)), 2, *names)


def test_the_pageblock_order_a_snapshot_states_sizes_its_machine():
    from pagelab import _pagelab
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(SNAPSHOT.replace("Page block order: 9", "Page block order: 10").replace("Pages per block:  512", "Pages per block:  1024"))
        f.flush()
        big = _pagelab.frag_snapshot(f.name)
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(SNAPSHOT)
        f.flush()
        normal = _pagelab.frag_snapshot(f.name)
    assert big["frames"] == 2 * normal["frames"], "pageblocks of 1024 pages, not 512"


def test_a_capped_count_reads_as_its_cap(tmp_path):
    # Linux prints a free count above 100000 as ">100000" (5.6 and later).
    text = SNAPSHOT.replace(MOVABLE, MOVABLE.replace("616", ">100000")).replace("2992", "29920")
    assert _snapshot_run(tmp_path, text).returncode == 0


def test_an_empty_chain_of_systems_is_refused_not_replaced(tmp_path):
    cfg = small(os={"policy": "thp", "systems": []})
    proc = run_cli("run", write_toml(tmp_path / "c.toml", cfg))
    one_error_line(proc, 2, "os.systems", "empty chain", "base")


def test_the_report_refuses_a_figure_that_does_not_decode(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "x.md").write_text("# x\n")
    (d / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    one_error_line(run_cli("report", d), 2, "x.png", "not a PNG image that decodes")
    (d / "x.png").write_bytes(b"GIF89a" + b"\0" * 32)
    one_error_line(run_cli("report", d), 2, "x.png")
    assert not (d / "report.html").exists()


def _stored_sweep(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text('id = "s"\n[base.machine]\nphys_mem = "256MiB"\n[base.workload]\nkind = "gups"\n'
                     'footprint = "4MiB"\naccesses = 2000\n')
    assert run_cli("sweep", sweep, "--out", tmp_path / "out").returncode == 0
    return sweep, tmp_path / "out" / "results.duckdb"


def test_a_truncated_results_store_is_bad_input(tmp_path):
    sweep, store = _stored_sweep(tmp_path)
    data = store.read_bytes()
    for cut in (100, len(data) // 2):
        store.write_bytes(data[:cut])
        line = one_error_line(run_cli("sweep", sweep, "--out", tmp_path / "out"), 2, "results.duckdb")
        assert "internal error" not in line


def test_a_duckdb_file_of_something_else_is_not_a_store(tmp_path):
    import duckdb

    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (x INTEGER)")
    con.close()
    from pagelab.store import Store

    with pytest.raises(pagelab.TraceError, match="not a pagelab results store"):
        Store(path, read_only=True)


class Unprintable:
    pass


def _recursive() -> dict:
    d: dict = {"kind": "gups"}
    d["again"] = d
    return d


@pytest.mark.parametrize("overrides, key", [
    ({"workload.footprint": None}, "workload.footprint"),
    ({"os.systems": {"thp", "base"}}, "os.systems"),
    ({"workload.kind": Unprintable()}, "workload.kind"),
    ({"workload": _recursive()}, "workload.again"),
    ({"os.systems": ["thp", None]}, "os.systems[1]"),
    ({"workload.seed": 1 + 2j}, "workload.seed"),
])
def test_values_toml_cannot_hold_are_config_errors_naming_the_key(overrides, key):
    with pytest.raises(pagelab.ConfigError) as e:
        pagelab.run(SMALL, **overrides)
    assert f"`{key}`" in str(e.value), e.value


def test_a_config_dict_with_a_value_toml_cannot_hold_names_its_key():
    with pytest.raises(pagelab.ConfigError, match=r"`machine\.phys_mem`"):
        pagelab.run({**SMALL, "machine": {"phys_mem": None}})
    with pytest.raises(pagelab.ConfigError, match="expected a TOML file's path or a dict"):
        pagelab.run(42)


def test_a_simulated_cache_larger_than_the_host_is_refused(tmp_path):
    cfg = small(machine={"cache": {"llc": {"size": "64GiB"}}})
    proc = run_cli("--host-mem", "2GiB", "run", write_toml(tmp_path / "c.toml", cfg), "--out", tmp_path / "out")
    one_error_line(proc, 2, "machine.cache.llc.size", "2.0 GiB")
    assert not (tmp_path / "out").exists()
