"""`pagelab calibrate`: real hardware as the judge of pagelab's model.

Microbenchmarks (`loops.c`, run by `native.py`) measure this machine; a
preset of it is built from what it reports (`machine.py`: sysfs, CPUID; the
TLB probe of `tlbprobe.py` where CPUID is silent) and from the loops'
plateaus inside its caches and its TLBs' reach (`measure.py`, `preset.py`);
the same loops are simulated on that preset, natively and in a VM over
host 4 KiB or 2 MiB pages (`predict.py`); the rows beyond the TLB's reach
and the THP speedups compare the two (`report.py`, `summary.py`).
`command.py` runs it all. docs/validation.md describes it and holds this
project's machine's table.
"""

from pagelab.calibrate.command import main, parse_footprints

__all__ = ["main", "parse_footprints"]
