//! The hardware extensions of the simulated cores, registered in one place:
//! the L2 TLB's extension kinds of every system ([`TlbExtensions`]: the
//! owners' state side by side, and one side table of [`ExtKind`], the
//! enum of their payloads, by L2 slot), the walk steps the
//! page-table software bits lead to, natively ([`walk_leaf_ext`]) and in
//! a VM ([`walk2d_leaf_ext`] at a guest table, [`ept_leaf_ext`] at an EPT
//! entry, [`combined_over_host_ext`], [`dirty_assist_leaf_ext_2d`],
//! [`push_zeroed_leaf`]; the EPT side lent as a
//! `paging::nested_walk::NestedWalk`), and what the MMU asks of a kind
//! after a walk or an L2 hit ([`fill_ext_after_walk`], [`resolve_ext`],
//! in a VM [`resolve_ext_2d`]). All of it is cold code: a plain page's
//! path tests one kind tag and never comes here.

use super::chp;
use super::chp::tlb::{ChpTlb, ColoredHuge, KIND_COLORED_HUGE};
use super::gtsm;
use super::gtsm::tlb::{GtsmPage, KIND_GTSM};
use super::perforated;
use super::perforated::tlb::{PerforatedKind, PerforatedTlb, KIND_HOLE, KIND_PERFORATED};
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefBuf;
use crate::hw::tlb::{EntryKind, ExtPayload, ReachSize, Tlb, TlbEntry, TlbExtension};
use crate::paging::nested_walk::{NestedWalk, Resolved2d, Step2d};
use crate::paging::pte::{COLORED_HUGE, GTSM, PERFORATED};
use crate::paging::{NodeId, PageTable};
use crate::stat::Stats;
use crate::units::{Asid, Gfn, Pfn, VirtAddr};

/// The payload of an L2 entry of an extension kind, by owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtKind {
    ColoredHuge(ColoredHuge),
    Perforated(PerforatedKind),
    Gtsm(GtsmPage),
}

impl ExtPayload for ExtKind {
    fn kind(&self) -> u8 {
        match self {
            ExtKind::ColoredHuge(p) => p.kind(),
            ExtKind::Perforated(p) => p.kind(),
            ExtKind::Gtsm(p) => p.kind(),
        }
    }
    #[inline]
    fn frame_of(&self, offset: u64) -> Pfn {
        match self {
            ExtKind::ColoredHuge(p) => p.frame_of(offset),
            ExtKind::Perforated(p) => p.frame_of(offset),
            ExtKind::Gtsm(p) => p.frame_of(offset),
        }
    }
    fn l1_piece(&self) -> ReachSize {
        match self {
            ExtKind::ColoredHuge(p) => p.l1_piece(),
            ExtKind::Perforated(p) => p.l1_piece(),
            ExtKind::Gtsm(p) => p.l1_piece(),
        }
    }
    fn l1_origin(&self, size: ReachSize) -> ReachSize {
        match self {
            ExtKind::ColoredHuge(p) => p.l1_origin(size),
            ExtKind::Perforated(p) => p.l1_origin(size),
            ExtKind::Gtsm(p) => p.l1_origin(size),
        }
    }
}

/// The owners of the L2's extension kinds, with their state, and the
/// side table of every kind's payload by L2 slot (one table of the enum:
/// a hit loads its payload with one indexed copy, whatever the kind).
#[derive(Debug, Clone, Default)]
pub struct TlbExtensions {
    pub chp: ChpTlb,
    pub perforated: PerforatedTlb,
    /// The payload of the extension entry in each L2 slot (stale for
    /// other slots; empty until the first extension entry is cached).
    slots: Vec<ExtKind>,
}

impl TlbExtension for TlbExtensions {
    type Payload = ExtKind;
    const RESOLVING_KINDS: u64 = 1 << KIND_PERFORATED;

    fn store(&mut self, slot: usize, slots: usize, p: &ExtKind) -> u32 {
        if self.slots.is_empty() {
            self.slots = vec![ExtKind::ColoredHuge(ColoredHuge::default()); slots];
        }
        self.slots[slot] = *p;
        slot as u32
    }

    #[inline]
    fn load(&self, kind: u8, index: u32) -> ExtKind {
        let p = self.slots[index as usize];
        debug_assert_eq!(p.kind(), kind, "the payload of another kind in the slot");
        debug_assert!([KIND_COLORED_HUGE, KIND_PERFORATED, KIND_HOLE, KIND_GTSM].contains(&kind));
        p
    }

    fn needs_resolution(&mut self, p: &ExtKind, offset: u64) -> bool {
        match p {
            ExtKind::ColoredHuge(_) | ExtKind::Gtsm(_) => false,
            ExtKind::Perforated(q) => self.perforated.needs_resolution(q, offset),
        }
    }

    fn reset_stats(&mut self) {
        self.perforated.reset_stats();
    }
}

/// What an extension kind's walk hands the TLB.
pub type ExtEntry = TlbEntry<ExtKind>;

