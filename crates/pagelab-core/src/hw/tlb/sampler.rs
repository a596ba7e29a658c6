//! Sampling of L2 TLB misses, as Arm's Statistical Profiling Extension
//! gives them to Leshy (Elastic Translations): one sample every `period`
//! misses, recording the virtual address and what the miss's walk cost.
//!
//! The hardware counts misses down from `period`; the miss that reaches
//! zero is written to a buffer the OS reads (SPE's aux buffer, here
//! [`MissSamples`], which the kernel holds) and the count starts again.
//! So after `n` misses exactly `n / period` samples were taken: with a
//! period of 4, misses 4, 8, 12... are sampled.
//!
//! The walk's cost is recorded as its page-table references (what stage 1
//! knows when the miss happens): their cycles depend on the caches, which
//! the references meet only in stage 2. Leshy uses the latency only to
//! break ties between regions of equal miss counts, as the artifact's
//! `leshy` orders them.

use crate::units::{Asid, VirtAddr};

/// One sampled L2 TLB miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissSample {
    pub asid: Asid,
    pub vaddr: VirtAddr,
    /// Page-table references the walk made (the walk latency's proxy).
    pub walk_refs: u32,
}

/// One core's countdown of L2 TLB misses to the next sample.
#[derive(Debug, Clone, Copy)]
pub struct MissSampler {
    period: u64,
    countdown: u64,
}

impl MissSampler {
    /// A sampler taking one miss in `period` (at least 1).
    pub fn new(period: u64) -> MissSampler {
        let period = period.max(1);
        MissSampler { period, countdown: period }
    }

    /// Counts one miss; whether it is the one to sample.
    #[inline]
    pub fn on_miss(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.period;
            return true;
        }
        false
    }
}

/// Each core's countdown, the samples the cores took and the OS has not
/// read yet, and how many were taken since the statistics were last reset
/// (`leshy.samples`).
#[derive(Debug, Clone, Default)]
pub struct MissSamples {
    samplers: Vec<MissSampler>,
    pending: Vec<MissSample>,
    taken: u64,
}

impl MissSamples {
    /// Sampling one miss in `period` on each of `cores` cores.
    pub fn new(period: u64, cores: usize) -> MissSamples {
        MissSamples { samplers: vec![MissSampler::new(period); cores], ..Default::default() }
    }

    /// Counts one L2 TLB miss of `core`; whether it is to be sampled. A
    /// kernel that does not sample (a guest without Leshy beside one with
    /// it) has no samplers: never.
    #[inline]
    pub fn on_miss(&mut self, core: usize) -> bool {
        self.samplers.get_mut(core).is_some_and(MissSampler::on_miss)
    }

    pub fn push(&mut self, sample: MissSample) {
        self.pending.push(sample);
        self.taken += 1;
    }

    /// The samples not read yet, in the order they were taken.
    pub fn pending(&self) -> &[MissSample] {
        &self.pending
    }

    /// Takes the samples not read yet.
    pub fn drain(&mut self) -> Vec<MissSample> {
        std::mem::take(&mut self.pending)
    }

    pub fn taken(&self) -> u64 {
        self.taken
    }

    pub fn reset_taken(&mut self) {
        self.taken = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_miss_in_each_period_is_sampled_the_last_of_the_period() {
        // 10 misses at period 4: misses 4 and 8 (1-based) are taken, and
        // the countdown carries over: 2 more misses after 10 take the 12th.
        let mut s = MissSampler::new(4);
        assert_eq!((1..=10).filter(|_| s.on_miss()).count(), 2);
        let mut s = MissSampler::new(4);
        let which: Vec<u64> = (1..=12u64).filter(|_| s.on_miss()).collect();
        assert_eq!(which, [4, 8, 12]);
        let mut every = MissSampler::new(1);
        assert!((0..5).all(|_| every.on_miss()));
    }
}
