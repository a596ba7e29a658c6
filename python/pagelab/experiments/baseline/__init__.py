"""Experiments that belong to no paper: they exercise the framework and the
baseline policies every paper compares against.

- `thp`: `baseline-thp`, base pages, THP and hugetlbfs 2 MiB / 1 GiB on
  gups, bfs, kv and stream on a fresh machine;
- `frag_sweep`: `frag-sweep`, THP's 2 MiB coverage and cycles as
  fragmentation rises;
- `tiers`: `mem-tiers`, a DRAM tier and a slow one, the fast tier's size
  swept, the tiers' timing checked against arithmetic.

They live in a package of their own, like a paper's, so that every
experiment module sits one level below `pagelab.experiments` and the
top level holds only the registry (`__init__`) and the shared helpers
(`common`).
"""
