//! Arm's contiguous bit in pagelab's page tables (a child module of
//! `pagetable`, whose entries it reads and writes directly).
//!
//! Sixteen aligned entries of one table (16 PTEs: 64 KiB; 16 PMDs that map
//! 2 MiB pages: 32 MiB) that map sixteen contiguous, aligned pages with the
//! same permissions may carry the contiguous bit ([`CONTIGUOUS`]); a core
//! that coalesces then caches one TLB entry for the whole range (the
//! walker's `contiguous_leaf`). The rules the OS keeps, as Elastic
//! Translations' transparent management does (and as Arm requires, since
//! the TLB may hold the range's translation from any one of its entries):
//!
//! - the bit is set on all sixteen entries or none
//!   ([`PageTable::set_contiguous`] checks that they qualify: each present,
//!   a leaf of the level, writable alike, entry i mapping anchor + i pages);
//! - any change to one entry of a range (unmap, permission change,
//!   migration, a split) first clears the bit on all sixteen
//!   ([`PageTable::break_contiguous`], from `clear_entry`, `replace` and
//!   `split_huge`). The change's own shootdown then drops the coalesced
//!   TLB entry: TLB invalidation is by overlap, so an invalidation of any
//!   page of the range drops the entry translating all of it, as TLBI VA
//!   does for a contiguous entry. The other fifteen translations are
//!   unchanged, so nothing stale can remain.
//!
//! Worked example: PTEs 16..31 of a table map frames 0x4b0..0x4bf; frame
//! 0x4b0 is aligned to 16, entry 16 + i maps 0x4b0 + i: they qualify. A
//! munmap of the page of entry 20 clears the bit on entries 16..31 (one
//! break) and unmaps entry 20; entries 16..19 and 21..31 stay mapped as
//! 4 KiB pages.

use super::super::pte::{Pte, ACCESSED, CONTIGUOUS, DIRTY, HUGE, PRESENT, WRITABLE};
use super::{table_index, NodeId, PageTable};
use crate::units::{PageSize, VirtAddr};

/// Entries in one contiguous range.
pub const CONTIG_ENTRIES: usize = 16;

/// What one page table's contiguous ranges count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContigCounts {
    /// Live ranges of 16 PTEs (64 KiB each).
    pub ranges_64k: u64,
    /// Live ranges of 16 PMDs (32 MiB each).
    pub ranges_32m: u64,
    /// Ranges whose bit a change to one entry cleared.
    pub breaks: u64,
}

impl ContigCounts {
    fn ranges_mut(&mut self, level: u8) -> &mut u64 {
        if level == 1 {
            &mut self.ranges_64k
        } else {
            &mut self.ranges_32m
        }
    }
}

/// The first entry of the range holding entry `idx`.
fn range_start(idx: usize) -> usize {
    idx & !(CONTIG_ENTRIES - 1)
}

impl PageTable {
    /// Sets the contiguous bit on the 16 aligned entries around `vaddr`'s
    /// leaf of `size` (4 KiB: PTEs; 2 MiB: PMDs) if they all qualify (see
    /// the module doc); returns whether it did. A range already marked is
    /// left as it is (`false`).
    pub fn set_contiguous(&mut self, vaddr: VirtAddr, size: PageSize) -> bool {
        let level = size.leaf_level();
        if level > 2 {
            return false; // Arm's 4 KiB granule has no contiguous 1 GiB range here
        }
        let Some(node) = self.table_for_existing(vaddr, level) else {
            return false;
        };
        let first = range_start(table_index(vaddr, level));
        if !self.range_qualifies(node, first, size) {
            return false;
        }
        for i in first..first + CONTIG_ENTRIES {
            *self.raw_entry_mut(node, i) |= CONTIGUOUS;
        }
        *self.contig.ranges_mut(level) += 1;
        true
    }

