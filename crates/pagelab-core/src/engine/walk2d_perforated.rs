//! Perforated pages in the two-dimensional walk (the paper's V and Figure
//! 6; issue 13's virtualization): a guest's perforated page, over the
//! host's EPT leaves. All of it is cold code, reached from the 2D walker
//! when a guest PMD entry carries the perforated bit and from the
//! `TlbLookup::Resolve` arm; a run without perforated pages never comes
//! here.
//!
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
//!   perforated EPT leaf (`walk2d_host_perforated.rs`) the combined entry
//!   carries the guest's filter ORed with the host's, and the bitmap step
//!   ORs the two bitmaps (reading both lines when the L2 lacks the entry).
//! - **The bitmap register.** The guest's bitmap region is guest memory
//!   (the guest kernel reserves it at boot, as natively), backed by the
//!   host like any guest frame. The register the paper adds holds its host
//!   address: the simulator reads it from the EPT's current mapping
//!   (`Hypervisor::backing_of`), with no reference and no nested-TLB or
//!   EPT lookup, so a bitmap read is one host-physical reference. The
//!   host backs the bitmap's page at the first walk that meets a
//!   perforated page (an EPT violation, as for any guest frame), so the
//!   register always names a backed frame; a host change that moves the
//!   page is seen by the next read, as a host updating the register would.
//! - **Rows 2 to 5 of Figure 5** for a combined entry whose filter does not
//!   answer run `perforated::translate::is_hole_by_bitmap` (a second L2
//!   access, the bitmap entry cached by guest-virtual address under the
//!   VM's tag, a memory reference when absent), then the L1 fill or the
//!   hole walk: the shadow PMD entry and the hole's PTE are guest table
//!   entries, each read at its host address after its table's frame went
//!   through the EPT (nested TLB, else an EPT walk), then the hole's data
//!   frame through the EPT; the hole's 4 KiB entry goes into the L2 and
//!   the L1.
//! - **Shootdowns** need nothing new: a guest punch or patch shoots down
//!   the sub-page (its L1 entry, hole entry and bitmap entry, tagged with
//!   the VM's VPID on delivery); a host change is an INVEPT, which drops
//!   every combined entry of the VM, perforated, bitmap and hole entries
//!   included.

