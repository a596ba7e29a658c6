//! CHP's page-table bit: software bit 9 ([`COLORED_HUGE`]) of a PMD
//! entry pointing at a page table whose 512 PTEs are the strided
//! sub-mappings (III-B-3). The page table keeps, for such a table, the
//! line of the 8 sub-mapping entries the walk reads (its leaf-extension
//! mechanism); this module says what the bit means. The OS side (the
//! fault path, munmap, mprotect, compaction) calls these.
//!
//! Layer: paging (uses `paging` only).

use crate::paging::pte::SoftBit;
use crate::paging::PageTable;
use crate::units::VirtAddr;

/// Bit 9 in a PMD entry pointing at a page table: the 2 MiB region is a
/// colored huge page (Colored Huge Pages, III-B-3), whose walk reads one
/// line of 8 sub-mapping entries.
pub const COLORED_HUGE: u64 = 1 << 9;

/// CHP's software bit, as the registry checks it against the others'.
pub const SOFT_BIT: SoftBit = SoftBit { name: "colored_huge", mask: COLORED_HUGE, levels: &[2], leaf_ext: true };

/// Whether the 2 MiB region of `vaddr` is a colored huge page: its PMD
/// entry points at a page table and carries the colored-huge-page bit.
pub fn is_colored_huge(pt: &PageTable, vaddr: VirtAddr) -> bool {
    pt.leaf_ext(vaddr) & COLORED_HUGE != 0
}

/// Sets or clears the colored-huge-page bit of `vaddr`'s PMD entry, which
/// must point at a page table (the OS sets it once all 512 PTEs of the
/// strided sub-mappings are installed, and clears it before changing any).
pub fn set_colored_huge(pt: &mut PageTable, vaddr: VirtAddr, on: bool) {
    pt.set_leaf_ext(vaddr, COLORED_HUGE, on);
}
