//! The MMU path of one access: L1 TLB, L2 TLB, then a page walk that
//! consults the page-walk caches and reads page-table entries at their real
//! physical addresses (each read is a reference the data caches will see),
//! setting accessed and dirty bits as the hardware does. A walk that finds
//! no translation raises a page fault; the OS handles it and the walk is
//! retried, as hardware re-executes the faulting instruction.
//!
//! A PMD entry pointing at a table may carry leaf-extension software bits
//! (`pte::LEAF_EXT`; today Colored Huge Pages' bit, III-B-3): then the last
//! step of the walk is the owning system's (`systems::walk_leaf_ext`, out
//! of line), reached by one test of those bits; it returns the entry to
//! cache. A walk that skips the PMD (a page-walk-cache hit) reads the bits
//! the page table keeps beside the table.
//!
//! The walker lives here, in the engine, because it is where hardware (the
//! page-walk caches) meets the page tables of layer 4; the hardware models
//! themselves know nothing of page tables.

use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::pwc::Pwc;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{PageLeaf, ReachSize, Tlb, TlbLookup};
use crate::os::Kernel;
use crate::paging::leaf_ext::{Access, LeafWalk, Resolve};
use crate::paging::pte::{Pte, ACCESSED, CONTIGUOUS, DIRTY};
use crate::paging::{pagetable::level_size, PageTable};
use crate::systems::{ExtEntry, TlbExtensions};
use crate::units::{Asid, PageSize, Pfn, VirtAddr};

/// The hardware state of one core's MMU.
#[derive(Debug)]
pub struct Mmu {
    /// The TLBs, with the systems' entry kinds.
    pub tlb: Tlb<TlbExtensions>,
    pub pwc: Pwc,
    pub l2_tlb_latency: f64,
    pub walk_latency: f64,
    /// Verify every TLB hit against the page table (slow; for tests).
    pub check: bool,
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
    /// A plain page: its frame, and its page size or the coalesced reach
    /// of a contiguous range.
    Leaf(PageLeaf),
    /// A leaf extension's walk step gave this entry.
    Ext(ExtEntry),
    NotPresent,
}

