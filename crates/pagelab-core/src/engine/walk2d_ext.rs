//! The 2D walker's leaf-extension point: where a guest walk meets a
//! system's step. At a guest table whose software bits have a 2D step
//! (`systems::GUEST_LEAF_STEPS`, the walker's one test) the walker comes
//! here: a perforated page's step is still the engine's
//! (`walk2d_perforated.rs`); any other goes to its system through
//! `systems::walk2d_leaf_ext`, with the walker's EPT side lent as a
//! `hw::nested_walk::NestedWalk` ([`EptSide`]), so that the step lives in
//! its system's folder (a colored huge page's in `systems/chp/walk2d.rs`).
//! The same for a store's dirty assist through a clean entry. All of it
//! is cold code.

use super::super::mmu::Mmu;
use super::{perforated, Ept, EptMiss, Walk2d, Walker2d};
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::nested_walk::{NestedWalk, Step2d};
use crate::paging::pte::PERFORATED;
use crate::paging::{NodeId, PageTable};
use crate::systems::{self, ExtKind};
use crate::units::{Asid, Gfn, PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
use crate::virt::{Contents, Writes};

/// A walker's content identities and what its process writes, if declared.
pub(super) type ContentsOf<'c, 'a> = Option<&'c mut (&'a mut Contents, Writes)>;

/// The walk's step at a guest PMD entry whose PTE page `table` carries
/// bits of `systems::GUEST_LEAF_STEPS`.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
pub(super) fn leaf_ext_step(
    mmu: &mut Mmu,
    ept: &mut Ept,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    contents: ContentsOf,
) -> Walk2d {
    let bits = pt.table_leaf_ext(table);
    if bits & PERFORATED != 0 {
        let counters = &mut mmu.tlb.extensions_mut().perforated.counters;
        return perforated::walk_step(ept, pt, table, tag, vaddr, write, counters);
    }
    let mut side = EptSide { ept, contents };
    systems::walk2d_leaf_ext(bits, &mut side, pt, table, tag, vaddr, write, mmu.tlb.extensions()).into()
}

impl From<Step2d<ExtKind>> for Walk2d {
    fn from(step: Step2d<ExtKind>) -> Walk2d {
        match step {
            Step2d::Leaf(entry) => Walk2d::Leaf(entry),
            Step2d::Miss(miss) => miss.into(),
            Step2d::WriteProtected(gfn) => Walk2d::WriteProtected(gfn),
        }
    }
}

impl Walker2d<'_> {
    /// A store through a clean entry of a guest leaf extension whose PTE
    /// page `table` carries `bits`, after its PTE's D bit was set: the
    /// owning system's part of the locked update.
    #[cold]
    #[inline(never)]
    pub(super) fn leaf_ext_dirty_assist(&mut self, bits: u64, asid: Asid, tag: Asid, table: NodeId, vaddr: VirtAddr) {
        let Walker2d { mmu, nested, guest, hv, refs, stats, contents, .. } = self;
        let pt = guest.page_table_mut(asid);
        let mut ept = Ept { nested, hv, refs, stats, check: mmu.check };
        let mut side = EptSide { ept: &mut ept, contents: contents.as_mut() };
        systems::dirty_assist_leaf_ext_2d(bits, &mut side, &mmu.tlb, pt, table, tag, vaddr);
    }
}

/// The walker's EPT side and the VM's content identities, lent to a
/// system's 2D step.
pub(super) struct EptSide<'e, 'b, 'c, 'a> {
    ept: &'e mut Ept<'b>,
    contents: ContentsOf<'c, 'a>,
}

impl NestedWalk for EptSide<'_, '_, '_, '_> {
    fn translate(&mut self, gfn: Gfn, write: bool) -> Result<NestedHit, EptMiss> {
        self.ept.translate(gfn, write)
    }

    fn push_guest(&mut self, table: Pfn, at: PhysAddr) {
        self.ept.push_guest(table, at);
    }

    fn stats(&mut self) -> &mut CoreStats {
        self.ept.stats
    }

    fn refresh_dirty(&mut self, gfn: Gfn, frame: Pfn, size: PageSize) -> bool {
        let nested = &mut *self.ept.nested;
        self.ept.hv.refresh_ntlb_dirty(nested.vm, &mut nested.ntlb, gfn, frame, size)
    }

    fn set_dirty(&mut self, gfn: Gfn) {
        self.ept.hv.set_ept_dirty(self.ept.nested.vm, gfn);
    }

    fn backing_of(&self, gfn: Gfn) -> Option<(Pfn, PageSize)> {
        self.ept.hv.backing_of(self.ept.nested.vm, gfn)
    }

    fn checks(&self) -> bool {
        self.ept.check
    }

    fn tracks_writes(&self) -> bool {
        self.contents.is_some()
    }

    fn written(&mut self, first: Gfn, count: u64, vbase: Vpn) {
        if let Some((contents, data)) = self.contents.as_mut() {
            contents.written(self.ept.nested.vm, first, count, vbase, *data);
        }
    }
}
