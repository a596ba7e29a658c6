"""pagelab: a fast trace-driven laboratory for memory-management research.

    >>> import pagelab
    >>> r = pagelab.run({"workload": {"kind": "gups", "footprint": "64MiB",
    ...                               "accesses": 100_000}}, **{"os.policy": "thp"}, out="out/thp")
    >>> r                                   # a short summary (a table in Jupyter)
    >>> r.stats["dtlb.l2.misses"]           # every statistic: docs/stats.md
    >>> df = pagelab.run_sweep(base="examples/thp-gups.toml", grid={"os.policy": ["base", "thp"]}, seeds=[1, 2])
    >>> pagelab.diff("out/base", "out/thp")  # two runs, or two results stores
    >>> pagelab.Store("out/sweep").frame()  # a results store as a wide table

examples/notebook.ipynb goes from a run to a figure.
"""

import sys

if sys.version_info < (3, 11):  # pyproject.toml: requires-python >= 3.11
    raise ImportError(f"pagelab needs Python 3.11 or later (tomllib); this is {sys.version.split()[0]}")

from pagelab._pagelab import (
    ConfigError,
    InternalError,
    PagelabError,
    SimulationError,
    TraceError,
    presets,
    version,
)
from pagelab.api import Result, load_config_text, run, run_sweep
from pagelab.diff import Diff, diff
from pagelab.store import Store

__version__ = version()

__all__ = [
    "ConfigError",
    "Diff",
    "InternalError",
    "PagelabError",
    "Result",
    "SimulationError",
    "Store",
    "TraceError",
    "diff",
    "load_config_text",
    "presets",
    "run",
    "run_sweep",
]
