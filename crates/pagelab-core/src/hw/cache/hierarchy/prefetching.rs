//! The hierarchy's hardware prefetchers (`hw::prefetch`): after a demand
//! load or store, the L1D's next-line and stride prefetchers and the L2's
//! streamer learn from it and may fetch lines. The streamer learns from
//! every request that reaches the L2: demand L1D misses and the L1D
//! prefetchers' requests. A separate entry point,
//! [`CacheHierarchy::access_prefetching`], so that a machine without
//! prefetchers runs the plain [`CacheHierarchy::access_from`] untouched.

use super::{CacheHierarchy, HitLevel};
use crate::hw::cache::stats::{Level, RefKind};
use crate::hw::prefetch::{PrefetchConfig, Prefetchers};
use crate::units::PhysAddr;

/// Most lines one demand access may prefetch: next-line (1), stride and
/// stream (16 each, their configured maximum).
const MAX_CANDIDATES: usize = 33;

impl CacheHierarchy {
    /// Switches the prefetchers of `cfg` on (nothing when it has none on).
    pub fn set_prefetchers(&mut self, cfg: &PrefetchConfig) {
        self.prefetch = cfg.clone();
        self.prefetchers.clear();
        if !cfg.any() || !self.enabled {
            return;
        }
        let lines = |c: &crate::hw::cache::Cache| c.nr_sets() * c.ways();
        for core in 0..self.l1d.len() {
            let (l1d, l2) = (lines(&self.l1d[core]), lines(&self.l2[core]));
            self.prefetchers.push(Prefetchers::new(cfg, l1d, l2, self.line_shift));
        }
    }

    /// Whether any prefetcher runs.
    pub fn prefetching(&self) -> bool {
        !self.prefetchers.is_empty()
    }

    /// [`access_from`](Self::access_from), then the prefetchers: a demand
    /// load or store entering at the L1D (`entry` 0) trains them and
    /// triggers their fetches; `pc` is its program-counter tag (the stride
    /// prefetcher's key). Walk references and instruction fetches pass
    /// untouched.
    #[inline]
    pub fn access_prefetching(&mut self, core: usize, addr: PhysAddr, kind: RefKind, entry: u8, pc: u16) -> HitLevel {
        let served = self.access_from(core, addr, kind, entry);
        if entry == 0 && matches!(kind, RefKind::Load | RefKind::Store) && !self.prefetchers.is_empty() {
            self.after_demand(core, addr.raw() >> self.line_shift, served, pc);
        }
        served
    }

    /// Usefulness of the demand access to `line`, training, and the fetches.
    #[inline(never)]
    fn after_demand(&mut self, core: usize, line: u64, served: HitLevel, pc: u16) {
        let cfg = &self.prefetch;
        let pf = &mut self.prefetchers[core];
        // A demand miss on a prefetched, unused line: it left unused.
        if pf.l1d.take(line) {
            let s = self.stats.level_mut(core, Level::L1d);
            if served == HitLevel::L1 {
                s.prefetch_useful += 1;
            } else {
                s.prefetch_useless += 1;
            }
        }
        if served != HitLevel::L1 && pf.l2.take(line) {
            let s = self.stats.level_mut(core, Level::L2);
            if served == HitLevel::L2 {
                s.prefetch_useful += 1;
            } else {
                s.prefetch_useless += 1;
            }
        }
        let page_lines_shift = 12u32.saturating_sub(self.line_shift);
        let same_page = |a: u64| cfg.cross_pages || a >> page_lines_shift == line >> page_lines_shift;
        let mut l1 = [0u64; MAX_CANDIDATES];
        let mut n1 = 0;
        if cfg.next_line && served != HitLevel::L1 && same_page(line + 1) {
            l1[n1] = line + 1;
            n1 += 1;
        }
        if cfg.stride {
            if let Some(stride) = pf.stride.train(pc, line) {
                for k in 1..=cfg.stride_degree as i64 {
                    let target = line.wrapping_add_signed(stride * k);
                    if same_page(target) && n1 < MAX_CANDIDATES {
                        l1[n1] = target;
                        n1 += 1;
                    }
                }
            }
        }
        let run = if cfg.stream && served != HitLevel::L1 { pf.stream.train(line, !cfg.cross_pages) } else { None };
        if let Some(run) = run {
            for k in 0..run.count {
                self.prefetch_into_l2(core, run.first.wrapping_add_signed(run.dir * k as i64));
            }
        }
        for &target in &l1[..n1] {
            self.prefetch_into_l1(core, target);
        }
    }

    /// Brings `line` into `core`'s L1D (through the L2 and LLC, as a miss
    /// would) unless it is there already. The request reaches the L2, so
    /// the streamer learns from it too (Intel's does).
    fn prefetch_into_l1(&mut self, core: usize, line: u64) {
        let set = self.l1d[core].locate(line);
        if self.l1d[core].probe(line) {
            return;
        }
        let from = self.fetch_below_l1::<false>(core, line, RefKind::Load);
        self.fill_l1(core, Level::L1d, set, line, false);
        // A line the streamer brought into the L2 serves this request.
        if self.prefetchers[core].l2.take(line) {
            let s = self.stats.level_mut(core, Level::L2);
            if from == HitLevel::L2 {
                s.prefetch_useful += 1;
            } else {
                s.prefetch_useless += 1;
            }
        }
        if self.prefetch.stream {
            let within_page = !self.prefetch.cross_pages;
            if let Some(run) = self.prefetchers[core].stream.train(line, within_page) {
                for k in 0..run.count {
                    self.prefetch_into_l2(core, run.first.wrapping_add_signed(run.dir * k as i64));
                }
            }
        }
        self.stats.level_mut(core, Level::L1d).prefetch_issued += 1;
        let pf = &mut self.prefetchers[core];
        if pf.l1d.take(line) {
            // Prefetched before and gone unused since.
            self.stats.level_mut(core, Level::L1d).prefetch_useless += 1;
        }
        if let Some(old) = self.prefetchers[core].l1d.add(line) {
            if !self.l1d[core].probe(old) {
                self.stats.level_mut(core, Level::L1d).prefetch_useless += 1;
            }
        }
    }

