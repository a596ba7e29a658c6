//! Perforated pages' walk steps in two dimensions (the paper's V and
//! Figure 6; issue 13's virtualization): a guest's perforated page over
//! the host's EPT leaves, and a host's perforated page as an EPT leaf. All
//! of it is cold code, reached from the 2D walker (`engine::walk2d`)
//! through the registry: `systems::walk2d_leaf_ext` at a guest PMD entry
//! with the perforated bit, `systems::ept_leaf_ext` at an EPT PMD entry
//! with it, `systems::combined_over_host_ext` for a guest huge page over a
//! 4 KiB EPT translation when the host has perforated pages. The walker's
//! EPT side is lent as a `paging::nested_walk::NestedWalk`. The bitmap
//! step of a combined entry (rows 2 to 5 of Figure 5) is in
//! `translate2d.rs`.
//!
//! **A guest's perforated page.**
//! - **The combined entry.** At a guest perforated PMD entry the walker
//!   translates, through the EPT, the accessed sub-page's place in the 2
//!   MiB guest frame (the one EPT translation a guest huge page's walk
//!   makes). When the EPT leaf there is 2 MiB or 1 GiB, the whole guest
//!   frame is contiguous in host memory, and the TLB gets a combined
//!   perforated entry: the host 2 MiB frame with the guest's filter. When
//!   it is 4 KiB, no 2 MiB entry can exist: the translation splinters into
//!   a 4 KiB entry (a non-hole's frame through that EPT leaf, or a hole's
//!   from the hole walk), and the walker, which makes no 2 MiB entry to
//!   hang bitmap entries on, reads the guest bitmap itself when the filter
//!   does not answer (one reference, no L2 bitmap entry).
//! - **Filters and bitmaps combine by OR**, the paper's rule: over a host
//!   perforated EPT leaf the combined entry carries the guest's filter
//!   ORed with the host's, and the bitmap step ORs the two bitmaps
//!   (reading both lines when the L2 lacks the entry).
//! - **The bitmap register.** The guest's bitmap region is guest memory
//!   (the guest kernel reserves it at boot, as natively), backed by the
//!   host like any guest frame. The register the paper adds holds its host
//!   address: the simulator reads it from the EPT's current mapping
//!   (`NestedWalk::backing_of`), with no reference and no nested-TLB or
//!   EPT lookup, so a bitmap read is one host-physical reference. The
//!   host backs the bitmap's page at the first walk that meets a
//!   perforated page (an EPT violation, as for any guest frame), so the
//!   register always names a backed frame; a host change that moves the
//!   page is seen by the next read, as a host updating the register would.
//! - **The hole walk**: the shadow PMD entry and the hole's PTE are guest
//!   table entries, each read at its host address after its table's frame
//!   went through the EPT (nested TLB, else an EPT walk), then the hole's
//!   data frame through the EPT; the hole's 4 KiB entry goes into the L2
//!   and the L1.
//!
//! **A host's perforated page** (a perforated EPT leaf; the host's chain
//! holds `perforated`, `virt::Hypervisor::host_perforated`).
//! - **The EPT walk** ending at a perforated EPT leaf gets the host's 2 MiB
//!   frame and filter from that PMD entry. Where the filter does not
//!   answer it reads the host's bitmap (one reference, at its host address
//!   directly: the host's bitmap region is host memory), and a host hole
//!   takes the host's hole walk: the shadow PMD entry and the hole's PTE,
//!   two EPT references. The EPT walk's result is a 4 KiB translation (the
//!   nested TLB holds it as such), so a guest 4 KiB page over a host
//!   perforated leaf splinters to 4 KiB entries. The EPT's
//!   paging-structure caches do not keep the perforated PMD entry (its
//!   filter must be read at each walk). A non-hole's accessed and dirty
//!   bits are kept in its PTE of the hole table, where the host's software
//!   (EPT A/D scans, `backing_of`) looks.
//! - **The combined entry.** A guest huge or perforated page over a host
//!   perforated leaf makes one combined perforated entry: the host's 2 MiB
//!   frame, the guest's filter ORed with the host's, and (at the bitmap
//!   step) the guest's bitmap ORed with the host's: both lines are read
//!   when the L2 lacks the entry. A sub-page that is a hole only in the
//!   host: the walker translates as usual (the guest's walk, then the
//!   EPT's, which takes the host's hole walk) and caches the hole's 4 KiB
//!   entry; a hole in both: the guest's hole walk, whose data frame goes
//!   through the EPT and so through the host's hole walk.
//! - **The nested TLB** holds 4 KiB translations of a perforated EPT leaf;
//!   whether a guest huge page's data frame came from one the walker learns
//!   from the host's table (no reference), as a nested-TLB entry marked
//!   perforated would tell it.
//!
//! **Shootdowns** need nothing new: a guest punch or patch shoots down the
//! sub-page (its L1 entry, hole entry and bitmap entry, tagged with the
//! VM's VPID on delivery); a host punch or patch (the host kernel's
//! `perforated::punch`/`patch`, KSM's punch) shoots down the sub-page of
//! the VM's process, which the hypervisor turns into an INVEPT: every
//! combined entry of the VM (perforated, bitmap and hole entries
//! included), and the nested TLB and EPT caches over that guest frame.
//!
//! Layer: paging (as [`super::walk`]).

