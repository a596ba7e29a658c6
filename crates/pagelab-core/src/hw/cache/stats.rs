//! Cache statistics: plain counters per core and level, and per LLC slice.
//!
//! Demand references only count as accesses and misses (writebacks arriving
//! from the level above are not accesses), so the miss counts of a read-only
//! stream are those of pycachesim and cachegrind. The LLC is shared; its
//! counters are kept per requesting core and summed on demand.

use crate::stat::{Section, StatDecl, StatTable};

/// The kind of a memory reference, as the engine issues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RefKind {
    /// A data load.
    Load = 0,
    /// A data store (write-allocate: a miss fetches the line, then dirties it).
    Store = 1,
    /// A page-walk reference: a load by the walker, through the L1D.
    Walk = 2,
    /// An instruction fetch: through the L1I when it is enabled.
    IFetch = 3,
}

impl RefKind {
    pub const ALL: [RefKind; 4] = [RefKind::Load, RefKind::Store, RefKind::Walk, RefKind::IFetch];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Counter-name stem: `loads`, `stores`, `walks`, `ifetches`.
    pub const fn plural(self) -> &'static str {
        match self {
            RefKind::Load => "loads",
            RefKind::Store => "stores",
            RefKind::Walk => "walks",
            RefKind::IFetch => "ifetches",
        }
    }
}

/// A cache level, as statistics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Level {
    L1d = 0,
    L1i = 1,
    L2 = 2,
    Llc = 3,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::L1d, Level::L1i, Level::L2, Level::Llc];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The configuration and statistics key: `l1d`, `l1i`, `l2`, `llc`.
    pub const fn name(self) -> &'static str {
        match self {
            Level::L1d => "l1d",
            Level::L1i => "l1i",
            Level::L2 => "l2",
            Level::Llc => "llc",
        }
    }
}

/// Counters of one level for one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Demand accesses by [`RefKind`] index.
    pub accesses: [u64; 4],
    /// Demand misses by [`RefKind`] index.
    pub misses: [u64; 4],
    /// Dirty lines this level wrote to the next one (for the LLC: to memory,
    /// including dirty copies dropped from above by back-invalidation).
    pub writebacks: u64,
    /// Lines the hardware prefetchers brought into this level (not demand
    /// accesses: apart from `accesses` and `misses`, as writebacks are),
    /// those a demand access then hit, and those that left unused.
    pub prefetch_issued: u64,
    pub prefetch_useful: u64,
    pub prefetch_useless: u64,
}

impl LevelStats {
    pub fn total_accesses(&self) -> u64 {
        self.accesses.iter().sum()
    }

    pub fn total_misses(&self) -> u64 {
        self.misses.iter().sum()
    }

    pub fn hits(&self) -> u64 {
        self.total_accesses() - self.total_misses()
    }

    pub fn add(&mut self, other: &LevelStats) {
        for k in 0..4 {
            self.accesses[k] += other.accesses[k];
            self.misses[k] += other.misses[k];
        }
        self.writebacks += other.writebacks;
        self.prefetch_issued += other.prefetch_issued;
        self.prefetch_useful += other.prefetch_useful;
        self.prefetch_useless += other.prefetch_useless;
    }

    /// `(name, value)` of every counter: `accesses`, `misses`, `writebacks`,
    /// then `loads`, `load_misses`... by kind, then the prefetch counters.
    pub fn fields(&self) -> [(&'static str, u64); 14] {
        let k = |kind: RefKind| kind.index();
        [
            ("accesses", self.total_accesses()),
            ("misses", self.total_misses()),
            ("writebacks", self.writebacks),
            ("loads", self.accesses[k(RefKind::Load)]),
            ("load_misses", self.misses[k(RefKind::Load)]),
            ("stores", self.accesses[k(RefKind::Store)]),
            ("store_misses", self.misses[k(RefKind::Store)]),
            ("walks", self.accesses[k(RefKind::Walk)]),
            ("walk_misses", self.misses[k(RefKind::Walk)]),
            ("ifetches", self.accesses[k(RefKind::IFetch)]),
            ("ifetch_misses", self.misses[k(RefKind::IFetch)]),
            ("prefetch_issued", self.prefetch_issued),
            ("prefetch_useful", self.prefetch_useful),
            ("prefetch_useless", self.prefetch_useless),
        ]
    }
}

/// The caches' counters, per level (`LEVEL`: `l1d`, `l2`, `llc`, and
/// `l1i` when enabled), as [`LevelStats::fields`] names them; zeros when
/// the caches are disabled, so the names always exist.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Caches,
    stats: &[
        StatDecl::count(
            "cache.LEVEL.accesses",
            "references looked up at this level: data loads and stores, walk references entering at or above \
             it, instruction fetches (L1I/L2/LLC)",
        )
        .contract(),
        StatDecl::count("cache.LEVEL.misses", "of those, the ones not found at this level").contract(),
        StatDecl::count("cache.LEVEL.loads", "loads looked up at this level"),
        StatDecl::count("cache.LEVEL.stores", "stores looked up at this level"),
        StatDecl::count("cache.LEVEL.walks", "walk references looked up at this level"),
        StatDecl::count("cache.LEVEL.ifetches", "instruction fetches looked up at this level"),
        StatDecl::count("cache.LEVEL.load_misses", "loads not found at this level"),
        StatDecl::count("cache.LEVEL.store_misses", "stores not found at this level"),
        StatDecl::count("cache.LEVEL.walk_misses", "walk references not found at this level"),
        StatDecl::count("cache.LEVEL.ifetch_misses", "instruction fetches not found at this level"),
        StatDecl::count(
            "cache.LEVEL.writebacks",
            "dirty lines this level evicted to the level below (for the LLC: writes to memory)",
        ),
        StatDecl::count(
            "cache.LEVEL.prefetch_issued",
            "lines the hardware prefetchers brought into this level (L1D: next-line and stride; L2: stream; 0 \
             elsewhere)",
        ),
        StatDecl::count(
            "cache.LEVEL.prefetch_useful",
            "of those, lines a demand access (or, at the L2, an L1D prefetch) then hit at this level",
        ),
        StatDecl::count(
            "cache.LEVEL.prefetch_useless",
            "lines that left this level before any demand access used them (found when a demand access misses \
             the line, when it is prefetched again, or when the record of it is pushed out and the level no \
             longer holds it); a line still waiting at the end is neither",
        ),
        StatDecl::count("cache.llc.sliceN.accesses", "LLC accesses per slice (with more than one slice)").machine(),
    ],
}];

