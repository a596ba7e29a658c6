//! CHP's walk step in two dimensions: a guest's colored huge page over the
//! host's EPT leaves (issue 12: every system runs in a guest). All of it
//! is cold code. The 2D walker (`engine::walk2d`) comes here through
//! `systems::walk2d_leaf_ext` when a guest PMD entry carries the
//! colored-huge-page bit (the same one test of the guest table's
//! leaf-extension bits as natively), through
//! `systems::dirty_assist_leaf_ext_2d` for a store through a clean entry,
//! and through `systems::push_zeroed_leaf` for a guest fault's zeroing; a
//! run without CHP in a guest never comes here. The walker's EPT side is
//! lent as a `paging::nested_walk::NestedWalk`.
//!
//! - **The walk step.** Natively the walker, at a PMD entry with the bit,
//!   reads one line: the first cache line of the PTE page, where the
//!   design keeps the 8 sub-mapping entries ([`super::walk`]). In two
//!   dimensions that line is a guest table entry like the others: the PTE
//!   page's guest frame goes through the EPT first (nested TLB, else an
//!   EPT walk, with the EPT paging-structure caches), then the line is one
//!   reference at its host address. Then the accessed page's guest frame
//!   (its sub-mapping's first frame | page index << log2 colors) goes
//!   through the EPT, as every 2D walk's data frame does.
//! - **The combined entry.** A colored huge TLB entry's frames must be in
//!   CHP's strided format: page i of sub-mapping s at `sub[s] | i << k`
//!   (k = log2 colors, the machine's stride). Its frames can be host
//!   frames when each sub-mapping's guest pages lie in one EPT leaf of at
//!   least 64 << k pages (256 KiB x colors: 2 MiB with 8 colors, 4 MiB with
//!   16). A sub-mapping's pages lie in an aligned block of 64 << k guest
//!   frames (the allocator carves it from such a block), and such a leaf
//!   maps that block, aligned, onto as many host frames in order, keeping
//!   the low bits (color and stride): host page i of sub-mapping s is
//!   `host_sub[s] | i << k`. The walker checks the condition it can see,
//!   the size of each sub-mapping's EPT leaf, and fetches the other seven
//!   sub-mappings' first frames through the EPT (the paper's "filling the
//!   rest in the background"; their references are the walk's), then
//!   caches one colored huge entry of 8 host frames, tagged with the VM.
//!   Otherwise (a sub-mapping's leaf smaller, read-only, or not backed yet:
//!   a background fill raises no EPT violation) the translation splinters
//!   into a 4 KiB entry, as a guest 2 MiB page over host 4 KiB pages does.
//!   With 8 colors, host 2 MiB and 1 GiB leaves combine; with 16 colors
//!   only 1 GiB leaves do.
//! - **Reference counts with no caches.** The guest walk reads g = 4
//!   entries (PML4, PDPT, PMD, the line), each after an EPT walk of its
//!   table's frame of h levels, then h for the data's frame:
//!   (g + 1)(h + 1) - 1, a 4 KiB guest page's count (24 over host 4 KiB
//!   pages, where it splinters: the line stands in for the PTE). Over host
//!   huge leaves the combined entry costs seven more EPT walks: 19 + 7 x 3
//!   = 40 over host 2 MiB pages, for an entry that then serves all 512
//!   pages.
//! - **A/D bits.** The guest's are the 8 line entries', shared by the
//!   whole page, as natively. A store sets the D bit of the accessed page's
//!   EPT leaf and, when it fills or dirties a combined entry, of all eight
//!   sub-mappings' leaves: that entry then lets a store to any of them go
//!   without an assist. This over-reports by the sub-mappings not stored
//!   to, as a 2 MiB EPT leaf's D bit covers 512 pages when one was
//!   written. A combined entry is dirty only when the line and all eight
//!   leaves are.
//! - **Shootdowns** need nothing new: a guest munmap or mprotect of part
//!   of a colored huge page clears its bit and shoots down the range,
//!   tagged with the VM's VPID on delivery; a host change is an INVEPT,
//!   which drops every combined entry of the VM.
//! - **Zeroing backing.** A colored-huge-page fault zeroes its 512 guest
//!   frames, strided over up to 8 blocks: all are backed then
//!   ([`push_zeroed`]), not only the faulting page's.
//!
//! Layer: paging (as [`super::walk`]); the EPT side comes through the
//! hardware layer's `NestedWalk`.

