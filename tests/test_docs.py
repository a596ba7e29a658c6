"""The documentation's examples run as written: each test reads them from
the Markdown file itself at test time, so an example that is edited and
breaks fails here.

- docs/sweeps.md: the SWEEP.toml example (`pagelab sweep`), then its two
  Python blocks (the results store, and DuckDB's SQL) on that sweep's
  store;
- README.md: the commands of its "First steps" section, in order, and the
  trace lines of "Using it" (generate, convert, run).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import pagelab_command, run_cli

ROOT = Path(__file__).resolve().parent.parent


def code_blocks(path: Path, lang: str) -> list[str]:
    """The fenced blocks of `path` whose info string is `lang`, in order."""
    text = path.read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(rf"^```{lang}[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S)]


def section(path: Path, heading: str) -> str:
    """The text under the first heading containing `heading` (any level,
    case ignored) up to the next heading of that level or above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)", line)
        if m and heading.lower() in m.group(2).lower():
            level = len(m.group(1))
            end = next((j for j in range(i + 1, len(lines))
                        if (h := re.match(r"^(#+)\s", lines[j])) and len(h.group(1)) <= level), len(lines))
            return "\n".join(lines[i + 1:end])
    raise AssertionError(f"{path.name} has no heading with {heading!r}")


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_sweeps_example_and_its_queries_run_as_written(tmp_path):
    doc = ROOT / "docs" / "sweeps.md"
    sweep = code_blocks(doc, "toml")[0]
    (tmp_path / "policies.toml").write_text(sweep)
    r = run_cli("sweep", "policies.toml", "--jobs", "2", cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    table = (tmp_path / "out" / "policies" / "policies.csv").read_text().splitlines()
    assert len(table) == 1 + 32  # 2 workloads x 2 policies x 2 F_i x 2 TLBs x 2 seeds
    blocks = code_blocks(doc, "python")
    store, sql = [b for b in blocks if "policies" in b]
    for code in (store, sql):
        out = run_python(code, tmp_path)
        assert out.returncode == 0, out.stderr
    assert (tmp_path / "runs.parquet").exists()
    # The query's averages are numbers: a JSON path that misses its key
    # (`'$.dtlb.l2.misses'`) gives NULL, which DuckDB prints as NULL.
    out = run_python(sql, tmp_path).stdout
    assert "NULL" not in out and "gups" in out and "bfs" in out, out


def readme_commands(heading: str) -> list[str]:
    """Every command line of the code blocks of the README's section
    `heading` (comments and `make` lines aside: the tests themselves run
    under `make test`)."""
    text = section(ROOT / "README.md", heading)
    commands = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#") and not line.startswith("make "):
                commands.append(line)
    return commands


def first_steps() -> list[str]:
    return readme_commands("first steps")


def as_written(commands: list[str], tmp_path: Path) -> None:
    """Runs `commands` in order, as a newcomer types them, in a directory
    that has the repository's examples and its venv where the README says
    (`.venv/bin/pagelab`); each must succeed."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    venv = Path(pagelab_command()[0]).parent.parent if len(pagelab_command()) == 1 else Path(sys.prefix)
    (tmp_path / ".venv").symlink_to(venv)
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", TERM="dumb")
    for command in commands:
        r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"{command}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def test_the_readme_has_first_steps():
    assert len(first_steps()) >= 3


def test_the_readme_first_steps_run_as_written(tmp_path):
    """Each command from the README's "First steps", in order; each must
    succeed."""
    as_written(first_steps(), tmp_path)


def test_the_readmes_trace_lines_read_files_that_earlier_lines_made(tmp_path):
    """README's "Using it" makes a ChampSim trace, converts it and runs it:
    those lines as written, in order (its `trace convert` once read
    `trace.champsimtrace.xz`, a file no line made). The run's `CONFIG`
    placeholder becomes examples/thp-gups.toml."""
    steps = [c for c in readme_commands("using it") if re.search(r"pagelab trace (champsim-gen|convert) ", c)]
    runs = [c for c in readme_commands("using it") if "workload.kind=trace" in c]
    assert len(steps) >= 2 and len(runs) == 1, (steps, runs)
    as_written(steps + [runs[0].replace("CONFIG", "examples/thp-gups.toml")], tmp_path)


def test_license_citation_and_what_is_not_modelled_are_linked_from_the_readme():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    for target in ("LICENSE", "CITATION.cff", "docs/timing.md#not-modelled"):
        assert f"]({target})" in readme, target
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    license_ = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert license_ == "MIT"
    citation = (ROOT / "CITATION.cff").read_text()
    version = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert "cff-version: 1.2.0" in citation and f'version: "{version}"' in citation
    assert "## Not modelled" in (ROOT / "docs" / "timing.md").read_text()