impl Mmu {
    /// Translates `vaddr` for an access; returns the 4 KiB frame. Walk
    /// references go to `refs`; cycles of TLB and PWC lookups to `stats`.
    /// Faults are handled through `kernel` (their cost lands in `stats`).
    /// (Always inlined: with two variants of the translation stage, LLVM
    /// stopped inlining it into either, +5% instructions on gups.)
    #[inline(always)]
    pub fn translate(
        &mut self,
        kernel: &mut Kernel,
        req: Request,
        refs: &mut RefBuf,
        stats: &mut CoreStats,
    ) -> Result<Pfn> {
        let Request { asid, vaddr, write, instr } = req;
        if let Some(t) = self.tlb.lookup_l1(asid, vaddr, instr) {
            if write && !t.dirty {
                self.dirty_assist(kernel, asid, vaddr, refs, stats);
            }
            if self.check {
                check_translation(kernel, asid, vaddr, t.pfn)?;
            }
            return Ok(t.pfn);
        }
        match self.tlb.lookup_below_l1(asid, vaddr, instr) {
            TlbLookup::L1(_) => unreachable!("lookup_below_l1 starts below the L1"),
            TlbLookup::L2(t) => {
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
            TlbLookup::Resolve => {
                stats.tlb_l1_misses(instr);
                stats.cycles_translation += self.l2_tlb_latency;
                if let Some(frame) = self.resolve(kernel, Request { asid, vaddr, write, instr }, None, refs, stats)? {
                    return Ok(frame);
                }
                // A hole just backed by a fault: walk again.
            }
        }
        loop {
            match self.walk(kernel.page_table_mut(asid), asid, vaddr, write, refs, stats) {
                Walk::Leaf(leaf) => {
                    self.tlb.fill_page_after_walk(asid, vaddr, leaf, instr);
                    return Ok(leaf.frame_of(vaddr));
                }
                Walk::Ext(entry) => {
                    if let Some(frame) = crate::systems::fill_ext_after_walk(&mut self.tlb, entry, vaddr, instr) {
                        return Ok(frame);
                    }
                    let req = Request { asid, vaddr, write, instr };
                    if let Some(frame) = self.resolve(kernel, req, Some(entry), refs, stats)? {
                        return Ok(frame);
                    }
                }
                Walk::NotPresent => {
                    let outcome = kernel.handle_fault(asid, vaddr, write)?;
                    stats.record_fault(outcome.size, outcome.cycles);
                    self.apply_own_shootdowns(kernel, asid);
                }
            }
        }
    }

    /// An L2 entry of an extension kind that cannot translate `req` alone
    /// (a perforated page's possibly holed region): its owner finishes
    /// the translation. An access to a hole not backed faults here and
    /// returns `None`: the caller walks again, as hardware retries. `entry`
    /// is the entry a walk just gave (else the L2's, which the lookup hit).
    #[cold]
    #[inline(never)]
    fn resolve(
        &mut self,
        kernel: &mut Kernel,
        req: Request,
        entry: Option<ExtEntry>,
        refs: &mut RefBuf,
        stats: &mut CoreStats,
    ) -> Result<Option<Pfn>> {
        let Request { asid, vaddr, write, instr } = req;
        let pt = kernel.page_table_mut(asid);
        let lat = self.l2_tlb_latency;
        let entry = entry.or_else(|| self.tlb.peek_l2(asid, vaddr)).expect("an entry to resolve");
        let access = Access { vaddr, write, instr };
        let mut r = Resolve { tlb: &mut self.tlb, pt, entry: &entry, access, l2_latency: lat, refs, stats };
        match crate::systems::resolve_ext(&mut r) {
            Some(frame) => {
                if self.check {
                    check_translation(kernel, asid, vaddr, frame)?;
                }
                Ok(Some(frame))
            }
            None => {
                let outcome = kernel.handle_fault(asid, vaddr, write)?;
                stats.record_fault(outcome.size, outcome.cycles);
                self.apply_own_shootdowns(kernel, asid);
                Ok(None)
            }
        }
    }

    /// The hardware page walk: skip the levels the page-walk caches hold,
    /// read the rest, set A (and D on a store) in the leaf.
    fn walk(
        &mut self,
        pt: &mut PageTable,
        asid: Asid,
        vaddr: VirtAddr,
        write: bool,
        refs: &mut RefBuf,
        stats: &mut CoreStats,
    ) -> Walk {
        stats.walks += 1;
        let hit = self.pwc.lookup(asid, vaddr);
        stats.cycles_translation += self.walk_latency;
        // A hit names the table to continue in (its handle is the table's
        // slab index), so nothing above it is read, in hardware or in
        // software. After a PDE hit the leaf-extension bits come from
        // beside the table, which mirror its PMD entry's current bits.
        let (mut node, mut leaf_ext) = if hit.skip_to_level < pt.levels() {
            stats.pwc_hits += 1;
            let node = pt.node_from_handle(hit.skip_to_level, hit.handle);
            debug_assert_eq!(hit.table, pt.node_frame(node), "stale page-walk-cache entry");
            (node, pt.table_leaf_ext(node))
        } else {
            (pt.root(), 0)
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
                let slot =
                    crate::paging::LeafSlot { node, index: crate::paging::pagetable::table_index(vaddr, level), level };
                pt.set_bits(slot, bits);
                if pte.raw() & CONTIGUOUS != 0 {
                    return self.contiguous_leaf(pte, level_size(level), write);
                }
                return Walk::Leaf(PageLeaf::new(
                    pte.pfn(),
                    level_size(level).into(),
                    pte.writable(),
                    write || pte.dirty(),
                ));
            }
            let child = child.expect("a present non-leaf entry has a child table");
            self.pwc.fill(asid, vaddr, level, pte.pfn(), child.handle());
            leaf_ext = if level == 2 { pte.leaf_ext() } else { 0 };
            node = child;
        }
        if leaf_ext != 0 {
            let ext = self.tlb.extensions();
            let mut w = LeafWalk { pt, table: node, asid, vaddr, write, ext, refs, stats };
            return Walk::Ext(crate::systems::walk_leaf_ext(leaf_ext, &mut w));
        }
        let (pte, addr) = pt.read_leaf_and_set(node, vaddr, bits);
        refs.push(addr, RefKind::Walk);
        stats.walk_mem_refs += 1;
        if !pte.present() {
            return Walk::NotPresent;
        }
        if pte.raw() & CONTIGUOUS != 0 {
            return self.contiguous_leaf(pte, PageSize::Size4K, write);
        }
        Walk::Leaf(PageLeaf::new(pte.pfn(), ReachSize::Size4K, pte.writable(), write || pte.dirty()))
    }

