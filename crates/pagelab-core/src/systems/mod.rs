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
//! [`REGISTRY`], their hardware extensions in [`extensions`] (the TLB
//! entry kinds the simulated cores have, [`TlbExtensions`], and the walk
//! steps the page-table software bits lead to, [`walk_leaf_ext`], and in
//! a guest [`walk2d_leaf_ext`]).
//! Outside the systems' folders, only here are they named.
//!
//! Adding a system: a folder with a `Registration`, one line in
//! [`REGISTRY`], and its hardware extension in `extensions.rs` if it has
//! one (ARCHITECTURE.md, "Adding a system").

pub mod balloon;
pub mod base;
pub mod bin_hopping;
pub mod chp;
pub mod coloring;
mod config;
pub mod elastic;
pub mod extensions;
pub mod gtsm;
pub mod hawkeye;
pub mod hugetlb;
pub mod ksm;
pub mod mthp;
pub mod perforated;
#[cfg(test)]
mod tests;
pub mod thp;
pub mod trident;

pub use config::{OsConfig, PolicyKind};
pub use extensions::{
    combined_over_host_ext, dirty_assist_leaf_ext, dirty_assist_leaf_ext_2d, ept_leaf_ext, fill_ext_after_walk,
    push_zeroed_leaf, resolve_ext, resolve_ext_2d, sample_tlb, samples_l2_occupancy, tlb_ext_stats, tlb_extensions,
    walk2d_leaf_ext, walk_leaf_ext, ExtEntry, ExtKind, TlbExtensions, EPT_LEAF_STEPS, GUEST_LEAF_STEPS,
};

use crate::error::Result;
use crate::os::{Boot, Kernel};
use crate::stat::{Stat, Stats};

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
    /// The run's seed (a scenario's random choices).
    pub seed: u64,
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
    perforated::REGISTRATION,
    perforated::HOLES_REGISTRATION,
    gtsm::REGISTRATION,
    elastic::REGISTRATION,
    mthp::REGISTRATION,
    trident::REGISTRATION,
    hawkeye::REGISTRATION,
];

/// Boots the kernel with the chain `os` names (after the faulty frames),
/// then places the starting
/// fragmentation (after the systems, so that boot-time reservations such
/// as a hugetlb pool predate it, as hugepages= does).
pub fn boot(os: &OsConfig, boot: Boot, freq_ghz: f64, seed: u64) -> Result<Kernel> {
    let footprint = boot.footprint;
    let mut kernel = Kernel::new(boot)?;
    // Faulty frames fail before anything is allocated: no system's
    // boot-time reservation holds one.
    crate::phys::inject_faulty(&mut kernel.mem, os.faulty_frames, os.faulty_granularity, seed);
    let build = Build { os, freq_ghz, seed };
    for name in os.chain() {
        let reg = REGISTRY.iter().find(|r| r.name == name).expect("os.systems is validated against the registry");
        (reg.build)(&build, &mut kernel)?;
    }
    kernel.fragment(&os.fragmentation, footprint, seed)?;
    Ok(kernel)
}

/// The statistics of every registered system and fault kind, at zero.
pub fn idle_stats() -> Stats {
    let mut out = tlb_ext_stats(std::iter::empty());
    for reg in REGISTRY {
        (reg.idle_stats)(&mut out);
        for kind in reg.fault_kinds {
            out.insert(format!("os.faults.{kind}"), Stat::Int(0));
        }
    }
    out
}
