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
