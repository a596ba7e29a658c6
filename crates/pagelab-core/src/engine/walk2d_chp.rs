//! Colored Huge Pages in the two-dimensional walk: a guest's colored huge
//! page over the host's EPT leaves (issue 12: every system runs in a
//! guest). All of it is cold code, reached from the 2D walker when a guest
//! PMD entry carries the colored-huge-page bit (the one test of the guest
//! table's leaf-extension bits that perforated pages share, dispatched
//! here), from the dirty assist of a store through a clean entry, and from
//! a guest fault's zeroing; a run without CHP in a guest never comes here.
//!
//! - **The walk step.** Natively the walker, at a PMD entry with the bit,
//!   reads one line: the first cache line of the PTE page, where the
//!   design keeps the 8 sub-mapping entries (`systems/chp/walk.rs`). In two
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
//!   pages, where it splinters: the line stands in for the PTE). Over host huge leaves
//!   the combined entry costs seven more EPT walks: 19 + 7 x 3 = 40 over
//!   host 2 MiB pages, for an entry that then serves all 512 pages.
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
//!   ([`push_zeroed_leaf`]), not only the faulting page's.

use super::super::mmu::Mmu;
use super::{perforated, Ept, EptMiss, Walk2d, Walker2d};
use crate::hw::tlb::{EntryKind, ExtPayload, ReachSize, TlbEntry};
use crate::paging::pte::{COLORED_HUGE, PERFORATED};
use crate::paging::{NodeId, PageTable};
use crate::systems::chp::tlb::{colored_huge, ColoredHuge};
use crate::systems::chp::walk::{dirty_assist, read_line};
use crate::systems::extensions::wrap;
use crate::systems::ExtKind;
use crate::units::{Asid, Gfn, PageSize, Pfn, VirtAddr, Vpn};
use crate::virt::{Contents, Hypervisor, Writes};

/// The guest leaf-extension bits the 2D walker has a step for. (A GTSM
/// page's bit is not one: its 4 KiB PTEs are walked, as before.)
pub(super) const GUEST_STEPS: u64 = PERFORATED | COLORED_HUGE;

/// Pages of a sub-mapping.
const SUB_PAGES: u64 = 64;

/// A walker's content identities and what its process writes, if declared.
type ContentsOf<'c, 'a> = Option<&'c mut (&'a mut Contents, Writes)>;

/// The walk's step at a guest PMD entry carrying bits of [`GUEST_STEPS`]
/// (`table` is the PTE page it points at): a perforated page's, else a
/// colored huge page's.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
pub(super) fn leaf_ext_step(
    mmu: &mut Mmu,
    ept: &mut Ept,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    contents: ContentsOf,
) -> Walk2d {
    if pt.table_leaf_ext(table) & PERFORATED != 0 {
        let counters = &mut mmu.tlb.extensions_mut().perforated.counters;
        return perforated::walk_step(ept, pt, table, tag, vaddr, write, counters);
    }
    let stride_shift = mmu.tlb.extensions().chp.stride_shift;
    colored_huge_step(ept, pt, table, tag, vaddr, write, stride_shift, contents)
}

