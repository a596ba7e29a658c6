//! `base`: every fault gets one 4 KiB page from the buddy allocator
//! (MOVABLE, as Linux's GFP_HIGHUSER_MOVABLE anonymous pages).

use super::{fault::FaultOutcome, FaultKind, Kernel};
use crate::error::{Error, Result};
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Asid, Order, PageSize, VirtAddr};

impl Kernel {
    pub(super) fn fault_base(&mut self, asid: Asid, vaddr: VirtAddr, vma: &Vma) -> Result<FaultOutcome> {
        let page = vaddr.align_down(4096);
        let owner = FrameOwner::User { asid, vpn: page.vpn() };
        let frame = self
            .mem
            .alloc(Order::BASE, Migratetype::Movable, owner)
            .ok_or_else(|| Error::OutOfMemory(format!("no 4 KiB frame for a fault at {vaddr}")))?;
        self.map_user(asid, page, frame, PageSize::Size4K, vma.writable)?;
        Ok(FaultOutcome { kind: FaultKind::Base, size: PageSize::Size4K, cycles: self.costs.base })
    }
}