use super::super::mmu::Request;
use super::{check_combined, guest_frame_of, Ept, Walk2d, Walker2d};
use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{EntryKind, ReachSize, TlbEntry};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::{NodeId, PageTable};
use crate::systems::perforated::holes::is_hole;
use crate::systems::perforated::pagetable::{is_perforated, perforation, Perforation};
use crate::systems::perforated::tlb::{FlowCounters, HolePage, PerforatedKind, PerforatedPage};
use crate::systems::perforated::translate::{chunk_addr, is_hole_by_bitmap, page_index};
use crate::systems::perforated::walk;
use crate::systems::{ExtEntry, ExtKind};
use crate::units::{Asid, Gfn, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::virt::Hypervisor;

/// The walk's step at a guest perforated PMD entry (`table` is its hole
/// table): the combined perforated entry over a host huge page, else a
/// splintered 4 KiB entry (see the module's notes).
#[cold]
#[inline(never)]
pub(super) fn walk_step(
    ept: &mut Ept,
    pt: &mut PageTable,
    table: NodeId,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
    counters: &mut FlowCounters,
) -> Walk2d {
    let p = perforation(pt, table);
    let line = match bitmap_register(ept.hv, ept.nested.vm, p.bitmap_line) {
        Ok(line) => line,
        Err(gfn) => return Walk2d::EptViolation(gfn),
    };
    let i = page_index(vaddr);
    let home = Gfn::of_guest_kernel(p.frame.add(i as u64));
    let (host, host_size, host_writable, host_dirty) = match ept.translate(home, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    let guest = walk::walk(pt, table, tag, vaddr);
    let EntryKind::Ext(PerforatedKind::Page(page)) = guest.kind else {
        unreachable!("a perforated page's walk gives its page entry")
    };
    if host_size == PageSize::Size4K {
        let perms = (guest.writable && host_writable, host_writable && host_dirty);
        if let Some(w) = host::combined(ept, tag, vaddr, home, perms, page.filter) {
            return w;
        }
    }
    if host_size != PageSize::Size4K {
        let page = PerforatedPage { frame: Pfn::new(host.raw() - i as u64), filter: page.filter };
        return Walk2d::Perforated(TlbEntry {
            asid: tag,
            vbase: guest.vbase,
            size: guest.size,
            writable: guest.writable && host_writable,
            // Dirty only when the EPT leaf is too (a clean one takes the
            // dirty assist at the next store, which sets its D bit).
            dirty: host_writable && host_dirty,
            kind: EntryKind::Ext(ExtKind::Perforated(PerforatedKind::Page(page))),
        });
    }
    // Splintered: the walker decides hole or not itself.
    if !page.filtered(vaddr.raw() & ((2 << 20) - 1)) {
        read_bitmap(line, vaddr, ept.refs, ept.stats, counters);
        if is_hole(&p.holes, i) {
            counters.hole_walks += 1;
            return hole_walk(ept, pt, table, &p, tag, vaddr, write);
        }
    }
    if write && !host_writable {
        return Walk2d::WriteProtected(home);
    }
    let entry = TlbEntry::page(
        tag,
        vaddr.vpn(),
        ReachSize::Size4K,
        host,
        p.writable && host_writable,
        host_writable && host_dirty,
    );
    Walk2d::Leaf(entry)
}

/// The guest bitmap line's host address, as the register gives it, or the
/// guest frame to back first.
fn bitmap_register(hv: &Hypervisor, vm: usize, line: PhysAddr) -> std::result::Result<PhysAddr, Gfn> {
    let gfn = Gfn::of_guest_kernel(line.pfn());
    match hv.backing_of(vm, gfn) {
        Some((frame, _)) => Ok(frame.addr().add(line.raw() & 4095)),
        None => Err(gfn),
    }
}

/// The walker's own read of `vaddr`'s bitmap chunk in the line at `line`
/// (host-physical): one reference.
fn read_bitmap(line: PhysAddr, vaddr: VirtAddr, refs: &mut RefBuf, stats: &mut CoreStats, c: &mut FlowCounters) {
    c.bitmap_refs += 1;
    refs.push(chunk_addr(line, vaddr), RefKind::Walk);
    stats.walk_mem_refs += 1;
}

/// A hole's 2D walk: the shadow PMD entry, then the hole's PTE in `table`
/// (setting A, and D on a store), each a guest table entry read at its
/// host address, then the hole's frame through the EPT. The hole's
/// combined 4 KiB entry, or why there is none.
fn hole_walk(
    ept: &mut Ept,
    pt: &mut PageTable,
    table: NodeId,
    p: &Perforation,
    tag: Asid,
    vaddr: VirtAddr,
    write: bool,
) -> Walk2d {
    // Guest table reads count as stores for the EPT's A/D bits (walk2d.rs).
    let shadow_host = match ept.translate(Gfn::of_guest_kernel(p.shadow.pfn()), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    ept.push_guest(shadow_host, p.shadow);
    let table_host = match ept.translate(Gfn::of_guest_kernel(pt.node_frame(table)), true) {
        Ok((frame, ..)) => frame,
        Err(miss) => return miss.into(),
    };
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    let (pte, at) = pt.read_leaf_and_set(table, vaddr, bits);
    ept.push_guest(table_host, at);
    if !pte.present() {
        return Walk2d::GuestFault;
    }
    let gfn = Gfn::of_guest_kernel(pte.pfn());
    let (host, _, host_writable, host_dirty) = match ept.translate(gfn, write) {
        Ok(t) => t,
        Err(miss) => return miss.into(),
    };
    if write && !host_writable {
        return Walk2d::WriteProtected(gfn);
    }
    Walk2d::Leaf(TlbEntry {
        asid: tag,
        vbase: vaddr.vpn(),
        size: ReachSize::Size4K,
        writable: pte.writable() && host_writable,
        dirty: (write || pte.dirty()) && host_writable && host_dirty,
        kind: EntryKind::Ext(ExtKind::Perforated(PerforatedKind::Hole(HolePage { pfn: host }))),
    })
}

impl Walker2d<'_> {
    /// A combined perforated entry a walk just gave: cached, and the access
    /// translated by its filter, else resolved as after an L2 hit.
    /// `None`: a fault or an EPT violation was handled; walk again.
    #[cold]
    #[inline(never)]
    pub(super) fn perforated_leaf(&mut self, req: Request, tag: Asid, entry: ExtEntry) -> Result<Option<Pfn>> {
        if let Some(frame) = crate::systems::fill_ext_after_walk(&mut self.mmu.tlb, entry, req.vaddr, req.instr) {
            return Ok(Some(frame));
        }
        self.resolve_perforated(req, tag, Some(entry))
    }

    /// Rows 2 to 5 of Figure 5 for the combined perforated entry `entry`
    /// (else the L2's, which the lookup hit). `None`: a fault or an EPT
    /// violation was handled, or the sub-page is a hole only in the host;
    /// the caller walks again.
    #[cold]
    #[inline(never)]
    pub(super) fn resolve_perforated(
        &mut self,
        req: Request,
        tag: Asid,
        entry: Option<ExtEntry>,
    ) -> Result<Option<Pfn>> {
        let Request { asid, vaddr, write, instr } = req;
        let entry = entry.or_else(|| self.mmu.tlb.peek_l2(tag, vaddr)).expect("an entry to resolve");
        let outcome = match self.bitmap_step(asid, tag, &entry, vaddr, instr) {
            Bitmap::NoHole(frame) => {
                if self.mmu.check {
                    check_combined(self.guest, self.hv, self.nested.vm, asid, vaddr, frame)?;
                }
                return Ok(Some(frame));
            }
            Bitmap::GuestHole(table) => {
                let Walker2d { mmu, nested, guest, hv, refs, stats, .. } = self;
                let pt = guest.page_table_mut(asid);
                let p = perforation(pt, table);
                let mut ept = Ept { nested, hv, refs, stats, check: mmu.check };
                hole_walk(&mut ept, pt, table, &p, tag, vaddr, write)
            }
            // The walk translates it: the guest's, then the host's hole walk.
            Bitmap::HostHole => return Ok(None),
            Bitmap::Unbacked => Walk2d::EptViolation(bitmap_gfn(self.guest.page_table_mut(asid), vaddr)),
        };
        if let Walk2d::Leaf(hole) = outcome {
            self.mmu.tlb.fill_after_walk(hole, vaddr, instr);
            return Ok(Some(hole.frame_of(vaddr)));
        }
        self.settle_miss(outcome, asid, tag, vaddr, write)?;
        Ok(None)
    }

    /// The bitmap's answer for `vaddr` through `entry`: the guest's bitmap
    /// (a guest perforated page), the host's (a host perforated EPT leaf),
    /// or both ORed (see [`Bitmap`]).
    fn bitmap_step(&mut self, asid: Asid, tag: Asid, entry: &ExtEntry, vaddr: VirtAddr, instr: bool) -> Bitmap {
        let pt = self.guest.page_table_mut(asid);
        let guest = is_perforated(pt, vaddr).then(|| {
            let (table, _) = pt.pmd_table_of(vaddr).expect("a perforated page has its hole table");
            (table, perforation(pt, table))
        });
        let i = page_index(vaddr);
        let home = match &guest {
            Some((_, g)) => Some(Gfn::of_guest_kernel(g.frame.add(i as u64))),
            None => guest_frame_of(self.guest, asid, vaddr),
        };
        let host = home.and_then(|g| host::host_perforation(self.hv, self.nested.vm, g));
        let (mut p, line) = match (&guest, &host) {
            (Some((_, g)), _) => match bitmap_register(self.hv, self.nested.vm, g.bitmap_line) {
                Ok(line) => (*g, line),
                Err(_) => return Bitmap::Unbacked,
            },
            (None, Some(h)) => (*h, h.bitmap_line),
            (None, None) => unreachable!("a combined perforated entry has a perforated page in one layer"),
        };
        if let (Some(_), Some(h)) = (&guest, &host) {
            p.holes.iter_mut().zip(h.holes).for_each(|(g, h)| *g |= h);
        }
        let tlb = &mut self.mmu.tlb;
        let fetched = tlb.extensions().perforated.counters.bitmap_refs;
        let hole = is_hole_by_bitmap(tlb, &p, line, tag, vaddr, self.mmu.l2_tlb_latency, self.refs, self.stats);
        let counters = &mut tlb.extensions_mut().perforated.counters;
        if let (Some(_), Some(h), true) = (&guest, &host, counters.bitmap_refs > fetched) {
            // Both layers' bitmaps: the host's line is read too.
            read_bitmap(h.bitmap_line, vaddr, self.refs, self.stats, counters);
        }
        if !hole {
            tlb.fill_l1(entry, vaddr, instr);
            return Bitmap::NoHole(entry.frame_of(vaddr));
        }
        tlb.extensions_mut().perforated.counters.hole_walks += 1;
        match guest {
            Some((table, g)) if is_hole(&g.holes, i) => Bitmap::GuestHole(table),
            _ => Bitmap::HostHole,
        }
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

/// The guest frame of `vaddr`'s perforated page's bitmap line.
fn bitmap_gfn(pt: &PageTable, vaddr: VirtAddr) -> Gfn {
    let (table, _) = pt.pmd_table_of(vaddr).expect("a cached perforated page is in the guest's table");
    Gfn::of_guest_kernel(perforation(pt, table).bitmap_line.pfn())
}

#[path = "walk2d_host_perforated.rs"]
pub(super) mod host;

#[cfg(test)]
#[path = "walk2d_perforated_tests.rs"]
mod tests;
