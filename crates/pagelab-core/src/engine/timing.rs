//! The analytical timing model.
//!
//! cycles = base + translation + data + faults + daemon, per core:
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

use crate::config::{MachineConfig, WalkerCacheLevel};

/// Where a reference was served: 0 = L1, 1 = L2, 2 = LLC, 3 = memory.
pub const MEMORY: usize = 3;

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
    /// `data_cycles` and `walk_cycles` of each level, computed once: the
    /// per-reference loop looks them up instead of dividing (the same
    /// quotients, so the same sums).
    data_by_level: [f64; 4],
    walk_by_level: [f64; 4],
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
            data_by_level: [0.0; 4],
            walk_by_level: [0.0; 4],
        };
        for level in 0..4 {
            t.data_by_level[level] = (t.latency[level] - t.latency[0]) / t.mlp;
            t.walk_by_level[level] = t.latency[level] / t.walk_mlp;
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_follow_the_model() {
        let mut m = MachineConfig::default();
        m.timing.mlp = 2.0;
        let t = Timing::new(&m);
        let l = t.latency;
        assert_eq!(t.data_cycles(0), 0.0);
        assert_eq!(t.data_cycles(MEMORY), (l[3] - l[0]) / 2.0);
        assert_eq!(t.walk_cycles(1), l[1]);
        assert_eq!(t.walk_entry, 0);
    }
}
