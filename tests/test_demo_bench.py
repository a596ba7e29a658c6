"""`pagelab bench --quick` and `pagelab demo --quick` run to the end and
produce what they promise. Speeds are never asserted."""

from __future__ import annotations

import csv
import itertools

import pytest

from conftest import run_cli

from pagelab import _pagelab

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_bench_quick_runs_the_target_and_comparison_cases():
    proc = run_cli("bench", "--quick", "--repeat", "1", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    cases = _pagelab.bench_cases()
    assert [name for name, _ in cases] == [
        "gups-4k-translation", "gups-4k-caches", "stream-thp-caches", "gups-thp-translation", "gups-chp-translation",
        "gups-virt-translation", "stream-thp-translation",
    ]
    for name, _target in cases:
        assert name in proc.stdout, proc.stdout
    # --quick runs 1 GiB instead of 16 GiB and says so.
    assert "1GiB" in proc.stdout


def test_an_unknown_bench_case_is_a_config_error():
    import pytest

    with pytest.raises(_pagelab.ConfigError):
        _pagelab.bench_case("nonesuch", 1 << 30, 10)


def test_demo_quick_writes_csv_and_png(tmp_path):
    out = tmp_path / "demo"
    proc = run_cli("demo", "--quick", "--out", out, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr

    with open(out / "demo.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12
    combos = {(r["workload"], r["machine"], r["policy"]) for r in rows}
    expected = set(itertools.product(["gups", "bfs"], ["fresh", "fragmented"], ["base", "thp", "coloring"]))
    assert combos == expected
    for r in rows:
        assert float(r["cycles"]) > 0
        assert float(r["runtime"]) > 0
        assert 0.0 <= float(r["huge_fraction"]) <= 1.0
    # Runtime is normalized to base on the fresh machine, per workload:
    # recomputed from the cycles.
    base = {r["workload"]: float(r["cycles"]) for r in rows if (r["machine"], r["policy"]) == ("fresh", "base")}
    for r in rows:
        assert float(r["runtime"]) == pytest.approx(float(r["cycles"]) / base[r["workload"]])
    # THP maps 2 MiB pages on the fresh machine; base does not.
    for r in rows:
        if r["policy"] == "base":
            assert float(r["huge_fraction"]) == 0.0
        if (r["machine"], r["policy"]) == ("fresh", "thp"):
            assert float(r["huge_fraction"]) > 0.0

    png = (out / "demo.png").read_bytes()
    assert png[:8] == PNG_MAGIC and len(png) > 1000
    # Written atomically: no temporaries left behind; the figure also as PDF.
    assert sorted(p.name for p in out.iterdir()) == ["demo.csv", "demo.pdf", "demo.png"]
    assert (out / "demo.pdf").read_bytes()[:5] == b"%PDF-"

    # The table fits an 80-column terminal whole: no cut names or numbers.
    import io

    import pandas as pd
    from rich.console import Console

    from pagelab.demo import summary_table

    df = pd.read_csv(out / "demo.csv")
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(summary_table(df))
    text = buf.getvalue()
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    for r in rows:
        assert any(r["machine"] in line and r["policy"] in line for line in text.splitlines())


def test_compact_numbers_keep_three_significant_digits():
    from pagelab.table import compact

    assert [compact(n) for n in (0, 999, 1234, 12_345, 1_988_123, 2.5e12)] == [
        "0", "999", "1.23 k", "12.3 k", "1.99 M", "2.5 T",
    ]
    assert max(len(compact(n)) for n in (999_499, 999_999_999, 123_456_789_012)) <= 7
