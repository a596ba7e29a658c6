//! The MMU path of one access: L1 TLB, L2 TLB, then a page walk that
//! consults the page-walk caches and reads page-table entries at their real
//! physical addresses (each read is a reference the data caches will see),
//! setting accessed and dirty bits as the hardware does. A walk that finds
//! no translation raises a page fault; the OS handles it and the walk is
//! retried, as hardware re-executes the faulting instruction.
//!
//! A PMD entry with the colored-huge-page bit (Colored Huge Pages, III-B-3)
//! makes the walker read the 8 sub-mapping entries of its page table with
//! one cache-line reference and return one 2 MiB L2 TLB entry carrying the
//! 8 base frames. The page-walk cache's PDE entries carry the bit too, so a
//! walk that skips the PMD still knows.
//!
//! The walker lives here, in the engine, because it is where hardware (the
//! page-walk caches) meets the page tables of layer 4; the hardware models
//! themselves know nothing of page tables.

use super::core_stats::CoreStats;
use super::refs::{RefBuf, RefKind};
use crate::error::Result;
use crate::hw::pwc::Pwc;
use crate::hw::tlb::{EntryKind, Tlb, TlbEntry, TlbLookup};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::{pagetable::level_size, PageTable};
use crate::policy::Kernel;
use crate::units::{Asid, PageSize, Pfn, VirtAddr};

/// The hardware state of one core's MMU.
#[derive(Debug)]
pub struct Mmu {
    pub tlb: Tlb,
    pub pwc: Pwc,
    pub l2_tlb_latency: f64,
    pub pwc_latency: f64,
    /// Verify every TLB hit against the page table (slow; for tests).
    pub check: bool,
    /// log2 of the number of system colors: the stride of colored huge
    /// pages' sub-mappings, a constant of the hardware.
    pub chp_stride_shift: u8,
}

/// One access, as the MMU sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub asid: Asid,
    pub vaddr: VirtAddr,
    pub write: bool,
    /// An instruction fetch (uses the instruction TLB).
    pub instr: bool,
}

/// Outcome of one page walk.
enum Walk {
    Leaf { pte_frame: Pfn, size: PageSize, writable: bool, dirty: bool },
    /// A colored huge page: the first frame of each of its 8 64-page slots.
    ColoredHuge { sub: [Pfn; 8], writable: bool, dirty: bool },
    NotPresent,
}

impl Mmu {
    /// Translates `vaddr` for an access; returns the 4 KiB frame. Walk
    /// references go to `refs`; cycles of TLB and PWC lookups to `stats`.
    /// Faults are handled through `kernel` (their cost lands in `stats`).
    #[inline]
    pub fn translate(&mut self, kernel: &mut Kernel, req: Request, refs: &mut RefBuf, stats: &mut CoreStats) -> Result<Pfn> {
        let Request { asid, vaddr, write, instr } = req;
        match self.tlb.lookup(asid, vaddr, instr) {
            TlbLookup::L1(t) => {
                if write && !t.dirty {
                    self.dirty_assist(kernel, asid, vaddr, refs, stats);
                }
                if self.check {
                    check_translation(kernel, asid, vaddr, t.pfn)?;
                }
                return Ok(t.pfn);
            }
            TlbLookup::L2(t, _) => {
                stats.tlb_l1_misses(instr);
                stats.cycles_translation += self.l2_tlb_latency;
                if write && !t.dirty {
                    self.dirty_assist(kernel, asid, vaddr, refs, stats);
                }
                if self.check {
                    check_translation(kernel, asid, vaddr, t.pfn)?;
                }
                return Ok(t.pfn);
            }
            TlbLookup::Miss => {
                stats.tlb_l1_misses(instr);
                stats.tlb_l2_misses(instr);
                stats.cycles_translation += self.l2_tlb_latency;
            }
        }
        loop {
            match self.walk(kernel.page_table_mut(asid), asid, vaddr, write, refs, stats) {
                Walk::Leaf { pte_frame, size, writable, dirty } => {
                    let vbase = vaddr.align_down(size.bytes()).vpn();
                    let entry = TlbEntry { asid, vbase, size, writable, dirty, kind: EntryKind::Page { pfn: pte_frame } };
                    self.tlb.fill_after_walk(entry, vaddr, instr);
                    return Ok(entry.frame_of(vaddr));
                }
                Walk::ColoredHuge { sub, writable, dirty } => {
                    let vbase = vaddr.align_down(PageSize::Size2M.bytes()).vpn();
                    let entry = TlbEntry::colored_huge(asid, vbase, sub, self.chp_stride_shift, writable, dirty);
                    self.tlb.fill_after_walk(entry, vaddr, instr);
                    return Ok(entry.frame_of(vaddr));
                }
                Walk::NotPresent => {
                    let outcome = kernel.handle_fault(asid, vaddr, write)?;
                    stats.record_fault(outcome.size, outcome.cycles);
                    self.apply_own_shootdowns(kernel, asid);
                }
            }
        }
    }

