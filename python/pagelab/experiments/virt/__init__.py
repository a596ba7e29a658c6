"""Experiments of the virtualization foundation (issue 12): the hypervisor
and the two-dimensional walk that the virtualized papers (Perforated Pages,
COPLACE, Elastic Translations, HugeScope) build on.

- `walks`: `virt-walks`, references and cycles per two-dimensional walk for
  guest and host page sizes {4k, 2m} x {4k, 2m}, with and without the walk
  caches.
"""
