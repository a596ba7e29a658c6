"""What several experiment packages use: units, Markdown tables, atomic
writes of tables, texts and figures. A helper of one paper's experiments
only lives in its package (e.g. `chp/common.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pagelab import _pagelab
from pagelab.output import pyplot, save_figure, write_atomic  # noqa: F401 - pyplot: the experiments' import

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


def error_bars(t: pd.DataFrame, col: str, lo: float | None = 0.0, hi: float | None = None, scale: float = 1.0):
    """`col`'s 95% confidence intervals for matplotlib's `yerr`, as (below,
    above) distances from each mean, cut at the quantity's range [lo, hi]
    (a count, a cycle count or a ratio is never drawn below 0; a share
    never above 1: pass `hi=1`; a signed quantity, a gain that may be
    negative, passes `lo=None`), times `scale` (a unit change). None (no
    bars) when no point of `t` has more than one seed."""
    ci = t.get(f"{col}_ci95")
    if ci is None or not ci.notna().any():
        return None
    mean = t[col].to_numpy(dtype=float) * scale
    half = ci.fillna(0).to_numpy(dtype=float) * scale
    below, above = half.copy(), half.copy()
    if lo is not None:
        below = np.minimum(below, np.maximum(mean - lo * scale, 0))
    if hi is not None:
        above = np.minimum(above, np.maximum(hi * scale - mean, 0))
    return np.vstack([below, above])


def markdown_table(df: pd.DataFrame) -> str:
    """A Markdown table of `df`. A quantity with a spread (`<col>_ci95`,
    from `mean_over_seeds`) shows as `mean ± 95% half-width` where it has
    more than one seed, and a line under the table says what ± is (and,
    with two seeds, that it is wide); the spread columns themselves are
    left to the CSV."""
    cols = [c for c in df.columns if not c.endswith(tuple(f"_{s}" for s in SPREAD))]
    shown = False

    def cell(row: dict, c: str) -> str:
        nonlocal shown
        ci = row.get(f"{c}_ci95", float("nan"))
        if isinstance(ci, float) and ci == ci:
            shown = True
            return f"{fmt(row[c])} ± {fmt(ci)}"
        return fmt(row[c])

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for values in df.itertuples(index=False):
        row = dict(zip(df.columns, values))
        lines.append("| " + " | ".join(cell(row, c) for c in cols) + " |")
    text = "\n".join(lines) + "\n"
    if shown and "seeds" in df:
        note = interval_note(df["seeds"][df["seeds"] > 1]).replace("Error bars:", "±:", 1)
        text += f"\n{note}\n"
    return text


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    write_atomic(path, df.to_csv(index=False))
    return path


def write_text(text: str, path: Path) -> Path:
    write_atomic(path, text)
    return path


# -- Figures: one style for every experiment, fit to print ----------------

#: pagelab's one figure style, which `pyplot()` applies (every experiment's
#: figures, the demo's, the reports'): sizes readable in a two-column
#: paper, the Okabe-Ito palette (distinguishable with every common colour
#: blindness and in grey), light horizontal grid lines, no top or right
#: frame, legends without a frame, and TrueType fonts in the PDF (text
#: stays text, as publishers ask).
FIGURE_STYLE = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.prop_cycle": "cycler('color', ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', "
                       "'#56B4E9', '#F0E442', '#000000'])",
    "errorbar.capsize": 2.5,
    "lines.markersize": 4.5,
    "savefig.dpi": 150,
    "pdf.fonttype": 42,
}

#: The palette of FIGURE_STYLE, by name, so that a figure can give a
#: series a fixed colour.
PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000", "grey": "#999999"}

#: One colour per system across every experiment's figures: the baseline
#: of 4 KiB pages grey, THP blue, page coloring green, the papers' systems
#: in the warm colours.
SYSTEM_COLORS = {
    "base": PALETTE["grey"], "4k": PALETTE["grey"], "base-4k": PALETTE["grey"],
    "thp": PALETTE["blue"], "coloring": PALETTE["green"], "chp": PALETTE["vermillion"],
    "hugetlb-2m": PALETTE["sky"], "hugetlb-1g": PALETTE["purple"],
}


#: Colours for the series that are no system of `SYSTEM_COLORS`: first
#: those the common systems (base, THP, coloring, CHP) do not have, black
#: late (reference marks are black).
OTHER_COLORS = [PALETTE[k] for k in ("orange", "sky", "purple", "yellow", "blue", "green", "vermillion", "black")]


def system_color(name: str, i: int = 0) -> str:
    """A system's colour in every figure (`SYSTEM_COLORS`), else the i-th of
    `OTHER_COLORS`."""
    return SYSTEM_COLORS.get(str(name), OTHER_COLORS[i % len(OTHER_COLORS)])


#: The top of a share's axis: a little above 1, so that a point at 1 is not
#: cut, with no tick beyond it.
SHARE_TOP = 1.04


def share_axis(ax, label: str | None = None) -> None:
    """A y axis for a quantity in [0, 1] (a share, a coverage, a success
    ratio): exactly that range."""
    ax.set_ylim(0, SHARE_TOP)
    if label:
        ax.set_ylabel(label)


def legend_beside(fig, axes=None, title: str | None = None) -> None:
    """One legend for the figure, to the right of the axes (never over
    data): the entries of every axes, each label once."""
    axes = list(np.ravel(axes if axes is not None else fig.axes))
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if handles:
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), title=title)


def _has_error_bars(fig) -> bool:
    from matplotlib.container import BarContainer, ErrorbarContainer

    for ax in fig.axes:
        for c in ax.containers:
            if isinstance(c, ErrorbarContainer) and c.has_yerr:
                return True
            if isinstance(c, BarContainer) and getattr(c, "errorbar", None) is not None:
                return True
    return False


def interval_note(seeds) -> str:
    """What the error bars are, for a figure's caption: the 95% interval
    of the mean over N seeds, and, with two, a warning that it is wide
    (Student's t for one degree of freedom is 12.7)."""
    n = pd.Series(np.ravel(seeds)).dropna().astype(int)
    lo, hi = int(n.min()), int(n.max())
    count = f"{lo} seeds" if lo == hi else f"{lo}-{hi} seeds"
    note = f"Error bars: 95% confidence interval of the mean over {count} (Student's t)."
    if lo == 2:
        note += f" With 2 seeds the interval is wide (t = {t95(2):.1f}); run more seeds (--seeds N) to narrow it."
    return note


def _data_bottom(ax) -> float | None:
    """The lowest y any drawn data reaches (lines, bars, error bars)."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    ys: list[float] = []
    for line in ax.lines:
        y = np.asarray(line.get_ydata(), dtype=float)
        ys += list(y[np.isfinite(y)])
    for patch in ax.patches:
        if isinstance(patch, Rectangle):
            ys += [patch.get_y(), patch.get_y() + patch.get_height()]
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                ys += list(np.asarray(seg)[:, 1])
    return min(ys) if ys else None


def clip_at_zero(fig) -> None:
    """An axis whose data are all at or above 0 starts at 0 (matplotlib's
    margin would draw it below, where a count or a ratio cannot be)."""
    for ax in fig.axes:
        bottom = _data_bottom(ax)
        lo, hi = ax.get_ylim()
        if bottom is not None and bottom >= 0 and lo < 0 and ax.get_yscale() == "linear":
            ax.set_ylim(0, hi)


def finish_figure(fig, seeds=None, note: str | None = None, name: str = "figure") -> None:
    """Lays out a finished figure: axes of nonnegative data start at 0,
    and a figure with error bars says what they are, in a caption under
    the axes (`interval_note` of `seeds`, the table's `seeds` column or a
    count; leaving it out is an error), followed by `note`, a sentence of
    the experiment's own."""
    has_bars = _has_error_bars(fig)
    if has_bars and seeds is None:
        raise ValueError(f"{name}: a figure with error bars must say what they are (pass seeds=)")
    caption = " ".join(s for s in (interval_note(seeds) if has_bars else None, note) if s)
    clip_at_zero(fig)
    fig.tight_layout()
    if caption:
        import textwrap

        width = max(60, int(fig.get_figwidth() * 14))
        fig.text(0.01, 0.0, textwrap.fill(caption, width), ha="left", va="top", fontsize=7, color="#444444")


def write_figure(fig, path: str | Path, seeds=None, note: str | None = None) -> Path:
    """`finish_figure`, then saves the figure as PNG and PDF (atomically)
    and closes it."""
    path = Path(path)
    finish_figure(fig, seeds, note, path.name)
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