    /// The hardware page walk: skip the levels the page-walk caches hold,
    /// read the rest, set A (and D on a store) in the leaf.
    fn walk(&mut self, pt: &mut PageTable, asid: Asid, vaddr: VirtAddr, write: bool, refs: &mut RefBuf, stats: &mut CoreStats) -> Walk {
        stats.walks += 1;
        let hit = self.pwc.lookup(asid, vaddr);
        stats.cycles_translation += self.pwc_latency;
        // A hit names the table to continue in (its handle is the table's
        // slab index), so nothing above it is read, in hardware or in
        // software. After a PDE hit the CHP bit comes from the table's side
        // line, which mirrors its PMD entry's current bit.
        let (mut node, mut colored_huge) = if hit.skip_to_level < pt.levels() {
            stats.pwc_hits += 1;
            let node = pt.node_from_handle(hit.skip_to_level, hit.handle);
            debug_assert_eq!(hit.table, pt.node_frame(node), "stale page-walk-cache entry");
            (node, pt.is_colored_huge_table(node))
        } else {
            (pt.root(), false)
        };
        let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
        // The upper levels: each present entry is a huge leaf or leads to
        // a table one level down, which the page-walk cache learns.
        while pt.node_level(node) > 1 {
            let level = pt.node_level(node);
            let (pte, addr, child) = pt.read_upper(node, vaddr);
            refs.push(addr, RefKind::Walk);
            stats.walk_mem_refs += 1;
            if !pte.present() {
                return Walk::NotPresent;
            }
            if pte.is_huge() {
                let slot = crate::paging::LeafSlot { node, index: crate::paging::pagetable::table_index(vaddr, level), level };
                pt.set_bits(slot, bits);
                return Walk::Leaf { pte_frame: pte.pfn(), size: level_size(level), writable: pte.writable(), dirty: write || pte.dirty() };
            }
            let child = child.expect("a present non-leaf entry has a child table");
            self.pwc.fill(asid, vaddr, level, pte.pfn(), child.handle());
            colored_huge = level == 2 && pte.is_colored_huge();
            node = child;
        }
        if colored_huge {
            return walk_colored_huge(pt, node, vaddr, write, refs, stats);
        }
        let (pte, addr) = pt.read_leaf_and_set(node, vaddr, bits);
        refs.push(addr, RefKind::Walk);
        stats.walk_mem_refs += 1;
        if !pte.present() {
            return Walk::NotPresent;
        }
        Walk::Leaf { pte_frame: pte.pfn(), size: PageSize::Size4K, writable: pte.writable(), dirty: write || pte.dirty() }
    }

    /// A store through a clean TLB entry: the hardware sets the PTE's dirty
    /// bit with a locked update of the entry (one more reference).
    fn dirty_assist(&mut self, kernel: &mut Kernel, asid: Asid, vaddr: VirtAddr, refs: &mut RefBuf, stats: &mut CoreStats) {
        let pt = kernel.page_table_mut(asid);
        if let Some(slot) = pt.leaf_slot(vaddr) {
            pt.set_bits(slot, DIRTY | ACCESSED);
            if slot.level == 1 && pt.is_colored_huge(vaddr) {
                // The same locked update covers the 8 sub-mapping entries,
                // which share one line and one D bit.
                for e in pt.colored_huge_line(slot.node) {
                    *e = e.with(DIRTY | ACCESSED);
                }
            }
            let addr = pt.node_frame(slot.node).addr().add(slot.index as u64 * 8);
            refs.push(addr, RefKind::Walk);
            stats.walk_mem_refs += 1;
            stats.dirty_assists += 1;
        }
        self.tlb.mark_dirty(asid, vaddr);
    }

    /// Applies one shootdown: TLB entries and page-walk-cache entries of
    /// its address space overlapping its range are dropped.
    pub fn shoot_down(&mut self, s: &crate::policy::Shootdown) {
        self.tlb.invalidate_range(s.asid, s.start, s.end);
        self.pwc.invalidate_range(s.asid, s.start, s.end);
    }

    /// Applies the shootdowns a fault of this core's process queued.
    /// (Out of line: it follows a fault, and inlined into the engine's
    /// loop it only disturbs the register allocation of the hot path.)
    #[inline(never)]
    fn apply_own_shootdowns(&mut self, kernel: &mut Kernel, asid: Asid) {
        for s in kernel.drain_shootdowns_for(asid) {
            self.shoot_down(&s);
        }
    }
}

/// The last step of a walk through a colored-huge-page PMD: one reference
/// to the first cache line of the page table, where the design keeps the
/// 8 sub-mapping entries (`PageTable::colored_huge_line`; pagelab also
/// keeps all 512 PTEs, as the paper's prototype does, for software walks).
/// A/D are set in the 8 entries: the whole colored huge page shares them,
/// and its permission (III-B-1). The bit guarantees every page is mapped
/// (a partial munmap or mprotect clears it first).
fn walk_colored_huge(pt: &mut PageTable, node: crate::paging::NodeId, vaddr: VirtAddr, write: bool, refs: &mut RefBuf, stats: &mut CoreStats) -> Walk {
    refs.push(pt.node_frame(node).addr(), RefKind::Walk);
    stats.walk_mem_refs += 1;
    stats.chp_walks += 1;
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    let line = pt.colored_huge_line(node);
    for e in line.iter_mut() {
        *e = e.with(bits);
    }
    let slot = (vaddr.raw() >> 18) as usize & 7;
    Walk::ColoredHuge { sub: line.map(|e| e.pfn()), writable: line[slot].writable(), dirty: line[0].dirty() }
}

/// The check mode: a TLB hit must equal what the page table says now.
/// (A test mode: kept out of the engine's loop.)
#[cold]
#[inline(never)]
fn check_translation(kernel: &Kernel, asid: Asid, vaddr: VirtAddr, frame: Pfn) -> Result<()> {
    let pt = &kernel.proc(asid).aspace.pt;
    let expected = pt.lookup(vaddr).map(|m| Pfn::new(m.frame.raw() + (vaddr.raw() & (m.size.bytes() - 1)) / 4096));
    if expected != Some(frame) {
        return Err(crate::Error::Workload(format!(
            "stale translation: the TLB maps {vaddr} to frame {frame} but the page table says {expected:?}"
        )));
    }
    Ok(())
}