/// All cache counters of a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// `cores[core][level.index()]`.
    pub cores: Vec<[LevelStats; 4]>,
    /// Demand accesses reaching each LLC slice (all cores).
    pub llc_slice_accesses: Vec<u64>,
    /// Whether the L1I exists (its counters are reported only then).
    pub l1i_enabled: bool,
}

impl CacheStats {
    pub fn new(cores: usize, llc_slices: usize, l1i_enabled: bool) -> CacheStats {
        CacheStats {
            cores: vec![[LevelStats::default(); 4]; cores],
            llc_slice_accesses: vec![0; llc_slices],
            l1i_enabled,
        }
    }

    /// Zeroes every counter (warm-up ends; contents stay).
    pub fn reset(&mut self) {
        for core in &mut self.cores {
            *core = [LevelStats::default(); 4];
        }
        self.llc_slice_accesses.fill(0);
    }

    #[inline]
    pub fn level(&self, core: usize, level: Level) -> &LevelStats {
        &self.cores[core][level.index()]
    }

    #[inline]
    pub(crate) fn level_mut(&mut self, core: usize, level: Level) -> &mut LevelStats {
        &mut self.cores[core][level.index()]
    }

    /// One level summed over the cores.
    pub fn total(&self, level: Level) -> LevelStats {
        let mut sum = LevelStats::default();
        for core in &self.cores {
            sum.add(&core[level.index()]);
        }
        sum
    }

    /// The levels that exist, in order.
    pub fn levels(&self) -> impl Iterator<Item = Level> + '_ {
        Level::ALL.into_iter().filter(|&l| l != Level::L1i || self.l1i_enabled)
    }

    /// Named counters `cache.<level>.<counter>` (`cache.l1d.misses`,
    /// `cache.llc.accesses`...) of one core, or summed over the cores for
    /// `None`, which adds `cache.llc.slice<i>.accesses` when sliced. The
    /// engine prefixes per-core names as it likes.
    pub fn counters(&self, core: Option<usize>) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for level in self.levels() {
            let stats = match core {
                Some(c) => *self.level(c, level),
                None => self.total(level),
            };
            for (name, value) in stats.fields() {
                out.push((format!("cache.{}.{name}", level.name()), value));
            }
        }
        if core.is_none() && self.llc_slice_accesses.len() > 1 {
            for (slice, &n) in self.llc_slice_accesses.iter().enumerate() {
                out.push((format!("cache.llc.slice{slice}.accesses"), n));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_the_cores_and_kinds() {
        let mut stats = CacheStats::new(2, 1, false);
        stats.level_mut(0, Level::L2).accesses[RefKind::Load.index()] = 5;
        stats.level_mut(0, Level::L2).misses[RefKind::Load.index()] = 2;
        stats.level_mut(1, Level::L2).accesses[RefKind::Walk.index()] = 3;
        stats.level_mut(1, Level::L2).misses[RefKind::Walk.index()] = 3;
        let l2 = stats.total(Level::L2);
        assert_eq!((l2.total_accesses(), l2.total_misses(), l2.hits()), (8, 5, 3));
        let named = stats.counters(None);
        assert!(named.contains(&("cache.l2.misses".to_string(), 5)));
        assert!(named.contains(&("cache.l2.walk_misses".to_string(), 3)));
        assert!(!named.iter().any(|(n, _)| n.starts_with("cache.l1i")), "no L1I counters when it is off");
        assert!(stats.counters(Some(1)).contains(&("cache.l2.accesses".to_string(), 3)));
        stats.reset();
        assert_eq!(stats.total(Level::L2), LevelStats::default());
    }

    #[test]
    fn slices_are_named_when_sliced() {
        let mut stats = CacheStats::new(1, 2, true);
        stats.llc_slice_accesses[1] = 4;
        let named = stats.counters(None);
        assert!(named.contains(&("cache.llc.slice1.accesses".to_string(), 4)));
        assert!(named.iter().any(|(n, _)| n == "cache.l1i.misses"));
    }
}