    /// A leaf whose contiguous bit is set (Arm's contiguous hint: it is one
    /// of 16 aligned entries mapping 16 contiguous pages of `size`): a TLB
    /// that holds coalesced translations caches one entry of 16 times the
    /// reach; another ignores the bit, as hardware without it would. The
    /// OS keeps the 16 entries' frames and permissions consistent
    /// (`paging::contig`), so this entry's stand for all of them. (Out of
    /// line: only Arm-style machines with contiguous ranges come here.)
    #[cold]
    #[inline(never)]
    fn contiguous_leaf(&self, pte: Pte, size: PageSize, write: bool) -> Walk {
        let reach = contiguous_reach(&self.tlb, size);
        let pte_frame = Pfn::new(pte.pfn().raw() & !(reach.nr_pages() - 1));
        Walk::Leaf(PageLeaf::new(pte_frame, reach, pte.writable(), write || pte.dirty()))
    }

    /// A store through a clean TLB entry: the hardware sets the PTE's dirty
    /// bit with a locked update of the entry (one more reference).
    fn dirty_assist(
        &mut self,
        kernel: &mut Kernel,
        asid: Asid,
        vaddr: VirtAddr,
        refs: &mut RefBuf,
        stats: &mut CoreStats,
    ) {
        let pt = kernel.page_table_mut(asid);
        if let Some(slot) = pt.leaf_slot(vaddr) {
            pt.set_bits(slot, DIRTY | ACCESSED);
            if slot.level == 1 {
                // A leaf extension's entries may share the D bit (a colored
                // huge page's 8 sub-mapping entries share one line).
                let leaf_ext = pt.table_leaf_ext(slot.node);
                if leaf_ext != 0 {
                    crate::systems::dirty_assist_leaf_ext(leaf_ext, pt, slot.node);
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
    pub fn shoot_down(&mut self, s: &crate::os::Shootdown) {
        self.tlb.invalidate_range(s.asid, s.start, s.end);
        self.pwc.invalidate_range(s.asid, s.start, s.end);
    }

    /// Applies the shootdowns a fault of this core's process queued.
    /// (Out of line: it follows a fault, and inlined into the engine's
    /// loop it only disturbs the register allocation of the hot path.)
    #[inline(never)]
    pub(super) fn apply_own_shootdowns(&mut self, kernel: &mut Kernel, asid: Asid) {
        for s in kernel.drain_shootdowns_for(asid) {
            self.shoot_down(&s);
        }
    }
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

/// What one TLB entry of `tlb` translates for a leaf of `size` whose
/// contiguous bit is set: 16 times the page (64 KiB over PTEs, 32 MiB over
/// PMDs) when the TLB holds that reach, else the page alone, as hardware
/// without coalescing ignores the bit. Both walkers use it (the 2D one for
/// guest and EPT leaves alike).
pub(super) fn contiguous_reach<X: crate::hw::tlb::TlbExtension>(tlb: &Tlb<X>, size: PageSize) -> ReachSize {
    let coalesced = if size == PageSize::Size4K { ReachSize::Size64K } else { ReachSize::Size32M };
    if size != PageSize::Size1G && tlb.holds_reach(coalesced) {
        coalesced
    } else {
        size.into()
    }
}
