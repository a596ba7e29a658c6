//! The data-cache hierarchy: private L1D (and L1I) and L2 per core, one
//! shared, possibly sliced and partitioned, LLC.
//!
//! An access looks the levels up from the top; the first hit ends the
//! lookup. On the way back every level that missed is filled, bottom up (LLC,
//! then L2, then L1), and the victim of each fill is handled at once:
//!
//! - Non-inclusive LLC (default): no level ever touches another except by
//!   fills and writebacks. An L2 or LLC miss allocates the line in that level
//!   even when a copy sits elsewhere. This is pycachesim's hierarchy, so a
//!   read-only LRU stream gives its miss counts exactly.
//! - Inclusive LLC: an LLC eviction back-invalidates the line in every
//!   core's L1D, L1I and L2. Filling the LLC first means a line being brought
//!   in is never the one invalidated.
//! - Write-back: a store dirties the L1 copy only (lower levels are filled
//!   clean, as by a read-for-ownership). A dirty victim is written to the next
//!   level as a write access: a hit dirties the copy there (and refreshes its
//!   replacement state, as pycachesim's store does), a miss allocates it there
//!   (write-allocate at every level). A dirty LLC victim, or a dirty copy that
//!   back-invalidation removed from above, is a memory write, counted in the
//!   LLC's `writebacks`. Writebacks are not demand accesses: they do not count
//!   as accesses or misses.
//! - Way masks: an LLC fill for core c (demand or writeback) replaces a line
//!   in c's ways only; any core hits in any way.
//! - Victim fill (`llc.fill = "victim"`): misses bypass the LLC, the L2's
//!   evictions fill it, a hit moves the line up (`victim.rs`).

mod prefetching;
mod victim;

use super::config::{CacheHierarchyConfig, LlcFill};
use super::level::{Cache, Evicted, SetRef};
use super::stats::{CacheStats, Level, RefKind};
use crate::error::{Error, Result};
use crate::hw::prefetch::{PrefetchConfig, Prefetchers};
use crate::units::PhysAddr;

/// Where a reference was satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum HitLevel {
    L1 = 0,
    L2 = 1,
    Llc = 2,
    Memory = 3,
}

impl HitLevel {
    pub const ALL: [HitLevel; 4] = [HitLevel::L1, HitLevel::L2, HitLevel::Llc, HitLevel::Memory];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn name(self) -> &'static str {
        match self {
            HitLevel::L1 => "l1",
            HitLevel::L2 => "l2",
            HitLevel::Llc => "llc",
            HitLevel::Memory => "memory",
        }
    }
}

/// The configuration prefix of the hierarchy, named in errors.
const KEY: &str = "machine.cache";

/// Caches of every core plus the shared LLC, with their statistics.
#[derive(Debug, Clone)]
pub struct CacheHierarchy {
    enabled: bool,
    inclusive: bool,
    /// The LLC is filled by the L2's evictions (`victim.rs`), not on a miss.
    victim_fill: bool,
    line_shift: u32,
    l1d: Vec<Cache>,
    /// Empty when the L1I is disabled.
    l1i: Vec<Cache>,
    l2: Vec<Cache>,
    llc: Cache,
    /// LLC fill mask of each core.
    fill_masks: Vec<u64>,
    /// Cycles by [`HitLevel`] index.
    latency: [u32; 4],
    stats: CacheStats,
    /// The hardware prefetchers of each core (empty when off) and their
    /// configuration (see `prefetching`).
    prefetchers: Vec<Prefetchers>,
    prefetch: PrefetchConfig,
    /// The physical addresses of the lines written back to memory since the
    /// last [`CacheHierarchy::take_writeback`], kept only when asked for
    /// ([`CacheHierarchy::log_writebacks`]: memory tiers charge a write by
    /// its tier); `None` otherwise, so a dirty eviction costs one test more.
    writeback_log: Option<Vec<u64>>,
}

