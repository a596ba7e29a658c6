"""Elastic Translations (the `et-*` experiments). docs/systems/elastic.md
describes the system and what these experiments model.

- `hugetlb`: `et-hugetlb`, the paper's Figure 2 (HugeTLB pages of 4 KiB,
  64 KiB, 2 MiB, 32 MiB and 1 GiB), native runs only so far.
"""

#: `Experiment.paper` of every experiment in this package.
PAPER = "elastic-translations"
