//! The timing models. `machine.timing.model` chooses:
//!
//! - `"interval"` (the default): the interval core model of
//!   [`window`], fed per access by the two stages ([`stage`]);
//! - `"fixed"`: the first-order model below, kept bit for bit as it was
//!   (with `machine.prefetch.enabled = false` and the DRAM model off,
//!   today's statistics; with the DRAM model a memory reference costs its
//!   row outcome's latency, `dram`).
//!
//! Both keep cycles = base + translation + data + faults + daemon, and
//! report `cycles.walk`, the part of translation spent in page walks (the
//! Colored Huge Pages paper's C in Eq. 1).
//!
//! The fixed model, per core:
//! - base = base_cpi x instructions: everything that hits the L1 TLB and
//!   the L1 data cache is inside the base CPI;
//! - data = for each load or store served below the L1, (latency of the
//!   level that served it - L1 latency) / mlp;
//! - translation = L2 TLB latency on an L1 TLB miss, page-walk-cache
//!   latency and the full latency of every walk reference (from the level
//!   that served it) on an L2 TLB miss, divided by walk_mlp;
//! - faults = the configured cost of each fault by kind;
//! - daemon = what daemons cost this core: the shootdowns they send it.
//!
//! Latencies are load-to-use from the core (the memory latency includes
//! the trip through the caches). With the caches disabled, every reference
//! is charged the memory latency: a machine without caches, not a machine
//! with perfect ones.
//!
//! A known discrepancy, kept because the fixed model's numbers are a
//! contract: the page-walk-cache latency is added once per walk, undivided
//! by walk_mlp (`engine::mmu`), while only the walk references are divided.
//! With the default walk_mlp of 1 the two readings agree.

pub mod banks;
pub mod dram;
#[cfg(test)]
mod dram_tests;
pub(super) mod stage;
#[cfg(test)]
mod tests;
pub mod tiers;
pub mod window;

use crate::config::{MachineConfig, TimingModel, WalkerCacheLevel};
use crate::hw::core_stats::CoreStats;

/// Where a reference was served: 0 = L1, 1 = L2, 2 = LLC, 3 = memory.
pub const MEMORY: usize = 3;

/// Whether walks that miss the L1D hold its fill buffers: asked for
/// (`machine.ooo.walk_fill_buffers`) and walks entering at the L1D (those
/// entering below it never take its buffers). The window's rule and the
/// stage variant's both.
pub(super) fn walks_hold_fill_buffers(m: &MachineConfig) -> bool {
    m.ooo.walk_fill_buffers && m.walker.cache_level == WalkerCacheLevel::L1d
}

/// Built by [`Timing::new`] only: the per-level cycle tables are derived
/// from the latencies and MLPs there (changing a field afterwards would not
/// update them).
#[derive(Debug, Clone)]
pub struct Timing {
    /// Load-to-use latency of each level (L1, L2, LLC, memory).
    pub latency: [f64; 4],
    pub base_cpi: f64,
    pub mlp: f64,
    pub walk_mlp: f64,
    /// Level at which walk references enter the hierarchy.
    pub walk_entry: usize,
    pub caches: bool,
    pub model: TimingModel,
    /// The page-walk-cache latency, charged once per walk.
    pub walk_latency: f64,
    /// Walks hold L1D fill buffers (the interval model with
    /// `machine.ooo.walk_fill_buffers`, walks entering at the L1D): stage 2
    /// then runs its variant that notes which walks miss the L1D.
    pub walk_fill_buffers: bool,
    /// `data_cycles` and `walk_cycles` of each level, computed once: the
    /// per-reference loop looks them up instead of dividing (the same
    /// quotients, so the same sums).
    data_by_level: [f64; 4],
    walk_by_level: [f64; 4],
    /// The memory tiers' latencies, on a machine with
    /// `machine.memory.tiers` only (`tiers`).
    pub tiers: Option<Box<tiers::TierTiming>>,
    /// The row outcomes' cycles, on a machine with `machine.memory.dram`
    /// only (`dram`).
    pub dram: Option<Box<dram::DramTiming>>,
}

impl Timing {
    pub fn new(m: &MachineConfig) -> Timing {
        let c = &m.cache;
        let mut t = Timing {
            latency: [c.l1d.latency as f64, c.l2.latency as f64, c.llc.latency as f64, m.memory.latency as f64],
            base_cpi: m.timing.base_cpi,
            mlp: m.timing.mlp,
            walk_mlp: m.timing.walk_mlp,
            walk_entry: match m.walker.cache_level {
                WalkerCacheLevel::L1d => 0,
                WalkerCacheLevel::L2 => 1,
                WalkerCacheLevel::Llc => 2,
                WalkerCacheLevel::None => MEMORY,
            },
            caches: c.enabled,
            model: m.timing.model,
            walk_latency: m.walk_latency() as f64,
            walk_fill_buffers: m.timing.model == TimingModel::Interval && walks_hold_fill_buffers(m),
            data_by_level: [0.0; 4],
            walk_by_level: [0.0; 4],
            tiers: None,
            dram: None,
        };
        for level in 0..4 {
            t.data_by_level[level] = (t.latency[level] - t.latency[0]) / t.mlp;
            t.walk_by_level[level] = t.latency[level] / t.walk_mlp;
        }
        t.tiers = tiers::TierTiming::new(m, &t);
        t.dram = dram::DramTiming::new(m, &t);
        t
    }

    /// Extra cycles of a data access served at `level`.
    #[inline]
    pub fn data_cycles(&self, level: usize) -> f64 {
        self.data_by_level[level]
    }

    /// Cycles of a walk reference served at `level`.
    #[inline]
    pub fn walk_cycles(&self, level: usize) -> f64 {
        self.walk_by_level[level]
    }

    /// `cycles.walk` of a core: the interval model keeps it as it charges;
    /// under the fixed model it is the translation cycles without the L2
    /// TLB lookups: the page-walk-cache latency of each walk and the walk
    /// references' cycles, counted from where each reference was served.
    pub fn walk_cycles_of(&self, s: &CoreStats) -> f64 {
        if self.model == TimingModel::Interval {
            return s.cycles_walk;
        }
        let refs: f64 = (0..4)
            .map(|served| (0..4).map(|entry| s.flow[entry][served][1]).sum::<u64>() as f64 * self.walk_cycles(served))
            .sum();
        let cycles = s.walks as f64 * self.walk_latency + refs;
        // With tiers or the row-buffer model, the stage keeps in
        // `cycles_walk` what memory's walk references cost beyond
        // `walk_cycles(MEMORY)` each.
        if self.tiers.is_some() || self.dram.is_some() {
            cycles + s.cycles_walk
        } else {
            cycles
        }
    }
}
