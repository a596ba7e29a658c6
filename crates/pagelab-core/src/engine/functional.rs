//! The functional fast-forward: accesses that only the OS sees. Each one
//! asks the page table whether its page is mapped (a software walk) and,
//! when it is not, takes the fault exactly as the timed path's walker
//! would: the same `Kernel::handle_fault`, so the same chain of systems,
//! page tables, VMAs and shootdowns. The TLBs, page-walk caches, caches and
//! the timing model are skipped, and so are the core's statistics (the
//! fast-forward's own counts are `sample.fast_forward.*`).
//!
//! Why a software walk gives the timed path's faults: the timed path faults
//! only when its walk finds no present leaf, and a TLB hit never hides a
//! missing one (every change to a mapping shoots down). Leaf extensions
//! keep all 512 PTEs for software walks (CHP, perforated pages, GTSM), so
//! a present PTE is a mapped page there too; an unbacked hole of a
//! perforated page has none, and faults in both paths.
//!
//! The page-table bits: a present plain leaf gets A, and D on a store, as
//! the walker and its dirty assists set them (they are sticky, so setting
//! them on every access leaves what one walk per page leaves). A leaf
//! extension's last step runs as the walker's does (CHP's shared line gets
//! its bits); a perforated page's hole PTE does not get them (no OS policy
//! reads them).
//!
//! The clock: each fast-forwarded stage advances the core's clock by
//! `cpi x instructions + the faults' cycles` (`FastForward::cpi`: the
//! configured `run.fast_forward_cpi`, else the CPI the core measured in its
//! last measure window without fault and daemon cycles, else the base
//! CPI), and a daemon's shootdown adds its interrupt's cost, so khugepaged
//! and the other daemons keep running on a clock that moves as the
//! program's would. The interval model's window is drained first and its
//! clock moved on by the same cycles.
//!
//! The TLBs and caches keep what they held before the fast-forward (made
//! consistent with the page tables by the shootdowns, which are delivered
//! as always): neither flushed nor updated. The warm-up that follows
//! (`run.sampling.warmup`, or `run.warmup`) fills them with what the
//! program uses then.

use crate::error::Result;
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::RefBuf;
use crate::paging::leaf_ext::LeafWalk;
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::PageTable;
use crate::systems::TlbExtensions;
use crate::units::{Asid, VirtAddr};
use crate::workload::AccessKind;

use super::Simulation;

/// What one core's functional fast-forwards ran (whole run, never reset).
#[derive(Debug, Default, Clone)]
pub struct FastForward {
    pub accesses: u64,
    pub instructions: u64,
    pub faults: u64,
    /// The clock's advance: pace x instructions, faults, daemons' interrupts.
    pub cycles: f64,
    /// Cycles per instruction of the clock while fast-forwarding.
    pub cpi: f64,
}

impl FastForward {
    /// Advances the clock of a functional core by `cycles` (a daemon's
    /// interrupt): counted here, not in the core's statistics.
    pub fn add_cycles(&mut self, stall_offset: &mut f64, cycles: f64) {
        self.cycles += cycles;
        *stall_offset += cycles;
    }
}

impl Simulation {
    /// Runs accesses [pos, end) of core `i` through the OS only.
    #[inline(never)]
    pub(super) fn functional_stage(&mut self, i: usize, end: usize) -> Result<()> {
        let core = &mut self.cores[i];
        let kernel = &mut self.kernel;
        let asid = core.asid;
        let (mut instructions, mut faults, mut fault_cycles) = (0u64, 0u64, 0.0f64);
        for j in core.pos..end {
            let a = core.batch.accesses[j];
            instructions += a.instrs as u64;
            let write = a.kind == AccessKind::Store;
            // Faults until the page is mapped, as the walker walks again
            // after each one.
            while !touch(kernel.page_table_mut(asid), asid, a.vaddr, write, core.mmu.tlb.extensions()) {
                let outcome = kernel.handle_fault(asid, a.vaddr, write)?;
                faults += 1;
                fault_cycles += outcome.cycles;
                core.mmu.apply_own_shootdowns(kernel, asid);
            }
        }
        let n = (end - core.pos) as u64;
        core.ran += n;
        let ff = &mut core.ff;
        ff.accesses += n;
        ff.instructions += instructions;
        ff.faults += faults;
        // Products and sums in this order: the clock rule's test adds them so.
        let cycles = ff.cpi * instructions as f64 + fault_cycles;
        ff.add_cycles(&mut core.stall_offset, cycles);
        if let Some(w) = core.window.as_mut() {
            // What was in flight finishes first (charged where it was
            // issued); then the window's clock moves with the core's.
            w.serialize(&mut core.stats, cycles);
        }
        Ok(())
    }
}

/// Whether `vaddr` is mapped; if so, marks its leaf accessed (and dirty on
/// a store) as the hardware would.
#[inline]
fn touch(pt: &mut PageTable, asid: Asid, vaddr: VirtAddr, write: bool, ext: &TlbExtensions) -> bool {
    let Some(slot) = pt.leaf_slot(vaddr) else { return false };
    if !pt.entry(slot).present() {
        return false;
    }
    let leaf_ext = if slot.level == 1 { pt.table_leaf_ext(slot.node) } else { 0 };
    if leaf_ext == 0 {
        pt.set_bits(slot, if write { ACCESSED | DIRTY } else { ACCESSED });
    } else {
        leaf_ext_step(leaf_ext, pt, slot.node, asid, vaddr, write, ext);
    }
    true
}

/// A leaf extension's last walk step, run for its side effects on the
/// page table (its references and counts go to scratch buffers).
#[cold]
#[inline(never)]
fn leaf_ext_step(
    bits: u64,
    pt: &mut PageTable,
    table: crate::paging::NodeId,
    asid: Asid,
    vaddr: VirtAddr,
    write: bool,
    ext: &TlbExtensions,
) {
    let (refs, stats) = (&mut RefBuf::default(), &mut CoreStats::default());
    crate::systems::walk_leaf_ext(bits, &mut LeafWalk { pt, table, asid, vaddr, write, ext, refs, stats });
}
