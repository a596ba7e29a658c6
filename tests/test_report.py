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


def test_a_write_ups_mean_and_interval_table_is_not_shown_again(tmp_path):
    """The write-up's `mean ± ci95` table repeats the CSV (with its spread
    columns): shown once, from the CSV, its ± note left out with it."""
    from pagelab.experiments.common import markdown_table

    d = tmp_path / "results"
    d.mkdir()
    t = pd.DataFrame({"workload": ["mcf"], "runtime": [1.25], "seeds": [2], "runtime_std": [0.1], "runtime_ci95": [0.9]})
    t.to_csv(d / "x.csv", index=False)
    (d / "x.md").write_text("# X\n\nText before.\n\n" + markdown_table(t) + "\nText after.\n")
    assert run_cli("report", d).returncode == 0
    html = (d / "report.html").read_text()
    assert html.count(">mcf</td>") == 1 and "±:" not in html
    assert "Text before." in html and "Text after." in html


def _run_dir(root):
    """A run with epochs (its first-touch pass before the reset), saved as
    `pagelab run --out` saves it."""
    import pagelab

    cfg = {"machine": {"phys_mem": "512MiB"}, "run": {"epoch": 100_000, "skip_init": True},
           "workload": {"kind": "gups", "footprint": "64MiB", "accesses": 300_000}}
    pagelab.run(cfg, **{"os.policy": "thp"}, out=root / "run")
    return root / "run"


def _sweep_dir(root):
    import pagelab

    base = {"machine": {"phys_mem": "512MiB"}, "workload": {"kind": "gups", "footprint": "128MiB", "accesses": 50_000}}
    pagelab.run_sweep(base=base, grid={"os.policy": ["base", "thp"], "os.fragmentation.target": [0.0, 0.9]},
                      seeds=[1, 2], id="frag", out=root / "sweep", jobs=2)
    return root / "sweep"


def test_report_of_a_run(tmp_path):
    import json

    d = _run_dir(tmp_path)
    r = run_cli("report", d)
    assert r.returncode == 0, r.stderr
    html = (d / "report.html").read_text()
    stats = json.loads((d / "stats.json").read_text())
    assert "<h1>pagelab run: gups, os.policy = thp, 1 core," in html
    # Every statistic once: the summary's under their labels, the rest by name.
    for name in stats:
        assert html.count(f"<th>{name}</th>") <= 1, name
    assert "L2 TLB misses (walks)" in html and "<th>dtlb.l2.misses</th>" not in html
    # Provenance: version, commit, date, machine, the configuration.
    import pagelab

    assert f"<td>{pagelab.__version__}</td>" in html and "<th>commit</th>" in html and "<th>host</th>" in html
    assert "config.resolved.toml" in html and 'policy = &quot;thp&quot;' in html
    assert html.count("<img") == 1  # the epochs, statistic by statistic
    bad = run_cli("report", d, "--stat", "dtlb.l2.mises")
    assert bad.returncode == 2 and "closest: dtlb.l2.misses" in bad.stderr


def test_report_of_a_sweep_plots_its_swept_keys(tmp_path):
    d = _sweep_dir(tmp_path)
    r = run_cli("report", d, "--stat", "dtlb.l2.misses", "--stat", "mem.mapped.2m")
    assert r.returncode == 0, r.stderr
    html = (d / "report.html").read_text()
    assert "<h1>Sweep frag</h1>" in html
    assert html.count("<img") == 2  # one figure per statistic chosen
    assert "frag: L2 TLB misses (walks) (dtlb.l2.misses) against os.fragmentation.target" in html
    # The means table holds the chosen statistics, not the CSV's hundreds.
    assert "<th class=\"num\">dtlb.l2.misses</th>" in html and ">cycles.data<" not in html
    assert "<th>runs in the store</th><td>8</td>" in html
    # The configuration: what every run shares, and the four keys that vary.
    assert re.search(r"\d+ keys every run shares, 4 that vary", html)
    for key in ("os.policy", "os.fragmentation.target", "run.seed", "workload.seed"):
        assert f"<td><code>{key}</code></td>" in html


def test_report_of_an_experiment_carries_its_provenance(tmp_path):
    """An experiment's section ends with its provenance: pagelab's version
    and commit, date, machine, the variant and seeds, and the configuration
    of its runs (the keys they share, those that vary)."""
    import json

    import pagelab

    out = tmp_path / "fs"
    r = run_cli("reproduce", "frag-sweep", "--tiny", "--out", out, "--jobs", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    assert run_cli("report", out).returncode == 0
    html = (out / "report.html").read_text()
    recorded = json.loads((out / "frag-sweep.provenance.json").read_text())
    prov = html[html.index("<h3>Provenance</h3>"):]
    for key in ("pagelab", "commit", "date", "host", "cpu", "cores", "variant", "seeds"):
        shown = ", ".join(map(str, recorded[key])) if isinstance(recorded[key], list) else recorded[key]
        assert f"<tr><th>{key}</th><td>{shown}</td></tr>" in prov, key
    assert recorded["pagelab"] == pagelab.__version__ and recorded["variant"] == "tiny"
    assert re.search(r"\d+ keys every run shares, \d+ that vary", prov)
    assert "<td><code>os.fragmentation.target</code></td>" in prov


def _chromium() -> str | None:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


def _check_in_chromium(browser, page, shot, env, tables: int):
    """Headless Chromium opens `page`: every figure decodes, the tables
    render, the console stays silent; the screenshot is kept for a person
    to look at."""
    import subprocess

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
    dom = subprocess.run([browser, *flags, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    loaded = re.search(r'data-figures="(\d+)/(\d+)"', dom.stdout)
    assert loaded and loaded.group(1) == loaded.group(2) and int(loaded.group(2)) >= 1, loaded
    assert dom.stdout.count("<table") >= tables
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                   capture_output=True, timeout=120, env=env, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reports_of_a_run_a_sweep_and_an_experiment_in_a_real_browser(tmp_path):
    """Headless Chromium opens the report of a run, of a sweep and of
    `chp-fig6 --quick`; the screenshots are kept in out/report-test/."""
    import os
    from pathlib import Path

    import pytest

    browser = _chromium()
    if browser is None and os.geteuid() != 0:
        pytest.skip("needs chromium, which make setup installs only as root")
    assert browser is not None, "chromium is missing although make setup runs as root (apt-get install chromium)"
    out = tmp_path / "fig6"
    r = run_cli("reproduce", "chp-fig6", "--quick", "--out", out, "--jobs", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, HOME=str(tmp_path))  # its profile and crash dumps stay in tmp
    keep = Path(__file__).resolve().parent.parent / "out" / "report-test"
    keep.mkdir(parents=True, exist_ok=True)
    # (directory, tables at least: the experiment's paper table and its
    # own; the run's summary and provenance; the sweep's means and provenance)
    for name, d, tables in [("chp-fig6", out, 2), ("run", _run_dir(tmp_path), 2), ("sweep", _sweep_dir(tmp_path), 2)]:
        assert run_cli("report", d).returncode == 0
        _check_in_chromium(browser, d / "report.html", keep / f"{name}.png", env, tables)
