//! One core: its workload, its MMU, its counters, and the buffer of
//! physical references that the translation stage hands to the caches.

use super::mmu::Mmu;
use crate::workload::{Batch, Workload};

pub use crate::hw::core_stats::CoreStats;
pub use crate::hw::refs::{RefBuf, RefKind};

/// A core and what runs on it.
pub struct Core {
    pub id: usize,
    /// The VM this core is a vCPU of (0 in a native run and with one VM).
    pub vm: usize,
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
    /// Cycles of the clock outside the current statistics: the stalls
    /// before the last reset (so that the clock keeps running through
    /// warm-up) and the functional fast-forwards' cycles.
    pub stall_offset: f64,
    pub refs: RefBuf,
    /// Whether the workload has handed out its first measured batch (past
    /// its initialisation pass).
    pub measuring: bool,
    /// Whether the last quantum missed enough to make prefetching pay.
    pub prefetch_translation: bool,
    pub prefetch_caches: bool,
    /// The interval model's window (None under the fixed model).
    pub window: Option<super::timing::window::Window>,
    /// Whether the current batch is a workload's functional fast-forward.
    pub functional_batch: bool,
    /// Whether this core's accesses now run functionally (through the OS
    /// only): its batch is a fast-forward, or sampling fast-forwards.
    pub functional: bool,
    /// What the functional fast-forwards ran, and their clock's pace.
    pub ff: super::functional::FastForward,
    /// The programs that run after the current one (`workload.after`).
    pub queued: super::programs::Queue,
    /// The requests' cycles, when one of its programs serves requests.
    pub requests: Option<Box<super::requests::Requests>>,
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

    /// The end of this core's next stage call, which would run to `end`:
    /// at its next request, if its program serves requests
    /// (`requests::Requests::cut`). Called between the stage calls of a
    /// core that runs in detail; its program's init pass has no requests.
    pub fn cut_for_requests(&mut self, end: usize, base_cpi: f64) -> usize {
        if self.requests.is_none() || self.workload.batch_is_init() {
            return end;
        }
        let clock = self.clock(base_cpi);
        let (accesses, pos) = (&self.batch.accesses, self.pos);
        self.requests.as_mut().map_or(end, |r| r.cut(accesses, pos, end, clock))
    }

    /// Whether this core has nothing left to run.
    pub fn done(&self) -> bool {
        self.exhausted
            && self.queued.is_empty()
            && self.pos >= self.batch.accesses.len()
            && self.next_event >= self.batch.events.len()
    }
}