    /// Sets `bits` (accessed, dirty) on the 16 entries of the contiguous
    /// range holding `vaddr`'s leaf of `size`: a fault that writes a whole
    /// range at once in a writable VMA makes its entries young and dirty,
    /// as Linux does (`pte_mkdirty` for VM_WRITE), so the walker's copy of
    /// one entry's bits stands for the range's.
    pub fn mark_range(&mut self, vaddr: VirtAddr, size: PageSize, bits: u64) {
        debug_assert_eq!(bits & !(ACCESSED | DIRTY), 0, "only A and D");
        let level = size.leaf_level();
        let Some(node) = self.table_for_existing(vaddr, level) else {
            return;
        };
        let first = range_start(table_index(vaddr, level));
        for i in first..first + CONTIG_ENTRIES {
            *self.raw_entry_mut(node, i) |= bits;
        }
    }

    /// Whether entries `first..first + 16` of `node` can become one
    /// contiguous range of `size` pages.
    fn range_qualifies(&self, node: NodeId, first: usize, size: PageSize) -> bool {
        let head = Pte::from_raw(self.raw_entry(node, first));
        let huge = if size == PageSize::Size4K { 0 } else { HUGE };
        let anchor = head.pfn().raw();
        if !anchor.is_multiple_of(size.nr_pages() * CONTIG_ENTRIES as u64) {
            return false;
        }
        (0..CONTIG_ENTRIES).all(|i| {
            let e = Pte::from_raw(self.raw_entry(node, first + i));
            e.raw() & (PRESENT | HUGE | WRITABLE | CONTIGUOUS) == (head.raw() & WRITABLE) | PRESENT | huge
                && e.pfn().raw() == anchor + i as u64 * size.nr_pages()
        })
    }

    /// Clears the contiguous bit on the whole range holding entry `idx` of
    /// `node`, if that entry carries it: the entry is about to change. One
    /// break counted.
    pub(super) fn break_contiguous(&mut self, node: NodeId, idx: usize) {
        if self.raw_entry(node, idx) & CONTIGUOUS == 0 {
            return;
        }
        let first = range_start(idx);
        for i in first..first + CONTIG_ENTRIES {
            *self.raw_entry_mut(node, i) &= !CONTIGUOUS;
        }
        *self.contig.ranges_mut(node.level) -= 1;
        self.contig.breaks += 1;
    }

    /// The ranges of a table about to be freed whole (a collapse replaced
    /// it), which leave without a break.
    pub(super) fn forget_contiguous(&mut self, node: NodeId) {
        let ranges = (0..super::PTRS_PER_TABLE)
            .step_by(CONTIG_ENTRIES)
            .filter(|&i| self.raw_entry(node, i) & CONTIGUOUS != 0)
            .count() as u64;
        *self.contig.ranges_mut(node.level) -= ranges;
    }

    /// Zeroes the breaks (the end of warm-up); the ranges stay.
    pub fn reset_contig_breaks(&mut self) {
        self.contig.breaks = 0;
    }

