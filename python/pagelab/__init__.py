"""pagelab: a fast trace-driven laboratory for memory-management research.

    >>> import pagelab
    >>> r = pagelab.run({"workload": {"kind": "gups", "footprint": "64MiB",
    ...                               "accesses": 100_000}}, **{"os.policy": "thp"})
    >>> r.stats["dtlb.l2.misses"]
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
from pagelab.api import Result, load_config_text, run

__version__ = version()

__all__ = [
    "ConfigError",
    "InternalError",
    "PagelabError",
    "Result",
    "SimulationError",
    "TraceError",
    "load_config_text",
    "presets",
    "run",
]
