//! One core: its workload, its MMU, its counters, and the buffer of
//! physical references that the translation stage hands to the caches.

use super::mmu::Mmu;
use crate::units::{PageSize, PhysAddr};
use crate::workload::{Batch, Workload};

/// What a physical reference is: the caches' own kind (load, store, walk,
/// instruction fetch), also what `--export-phys` writes.
pub use crate::hw::cache::RefKind;

/// The references of one quantum, in program order: walk references
/// before the data reference of the access that caused them.
#[derive(Debug, Default)]
pub struct RefBuf {
    pub addrs: Vec<u64>,
    pub kinds: Vec<RefKind>,
}

impl RefBuf {
    #[inline]
    pub fn push(&mut self, addr: PhysAddr, kind: RefKind) {
        self.addrs.push(addr.raw());
        self.kinds.push(kind);
    }
    pub fn clear(&mut self) {
        self.addrs.clear();
        self.kinds.clear();
    }
    pub fn len(&self) -> usize {
        self.addrs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
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
