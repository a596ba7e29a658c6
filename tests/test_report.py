"""pagelab report: one self-contained HTML page."""

from __future__ import annotations

import base64

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
            assert f"<th>{col}</th>" in html
        for v in df.iloc[:, 0]:
            assert f"<td>{v}</td>" in html
    assert "<h1>Alpha title</h1>" in html
    assert "<code>text</code> &amp; &lt;more&gt;" in html
    assert "<li>item one</li>" in html


def test_report_empty_dir(tmp_path):
    r = run_cli("report", tmp_path)
    assert r.returncode == 2
    assert "no *.md, *.csv or *.png" in r.stderr
