"""Helpers the experiments share: Markdown tables, atomic figures, and
where a graph kernel's traversal begins."""

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


#: Accesses per vertex of a graph kernel's initialization loop, which
#: sweeps its arrays in order before the traversal: bfs's `InitParent`
#: loads index[v] and index[v + 1] and stores parent[v] (graph/bfs.rs, a
#: test pins it); cc's `comp[v] = v` and pr's `scores[v] = 1/n` are one
#: store (graph/cc.rs, graph/pr.rs); tc starts counting at once. On a
#: scale-25 graph bfs's loop alone is 100 M accesses: a measured window
#: from the kernel's start sees only it.
KERNEL_INIT_ACCESSES = {"bfs": 3, "cc": 1, "pr": 1, "tc": 0}


def past_kernel_init(kernel: str, scale: int) -> int:
    """`workload.fast_forward` that skips the kernel's initialization loop
    on a graph of 2^scale vertices."""
    return KERNEL_INIT_ACCESSES[kernel] << scale
