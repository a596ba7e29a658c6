//! The memory tiers' latencies (`machine.memory.tiers`): which tier a
//! host-physical address is in, and what a reference served there costs.
//!
//! Only a run with tiers builds a [`TierTiming`]; its stage 2 is
//! `timed_stage::<_, _, true, _, false>` (chosen once per quantum by
//! `Simulation::timed_stages::<true, false>`), so a run without tiers runs its stages of
//! before, with no lookup. The tiers lie in list order from address 0
//! (`phys::tiers`), so the lookup is a count of the boundaries at or below
//! the address: three compares, no branch.
//!
//! What each reference that reaches memory is charged:
//! - a read (a load, an instruction fetch, a walk reference of either
//!   dimension, a store's read for ownership): its tier's read latency, in
//!   place of `machine.memory.latency`, through the same formulas
//!   (`(latency - L1 latency) / mlp` for data, `latency / walk_mlp` for a
//!   walk reference under the fixed model; the latency itself in the
//!   interval model's window);
//! - a write: with caches, the writeback of a dirty line the LLC evicts.
//!   A writeback is off the load-to-use path, which is why a machine of one
//!   tier charges it nothing; a tier whose writes are slower than its reads
//!   is charged the difference, `write_latency - read_latency` (0 if
//!   negative): the fixed model adds it / mlp to the data cycles; the
//!   interval model adds it to the data latency of the access whose fill
//!   caused the eviction (the fill waits for the victim's slow write to
//!   leave). Without caches every store is itself a memory write and is
//!   charged its tier's write latency.
//!
//! So tiers whose read and write latencies all equal `memory.latency` give
//! today's cycles to the last bit (tests), and the difference between two
//! runs is, under the fixed model, the sum over slow-tier references of the
//! latency difference / mlp.

use super::Timing;
use crate::config::MachineConfig;
use crate::phys::MAX_TIERS;
use crate::units::PAGE_SHIFT;

/// The tiers of a run, their boundaries and their per-reference cycles.
#[derive(Debug, Clone)]
pub struct TierTiming {
    /// The tiers' names, in order (the statistics' `tier.NAME.*`).
    pub names: Vec<String>,
    /// The first byte address past tier i, for i < MAX_TIERS - 1; `u64::MAX`
    /// past the last tier.
    ends: [u64; MAX_TIERS - 1],
    /// Load-to-use latency of a read and of a write, by tier.
    read: [f64; MAX_TIERS],
    write: [f64; MAX_TIERS],
    /// The fixed model's cycles, computed once: a data read, a walk read, a
    /// data write (no caches), and a writeback beyond a read.
    data_read: [f64; MAX_TIERS],
    walk_read: [f64; MAX_TIERS],
    data_write: [f64; MAX_TIERS],
    writeback: [f64; MAX_TIERS],
}

impl TierTiming {
    /// `None` for a machine without `machine.memory.tiers`.
    pub fn new(m: &MachineConfig, t: &Timing) -> Option<Box<TierTiming>> {
        let tiers = &m.memory.tiers;
        if tiers.is_empty() {
            return None;
        }
        let mut tt = TierTiming {
            names: tiers.iter().map(|x| x.name.clone()).collect(),
            ends: [u64::MAX; MAX_TIERS - 1],
            read: [0.0; MAX_TIERS],
            write: [0.0; MAX_TIERS],
            data_read: [0.0; MAX_TIERS],
            walk_read: [0.0; MAX_TIERS],
            data_write: [0.0; MAX_TIERS],
            writeback: [0.0; MAX_TIERS],
        };
        let mut end = 0u64;
        for (i, x) in tiers.iter().enumerate() {
            end += x.size.bytes();
            if i < MAX_TIERS - 1 && i + 1 < tiers.len() {
                tt.ends[i] = end;
            }
            tt.read[i] = x.read_latency as f64;
            tt.write[i] = x.write_latency as f64;
            // The same quotients as `Timing::new`'s, so equal latencies give
            // equal sums.
            tt.data_read[i] = (tt.read[i] - t.latency[0]) / t.mlp;
            tt.walk_read[i] = tt.read[i] / t.walk_mlp;
            tt.data_write[i] = (tt.write[i] - t.latency[0]) / t.mlp;
            tt.writeback[i] = (tt.write[i] - tt.read[i]).max(0.0) / t.mlp;
        }
        Some(Box::new(tt))
    }

    /// The tier of host-physical byte address `addr`.
    #[inline(always)]
    pub fn tier_of(&self, addr: u64) -> usize {
        self.ends.iter().map(|&end| (addr >= end) as usize).sum()
    }

    /// The tier of a frame (4 KiB) by its number.
    pub fn tier_of_frame(&self, pfn: u64) -> usize {
        self.tier_of(pfn << PAGE_SHIFT)
    }

    /// Latency of a read (or, with `write`, a write) served by tier `tier`.
    #[inline(always)]
    pub fn latency(&self, tier: usize, write: bool) -> f64 {
        if write {
            self.write[tier & (MAX_TIERS - 1)]
        } else {
            self.read[tier & (MAX_TIERS - 1)]
        }
    }

    /// The fixed model's cycles of a data reference served by `tier`.
    #[inline(always)]
    pub fn data_cycles(&self, tier: usize, write: bool) -> f64 {
        if write {
            self.data_write[tier & (MAX_TIERS - 1)]
        } else {
            self.data_read[tier & (MAX_TIERS - 1)]
        }
    }

    /// The fixed model's cycles of a walk reference served by `tier`.
    #[inline(always)]
    pub fn walk_cycles(&self, tier: usize) -> f64 {
        self.walk_read[tier & (MAX_TIERS - 1)]
    }

    /// A writeback to `tier` beyond a read: the fixed model's cycles
    /// (`mlp` applied), or with `raw` the latency difference itself.
    #[inline(always)]
    pub fn writeback_cycles(&self, tier: usize, raw: bool) -> f64 {
        let tier = tier & (MAX_TIERS - 1);
        if raw {
            (self.write[tier] - self.read[tier]).max(0.0)
        } else {
            self.writeback[tier]
        }
    }
}

const _: () = assert!(MAX_TIERS.is_power_of_two());
