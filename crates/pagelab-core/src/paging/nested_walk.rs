//! The second dimension as a system's two-dimensional walk step sees it.
//!
//! In a VM the 2D walker (`engine::walk2d`) reaches a guest leaf
//! extension's last step (a colored huge page's line, say) through the
//! same one test of the guest table's software bits as the native walker,
//! then hands the step to the system that owns the bits. That step reads
//! guest tables at host-physical addresses, so it needs the walker's EPT
//! side: the nested TLB, else an EPT walk, with their references and
//! counters, and the hypervisor's view of the EPT for the dirty bits and
//! the check mode. Those live in the engine and the hypervisor, layers
//! above the systems; [`NestedWalk`] is how they are lent, so that the
//! step can live in its system's folder and use only the layers below it.
//! Static dispatch: the step is generic over the walker's type.
//!
//! (In the paging layer, not the hardware one, because a step over the
//! host's leaf extensions reads the EPT, a page table.)

use super::PageTable;
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::{RefBuf, RefTag};
use crate::hw::tlb::TlbEntry;
use crate::units::{Gfn, PageSize, Pfn, PhysAddr, Vpn};

/// Why the EPT side gave no translation.
#[derive(Debug)]
pub enum EptMiss {
    /// The host has not backed this guest frame (an EPT violation).
    Violation(Gfn),
    /// The check mode found a cached translation the tables no longer give
    /// (what it says).
    Stale(String),
}

/// What a system's 2D step gives the walker.
#[derive(Debug)]
pub enum Step2d<P> {
    /// The combined entry to cache.
    Leaf(TlbEntry<P>),
    /// A combined entry to cache through its kind's owner, which may find
    /// that the access needs its resolution step (a perforated page whose
    /// filter does not answer: `systems::fill_ext_after_walk`).
    Resolve(TlbEntry<P>),
    /// The guest's table has no translation: a guest page fault.
    GuestFault,
    /// The EPT side missed: the host backs the frame (or the check mode
    /// ends the run) and the walk restarts.
    Miss(EptMiss),
    /// A store to a guest frame whose EPT leaf is read-only (a KSM page).
    WriteProtected(Gfn),
}

impl<P> From<EptMiss> for Step2d<P> {
    fn from(miss: EptMiss) -> Self {
        Step2d::Miss(miss)
    }
}

impl<P> Step2d<P> {
    /// The same outcome with the leaf's payload wrapped (the registry's
    /// enum of every system's kinds).
    pub fn map_leaf<Q>(self, f: impl FnOnce(TlbEntry<P>) -> TlbEntry<Q>) -> Step2d<Q> {
        match self {
            Step2d::Leaf(e) => Step2d::Leaf(f(e)),
            Step2d::Resolve(e) => Step2d::Resolve(f(e)),
            Step2d::GuestFault => Step2d::GuestFault,
            Step2d::Miss(m) => Step2d::Miss(m),
            Step2d::WriteProtected(g) => Step2d::WriteProtected(g),
        }
    }
}

/// What a kind's resolution step (an access an L2 entry of that kind
/// cannot translate alone: `systems::resolve_ext_2d`) gives the 2D walker.
#[derive(Debug)]
pub enum Resolved2d<P> {
    /// The access's host frame (its L1 entry filled).
    Frame(Pfn),
    /// A walk of the owner's (a hole's), with its outcome.
    Walk(Step2d<P>),
    /// The walker's own walk translates it (a hole only in the host).
    Again,
}

impl<P> Resolved2d<P> {
    /// The same outcome with a walk's leaf payload wrapped.
    pub fn map_leaf<Q>(self, f: impl FnOnce(TlbEntry<P>) -> TlbEntry<Q>) -> Resolved2d<Q> {
        match self {
            Resolved2d::Frame(frame) => Resolved2d::Frame(frame),
            Resolved2d::Walk(step) => Resolved2d::Walk(step.map_leaf(f)),
            Resolved2d::Again => Resolved2d::Again,
        }
    }
}

/// The walker's EPT side and the hypervisor's view of the VM, lent to a
/// system's 2D step for one walk or one dirty assist.
pub trait NestedWalk {
    /// The host frame of `gfn`, the size of its EPT leaf, whether the leaf
    /// allows stores and whether it is dirty (after this access: a `write`
    /// sets its dirty bit), through the nested TLB, else an EPT walk
    /// (whose references and cycles are the walk's); or why not.
    fn translate(&mut self, gfn: Gfn, write: bool) -> Result<NestedHit, EptMiss>;

    /// One guest table entry read, at offset `at` (its guest-physical
    /// address: only the offset in the page counts) of the table in host
    /// frame `table`.
    fn push_guest(&mut self, table: Pfn, at: PhysAddr);

    /// The walk's reference buffer and the walking core's counters, for a
    /// step's own references (a bitmap line, at its host address) and its
    /// counts.
    fn refs(&mut self) -> (&mut RefBuf, &mut CoreStats);

    /// The EPT, when the host's chain has leaf extensions on EPT leaves (a
    /// host perforated page: `virt::Hypervisor::host_perforated`), to read
    /// in software; else `None`, and no guest step looks.
    fn host_ext_table(&self) -> Option<&PageTable>;

    /// Whether the EPT leaf of `gfn` (host `frame`, of `size`) is dirty,
    /// looked up again: a nested-TLB entry filled clean may be stale-clean.
    fn refresh_dirty(&mut self, gfn: Gfn, frame: Pfn, size: PageSize) -> bool;

    /// Sets the dirty bit of `gfn`'s EPT leaf (a store's assist; its
    /// re-walk is not charged).
    fn set_dirty(&mut self, gfn: Gfn);

    /// The host frame backing `gfn` now and its EPT leaf's size, read from
    /// the EPT in software (the check mode; no reference).
    fn backing_of(&self, gfn: Gfn) -> Option<(Pfn, PageSize)>;

    /// `run.check_translations`: fills are checked against both tables.
    fn checks(&self) -> bool;

    /// Whether the guest's writes are tracked (`workload.contents`): if
    /// not, [`NestedWalk::written`] does nothing, and a step can skip
    /// working out what was written.
    fn tracks_writes(&self) -> bool;

    /// The guest set the dirty bit of `count` guest frames from `first`,
    /// mapped at `vbase`: their contents are now the process's.
    fn written(&mut self, first: Gfn, count: u64, vbase: Vpn);
}

/// One EPT entry read by the walker at host-physical `at`.
#[inline]
pub fn push_ept_ref(refs: &mut RefBuf, stats: &mut CoreStats, at: PhysAddr) {
    refs.push_tagged(at, RefTag::EptWalk);
    stats.walk_mem_refs += 1;
    stats.walk_host_refs += 1;
}
