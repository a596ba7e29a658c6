"""Colored Huge Pages (the `chp-*` experiments): the paper's Fig. 1, Fig. 4,
Fig. 5, Fig. 6, the SWAP comparison and Table IV. docs/systems/chp.md
describes the system and how the experiments model the paper.

- `common`: the machine, the workload analogues, the stressors and the
  contention scenarios every experiment of the paper shares;
- `perf`: `chp-fig1`, `chp-fig4`, `chp-swap`, `chp-table4` (runtime,
  translation, LLC misses and fault cost);
- `frag`: `chp-fig5`, `chp-fig6` (allocation success under fragmentation).
"""

#: `Experiment.paper` of every experiment in this package.
PAPER = "colored-huge-pages"