    /// Brings `line` into `core`'s L2 (and the LLC) unless it is there.
    fn prefetch_into_l2(&mut self, core: usize, line: u64) {
        if self.l2[core].probe(line) {
            return;
        }
        self.fetch_below_l1::<false>(core, line, RefKind::Load);
        self.stats.level_mut(core, Level::L2).prefetch_issued += 1;
        if self.prefetchers[core].l2.take(line) {
            self.stats.level_mut(core, Level::L2).prefetch_useless += 1;
        }
        if let Some(old) = self.prefetchers[core].l2.add(line) {
            if !self.l2[core].probe(old) {
                self.stats.level_mut(core, Level::L2).prefetch_useless += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cache::CacheHierarchyConfig;

    /// The default Skylake hierarchy (L1D 64 sets x 8 ways) with only the
    /// named prefetchers on; the streamer 2 lines per lookup, 4 ahead.
    fn with(next_line: bool, stride: bool, stream: bool) -> CacheHierarchy {
        let mut h = CacheHierarchy::new(&CacheHierarchyConfig::default(), 1).unwrap();
        let cfg =
            PrefetchConfig { next_line, stride, stream, stream_degree: 2, stream_distance: 4, ..Default::default() };
        h.set_prefetchers(&cfg);
        h
    }

    fn load(h: &mut CacheHierarchy, line: u64, pc: u16) -> HitLevel {
        h.access_prefetching(0, PhysAddr::new(line * 64), RefKind::Load, 0, pc)
    }

    /// (issued, useful, useless) at `level`, and its demand misses.
    fn counts(h: &CacheHierarchy, level: Level) -> (u64, u64, u64, u64) {
        let s = h.stats().total(level);
        (s.prefetch_issued, s.prefetch_useful, s.prefetch_useless, s.total_misses())
    }

    #[test]
    fn the_stride_prefetcher_follows_one_instructions_stride() {
        // Lines 0, 4, .., 60 of one page from one instruction: the stride
        // repeats at 8, so 8 .. 56 each fetch the next (12 .. 60): 13
        // prefetches, each then hit; 60 would fetch 64, on the next page.
        let mut h = with(false, true, false);
        let served: Vec<_> = (0..16).map(|k| load(&mut h, 4 * k, 5)).collect();
        assert!(served[..3].iter().all(|&l| l == HitLevel::Memory));
        assert!(served[3..].iter().all(|&l| l == HitLevel::L1));
        assert_eq!(counts(&h, Level::L1d), (13, 13, 0, 3));
        assert_eq!(h.stats().total(Level::L1d).total_accesses(), 16, "prefetches are not accesses");
    }

    #[test]
    fn the_next_line_prefetcher_fetches_after_each_miss() {
        // 0 misses and fetches 1, which hits; 2 misses and fetches 3...
        let mut h = with(true, false, false);
        for line in 0..8 {
            load(&mut h, line, 1);
        }
        assert_eq!(counts(&h, Level::L1d), (4, 4, 0, 4));
    }

    #[test]
    fn the_streamer_runs_ahead_in_the_l2() {
        // Lines 0 ..= 16, every one an L1D miss. 2 confirms the direction
        // and fetches 3, 4; 3 fetches 5, 6; 4 fetches 7, 8; from 5 on the
        // stream is 4 ahead and fetches one line per lookup (9 .. 20):
        // 18 prefetches, and 3 .. 16 hit them in the L2.
        let mut h = with(false, false, true);
        for line in 0..=16 {
            load(&mut h, line, 1);
        }
        assert_eq!(counts(&h, Level::L2), (18, 14, 0, 3));
        assert_eq!(counts(&h, Level::L1d), (0, 0, 0, 17));
    }

    #[test]
    fn a_prefetched_line_evicted_unused_is_useless() {
        // 0 fetches 1 into L1D set 1; eight misses on lines 64k + 1 fill
        // set 1's eight ways and push 1 out unused; the demand miss on 1
        // finds it so (and fetches 2).
        let mut h = with(true, false, false);
        load(&mut h, 0, 1);
        for k in 1..=8 {
            load(&mut h, 64 * k + 1, 1);
        }
        assert_eq!(load(&mut h, 1, 1), HitLevel::L2);
        assert_eq!(counts(&h, Level::L1d), (10, 0, 1, 10));
    }

    #[test]
    fn walk_references_neither_train_nor_trigger() {
        let mut h = with(true, true, true);
        for line in 0..32 {
            h.access_prefetching(0, PhysAddr::new(line * 64), RefKind::Walk, 0, 1);
        }
        assert_eq!(counts(&h, Level::L1d).0 + counts(&h, Level::L2).0, 0);
    }

    #[test]
    fn switched_off_nothing_runs() {
        let mut h = CacheHierarchy::new(&CacheHierarchyConfig::default(), 1).unwrap();
        h.set_prefetchers(&PrefetchConfig { enabled: false, ..Default::default() });
        assert!(!h.prefetching());
        for line in 0..16 {
            load(&mut h, line, 1);
        }
        assert_eq!(counts(&h, Level::L1d), (0, 0, 0, 16));
    }
}
