//! The paging systems, one module each, named with the paper's word: the
//! baselines (`base`, `thp` with khugepaged, `hugetlb`, `coloring`,
//! `bin_hopping`, `mthp`, `trident`, `hawkeye`) and the papers' systems
//! (`chp`, `perforated`, `gtsm`, `elastic`; `coplace` and `vmm-coloring`
//! place a VM's memory in the hypervisor only). Each holds its
//! configuration table, its OS hooks (`os::System`), its daemons, its statistics, its
//! hardware extension where it has one, and its tests, and tells the
//! registry what it is in its [`Registration`].
//!
//! Layers: a system's OS part uses the OS layer (`os`) and below; its
//! hardware part (e.g. `chp::tlb`) uses only the hardware layer and below,
//! its walk steps only the paging layer and below.
//!
//! This file is the registry: the one list of systems, a line each, from
//! which `registry!` makes [`REGISTRY`], the `os` table [`OsConfig`] with
//! each system's table by name, and the cores' hardware extensions
//! ([`TlbExtensions`], [`ExtKind`], the walk steps' dispatch: `extensions`
//! numbers the TLB kinds and checks the software bits); and the questions
//! the centre asks of the systems of a chain (capabilities and hooks),
//! answered from their registrations. Outside the systems' folders only
//! this file names a system.
//!
//! Adding a system: a folder with a `Registration`, and one line below
//! (ARCHITECTURE.md, "Adding a system").

pub mod balloon;
pub mod base;
pub mod bin_hopping;
pub mod chp;
pub mod coloring;
mod config;
pub mod coplace;
pub mod elastic;
#[macro_use]
pub mod extensions;
pub mod gtsm;
pub mod hawkeye;
pub mod hugescope;
pub mod hugetlb;
pub mod ksm;
pub mod mthp;
pub mod perforated;
mod registration;
#[macro_use]
mod registry;
#[cfg(test)]
mod tests;
pub mod thp;
#[cfg(test)]
mod toy_tests;
pub mod trident;

use config::{is_default_granularity, is_zero};
pub use config::{policy_chain, registration};
pub use registration::{Build, Caps, Hooks, Policy, Registration, SystemTable, TableCheck, Untouched};
pub use registry::same_name;

use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefBuf;
use crate::hw::tlb::{EntryKind, ExtPayload, Holds, ReachSize, Tlb, TlbEntry, TlbExtension};
use crate::os::{Boot, Kernel};
use crate::paging::leaf_ext::{DirtyAssist2d, LeafExtension, LeafWalk, LeafWalk2d, Resolve, Resolve2d};
use crate::paging::nested_walk::{NestedWalk, Resolved2d, Step2d};
use crate::paging::{NodeId, PageTable};
use crate::stat::{Stat, Stats};
use crate::units::{Asid, Gfn, Pfn, VirtAddr};

/// The `os.policy` of a table that gives none.
pub const DEFAULT_POLICY: &str = "base";

registry! {
    system base = base::REGISTRATION;
    system thp = thp::REGISTRATION, table thp::ThpConfig;
    system hugetlb = hugetlb::REGISTRATION, table hugetlb::HugetlbConfig;
    system coloring = coloring::REGISTRATION, table coloring::ColoringConfig;
    system bin_hopping = bin_hopping::REGISTRATION;
    system vmm_coloring = coplace::VMM_COLORING_REGISTRATION;
    system coplace = coplace::REGISTRATION, table coplace::CoplaceConfig;
    system chp = chp::REGISTRATION, table chp::ChpConfig, hw ColoredHuge = chp::ChpLeaf;
    system perforated = perforated::REGISTRATION, table perforated::PerforatedConfig,
        hw Perforated = perforated::PerforatedLeaf;
    system holes = perforated::HOLES_REGISTRATION, table perforated::HolesConfig;
    system gtsm = gtsm::REGISTRATION, hw Gtsm = gtsm::walk::GtsmLeaf;
    system elastic = elastic::REGISTRATION, table elastic::ElasticConfig;
    system mthp = mthp::REGISTRATION;
    system trident = trident::REGISTRATION;
    system hawkeye = hawkeye::REGISTRATION, table hawkeye::HawkeyeConfig;
    host ksm = ksm::host::POLICY, table ksm::KsmConfig;
    host balloon = balloon::host::POLICY, table balloon::BalloonConfig;
    #[cfg(test)]
    system toy = toy_tests::REGISTRATION, table toy_tests::ToyConfig, hw Toy = toy_tests::ToyLeaf;
    #[cfg(test)]
    host toy_host = toy_tests::host::POLICY, table toy_tests::host::ToyHostConfig;
}

/// Boots the kernel with the chain `os` names (after the faulty frames),
/// then places the starting fragmentation (after the systems, so that
/// boot-time reservations such as a hugetlb pool predate it, as
/// hugepages= does).
pub fn boot(os: &OsConfig, boot: Boot, freq_ghz: f64, seed: u64) -> Result<Kernel> {
    let footprint = boot.footprint;
    let host_view = boot.host_view.clone();
    let mut kernel = Kernel::new(boot)?;
    // Faulty frames fail before anything is allocated: no system's
    // boot-time reservation holds one.
    crate::phys::inject_faulty(&mut kernel.mem, os.faulty_frames, os.faulty_granularity, seed);
    let build = Build { os, freq_ghz, seed, host_view: host_view.as_ref() };
    for reg in os.chain_registrations() {
        (reg.build)(&build, &mut kernel)?;
    }
    kernel.fragment(&os.fragmentation, footprint, seed)?;
    Ok(kernel)
}

/// The statistics of every registered system and fault kind, at zero,
/// under a kernel's report; the TLB extensions' counters among them, so
/// that the host's (`host.`) and each VM's (`vmN.`) reports carry the same
/// names as a native run's.
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

/// Whether some system of `chain` has the capability `cap` asks about.
pub fn chain_has(chain: &[&str], cap: impl Fn(&Caps) -> bool) -> bool {
    chain.iter().filter_map(|s| registration(s)).any(|r| cap(&r.caps))
}

/// The first system of `chain` that answers `cap` (its name and the
/// answer): e.g. one that cannot run in a guest, and why.
pub fn chain_find<T>(chain: &[&str], cap: impl Fn(&Caps) -> Option<T>) -> Option<(&'static str, T)> {
    chain.iter().filter_map(|s| registration(s)).find_map(|r| cap(&r.caps).map(|t| (r.name, t)))
}

/// The pages process `asid` of an OS configured `os` never touches
/// (`Hooks::untouched_pages`: a scenario any kernel runs alike).
pub fn untouched_pages(os: &OsConfig, seed: u64, asid: Asid) -> Option<Untouched> {
    REGISTRY.iter().filter_map(|r| r.hooks.untouched_pages).find_map(|f| f(os, seed, asid))
}

/// One L2 TLB miss in how many the cores of an OS configured `os` sample
/// for its chain's systems (`Hooks::miss_sample_period`), if any does.
pub fn miss_sample_period(os: &OsConfig) -> Option<u64> {
    os.chain_registrations().iter().filter_map(|r| r.hooks.miss_sample_period).find_map(|f| f(os))
}
