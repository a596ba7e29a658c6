"""`pagelab report DIR`: one self-contained HTML page of a run, a sweep or
an experiment. A run directory (`pagelab run --out`) gets its summary,
its epochs and every statistic; a results directory every text (*.md),
table (*.csv) and figure (*.png) in it and below, grouped by ID, a sweep's
figures of its swept keys against chosen statistics (`--stat`), and each
group's provenance (`report_parts`). Figures are embedded as base64 data
URIs, tables as HTML; the page loads nothing else.

Per experiment a reader sees its figure first, then pagelab's numbers
beside the paper's (`ID.paper.csv`, from the paper's values the
experiment keeps as data), then the write-up, then the run's table once:
a table of the write-up that repeats one of the CSVs is left out."""

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
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
.num { text-align: right; }
th { background: #f0f0f0; }
figure { margin: 1em 0; }
figure img { width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.85em; }
table.kv th { text-align: left; font-weight: normal; background: #f7f7f7; }
details { margin: 0.6em 0; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.8em; }
code { background: #f4f4f4; padding: 0 2px; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
.file { color: #888; font-size: 0.8em; }
"""


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)
    return t


def _list_item(line: str) -> str | None:
    """`ul` for a `- ` or `* ` item, `ol` for `1. `, else None."""
    if line.startswith(("- ", "* ")):
        return "ul"
    return "ol" if re.match(r"\d+\.\s", line) else None


def markdown_to_html(md: str, skip_tables: set[tuple[str, ...]] = frozenset()) -> str:
    """The Markdown the experiments write: headings, paragraphs, lists,
    pipe tables, inline code and bold. A table whose header is in
    `skip_tables` is left out (the page shows it from its CSV)."""
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
            if rows and tuple(rows[0]) in skip_tables:
                # The note that says what its ± is goes with it.
                j = i
                while j < len(lines) and not lines[j].strip():
                    j += 1
                if j < len(lines) and lines[j].strip().startswith("±:"):
                    while j < len(lines) and lines[j].strip():
                        j += 1
                    i = j
                continue
            out.append("<table>")
            for k, cells in enumerate(rows):
                tag = "th" if k == 0 else "td"
                out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
            out.append("</table>")
        elif _list_item(s):
            flush()
            tag = "ol" if _list_item(s) == "ol" else "ul"
            out.append(f"<{tag}>")
            while i < len(lines) and _list_item(lines[i].strip()) == tag:
                item = [re.sub(r"^(?:[-*]|\d+\.)\s+", "", lines[i].strip())]
                i += 1
                while i < len(lines) and lines[i].strip() and not _list_item(lines[i].strip()) and (
                    lines[i].startswith(" ") or not lines[i].strip().startswith(("#", "|"))
                ):
                    item.append(lines[i].strip())
                    i += 1
                out.append("<li>" + _inline(" ".join(item)) + "</li>")
            out.append(f"</{tag}>")
        else:
            para.append(s)
            i += 1
    flush()
    return "\n".join(out)


def build(directory: str | Path, title: str | None = None, stats: list[str] | None = None) -> str:
    """The report of DIR: a run's page when DIR is a run directory
    (stats.json), else one section per experiment or sweep (its files
    grouped by ID), each with its provenance."""
    from pagelab import report_parts

    d = Path(directory)
    if (d / "stats.json").exists():
        run_title, body = report_parts.run_page(d, stats)
        return page(title or run_title, body)
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: {'not a directory' if d.exists() else 'no such directory'}")
    files = sorted(
        p for p in d.rglob("*")
        if p.is_file() and p.suffix in (".md", ".csv", ".png") and not p.name.startswith(".") and not _in_run_dir(p, d)
    )
    if not files:
        raise FileNotFoundError(f"{d}: nothing to report: no run (stats.json), no *.md, *.csv or *.png files")
    # Group by stem prefix: ID.md, then ID.csv, then ID*.png, in that order.
    groups: dict[Path, list[Path]] = {}
    for p in files:
        key = p.parent / p.name.split(".")[0]
        base = next((k for k in groups if k.parent == p.parent and p.stem.startswith(k.name)), key)
        groups.setdefault(base, []).append(p)
    body = [f"<h1>{html.escape(title or f'pagelab results: {d}')}</h1>"]
    body.append("<ul>" + "".join(f'<li><a href="#{_anchor(k, d)}">{html.escape(str(k.relative_to(d)))}</a></li>' for k in groups) + "</ul>")
    for key, members in groups.items():
        body.append(f'<section id="{_anchor(key, d)}">')
        body += _group(key, members, d, stats)
        body.append("</section>")
    return page(title or "pagelab report", "\n".join(body))


def _in_run_dir(p: Path, d: Path) -> bool:
    """Whether `p` lies in a run directory below `d` (its own report)."""
    return any((parent / "stats.json").exists() for parent in p.parents if parent != d and d in parent.parents)


def _group(key: Path, members: list[Path], d: Path, stats: list[str] | None) -> list[str]:
    """One experiment's or sweep's section: its title, figures, the paper
    beside it, its write-up, its table (a sweep's: figures of its swept
    keys and the means of the chosen statistics), its provenance."""
    from pagelab import provenance, report_parts

    info = provenance.read(key.parent / f"{key.name}{provenance.SUFFIX}")
    tables = {p: _read_csv(p) for p in members if p.suffix == ".csv"}
    texts = {p: _read_text(p) for p in members if p.suffix == ".md"}
    sweep_table = next((t for p, t in tables.items() if p.name == f"{key.name}.csv" and "config_hash" in t), None)
    is_sweep = (info or {}).get("kind") == "sweep" or (sweep_table is not None and not texts)
    out: list[str] = []
    if is_sweep and sweep_table is not None:
        out.append(f"<h1>Sweep {html.escape(key.name)}</h1>")
        out.append(report_parts.sweep_section(sweep_table, key.name, stats))
        members = [p for p in members if p not in tables]
    # A write-up's table that repeats a CSV is left out: the same header, or
    # the header without the spread columns (its `mean ± ci95` form).
    headers = {tuple(str(c) for c in df.columns) for df in tables.values()}
    headers |= {tuple(c for c in h if not c.endswith(("_std", "_ci95"))) for h in headers}
    # The write-up's title heads the section, above its figure.
    for p, text in texts.items():
        first, _, rest = text.partition("\n")
        if first.startswith("# "):
            out.append(markdown_to_html(first))
            texts[p] = rest
    for p in sorted(members, key=lambda p: (_rank(p), p.name)):
        rel = html.escape(str(p.relative_to(d)))
        if p.suffix == ".md":
            out.append(markdown_to_html(texts[p], headers))
        elif p.suffix == ".csv":
            title = "pagelab beside the paper" if p.name.endswith(PAPER_SUFFIX) else "Table"
            out.append(f'<h3>{title} <span class="file">{rel}</span></h3>')
            out.append(table_html(tables[p]))
        else:
            data = base64.b64encode(_read_png(p)).decode("ascii")
            pdf = " (and .pdf)" if p.with_suffix(".pdf").exists() else ""
            out.append(f'<figure><img alt="{rel}" src="data:image/png;base64,{data}"><figcaption>{rel}{pdf}</figcaption></figure>')
    runs = report_parts.store_runs(key.parent, key.name)
    if info is not None or (runs is not None and len(runs)):
        out.append(report_parts.provenance_html(info, runs))
    return out


def page(title: str, body: str) -> str:
    """A self-contained HTML page: the style inline, nothing loaded."""
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + body
        + f"\n<script>{FIGURE_CHECK}</script>\n</body></html>\n"
    )


PAPER_SUFFIX = ".paper.csv"

#: Once the page has loaded: a figure that did not decode is a console
#: error naming it, and <body data-figures="LOADED/ALL"> says how many did
#: (what the browser test reads).
FIGURE_CHECK = """
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const ok = imgs.filter((i) => i.complete && i.naturalWidth > 0);
  for (const i of imgs) if (!ok.includes(i)) console.error("pagelab report: figure did not load: " + i.alt);
  document.body.dataset.figures = ok.length + "/" + imgs.length;
});
"""


def table_html(df: pd.DataFrame) -> str:
    """A table with text columns left-aligned and numbers right-aligned
    (4 significant digits; the CSV keeps them whole), empty cells empty."""
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]

    def cell(v, num: bool) -> str:
        if isinstance(v, float) and v != v:
            return "<td></td>"
        text = f"{v:.4g}" if isinstance(v, float) else str(v)
        return f'<td class="{"num" if num else "text"}">{html.escape(text)}</td>'

    head = "".join(f'<th class="{"num" if n else "text"}">{html.escape(str(c))}</th>' for c, n in zip(df.columns, numeric))
    rows = ["<tr>" + "".join(cell(v, n) for v, n in zip(r, numeric)) + "</tr>" for r in df.itertuples(index=False)]
    return '<table class="csv"><tr>' + head + "</tr>" + "".join(rows) + "</table>"


def _rank(p: Path) -> int:
    """Figures, the paper's comparison, the write-up, then the tables."""
    if p.suffix == ".png":
        return 0
    if p.name.endswith(PAPER_SUFFIX):
        return 1
    return 2 if p.suffix == ".md" else 3


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _pagelab.TraceError(f"{p}: not UTF-8 text (byte offset {e.start})") from None


def _read_png(p: Path) -> bytes:
    """A figure's bytes, once they decode as a PNG image (a browser would
    show a broken image in its place): else the file is refused, named."""
    import io

    from PIL import Image, UnidentifiedImageError

    data = p.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format != "PNG":
                raise _pagelab.TraceError(f"{p}: a {image.format} image, not a PNG")
            image.load()
    except UnidentifiedImageError:
        # Its own message names the in-memory buffer, not the file.
        raise _pagelab.TraceError(f"{p}: not a PNG image that decodes (no image format known to Pillow)") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise _pagelab.TraceError(f"{p}: not a PNG image that decodes ({str(e) or type(e).__name__})") from None
    return data


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


def write_report(directory: str | Path, out: str | Path | None = None, stats: list[str] | None = None) -> Path:
    """Writes DIR/report.html (or `out`) and returns its path. `stats`:
    the statistics a sweep's figures (or a run's epochs) show."""
    path = Path(out) if out else Path(directory) / "report.html"
    write_atomic(path, build(directory, stats=stats))
    return path
