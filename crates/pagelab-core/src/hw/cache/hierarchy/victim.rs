//! The victim-filled LLC (`machine.cache.llc.fill = "victim"`), as on
//! Skylake-SP, whose L3 "is non-inclusive; mainly, it holds cache lines that
//! have been evicted from the cores' L2 caches" and "largely contains data
//! not present in any L2", so that a socket's cache capacity is the sum of
//! its L2s and L3 (Cornell Virtual Workshop, "Cluster Architecture: Last
//! level cache", on Skylake and Cascade Lake Xeons):
//!
//! - A line that misses the L2 and the LLC comes from memory into the L2 and
//!   the L1 only: the LLC is not filled.
//! - Every line evicted from an L2, clean or dirty, is inserted into the LLC
//!   (a dirty one still counts in the L2's `writebacks`), replacing a line in
//!   the evicting core's ways (`way_masks`, like CAT). A dirty LLC victim is
//!   written to memory (the LLC's `writebacks`), as with fill on miss.
//! - An LLC hit moves the line to the L2: it leaves the LLC, carrying its
//!   dirty bit. pagelab's choice: the sources above say the L3 mostly holds
//!   what no L2 holds, but not what hardware does with a line several cores
//!   read (Intel does not document it); a line one core moved to its L2 is
//!   a memory access for another core until it is evicted again.
//! - The prefetchers' fills take the same path (into the L2, not the LLC);
//!   a page-walk reference that enters at the LLC
//!   (`machine.walker.cache_level = "llc"`) has no L2 to go to, so it
//!   fills the LLC on a miss and leaves it there on a hit.
//!
//! Statistics keep their meaning: an LLC access is a demand reference that
//! missed the L2, a miss one that went to memory.

use super::{CacheHierarchy, HitLevel};
use crate::hw::cache::level::{Evicted, SetRef};
use crate::hw::cache::stats::Level;

impl CacheHierarchy {
    /// The LLC of a victim-filled hierarchy for `line`, which missed the L2
    /// set `l2_set` of `core` (`k`: the reference kind's index), then the L2
    /// fill. Out of line: the fill-on-miss path does not carry it.
    #[inline(never)]
    pub(super) fn fetch_past_victim_llc<const DEMAND: bool>(
        &mut self,
        core: usize,
        line: u64,
        k: usize,
        l2_set: SetRef,
    ) -> HitLevel {
        if DEMAND {
            self.locate_llc_counted(line);
        }
        let moved = self.llc.invalidate(line);
        let llc_stats = self.stats.level_mut(core, Level::Llc);
        if DEMAND {
            llc_stats.accesses[k] += 1;
            if moved.is_none() {
                llc_stats.misses[k] += 1;
            }
        }
        let l2 = &mut self.l2[core];
        let mask = l2.full_mask();
        let dirty = moved.is_some_and(|copy| copy.dirty);
        if let Some(victim) = l2.fill_in(l2_set, line, dirty, mask) {
            self.l2_victim_to_llc(core, victim);
        }
        if moved.is_some() {
            HitLevel::Llc
        } else {
            HitLevel::Memory
        }
    }

    /// Inserts a line the L2 of `core` evicted into the LLC (clean or
    /// dirty); a dirty one counts as the L2's writeback.
    #[inline(never)]
    pub(super) fn l2_victim_to_llc(&mut self, core: usize, victim: Evicted) {
        if victim.dirty {
            self.stats.level_mut(core, Level::L2).writebacks += 1;
        }
        self.insert_into_llc(core, victim.line, victim.dirty);
    }
}

#[cfg(test)]
mod tests {
    use crate::hw::cache::config::{CacheConfig, CacheHierarchyConfig, LlcConfig, LlcFill};
    use crate::hw::cache::hierarchy::{CacheHierarchy, HitLevel};
    use crate::hw::cache::stats::{Level, RefKind};
    use crate::units::{ByteSize, PhysAddr};

    /// L1D: 1 set x 1 way; L2: 1 set x 2 ways; LLC: 1 set x 2 ways (or
    /// `llc_ways`); LRU, one core unless said.
    fn victim_cfg(llc_ways: u32) -> CacheHierarchyConfig {
        let level = |ways: u32| CacheConfig { size: ByteSize(u64::from(ways) * 64), ways, ..CacheConfig::l1d() };
        CacheHierarchyConfig {
            l1d: level(1),
            l2: level(2),
            llc: LlcConfig {
                size: ByteSize(u64::from(llc_ways) * 64),
                ways: llc_ways,
                fill: LlcFill::Victim,
                ..LlcConfig::default()
            },
            ..Default::default()
        }
    }

    fn at(line: u64) -> PhysAddr {
        PhysAddr::new(line * 64)
    }

    /// (accesses, misses, writebacks) of `level`.
    fn counts(h: &CacheHierarchy, level: Level) -> (u64, u64, u64) {
        let s = h.stats().total(level);
        (s.total_accesses(), s.total_misses(), s.writebacks)
    }

