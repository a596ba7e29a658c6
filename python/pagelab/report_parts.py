"""The parts of a report that depend on what the directory holds: a run's
page (its summary, its epochs, every statistic), a sweep's figures (its
swept keys against chosen statistics), and the provenance every report
carries (pagelab's version and commit, the configuration, the date, the
machine). `report.py` assembles them into one page."""

from __future__ import annotations

import base64
import difflib
import html
import io
import json
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab import _pagelab, provenance

#: What a report plots when no `--stat` is given.
DEFAULT_STATS = ["cycles", "dtlb.l2.misses", "cache.llc.misses"]


def check_stats(names: list[str], available, where: str) -> None:
    """An unknown statistic is bad input naming it, with the closest names."""
    for n in names:
        if n not in available:
            close = difflib.get_close_matches(n, list(available), n=3)
            hint = f" (closest: {', '.join(close)})" if close else ""
            raise _pagelab.PagelabError(f"--stat {n}: no such statistic in {where}{hint}")


def stat_label(name: str) -> str:
    """A statistic in words (the run summary's label) with its name."""
    from pagelab.table import SUMMARY

    words = next((label.strip() for key, label, _ in SUMMARY if key == name), None)
    return f"{words} ({name})" if words and words != name else name


def figure_html(fig, alt: str, caption: str) -> str:
    """A finished figure as an embedded PNG (closed after)."""
    from pagelab.output import pyplot

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, bbox_inches="tight", pad_inches=0.05)
    pyplot().close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _kv_table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="kv">{cells}</table>'


# -- Provenance ---------------------------------------------------------------

#: The provenance fields, in the order a reader looks for them.
FIELDS = ["kind", "id", "variant", "seeds", "pagelab", "commit", "date", "host", "cpu", "cores", "os", "python",
          "jobs", "executor", "points", "ran", "reused", "seconds"]


def _flat(config_toml: str) -> dict[str, Any]:
    from pagelab.store import _flat as flatten

    return flatten(tomllib.loads(config_toml), "", {})