    /// The counts of this table's contiguous ranges.
    pub fn contig_counts(&self) -> ContigCounts {
        self.contig
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::PhysMem;
    use crate::units::Pfn;

    const VA: VirtAddr = VirtAddr::new(0x4000_0000);
    const ANCHOR: u64 = 0x4b0;

    /// A page table whose PTEs 0..16 (of the range at `VA`) map the frames
    /// `frame(i)`, writable unless `read_only(i)`; `None` leaves one out.
    fn table(frame: impl Fn(u64) -> Option<u64>, read_only: impl Fn(u64) -> bool) -> (PhysMem, PageTable) {
        let mut mem = PhysMem::new(1 << 14, 10).unwrap();
        let mut pt = PageTable::new(1, 4, &mut mem).unwrap();
        for i in 0..16 {
            if let Some(f) = frame(i) {
                pt.map(VA.add(i * 4096), Pfn::new(f), PageSize::Size4K, !read_only(i), &mut mem).unwrap();
            }
        }
        (mem, pt)
    }

    fn marked(pt: &PageTable) -> Vec<bool> {
        (0..16).map(|i| pt.lookup(VA.add(i * 4096)).is_some_and(|m| m.pte.raw() & CONTIGUOUS != 0)).collect()
    }

    #[test]
    fn the_bit_is_set_on_all_16_only_when_each_entry_qualifies() {
        let (_, mut pt) = table(|i| Some(ANCHOR + i), |_| false);
        assert!(pt.set_contiguous(VA.add(5 * 4096), PageSize::Size4K));
        assert_eq!(marked(&pt), vec![true; 16]);
        assert_eq!(pt.contig_counts(), ContigCounts { ranges_64k: 1, ranges_32m: 0, breaks: 0 });
        assert!(!pt.set_contiguous(VA, PageSize::Size4K), "already marked");

        let one_missing = table(|i| (i != 9).then_some(ANCHOR + i), |_| false);
        let one_out_of_place = table(|i| Some(if i == 3 { ANCHOR + 20 } else { ANCHOR + i }), |_| false);
        let misaligned_anchor = table(|i| Some(ANCHOR + 1 + i), |_| false);
        let one_read_only = table(|i| Some(ANCHOR + i), |i| i == 15);
        for (what, (_, mut pt)) in [
            ("entry 9 missing", one_missing),
            ("entry 3 maps anchor + 20", one_out_of_place),
            ("anchor not aligned to 16", misaligned_anchor),
            ("entry 15 read-only", one_read_only),
        ] {
            assert!(!pt.set_contiguous(VA, PageSize::Size4K), "{what}");
            assert_eq!(marked(&pt), vec![false; 16], "{what}");
        }
    }

    #[test]
    fn a_change_to_one_entry_clears_the_bit_on_all_16() {
        // A permission change (replace) of entry 4.
        let (_, mut pt) = table(|i| Some(ANCHOR + i), |_| false);
        assert!(pt.set_contiguous(VA, PageSize::Size4K));
        let slot = pt.leaf_slot(VA.add(4 * 4096)).unwrap();
        let read_only = pt.entry(slot).without(WRITABLE);
        pt.replace(slot, read_only);
        assert_eq!(marked(&pt), vec![false; 16]);
        assert_eq!(pt.contig_counts(), ContigCounts { ranges_64k: 0, ranges_32m: 0, breaks: 1 });
        assert_eq!(pt.lookup(VA.add(4 * 4096)).unwrap().frame, Pfn::new(ANCHOR + 4), "the frame stays");

        // An unmap of entry 12: the other 15 stay mapped, unmarked.
        let (mut mem, mut pt) = table(|i| Some(ANCHOR + i), |_| false);
        assert!(pt.set_contiguous(VA, PageSize::Size4K));
        pt.unmap(VA.add(12 * 4096), PageSize::Size4K, &mut mem).unwrap();
        assert_eq!(marked(&pt), vec![false; 16]);
        assert_eq!((0..16).filter(|&i| pt.lookup(VA.add(i * 4096)).is_some()).count(), 15);
        assert_eq!(pt.contig_counts().breaks, 1);
    }

    #[test]
    fn sixteen_pmds_of_contiguous_2m_pages_form_a_32m_range_and_a_split_breaks_it() {
        let mut mem = PhysMem::new(1 << 14, 10).unwrap();
        let mut pt = PageTable::new(1, 4, &mut mem).unwrap();
        let va = VirtAddr::new(0x8000_0000);
        let anchor = 0x8000u64; // 32 MiB-aligned frame number (16 x 512)
        for i in 0..16 {
            pt.map(va.add(i << 21), Pfn::new(anchor + i * 512), PageSize::Size2M, true, &mut mem).unwrap();
        }
        assert!(!pt.set_contiguous(va, PageSize::Size4K), "no PTEs there");
        assert!(pt.set_contiguous(va.add(7 << 21), PageSize::Size2M));
        assert_eq!(pt.contig_counts().ranges_32m, 1);
        pt.split_huge(va.add(3 << 21), &mut mem).unwrap();
        assert_eq!(pt.contig_counts(), ContigCounts { ranges_64k: 0, ranges_32m: 0, breaks: 1 });
        assert!((0..16).all(|i| pt.lookup(va.add(i << 21)).unwrap().pte.raw() & CONTIGUOUS == 0));
    }
}
