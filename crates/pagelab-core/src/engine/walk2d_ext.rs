//! The 2D walker's leaf-extension point: where a guest walk meets a
//! system's step. At a guest table whose software bits have a 2D step
//! (`systems::GUEST_LEAF_STEPS`, the walker's one test) the walker comes
//! here, and the step goes to its system through
//! `systems::walk2d_leaf_ext`, with the walker's EPT side lent as a
//! `paging::nested_walk::NestedWalk` ([`EptSide`]), so that the step lives
//! in its system's folder (a colored huge page's in
//! `systems/chp/walk2d.rs`, a perforated page's in
//! `systems/perforated/walk2d.rs`). The same for a store's dirty assist
//! through a clean entry, for a guest huge page over a host leaf
//! extension, and for an access a combined entry cannot translate alone
//! (`systems::resolve_ext_2d`: a perforated page's bitmap step). (The EPT
//! walk's own leaf-extension step, `systems::ept_leaf_ext`, needs no EPT
//! side: it is called from `Ept::translate`.) All of it is cold code.

use super::super::mmu::{Mmu, Request};
use super::{check_combined, Ept, EptMiss, Walk2d, Walker2d};
use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefBuf;
use crate::paging::leaf_ext::{Access, LeafWalk2d, Resolve2d};
use crate::paging::nested_walk::{NestedWalk, Resolved2d, Step2d};
use crate::paging::{NodeId, PageTable};
use crate::systems::{self, ExtEntry, ExtKind};
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
    let mut side = EptSide { ept, contents };
    let ext = mmu.tlb.extensions_mut();
    systems::walk2d_leaf_ext(bits, &mut LeafWalk2d { w: &mut side, pt, table, tag, vaddr, write, ext }).into()
}

/// A guest huge page over a 4 KiB EPT translation when the host has leaf
/// extensions on EPT leaves: the combined entry over one, if any.
#[cold]
#[inline(never)]
pub(super) fn combined_over_host(
    ept: &mut Ept,
    tag: Asid,
    vaddr: VirtAddr,
    data_gfn: Gfn,
    perms: (bool, bool),
) -> Option<ExtEntry> {
    systems::combined_over_host_ext(&EptSide { ept, contents: None }, tag, vaddr, data_gfn, perms)
}

impl From<Step2d<ExtKind>> for Walk2d {
    fn from(step: Step2d<ExtKind>) -> Walk2d {
        match step {
            Step2d::Leaf(entry) => Walk2d::Leaf(entry),
            Step2d::Resolve(entry) => Walk2d::Resolve(entry),
            Step2d::GuestFault => Walk2d::GuestFault,
            Step2d::Miss(miss) => miss.into(),
            Step2d::WriteProtected(gfn) => Walk2d::WriteProtected(gfn),
        }
    }
}

impl Walker2d<'_> {
    /// A combined entry a walk gave whose kind's owner caches it: the
    /// access translated by it, else resolved as after an L2 hit. `None`:
    /// a fault or an EPT violation was handled; walk again.
    #[cold]
    #[inline(never)]
    pub(super) fn ext_leaf(&mut self, req: Request, tag: Asid, entry: ExtEntry) -> Result<Option<Pfn>> {
        if let Some(frame) = systems::fill_ext_after_walk(&mut self.mmu.tlb, entry, req.vaddr, req.instr) {
            return Ok(Some(frame));
        }
        self.resolve_ext(req, tag, Some(entry))
    }

    /// An access that the combined entry `entry` (else the L2's, which the
    /// lookup hit) cannot translate alone: its owner's resolution step.
    /// `None`: a fault or an EPT violation was handled, or the walker's own
    /// walk translates it; the caller walks again.
    #[cold]
    #[inline(never)]
    pub(super) fn resolve_ext(&mut self, req: Request, tag: Asid, entry: Option<ExtEntry>) -> Result<Option<Pfn>> {
        let Request { asid, vaddr, write, instr } = req;
        let entry = entry.or_else(|| self.mmu.tlb.peek_l2(tag, vaddr)).expect("an entry to resolve");
        let resolved = {
            let Walker2d { mmu, nested, guest, hv, refs, stats, .. } = self;
            let pt = guest.page_table_mut(asid);
            let mut ept = Ept { nested, hv, refs, stats, check: mmu.check };
            let mut side = EptSide { ept: &mut ept, contents: None };
            let (access, l2_latency) = (Access { vaddr, write, instr }, mmu.l2_tlb_latency);
            let (w, tlb, entry) = (&mut side, &mut mmu.tlb, &entry);
            systems::resolve_ext_2d(&mut Resolve2d { w, tlb, pt, entry, tag, access, l2_latency })
        };
        let outcome: Walk2d = match resolved {
            Resolved2d::Frame(frame) => {
                if self.mmu.check {
                    check_combined(self.guest, self.hv, self.nested.vm, asid, vaddr, frame)?;
                }
                return Ok(Some(frame));
            }
            Resolved2d::Again => return Ok(None),
            Resolved2d::Walk(step) => step.into(),
        };
        if let Walk2d::Leaf(hole) = outcome {
            self.mmu.tlb.fill_after_walk(hole, vaddr, instr);
            return Ok(Some(hole.frame_of(vaddr)));
        }
        self.settle_miss(outcome, asid, tag, vaddr, write)?;
        Ok(None)
    }

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
    fn translate(&mut self, gfn: Gfn, write: bool) -> std::result::Result<NestedHit, EptMiss> {
        self.ept.translate(gfn, write)
    }

    fn push_guest(&mut self, table: Pfn, at: PhysAddr) {
        self.ept.push_guest(table, at);
    }

    fn refs(&mut self) -> (&mut RefBuf, &mut CoreStats) {
        (self.ept.refs, self.ept.stats)
    }

    fn host_ext_table(&self) -> Option<&PageTable> {
        let hv = &*self.ept.hv;
        hv.host_perforated.then(|| hv.ept(self.ept.nested.vm))
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
