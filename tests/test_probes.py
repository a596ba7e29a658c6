"""The second hardening round's own probes (tests/probes.py), each listed
with its outcome in docs/reliability.md."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from probes import all_probes, check_outcome, listing, make, run_probe

PROBES = all_probes()


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_probe(probe, tmp_path):
    if probe.root_only and os.geteuid() != 0:
        pytest.skip("a device node or /proc/pagetypeinfo: only as root")
    d = tmp_path / "p"
    d.mkdir()
    make(d, probe.files)
    before = listing(d)
    o = run_probe(probe, d, make_files=False)
    check_outcome(probe, o, d, before)


def test_the_round_is_at_least_100_probes_and_at_most_10_of_a_kind():
    kinds: dict[str, int] = {}
    for p in PROBES:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    assert len(PROBES) >= 100, len(PROBES)
    assert max(kinds.values()) <= 10, kinds
    assert len({p.id for p in PROBES}) == len(PROBES), "ids are unique"


def test_every_probe_is_listed_in_the_docs():
    doc = (Path(__file__).parent.parent / "docs" / "reliability.md").read_text()
    listed = set(re.findall(r"^\| `([a-z0-9^-]+)` \|", doc, re.M))
    missing = [p.id for p in PROBES if p.id not in listed]
    assert not missing, f"not in docs/reliability.md: {missing}"
