"""COPLACE's experiments (issue 35; docs/systems/coplace.md, results in
docs/systems/coplace-results.md): the paper's machine (`xeon-gold-6138`),
one VM of one vCPU, the host's placement varied.

- `table2`: `coplace-table2`, the conflict levels of Table II.
- `fig1`: `coplace-fig1`, runtime and miss-ratio increases in a VM (Fig. 1).
- `perf`: `coplace-perf`, COPLACE against the baseline on blackscholes and
  Xapian (Fig. 5 and 6).
- `multivm`: `coplace-multivm`, eleven Xapian VMs with eKSM (Fig. 8(a)).
- `varying`: `coplace-varying`, the join after the file reader (section V-C).
- `standin`: `coplace-standin`, Table II's setting under three stand-in
  slice hashes (how much the results hang on the stand-in).
- `claims`: the headline claims of docs/systems/coplace-results.md.
"""