/// An owner's entry as the TLB holds it.
pub fn wrap<P: ExtPayload>(e: TlbEntry<P>, kind: impl Fn(P) -> ExtKind) -> ExtEntry {
    let kind = match e.kind {
        EntryKind::Page { pfn } => EntryKind::Page { pfn },
        EntryKind::Ext(p) => EntryKind::Ext(kind(p)),
    };
    TlbEntry { asid: e.asid, vbase: e.vbase, size: e.size, writable: e.writable, dirty: e.dirty, kind }
}

/// Whether the cores sample their L2 TLB's contents by kind
/// (`dtlb.l2.share.*`): for the chains whose systems make kinds or sizes
/// other than 4 KiB and 2 MiB pages (perforated pages, coalesced
/// translations).
pub fn samples_l2_occupancy(chain: &[&str]) -> bool {
    chain.iter().any(|s| matches!(*s, "perforated" | "elastic" | "mthp"))
}

/// The hardware extensions of a core of a machine with these page colors
/// (colored huge pages' sub-mappings are strided by the number of colors);
/// `sampling` says whether its L2 contents are sampled
/// ([`samples_l2_occupancy`]).
pub fn tlb_extensions(colors: &crate::hw::cache::ColorMap, sampling: bool) -> TlbExtensions {
    TlbExtensions {
        chp: ChpTlb::new(chp::stride_shift(colors)),
        perforated: PerforatedTlb::new(sampling),
        slots: Vec::new(),
    }
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
    if bits == PERFORATED {
        return wrap(perforated::walk::walk(pt, table, asid, vaddr), ExtKind::Perforated);
    }
    if bits == GTSM {
        return wrap(gtsm::walk::walk(pt, table, asid, vaddr, refs, stats), ExtKind::Gtsm);
    }
    debug_assert_eq!(bits, COLORED_HUGE, "no walk step for software bits {bits:#x}");
    let e = chp::walk::walk(pt, table, asid, vaddr, write, ext.chp.stride_shift, refs, stats);
    wrap(e, ExtKind::ColoredHuge)
}

/// A store through a clean TLB entry of a leaf extension (its PTE's D bit
/// is set already): what else the locked update sets. (A perforated
/// page's PTEs each have their own D bit: nothing.)
#[cold]
#[inline(never)]
pub fn dirty_assist_leaf_ext(bits: u64, pt: &mut PageTable, table: NodeId) {
    if bits == COLORED_HUGE {
        chp::walk::dirty_assist(pt, table);
    }
}

/// The guest leaf-extension bits the 2D walker has a step for: its one
/// test at a guest table. (A GTSM page's bit is not one: its 4 KiB PTEs
/// are walked, as before.)
pub const GUEST_LEAF_STEPS: u64 = PERFORATED | COLORED_HUGE;

/// The bits of an EPT PMD entry that make it a leaf extension (a host
/// perforated page), which the EPT walk tests beside the huge bit.
pub const EPT_LEAF_STEPS: u64 = PERFORATED;

/// The 2D walk step of the guest leaf extension whose software bits
/// (`bits`) the guest PMD entry above `table` carries, the EPT side lent
/// as `w`: the 2D walker's one jump to a system's code. Returns the entry
/// to cache or why there is none.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
pub fn walk2d_leaf_ext<W: NestedWalk>(
    bits: u64,
    w: &mut W,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    ext: &mut TlbExtensions,
) -> Step2d<ExtKind> {
    if bits & PERFORATED != 0 {
        let step = perforated::walk2d::step(w, pt, table, tag, vaddr, write, &mut ext.perforated.counters);
        return step.map_leaf(|e| wrap(e, ExtKind::Perforated));
    }
    debug_assert_eq!(bits, COLORED_HUGE, "no 2D walk step for software bits {bits:#x}");
    let step = chp::walk2d::step(w, pt, table, tag, vaddr, write, ext.chp.stride_shift);
    step.map_leaf(|e| wrap(e, ExtKind::ColoredHuge))
}

