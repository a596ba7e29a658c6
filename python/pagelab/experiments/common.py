"""What several experiment packages use: units, Markdown tables, atomic
writes of tables, texts and figures. A helper of one paper's experiments
only lives in its package (e.g. `chp/common.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pagelab import _pagelab
from pagelab.output import pyplot, save_figure, write_atomic

MIB = 1 << 20
GIB = 1 << 30



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


#: Seeds per point, by variant (every experiment's policy, in one place):
#: the CHP paper averages three runs (IV-A); `quick` keeps two, so that its
#: tables have a spread at twice the cost; `tiny` only checks that the code
#: runs. `pagelab reproduce --seeds N` overrides it (seeds 1..N).
SEEDS = {"full": 3, "quick": 2, "tiny": 1}
#: The spread columns `mean_over_seeds` adds beside each quantity `<col>`.
SPREAD = ("std", "ci95")


def seeds(variant: str) -> list[int]:
    """The seeds every point of `variant` runs with: 1..SEEDS[variant]."""
    return list(range(1, SEEDS[variant] + 1))


def t95(n: int) -> float:
    """Student's t quantile for a two-sided 95% interval from `n` runs
    (n - 1 degrees of freedom; NaN below 2): the core's, which the sampled
    windows' intervals use too."""
    return _pagelab.student_t_975(n - 1) if n >= 2 else float("nan")


def mean_over_seeds(d: pd.DataFrame, keys: list[str], seed: str = "seed") -> pd.DataFrame:
    """One row per value of `keys` (in order of appearance): `seeds`, the
    number of runs averaged, after the keys; the mean of every other
    numeric column under its own name (an integer column stays integer
    where every mean is whole); then, per such column `<col>`, `<col>_std`,
    the sample standard deviation over the runs (ddof = 1), and
    `<col>_ci95`, the half-width of the mean's 95% confidence interval
    (t95(seeds) x std / sqrt(seeds)); both NaN (empty in a CSV) for one
    seed. The `seed` column itself is not averaged. A ratio to a reference
    point is best computed per seed before (`paired`), so that its spread
    is the ratio's own."""
    g = d.drop(columns=[seed], errors="ignore").groupby(keys, sort=False)
    mean, std, n = g.mean(numeric_only=True), g.std(numeric_only=True, ddof=1), g.size()
    half = std.mul((n.map(t95) / np.sqrt(n)).to_numpy(), axis=0)
    t = mean.reset_index()
    t.insert(len(keys), "seeds", n.to_numpy())
    for c in mean.columns:
        if pd.api.types.is_integer_dtype(d[c]) and (mean[c] % 1 == 0).all():
            t[c] = mean[c].to_numpy().astype(d[c].dtype)
    for c in mean.columns:
        t[f"{c}_std"], t[f"{c}_ci95"] = std[c].to_numpy(), half[c].to_numpy()
    return t


def paired(d: pd.DataFrame, col: str, by: list[str], reference) -> pd.Series:
    """For each row of `d`, `col` of the row that `reference` (a boolean
    mask) selects with the same values of `by`; `by` includes `seed`, so
    that a ratio pairs the runs of one seed (the same access stream, the
    same fragmentation), whose noise it then cancels."""
    ref = d[reference].set_index(by)[col]
    at = pd.MultiIndex.from_frame(d[by]) if len(by) > 1 else pd.Index(d[by[0]])
    return pd.Series(ref.reindex(at).to_numpy(), index=d.index)


def with_spread(t: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """`columns` (an experiment's own, in its order), then `seeds` unless
    among them, then the spread columns of those of them that have one."""
    extra = [] if "seeds" in columns else ["seeds"]
    spread = [f"{c}_{s}" for c in columns for s in SPREAD if f"{c}_{s}" in t]
    return t[columns + extra + spread]


def error_bars(t: pd.DataFrame, col: str):
    """`col`'s 95% confidence half-widths, for matplotlib's `yerr`: None
    (no bars) when no point of `t` has more than one seed."""
    ci = t.get(f"{col}_ci95")
    if ci is None or not ci.notna().any():
        return None
    return ci.fillna(0).to_numpy()


def markdown_table(df: pd.DataFrame) -> str:
    """A Markdown table of `df`. A quantity with a spread (`<col>_ci95`,
    from `mean_over_seeds`) shows as `mean ± 95% half-width` where it has
    more than one seed; the spread columns themselves are left to the CSV."""
    cols = [c for c in df.columns if not c.endswith(tuple(f"_{s}" for s in SPREAD))]

    def cell(row: dict, c: str) -> str:
        ci = row.get(f"{c}_ci95", float("nan"))
        return fmt(row[c]) + (f" ± {fmt(ci)}" if isinstance(ci, float) and ci == ci else "")

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for values in df.itertuples(index=False):
        row = dict(zip(df.columns, values))
        lines.append("| " + " | ".join(cell(row, c) for c in cols) + " |")
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
