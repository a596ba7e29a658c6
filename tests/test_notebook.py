"""examples/notebook.ipynb runs from top to bottom (nbclient, a fresh
kernel of this Python), in a directory of its own, and shows what it says
it shows: the runs' summary, the diff, the sweep's table, the figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebook.ipynb"


def _text(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o["text"])
        for kind in ("text/plain", "text/html"):
            out.append(str(o.get("data", {}).get(kind, "")))
    return "\n".join(out)


def test_the_example_notebook_runs(tmp_path):
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    nb = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert errors == [], errors
    texts = [_text(c) for c in code]
    joined = "\n".join(texts)
    # A run shows its summary (HTML in Jupyter), not its statistics.
    assert "L2 TLB misses (walks)" in joined and "<table>" in joined
    assert "os.policy: base -&gt; thp" in joined or "os.policy: base -> thp" in joined
    assert any(o.get("data", {}).get("image/png") for c in code for o in c.outputs), "the figure is shown"
    out = tmp_path / "out" / "notebook"
    for name in ("base", "thp", "coloring"):
        assert (out / name / "stats.json").exists()
    assert (out / "frag" / "results.duckdb").exists() and (out / "frag" / "frag.csv").exists()
    assert (out / "frag" / "huge-pages.png").exists() and (out / "frag" / "huge-pages.pdf").read_bytes()[:4] == b"%PDF"
    assert (out / "frag" / "report.html").exists()
