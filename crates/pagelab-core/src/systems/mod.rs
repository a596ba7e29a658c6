//! The paging systems, one module each, named with the paper's word: the
//! baselines (`base`, `thp` with khugepaged, `hugetlb`, `coloring`,
//! `bin_hopping`) and the papers' systems (`chp`). Each holds its
//! configuration, its OS hooks (`os::System`), its daemons, its
//! statistics, its hardware extension where it has one, and its tests.
//!
//! Layers: a system's OS part uses the OS layer (`os`) and below; its
//! hardware part (e.g. `chp::tlb`) uses only the hardware layer and below.
//!
//! This file is where systems are registered: their OS side in
//! [`REGISTRY`], their hardware extensions below it (the TLB entry kinds
//! the simulated cores have, [`TlbExtensions`], and the walk steps the
//! page-table software bits lead to, [`walk_leaf_ext`]). Outside the
//! systems' folders, only here are they named.
//!
//! Adding a system: a folder with a `Registration`, one line in
//! [`REGISTRY`], and its hardware extension here if it has one
//! (ARCHITECTURE.md, "Adding a system").

pub mod base;
pub mod bin_hopping;
pub mod chp;
pub mod coloring;
mod config;
pub mod hugetlb;
#[cfg(test)]
mod tests;
pub mod thp;

pub use config::{OsConfig, PolicyKind};

use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::RefBuf;
use crate::hw::tlb::{TlbEntry, TlbExtension};
use crate::os::{Boot, Kernel};
use crate::paging::pte::COLORED_HUGE;
use crate::paging::{NodeId, PageTable};
use crate::stat::{Stat, Stats};
use crate::units::{Asid, VirtAddr};

/// One system as the registry knows it.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    /// Its name in `os.systems`.
    pub name: &'static str,
    /// The fault kinds it can install (`os.faults.NAME`).
    pub fault_kinds: &'static [&'static str],
    /// Whether it backs every fault it is offered, so it can end a chain.
    pub terminal: bool,
    /// Its statistics at zero: every run reports the statistics of every
    /// registered system, in the chain or not, so that tables of runs have
    /// the same columns.
    pub idle_stats: fn(&mut Stats),
    /// Plugs it (and its daemons) into the kernel.
    pub build: fn(&Build, &mut Kernel) -> Result<()>,
}

/// What a system's build reads.
#[derive(Debug)]
pub struct Build<'a> {
    pub os: &'a OsConfig,
    /// The clock, to turn daemon periods in milliseconds into cycles.
    pub freq_ghz: f64,
}

/// Every system, in no particular order (the chain's order is the
/// configuration's).
pub const REGISTRY: &[Registration] = &[
    base::REGISTRATION,
    thp::REGISTRATION,
    hugetlb::REGISTRATION,
    coloring::REGISTRATION,
    bin_hopping::REGISTRATION,
    chp::REGISTRATION,
];

/// Boots the kernel with the chain `os` names, then places the starting
/// fragmentation (after the systems, so that boot-time reservations such
/// as a hugetlb pool predate it, as hugepages= does).
pub fn boot(os: &OsConfig, boot: Boot, freq_ghz: f64, seed: u64) -> Result<Kernel> {
    let mut kernel = Kernel::new(boot)?;
    let build = Build { os, freq_ghz };
    for name in os.chain() {
        let reg = REGISTRY.iter().find(|r| r.name == name).expect("os.systems is validated against the registry");
        (reg.build)(&build, &mut kernel)?;
    }
    kernel.fragment(&os.fragmentation, seed)?;
    Ok(kernel)
}

/// The statistics of every registered system and fault kind, at zero.
pub fn idle_stats() -> Stats {
    let mut out = Stats::new();
    for reg in REGISTRY {
        (reg.idle_stats)(&mut out);
        for kind in reg.fault_kinds {
            out.insert(format!("os.faults.{kind}"), Stat::Int(0));
        }
    }
    out
}

/// The owner of the L2 TLB's extension kinds: Colored Huge Pages' today.
/// (A second kind makes this a struct of the owners' side tables with an
/// enum of their payloads, dispatched by the entry's kind tag.)
pub type TlbExtensions = chp::tlb::ChpTlb;

/// What an extension kind's walk hands the TLB.
pub type ExtEntry = TlbEntry<<TlbExtensions as TlbExtension>::Payload>;

/// The hardware extensions of a core of a machine with these page colors
/// (colored huge pages' sub-mappings are strided by the number of colors).
pub fn tlb_extensions(colors: &crate::hw::cache::ColorMap) -> TlbExtensions {
    chp::tlb::ChpTlb::new(chp::stride_shift(colors))
}

/// The walk step of the leaf extension whose software bits (`bits`, of
/// `pte::LEAF_EXT`) the PMD entry above `table` carries: the walker's one
/// jump to a system's code. Returns the entry to cache.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
pub fn walk_leaf_ext(
    bits: u64,
    pt: &mut PageTable,
    table: NodeId,
    asid: Asid,
    vaddr: VirtAddr,
    write: bool,
    ext: &TlbExtensions,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> ExtEntry {
    debug_assert_eq!(bits, COLORED_HUGE, "no walk step for software bits {bits:#x}");
    chp::walk::walk(pt, table, asid, vaddr, write, ext.stride_shift, refs, stats)
}

/// A store through a clean TLB entry of a leaf extension (its PTE's D bit
/// is set already): what else the locked update sets.
#[cold]
#[inline(never)]
pub fn dirty_assist_leaf_ext(bits: u64, pt: &mut PageTable, table: NodeId) {
    debug_assert_eq!(bits, COLORED_HUGE, "no dirty assist for software bits {bits:#x}");
    chp::walk::dirty_assist(pt, table);
}