impl CacheHierarchy {
    /// The host bytes [`CacheHierarchy::with_seed`] allocates for each
    /// level's arrays over `cores` cores, by the level's size key
    /// (`machine.cache.llc.size`...): the host-memory budget's count.
    pub fn host_bytes(cfg: &CacheHierarchyConfig, cores: usize) -> Vec<(String, u64)> {
        let each = |g, kind| Cache::host_bytes(g, kind);
        let cores = cores as u64;
        let mut levels = vec![
            ("l1d", cores.saturating_mul(each(cfg.l1d.geometry(), cfg.l1d.policy))),
            ("l2", cores.saturating_mul(each(cfg.l2.geometry(), cfg.l2.policy))),
            ("llc", each(cfg.llc.geometry(), cfg.llc.policy)),
        ];
        if cfg.l1i.enabled {
            levels.push(("l1i", cores.saturating_mul(each(cfg.l1i.geometry(), cfg.l1i.policy))));
        }
        levels.into_iter().map(|(level, bytes)| (format!("{KEY}.{level}.size"), bytes)).collect()
    }

    /// The hierarchy of `cores` cores, random policies seeded with 0.
    pub fn new(cfg: &CacheHierarchyConfig, cores: usize) -> Result<CacheHierarchy> {
        CacheHierarchy::with_seed(cfg, cores, 0)
    }

    /// The hierarchy of `cores` cores; `seed` seeds the random policies
    /// (each cache gets its own stream derived from it).
    pub fn with_seed(cfg: &CacheHierarchyConfig, cores: usize, seed: u64) -> Result<CacheHierarchy> {
        cfg.validate(KEY)?;
        if cores == 0 {
            return Err(Error::config("machine.cores", "a machine needs at least one core"));
        }
        let fill_masks = cfg.llc.fill_masks(&format!("{KEY}.llc"), cores)?;
        let private = |level: Level, core: usize| seed_of(seed, level, core);
        let l1d = (0..cores).map(|c| Cache::new(cfg.l1d.geometry(), cfg.l1d.policy, private(Level::L1d, c)));
        let l2 = (0..cores).map(|c| Cache::new(cfg.l2.geometry(), cfg.l2.policy, private(Level::L2, c)));
        let l1i_cores = if cfg.l1i.enabled { cores } else { 0 };
        let l1i = (0..l1i_cores).map(|c| Cache::new(cfg.l1i.geometry(), cfg.l1i.policy, private(Level::L1i, c)));
        let llc = Cache::new(cfg.llc.geometry(), cfg.llc.policy, private(Level::Llc, 0));
        let llc_latency = if cfg.enabled { cfg.llc.latency } else { 0 };
        Ok(CacheHierarchy {
            enabled: cfg.enabled,
            inclusive: cfg.llc.inclusive,
            victim_fill: cfg.llc.fill == LlcFill::Victim,
            line_shift: cfg.l1d.line.trailing_zeros(),
            stats: CacheStats::new(cores, llc.slices() as usize, cfg.l1i.enabled),
            l1d: l1d.collect(),
            l1i: l1i.collect(),
            l2: l2.collect(),
            llc,
            fill_masks,
            latency: [cfg.l1d.latency, cfg.l2.latency, cfg.llc.latency, llc_latency],
            prefetchers: Vec::new(),
            prefetch: PrefetchConfig { enabled: false, ..PrefetchConfig::default() },
            writeback_log: None,
        })
    }

    /// Keeps the address of every line written back to memory, for
    /// [`CacheHierarchy::take_writeback`].
    pub fn log_writebacks(&mut self) {
        self.writeback_log = Some(Vec::new());
    }

    /// A line written back to memory since the last call (the latest
    /// first), as a physical address; `None` when there is none left.
    #[inline]
    pub fn take_writeback(&mut self) -> Option<u64> {
        self.writeback_log.as_mut()?.pop()
    }

