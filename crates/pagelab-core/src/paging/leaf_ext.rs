//! A system's hardware extension as the walkers see it: its L2 TLB entry
//! kinds, the page-table software bit that leads to its walk steps, and
//! the steps themselves, natively and in a guest ([`LeafExtension`]), each
//! given the walker's state as one context ([`LeafWalk`], [`LeafWalk2d`],
//! [`Resolve`], [`Resolve2d`]) instead of its fields one by one.
//!
//! A system implements [`LeafExtension`] in its folder, generic over the
//! TLB extension that holds its kinds (`hw::tlb::Holds`); the registry
//! (`systems/mod.rs`) numbers every system's kinds once, checks their
//! software bits against each other, and dispatches to the steps (one
//! test of the software bits, then static calls: no `dyn` in a walk).
//!
//! In the paging layer: the steps read page tables (the EPT too, for a
//! host's leaf extension), which the hardware layer does not know.

use std::fmt::Debug;

use super::nested_walk::{NestedWalk, Resolved2d, Step2d};
use super::pte::SoftBit;
use super::{NodeId, PageTable};
use crate::hw::cache::ColorMap;
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefBuf;
use crate::hw::tlb::{ExtPayload, Holds, ReachSize, Tlb, TlbEntry, TlbExtension};
use crate::stat::Stats;
use crate::units::{Asid, Gfn, Pfn, VirtAddr};

/// The native walker's state at the last step of a walk whose PMD entry
/// carries an extension's software bit.
#[derive(Debug)]
pub struct LeafWalk<'a, X> {
    pub pt: &'a mut PageTable,
    /// The table the PMD entry points to (the extension's).
    pub table: NodeId,
    pub asid: Asid,
    pub vaddr: VirtAddr,
    pub write: bool,
    /// The core's TLB extensions (the owner's state among them).
    pub ext: &'a X,
    pub refs: &'a mut RefBuf,
    pub stats: &'a mut CoreStats,
}

/// The 2D walker's state at the last step of a guest walk whose guest PMD
/// entry carries an extension's software bit; the EPT side lent as `w`.
#[derive(Debug)]
pub struct LeafWalk2d<'a, W, X> {
    pub w: &'a mut W,
    /// The guest's page table, and the extension's table in it.
    pub pt: &'a mut PageTable,
    pub table: NodeId,
    /// The hardware tag of the guest address space (`virt::hw_tag`).
    pub tag: Asid,
    pub vaddr: VirtAddr,
    pub write: bool,
    pub ext: &'a mut X,
}

/// One access, as the MMU was asked it.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub vaddr: VirtAddr,
    pub write: bool,
    pub instr: bool,
}

/// The MMU's state for an access whose L2 entry (of the extension's
/// kinds) cannot translate it alone.
#[derive(Debug)]
pub struct Resolve<'a, X: TlbExtension> {
    pub tlb: &'a mut Tlb<X>,
    pub pt: &'a mut PageTable,
    pub entry: &'a TlbEntry<X::Payload>,
    pub access: Access,
    /// A second L2 TLB access's latency (0 under the interval model, which
    /// charges it itself).
    pub l2_latency: f64,
    pub refs: &'a mut RefBuf,
    pub stats: &'a mut CoreStats,
}

/// The same in a VM: the EPT side lent as `w`, the entry tagged `tag`.
#[derive(Debug)]
pub struct Resolve2d<'a, W, X: TlbExtension> {
    pub w: &'a mut W,
    pub tlb: &'a mut Tlb<X>,
    pub pt: &'a mut PageTable,
    pub entry: &'a TlbEntry<X::Payload>,
    pub tag: Asid,
    pub access: Access,
    pub l2_latency: f64,
}

/// A store through a clean TLB entry of a guest leaf extension (the guest
/// PTE's D bit is set already; `table` is its PTE page): what else the
/// locked update sets, in the guest's table and the EPT.
#[derive(Debug)]
pub struct DirtyAssist2d<'a, W, S> {
    pub w: &'a mut W,
    pub pt: &'a mut PageTable,
    pub table: NodeId,
    pub vaddr: VirtAddr,
    /// The owner's state on the storing core.
    pub state: &'a S,
    /// Whether the core's L2 holds the page's combined entry (of the
    /// owner's kind) under the storing tag.
    pub combined: bool,
}

