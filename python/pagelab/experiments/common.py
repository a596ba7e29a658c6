"""What several experiment packages use: units, Markdown tables, atomic
writes of tables, texts and figures. A helper of one paper's experiments
only lives in its package (e.g. `chp/common.py`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.output import pyplot, save_figure, write_atomic

MIB = 1 << 20
GIB = 1 << 30

# The timing under which every package's results page was measured: the
# fixed model without prefetchers (pagelab's only model until the interval
# model became the default). Each package's machine keeps it until its
# experiments are measured again under the interval model (the timing
# issue's part 6), so that `reproduce` gives what its results page shows.
MEASURED_TIMING = {"timing": {"model": "fixed"}, "prefetch": {"enabled": False}}


def fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return ""
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def mean_over_seeds(d: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per value of `keys` (in order of appearance): the mean of
    every numeric column, with `seeds`, the number of runs averaged, after
    the keys."""
    g = d.groupby(keys, sort=False)
    t = g.mean(numeric_only=True).reset_index()
    t.insert(len(keys), "seeds", g.size().values)
    return t


def markdown_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    write_atomic(path, df.to_csv(index=False))
    return path


def write_text(text: str, path: Path) -> Path:
    write_atomic(path, text)
    return path


def write_figure(fig, path: Path) -> Path:
    """Lays out, saves (atomically) and closes a finished figure."""
    fig.tight_layout()
    path = save_figure(fig, path)
    pyplot().close(fig)
    return path



def paper_values(package: str, exp_id: str) -> pd.DataFrame:
    """The paper's numbers for `exp_id`, kept as data beside its package:
    `paper/ID.csv` with the columns quantity, paper, source."""
    path = Path(package).parent / "paper" / f"{exp_id}.csv"
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def beside_paper(package: str, exp_id: str, measured: dict[str, object], out: Path) -> tuple[pd.DataFrame, Path]:
    """pagelab's value of each quantity of `paper/ID.csv` beside the
    paper's, in the paper file's order, written to `out/ID.paper.csv`
    (which the report shows after the figure). `measured` must name
    exactly the paper file's quantities: a quantity either side alone is a
    bug in the experiment, not a gap to leave blank."""
    paper = paper_values(package, exp_id)
    wanted, given = list(paper.quantity), set(measured)
    if set(wanted) != given:
        raise KeyError(f"{exp_id}: quantities without a value {sorted(set(wanted) - given)}, without a paper row {sorted(given - set(wanted))}")
    t = pd.DataFrame({"quantity": paper.quantity, "paper": paper.paper,
                      "pagelab": [fmt(measured[q]) for q in wanted], "source": paper.source})
    return t, write_csv(t, out / f"{exp_id}.paper.csv")


def write_outputs(package: str, exp_id: str, table: pd.DataFrame, plot, measured: dict[str, object],
                  out: Path) -> tuple[list[Path], pd.DataFrame]:
    """An experiment's table (`ID.csv`), its figure (`ID.png`, drawn by
    `plot(table, path)`) and the paper beside it (`ID.paper.csv`, see
    `beside_paper`): the files written, and the paper table for the
    write-up."""
    files = [write_csv(table, out / f"{exp_id}.csv"), plot(table, out / f"{exp_id}.png")]
    paper, path = beside_paper(package, exp_id, measured, out)
    return files + [path], paper
