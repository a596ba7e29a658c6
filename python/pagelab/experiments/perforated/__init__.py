"""Perforated Pages (the `pp-*` experiments): the paper's Fig. 7 and Fig. 8.
docs/systems/perforated.md describes the system and how the experiments
model the paper.

- `common`: the machine (the paper's Table II, preset `gem5-skylake`), the
  random-access microbenchmark, the systems compared and the scenario grid;
- `fig`: `pp-fig7` (speedup over 4 KiB pages and L2 TLB MPKI), `pp-fig8`
  (the L2 TLB's contents by kind, bitmap lookups and filter hits);
- `gtsm`: `pp-gtsm` (Fig. 10: perforated pages against GTSM on memory
  with 5.5% faulty frames);
- `redis`: `pp-redis` (III-B: a Redis-like store of 16 KiB objects, L2
  TLB misses and memory on 4 KiB, 2 MiB and perforated pages);
- `realfrag`: `pp-realfrag` (III-C: a 2 GB allocation on fragmentation
  snapshots in `snapshots/`, its huge and perforated shares under the
  paper's rule and the microbenchmark's gain from the perforated share);
- `virt`: `pp-virt` (Fig. 11: `pp-fig9`'s analogues in a VM whose host
  backs it with THP, with the references per 2D walk).
"""

#: `Experiment.paper` of every experiment in this package.
PAPER = "perforated-pages"
