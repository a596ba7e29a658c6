//! The counters of one core's hardware model. At the hardware layer so
//! that the engine's core and MMU and a system's walk step (which counts
//! its walks) all count into them without importing each other.

use crate::units::PageSize;

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
    pub leaf_ext_walks: u64,
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
    /// The interval model's page-walk cycles (a part of
    /// `cycles_translation`; the fixed model derives its own at report,
    /// and keeps here only what memory tiers add beyond `memory.latency`).
    pub cycles_walk: f64,
    /// References served by each memory tier, reads and writes
    /// (`tier.NAME.*`; counted on machines with `machine.memory.tiers`).
    pub tier_reads: [u64; crate::phys::MAX_TIERS],
    pub tier_writes: [u64; crate::phys::MAX_TIERS],
    /// DRAM requests (`dram.*`; counted on machines with
    /// `machine.memory.dram`): by kind (0 reads, 1 writes) and row outcome
    /// (`hw::dram::RowOutcome`'s index), and by bank (sized at first use).
    pub dram_requests: [[u64; 3]; 2],
    pub dram_bank_requests: Vec<u64>,
    /// The interval model's reads that waited for their bank, the cycles
    /// they waited, and those cycles by bank.
    pub dram_queue_waits: u64,
    pub dram_queue_cycles: f64,
    pub dram_bank_queue_cycles: Vec<f64>,
    /// Under virtualization (`engine::walk2d`): guest page-table entries
    /// and EPT entries a 2D walk read (both also in `walk_mem_refs`).
    pub walk_guest_refs: u64,
    pub walk_host_refs: u64,
    /// EPT violations, and those of them a walk raised (each ends the
    /// walk, which restarts: one more walk); the others came from the
    /// guest zeroing a frame it had allocated.
    pub ept_violations: u64,
    pub ept_violations_walk: u64,
    pub vm_exits: u64,
    /// VM exits, the host's handling of EPT violations (its faults
    /// included), INVEPTs.
    pub cycles_virt: f64,
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
    /// One DRAM request (`write`: a writeback, or a store without caches)
    /// to `access`'s bank.
    #[inline]
    pub fn count_dram(&mut self, write: bool, access: crate::hw::dram::DramAccess, nr_banks: usize) {
        self.dram_requests[write as usize][access.outcome.index() % 3] += 1;
        let bank = access.bank as usize;
        if self.dram_bank_requests.len() <= bank {
            self.dram_bank_requests.resize(nr_banks.max(bank + 1), 0);
        }
        self.dram_bank_requests[bank] += 1;
    }
    pub fn record_fault(&mut self, size: PageSize, cycles: f64) {
        self.faults += 1;
        if size != PageSize::Size4K {
            self.faults_huge += 1;
        }
        self.fault_cycles.push(cycles as f32);
        self.cycles_faults += cycles;
    }
    /// Cycles beyond the base CPI: translation, data, faults, daemons,
    /// virtualization (0 on a native run, added last: the native sum keeps
    /// its bits).
    pub fn stall_cycles(&self) -> f64 {
        self.cycles_translation + self.cycles_data + self.cycles_faults + self.cycles_daemon + self.cycles_virt
    }
}