/// The EPT walk's step at an EPT PMD entry with bits of
/// [`EPT_LEAF_STEPS`] (a host perforated page, `table` its hole table):
/// the 4 KiB translation of `gfn`, or `None` for an EPT violation.
#[cold]
#[inline(never)]
pub fn ept_leaf_ext(
    ept: &mut PageTable,
    table: NodeId,
    gfn: Gfn,
    write: bool,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> Option<NestedHit> {
    perforated::walk2d::ept_leaf(ept, table, gfn, write, refs, stats)
}

/// A guest huge page whose data frame's EPT translation is 4 KiB, when
/// the host's chain has leaf extensions on EPT leaves: the combined entry
/// over a host perforated page (`perms`: its permission and dirtiness),
/// or `None` when the EPT leaf is none or the sub-page is a host hole.
#[cold]
#[inline(never)]
pub fn combined_over_host_ext<W: NestedWalk>(
    w: &W,
    tag: Asid,
    vaddr: VirtAddr,
    data_gfn: Gfn,
    perms: (bool, bool),
) -> Option<ExtEntry> {
    let e = perforated::walk2d::combined_over_host(w, tag, vaddr, data_gfn, perms, 0)?;
    Some(wrap(e, ExtKind::Perforated))
}

/// In a VM, an access to `vaddr` (guest page table `pt`) whose combined
/// L2 entry `entry` cannot translate it alone (the lookup returned
/// `TlbLookup::Resolve`, or `fill_ext_after_walk` `None`): the kind's
/// owner finishes it, the EPT side lent as `w`.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the MMU's state for one access
pub fn resolve_ext_2d<W: NestedWalk>(
    w: &mut W,
    tlb: &mut Tlb<TlbExtensions>,
    pt: &mut PageTable,
    entry: &ExtEntry,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    instr: bool,
    l2_latency: f64,
) -> Resolved2d<ExtKind> {
    perforated::translate2d::resolve(w, tlb, pt, entry, tag, vaddr, write, instr, l2_latency)
}

/// A store through a clean TLB entry of a guest leaf extension (the guest
/// PTE's D bit is set already; `table` is its PTE page, whose software
/// bits are `bits`): what else the locked update sets, in the guest's
/// table and the EPT. Tagged `tag`, the entry may still be in `tlb`'s L2.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // one store's state
pub fn dirty_assist_leaf_ext_2d<W: NestedWalk>(
    bits: u64,
    w: &mut W,
    tlb: &Tlb<TlbExtensions>,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
) {
    if bits & COLORED_HUGE != 0 {
        let l2 = tlb.peek_l2(tag, vaddr);
        let combined = l2.is_some_and(|e| matches!(e.kind, EntryKind::Ext(ExtKind::ColoredHuge(_))));
        chp::walk2d::dirty_assist(w, pt, table, vaddr, tlb.extensions().chp.stride_shift, combined);
    }
}

/// Adds the guest frames of the leaf a guest fault at `vaddr` made, which
/// its handler zeroed, to `out`: the leaf's range, or a leaf extension's
/// own frames (a colored huge page's 512, strided). `table` is the last
/// table on `vaddr`'s path: one array lookup of its bits for any other
/// fault.
#[inline]
pub fn push_zeroed_leaf(pt: &PageTable, table: NodeId, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
    if pt.table_leaf_ext(table) & COLORED_HUGE != 0 {
        push_zeroed_colored_huge(pt, vaddr, out);
    } else if let Some(m) = pt.lookup(vaddr) {
        out.push((Gfn::of_guest_kernel(m.frame), m.size.nr_pages()));
    }
}

#[cold]
#[inline(never)]
fn push_zeroed_colored_huge(pt: &PageTable, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
    chp::walk2d::push_zeroed(pt, vaddr, out);
}

/// After a walk gave `entry` (an extension kind's) for an access to
/// `vaddr`: caches it and returns the frame, or `None` when the access
/// needs [`resolve_ext`] (a perforated page's region the filter does not
/// answer for: the entry is in the L2, the L1 is not filled).
#[inline]
pub fn fill_ext_after_walk(tlb: &mut Tlb<TlbExtensions>, entry: ExtEntry, vaddr: VirtAddr, instr: bool) -> Option<Pfn> {
    if let EntryKind::Ext(p @ ExtKind::Perforated(_)) = entry.kind {
        tlb.insert_l2(&entry);
        let offset = vaddr.raw() & (entry.size.bytes() - 1);
        if tlb.extensions_mut().needs_resolution(&p, offset) {
            return None;
        }
        tlb.fill_l1(&entry, vaddr, instr);
        return Some(entry.frame_of(vaddr));
    }
    tlb.fill_after_walk(entry, vaddr, instr);
    Some(entry.frame_of(vaddr))
}

/// An access to `vaddr` whose L2 entry cannot translate it alone (its
/// lookup returned `TlbLookup::Resolve`, or `fill_ext_after_walk` `None`):
/// the kind's owner finishes it. Returns the frame, or `None` for a fault.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the MMU's state for one access
pub fn resolve_ext(
    tlb: &mut Tlb<TlbExtensions>,
    pt: &mut PageTable,
    entry: &ExtEntry,
    vaddr: VirtAddr,
    write: bool,
    instr: bool,
    l2_latency: f64,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> Option<Pfn> {
    perforated::translate::resolve(tlb, pt, entry, vaddr, write, instr, l2_latency, refs, stats)
}

/// One sample of the L2's contents, if a system samples them (once per
/// quantum: never per access).
#[inline]
pub fn sample_tlb(tlb: &mut Tlb<TlbExtensions>) {
    if tlb.extensions().perforated.sampling {
        sample_perforated(tlb);
    }
}

#[cold]
#[inline(never)]
fn sample_perforated(tlb: &mut Tlb<TlbExtensions>) {
    let kinds: Vec<(u8, ReachSize)> = tlb.l2_kinds().collect();
    tlb.extensions_mut().perforated.sample(kinds.into_iter());
}

/// The extensions' statistics over the cores given (one core's, or all
/// of them): counters summed, occupancy shares the mean over all samples.
pub fn tlb_ext_stats<'a>(cores: impl Iterator<Item = &'a TlbExtensions>) -> Stats {
    perforated::report_flow(cores.map(|x| &x.perforated))
}
