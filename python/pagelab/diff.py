"""`pagelab diff A B`: what changed between two runs, or between the runs
of two results stores.

A side is a run directory (`stats.json` and `config.resolved.toml`, as
`pagelab run --out` writes), a results store (a directory holding
`results.duckdb`, as a sweep or an experiment writes, or the `.duckdb`
file itself) or, from Python, a `pagelab.Result`. Two runs are compared
statistic by statistic; two stores are compared run by run, each run of A
matched to the run of B with the same parameters (grid labels, workload,
seed), and the runs without a match are listed.

    >>> d = pagelab.diff("out/base", "out/thp")
    >>> d.stats.loc[d.stats.statistic == "dtlb.l2.misses", "ratio"]

`Diff.stats` has one row per statistic that differs: `a`, `b` (for
stores, the sums over the matched pairs), `ratio` = b / a (for stores, the
ratio of those sums), `ratio_min` and `ratio_max` over the pairs, and
`pairs`, how many pairs differ in it. Rows are sorted by the size of the
change, |log(ratio)|: a statistic that appears (0 to something) or
vanishes counts as the largest. `Diff.config` lists the configuration
keys that differ, numbers by the size of their change first; `Diff.pairs`
(stores) has every pair's differing statistics.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

from pagelab import _pagelab

#: Per-core copies (`core0.cycles`) repeat the machine's sums; left out
#: unless asked for.
PER_CORE = re.compile(r"^core\d+\.")


@dataclasses.dataclass
class Run:
    stats: dict[str, Any]
    #: The resolved configuration, flattened to dotted keys.
    config: dict[str, Any]
    params: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Side:
    label: str
    kind: str  # "run" or "store"
    #: Runs by match key (the parameters as JSON; "" for a single run).
    runs: dict[str, Run]
    #: Keys that more than one run of this store has (never matched).
    ambiguous: list[str] = dataclasses.field(default_factory=list)


def _flat_config(config_toml: str) -> dict[str, Any]:
    import tomllib

    from pagelab.store import _flat

    return _flat(tomllib.loads(config_toml), "", {})


def _bad(msg: str) -> _pagelab.PagelabError:
    return _pagelab.PagelabError(msg)


def _load_run_dir(d: Path) -> Side:
    try:
        stats = json.loads((d / "stats.json").read_text(encoding="utf-8"))
        config = (d / "config.resolved.toml").read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise _bad(f"{d}: a run directory needs stats.json and config.resolved.toml ({Path(e.filename).name} is missing)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise _bad(f"{d}: cannot read the run: {e}") from None
    if not isinstance(stats, dict):
        raise _bad(f"{d / 'stats.json'}: not a JSON object of statistics")
    return Side(str(d), "run", {"": Run(stats, _flat_config(config))})


def _load_store(path: Path) -> Side:
    from pagelab.store import Store

    try:
        with Store(path, read_only=True) as store:
            raw = store.raw()
    except Exception as e:  # a file that is not a DuckDB database, a lock
        raise _bad(f"{path}: cannot read the results store: {e}") from None
    if not len(raw):
        raise _bad(f"{path}: the results store holds no runs")
    runs: dict[str, Run] = {}
    ambiguous: set[str] = set()
    for r in raw.itertuples():
        key = json.dumps(json.loads(r.params), sort_keys=True)
        if key in runs:
            ambiguous.add(key)
        runs[key] = Run(json.loads(r.stats), _flat_config(r.config_toml), json.loads(r.params))
    for key in ambiguous:
        del runs[key]
    return Side(str(path), "store", runs, sorted(ambiguous))


def load(x: Any) -> Side:
    """A side of a diff: a `Result`, a run directory or a results store."""
    from pagelab.api import Result
    from pagelab.store import FILENAME

    if isinstance(x, Result):
        return Side(x.describe(), "run", {"": Run(dict(x.stats), _flat_config(x.config_toml))})
    path = Path(x)
    if path.is_dir() and (path / "stats.json").exists():
        return _load_run_dir(path)
    if (path.is_dir() and (path / FILENAME).exists()) or (path.is_file() and path.suffix == ".duckdb"):
        return _load_store(path)
    if not path.exists():
        raise _bad(f"{path}: no such file or directory")
    raise _bad(f"{path}: neither a run directory (stats.json) nor a results store ({FILENAME})")


def change(a: float, b: float) -> float:
    """The size of a change from a to b, |log(b / a)|; infinite when one
    of them is 0 (or their signs differ), 0 when they are equal."""
    if a == b:
        return 0.0
    if a == 0 or b == 0 or (a < 0) != (b < 0):
        return math.inf
    return abs(math.log(b / a))


def _ratio(a: float, b: float) -> float:
    if a == 0:
        return math.nan if b == 0 else math.inf
    return b / a


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclasses.dataclass
class Diff:
    a: str
    b: str
    kind: str
    #: One row per statistic that differs (see the module's text).
    stats: Any
    #: One row per configuration key that differs: key, a, b, pairs.
    config: Any
    #: Stores: every matched pair's differing statistics (params, statistic, a, b, ratio).
    pairs: Any
    #: Stores: the parameters of the runs of each side without a match.
    unmatched: dict[str, list[dict]]
    #: How many statistics were compared, and how many pairs matched.
    compared: int
    matched: int

    def __repr__(self) -> str:
        return render(self)

    def _repr_html_(self) -> str:
        import html

        head = f"<p><b>pagelab diff</b> A = {html.escape(self.a)}, B = {html.escape(self.b)}"
        if self.kind == "store":
            head += f"; {self.matched} matched pairs, unmatched: A {len(self.unmatched['a'])}, B {len(self.unmatched['b'])}"
        head += "</p>"
        return head + self.config.to_html(index=False) + self.stats.head(40).to_html(index=False)


def diff(a: Any, b: Any, stats: Iterable[str] | None = None, per_core: bool = False) -> Diff:
    """Compares A and B (see the module's text). `stats` keeps only the
    statistics matching any of these glob patterns (`"dtlb.*"`);
    `per_core` keeps the `coreN.` copies."""
    import pandas as pd

    sa, sb = load(a), load(b)
    if sa.kind != sb.kind:
        raise _bad(f"A is a {sa.kind} and B a {sb.kind}: compare two runs or two stores")
    keys = [k for k in sa.runs if k in sb.runs]
    patterns = list(stats or [])

    def wanted(name: str) -> bool:
        if not per_core and PER_CORE.match(name):
            return False
        return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)

    names = sorted({n for k in keys for side in (sa, sb) for n, v in side.runs[k].stats.items() if _numeric(v) and wanted(n)})
    pair_rows, config_rows = _compare(keys, sa, sb, names)
    pairs = pd.DataFrame(pair_rows, columns=["params", "statistic", "a", "b", "ratio"])
    return Diff(
        a=sa.label, b=sb.label, kind=sa.kind,
        stats=_stat_table(pairs, names, keys, sa, sb),
        config=_config_table(config_rows),
        pairs=pairs,
        unmatched={"a": [sa.runs[k].params for k in sa.runs if k not in sb.runs] + _amb(sa),
                   "b": [sb.runs[k].params for k in sb.runs if k not in sa.runs] + _amb(sb)},
        compared=len(names), matched=len(keys),
    )


def _compare(keys: list[str], sa: Side, sb: Side, names: list[str]) -> tuple[list[dict], dict[str, dict]]:
    """Each matched pair's differing statistics (of `names`) as rows, and
    the configuration keys that differ in any pair, with each side's
    values and how many pairs differ in it."""
    pair_rows, config_rows = [], {}
    for k in keys:
        ra, rb = sa.runs[k], sb.runs[k]
        for n in names:
            va, vb = ra.stats.get(n, 0), rb.stats.get(n, 0)
            if va != vb:
                pair_rows.append({"params": k, "statistic": n, "a": va, "b": vb, "ratio": _ratio(va, vb)})
        for key in sorted(set(ra.config) | set(rb.config)):
            va, vb = ra.config.get(key), rb.config.get(key)
            if va != vb:
                row = config_rows.setdefault(key, {"key": key, "a": set(), "b": set(), "pairs": 0})
                row["a"].add(_show(va))
                row["b"].add(_show(vb))
                row["pairs"] += 1
    return pair_rows, config_rows


def _amb(side: Side) -> list[dict]:
    return [dict(json.loads(k), ambiguous=True) for k in side.ambiguous]


def _show(v: Any) -> str:
    return "(absent)" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def _stat_table(pairs, names: list[str], keys: list[str], sa: Side, sb: Side):
    """Per statistic that differs in some pair: sums over every matched
    pair, their ratio, the pairs' smallest and largest ratio."""
    import pandas as pd

    rows = []
    for n, g in pairs.groupby("statistic", sort=False):
        a = sum(sa.runs[k].stats.get(n, 0) for k in keys)
        b = sum(sb.runs[k].stats.get(n, 0) for k in keys)
        finite = g.ratio[g.ratio.notna()]
        rows.append({
            "statistic": n, "a": a, "b": b, "ratio": _ratio(a, b),
            "ratio_min": finite.min() if len(finite) else math.nan,
            "ratio_max": finite.max() if len(finite) else math.nan,
            "pairs": len(g),
            "_size": max([change(a, b)] + [change(x, y) for x, y in zip(g.a, g.b)]),
            "_total": change(a, b),
        })
    df = pd.DataFrame(rows, columns=["statistic", "a", "b", "ratio", "ratio_min", "ratio_max", "pairs", "_size", "_total"])
    df = df.sort_values(["_total", "_size", "statistic"], ascending=[False, False, True], kind="stable")
    return df.drop(columns=["_size", "_total"]).reset_index(drop=True)


def _config_table(rows: dict[str, dict]):
    """Keys that differ, numeric changes first by their size, then the rest
    by name; each side's values joined (a store's runs may hold several)."""
    import pandas as pd

    def size(r: dict) -> float:
        if len(r["a"]) == len(r["b"]) == 1:
            try:
                return change(float(next(iter(r["a"]))), float(next(iter(r["b"]))))
            except ValueError:
                pass
        return -1.0

    out = [{"key": r["key"], "a": ", ".join(sorted(r["a"])), "b": ", ".join(sorted(r["b"])), "pairs": r["pairs"], "_size": size(r)}
           for r in rows.values()]
    df = pd.DataFrame(out, columns=["key", "a", "b", "pairs", "_size"])
    df = df.sort_values(["_size", "key"], ascending=[False, True], kind="stable")
    return df.drop(columns=["_size"]).reset_index(drop=True)


# -- Text -------------------------------------------------------------------


def number(v: Any) -> str:
    """A value as a reader compares it: whole counts with separators (up
    to 10 digits), others to 4 significant digits."""
    if isinstance(v, float) and not v.is_integer():
        return "inf" if math.isinf(v) else "" if math.isnan(v) else f"{v:.4g}"
    v = int(v)
    return f"{v:,}" if abs(v) < 10**10 else f"{v:.4g}"


def ratio_text(r: float) -> str:
    if math.isnan(r):
        return ""
    if math.isinf(r):
        return "new"
    return "0 (gone)" if r == 0 else f"{r:.4g}"


def render(d: Diff, top: int | None = 30) -> str:
    """The diff as text within 80 columns (`pagelab diff` prints it)."""
    lines = [f"A: {d.a}", f"B: {d.b}"]
    if d.kind == "store":
        lines.append(f"{d.matched} pairs of runs matched by their parameters")
        for side in ("a", "b"):
            if d.unmatched[side]:
                lines.append(f"without a match in {'B' if side == 'a' else 'A'}, {len(d.unmatched[side])} run(s) of {side.upper()}:")
                lines += [f"  {_params_text(p)}" for p in d.unmatched[side]]
    lines.append("")
    lines.append(f"configuration keys that differ: {len(d.config)}")
    for r in d.config.itertuples():
        pairs = f"  ({r.pairs} pairs)" if d.kind == "store" else ""
        lines.append(f"  {r.key}: {r.a} -> {r.b}{pairs}")
    lines.append("")
    total = "sums over the matched pairs, " if d.kind == "store" else ""
    lines.append(f"statistics that differ: {len(d.stats)} of {d.compared} ({total}by size of change)")
    shown = d.stats if not top else d.stats.head(top)
    if len(shown):
        width = min(38, max(len("statistic"), *(len(s) for s in shown.statistic)))
        spread = d.kind == "store"
        head = f"  {'statistic':<{width}} {'A':>12} {'B':>12} {'B/A':>9}" + ("  pairs' B/A" if spread else "")
        lines.append(head)
        for r in shown.itertuples():
            name = r.statistic
            if len(name) > width:  # a long name on its own line, never cut
                lines.append(f"  {name}")
                name = ""
            row = f"  {name:<{width}} {number(r.a):>12} {number(r.b):>12} {ratio_text(r.ratio):>9}"
            if spread and r.pairs > 1:
                row += f"  {ratio_text(r.ratio_min)}-{ratio_text(r.ratio_max)}"
            lines.append(row)
    if top and len(d.stats) > top:
        lines.append(f"  ... {len(d.stats) - top} more (--top 0 shows all; --csv FILE writes them)")
    return "\n".join(lines)


def _params_text(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def main(args) -> int:
    d = diff(args.a, args.b, stats=args.stat, per_core=args.per_core)
    print(render(d, top=args.top))
    if args.csv:
        from pagelab.output import write_atomic

        table = d.pairs if d.kind == "store" else d.stats
        write_atomic(Path(args.csv), table.to_csv(index=False))
    return 0
