//! The translation flow of a perforated page past its L2 entry (IV-D,
//! Figures 4 and 5), run by the MMU when the filter did not answer:
//!
//! | row | filter | bitmap | hole | TLB accesses | memory references |
//! |---|---|---|---|---|---|
//! | 1 | no hole in the region | - | - | L2 | - |
//! | 2, 3 | may hold one | in the L2 | no / yes | L2 + L2 | - / shadow PMD + PTE |
//! | 4, 5 | may hold one | not in the L2 | no / yes | L2 + L2 | bitmap / bitmap + shadow PMD + PTE |
//!
//! Row 1 is the TLB's own (`tlb.rs`); this file is rows 2 to 5. A non-hole
//! yields a 4 KiB entry for the L1 only; a hole's entry, from the hole
//! walk, goes into both the L2 and the L1.

use super::pagetable::{perforation, Perforation};
use super::tlb::{PerforatedKind, PerforatedTlb};
use super::{config::Variant, walk};
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{Holds, Tlb, BITMAP_CHUNK_PAGES};
use crate::paging::leaf_ext::Resolve;
use crate::units::{Asid, Pfn, PhysAddr, VirtAddr};

/// Rows 2 to 5 for an access at `r.access.vaddr` through the perforated
/// entry `r.entry`: the bitmap (a second L2 access, and a memory reference
/// when the L2 lacks it), then the L1 entry or the hole walk. Returns the
/// frame, or `None` when the access is to a hole not backed (a fault).
pub fn resolve<X: Holds<PerforatedKind, PerforatedTlb>>(r: &mut Resolve<'_, X>) -> Option<Pfn> {
    let (asid, access) = (r.entry.asid, r.access);
    let vaddr = access.vaddr;
    let (table, _) = r.pt.pmd_table_of(vaddr).expect("a cached perforated page is in the page table");
    let p = perforation(r.pt, table);
    let read = BitmapRead { line: p.bitmap_line, asid, vaddr, l2_latency: r.l2_latency };
    if !is_hole_by_bitmap(r.tlb, &p, read, r.refs, r.stats) {
        r.tlb.fill_l1(r.entry, vaddr, access.instr);
        return Some(r.entry.frame_of(vaddr));
    }
    r.tlb.extensions_mut().state_mut().counters.hole_walks += 1;
    let hole = walk::hole_walk(r.pt, table, &p, asid, access, r.refs, r.stats)?;
    let hole = X::wrap_entry(hole);
    r.tlb.fill_after_walk(hole, vaddr, access.instr);
    Some(hole.frame_of(vaddr))
}

/// Where the bitmap step reads: the bitmap's line (the reserved region's,
/// natively; under virtualization its host-physical address, from the
/// register that holds the guest's bitmap region), for the access to
/// `vaddr` of address space `asid`, a second L2 access costing
/// `l2_latency`.
#[derive(Debug, Clone, Copy)]
pub struct BitmapRead {
    pub line: PhysAddr,
    pub asid: Asid,
    pub vaddr: VirtAddr,
    pub l2_latency: f64,
}

/// Whether the bitmap says `read.vaddr`'s page is a hole (rows 2 to 5's
/// bitmap step): a second L2 access, and when the L2 lacks the entry a
/// read of the bitmap's line.
pub fn is_hole_by_bitmap<X: Holds<PerforatedKind, PerforatedTlb>>(
    tlb: &mut Tlb<X>,
    p: &Perforation,
    read: BitmapRead,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> bool {
    tlb.extensions_mut().state_mut().counters.bitmap_lookups += 1;
    stats.cycles_translation += read.l2_latency;
    let bits = match tlb.lookup_bitmap(read.asid, read.vaddr) {
        Some(bits) => bits,
        None => fetch_bitmap(tlb, p, read, refs, stats),
    };
    let i = page_index(read.vaddr);
    bits >> (i % 32) & 1 != 0
}

/// Page `vaddr`'s index in its 2 MiB region.
pub fn page_index(vaddr: VirtAddr) -> usize {
    (vaddr.raw() >> 12) as usize & 511
}

/// The address of the 4 bytes of `vaddr`'s bitmap chunk in the page's
/// bitmap line at `line`.
pub fn chunk_addr(line: PhysAddr, vaddr: VirtAddr) -> PhysAddr {
    line.add((page_index(vaddr) / 32 * 4) as u64)
}

/// Reads the bitmap entry of `read.vaddr`'s chunk from the line at
/// `read.line` (one reference) and caches it in the L2; the naive variant
/// caches all 16 entries of the page, which share the one line read.
/// Returns the chunk's 32 bits.
fn fetch_bitmap<X: Holds<PerforatedKind, PerforatedTlb>>(
    tlb: &mut Tlb<X>,
    p: &Perforation,
    read: BitmapRead,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> u32 {
    let BitmapRead { line, asid, vaddr, .. } = read;
    tlb.extensions_mut().state_mut().counters.bitmap_refs += 1;
    let i = page_index(vaddr);
    refs.push(chunk_addr(line, vaddr), RefKind::Walk);
    stats.walk_mem_refs += 1;
    if Variant::from_code(p.variant as u64) == Variant::Naive {
        let base = vaddr.align_down(2 << 20);
        for c in 0..(512 / BITMAP_CHUNK_PAGES) as usize {
            tlb.insert_bitmap(asid, base.add(c as u64 * BITMAP_CHUNK_PAGES * 4096), p.chunk_bits(c * 32));
        }
    } else {
        tlb.insert_bitmap(asid, vaddr, p.chunk_bits(i));
    }
    p.chunk_bits(i)
}