use super::tlb::{colored_huge, ChpTlb, ColoredHuge};
use super::walk::{dirty_assist as dirty_line, read_line};
use crate::hw::tlb::{EntryKind, ExtPayload, Holds, ReachSize, TlbEntry};
use crate::paging::leaf_ext::{DirtyAssist2d, LeafWalk2d};
use crate::paging::nested_walk::{EptMiss, NestedWalk, Step2d};
use crate::paging::PageTable;
use crate::units::{Gfn, PageSize, Pfn, VirtAddr, Vpn};

/// Pages of a sub-mapping.
const SUB_PAGES: u64 = 64;

/// A guest colored huge page's last step (see the module's notes) at the
/// PMD entry whose PTE page is `table`: the line at its host address, the
/// data's frame through the EPT, then the combined colored huge entry,
/// else a splintered 4 KiB one.
pub fn step<W: NestedWalk, X: Holds<ColoredHuge, ChpTlb>>(s: &mut LeafWalk2d<'_, W, X>) -> Step2d<ColoredHuge> {
    let stride_shift = s.ext.state().stride_shift;
    let LeafWalk2d { w, pt, table, tag, vaddr, write, .. } = s;
    let (w, pt, table, tag, vaddr, write) = (&mut **w, &mut **pt, *table, *tag, *vaddr, *write);
    // Guest table reads count as stores for the EPT's A/D bits (walk2d.rs).
    let table_host = match w.translate(Gfn::of_guest_kernel(pt.node_frame(table)), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    w.push_guest(table_host, pt.node_frame(table).addr());
    w.refs().1.leaf_ext_walks[X::OWNER] += 1;
    let (guest, newly_dirty) = read_line(pt, table, tag, vaddr, write, stride_shift);
    let EntryKind::Ext(subs) = guest.kind else { unreachable!("a colored huge page's line gives its entry") };
    if newly_dirty {
        written_all(w, &subs, guest.vbase);
    }
    let data_gfn = Gfn::of_guest_kernel(guest.frame_of(vaddr));
    let (host, host_size, host_writable, host_dirty) = match w.translate(data_gfn, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    if write && !host_writable {
        return Step2d::WriteProtected(data_gfn);
    }
    let host_dirty = refreshed(w, guest.dirty && host_writable, data_gfn, host, host_size, host_dirty);
    let extent = SUB_PAGES << stride_shift;
    if host_writable && host_size.nr_pages() >= extent {
        let slot = (vaddr.raw() >> 18) as usize & 7;
        let own = Pfn::new(host.raw() & !((SUB_PAGES - 1) << stride_shift));
        match host_sub_mappings(w, &subs, slot, own, write, extent, guest.dirty) {
            Ok(Some((host_subs, all_dirty))) => {
                if w.checks() {
                    if let Some(what) = check_fill(w, pt, guest.vbase, &host_subs, stride_shift) {
                        return EptMiss::Stale(what).into();
                    }
                }
                let dirty = guest.dirty && host_dirty && all_dirty;
                return Step2d::Leaf(colored_huge(tag, guest.vbase, host_subs, stride_shift, guest.writable, dirty));
            }
            Ok(None) => {}
            Err(what) => return EptMiss::Stale(what).into(),
        }
    }
    let dirty = guest.dirty && host_writable && host_dirty;
    Step2d::Leaf(TlbEntry::page(tag, vaddr.vpn(), ReachSize::Size4K, host, guest.writable && host_writable, dirty))
}

/// The host frames of the 8 sub-mappings' first pages (`own` is the
/// accessed one's, at `slot`, from the data's translation), with whether
/// their leaves are all dirty; `None` when one cannot be part of a
/// combined entry (its leaf smaller than `extent` pages, read-only or not
/// backed); `Err` from the check mode.
#[allow(clippy::too_many_arguments)] // one walk's state
fn host_sub_mappings<W: NestedWalk>(
    w: &mut W,
    subs: &ColoredHuge,
    slot: usize,
    own: Pfn,
    write: bool,
    extent: u64,
    guest_dirty: bool,
) -> Result<Option<([Pfn; 8], bool)>, String> {
    let mut host_subs = [own; 8];
    let mut all_dirty = true;
    for (s, &first) in subs.sub.iter().enumerate().filter(|&(s, _)| s != slot) {
        let gfn = Gfn::of_guest_kernel(first);
        match w.translate(gfn, write) {
            Ok((frame, size, true, dirty)) if size.nr_pages() >= extent => {
                host_subs[s] = frame;
                all_dirty &= refreshed(w, guest_dirty, gfn, frame, size, dirty);
            }
            Ok(_) | Err(EptMiss::Violation(_)) => return Ok(None),
            Err(EptMiss::Stale(what)) => return Err(what),
        }
    }
    Ok(Some((host_subs, all_dirty)))
}

/// Whether the EPT leaf of `gfn` (at host `frame`, of `size`, writable) is
/// dirty, looked up again when a nested-TLB entry filled clean may be
/// stale-clean and the entry would be dirty (`want`), as walk2d.rs does.
fn refreshed<W: NestedWalk>(w: &mut W, want: bool, gfn: Gfn, frame: Pfn, size: PageSize, dirty: bool) -> bool {
    if want && !dirty {
        return w.refresh_dirty(gfn, frame, size);
    }
    dirty
}

/// The guest's D bit of the whole colored huge page was just set: its 512
/// pages count as written (the guest-content rule of a 2 MiB page's D bit).
fn written_all<W: NestedWalk>(w: &mut W, p: &ColoredHuge, vbase: Vpn) {
    if !w.tracks_writes() {
        return;
    }
    for page in 0..512u64 {
        let gfn = Gfn::of_guest_kernel(p.frame_of(page << 12));
        w.written(gfn, 1, Vpn::new(vbase.raw() + page));
    }
}

/// The check mode at a fill: the first and last page of every sub-mapping
/// translate through the guest's table and the EPT to the frames the
/// combined entry gives them. Returns what is wrong.
#[cold]
#[inline(never)]
fn check_fill<W: NestedWalk>(w: &W, pt: &PageTable, vbase: Vpn, host_subs: &[Pfn; 8], k: u8) -> Option<String> {
    for (s, first) in host_subs.iter().enumerate() {
        for i in [0, SUB_PAGES - 1] {
            let va = VirtAddr::new((vbase.raw() + s as u64 * SUB_PAGES + i) << 12);
            let gfn = pt.lookup(va).map(|m| Gfn::of_guest_kernel(m.frame));
            let now = gfn.and_then(|g| w.backing_of(g)).map(|(f, _)| f);
            let entry = Pfn::new(first.raw() | (i << k));
            if now != Some(entry) {
                return Some(format!(
                    "a combined colored huge entry maps {va} to host frame {entry}, the tables to {now:?}"
                ));
            }
        }
    }
    None
}

/// A store through a clean entry of a guest colored huge page at
/// `d.vaddr`, after its PTE's D bit was set: the locked update sets D in
/// the 8 line entries of `d.table` too (the page counts as written if it
/// was clean), and when the L2 holds the combined colored huge entry
/// (`d.combined`), the D bit of all 8 sub-mappings' EPT leaves (the data
/// page's is set by the walker).
pub fn dirty_assist<W: NestedWalk>(d: &mut DirtyAssist2d<'_, W, ChpTlb>) {
    let DirtyAssist2d { w, pt, table, vaddr, state, combined } = d;
    let (w, pt, table, vaddr, l2_combined) = (&mut **w, &mut **pt, *table, *vaddr, *combined);
    let stride_shift = state.stride_shift;
    let was_clean = !pt.ext_line(table)[0].dirty();
    dirty_line(pt, table);
    let subs = ColoredHuge { sub: pt.ext_line(table).map(|e| e.pfn()), stride_shift };
    if was_clean {
        written_all(w, &subs, vaddr.align_down(PageSize::Size2M.bytes()).vpn());
    }
    if l2_combined {
        for first in subs.sub {
            w.set_dirty(Gfn::of_guest_kernel(first));
        }
    }
}

/// Adds the guest frames of the colored huge page a fault at `vaddr`
/// made, which its handler zeroed, to `out`: its 512 frames, one range
/// each (strided, not contiguous).
pub fn push_zeroed(pt: &PageTable, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
    let base = vaddr.align_down(PageSize::Size2M.bytes());
    out.extend((0..512).filter_map(|i| pt.lookup(base.add(i << 12)).map(|m| (Gfn::of_guest_kernel(m.frame), 1))));
}

#[cfg(test)]
#[path = "walk2d_tests.rs"]
mod tests;
