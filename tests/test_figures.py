"""Figures fit to print (experiments/common.py): error bars cut at the
quantity's range and captioned with their seeds, axes of nonnegative data
from 0, legends beside the axes, every figure as PNG and PDF."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pagelab.experiments import common


def _table(means, halves, seeds=2):
    return pd.DataFrame({"q": means, "q_ci95": halves, "seeds": seeds})


def test_error_bars_stay_inside_the_quantitys_range():
    t = _table([0.1, 0.5, 0.95], [0.3, 0.1, 0.2])
    below, above = common.error_bars(t, "q", hi=1)
    assert list(below) == pytest.approx([0.1, 0.1, 0.2])  # never under 0
    assert list(above) == pytest.approx([0.3, 0.1, 0.05])  # never over 1
    signed = common.error_bars(_table([-0.2], [0.5]), "q", lo=None)
    assert list(signed[:, 0]) == [0.5, 0.5]
    assert common.error_bars(_table([1.0], [float("nan")], seeds=1), "q") is None
    scaled = common.error_bars(_table([2.0], [1.0]), "q", scale=0.5)
    assert list(scaled[:, 0]) == [0.5, 0.5]


def test_the_caption_says_what_the_bars_are_and_that_two_seeds_are_few():
    two = common.interval_note(pd.Series([2, 2]))
    assert "95% confidence interval of the mean over 2 seeds" in two and "wide" in two and "12.7" in two
    three = common.interval_note([3, 3])
    assert "over 3 seeds" in three and "wide" not in three
    assert "over 2-3 seeds" in common.interval_note([2, 3])


def _bars(plt, t):
    fig, ax = plt.subplots()
    ax.errorbar([0, 1, 2], t.q, yerr=common.error_bars(t, "q"), marker="o", label="a series")
    ax.legend()
    return fig, ax


def test_a_figure_with_error_bars_must_say_what_they_are(tmp_path):
    plt = common.pyplot()
    t = _table([0.0, 0.5, 1.0], [0.2, 0.2, 0.2])
    fig, _ = _bars(plt, t)
    with pytest.raises(ValueError, match="must say what they are"):
        common.write_figure(fig, tmp_path / "x.png")
    fig, ax = _bars(plt, t)
    common.legend_beside(fig)
    assert ax.get_legend() is None and len(fig.legends) == 1
    common.finish_figure(fig, seeds=t.seeds, note="An experiment's own sentence.")
    caption = " ".join(text.get_text() for text in fig.texts)
    assert "over 2 seeds" in caption.replace("\n", " ") and "own sentence" in caption.replace("\n", " ")
    assert ax.get_ylim()[0] == 0  # the data start at 0; matplotlib's margin went below it
    path = common.write_figure(fig, tmp_path / "x.png", seeds=t.seeds)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "x.pdf").read_bytes()[:5] == b"%PDF-"
    assert not list(tmp_path.glob(".*tmp*"))


def test_a_signed_quantity_keeps_its_negative_axis(tmp_path):
    plt = common.pyplot()
    fig, ax = plt.subplots()
    ax.bar([0, 1], [-0.3, 0.2])
    common.finish_figure(fig)
    assert ax.get_ylim()[0] < -0.3


def test_the_style_is_applied_and_a_share_axis_is_exactly_0_to_1():
    plt = common.pyplot()
    assert plt.rcParams["pdf.fonttype"] == 42 and not plt.rcParams["axes.spines.top"]
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.2, 1.0])
    common.share_axis(ax, "share")
    lo, hi = ax.get_ylim()
    assert lo == 0 and 1 <= hi <= 1.05 and max(ax.get_yticks()[ax.get_yticks() <= hi]) == 1
    plt.close(fig)
    assert common.system_color("thp") == common.system_color("thp", 5) != common.system_color("base")
    assert np.unique([common.system_color(f"x{i}", i) for i in range(7)]).size == 7


def test_a_markdown_table_says_what_plus_minus_is():
    t = pd.DataFrame({"w": ["a"], "q": [1.5], "seeds": [2], "q_std": [0.1], "q_ci95": [0.9]})
    md = common.markdown_table(t)
    assert "| a | 1.500 ± 0.900 | 2 |" in md and "±: 95% confidence interval of the mean over 2 seeds" in md
    one = common.markdown_table(t.assign(seeds=1, q_ci95=float("nan")))
    assert "±" not in one
