"""pagelab report: one self-contained HTML page."""

from __future__ import annotations

import base64
import re

import pandas as pd

from conftest import run_cli


def _png(path, label):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0], label=label)
    fig.savefig(path, dpi=40)
    plt.close(fig)


def test_report_has_every_table_and_figure(tmp_path):
    d = tmp_path / "results"
    (d / "sub").mkdir(parents=True)
    pd.DataFrame({"workload": ["gups", "kv"], "cycles_norm": [1.0, 0.5]}).to_csv(d / "alpha.csv", index=False)
    pd.DataFrame({"pattern": ["dispersed"], "huge_coverage": [0.25]}).to_csv(d / "sub" / "beta.csv", index=False)
    _png(d / "alpha.png", "a")
    _png(d / "alpha-extra.png", "b")
    _png(d / "sub" / "beta.png", "c")
    (d / "alpha.md").write_text("# Alpha title\n\nSome `text` & <more>.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- item one\n")
    r = run_cli("report", d)
    assert r.returncode == 0, r.stderr
    html = (d / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    # Self-contained: no external references.
    assert "src=\"http" not in html and "href=\"http" not in html and "<link" not in html
    for png in d.rglob("*.png"):
        assert "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode() in html
    for csv in d.rglob("*.csv"):
        df = pd.read_csv(csv)
        for col in df.columns:
            assert f'">{col}</th>' in html
        for v in df.iloc[:, 0]:
            assert f'<td class="text">{v}</td>' in html
    assert "<h1>Alpha title</h1>" in html
    assert "<code>text</code> &amp; &lt;more&gt;" in html
    assert "<li>item one</li>" in html


def test_report_empty_dir(tmp_path):
    r = run_cli("report", tmp_path)
    assert r.returncode == 2
    assert "no *.md, *.csv or *.png" in r.stderr


def test_each_experiment_reads_figure_then_paper_then_text_then_table(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    run = pd.DataFrame({"workload": ["mcf", "bfs"], "runtime": [1.25, 0.75]})
    run.to_csv(d / "x.csv", index=False)
    pd.DataFrame({"quantity": ["mean runtime"], "paper": ["1.41"], "pagelab": ["1.000"], "source": ["Fig. 1"]}).to_csv(
        d / "x.paper.csv", index=False
    )
    _png(d / "x.png", "a")
    (d / "x.md").write_text(
        "# X title\n\nReading text.\n\n| workload | runtime |\n|---|---|\n| mcf | 1.250 |\n\n"
        "| other | table |\n|---|---|\n| kept | 1 |\n\n1. first point\n2. second point\n"
    )
    assert run_cli("report", d).returncode == 0
    html = (d / "report.html").read_text()
    where = [html.index(s) for s in ("<h1>X title</h1>", "<img", "pagelab beside the paper", "Reading text.", "<h3>Table")]
    assert where == sorted(where), where
    # The write-up's copy of the CSV is left out; its other table stays.
    assert html.count(">mcf</td>") == 1 and ">kept</td>" in html
    assert "<ol>" in html and "<li>second point</li>" in html
    # Numbers right, text left.
    assert '<td class="num">1.25</td>' in html and '<td class="text">mcf</td>' in html


def _chromium() -> str | None:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_report_of_chp_fig6_in_a_real_browser(tmp_path):
    """Headless Chromium opens the report of `chp-fig6 --quick`: every
    figure decodes, the tables render, the console stays silent; the
    screenshot is kept in out/report-test/ for a person to look at."""
    import os
    import subprocess
    from pathlib import Path

    import pytest

    browser = _chromium()
    if browser is None and os.geteuid() != 0:
        pytest.skip("needs chromium, which make setup installs only as root")
    assert browser is not None, "chromium is missing although make setup runs as root (apt-get install chromium)"
    out = tmp_path / "fig6"
    r = run_cli("reproduce", "chp-fig6", "--quick", "--out", out, "--jobs", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    assert run_cli("report", out).returncode == 0
    page = (out / "report.html").as_uri()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
    env = dict(os.environ, HOME=str(tmp_path))  # its profile and crash dumps stay in tmp
    dom = subprocess.run([browser, *flags, "--enable-logging=stderr", "--v=0", "--dump-dom", page],
                         capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    loaded = re.search(r'data-figures="(\d+)/(\d+)"', dom.stdout)
    assert loaded and loaded.group(1) == loaded.group(2) and int(loaded.group(2)) >= 1, loaded
    assert dom.stdout.count("<table") >= 2  # pagelab beside the paper, the run's table
    keep = Path(__file__).resolve().parent.parent / "out" / "report-test"
    keep.mkdir(parents=True, exist_ok=True)
    shot = keep / "chp-fig6.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page],
                   capture_output=True, timeout=120, env=env, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
