//! One core: its workload, its MMU, its counters, and the buffer of
//! physical references that the translation stage hands to the caches.

use super::mmu::Mmu;
use crate::units::{PageSize, PhysAddr};
use crate::workload::{Batch, Workload};

/// What a physical reference is: the caches' own kind (load, store, walk,
/// instruction fetch), also what `--export-phys` writes.
pub use crate::hw::cache::RefKind;

/// The references of one quantum, in program order: walk references
/// before the data reference of the access that caused them. Each is one
/// word, its kind in the top two bits above the physical address (one
/// push per reference: the translation stage makes several per access).
#[derive(Debug, Default)]
pub struct RefBuf {
    refs: Vec<u64>,
}

/// Where a reference's kind sits in its word (physical addresses stay far
/// below 2^62: memory is at most 1 TiB).
const KIND_SHIFT: u32 = 62;
const ADDR_MASK: u64 = (1 << KIND_SHIFT) - 1;

impl RefBuf {
    #[inline]
    pub fn push(&mut self, addr: PhysAddr, kind: RefKind) {
        debug_assert!(addr.raw() <= ADDR_MASK);
        self.refs.push(addr.raw() | (kind.index() as u64) << KIND_SHIFT);
    }
    pub fn clear(&mut self) {
        self.refs.clear();
    }
    pub fn len(&self) -> usize {
        self.refs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
    /// The physical address and kind of reference `j`.
    #[inline]
    pub fn get(&self, j: usize) -> (u64, RefKind) {
        unpack(self.refs[j])
    }
    /// The address of reference `j`, if there is one (a lookahead).
    #[inline]
    pub fn addr_at(&self, j: usize) -> Option<u64> {
        self.refs.get(j).map(|&r| r & ADDR_MASK)
    }
    /// The kind of every reference, in order.
    #[inline]
    pub fn kinds(&self) -> impl Iterator<Item = RefKind> + '_ {
        self.refs.iter().map(|&r| RefKind::ALL[(r >> KIND_SHIFT) as usize])
    }
}

#[inline]
fn unpack(r: u64) -> (u64, RefKind) {
    (r & ADDR_MASK, RefKind::ALL[(r >> KIND_SHIFT) as usize])
}

/// Counters of one core. Cache counters are kept here, from the level that
/// served each reference, so that warm-up can reset one core's view.
#[derive(Debug, Default, Clone)]
pub struct CoreStats {
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    pub dtlb_l1_misses: u64,
    pub dtlb_l2_misses: u64,
    pub itlb_l1_misses: u64,
    pub itlb_l2_misses: u64,
    pub walks: u64,
    pub walk_mem_refs: u64,
    /// Walks that ended at a colored-huge-page PMD.
    pub chp_walks: u64,
    pub pwc_hits: u64,
    pub dirty_assists: u64,
    pub faults: u64,
    pub faults_huge: u64,
    /// Cost of every fault, for the average and the tail.
    pub fault_cycles: Vec<f32>,
    /// flow[entered][served][class]: references that entered the hierarchy
    /// at one level (0 = L1 .. 3 = memory) and were served at another;
    /// class 0 = data, 1 = walk, 2 = instruction fetch.
    pub flow: [[[u64; 3]; 4]; 4],
    pub cycles_translation: f64,
    pub cycles_data: f64,
    pub cycles_faults: f64,
    pub cycles_daemon: f64,
}

impl CoreStats {
    #[inline]
    pub fn tlb_l1_misses(&mut self, instr: bool) {
        if instr {
            self.itlb_l1_misses += 1;
        } else {
            self.dtlb_l1_misses += 1;
        }
    }
    #[inline]
    pub fn tlb_l2_misses(&mut self, instr: bool) {
        if instr {
            self.itlb_l2_misses += 1;
        } else {
            self.dtlb_l2_misses += 1;
        }
    }
    pub fn record_fault(&mut self, size: PageSize, cycles: f64) {
        self.faults += 1;
        if size != PageSize::Size4K {
            self.faults_huge += 1;
        }
        self.fault_cycles.push(cycles as f32);
        self.cycles_faults += cycles;
    }
    /// Cycles beyond the base CPI: translation, data, faults, daemons.
    pub fn stall_cycles(&self) -> f64 {
        self.cycles_translation + self.cycles_data + self.cycles_faults + self.cycles_daemon
    }
}

/// A core and what runs on it.
pub struct Core {
    pub id: usize,
    pub asid: crate::units::Asid,
    pub mmu: Mmu,
    pub workload: Box<dyn Workload>,
    pub batch: Batch,
    /// Next access of `batch` to run.
    pub pos: usize,
    /// Next event of `batch` to apply.
    pub next_event: usize,
    /// The workload has no more batches.
    pub exhausted: bool,
    pub stats: CoreStats,
    /// Instructions retired over the whole run (not reset by warm-up).
    pub retired: u64,
    /// Accesses run over the whole run (not reset by warm-up).
    pub ran: u64,
    /// Stall cycles before the last statistics reset, so that the clock
    /// keeps running through warm-up.
    pub stall_offset: f64,
    pub refs: RefBuf,
    /// Whether the workload has handed out its first measured batch (past
    /// its initialisation pass).
    pub measuring: bool,
    /// Whether the last quantum missed enough to make prefetching pay.
    pub prefetch_translation: bool,
    pub prefetch_caches: bool,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").field("id", &self.id).field("workload", &self.workload.name()).finish()
    }
}

impl Core {
    /// This core's simulated time in cycles since the start.
    pub fn clock(&self, base_cpi: f64) -> f64 {
        base_cpi * self.retired as f64 + self.stall_offset + self.stats.stall_cycles()
    }

    /// Whether this core has nothing left to run.
    pub fn done(&self) -> bool {
        self.exhausted && self.pos >= self.batch.accesses.len() && self.next_event >= self.batch.events.len()
    }
}