    /// Simulates one reference of `core` to `addr` and returns where it hit.
    /// With the hierarchy disabled every reference is `Memory` (uncounted);
    /// with the L1I disabled every instruction fetch is an (uncounted) `L1`
    /// hit.
    // Always inlined: the fixed model's cache stage called it out of line
    // once the prefetching path called it too (+10% instructions on stream).
    #[inline(always)]
    pub fn access(&mut self, core: usize, addr: PhysAddr, kind: RefKind) -> HitLevel {
        if !self.enabled {
            return HitLevel::Memory;
        }
        let line = addr.raw() >> self.line_shift;
        let (level1, l1) = if kind == RefKind::IFetch {
            match self.l1i.get_mut(core) {
                Some(l1i) => (Level::L1i, l1i),
                None => return HitLevel::L1,
            }
        } else {
            (Level::L1d, &mut self.l1d[core])
        };
        let is_write = kind == RefKind::Store;
        let l1_set = l1.locate(line);
        let hit = l1.lookup_in(l1_set, line, is_write);
        let stats = self.stats.level_mut(core, level1);
        stats.accesses[kind.index()] += 1;
        if hit {
            return HitLevel::L1;
        }
        stats.misses[kind.index()] += 1;
        let from = self.fetch_below_l1::<true>(core, line, kind);
        self.fill_l1(core, level1, l1_set, line, is_write);
        from
    }

    /// A reference that enters the hierarchy below the L1: the page
    /// walker's references when `machine.walker.cache_level` is `l2`
    /// (entry 1) or `llc` (entry 2). Levels above the entry are neither
    /// looked up nor filled. Entry 0 is an ordinary access. Inlined into
    /// the engine's per-reference loop (most references hit the L1; always,
    /// because LLVM left it out of line in the interval model's stage).
    #[inline(always)]
    pub fn access_from(&mut self, core: usize, addr: PhysAddr, kind: RefKind, entry: u8) -> HitLevel {
        if !self.enabled {
            return HitLevel::Memory;
        }
        let line = addr.raw() >> self.line_shift;
        match entry {
            0 => self.access(core, addr, kind),
            1 => self.fetch_below_l1::<true>(core, line, kind),
            _ => self.fetch_llc_only(core, line, kind),
        }
    }

    /// The LLC alone: looked up, and filled on a miss.
    fn fetch_llc_only(&mut self, core: usize, line: u64, kind: RefKind) -> HitLevel {
        let k = kind.index();
        let set = self.locate_llc_counted(line);
        let hit = self.llc.lookup_in(set, line, false);
        let stats = self.stats.level_mut(core, Level::Llc);
        stats.accesses[k] += 1;
        if hit {
            return HitLevel::Llc;
        }
        stats.misses[k] += 1;
        if let Some(victim) = self.llc.fill_in(set, line, false, self.fill_masks[core]) {
            self.llc_evicted(core, victim);
        }
        HitLevel::Memory
    }

    /// Looks the L2 and LLC up for a line the L1 missed, and fills them.
    /// Kept out of line, so that the L1 hit path inlined into the engine's
    /// loop stays small. A prefetch (`DEMAND` false) takes the same path
    /// without counting accesses and misses.
    #[inline(never)]
    fn fetch_below_l1<const DEMAND: bool>(&mut self, core: usize, line: u64, kind: RefKind) -> HitLevel {
        let k = kind.index();
        let l2_set = self.l2[core].locate(line);
        let l2_hit = self.l2[core].lookup_in(l2_set, line, false);
        let l2_stats = self.stats.level_mut(core, Level::L2);
        if DEMAND {
            l2_stats.accesses[k] += 1;
        }
        if l2_hit {
            return HitLevel::L2;
        }
        if DEMAND {
            l2_stats.misses[k] += 1;
        }
        if self.victim_fill {
            return self.fetch_past_victim_llc::<DEMAND>(core, line, k, l2_set);
        }

        let llc_set = if DEMAND { self.locate_llc_counted(line) } else { self.llc.locate(line) };
        let llc_hit = self.llc.lookup_in(llc_set, line, false);
        let llc_stats = self.stats.level_mut(core, Level::Llc);
        if DEMAND {
            llc_stats.accesses[k] += 1;
        }
        if !llc_hit {
            if DEMAND {
                llc_stats.misses[k] += 1;
            }
            if let Some(victim) = self.llc.fill_in(llc_set, line, false, self.fill_masks[core]) {
                self.llc_evicted(core, victim);
            }
        }
        let l2 = &mut self.l2[core];
        let l2_mask = l2.full_mask();
        if let Some(victim) = l2.fill_in(l2_set, line, false, l2_mask) {
            if victim.dirty {
                self.stats.level_mut(core, Level::L2).writebacks += 1;
                self.write_back_to_llc(core, victim.line);
            }
        }
        if llc_hit {
            HitLevel::Llc
        } else {
            HitLevel::Memory
        }
    }

