"""Helpers the experiments share: Markdown tables, atomic figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.output import pyplot, save_figure, write_atomic


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

