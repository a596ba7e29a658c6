"""`pagelab report DIR`: one self-contained HTML page with every text
(*.md), table (*.csv) and figure (*.png) of a results directory (and its
subdirectories). Figures are embedded as base64 data URIs, tables as HTML;
the page loads nothing else."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from pagelab import _pagelab
from pagelab.output import write_atomic

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.8em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; }
img { max-width: 100%; }
code { background: #f4f4f4; padding: 0 2px; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
.file { color: #888; font-size: 0.8em; }
"""


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)
    return t


def markdown_to_html(md: str) -> str:
    """The Markdown the experiments write: headings, paragraphs, lists,
    pipe tables, inline code and bold."""
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if not s:
            flush()
            i += 1
        elif s.startswith("#"):
            flush()
            level = min(6, len(s) - len(s.lstrip("#")))
            out.append(f"<h{level}>{_inline(s[level:].strip())}</h{level}>")
            i += 1
        elif s.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            out.append("<table>")
            for k, cells in enumerate(rows):
                tag = "th" if k == 0 else "td"
                out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
            out.append("</table>")
        elif s.startswith(("- ", "* ")):
            flush()
            out.append("<ul>")
            while i < len(lines) and lines[i].strip().startswith(("- ", "* ")):
                item = [lines[i].strip()[2:]]
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    item.append(lines[i].strip())
                    i += 1
                out.append("<li>" + _inline(" ".join(item)) + "</li>")
            out.append("</ul>")
        else:
            para.append(s)
            i += 1
    flush()
    return "\n".join(out)


def build(directory: str | Path, title: str | None = None) -> str:
    d = Path(directory)
    files = sorted(
        p for p in d.rglob("*") if p.is_file() and p.suffix in (".md", ".csv", ".png") and not p.name.startswith(".")
    )
    if not files:
        raise FileNotFoundError(f"{d}: no *.md, *.csv or *.png files")
    # Group by stem prefix: ID.md, then ID.csv, then ID*.png, in that order.
    groups: dict[Path, list[Path]] = {}
    for p in files:
        key = p.parent / p.name.split(".")[0]
        base = next((k for k in groups if k.parent == p.parent and p.stem.startswith(k.name)), key)
        groups.setdefault(base, []).append(p)
    order = {".md": 0, ".csv": 1, ".png": 2}
    body = [f"<h1>{html.escape(title or f'pagelab results: {d}')}</h1>"]
    body.append("<ul>" + "".join(f'<li><a href="#{_anchor(k, d)}">{html.escape(str(k.relative_to(d)))}</a></li>' for k in groups) + "</ul>")
    for key, members in groups.items():
        body.append(f'<section id="{_anchor(key, d)}">')
        for p in sorted(members, key=lambda p: (order[p.suffix], p.name)):
            rel = html.escape(str(p.relative_to(d)))
            body.append(f'<p class="file">{rel}</p>')
            if p.suffix == ".md":
                body.append(markdown_to_html(_read_text(p)))
            elif p.suffix == ".csv":
                df = _read_csv(p)
                body.append(f"<h3>Table {rel}</h3>")
                body.append(df.to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0, classes="csv"))
            else:
                data = base64.b64encode(p.read_bytes()).decode("ascii")
                body.append(f'<figure><img alt="{rel}" src="data:image/png;base64,{data}"><figcaption>{rel}</figcaption></figure>')
        body.append("</section>")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title or 'pagelab report')}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _pagelab.TraceError(f"{p}: not UTF-8 text (byte offset {e.start})") from None


def _read_csv(p: Path):
    """A table of the directory; an empty or malformed one is refused,
    naming the file (and the line pandas gives)."""
    try:
        return pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise _pagelab.TraceError(f"{p}: empty CSV file (no header line)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise _pagelab.TraceError(f"{p}: not a readable CSV table: {str(e).strip().splitlines()[0]}") from None


def _anchor(key: Path, d: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(key.relative_to(d)))


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """Writes DIR/report.html (or `out`) and returns its path."""
    path = Path(out) if out else Path(directory) / "report.html"
    write_atomic(path, build(directory))
    return path
