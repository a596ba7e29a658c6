//! The translation flow of a guest's perforated page past its combined L2
//! entry (rows 2 to 5 of Figure 5 in a VM; `translate.rs` is the native
//! flow): the 2D walker comes here through `systems::resolve_ext_2d` when
//! a combined perforated entry's filter does not answer, right after the
//! walk that made it or at an L2 hit.
//!
//! The bitmap step runs `translate::is_hole_by_bitmap` (a second L2
//! access, the bitmap entry cached by guest-virtual address under the VM's
//! tag, a memory reference when absent) on the guest's bitmap, read at its
//! host address (the register: `walk2d::bitmap_register`), ORed with the
//! host's when the EPT leaf is a host perforated page too (both lines read
//! when the L2 lacks the entry), or on the host's alone. Then the L1 fill,
//! or the hole walk: the guest's (`walk2d::hole_walk`), or, for a hole
//! only in the host, the walker's own walk, whose EPT side takes the
//! host's hole walk.

use super::holes::is_hole;
use super::pagetable::{is_perforated, perforation};
use super::tlb::{PerforatedKind, PerforatedTlb};
use super::translate::{is_hole_by_bitmap, page_index, BitmapRead};
use super::walk2d::{bitmap_register, hole_walk, host_perforation, read_bitmap};
use crate::hw::tlb::Holds;
use crate::paging::leaf_ext::Resolve2d;
use crate::paging::nested_walk::{EptMiss, NestedWalk, Resolved2d};
use crate::paging::{NodeId, PageTable};
use crate::units::{Gfn, Pfn, VirtAddr};

/// Rows 2 to 5 for an access to `r.access.vaddr` (guest page table `r.pt`,
/// tag `r.tag`) through the combined perforated entry `r.entry`.
pub fn resolve<W: NestedWalk, X: Holds<PerforatedKind, PerforatedTlb>>(
    r: &mut Resolve2d<'_, W, X>,
) -> Resolved2d<PerforatedKind> {
    let (tag, vaddr, write) = (r.tag, r.access.vaddr, r.access.write);
    match bitmap_step(r) {
        Bitmap::NoHole(frame) => Resolved2d::Frame(frame),
        Bitmap::GuestHole(table) => {
            let p = perforation(r.pt, table);
            Resolved2d::Walk(hole_walk(r.w, r.pt, table, &p, tag, vaddr, write))
        }
        // The walk translates it: the guest's, then the host's hole walk.
        Bitmap::HostHole => Resolved2d::Again,
        Bitmap::Unbacked => Resolved2d::Walk(EptMiss::Violation(bitmap_gfn(r.pt, vaddr)).into()),
    }
}

/// What the bitmap step found.
enum Bitmap {
    /// No hole: the frame (its 4 KiB entry filled in the L1).
    NoHole(Pfn),
    /// A hole in the guest (maybe in the host too) of hole table `table`.
    GuestHole(NodeId),
    /// A hole only in the host.
    HostHole,
    /// The guest bitmap's page is not backed (the register names no frame
    /// yet).
    Unbacked,
}

/// The bitmap's answer for the access through `r.entry`: the guest's
/// bitmap (a guest perforated page), the host's (a host perforated EPT
/// leaf), or both ORed (see [`Bitmap`]).
fn bitmap_step<W: NestedWalk, X: Holds<PerforatedKind, PerforatedTlb>>(r: &mut Resolve2d<'_, W, X>) -> Bitmap {
    let Resolve2d { w, tlb, pt, entry, tag, access, l2_latency } = r;
    let (w, tlb, pt, entry) = (&mut **w, &mut **tlb, &**pt, &**entry);
    let (tag, vaddr, instr, l2_latency) = (*tag, access.vaddr, access.instr, *l2_latency);
    let guest = is_perforated(pt, vaddr).then(|| {
        let (table, _) = pt.pmd_table_of(vaddr).expect("a perforated page has its hole table");
        (table, perforation(pt, table))
    });
    let i = page_index(vaddr);
    let home = match &guest {
        Some((_, g)) => Some(Gfn::of_guest_kernel(g.frame.add(i as u64))),
        None => pt.lookup(vaddr).map(|m| Gfn::of_guest_kernel(m.frame_of(vaddr))),
    };
    let host = home.and_then(|g| host_perforation(w, g));
    let (mut p, line) = match (&guest, &host) {
        (Some((_, g)), _) => match bitmap_register(w, g.bitmap_line) {
            Ok(line) => (*g, line),
            Err(_) => return Bitmap::Unbacked,
        },
        (None, Some(h)) => (*h, h.bitmap_line),
        (None, None) => unreachable!("a combined perforated entry has a perforated page in one layer"),
    };
    if let (Some(_), Some(h)) = (&guest, &host) {
        p.holes.iter_mut().zip(h.holes).for_each(|(g, h)| *g |= h);
    }
    let fetched = tlb.extensions().state().counters.bitmap_refs;
    let (refs, stats) = w.refs();
    let read = BitmapRead { line, asid: tag, vaddr, l2_latency };
    let hole = is_hole_by_bitmap(tlb, &p, read, refs, stats);
    let counters = &mut tlb.extensions_mut().state_mut().counters;
    if let (Some(_), Some(h), true) = (&guest, &host, counters.bitmap_refs > fetched) {
        // Both layers' bitmaps: the host's line is read too.
        read_bitmap(h.bitmap_line, vaddr, refs, stats, counters);
    }
    if !hole {
        tlb.fill_l1(entry, vaddr, instr);
        return Bitmap::NoHole(entry.frame_of(vaddr));
    }
    tlb.extensions_mut().state_mut().counters.hole_walks += 1;
    match guest {
        Some((table, g)) if is_hole(&g.holes, i) => Bitmap::GuestHole(table),
        _ => Bitmap::HostHole,
    }
}

/// The guest frame of `vaddr`'s perforated page's bitmap line.
fn bitmap_gfn(pt: &PageTable, vaddr: VirtAddr) -> Gfn {
    let (table, _) = pt.pmd_table_of(vaddr).expect("a cached perforated page is in the guest's table");
    Gfn::of_guest_kernel(perforation(pt, table).bitmap_line.pfn())
}
