//! What a GTSM page is in the page table. Its PMD entry points at a page
//! table and carries software bit 54 ([`GTSM`]); the table keeps the
//! 512 PTEs of the frames the page uses, so a software walk (and
//! `run.check_translations`) sees the equivalent 4 KiB mappings, while the
//! hardware reads only the page's descriptor: the chunk's frame and the
//! vector of used sub-blocks, held in the page table's leaf-extension
//! record (GTSM's page-table format keeps them in the table the PMD entry
//! points to: one line, one reference).
//!
//! Layer: paging (uses `paging` and `units` only).

use crate::paging::pagetable::{ExtRecord, EXT_RECORD_WORDS};
use crate::paging::pte::SoftBit;
use crate::paging::{NodeId, PageTable};
use crate::units::{Pfn, VirtAddr};

/// Bit 54 in a PMD entry pointing at a page table: the 2 MiB region is a
/// GTSM page (Gap-Tolerant Sequential Mapping, the Perforated Pages
/// paper's VII-D), its 32 sub-blocks of 64 KiB placed in one 4 MiB chunk.
pub const GTSM: u64 = 1 << 54;

/// GTSM's software bit, as the registry checks it against the others'.
pub const SOFT_BIT: SoftBit = SoftBit { name: "gtsm", mask: GTSM, levels: &[2], leaf_ext: true };

/// A GTSM page's descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GtsmRecord {
    pub chunk: Pfn,
    pub used: u64,
    pub writable: bool,
}

impl GtsmRecord {
    fn to_record(self) -> ExtRecord {
        let mut r = [0; EXT_RECORD_WORDS];
        r[0] = self.chunk.raw();
        r[1] = self.used;
        r[2] = self.writable as u64;
        r
    }

    fn from_record(r: &ExtRecord) -> GtsmRecord {
        GtsmRecord { chunk: Pfn::new(r[0]), used: r[1], writable: r[2] != 0 }
    }
}

/// Whether the 2 MiB region of `vaddr` is a GTSM page.
pub fn is_gtsm(pt: &PageTable, vaddr: VirtAddr) -> bool {
    pt.leaf_ext(vaddr) & GTSM != 0
}

/// The descriptor of the GTSM page whose table is `table`.
pub fn gtsm_record(pt: &PageTable, table: NodeId) -> GtsmRecord {
    GtsmRecord::from_record(&pt.ext_record(table))
}

/// Makes `vaddr`'s region (its 512 PTEs installed) a GTSM page.
pub fn set_gtsm(pt: &mut PageTable, vaddr: VirtAddr, g: &GtsmRecord) {
    *pt.ext_record_mut(vaddr) = g.to_record();
    pt.set_leaf_ext(vaddr, GTSM, true);
}

/// Makes `vaddr`'s region ordinary 4 KiB mappings again.
pub fn clear_gtsm(pt: &mut PageTable, vaddr: VirtAddr) {
    if is_gtsm(pt, vaddr) {
        *pt.ext_record_mut(vaddr) = [0; EXT_RECORD_WORDS];
        pt.set_leaf_ext(vaddr, GTSM, false);
    }
}