/// A guest colored huge page's last step (see the module's notes): the
/// line at its host address, the data's frame through the EPT, then the
/// combined colored huge entry, else a splintered 4 KiB one.
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
fn colored_huge_step(
    ept: &mut Ept,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    stride_shift: u8,
    contents: ContentsOf,
) -> Walk2d {
    // Guest table reads count as stores for the EPT's A/D bits (walk2d.rs).
    let table_host = match ept.translate(Gfn::of_guest_kernel(pt.node_frame(table)), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    ept.push_guest(table_host, pt.node_frame(table).addr());
    ept.stats.leaf_ext_walks += 1;
    let (guest, newly_dirty) = read_line(pt, table, tag, vaddr, write, stride_shift);
    let EntryKind::Ext(subs) = guest.kind else { unreachable!("a colored huge page's line gives its entry") };
    if let (true, Some((c, data))) = (newly_dirty, contents) {
        written_all(c, ept.nested.vm, &subs, guest.vbase, *data);
    }
    let data_gfn = Gfn::of_guest_kernel(guest.frame_of(vaddr));
    let (host, host_size, host_writable, host_dirty) = match ept.translate(data_gfn, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    if write && !host_writable {
        return Walk2d::WriteProtected(data_gfn);
    }
    let host_dirty = refreshed(ept, guest.dirty && host_writable, data_gfn, host, host_size, host_dirty);
    let extent = SUB_PAGES << stride_shift;
    if host_writable && host_size.nr_pages() >= extent {
        let slot = (vaddr.raw() >> 18) as usize & 7;
        let own = Pfn::new(host.raw() & !((SUB_PAGES - 1) << stride_shift));
        match host_sub_mappings(ept, &subs, slot, own, write, extent, guest.dirty) {
            Ok(Some((host_subs, all_dirty))) => {
                if ept.check {
                    if let Some(what) = check_fill(pt, ept.hv, ept.nested.vm, guest.vbase, &host_subs, stride_shift) {
                        return Walk2d::Stale(what);
                    }
                }
                let dirty = guest.dirty && host_dirty && all_dirty;
                let e = colored_huge(tag, guest.vbase, host_subs, stride_shift, guest.writable, dirty);
                return Walk2d::Leaf(wrap(e, ExtKind::ColoredHuge));
            }
            Ok(None) => {}
            Err(what) => return Walk2d::Stale(what),
        }
    }
    let dirty = guest.dirty && host_writable && host_dirty;
    Walk2d::Leaf(TlbEntry::page(tag, vaddr.vpn(), ReachSize::Size4K, host, guest.writable && host_writable, dirty))
}

/// The host frames of the 8 sub-mappings' first pages (`own` is the
/// accessed one's, at `slot`, from the data's translation), with whether
/// their leaves are all dirty; `None` when one cannot be part of a
/// combined entry (its leaf smaller than `extent` pages, read-only or not
/// backed); `Err` from the check mode.
#[allow(clippy::too_many_arguments)] // one walk's state
fn host_sub_mappings(
    ept: &mut Ept,
    subs: &ColoredHuge,
    slot: usize,
    own: Pfn,
    write: bool,
    extent: u64,
    guest_dirty: bool,
) -> std::result::Result<Option<([Pfn; 8], bool)>, String> {
    let mut host_subs = [own; 8];
    let mut all_dirty = true;
    for (s, &first) in subs.sub.iter().enumerate().filter(|&(s, _)| s != slot) {
        let gfn = Gfn::of_guest_kernel(first);
        match ept.translate(gfn, write) {
            Ok((frame, size, true, dirty)) if size.nr_pages() >= extent => {
                host_subs[s] = frame;
                all_dirty &= refreshed(ept, guest_dirty, gfn, frame, size, dirty);
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
fn refreshed(ept: &mut Ept, want: bool, gfn: Gfn, frame: Pfn, size: PageSize, dirty: bool) -> bool {
    if want && !dirty {
        return ept.hv.refresh_ntlb_dirty(ept.nested.vm, &mut ept.nested.ntlb, gfn, frame, size);
    }
    dirty
}

/// The guest's D bit of the whole colored huge page was just set: its 512
/// pages count as written (the guest-content rule of a 2 MiB page's D bit).
fn written_all(contents: &mut Contents, vm: usize, p: &ColoredHuge, vbase: Vpn, data: Writes) {
    for page in 0..512u64 {
        let gfn = Gfn::of_guest_kernel(p.frame_of(page << 12));
        contents.written(vm, gfn, 1, Vpn::new(vbase.raw() + page), data);
    }
}

/// The check mode at a fill: the first and last page of every sub-mapping
/// translate through the guest's table and the EPT to the frames the
/// combined entry gives them. Returns what is wrong.
#[cold]
#[inline(never)]
fn check_fill(pt: &PageTable, hv: &Hypervisor, vm: usize, vbase: Vpn, host_subs: &[Pfn; 8], k: u8) -> Option<String> {
    for (s, first) in host_subs.iter().enumerate() {
        for i in [0, SUB_PAGES - 1] {
            let va = VirtAddr::new((vbase.raw() + s as u64 * SUB_PAGES + i) << 12);
            let gfn = pt.lookup(va).map(|m| Gfn::of_guest_kernel(m.frame));
            let now = gfn.and_then(|g| hv.backing_of(vm, g)).map(|(f, _)| f);
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

/// Adds the guest frames of the leaf a fault at `vaddr` made, which its
/// handler zeroed, to `out`: the leaf's range, or a colored huge page's
/// 512 frames, one range each (strided, not contiguous). `table` is the
/// last table on `vaddr`'s path (a PTE page whose bits say whether it is
/// a colored huge page's: one array lookup for any other fault).
#[inline]
pub(super) fn push_zeroed_leaf(pt: &PageTable, table: NodeId, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
    if pt.table_leaf_ext(table) & COLORED_HUGE != 0 {
        push_colored_huge(pt, vaddr, out);
    } else if let Some(m) = pt.lookup(vaddr) {
        out.push((Gfn::of_guest_kernel(m.frame), m.size.nr_pages()));
    }
}

#[cold]
#[inline(never)]
fn push_colored_huge(pt: &PageTable, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
    let base = vaddr.align_down(PageSize::Size2M.bytes());
    out.extend((0..512).filter_map(|i| pt.lookup(base.add(i << 12)).map(|m| (Gfn::of_guest_kernel(m.frame), 1))));
}

impl Walker2d<'_> {
    /// A store through a clean entry of a guest colored huge page, after
    /// its PTE's D bit was set: the locked update sets D in the 8 line
    /// entries too (the page counts as written if it was clean), and when
    /// the L2 holds the combined colored huge entry, the D bit of all 8
    /// sub-mappings' EPT leaves (the data page's is set by the caller).
    #[cold]
    #[inline(never)]
    pub(super) fn colored_huge_dirty_assist(&mut self, asid: Asid, tag: Asid, table: NodeId, vaddr: VirtAddr) {
        let vm = self.nested.vm;
        let pt = self.guest.page_table_mut(asid);
        let was_clean = !pt.ext_line(table)[0].dirty();
        dirty_assist(pt, table);
        let stride_shift = self.mmu.tlb.extensions().chp.stride_shift;
        let subs = ColoredHuge { sub: pt.ext_line(table).map(|e| e.pfn()), stride_shift };
        if let (true, Some((c, data))) = (was_clean, self.contents.as_mut()) {
            written_all(c, vm, &subs, vaddr.align_down(PageSize::Size2M.bytes()).vpn(), *data);
        }
        let l2 = self.mmu.tlb.peek_l2(tag, vaddr);
        if l2.is_some_and(|e| matches!(e.kind, EntryKind::Ext(ExtKind::ColoredHuge(_)))) {
            for first in subs.sub {
                self.hv.set_ept_dirty(vm, Gfn::of_guest_kernel(first));
            }
        }
    }
}

#[cfg(test)]
#[path = "walk2d_chp_tests.rs"]
mod tests;