use super::holes::is_hole;
use super::pagetable::{perforation, perforation_at, Perforation};
use super::tlb::{FlowCounters, HolePage, PerforatedKind, PerforatedPage, PerforatedTlb};
use super::translate::{chunk_addr, page_index};
use super::walk::{main_entry, walk};
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{EntryKind, Holds, ReachSize, TlbEntry};
use crate::paging::leaf_ext::LeafWalk2d;
use crate::paging::nested_walk::{push_ept_ref, EptMiss, NestedWalk, Step2d};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::{NodeId, PageTable};
use crate::units::{Asid, Gfn, PageSize, Pfn, PhysAddr, VirtAddr};

/// The walk's step at a guest perforated PMD entry (`table` is its hole
/// table): the combined perforated entry over a host huge page, else a
/// splintered 4 KiB entry (see the module's notes).
pub fn step<W: NestedWalk, X: Holds<PerforatedKind, PerforatedTlb>>(
    s: &mut LeafWalk2d<'_, W, X>,
) -> Step2d<PerforatedKind> {
    let LeafWalk2d { w, pt, table, tag, vaddr, write, ext } = s;
    let (w, pt, table, tag, vaddr, write) = (&mut **w, &mut **pt, *table, *tag, *vaddr, *write);
    let counters = &mut ext.state_mut().counters;
    let p = perforation(pt, table);
    let line = match bitmap_register(w, p.bitmap_line) {
        Ok(line) => line,
        Err(gfn) => return EptMiss::Violation(gfn).into(),
    };
    let i = page_index(vaddr);
    let home = Gfn::of_guest_kernel(p.frame.add(i as u64));
    let (host, host_size, host_writable, host_dirty) = match w.translate(home, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    let guest = walk(pt, table, tag, vaddr);
    let EntryKind::Ext(PerforatedKind::Page(page)) = guest.kind else {
        unreachable!("a perforated page's walk gives its page entry")
    };
    if host_size == PageSize::Size4K {
        let perms = (guest.writable && host_writable, host_writable && host_dirty);
        if let Some(e) = combined_over_host(w, tag, vaddr, home, perms, page.filter) {
            return Step2d::Resolve(e);
        }
    }
    if host_size != PageSize::Size4K {
        let page = PerforatedPage { frame: Pfn::new(host.raw() - i as u64), filter: page.filter };
        return Step2d::Resolve(TlbEntry {
            asid: tag,
            vbase: guest.vbase,
            size: guest.size,
            writable: guest.writable && host_writable,
            // Dirty only when the EPT leaf is too (a clean one takes the
            // dirty assist at the next store, which sets its D bit).
            dirty: host_writable && host_dirty,
            kind: EntryKind::Ext(PerforatedKind::Page(page)),
        });
    }
    // Splintered: the walker decides hole or not itself.
    if !page.filtered(vaddr.raw() & ((2 << 20) - 1)) {
        let (refs, stats) = w.refs();
        read_bitmap(line, vaddr, refs, stats, counters);
        if is_hole(&p.holes, i) {
            counters.hole_walks += 1;
            return hole_walk(w, pt, table, &p, tag, vaddr, write);
        }
    }
    if write && !host_writable {
        return Step2d::WriteProtected(home);
    }
    let entry = TlbEntry::page(
        tag,
        vaddr.vpn(),
        ReachSize::Size4K,
        host,
        p.writable && host_writable,
        host_writable && host_dirty,
    );
    Step2d::Leaf(entry)
}

/// The guest bitmap line's host address, as the register gives it, or the
/// guest frame to back first.
pub fn bitmap_register<W: NestedWalk>(w: &W, line: PhysAddr) -> Result<PhysAddr, Gfn> {
    let gfn = Gfn::of_guest_kernel(line.pfn());
    match w.backing_of(gfn) {
        Some((frame, _)) => Ok(frame.addr().add(line.raw() & 4095)),
        None => Err(gfn),
    }
}

/// The walker's own read of `vaddr`'s bitmap chunk in the line at `line`
/// (host-physical): one reference.
pub fn read_bitmap(line: PhysAddr, vaddr: VirtAddr, refs: &mut RefBuf, stats: &mut CoreStats, c: &mut FlowCounters) {
    c.bitmap_refs += 1;
    refs.push(chunk_addr(line, vaddr), RefKind::Walk);
    stats.walk_mem_refs += 1;
}

/// A hole's 2D walk: the shadow PMD entry, then the hole's PTE in `table`
/// (setting A, and D on a store), each a guest table entry read at its
/// host address, then the hole's frame through the EPT. The hole's
/// combined 4 KiB entry, or why there is none.
pub fn hole_walk<W: NestedWalk>(
    w: &mut W,
    pt: &mut PageTable,
    table: NodeId,
    p: &Perforation,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
) -> Step2d<PerforatedKind> {
    // Guest table reads count as stores for the EPT's A/D bits (walk2d.rs).
    let shadow_host = match w.translate(Gfn::of_guest_kernel(p.shadow.pfn()), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    w.push_guest(shadow_host, p.shadow);
    let table_host = match w.translate(Gfn::of_guest_kernel(pt.node_frame(table)), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    let (pte, at) = pt.read_leaf_and_set(table, vaddr, bits);
    w.push_guest(table_host, at);
    if !pte.present() {
        return Step2d::GuestFault;
    }
    let gfn = Gfn::of_guest_kernel(pte.pfn());
    let (host, _, host_writable, host_dirty) = match w.translate(gfn, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    if write && !host_writable {
        return Step2d::WriteProtected(gfn);
    }
    Step2d::Leaf(TlbEntry {
        asid: tag,
        vbase: vaddr.vpn(),
        size: ReachSize::Size4K,
        writable: pte.writable() && host_writable,
        dirty: (write || pte.dirty()) && host_writable && host_dirty,
        kind: EntryKind::Ext(PerforatedKind::Hole(HolePage { pfn: host })),
    })
}

/// The EPT walk's step at a perforated PMD entry of the EPT `ept` whose
/// hole table is `table`: the filter, maybe the host's bitmap, maybe the
/// host's hole walk; a 4 KiB translation of `gfn` (the leaf's frame:
/// `gfn`'s is this frame plus nothing), or `None` for an unbacked hole
/// (an EPT violation).
pub fn ept_leaf(
    ept: &mut PageTable,
    table: NodeId,
    gfn: Gfn,
    write: bool,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> Option<NestedHit> {
    let va = gfn.addr().as_host_virt();
    let p = perforation(ept, table);
    let hole = !main_entry(&p).filtered(va.raw() & ((2 << 20) - 1)) && {
        refs.push(chunk_addr(p.bitmap_line, va), RefKind::Walk);
        stats.walk_mem_refs += 1;
        is_hole(&p.holes, page_index(va))
    };
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    if hole {
        push_ept_ref(refs, stats, p.shadow);
    }
    let (pte, at) = ept.read_leaf_and_set(table, va, bits);
    if hole {
        push_ept_ref(refs, stats, at);
    }
    if !pte.present() {
        return None;
    }
    // (The caller fills the nested TLB with this 4 KiB translation.)
    Some((pte.pfn(), PageSize::Size4K, pte.writable(), write || pte.dirty()))
}

/// The host's perforated page under guest frame `gfn`, if its EPT leaf is
/// one (read from the host's table: no reference).
pub fn host_perforation<W: NestedWalk>(w: &W, gfn: Gfn) -> Option<Perforation> {
    perforation_at(w.host_ext_table()?, gfn.addr().as_host_virt())
}

/// A guest huge page (or a guest perforated page, whose filter is
/// `guest_filter`) over a host perforated leaf at `data_gfn`: the combined
/// perforated entry (`perms`: its permission and dirtiness), or `None`
/// when the EPT leaf is no perforated page or the accessed sub-page is a
/// hole in the host (the walk's 4 KiB translation, the hole's, stands).
pub fn combined_over_host<W: NestedWalk>(
    w: &W,
    tag: Asid,
    vaddr: VirtAddr,
    data_gfn: Gfn,
    perms: (bool, bool),
    guest_filter: u8,
) -> Option<TlbEntry<PerforatedKind>> {
    let host = host_perforation(w, data_gfn)?;
    if is_hole(&host.holes, page_index(vaddr)) {
        return None;
    }
    let main = main_entry(&host);
    let page = PerforatedPage { frame: main.frame, filter: main.filter | guest_filter };
    Some(TlbEntry {
        asid: tag,
        vbase: vaddr.align_down(PageSize::Size2M.bytes()).vpn(),
        size: ReachSize::Size2M,
        writable: perms.0,
        dirty: perms.1,
        kind: EntryKind::Ext(PerforatedKind::Page(page)),
    })
}

#[cfg(test)]
#[path = "walk2d_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "walk2d_host_tests.rs"]
mod host_tests;