    /// The LLC set of a demand access to `line`, counting the access in its
    /// slice (one hash for both).
    #[inline]
    fn locate_llc_counted(&mut self, line: u64) -> SetRef {
        let (set, slice) = self.llc.locate_in_slice(line);
        if let Some(n) = self.stats.llc_slice_accesses.get_mut(slice as usize) {
            *n += 1;
        }
        set
    }

    #[inline]
    fn fill_l1(&mut self, core: usize, level1: Level, set: SetRef, line: u64, is_write: bool) {
        let l1 = if level1 == Level::L1i { &mut self.l1i[core] } else { &mut self.l1d[core] };
        let mask = l1.full_mask();
        if let Some(victim) = l1.fill_in(set, line, is_write, mask) {
            if victim.dirty {
                self.stats.level_mut(core, level1).writebacks += 1;
                self.write_back_to_l2(core, victim.line);
            }
        }
    }

    #[inline(always)]
    fn write_back_to_l2(&mut self, core: usize, line: u64) {
        let l2 = &mut self.l2[core];
        let mask = l2.full_mask();
        if let (_, Some(victim)) = l2.access(line, true, mask) {
            if victim.dirty {
                self.stats.level_mut(core, Level::L2).writebacks += 1;
                self.write_back_to_llc(core, victim.line);
            } else if self.victim_fill {
                self.l2_victim_to_llc(core, victim);
            }
        }
    }

    /// Writes a dirty L2 victim of `core` into the LLC.
    fn write_back_to_llc(&mut self, core: usize, line: u64) {
        self.insert_into_llc(core, line, true);
    }

    /// Writes `line` into the LLC for `core`: a dirty L2 victim (a write),
    /// or, with victim fill, a clean one.
    #[inline(always)]
    fn insert_into_llc(&mut self, core: usize, line: u64, dirty: bool) {
        let (hit, victim) = self.llc.access(line, dirty, self.fill_masks[core]);
        // Inclusion: whatever the L2 holds, the LLC holds.
        debug_assert!(hit || !self.inclusive, "inclusive LLC lacked written-back line {line:#x}");
        if let Some(victim) = victim {
            self.llc_evicted(core, victim);
        }
    }

    /// An LLC fill for `core` pushed `victim` out. (Always inlined, as LLVM
    /// did before the writeback log's test: out of line it cost gups with
    /// caches 0.7% more instructions.)
    #[inline(always)]
    fn llc_evicted(&mut self, core: usize, victim: Evicted) {
        let mut dirty = victim.dirty;
        if self.inclusive {
            dirty |= self.back_invalidate(victim.line);
        }
        if dirty {
            self.stats.level_mut(core, Level::Llc).writebacks += 1;
            if self.writeback_log.is_some() {
                self.log_writeback(victim.line);
            }
        }
    }

    /// Out of line and cold: only machines with memory tiers log writebacks,
    /// and the LLC's fill path stays as it was without it.
    #[cold]
    #[inline(never)]
    fn log_writeback(&mut self, line: u64) {
        if let Some(log) = self.writeback_log.as_mut() {
            log.push(line << self.line_shift);
        }
    }

    /// Removes `line` from every private cache; whether any copy was dirty.
    fn back_invalidate(&mut self, line: u64) -> bool {
        let mut dirty = false;
        for cache in self.l1d.iter_mut().chain(self.l1i.iter_mut()).chain(self.l2.iter_mut()) {
            if let Some(copy) = cache.invalidate(line) {
                dirty |= copy.dirty;
            }
        }
        dirty
    }

