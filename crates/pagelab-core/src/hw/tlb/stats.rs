//! The TLBs' counters: per access side (data, instruction) and per array,
//! flattened into the `dtlb.*`, `itlb.*` and `tlb.<array>.*` statistics
//! (names fixed: results and docs/stats.md use them).

use crate::stat::{Scope, Section, StatDecl, StatTable};

/// Each TLB array's counters, per core (`ARRAY`: `l1d_4k`, `l1d_64k`,
/// `l1d_2m`, `l1d_32m`, `l1d_1g`, `l1i_4k`, `l1i_2m`, `l2`, `l2_1g`; an
/// array the machine does not have reports zeros). The side totals
/// (`dtlb.*`, `itlb.*`) are the core's own counters.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Translation,
    stats: &[
        StatDecl::count("tlb.ARRAY.lookups", "lookups of the array").scope(Scope::PerCore),
        StatDecl::count("tlb.ARRAY.hits", "lookups it answered").scope(Scope::PerCore),
        StatDecl::count("tlb.ARRAY.misses", "lookups it did not answer").scope(Scope::PerCore),
        StatDecl::count("tlb.ARRAY.fills", "entries placed in it").scope(Scope::PerCore),
        StatDecl::count("tlb.ARRAY.evictions", "entries a fill pushed out").scope(Scope::PerCore),
        StatDecl::count("tlb.ARRAY.invalidations", "entries shootdowns dropped").scope(Scope::PerCore),
    ],
}];

/// Counters of one array. `lookups` counts accesses that reached its level
/// (all arrays of a level are probed in parallel); `misses = lookups - hits`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArrayStats {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    pub evictions: u64,
    pub invalidations: u64,
}

/// Per access side (data or instruction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SideStats {
    pub accesses: u64,
    /// Missed every L1 array (the engine's `dtlb.l1.misses`).
    pub l1_misses: u64,
    /// Missed the L2 too: page walks (`dtlb.l2.misses`).
    pub l2_misses: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlbStats {
    pub data: SideStats,
    pub instr: SideStats,
    pub l1d_4k: ArrayStats,
    /// Coalesced 64 KiB and 32 MiB arrays (zeros where the L1 has none).
    pub l1d_64k: ArrayStats,
    pub l1d_2m: ArrayStats,
    pub l1d_32m: ArrayStats,
    pub l1d_1g: ArrayStats,
    pub l1i_4k: ArrayStats,
    pub l1i_2m: ArrayStats,
    /// The shared 4 KiB + 2 MiB L2 array.
    pub l2: ArrayStats,
    pub l2_1g: ArrayStats,
}

impl TlbStats {
    /// Flat `(name, value)` pairs: `dtlb.accesses`, `dtlb.l1.misses`,
    /// `dtlb.l2.misses`, the `itlb.` equivalents, then `tlb.<array>.<counter>`.
    pub fn named(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (side, s) in [("dtlb", &self.data), ("itlb", &self.instr)] {
            out.push((format!("{side}.accesses"), s.accesses));
            out.push((format!("{side}.l1.misses"), s.l1_misses));
            out.push((format!("{side}.l2.misses"), s.l2_misses));
        }
        for (name, a) in self.arrays() {
            for (counter, v) in [
                ("lookups", a.lookups),
                ("hits", a.hits),
                ("misses", a.misses),
                ("fills", a.fills),
                ("evictions", a.evictions),
                ("invalidations", a.invalidations),
            ] {
                out.push((format!("tlb.{name}.{counter}"), v));
            }
        }
        out
    }

    pub fn arrays(&self) -> [(&'static str, &ArrayStats); 9] {
        [
            ("l1d_4k", &self.l1d_4k),
            ("l1d_64k", &self.l1d_64k),
            ("l1d_2m", &self.l1d_2m),
            ("l1d_32m", &self.l1d_32m),
            ("l1d_1g", &self.l1d_1g),
            ("l1i_4k", &self.l1i_4k),
            ("l1i_2m", &self.l1i_2m),
            ("l2", &self.l2),
            ("l2_1g", &self.l2_1g),
        ]
    }
}

/// What an array counts itself; its lookups come from the level above
/// ([`ArrayStats`] adds them).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counters {
    pub hits: u64,
    pub fills: u64,
    pub evictions: u64,
    pub invalidations: u64,
}

impl Counters {
    pub fn report(&self, lookups: u64) -> ArrayStats {
        ArrayStats {
            lookups,
            hits: self.hits,
            misses: lookups - self.hits,
            fills: self.fills,
            evictions: self.evictions,
            invalidations: self.invalidations,
        }
    }
}
