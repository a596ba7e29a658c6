//! CHP's walk step: the last step of a walk through a colored-huge-page
//! PMD, and the store that sets the page's shared dirty bit. The walker
//! (`engine::mmu`) comes here when the PMD entry's software bits say so
//! (one test of `pte::LEAF_EXT`, through `systems::walk_leaf_ext` and
//! [`super::leaf`]).
//!
//! Layer: paging (uses `hw`, `paging` and `units`).

use super::tlb::{colored_huge, ChpTlb, ColoredHuge};
use crate::hw::refs::RefKind;
use crate::hw::tlb::{Holds, TlbEntry};
use crate::paging::leaf_ext::LeafWalk;
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::{NodeId, PageTable};
use crate::units::{Asid, PageSize, VirtAddr};

/// One reference to the first cache line of the page table, where the
/// design keeps the 8 sub-mapping entries (`PageTable::ext_line`; pagelab
/// also keeps all 512 PTEs, as the paper's prototype does, for software
/// walks). A/D are set in the 8 entries: the whole colored huge page
/// shares them, and its permission (III-B-1). The bit guarantees every
/// page is mapped (a partial munmap or mprotect clears it first). Returns
/// the 2 MiB entry to cache, its sub-mappings strided by the machine's
/// stride.
pub fn walk<X: Holds<ColoredHuge, ChpTlb>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<ColoredHuge> {
    w.refs.push(w.pt.node_frame(w.table).addr(), RefKind::Walk);
    w.stats.walk_mem_refs += 1;
    w.stats.leaf_ext_walks[X::OWNER] += 1;
    read_line(w.pt, w.table, w.asid, w.vaddr, w.write, w.ext.state().stride_shift).0
}

/// The line's part of the walk step, without its reference (the 2D
/// walker reads the line at its host address, [`super::walk2d`]): A
/// (and D on a store) set in the 8 entries, and the 2 MiB entry they
/// give, with whether this access set their D bit.
pub fn read_line(
    pt: &mut PageTable,
    node: NodeId,
    asid: Asid,
    vaddr: VirtAddr,
    write: bool,
    stride_shift: u8,
) -> (TlbEntry<ColoredHuge>, bool) {
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    let line = pt.ext_line(node);
    let newly_dirty = write && !line[0].dirty();
    for e in line.iter_mut() {
        *e = e.with(bits);
    }
    let slot = (vaddr.raw() >> 18) as usize & 7;
    let vbase = vaddr.align_down(PageSize::Size2M.bytes()).vpn();
    let entry = colored_huge(asid, vbase, line.map(|e| e.pfn()), stride_shift, line[slot].writable(), line[0].dirty());
    (entry, newly_dirty)
}

/// A store through a clean entry of a colored huge page: the same locked
/// update that sets the PTE's D bit covers the 8 sub-mapping entries,
/// which share one line and one D bit.
pub fn dirty_assist(pt: &mut PageTable, table: NodeId) {
    for e in pt.ext_line(table) {
        *e = e.with(DIRTY | ACCESSED);
    }
}
