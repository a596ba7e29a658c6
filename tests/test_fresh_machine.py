"""Python 3.11 or later, said the same way everywhere."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_python_311_is_required_consistently():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["requires-python"] == ">=3.11"
    assert "Python 3.11 or later" in (ROOT / "README.md").read_text()
    init = (ROOT / "python" / "pagelab" / "__init__.py").read_text()
    assert "sys.version_info < (3, 11)" in init
    # No fallback to tomli (not a dependency) anywhere in the package.
    for p in (ROOT / "python" / "pagelab").rglob("*.py"):
        assert "import tomli as" not in p.read_text(), p


def test_ci_fails_on_a_skip_that_is_not_allowed(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n"
        "def test_runs():\n    pass\n"
        "@pytest.mark.skipif(True, reason='/proc/pagetypeinfo needs root')\n"
        "def test_allowed():\n    pass\n"
        "@pytest.mark.skipif(True, reason='needs valgrind and gcc')\n"
        "def test_not_allowed():\n    pass\n"
    )

    def pytest_status(allow_list: Path | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "PAGELAB_ALLOWED_SKIPS"}
        if allow_list is not None:
            env["PAGELAB_ALLOWED_SKIPS"] = str(allow_list)
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )

    # Without the allow-list (a developer's make test), skips are reported only.
    assert pytest_status(None).returncode == 0
    # With CI's list: the valgrind skip is not on it, so the run fails, naming it.
    proc = pytest_status(ROOT / ".ci" / "allowed-skips")
    assert proc.returncode == 1, proc.stdout
    assert "test_not_allowed" in proc.stdout and "test_allowed " not in proc.stdout.split("allow-list")[-1]
    # Once every reason is allowed, it passes.
    allow = tmp_path / "allow"
    allow.write_text("needs root\nneeds valgrind  # for the test\n")
    assert pytest_status(allow).returncode == 0


def test_the_makefile_installs_every_dependency_and_test_extra():
    """`make setup` installs from its own line: every package pyproject
    names (dependencies and the test extra: nbclient, nbformat and
    ipykernel run the example notebook) must be on it."""
    import re

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = pyproject["dependencies"] + pyproject["optional-dependencies"]["test"]
    names = {re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower() for req in wanted}
    makefile = (ROOT / "Makefile").read_text()
    line = next(line for line in makefile.splitlines() if "install --quiet" in line and "numpy" in line)
    assert names <= set(line.lower().split()), names - set(line.lower().split())
