//! Perforated pages' hardware extension as the registry takes it: the L2
//! entry kinds and what the flow counts (`tlb.rs`), the page-table bit
//! (`pagetable.rs`), the walk steps natively (`walk.rs`, `translate.rs`)
//! and in a VM, of a guest's perforated page and of a host's perforated
//! EPT leaf (`walk2d.rs`, `translate2d.rs`).
//!
//! Layer: paging (as the steps it names).

use super::pagetable::SOFT_BIT;
use super::tlb::{report_flow, PerforatedKind, PerforatedTlb, KINDS, KIND_PERFORATED};
use super::{translate, translate2d, walk, walk2d};
use crate::hw::cache::ColorMap;
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefBuf;
use crate::hw::tlb::{Holds, ReachSize, TlbEntry};
use crate::paging::leaf_ext::{LeafExtension, LeafWalk, LeafWalk2d, Resolve, Resolve2d};
use crate::paging::nested_walk::{NestedWalk, Resolved2d, Step2d};
use crate::paging::pte::SoftBit;
use crate::paging::{NodeId, PageTable};
use crate::stat::Stats;
use crate::units::{Asid, Gfn, Pfn, VirtAddr};

/// Perforated pages' hardware: a perforated page's L2 entry with its
/// filter (which may need the bitmap), a hole's 4 KiB entry, reached by a
/// walk through a PMD entry with bit 10; in the host, EPT leaves too.
#[derive(Debug)]
pub struct PerforatedLeaf;

impl LeafExtension for PerforatedLeaf {
    type Payload = PerforatedKind;
    type State = PerforatedTlb;
    const KINDS: &'static [&'static str] = KINDS;
    const RESOLVING: u64 = 1 << KIND_PERFORATED;
    const SOFT_BIT: Option<SoftBit> = Some(SOFT_BIT);
    const GUEST_STEP: bool = true;
    const EPT_STEP: bool = true;

    fn state(_colors: &ColorMap, sampling: bool) -> PerforatedTlb {
        PerforatedTlb::new(sampling)
    }

    fn walk<X: Holds<PerforatedKind, PerforatedTlb>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<PerforatedKind> {
        walk::walk(w.pt, w.table, w.asid, w.vaddr)
    }

    fn needs_resolution(state: &mut PerforatedTlb, p: &PerforatedKind, offset: u64) -> bool {
        state.needs_resolution(p, offset)
    }

    fn resolve<X: Holds<PerforatedKind, PerforatedTlb>>(r: &mut Resolve<'_, X>) -> Option<Pfn> {
        translate::resolve(r)
    }

    fn walk2d<W: NestedWalk, X: Holds<PerforatedKind, PerforatedTlb>>(
        w: &mut LeafWalk2d<'_, W, X>,
    ) -> Step2d<PerforatedKind> {
        walk2d::step(w)
    }

    fn ept_leaf(
        ept: &mut PageTable,
        table: NodeId,
        gfn: Gfn,
        write: bool,
        refs: &mut RefBuf,
        stats: &mut CoreStats,
    ) -> Option<NestedHit> {
        walk2d::ept_leaf(ept, table, gfn, write, refs, stats)
    }

    fn combined_over_host<W: NestedWalk>(
        w: &W,
        tag: Asid,
        vaddr: VirtAddr,
        data_gfn: Gfn,
        perms: (bool, bool),
    ) -> Option<TlbEntry<PerforatedKind>> {
        walk2d::combined_over_host(w, tag, vaddr, data_gfn, perms, 0)
    }

    fn resolve_2d<W: NestedWalk, X: Holds<PerforatedKind, PerforatedTlb>>(
        r: &mut Resolve2d<'_, W, X>,
    ) -> Resolved2d<PerforatedKind> {
        translate2d::resolve(r)
    }

    fn samples(state: &PerforatedTlb) -> bool {
        state.sampling
    }

    fn sample(state: &mut PerforatedTlb, kinds: &mut dyn Iterator<Item = (Option<u8>, bool, ReachSize)>) {
        state.sample(kinds);
    }

    fn report(states: &[&PerforatedTlb]) -> Stats {
        report_flow(states)
    }

    fn reset_stats(state: &mut PerforatedTlb) {
        state.reset_stats();
    }
}
