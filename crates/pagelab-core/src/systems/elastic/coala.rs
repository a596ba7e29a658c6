//! CoalaPaging: the frame of a fault chosen so that the aligned range of
//! 16 pages around it can become contiguous (Elastic Translations, III).
//!
//! For a page of `size` (4 KiB: the range is 16 PTEs, 64 KiB; 2 MiB: 16
//! PMDs, 32 MiB) at offset `i` in its aligned range:
//!
//! 1. **Anchor.** The first present neighbour `j` of the range (a leaf of
//!    the same size) whose frame offset equals its virtual offset
//!    (`(pfn / pages) % 16 == j`) fixes the range's anchor frame, `pfn -
//!    j * pages`; the target is `anchor + i * pages`. A neighbour whose
//!    offsets differ cannot share a contiguous range with the fault and is
//!    passed over.
//! 2. **Carve.** Without an anchor, a free block 16 times the page
//!    (order 4, or 13 for 32 MiB) is taken, the page at offset `i` kept
//!    and the other 15 returned: later faults in the range find their
//!    frames free through the anchor this page now is.
//! 3. **Fall back.** When the target is taken, or no such block is free,
//!    the normal allocator backs the fault (the chain's next system).
//!
//! Worked example (4 KiB): a fault at page 0x40005 (offset 5) whose
//! neighbour page 0x40002 maps frame 0x9a2 (offset 2 = 2: a match) gets
//! frame 0x9a0 + 5 = 0x9a5 if it is free. Had the neighbour mapped 0x9a7
//! (offset 7, not 2) it would be passed over.

use crate::os::Kernel;
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr};

/// How CoalaPaging placed a page (counted: `elastic.anchored`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// At the offset an anchor fixed.
    Anchored,
    /// At its offset in a freshly carved block.
    Carved,
}

/// Why CoalaPaging left a fault to the normal allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// An anchor fixed a frame that is taken.
    TargetTaken,
    /// No anchor, and no free block of 16 pages.
    NoBlock,
}

/// The frame CoalaPaging gives the page of `size` at aligned `page`, taken
/// from the allocator for `asid`, or why it gives none.
pub fn place(k: &mut Kernel, asid: Asid, page: VirtAddr, size: PageSize) -> Result<(Pfn, Placement), Fallback> {
    let pages = size.nr_pages();
    let range = CONTIG_ENTRIES as u64 * size.bytes();
    let offset = (page.raw() & (range - 1)) / size.bytes();
    let order = size.order();
    let owner = FrameOwner::User { asid, vpn: page.vpn() };
    if let Some(anchor) = find_anchor(k, asid, page.align_down(range), size) {
        let target = Pfn::new(anchor.raw() + offset * pages);
        return match k.mem.alloc_specific(target, order, owner) {
            true => Ok((target, Placement::Anchored)),
            false => Err(Fallback::TargetTaken),
        };
    }
    let block_order = Order::new(order.get() + CONTIG_ENTRIES.trailing_zeros() as u8);
    if block_order.get() > k.mem.max_order() {
        return Err(Fallback::NoBlock);
    }
    // Owned from the range's first page, so that the kept page's frames
    // name their own pages (an owner's vpn grows by one per frame).
    let range_owner = FrameOwner::User { asid, vpn: page.align_down(range).vpn() };
    let block = k.mem.alloc(block_order, Migratetype::Movable, range_owner).ok_or(Fallback::NoBlock)?;
    for j in (0..CONTIG_ENTRIES as u64).filter(|&j| j != offset) {
        k.mem.free(Pfn::new(block.raw() + j * pages), order);
    }
    Ok((Pfn::new(block.raw() + offset * pages), Placement::Carved))
}

/// The anchor frame of the range at `base` (aligned to 16 pages of
/// `size`): from the first present neighbour whose frame offset equals its
/// virtual offset.
pub fn find_anchor(k: &Kernel, asid: Asid, base: VirtAddr, size: PageSize) -> Option<Pfn> {
    let pt = &k.proc(asid).aspace.pt;
    let pages = size.nr_pages();
    (0..CONTIG_ENTRIES as u64).find_map(|j| {
        let m = pt.lookup(base.add(j * size.bytes()))?;
        let pfn = m.frame.raw();
        (m.size == size && (pfn / pages) % CONTIG_ENTRIES as u64 == j).then(|| Pfn::new(pfn - j * pages))
    })
}
