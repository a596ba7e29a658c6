//! The interval model's DRAM banks (`machine.memory.dram`): when each bank
//! of the memory is free again, as one core's window sees it.
//!
//! A bank serves one request at a time. A read holds it for what its row
//! outcome needs before the column read (`DramTiming::read_busy`: the
//! precharge and the activation, as needed) and for its burst; a write (a
//! writeback the LLC sent) for the same and the write recovery after it.
//! So two reads to different banks overlap, and to one bank the second
//! starts when the first has freed it: the wait adds to its latency. Its
//! column read and the trip back then take what they take unqueued (its
//! latency, `DramTiming::read`).
//!
//! Stage 2 tells the window, access by access, which of its references
//! reached DRAM ([`Banks::walk_ref`], [`Banks::data_ref`]) and which lines
//! its fills wrote back ([`Banks::write`]); the window serves them when it
//! times the access: a walk's references at their place in the walk (each
//! after the ones before it), the data reference when it issues, the
//! writebacks when the fill that evicted them arrives (the controller
//! serves reads first: a writeback never delays the read that caused it).
//!
//! What this leaves out (docs/timing.md, "Not modelled"): a bank serves
//! its requests in program order (but for one that fits, whole, before the
//! bank's latest: `serve`), not by the controller's choice (no FR-FCFS
//! reordering of row hits first);
//! each core has its own view of the banks' times (the row buffers are
//! shared, their occupancy is not); tRAS, tFAW, refresh and the data bus.

use crate::hw::core_stats::CoreStats;

/// One request for a bank: its bank, when it issues (for a walk's
/// reference: how long after the walk's first reference could issue), and
/// how long it holds the bank.
#[derive(Debug, Clone, Copy)]
struct Request {
    bank: u32,
    at: f64,
    busy: f64,
}

/// The banks' times and the current access's requests.
#[derive(Debug, Clone)]
pub struct Banks {
    /// Each bank's latest request: when it started and when it frees the
    /// bank (the core's cycles).
    held: Vec<(f64, f64)>,
    /// The current access's walk references that reached DRAM, in order.
    walk: Vec<Request>,
    /// Its data reference, if it reached DRAM.
    data: Option<Request>,
    /// Writebacks its fills (or a prefetch's) caused.
    writes: Vec<Request>,
}

impl Banks {
    pub fn new(nr_banks: usize) -> Banks {
        Banks { held: vec![(0.0, 0.0); nr_banks], walk: Vec::new(), data: None, writes: Vec::new() }
    }

    /// A walk reference of the current access reached `bank`; the walk's
    /// references before it take `offset` cycles.
    #[inline]
    pub fn walk_ref(&mut self, bank: u32, offset: f64, busy: f64) {
        self.walk.push(Request { bank, at: offset, busy });
    }

    /// The current access's data reference reached `bank`.
    #[inline]
    pub fn data_ref(&mut self, bank: u32, busy: f64) {
        self.data = Some(Request { bank, at: 0.0, busy });
    }

    /// A line written back to `bank` by the current access's fill.
    #[inline]
    pub fn write(&mut self, bank: u32, busy: f64) {
        self.writes.push(Request { bank, at: 0.0, busy });
    }

    /// Serves the walk's references, the first able to issue at `start`:
    /// how much later the walk ends for waiting on banks.
    pub(super) fn walk_delay(&mut self, start: f64, stats: &mut CoreStats) -> f64 {
        let mut delay = 0.0;
        for i in 0..self.walk.len() {
            let r = self.walk[i];
            delay += self.serve_read(r, start + r.at + delay, stats);
        }
        self.walk.clear();
        delay
    }

    /// Serves the data reference, able to issue at `at`: its wait.
    pub(super) fn data_wait(&mut self, at: f64, stats: &mut CoreStats) -> f64 {
        match self.data.take() {
            Some(r) => self.serve_read(r, at, stats),
            None => 0.0,
        }
    }

    /// The writebacks reach their banks at `at`.
    pub(super) fn write_back_at(&mut self, at: f64) {
        for i in 0..self.writes.len() {
            let r = self.writes[i];
            self.serve(r, at);
        }
        self.writes.clear();
    }

    /// Whether writebacks wait to be served (an access that hit the L1
    /// while a prefetch's fill evicted a dirty line).
    #[inline]
    pub(super) fn has_writes(&self) -> bool {
        !self.writes.is_empty()
    }

    /// A read able to start at `at`: its wait, counted.
    fn serve_read(&mut self, r: Request, at: f64, stats: &mut CoreStats) -> f64 {
        let wait = self.serve(r, at);
        if wait > 0.0 {
            stats.dram_queue_waits += 1;
            stats.dram_queue_cycles += wait;
            let bank = r.bank as usize;
            if stats.dram_bank_queue_cycles.len() <= bank {
                stats.dram_bank_queue_cycles.resize(self.held.len(), 0.0);
            }
            stats.dram_bank_queue_cycles[bank] += wait;
        }
        wait
    }

    /// Starts `r` when both it and its bank are ready; how long it waited.
    /// Requests come in program order, but an out-of-order core may issue
    /// a later one first (an independent load passing a dependent one): a
    /// request that is done with the bank before the bank's latest request
    /// starts takes it at once, in the gap.
    fn serve(&mut self, r: Request, at: f64) -> f64 {
        let held = &mut self.held[r.bank as usize];
        if at + r.busy <= held.0 {
            return 0.0;
        }
        let start = at.max(held.1);
        *held = (start, start + r.busy);
        start - at
    }
}
