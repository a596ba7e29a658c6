//! The buddy allocator's footprint and invariants: what it costs the host,
//! and every invariant checked in O(frames), for tests and debug builds.

use super::bitmap::Bitmap;
use super::buddy::PhysMem;
use super::frame::PACKED_FREE;
use super::free_area::FreeArea;
use super::migratetype::{PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};

impl PhysMem {
    /// Bytes of simulator memory held by this structure (owner array, free
    /// lists, pageblock types). Divide by `nr_frames` for bytes per frame.
    pub fn metadata_bytes(&self) -> u64 {
        self.owners.len() as u64 * 8
            + self.pageblock_mt.len() as u64
            + self.free_area.iter().map(FreeArea::heap_bytes).sum::<u64>()
    }

    /// What [`PhysMem::metadata_bytes`] will be for a machine of
    /// `nr_frames`, before it is built (the host-memory budget's count; an
    /// upper bound, see the module's text): 8 bytes per frame, one byte per
    /// pageblock, and the free lists' bitmaps (2 bits per frame, 32 per
    /// pageblock, and each bitmap's levels rounded up to whole words: at
    /// most 19 orders x 8 bitmaps x 4 levels of a word).
    pub fn host_bytes(nr_frames: u64) -> u64 {
        const ROUNDING: u64 = 19 * 8 * 4 * 8;
        let pageblocks = nr_frames.div_ceil(PAGEBLOCK_NR_PAGES);
        let bitmaps = nr_frames.div_ceil(4).saturating_add(pageblocks * 4).saturating_add(ROUNDING);
        nr_frames.saturating_mul(8).saturating_add(pageblocks).saturating_add(bitmaps)
    }

    /// After a bulk operation (injection, compaction), in debug builds on
    /// machines up to 4 GiB: checks all invariants and panics on a broken one.
    pub(crate) fn debug_check_invariants(&self) {
        if cfg!(debug_assertions) && self.nr_frames <= 1 << 20 {
            if let Err(e) = self.check_invariants() {
                panic!("physical memory invariant broken: {e}");
            }
        }
    }

    /// Checks every invariant, in O(frames): free blocks in range, disjoint,
    /// fully merged, all frames free, on the list of their pageblocks' type;
    /// bitmaps, summaries and counts agree; every frame is either in exactly
    /// one free block or owned. Meant for tests and debug builds, not for
    /// every operation.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut covered = Bitmap::new(self.nr_frames);
        let mut free_pages = 0;
        for (order, area) in self.free_area.iter().enumerate() {
            let group_order = (order as u8).max(PAGEBLOCK_ORDER);
            area.check(|group| self.block_mt(group << group_order))?;
            for head in area.iter() {
                self.check_free_block(head, order as u8, &mut covered)?;
                free_pages += 1 << order;
            }
        }
        if free_pages != self.nr_free_pages {
            return Err(format!("nr_free_pages {} but free blocks hold {free_pages}", self.nr_free_pages));
        }
        match (0..self.nr_frames).find(|&pfn| !covered.get(pfn) && self.owners[pfn as usize] == PACKED_FREE) {
            Some(pfn) => Err(format!("frame {pfn:#x} is neither in a free block nor owned")),
            None => Ok(()),
        }
    }

    fn check_free_block(&self, head: u64, order: u8, covered: &mut Bitmap) -> std::result::Result<(), String> {
        let len = 1u64 << order;
        if head + len > self.nr_frames {
            return Err(format!("free block {head:#x} order {order} runs past memory"));
        }
        let mt = self.block_mt(head);
        let last_pb = (head + len - 1) >> PAGEBLOCK_ORDER;
        if let Some(pb) = (head >> PAGEBLOCK_ORDER..=last_pb).find(|&pb| self.pageblock_mt[pb as usize] != mt) {
            return Err(format!("free block {head:#x} order {order} spans pageblock {pb} of another type"));
        }
        for pfn in head..head + len {
            if covered.get(pfn) {
                return Err(format!("frame {pfn:#x} is in two free blocks"));
            }
            covered.set(pfn);
            if self.owners[pfn as usize] != PACKED_FREE {
                return Err(format!("frame {pfn:#x} of free block {head:#x} is owned"));
            }
        }
        let buddy = head ^ len;
        if order < self.max_order && buddy + len <= self.nr_frames && self.free_area[order as usize].is_head(buddy) {
            return Err(format!("free buddies {head:#x} and {buddy:#x} at order {order} not merged"));
        }
        Ok(())
    }
}
