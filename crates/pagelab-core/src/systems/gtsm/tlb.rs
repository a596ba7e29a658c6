//! GTSM's L2 TLB entry kind: a 2 MiB page of 32 sub-blocks of 64 KiB,
//! placed in one 4 MiB chunk (the chunk's frame and the 64-bit vector of
//! the chunk's sub-blocks it uses). Virtual sub-block `i` lives in the
//! chunk's `i`-th used sub-block, so the translation is a select over the
//! vector: sequential, skipping the gaps. An L2 hit yields an ordinary
//! 4 KiB L1 entry (the L1 is untouched, as for colored huge pages).
//!
//! Layer: hardware (uses `hw` and `units` only).

use crate::hw::tlb::{ExtPayload, ReachSize};
use crate::units::{Pfn, PAGE_SHIFT};

/// GTSM's L2 entry kinds (one: a GTSM page), by their number in GTSM (the
/// registry numbers the TLB's kinds).
pub const KINDS: &[&str] = &["gtsm"];
/// Frames in a 64 KiB sub-block.
pub const SUB_BLOCK_PAGES: u64 = 16;

/// What a GTSM page's L2 entry carries: the chunk, and the chunk's
/// sub-block of each virtual sub-block (the select over the vector of
/// used sub-blocks done once, when the walk fills the entry, so that a
/// translation is one indexed load, as a colored huge page's is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GtsmPage {
    /// The 4 MiB chunk's first frame.
    pub chunk: Pfn,
    /// `blocks[i]`: the chunk's sub-block that backs virtual sub-block `i`.
    pub blocks: [u8; 32],
}

impl GtsmPage {
    /// The entry for the chunk at `chunk` whose used sub-blocks are the
    /// set bits of `used` (32 of them): virtual sub-block `i` in the
    /// `i`-th. E.g. `used` = 0b1101...: sub-block 0 -> 0, 1 -> 2, 2 -> 3.
    pub fn new(chunk: Pfn, used: u64) -> GtsmPage {
        debug_assert_eq!(used.count_ones(), 32, "a GTSM page uses 32 sub-blocks");
        let mut blocks = [0u8; 32];
        let mut rest = used;
        for b in blocks.iter_mut() {
            *b = rest.trailing_zeros() as u8;
            rest &= rest.wrapping_sub(1);
        }
        GtsmPage { chunk, blocks }
    }

    /// The chunk's sub-block that backs virtual sub-block `i` (0..32).
    #[inline]
    pub fn sub_block(&self, i: u64) -> u64 {
        self.blocks[i as usize % 32] as u64
    }
}

impl ExtPayload for GtsmPage {
    fn kind(&self) -> u8 {
        0
    }

    #[inline]
    fn frame_of(&self, offset: u64) -> Pfn {
        let page = offset >> PAGE_SHIFT;
        let block = self.sub_block(page / SUB_BLOCK_PAGES);
        self.chunk.add(block * SUB_BLOCK_PAGES + page % SUB_BLOCK_PAGES)
    }

    fn l1_piece(&self) -> ReachSize {
        ReachSize::Size4K
    }

    fn l1_origin(&self, _size: ReachSize) -> ReachSize {
        ReachSize::Size4K
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_sub_blocks_fill_the_used_ones_in_order() {
        // Used: every sub-block but 0, 3 and 10 (faulty), the first 32 of
        // them: 1, 2, 4..=9, 11..=34.
        let used = ((1u64 << 35) - 1) & !(1 | 1 << 3 | 1 << 10);
        let g = GtsmPage::new(Pfn::new(1024), used);
        assert_eq!(used.count_ones(), 32);
        let by_hand: Vec<u64> = [1, 2].into_iter().chain(4..=9).chain(11..=34).collect();
        assert_eq!((0..32).map(|i| g.sub_block(i)).collect::<Vec<_>>(), by_hand);
        // Page 0 of the 2 MiB page: sub-block 1's first frame; page 37 =
        // sub-block 2, page 5 of it: chunk sub-block 4, frame 1024 + 69.
        assert_eq!(g.frame_of(0), Pfn::new(1024 + 16));
        assert_eq!(g.frame_of(37 << 12 | 0x123), Pfn::new(1024 + 4 * 16 + 5));
        assert_eq!(g.frame_of((2 << 20) - 1), Pfn::new(1024 + 34 * 16 + 15));
    }
}