    /// Asks the host to fetch the L2 and LLC sets `addr` maps to for `core`
    /// (the L1 tags are small enough to stay in the host's caches). Call it a
    /// few references ahead of [`access`](Self::access); no simulated effect.
    #[inline]
    pub fn prefetch(&self, core: usize, addr: PhysAddr) {
        if !self.enabled {
            return;
        }
        let line = addr.raw() >> self.line_shift;
        self.l2[core].prefetch_set(line);
        self.llc.prefetch_set(line);
    }

    /// Configured latency of a hit at `level`, in cycles. For `Memory` it is
    /// the LLC latency (the time to miss through the hierarchy; the engine
    /// adds the memory latency), or 0 when the hierarchy is disabled.
    #[inline]
    pub fn latency(&self, level: HitLevel) -> u32 {
        self.latency[level.index()]
    }

    /// [`latency`](Self::latency) of every [`HitLevel`], by index.
    pub fn latencies(&self) -> [u32; 4] {
        self.latency
    }

    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    /// Zeroes the statistics; the cache contents stay (end of warm-up).
    pub fn reset_stats(&mut self) {
        self.stats.reset();
    }

    /// Empties every cache (contents, not statistics).
    pub fn flush(&mut self) {
        for cache in self.l1d.iter_mut().chain(self.l1i.iter_mut()).chain(self.l2.iter_mut()) {
            cache.clear();
        }
        self.llc.clear();
    }

