//! What a perforated page is in the page table (IV-B). Its PMD entry points
//! at a page table and carries software bit 10 ([`PERFORATED`]); that
//! table is the one the paper's shadow PMD entry points to, holding the
//! hole translations. pagelab keeps all 512 PTEs in it, the non-holes
//! mapping the 2 MiB frame page by page, so a software walk (and
//! `run.check_translations`) sees the equivalent 4 KiB mappings; the
//! hardware never reads a non-hole's PTE: the bitmap sends it there only
//! for holes.
//!
//! Beside the table, the page table's leaf-extension record holds what the
//! modified hardware reads elsewhere: the main PMD entry's 2 MiB frame and
//! 8-bit filter, the physical addresses of the shadow PMD entry and of the
//! page's 64-byte hole-bitmap line, and the bitmap's 512 bits (the bits of
//! that line in the reserved region, kept here because a walk of this
//! table is what reads them).
//!
//! Layer: paging (uses `paging` and `units` only).

use crate::paging::pagetable::{ExtRecord, EXT_RECORD_WORDS};
use crate::paging::pte::SoftBit;
use crate::paging::{NodeId, PageTable};
use crate::units::{Pfn, PhysAddr, VirtAddr};

/// Bit 10 in a PMD entry pointing at a page table: the 2 MiB region is a
/// perforated page (Perforated Pages, IV-B), the table holding its hole
/// translations (what the shadow PMD entry points to); the 2 MiB frame and
/// the 8-bit filter are read with the entry.
pub const PERFORATED: u64 = 1 << 10;

/// Perforated pages' software bit, as the registry checks it against the
/// others'.
pub const SOFT_BIT: SoftBit = SoftBit { name: "perforated", mask: PERFORATED, levels: &[2], leaf_ext: true };

pub use crate::phys::holes::HoleBits;

/// A perforated page as the hardware sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Perforation {
    /// The 2 MiB frame (the main PMD entry's).
    pub frame: Pfn,
    /// Bit `r`: 256 KiB region `r` holds a hole (the main PMD entry's
    /// otherwise unused bits 13..20).
    pub filter: u8,
    /// `Variant::code` of the hardware (how bitmaps reach the TLB).
    pub variant: u8,
    /// The page's permission (its non-holes'; a hole may differ).
    pub writable: bool,
    /// The shadow PMD entry's physical address.
    pub shadow: PhysAddr,
    /// The 64-byte line of the page's hole bitmap in the reserved region.
    pub bitmap_line: PhysAddr,
    pub holes: HoleBits,
}

impl Perforation {
    fn to_record(self) -> ExtRecord {
        let mut r = [0; EXT_RECORD_WORDS];
        r[0] = self.frame.raw();
        r[1] = self.filter as u64 | (self.variant as u64) << 8 | (self.writable as u64) << 16;
        r[2] = self.shadow.raw();
        r[3] = self.bitmap_line.raw();
        r[4..12].copy_from_slice(&self.holes);
        r
    }

    fn from_record(r: &ExtRecord) -> Perforation {
        Perforation {
            frame: Pfn::new(r[0]),
            filter: r[1] as u8,
            variant: (r[1] >> 8) as u8,
            writable: r[1] >> 16 & 1 != 0,
            shadow: PhysAddr::new(r[2]),
            bitmap_line: PhysAddr::new(r[3]),
            holes: r[4..12].try_into().expect("8 words"),
        }
    }

    /// The 32 hole bits of the chunk holding page `i` (one L2 TLB entry's).
    pub fn chunk_bits(&self, i: usize) -> u32 {
        (self.holes[i / 64] >> ((i % 64) & !31)) as u32
    }
}

/// Whether the 2 MiB region of `vaddr` is a perforated page.
pub fn is_perforated(pt: &PageTable, vaddr: VirtAddr) -> bool {
    pt.leaf_ext(vaddr) & PERFORATED != 0
}

/// The perforated page whose hole table is `table`.
pub fn perforation(pt: &PageTable, table: NodeId) -> Perforation {
    Perforation::from_record(&pt.ext_record(table))
}

/// The perforated page of `vaddr`'s region, if it is one.
pub fn perforation_at(pt: &PageTable, vaddr: VirtAddr) -> Option<Perforation> {
    if !is_perforated(pt, vaddr) {
        return None;
    }
    pt.pmd_table_of(vaddr).map(|(table, _)| perforation(pt, table))
}

/// Makes `vaddr`'s region a perforated page (its 512 PTEs installed), or
/// updates it: the record first, then the PMD bit.
pub fn set_perforated(pt: &mut PageTable, vaddr: VirtAddr, p: &Perforation) {
    *pt.ext_record_mut(vaddr) = p.to_record();
    if !is_perforated(pt, vaddr) {
        pt.set_leaf_ext(vaddr, PERFORATED, true);
    }
}

/// Makes `vaddr`'s region ordinary 4 KiB mappings again.
pub fn clear_perforated(pt: &mut PageTable, vaddr: VirtAddr) {
    if is_perforated(pt, vaddr) {
        *pt.ext_record_mut(vaddr) = [0; EXT_RECORD_WORDS];
        pt.set_leaf_ext(vaddr, PERFORATED, false);
    }
}