def config_summary(configs: list[str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The keys every configuration shares (with their value) and, for the
    others, each key's distinct values."""
    flats = [_flat(c) for c in configs]
    keys = sorted(set().union(*flats)) if flats else []
    common, varying = {}, {}
    for k in keys:
        values = {json.dumps(f.get(k), sort_keys=True) for f in flats}
        if len(values) == 1:
            common[k] = flats[0].get(k)
        else:
            varying[k] = sorted(values)
    return common, varying


def _config_text(flat: dict[str, Any]) -> str:
    return "\n".join(f"{k} = {json.dumps(v)}" for k, v in flat.items())


def provenance_html(info: dict | None, runs: pd.DataFrame | None = None, config_toml: str | None = None) -> str:
    """The provenance block: the recorded provenance file (`info`), what
    the store says of its runs (`runs`: their versions, hosts, dates and
    configurations: the keys they share and those that vary), or a run's
    configuration (`config_toml`)."""
    out = ["<h3>Provenance</h3>"]
    if info:
        rows = [(k, info[k]) for k in FIELDS if k in info]
        rows += [(k, v) for k, v in info.items() if k not in FIELDS and k not in ("title", "paper")]
        out.append(_kv_table([(k, ", ".join(map(str, v)) if isinstance(v, list) else v) for k, v in rows]))
    else:
        out.append("<p>No provenance file: these results were written before pagelab recorded one.</p>")
    if runs is not None and len(runs):
        when = pd.to_datetime(runs.finished_at)
        out.append(_kv_table([
            ("runs in the store", len(runs)),
            ("pagelab versions", ", ".join(sorted(set(map(str, runs.pagelab_version))))),
            ("hosts", ", ".join(sorted(set(map(str, runs.host))))),
            ("finished", f"{when.min():%Y-%m-%d %H:%M} to {when.max():%Y-%m-%d %H:%M} UTC"),
        ]))
        common, varying = config_summary(list(runs.config_toml))
        vary = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td>{html.escape(', '.join(v))}</td></tr>"
                       for k, v in varying.items())
        out.append(f"<details><summary>Configuration: {len(common)} keys every run shares, {len(varying)} that vary</summary>"
                   f'<table><tr><th>key</th><th>values</th></tr>{vary}</table>'
                   f"<pre>{html.escape(_config_text(common))}</pre></details>")
    if config_toml is not None:
        out.append(f"<details><summary>Configuration (config.resolved.toml: every key, runs again as is)</summary>"
                   f"<pre>{html.escape(config_toml)}</pre></details>")
    return "\n".join(out)


def store_runs(d: Path, experiment: str | None = None) -> pd.DataFrame | None:
    """The runs of DIR's results store (those `experiment` stored), or None
    without a store."""
    from pagelab.store import FILENAME, Store

    if not (d / FILENAME).exists():
        return None
    with Store(d, read_only=True) as store:
        runs = store.raw()
    return runs[runs.experiment == experiment] if experiment is not None else runs


# -- A run --------------------------------------------------------------------


def run_page(d: Path, stats: list[str] | None) -> tuple[str, str]:
    """(title, body) of a run directory's report: what ran, its summary,
    its epochs (with `run.epoch`), every other statistic, its provenance."""
    from pagelab.table import run_title, summary_rows, SUMMARY

    try:
        values = json.loads((d / "stats.json").read_text(encoding="utf-8"))
        config = (d / "config.resolved.toml").read_text(encoding="utf-8")
    except (OSError, ValueError) as e:
        raise _pagelab.PagelabError(f"{d}: not a readable run directory: {e}") from None
    info = provenance.read(d / provenance.RUN_FILE) or {}
    title = f"pagelab run: {run_title(config, float(info.get('seconds', 0.0)))}"
    body = [f"<h1>{html.escape(title)}</h1>", f'<p class="file">{html.escape(str(d))}</p>']
    body.append("<h3>Summary</h3>" + _kv_table(summary_rows(values)))
    epochs = d / "timeseries.json"
    if stats and not epochs.exists():
        raise _pagelab.PagelabError(f"--stat: {d} has no epochs to plot (a run with run.epoch set writes timeseries.json)")
    if epochs.exists():
        records = json.loads(epochs.read_text(encoding="utf-8"))
        names = stats or [s for s in DEFAULT_STATS if s in values]
        check_stats(names, values, str(d / "stats.json"))
        body.append(_epochs_figure(records, names))
    shown = {key for key, _, _ in SUMMARY}
    from pagelab.diff import number

    rest = [(k, number(v)) for k, v in sorted(values.items()) if k not in shown]
    body.append(f"<details><summary>The other {len(rest)} statistics (docs/stats.md)</summary>{_kv_table(rest)}</details>")
    body.append(provenance_html(info or None, config_toml=config))
    return title, "\n".join(body)


def _epochs_figure(records: list[dict], names: list[str]) -> str:
    """Each statistic per epoch (the increase over the epoch before; a
    reset starts from 0) against core 0's instructions, the epochs before
    the statistics' reset shaded."""
    from pagelab.experiments.common import finish_figure
    from pagelab.output import pyplot
    from pagelab.timeseries import frame

    df = frame(records, everything=True)
    x = df["epoch.instructions"] if "epoch.instructions" in df else df["instructions"].cumsum()
    plt = pyplot()
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 2.2 * len(names)), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        cumulative = df[name].astype(float)
        restarted = df.counted & ~df.counted.shift(fill_value=df.counted.iloc[0])
        per_epoch = cumulative.diff().where(~restarted, cumulative).fillna(cumulative)
        ax.plot(x, per_epoch, marker="o")
        ax.set_ylabel(f"{name}\nper epoch")
        for start, end in _uncounted_spans(df, x):
            ax.axvspan(start, end, color="#999999", alpha=0.2, lw=0)
    axes[-1, 0].set_xlabel("instructions retired by core 0")
    finish_figure(fig, note="Shaded: epochs before the statistics were reset (the first-touch pass or the warm-up), "
                            "not in the run's final statistics.")
    return figure_html(fig, "epochs", "Statistics per epoch (run.epoch)")


