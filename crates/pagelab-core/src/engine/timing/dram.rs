//! What a DRAM request costs (`machine.memory.dram`), in core cycles.
//!
//! `machine.memory.latency` stays the load-to-use latency of a read that
//! reaches memory and finds another row open in its bank: the common case
//! of a latency benchmark's random reads under an open-page policy, which
//! is what the presets' sources measured. It is the uncore's fixed trip
//! (core to controller and back, the caches' lookups on the way) plus the
//! DIMMs' precharge, activation, column read and burst. The row buffer
//! decides the DIMMs' part only:
//!
//! | outcome | load-to-use latency |
//! |---|---|
//! | row conflict (another row open) | `latency` |
//! | row miss (the bank closed) | `latency - tRP` |
//! | row hit (its row open) | `latency - tRP - tRCD` |
//!
//! each timing converted from the DIMMs' clock (`tck_ns`) at
//! `machine.freq_ghz`. A read holds its bank for the part before its
//! column read and its burst (hit: the burst; miss: tRCD + burst;
//! conflict: tRP + tRCD + burst); a write for the same plus the write
//! recovery (`wr_ns`). The interval model queues requests on these
//! (`timing::banks`); the fixed model has no time, so it charges the
//! latencies alone: a data read `(latency - L1D latency) / mlp`, a walk
//! read `latency / walk_mlp`, as for one memory. Writebacks change the
//! row buffers under both and cost no latency of their own.

use super::banks::Banks;
use super::Timing;
use crate::config::MachineConfig;
use crate::engine::RefKind;
use crate::hw::cache::CacheHierarchy;
use crate::hw::core_stats::CoreStats;
use crate::hw::dram::{Dram, RowOutcome};

/// One reference of stage 2, as the DRAM needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct DramRef {
    pub addr: u64,
    pub kind: RefKind,
    /// Memory served it (it is a DRAM request).
    pub memory: bool,
    /// A machine without caches: a store is a write.
    pub no_caches: bool,
    /// For a walk's reference: the walk's references before it take this
    /// long (where it issues in the walk).
    pub walk_offset: f64,
}
/// The cycles of each row outcome.
#[derive(Debug, Clone)]
pub struct DramTiming {
    /// Load-to-use latency of a read, by outcome.
    read: [f64; 3],
    /// Cycles a read and a write hold their bank, by outcome.
    read_busy: [f64; 3],
    write_busy: [f64; 3],
    /// The fixed model's cycles of a data read and a walk read.
    data: [f64; 3],
    walk: [f64; 3],
}

impl DramTiming {
    /// Whether the machine runs the row-buffer model: asked for, on one
    /// memory (validation refuses it with tiers).
    pub fn active(m: &MachineConfig) -> bool {
        m.memory.dram.enabled && m.memory.tiers.is_empty()
    }

    /// `None` without the model. `m` must have been validated (the
    /// latency holds the DIMMs' part of a conflict).
    pub fn new(m: &MachineConfig, t: &Timing) -> Option<Box<DramTiming>> {
        if !Self::active(m) {
            return None;
        }
        let d = &m.memory.dram;
        let cycles = |clocks: u32| d.core_cycles(clocks, m.freq_ghz);
        let (rp, rcd, burst) = (cycles(d.rp), cycles(d.rcd), cycles(d.burst));
        let latency = t.latency[super::MEMORY];
        let read = [latency - rp - rcd, latency - rp, latency];
        let read_busy = [burst, rcd + burst, rp + rcd + burst];
        let recovery = d.wr_ns * m.freq_ghz;
        Some(Box::new(DramTiming {
            read,
            read_busy,
            write_busy: read_busy.map(|busy| busy + recovery),
            // The same quotients as `Timing::new`'s, so a conflict costs
            // exactly what one memory's reference does.
            data: read.map(|x| (x - t.latency[0]) / t.mlp),
            walk: read.map(|x| x / t.walk_mlp),
        }))
    }

    /// The DRAM requests around reference `r`: first the lines its fill
    /// wrote back (each opens its row, and under the interval model holds
    /// its bank once the fill arrives: [`Banks::write`]), then `r` itself
    /// if memory served it: its row outcome, and under the interval model
    /// its request for its bank.
    #[inline]
    pub(super) fn requests(
        &self,
        d: &mut Dram,
        caches: Option<&mut CacheHierarchy>,
        mut banks: Option<&mut Banks>,
        stats: &mut CoreStats,
        r: DramRef,
    ) -> Option<RowOutcome> {
        if let Some(c) = caches {
            while let Some(line) = c.take_writeback() {
                let x = d.access(line);
                stats.count_dram(true, x, d.nr_banks());
                if let Some(b) = banks.as_deref_mut() {
                    b.write(x.bank, self.write_busy(x.outcome));
                }
            }
        }
        if !r.memory {
            return None;
        }
        let x = d.access(r.addr);
        let write = r.no_caches && r.kind == RefKind::Store;
        stats.count_dram(write, x, d.nr_banks());
        if let Some(b) = banks {
            match r.kind {
                RefKind::Walk => b.walk_ref(x.bank, r.walk_offset, self.read_busy(x.outcome)),
                _ if write => b.data_ref(x.bank, self.write_busy(x.outcome)),
                _ => b.data_ref(x.bank, self.read_busy(x.outcome)),
            }
        }
        Some(x.outcome)
    }

    /// Load-to-use latency of a read that found `o`.
    #[inline(always)]
    pub fn read(&self, o: RowOutcome) -> f64 {
        self.read[o.index() % 3]
    }

    #[inline(always)]
    pub fn read_busy(&self, o: RowOutcome) -> f64 {
        self.read_busy[o.index() % 3]
    }

    #[inline(always)]
    pub fn write_busy(&self, o: RowOutcome) -> f64 {
        self.write_busy[o.index() % 3]
    }

    /// The fixed model's cycles of a data read that found `o`.
    #[inline(always)]
    pub fn data_cycles(&self, o: RowOutcome) -> f64 {
        self.data[o.index() % 3]
    }

    /// The fixed model's cycles of a walk read that found `o`.
    #[inline(always)]
    pub fn walk_cycles(&self, o: RowOutcome) -> f64 {
        self.walk[o.index() % 3]
    }
}
