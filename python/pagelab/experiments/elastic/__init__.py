"""Elastic Translations (the `et-*` experiments). docs/systems/elastic.md
describes the system and what these experiments model.

- `hugetlb`: `et-hugetlb`, the paper's Figure 2 (HugeTLB pages of 4 KiB,
  64 KiB, 2 MiB, 32 MiB and 1 GiB), native and virtualized.
- `analogues`: the paper's workloads built from pagelab's generators, and
  the scaled Neoverse N1 they run on.
- `native`: `et-native` (the paper's Figure 8) and `et-sizes` (the
  translation sizes of the same runs).
- `virt`: `et-virt` (the paper's Figure 10: virtualized).
"""

#: `Experiment.paper` of every experiment in this package.
PAPER = "elastic-translations"