def _uncounted_spans(df: pd.DataFrame, x: pd.Series) -> list[tuple[float, float]]:
    spans, start, prev = [], None, 0.0
    for xi, counted in zip(x, df.counted):
        if not counted and start is None:
            start = prev
        if counted and start is not None:
            spans.append((start, prev))
            start = None
        prev = xi
    if start is not None:
        spans.append((start, prev))
    return spans


# -- A sweep ------------------------------------------------------------------


def sweep_section(table: pd.DataFrame, sweep_id: str, stats: list[str] | None) -> str:
    """A sweep's figures (one per statistic: its first numeric swept key,
    else its first, on the x axis, one panel per workload, a series per
    value of the other keys, means over seeds with their 95% intervals) and
    the table of those means; every statistic stays in ID.csv."""
    from pagelab.experiments.common import mean_over_seeds

    labels = list(table.columns[: list(table.columns).index("config_hash")]) if "config_hash" in table else []
    names = stats or [s for s in DEFAULT_STATS if s in table]
    check_stats(names, table.columns, f"{sweep_id}.csv")
    keys = [c for c in labels if c != "seed"]
    if "seed" in labels:
        means = mean_over_seeds(table[labels + names], keys)
    else:
        means = table[keys + names].assign(seeds=1)
    dims = [k for k in keys if k != "workload"]
    out = [_sweep_figure(means, dims, name, sweep_id) for name in names]
    shown = means[keys + ["seeds"] + [c for n in names for c in (n, f"{n}_ci95") if c in means]]
    from pagelab.report import table_html

    out.append(f"<h3>Means over seeds <span class=\"file\">every statistic of every run: {html.escape(sweep_id)}.csv</span></h3>")
    out.append(table_html(shown))
    return "\n".join(out)


def _sweep_figure(means: pd.DataFrame, dims: list[str], name: str, sweep_id: str) -> str:
    from pagelab.experiments.common import error_bars, finish_figure, legend_beside
    from pagelab.output import pyplot

    plt = pyplot()
    # A panel per workload when keys were swept; else the workloads side
    # by side on one axis.
    panels = list(dict.fromkeys(means["workload"])) if dims and "workload" in means else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(min(4.2 * len(panels), 13), 3.2), squeeze=False)
    # A numeric key is the natural x axis (a line over its values); else
    # the first key, as grouped bars.
    numeric = [k for k in dims if pd.api.types.is_numeric_dtype(means[k])]
    x_key = (numeric or dims or ["workload"])[0]
    series_keys = [k for k in dims if k != x_key]
    for ax, w in zip(axes[0], panels):
        sub = means if w is None else means[means.workload == w]
        groups = sub.groupby(series_keys, sort=False) if series_keys else [((), sub)]
        numeric = pd.api.types.is_numeric_dtype(sub[x_key])
        cats = list(dict.fromkeys(sub[x_key]))
        groups = list(groups)
        width = 0.8 / max(1, len(groups))
        for i, (values, g) in enumerate(groups):
            label = ", ".join(f"{k}={v}" for k, v in zip(series_keys, values if isinstance(values, tuple) else (values,))) or None
            yerr = error_bars(g, name)
            if numeric:
                ax.errorbar(g[x_key], g[name], yerr=yerr, marker="o", label=label)
            else:
                xs = [cats.index(c) + (i - (len(groups) - 1) / 2) * width for c in g[x_key]]
                ax.bar(xs, g[name], width, yerr=yerr, label=label)
        if not numeric:
            ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30 if len(cats) > 4 else 0)
        ax.set_xlabel(x_key)
        if w is not None:
            ax.set_title(f"workload {w}")
    axes[0, 0].set_ylabel(stat_label(name))
    legend_beside(fig)
    finish_figure(fig, seeds=means["seeds"], name=name)
    return figure_html(fig, f"{sweep_id}: {name}", f"{sweep_id}: {stat_label(name)} against {x_key}")
