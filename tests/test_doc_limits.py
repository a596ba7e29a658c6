"""The documentation stays a reader's, not a lab notebook: short pages,
no superseded rounds, no pointers into a history that left the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Page -> the most lines it may have.
LIMITS = {
    "README.md": 150,
    "docs/performance.md": 300,
    "docs/systems/chp-results.md": 599,
    "docs/systems/perforated-results.md": 599,
    "docs/systems/elastic-results.md": 599,
}


@pytest.mark.parametrize("page", sorted(LIMITS))
def test_page_is_short(page):
    lines = (REPO / page).read_text(encoding="utf-8").count("\n")
    assert lines <= LIMITS[page], f"{page}: {lines} lines, at most {LIMITS[page]}"


@pytest.mark.parametrize("page", sorted(p for p in LIMITS if p.endswith("-results.md")))
def test_results_page_has_no_superseded_round(page):
    text = (REPO / page).read_text(encoding="utf-8")
    assert not re.search(r"superseded|round of 20\d\d", text, flags=re.I), "superseded rounds live in git"


def _sources():
    for pattern in ("*.md", "docs/**/*.md", "crates/**/*.rs", "python/**/*.py", "tests/*.py", "Makefile"):
        yield from REPO.glob(pattern)


def test_nothing_points_into_the_speed_diary():
    """docs/speed.md's rounds are in git only (docs/performance.md says how
    to read them there); code and pages say the reason instead."""
    assert not (REPO / "docs/speed.md").exists(), "docs/performance.md replaced it"
    allowed = {Path(__file__).resolve(), (REPO / "docs/performance.md").resolve()}
    pointing = [str(p.relative_to(REPO)) for p in _sources()
                if p.resolve() not in allowed and "speed.md" in p.read_text(encoding="utf-8", errors="replace")]
    assert pointing == []