/// One system's hardware extension. Every step has a default for a
/// system without it; a system with a software bit has at least
/// [`LeafExtension::walk`].
pub trait LeafExtension: 'static {
    /// What its L2 TLB entries carry (`hw::tlb::NoPayload`: it has none).
    type Payload: ExtPayload;
    /// Its per-core state beside the TLB (counters, a constant of the
    /// hardware).
    type State: Clone + Debug + Default + Send;
    /// Its L2 TLB entry kinds, by the number its payload's `kind()` gives
    /// (from 0 within the system); the registry numbers them in the TLB.
    const KINDS: &'static [&'static str];
    /// The core statistic its walk steps count their walks in
    /// (`CoreStats::leaf_ext_walks[X::OWNER]`), declared in its
    /// registration, if they count them.
    const WALK_STAT: Option<&'static str> = None;
    /// Bit `k` set when an L2 hit on its kind `k` may need
    /// [`LeafExtension::resolve`].
    const RESOLVING: u64 = 0;
    /// The software bit of a PMD entry (pointing at a page table) that
    /// hands the last step of the walk to it, if it has one.
    const SOFT_BIT: Option<SoftBit> = None;
    /// It has a 2D step at a guest table carrying its bit
    /// ([`LeafExtension::walk2d`]); without one a guest's tables of its
    /// kind are walked as plain ones.
    const GUEST_STEP: bool = false;
    /// Its bit may mark an EPT PMD entry (a host page of its kind), walked
    /// by [`LeafExtension::ept_leaf`].
    const EPT_STEP: bool = false;
    /// A store through a clean entry sets more than the PTE's D bit
    /// ([`LeafExtension::dirty_assist`], [`LeafExtension::dirty_assist_2d`]).
    const DIRTY_ASSIST: bool = false;
    /// A guest fault's zeroed frames are its own, not the leaf's range
    /// ([`LeafExtension::push_zeroed`]).
    const OWN_ZEROED_FRAMES: bool = false;

    /// Its state on a core of a machine with these page colors; `sampling`:
    /// the core samples its L2's contents by kind.
    fn state(_colors: &ColorMap, _sampling: bool) -> Self::State {
        Self::State::default()
    }

    /// The last step of a native walk: the entry to cache.
    fn walk<X: Holds<Self::Payload, Self::State>>(_w: &mut LeafWalk<'_, X>) -> TlbEntry<Self::Payload> {
        unreachable!("no walk step")
    }

    /// A store through a clean entry: what the locked update sets beyond
    /// the PTE's D bit.
    fn dirty_assist(_pt: &mut PageTable, _table: NodeId) {}

    /// An L2 hit on `p` at byte `offset` into it: whether the entry alone
    /// cannot translate the access (then [`LeafExtension::resolve`]).
    fn needs_resolution(_state: &mut Self::State, _p: &Self::Payload, _offset: u64) -> bool {
        false
    }

    /// Finishes an access its entry could not translate alone: the frame,
    /// or `None` for a fault.
    fn resolve<X: Holds<Self::Payload, Self::State>>(_r: &mut Resolve<'_, X>) -> Option<Pfn> {
        unreachable!("no resolution step")
    }

    /// The last step of a guest walk in a VM.
    fn walk2d<W: NestedWalk, X: Holds<Self::Payload, Self::State>>(
        _w: &mut LeafWalk2d<'_, W, X>,
    ) -> Step2d<Self::Payload> {
        unreachable!("no 2D walk step")
    }

    /// [`LeafExtension::dirty_assist`] in a guest.
    fn dirty_assist_2d<W: NestedWalk>(_d: &mut DirtyAssist2d<'_, W, Self::State>) {}

    /// Adds the guest frames a guest fault at `vaddr` zeroed (its own,
    /// with [`LeafExtension::OWN_ZEROED_FRAMES`]) to `out`.
    fn push_zeroed(_pt: &PageTable, _vaddr: VirtAddr, _out: &mut Vec<(Gfn, u64)>) {}

    /// The EPT walk's step at an EPT PMD entry carrying its bit (`table`
    /// the entry's table): the 4 KiB translation of `gfn`, or `None` for
    /// an EPT violation.
    fn ept_leaf(
        _ept: &mut PageTable,
        _table: NodeId,
        _gfn: Gfn,
        _write: bool,
        _refs: &mut RefBuf,
        _stats: &mut CoreStats,
    ) -> Option<NestedHit> {
        unreachable!("no EPT step")
    }

    /// A guest huge page whose data frame's EPT translation is 4 KiB: the
    /// combined entry over a host page of its kind (`perms`: permission and
    /// dirtiness), or `None`.
    fn combined_over_host<W: NestedWalk>(
        _w: &W,
        _tag: Asid,
        _vaddr: VirtAddr,
        _data_gfn: Gfn,
        _perms: (bool, bool),
    ) -> Option<TlbEntry<Self::Payload>> {
        None
    }

    /// [`LeafExtension::resolve`] in a VM.
    fn resolve_2d<W: NestedWalk, X: Holds<Self::Payload, Self::State>>(
        _r: &mut Resolve2d<'_, W, X>,
    ) -> Resolved2d<Self::Payload> {
        unreachable!("no 2D resolution step")
    }

    /// Whether the core samples its L2's contents for it (once a quantum).
    fn samples(_state: &Self::State) -> bool {
        false
    }

    /// One sample of the L2's contents: each valid entry's kind (its own
    /// number if it is one of its kinds, `None` otherwise), whether it is
    /// a cached hole bitmap (the TLB's own kind), and its reach.
    fn sample(_state: &mut Self::State, _kinds: &mut dyn Iterator<Item = (Option<u8>, bool, ReachSize)>) {}

    /// Its statistics over the cores' states given (one core's, or all).
    fn report(_states: &[&Self::State]) -> Stats {
        Stats::new()
    }

    /// Zeroes its counters (the end of warm-up).
    fn reset_stats(_state: &mut Self::State) {}
}
