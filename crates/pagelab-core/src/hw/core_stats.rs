//! The counters of one core's hardware model. At the hardware layer so
//! that the engine's core and MMU and a system's walk step (which counts
//! its walks) all count into them without importing each other.

use crate::stat::{Scope, Section, StatDecl, StatTable};
use crate::units::PageSize;

/// The most systems with a hardware extension (their walks are counted
/// by owner).
pub const MAX_LEAF_EXTENSIONS: usize = 8;

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
    /// Walks that ended at a leaf extension's PMD, by owner (the
    /// registry's order: `systems::LEAF_WALK_STATS` names them).
    pub leaf_ext_walks: [u64; MAX_LEAF_EXTENSIONS],
    pub pwc_hits: u64,
    pub dirty_assists: u64,
    pub faults: u64,
    pub faults_huge: u64,
    /// Cost of every fault, for the average and the tail.
    pub fault_cycles: Vec<f32>,
    /// `flow[entered][served][class]`: references that entered the hierarchy
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

/// What a core counts (`CoreStats`), by heading of docs/stats.md.
pub const STATS: &[StatTable] = &[
    StatTable {
        section: Section::Accesses,
        stats: &[
            StatDecl::count(
                "instructions",
                "instructions retired (each access carries the instructions since the previous one, including itself)",
            )
            .contract(),
            StatDecl::count("accesses", "data accesses: `loads + stores`").contract(),
            StatDecl::count("loads", "data loads (a read-modify-write is one load and one store)"),
            StatDecl::count("stores", "data stores"),
            StatDecl::count("ifetches", "instruction fetches (only traces produce them)"),
        ],
    },
    StatTable {
        section: Section::Translation,
        stats: &[
            StatDecl::count("dtlb.l1.misses", "data accesses that missed every L1 DTLB array (4 KiB, 2 MiB, 1 GiB)")
                .contract(),
            StatDecl::count("dtlb.l2.misses", "data accesses that also missed the L2 TLB (each starts a walk)")
                .contract(),
            StatDecl::count("itlb.l1.misses", "instruction fetches that missed every L1 ITLB array"),
            StatDecl::count("itlb.l2.misses", "instruction fetches that also missed the L2 TLB"),
            StatDecl::count(
                "walks",
                "page walks. A faulting access walks twice (the walk that finds no translation, and the walk when \
                 the instruction is re-executed after the fault), so `walks = dtlb.l2.misses + itlb.l2.misses + \
                 faults`",
            )
            .contract(),
            StatDecl::count(
                "walk.mem_refs",
                "page-table entries the walkers read (each a physical reference that enters the caches at \
                 `machine.walker.cache_level`), plus dirty-bit updates",
            )
            .contract(),
            StatDecl::count("walk.refs.l1d", "walk references the L1D served"),
            StatDecl::count("walk.refs.l2", "walk references the L2 served"),
            StatDecl::count("walk.refs.llc", "walk references the LLC served"),
            StatDecl::count("walk.refs.mem", "walk references memory served"),
            StatDecl::count(
                "walk.dirty_assists",
                "stores through a TLB entry whose dirty bit was clear: the hardware sets the PTE's D bit (one \
                 reference each)",
            ),
            StatDecl::count("pwc.hits", "walks that skipped at least one level thanks to the page-walk caches")
                .contract(),
        ],
    },
    StatTable {
        section: Section::Faults,
        stats: &[
            StatDecl::count("faults", "page faults handled").contract(),
            StatDecl::count("faults.huge", "faults that installed a 2 MiB or 1 GiB page").contract(),
        ],
    },
    StatTable {
        section: Section::Caches,
        stats: &[StatDecl::count("mem.accesses", "data and walk references served by memory")],
    },
    StatTable {
        section: Section::Time,
        stats: &[
            StatDecl::count(
                "cycles",
                "`cycles.base + .translation + .data + .faults + .daemon` (+ `.virt` in a virtualized run)",
            )
            .cycles()
            .contract(),
            StatDecl::count("cycles.base", "`machine.timing.base_cpi x instructions`").cycles(),
            StatDecl::count(
                "cycles.translation",
                "interval: the stall cycles that would vanish had the access the core waited for translated at \
                 once (docs/timing.md, \"Where a stall's cycles go\"): a stall of S cycles on an access whose L2 \
                 TLB lookup, wait for a walker and walk took T cycles adds min(S, T) (the meaning since \
                 2026-11-28; before, only the part of the stall that fell inside the translation's own interval, \
                 which put a hidden walk's cost in data); fixed: L2 TLB latency on each L1 TLB miss, the walk's \
                 fixed latency (page-walk-cache lookup + `machine.walker.latency`) on each walk, and the latency \
                 of every walk reference (from the level that served it) divided by `machine.timing.walk_mlp`",
            )
            .cycles()
            .contract(),
            StatDecl::count(
                "cycles.walk",
                "the page-walk part of `cycles.translation` (the Colored Huge Pages paper's C in Eq. 1): \
                 interval, the stall cycles that would vanish had the walk taken no time, at most the walk's \
                 length (its fixed latency and its references; not the L2 TLB lookup or the wait for a walker); \
                 fixed, each walk's fixed latency plus the walk references' cycles, i.e. translation without the \
                 L2 TLB lookups",
            )
            .cycles()
            .contract(),
            StatDecl::count(
                "cycles.data",
                "interval: the rest of each stall (the access's wait to issue behind a dependence, its wait for \
                 a fill buffer, its cache or memory access), a full store buffer, and stores draining at a \
                 serialising event; fixed: for each data access served below the L1D, (latency of that level - \
                 L1D latency) / `machine.timing.mlp`",
            )
            .cycles()
            .contract(),
            StatDecl::count("cycles.faults", "the cost of every fault").cycles().contract(),
            StatDecl::count(
                "cycles.daemon",
                "what daemons cost the workload: one `os.fault_cost.shootdown` per TLB shootdown a daemon \
                 (khugepaged, compaction) sends to its core",
            )
            .cycles(),
        ],
    },
    StatTable {
        section: Section::Virtualization,
        stats: &[
            StatDecl::count("walk.guest_refs", "guest page-table entries read (each at its host-physical address)")
                .contract(),
            StatDecl::count("walk.host_refs", "EPT entries read").contract(),
            StatDecl::count(
                "virt.ept_violations",
                "guest frames backed by the host, each an EPT violation (a VM exit and a host page fault)",
            )
            .contract(),
            StatDecl::count(
                "virt.ept_violations.walk",
                "those a walk met (each ends the walk, which restarts); the rest came from the guest zeroing \
                 frames its fault handler allocated (`virt.backing = \"zeroing\"`)",
            ),
            StatDecl::count("virt.vm_exits", "VM exits: today one per EPT violation").contract(),
            StatDecl::count(
                "cycles.virt",
                "VM exits (`virt.costs.vm_exit`), KVM's handling of EPT violations (`virt.costs.ept_violation`) \
                 with the host's page fault (`virt.host.fault_cost.*`), and one `virt.costs.invept` per host change \
                 per core of the VM. Part of `cycles`",
            )
            .cycles()
            .contract(),
        ],
    },
    StatTable {
        section: Section::Tiers,
        stats: &[
            StatDecl::count(
                "tier.NAME.reads",
                "references served by tier NAME's memory: loads, stores' reads for ownership, instruction \
                 fetches, walk references of both dimensions",
            ),
            StatDecl::count(
                "tier.NAME.writes",
                "writes to tier NAME: dirty lines the LLC wrote back, and without caches every store",
            ),
            StatDecl::count(
                "tier.NAME.accesses",
                "`reads + writes`. With caches, the reads of all tiers sum to `mem.accesses` plus the instruction \
                 fetches memory served, and the writes to `cache.llc.writebacks`",
            )
            .contract(),
        ],
    },
    StatTable {
        section: Section::Dram,
        stats: &[
            StatDecl::count(
                "dram.reads",
                "reads that reached DRAM: loads, stores' reads for ownership, instruction fetches, walk references \
                 of both dimensions served by memory (with caches: `mem.accesses` plus the instruction fetches \
                 memory served)",
            )
            .contract(),
            StatDecl::count("dram.reads.row_hits", "those reads that found their row open in their bank"),
            StatDecl::count("dram.reads.row_misses", "those reads that found their bank closed"),
            StatDecl::count("dram.reads.row_conflicts", "those reads that found another row open"),
            StatDecl::count(
                "dram.writes",
                "writes: the dirty lines the LLC wrote back (with caches: `cache.llc.writebacks`), and without \
                 caches every store",
            )
            .contract(),
            StatDecl::count("dram.writes.row_hits", "those writes that found their row open"),
            StatDecl::count("dram.writes.row_misses", "those writes that found their bank closed"),
            StatDecl::count("dram.writes.row_conflicts", "those writes that found another row open"),
            StatDecl::count("dram.row_hit_rate", "row hits (reads and writes) over requests")
                .ratio()
                .scope(Scope::Run)
                .contract(),
            StatDecl::count(
                "dram.queue.waits",
                "the interval model's reads (data or walk references) that found their bank held by an earlier \
                 request; 0 under the fixed model",
            ),
            StatDecl::count(
                "dram.queue.cycles",
                "the cycles they waited (inside `cycles.data`, or the walk's `cycles.translation`, when the core \
                 waited for them)",
            )
            .cycles(),
            StatDecl::count(
                "dram.bankN.requests",
                "requests to bank N (channel, rank and bank bits concatenated, the channel's highest), summed over \
                 the cores",
            )
            .machine(),
            StatDecl::count("dram.bankN.queue_cycles", "the cycles reads waited for bank N").cycles().machine(),
        ],
    },
];
