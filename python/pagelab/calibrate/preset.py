"""A preset of this machine: the `machine` table its simulations run on.

What the machine reports or the loops measured is set here, each with its
source; every other key (page-walk caches, the out-of-order window, the
prefetchers, the nested TLB, and whatever later models add) comes from
`BASE_PRESET`, merged under it by pagelab's normal configuration, and is
not this machine's.
"""

from __future__ import annotations

from typing import Any

from pagelab import _pagelab
from pagelab.api import toml_value
from pagelab.calibrate.machine import Array, Cache, Tlbs, model_shape
from pagelab.calibrate.measure import Latencies, Plateau

#: The preset whose other keys the machine inherits: pagelab's default, a
#: generic x86 core (Intel's Skylake).
BASE_PRESET = "skylake"


def base_tlbs() -> Tlbs:
    """The base preset's TLB arrays, for those neither CPUID nor the probe gave."""
    import tomllib

    text = _pagelab.resolve_config(f'[machine]\npreset = "{BASE_PRESET}"\n[workload]\nkind = "gups"\n', "<calibrate>", [])
    tlb = tomllib.loads(text)["machine"]["tlb"]
    keys = ("l1_4k", "l1_2m", "l1_1g", "l2", "l2_1g")
    return {k: Array(tlb[f"{k}_entries"], tlb[f"{k}_ways"]) for k in keys}


def complete_tlbs(tlbs: Tlbs, sources: dict[str, str]) -> tuple[Tlbs, dict[str, str]]:
    """Every array: the given ones, the base preset's for the rest."""
    base = base_tlbs()
    out, why = dict(tlbs), dict(sources)
    for key, array in base.items():
        if key not in out:
            out[key] = array
            why[key] = f"not reported nor measured: the {BASE_PRESET} preset's (estimate)"
    return out, why


def _cache(name: str, cache: Cache, latency: int, plateau: Plateau) -> tuple[dict, dict[str, str]]:
    size, ways = model_shape(cache)
    table = {"size": size, "ways": ways, "line": cache.line, "latency": latency}
    shape = f"sysfs: {cache.size >> 10} KiB, {cache.ways} ways, {cache.sets} sets"
    if (size, ways) != (cache.size, cache.ways):
        shape += f" (not a power of two): modelled as {size // cache.line // ways} sets of {ways} ways, {size >> 10} KiB"
    notes = {"size": shape, "ways": shape,
             "latency": f"measured: the chase's {name} plateau, {plateau.ns:.2f} ns at {plateau.footprint >> 10} KiB (THP)"}
    return table, notes


def machine_table(caches: dict[str, Cache], tlbs: Tlbs, tlb_sources: dict[str, str], lat: Latencies,
                  plateaus: dict[str, Plateau], ghz: float, l2_tlb_ns: float) -> tuple[dict[str, Any], dict[str, str]]:
    """The `machine` table and, by dotted key, where each value came from."""
    table: dict[str, Any] = {"preset": BASE_PRESET, "freq_ghz": round(ghz, 3)}
    notes = {"preset": "every key not set below is this preset's, not this machine's",
             "freq_ghz": "measured: a chain of one-cycle adds"}
    tlb: dict[str, Any] = {}
    for key, array in tlbs.items():
        tlb[f"{key}_entries"], tlb[f"{key}_ways"] = array.entries, array.ways
        notes[f"tlb.{key}_entries"] = notes[f"tlb.{key}_ways"] = tlb_sources[key]
    tlb["l2_latency"] = lat.l2_tlb
    notes["tlb.l2_latency"] = f"measured: the probe's L2 TLB hit, {l2_tlb_ns:.2f} ns, lines in the L1D"
    table["tlb"] = tlb
    table["cache"] = {}
    for name, plateau_name, latency in (("l1d", "l1", lat.l1d), ("l2", "l2", lat.l2), ("llc", "llc", lat.llc)):
        level, level_notes = _cache(plateau_name, caches[name], latency, plateaus[plateau_name])
        table["cache"][name] = level
        notes.update({f"cache.{name}.{k}": v for k, v in level_notes.items()})
    # The slices and their hash are the host's and not reported: one slice.
    table["cache"]["llc"].update({"slices": 1, "slice_hash": "modulo"})
    notes["cache.llc.slices"] = "not reported (a hypervisor hides the slice hash): one slice, modulo indexing"
    table["memory"] = {"latency": lat.memory}
    mem = plateaus["memory"]
    notes["memory.latency"] = (f"measured: the chase's memory plateau, {mem.ns:.2f} ns at {mem.footprint >> 20} MiB "
                               "(THP, within the L2 TLB's reach; its L2 TLB hits taken out)")
    return table, notes


def note_measured_llc(notes: dict[str, str], sysfs: Cache, effective: int) -> None:
    """With `--llc measured`: the LLC's size and ways say where they came from."""
    why = (f"measured: the chase left the LLC's plateau after {effective >> 20} MiB (sysfs: {sysfs.size >> 20} MiB, "
           f"{sysfs.ways} ways); its ways scaled to that, the sets kept")
    notes["cache.llc.size"] = notes["cache.llc.ways"] = why


def _lines(prefix: str, table: dict[str, Any], notes: dict[str, str]) -> list[str]:
    plain = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    nested = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    out = [f"[{prefix}]"] if plain or not nested else []
    dotted = prefix.split(".", 1)[1] + "." if "." in prefix else ""
    for key, value in plain:
        note = notes.get(dotted + key)
        out.append(f"{key} = {toml_value(value)}" + (f"  # {note}" if note else ""))
    for key, value in nested:
        out += _lines(f"{prefix}.{key}", value, notes)
    return out


def machine_toml(table: dict[str, Any], notes: dict[str, str], header: list[str]) -> str:
    """The table as a TOML file, each value beside its source."""
    return "\n".join([f"# {line}" for line in header] + _lines("machine", table, notes)) + "\n"
