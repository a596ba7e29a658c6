//! `thp`: transparent huge pages at fault time (do_huge_pmd_anonymous_page)
//! when the 2 MiB-aligned range lies inside the VMA, no page table exists
//! for it yet (pmd_none), and an order-9 block is free; otherwise the
//! fault falls back to 4 KiB and khugepaged may collapse the range later.

use super::{fault::FaultOutcome, FaultKind, Kernel};
use crate::error::Result;
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Asid, Order, PageSize, VirtAddr};

impl Kernel {
    pub(super) fn fault_thp(&mut self, asid: Asid, vaddr: VirtAddr, vma: &Vma) -> Result<Option<FaultOutcome>> {
        if !self.cfg.thp.fault {
            return Ok(None);
        }
        let base = vaddr.align_down(2 << 20);
        if !vma.covers(base, 2 << 20) || !self.range_is_empty(asid, base, PageSize::Size2M) {
            return Ok(None);
        }
        let owner = FrameOwner::User { asid, vpn: base.vpn() };
        let Some(frame) = self.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
            self.stats.thp_fault_fallback += 1;
            return Ok(None);
        };
        self.map_user(asid, base, frame, PageSize::Size2M, vma.writable)?;
        Ok(Some(FaultOutcome { kind: FaultKind::Thp, size: PageSize::Size2M, cycles: self.costs.thp }))
    }

}