    #[test]
    fn misses_bypass_the_llc_and_l2_victims_fill_it() {
        let mut h = CacheHierarchy::new(&victim_cfg(2), 1).unwrap();
        let mut load = |line| h.access(0, at(line), RefKind::Load);
        // A, B: from memory into L2 (and L1); the LLC stays empty.
        assert_eq!(load(0xA), HitLevel::Memory);
        assert_eq!(load(0xB), HitLevel::Memory);
        // C: L2 {A, B} evicts A (LRU) into the LLC: LLC {A}.
        assert_eq!(load(0xC), HitLevel::Memory);
        // A: misses L1 and L2, hits the LLC and moves to the L2, evicting B
        // into the LLC: L2 {C, A}, LLC {B}.
        assert_eq!(load(0xA), HitLevel::Llc);
        let (llc, l2) = (
            |h: &CacheHierarchy, l| h.contains(0, Level::Llc, at(l)),
            |h: &CacheHierarchy, l| h.contains(0, Level::L2, at(l)),
        );
        assert!(!llc(&h, 0xA) && llc(&h, 0xB) && !llc(&h, 0xC));
        assert!(l2(&h, 0xA) && l2(&h, 0xC) && !l2(&h, 0xB));
        // B: LLC hit, moves up; L2 evicts C into the LLC: LLC {C}.
        assert_eq!(h.access(0, at(0xB), RefKind::Load), HitLevel::Llc);
        assert!(llc(&h, 0xC) && !llc(&h, 0xB));
        // L1 5 accesses 5 misses; L2 5/5; LLC 5 accesses (every L2 miss), 3
        // misses (A, B, C first time); nothing dirty, no writebacks.
        assert_eq!(counts(&h, Level::L1d), (5, 5, 0));
        assert_eq!(counts(&h, Level::L2), (5, 5, 0));
        assert_eq!(counts(&h, Level::Llc), (5, 3, 0));
    }

    #[test]
    fn a_dirty_line_keeps_its_dirt_through_the_llc_and_reaches_memory_once() {
        let mut h = CacheHierarchy::new(&victim_cfg(1), 1).unwrap();
        // Store A: dirty in L1. B pushes A out of the 1-line L1 into the L2
        // (a write there: L2 {A dirty, B}; the L1's writeback).
        h.access(0, at(0xA), RefKind::Store);
        h.access(0, at(0xB), RefKind::Load);
        assert_eq!(counts(&h, Level::L1d).2, 1);
        // C: the L2 evicts its LRU line, B (A's writeback refreshed A after
        // B's fill), into the LLC, clean. LLC {B}.
        h.access(0, at(0xC), RefKind::Load);
        assert!(h.contains(0, Level::Llc, at(0xB)) && !h.llc().is_dirty(0xB));
        // D: L2 {A, C} evicts dirty A into the 1-way LLC (the L2's
        // writeback), which pushes clean B to nowhere: no memory write.
        h.access(0, at(0xD), RefKind::Load);
        assert!(h.llc().is_dirty(0xA));
        assert_eq!((counts(&h, Level::L2).2, counts(&h, Level::Llc).2), (1, 0));
        // A again: an LLC hit moves it to the L2 still dirty, and the L2
        // evicts C into the LLC. L2 {D, A}, LLC {C}.
        assert_eq!(h.access(0, at(0xA), RefKind::Load), HitLevel::Llc);
        assert!(h.l2(0).is_dirty(0xA) && !h.contains(0, Level::Llc, at(0xA)));
        // E evicts D (clean) into the LLC replacing C; F evicts A (dirty)
        // into the LLC replacing D; line 0x10 evicts E into the LLC, which
        // pushes dirty A to memory: the one memory write.
        for line in [0xE, 0xF] {
            h.access(0, at(line), RefKind::Load);
        }
        assert_eq!(counts(&h, Level::Llc).2, 0);
        assert!(h.llc().is_dirty(0xA));
        h.access(0, at(0x10), RefKind::Load);
        assert_eq!(counts(&h, Level::Llc).2, 1, "dirty A written to memory");
        assert_eq!(counts(&h, Level::L2).2, 2, "A left the L2 dirty twice");
    }

    #[test]
    fn l2_victims_fill_the_evicting_cores_ways() {
        // Two cores, LLC 1 set x 4 ways: core 0 fills ways 0-1, core 1 ways 2-3.
        let mut cfg = victim_cfg(4);
        cfg.llc.way_masks = vec![0b0011, 0b1100];
        let mut h = CacheHierarchy::new(&cfg, 2).unwrap();
        for line in 0..10 {
            h.access(0, at(line), RefKind::Load);
            h.access(1, at(100 + line), RefKind::Load);
        }
        // Each core's L2 holds its last 2 lines; lines 6, 7 and 106, 107
        // were its last two victims, in its own two ways.
        for (line, ways) in [(6, 0..2), (7, 0..2), (106, 2..4), (107, 2..4)] {
            let way = h.llc().way_of(line).expect("in the LLC");
            assert!(ways.contains(&way), "line {line} in way {way}");
        }
        // Core 1 hits core 0's victim in the LLC: it moves to core 1's L2.
        assert_eq!(h.access(1, at(7), RefKind::Load), HitLevel::Llc);
        assert!(!h.contains(0, Level::Llc, at(7)));
    }

    #[test]
    fn walks_entering_at_the_llc_fill_it() {
        let mut h = CacheHierarchy::new(&victim_cfg(2), 1).unwrap();
        assert_eq!(h.access_from(0, at(5), RefKind::Walk, 2), HitLevel::Memory);
        assert_eq!(h.access_from(0, at(5), RefKind::Walk, 2), HitLevel::Llc);
        assert!(h.contains(0, Level::Llc, at(5)), "no L2 to move to");
    }

    #[test]
    fn fill_on_miss_is_unchanged() {
        // The first test's sequence with fill = "miss": the LLC, filled on
        // every miss, holds the same two lines as the L2 and serves nothing,
        // where the victim LLC served A and B.
        let mut cfg = victim_cfg(2);
        cfg.llc.fill = LlcFill::Miss;
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        let served: Vec<_> = [0xA, 0xB, 0xC, 0xA, 0xB].map(|l| h.access(0, at(l), RefKind::Load)).to_vec();
        // LLC {A, B}; C evicts A; A evicts B; B evicts C.
        assert_eq!(served, [HitLevel::Memory; 5]);
        assert_eq!(counts(&h, Level::Llc), (5, 5, 0));
    }
}