    /// Whether `addr`'s line is in `level` of `core` (any core's for the
    /// LLC). `false` for a disabled L1I.
    pub fn contains(&self, core: usize, level: Level, addr: PhysAddr) -> bool {
        let line = addr.raw() >> self.line_shift;
        match level {
            Level::L1d => self.l1d[core].probe(line),
            Level::L1i => self.l1i.get(core).is_some_and(|c| c.probe(line)),
            Level::L2 => self.l2[core].probe(line),
            Level::Llc => self.llc.probe(line),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    pub fn is_inclusive(&self) -> bool {
        self.inclusive
    }

    pub fn nr_cores(&self) -> usize {
        self.l1d.len()
    }

    /// log2 of the line size.
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    pub fn l1d(&self, core: usize) -> &Cache {
        &self.l1d[core]
    }

    pub fn l1i(&self, core: usize) -> Option<&Cache> {
        self.l1i.get(core)
    }

    pub fn l2(&self, core: usize) -> &Cache {
        &self.l2[core]
    }

    pub fn llc(&self) -> &Cache {
        &self.llc
    }
}

/// A distinct, reproducible seed for each cache.
fn seed_of(seed: u64, level: Level, core: usize) -> u64 {
    let salt = (level.index() as u64 + 1) << 48 | core as u64;
    seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cache::config::{CacheConfig, LlcConfig};
    use crate::hw::cache::replacement::ReplacementKind;
    use crate::hw::cache::stats::LevelStats;
    use crate::units::ByteSize;

    const LINE: u64 = 64;

    fn level(sets: u64, ways: u32) -> CacheConfig {
        CacheConfig { size: ByteSize(sets * u64::from(ways) * LINE), ways, line: 64, ..CacheConfig::l1d() }
    }

    /// L1D, L2 and LLC of `(sets, ways)` each, LRU, 64-byte lines.
    fn tiny(l1: (u64, u32), l2: (u64, u32), llc: (u64, u32)) -> CacheHierarchyConfig {
        let mut cfg = CacheHierarchyConfig { l1d: level(l1.0, l1.1), l2: level(l2.0, l2.1), ..Default::default() };
        cfg.llc = LlcConfig { size: ByteSize(llc.0 * u64::from(llc.1) * LINE), ways: llc.1, ..LlcConfig::default() };
        cfg
    }

    fn at(line: u64) -> PhysAddr {
        PhysAddr::new(line * LINE)
    }

    fn load(h: &mut CacheHierarchy, core: usize, line: u64) -> HitLevel {
        h.access(core, at(line), RefKind::Load)
    }

    #[test]
    fn a_line_evicted_from_l1_still_hits_l2() {
        // L1: 2 sets x 2 ways, so lines 0, 2, 4 share L1 set 0 and 4 pushes
        // 0 out; L2: 4 sets x 4 ways, where 0 and 4 share set 0 but fit.
        let mut h = CacheHierarchy::new(&tiny((2, 2), (4, 4), (8, 4)), 1).unwrap();
        for line in [0, 2, 4] {
            assert_eq!(load(&mut h, 0, line), HitLevel::Memory);
        }
        assert!(!h.contains(0, Level::L1d, at(0)));
        assert_eq!(load(&mut h, 0, 0), HitLevel::L2);
        assert_eq!(load(&mut h, 0, 0), HitLevel::L1, "the L2 hit refilled the L1");
        let s = h.stats();
        assert_eq!((s.total(Level::L1d).total_accesses(), s.total(Level::L1d).total_misses()), (5, 4));
        assert_eq!((s.total(Level::L2).total_accesses(), s.total(Level::L2).total_misses()), (4, 3));
        assert_eq!((s.total(Level::Llc).total_accesses(), s.total(Level::Llc).total_misses()), (3, 3));
        assert_eq!(s.level(0, Level::L1d).accesses[RefKind::Load.index()], 5);
    }

    /// L1 and L2: 2 sets x 2 ways; LLC: 1 set x 2 ways. Lines 0, 1, 3: in
    /// the LLC, 3 evicts 0 (LRU), while the L1 keeps 0 (alone in set 0).
    fn evict_from_llc_only(inclusive: bool) -> (CacheHierarchy, HitLevel) {
        let mut cfg = tiny((2, 2), (2, 2), (1, 2));
        cfg.llc.inclusive = inclusive;
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        for line in [0, 1, 3] {
            assert_eq!(load(&mut h, 0, line), HitLevel::Memory);
        }
        assert!(!h.contains(0, Level::Llc, at(0)));
        let again = load(&mut h, 0, 0);
        (h, again)
    }

    #[test]
    fn non_inclusive_llc_evictions_leave_upper_levels_alone() {
        let (h, again) = evict_from_llc_only(false);
        assert_eq!(again, HitLevel::L1);
        assert!(h.contains(0, Level::L2, at(0)));
    }

    #[test]
    fn inclusive_llc_evictions_back_invalidate() {
        let (h, again) = evict_from_llc_only(true);
        assert_eq!(again, HitLevel::Memory, "0 was removed from the L1 and L2");
        // The refetch of 0 evicted 1 from the LLC, hence from L1 and L2 too.
        assert!(!h.contains(0, Level::L1d, at(1)) && !h.contains(0, Level::L2, at(1)));
        assert!(h.contains(0, Level::L1d, at(3)));
    }

    #[test]
    fn inclusive_back_invalidation_of_a_dirty_line_writes_memory() {
        let mut cfg = tiny((2, 2), (2, 2), (1, 2));
        cfg.llc.inclusive = true;
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        assert_eq!(h.access(0, at(0), RefKind::Store), HitLevel::Memory); // dirty in L1 only
        load(&mut h, 0, 1);
        load(&mut h, 0, 3); // LLC evicts 0 (clean there): the dirty L1 copy goes to memory
        assert_eq!(h.stats().total(Level::Llc).writebacks, 1);
        assert_eq!(h.stats().total(Level::L1d).writebacks, 0, "invalidated, not written to L2");
    }

    #[test]
    fn write_back_counts_dirty_evictions_at_each_level() {
        // L1: 2 sets x 2 ways, L2: 2 sets x 2 ways, LLC: 1 set x 4 ways.
        // Even lines share L1 set 0 and L2 set 0.
        let mut h = CacheHierarchy::new(&tiny((2, 2), (2, 2), (1, 4)), 1).unwrap();
        let wb = |h: &CacheHierarchy| {
            let s = h.stats();
            [Level::L1d, Level::L2, Level::Llc].map(|l| s.total(l).writebacks)
        };
        h.access(0, at(0), RefKind::Store); // A = 0: dirty in L1, clean below
        load(&mut h, 0, 2);
        assert_eq!(wb(&h), [0, 0, 0]);
        // 4: L2 fill evicts clean 0; L1 fill evicts dirty 0, written to the
        // L2, where it misses and allocates (evicting 2).
        load(&mut h, 0, 4);
        assert_eq!(wb(&h), [1, 0, 0]);
        assert!(h.l2(0).is_dirty(0) && !h.contains(0, Level::L2, at(2)));
        // 6: L2 evicts 4 (0 was written after it). 8: the LLC fill evicts 0
        // (clean there); the L2 fill evicts dirty 0, which the LLC allocates
        // again, evicting 2.
        load(&mut h, 0, 6);
        load(&mut h, 0, 8);
        assert_eq!(wb(&h), [1, 1, 0]);
        assert!(h.llc().is_dirty(0) && !h.contains(0, Level::Llc, at(2)));
        // LLC order, oldest first: 4, 6, 8, 0. Three fills push 4, 6, 8; the
        // fourth pushes dirty 0 to memory.
        for line in [10, 12, 14] {
            load(&mut h, 0, line);
        }
        assert_eq!(wb(&h), [1, 1, 0]);
        load(&mut h, 0, 16);
        assert_eq!(wb(&h), [1, 1, 1]);
        assert_eq!(h.stats().total(Level::L1d).accesses, [8, 1, 0, 0]);
    }

    #[test]
    fn way_masks_confine_llc_fills() {
        // LLC: 1 set x 4 ways. Core 0 fills ways 0-1, core 1 ways 2-3.
        let mut cfg = tiny((1, 1), (1, 1), (1, 4));
        cfg.llc.way_masks = vec![0b0011, 0b1100];
        let mut h = CacheHierarchy::new(&cfg, 2).unwrap();
        load(&mut h, 1, 100);
        load(&mut h, 1, 101);
        for line in 0..50 {
            load(&mut h, 0, line);
            for theirs in [100, 101] {
                let way = h.llc().way_of(theirs).expect("core 1's lines stay");
                assert!(way >= 2);
            }
            for mine in 0..=line {
                assert!(h.llc().way_of(mine).is_none_or(|w| w < 2), "line {mine} outside core 0's ways");
            }
        }
        // Hits are allowed in the other core's ways.
        assert_eq!(load(&mut h, 0, 100), HitLevel::Llc);
        assert_eq!(load(&mut h, 1, 49), HitLevel::Llc);
    }

    #[test]
    fn way_mask_count_must_match_cores() {
        let mut cfg = CacheHierarchyConfig::default();
        cfg.llc.way_masks = vec![0xff];
        let err = CacheHierarchy::new(&cfg, 2).unwrap_err();
        assert!(matches!(err, Error::Config { ref key, .. } if key == "machine.cache.llc.way_masks"), "{err}");
    }

    #[test]
    fn walk_references_can_enter_below_the_l1() {
        let mut h = CacheHierarchy::new(&tiny((4, 2), (8, 2), (16, 4)), 1).unwrap();
        // Entering at the LLC: the first reference misses to memory, the
        // second hits the LLC, and neither fills the L1 or the L2.
        assert_eq!(h.access_from(0, at(7), RefKind::Walk, 2), HitLevel::Memory);
        assert_eq!(h.access_from(0, at(7), RefKind::Walk, 2), HitLevel::Llc);
        assert!(!h.contains(0, Level::L2, at(7)) && !h.contains(0, Level::L1d, at(7)));
        // Entering at the L2 fills the L2 but not the L1.
        assert_eq!(h.access_from(0, at(7), RefKind::Walk, 1), HitLevel::Llc);
        assert_eq!(h.access_from(0, at(7), RefKind::Walk, 1), HitLevel::L2);
        assert!(!h.contains(0, Level::L1d, at(7)));
    }

    #[test]
    fn private_levels_are_per_core() {
        let mut h = CacheHierarchy::new(&tiny((2, 2), (4, 4), (8, 4)), 2).unwrap();
        assert_eq!(load(&mut h, 0, 7), HitLevel::Memory);
        assert_eq!(load(&mut h, 1, 7), HitLevel::Llc, "core 1 shares only the LLC");
        assert_eq!(load(&mut h, 0, 7), HitLevel::L1);
        assert_eq!(h.stats().level(1, Level::Llc).total_accesses(), 1);
        assert_eq!(h.stats().level(1, Level::Llc).total_misses(), 0);
    }

    #[test]
    fn instruction_fetches_use_the_l1i_when_enabled() {
        let mut cfg = tiny((2, 2), (4, 4), (8, 4));
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        assert_eq!(h.access(0, at(5), RefKind::IFetch), HitLevel::L1, "no L1I: fetches hit");
        assert_eq!(h.stats().total(Level::L2).total_accesses(), 0);
        cfg.l1i =
            crate::hw::cache::config::L1iConfig { enabled: true, size: ByteSize(256), ways: 2, ..Default::default() };
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        assert_eq!(h.access(0, at(5), RefKind::IFetch), HitLevel::Memory);
        assert_eq!(h.access(0, at(5), RefKind::IFetch), HitLevel::L1);
        assert_eq!(h.access(0, at(5), RefKind::Load), HitLevel::L2, "the L1D is separate");
        assert_eq!(h.stats().total(Level::L1i).misses[RefKind::IFetch.index()], 1);
        assert!(h.stats().counters(None).iter().any(|(n, v)| n == "cache.l1i.ifetches" && *v == 2));
    }

    #[test]
    fn walk_references_are_loads_counted_apart() {
        let mut h = CacheHierarchy::new(&tiny((2, 2), (4, 4), (8, 4)), 1).unwrap();
        assert_eq!(h.access(0, at(9), RefKind::Walk), HitLevel::Memory);
        assert_eq!(h.access(0, at(9), RefKind::Load), HitLevel::L1);
        let l1 = h.stats().total(Level::L1d);
        assert_eq!((l1.accesses, l1.misses), ([1, 0, 1, 0], [0, 0, 1, 0]));
        assert_eq!(l1.writebacks, 0);
    }

    #[test]
    fn disabled_hierarchy_goes_to_memory() {
        let cfg = CacheHierarchyConfig { enabled: false, ..Default::default() };
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        assert_eq!(load(&mut h, 0, 1), HitLevel::Memory);
        assert_eq!(load(&mut h, 0, 1), HitLevel::Memory);
        assert_eq!(h.latency(HitLevel::Memory), 0);
        assert_eq!(h.stats().total(Level::L1d).total_accesses(), 0);
    }

    #[test]
    fn latencies_come_from_the_config() {
        let h = CacheHierarchy::new(&CacheHierarchyConfig::default(), 1).unwrap();
        assert_eq!(h.latencies(), [4, 12, 42, 42]);
        assert_eq!(h.latency(HitLevel::L2), 12);
    }

    #[test]
    fn reset_stats_keeps_contents() {
        let mut h = CacheHierarchy::new(&tiny((2, 2), (4, 4), (8, 4)), 1).unwrap();
        load(&mut h, 0, 3);
        h.reset_stats();
        assert_eq!(h.stats().total(Level::L1d), LevelStats::default());
        assert_eq!(load(&mut h, 0, 3), HitLevel::L1);
        h.flush();
        assert_eq!(load(&mut h, 0, 3), HitLevel::Memory);
    }

    #[test]
    fn llc_slice_accesses_are_counted() {
        let mut cfg = tiny((2, 2), (2, 2), (8, 4));
        cfg.llc.slices = 4;
        cfg.llc.slice_hash = crate::hw::cache::slice::SliceHash::Intel;
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        for line in [1, 2, 3, 3] {
            load(&mut h, 0, line); // lines 1, 2, 3 = addresses 0x40, 0x80, 0xc0
        }
        assert_eq!(h.stats().llc_slice_accesses, [0, 1, 1, 1]);
    }

    #[test]
    fn random_policies_follow_the_seed() {
        let mut cfg = tiny((2, 2), (2, 4), (4, 4));
        cfg.llc.policy = ReplacementKind::Random;
        cfg.l2.policy = ReplacementKind::Random;
        let run = |seed| {
            let mut h = CacheHierarchy::with_seed(&cfg, 1, seed).unwrap();
            (0..3000u64).map(|i| load(&mut h, 0, i * 7 % 97)).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
