//! Intel paging-structure caches (the page-walk caches, PWC).
//!
//! One small cache per upper level of the radix table, each mapping a
//! virtual-address prefix (plus the asid) to the physical frame of the
//! next-level table (Intel SDM 4.10.3):
//!
//! | cache  | entry read     | key: VA bits      | value: frame of the |
//! |--------|----------------|-------------------|---------------------|
//! | PML5E  | level 5        | 56..48            | PML4 table          |
//! | PML4E  | level 4        | 47..39 (56..39)   | PDPT                |
//! | PDPTE  | level 3        | 47..30 (56..30)   | page directory      |
//! | PDE    | level 2        | 47..21 (56..21)   | page table          |
//!
//! (bits in parentheses under 5-level paging). A walk asks for the deepest
//! hit: a PDE-cache hit leaves only the PTE to read.
//!
//! Only non-leaf entries are cached: a PDE that maps a 2 MiB page is not a
//! table pointer and is never filled here. Because a hit sends the walker
//! straight into a table frame, freeing or remapping a page-table page must
//! invalidate every entry that can reach it (`invalidate_range` over the
//! region the table mapped, or `invalidate_table` by frame); otherwise the
//! walker would read freed memory.
//!
//! Beside the frame, each entry keeps a `handle` the walker chose for the
//! table (pagelab's walker: the table's index in its page-table slab), so
//! that a hit hands the walker the table itself and no software descent
//! from the root is needed to find it. The handle is simulator
//! bookkeeping, not hardware state: it changes no lookup, fill or
//! eviction.

use crate::error::{Error, Result};
use crate::hw::lru_array::LruArray;
use crate::stat::{Scope, Section, StatDecl, StatTable};
use crate::units::{Asid, Pfn, VirtAddr, Vpn, PAGE_SHIFT};

/// `machine.pwc`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PwcConfig {
    pub enabled: bool,
    /// PML5E cache entries; used only with 5-level paging.
    pub pml5_entries: u32,
    pub pml4_entries: u32,
    pub pdpt_entries: u32,
    pub pde_entries: u32,
    /// Ways of every cache of more than `ways` entries (a smaller one is a
    /// single fully associative set); 0 = all fully associative.
    pub ways: u32,
    /// Cycles of one PWC lookup, paid by every walk while the caches are on
    /// (`lookup_latency`).
    pub latency: u32,
}

impl Default for PwcConfig {
    /// Sizes in the range reported for Intel cores (PML4E 2, PDPTE 4, PDE
    /// 32); the perforated-pages paper's simulator used 4 and 24.
    fn default() -> Self {
        PwcConfig {
            enabled: true,
            pml5_entries: 2,
            pml4_entries: 2,
            pdpt_entries: 4,
            pde_entries: 32,
            ways: 0,
            latency: 1,
        }
    }
}

/// Most entries of one cache: a fully associative one is an `LruMap`, whose
/// slots are 16-bit indexes (it takes fewer than 65535 entries).
const MAX_ENTRIES: u32 = 1 << 15;

impl PwcConfig {
    /// What one walk pays for looking the caches up: `latency`, or nothing
    /// when they are switched off (a structure that is not there is not
    /// looked up).
    pub fn lookup_latency(&self) -> u32 {
        if self.enabled {
            self.latency
        } else {
            0
        }
    }

    pub fn validate(&self, prefix: &str) -> Result<()> {
        for (name, entries) in [
            ("pml5_entries", self.pml5_entries),
            ("pml4_entries", self.pml4_entries),
            ("pdpt_entries", self.pdpt_entries),
            ("pde_entries", self.pde_entries),
        ] {
            let key = format!("{prefix}.{name}");
            if entries > MAX_ENTRIES {
                return Err(Error::config(key, format!("{entries} entries; at most {MAX_ENTRIES}")));
            }
            if self.ways == 0 || entries <= self.ways {
                continue; // fully associative (see `Pwc::new`)
            }
            if !entries.is_multiple_of(self.ways) || !(entries / self.ways).is_power_of_two() {
                return Err(Error::config(
                    key,
                    format!("{entries} entries do not make a power-of-two number of {}-way sets", self.ways),
                ));
            }
        }
        Ok(())
    }
}

/// Where a walk starts, after consulting the PWC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PwcHit {
    /// The page-table level whose entry is read next: 1 (the PTE) after a PDE
    /// hit, 2 after a PDPTE hit, 3 after a PML4E hit, 4 after a PML5E hit,
    /// `levels` when nothing hit.
    pub skip_to_level: u8,
    /// Frame of the table at `skip_to_level`. Meaningless (zero) when
    /// nothing hit: the walk then starts at its root (CR3).
    pub table: Pfn,
    /// The walker's handle for that table, as given to [`Pwc::fill`]
    /// (zero when nothing hit).
    pub handle: u32,
}

impl PwcHit {
    /// The level and table to start from, given the walk's root table.
    pub fn start(&self, levels: u8, root: Pfn) -> (u8, Pfn) {
        if self.skip_to_level == levels {
            (levels, root)
        } else {
            (self.skip_to_level, self.table)
        }
    }
}

/// The page-walk caches' own counters, per core (`pwc.hits`, the walks
/// they shortened, is the core's); the EPT's (`ept_pwc.*`) are named from
/// these by the engine.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Translation,
    stats: &[
        StatDecl::count("pwc.lookups", "lookups (one per walk)").scope(Scope::PerCore),
        StatDecl::count("pwc.pde_hits", "lookups that skipped to the PTE page").scope(Scope::PerCore),
        StatDecl::count("pwc.pdpte_hits", "lookups that skipped to the PMD page").scope(Scope::PerCore),
        StatDecl::count("pwc.pml4e_hits", "lookups that skipped to the PUD page").scope(Scope::PerCore),
        StatDecl::count("pwc.pml5e_hits", "lookups that skipped to the P4D page (5-level paging)")
            .scope(Scope::PerCore),
        StatDecl::count("pwc.misses", "lookups that hit no level (every lookup of a disabled one)")
            .scope(Scope::PerCore),
        StatDecl::count("pwc.fills", "entries placed").scope(Scope::PerCore),
        StatDecl::count("pwc.invalidations", "entries shootdowns dropped").scope(Scope::PerCore),
    ],
}];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PwcStats {
    pub lookups: u64,
    pub pde_hits: u64,
    pub pdpte_hits: u64,
    pub pml4e_hits: u64,
    pub pml5e_hits: u64,
    /// Lookups that hit no level (includes every lookup of a disabled PWC).
    pub misses: u64,
    pub fills: u64,
    pub invalidations: u64,
}

impl PwcStats {
    /// Flat `pwc.<counter>` pairs for the engine's report.
    pub fn named(&self) -> Vec<(String, u64)> {
        [
            ("lookups", self.lookups),
            ("pde_hits", self.pde_hits),
            ("pdpte_hits", self.pdpte_hits),
            ("pml4e_hits", self.pml4e_hits),
            ("pml5e_hits", self.pml5e_hits),
            ("misses", self.misses),
            ("fills", self.fills),
            ("invalidations", self.invalidations),
        ]
        .into_iter()
        .map(|(n, v)| (format!("pwc.{n}"), v))
        .collect()
    }
}

const ASID_SHIFT: u32 = 48;

/// What one entry holds: the next table's frame and the walker's handle
/// for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Entry {
    table: Pfn,
    handle: u32,
}

/// The paging-structure caches of one core.
#[derive(Debug, Clone)]
pub struct Pwc {
    enabled: bool,
    levels: u8,
    /// Virtual-address bits translated (48 or 57).
    va_bits: u32,
    /// The mask of those bits.
    va_mask: u64,
    /// `caches[i]` caches entries of level `i + 2` (PDE, PDPTE, PML4E, PML5E).
    caches: [LruArray<Entry>; 4],
    /// `missed[i]`: the key `caches[i]` last missed in a lookup, until it
    /// is filled. The walk that follows a lookup fills exactly the levels
    /// the lookup missed, so each fill finds its key here and skips the
    /// search for it (only filling a key can make it present;
    /// invalidations only remove). `NO_KEY` when none.
    missed: [u64; 4],
    /// Hits by cache (`caches[i]`), kept apart from `stats` so that a hit
    /// counts without a `match` on its level.
    hits: [u64; 4],
    stats: PwcStats,
}

/// No key: a key's prefix has at most 45 bits, so bits 45..47 are clear.
const NO_KEY: u64 = u64::MAX;

impl Pwc {
    /// `levels` is the paging depth, 4 or 5 (3 for an ARM-style stage-2
    /// EPT of a small guest: then the PML4E cache is unused too); `cfg`
    /// must have passed [`PwcConfig::validate`].
    pub fn new(cfg: &PwcConfig, levels: u8, seed: u64) -> Self {
        assert!((3..=5).contains(&levels), "paging has 3, 4 or 5 levels, not {levels}");
        let pml5 = if levels == 5 { cfg.pml5_entries } else { 0 };
        let pml4 = if levels >= 4 { cfg.pml4_entries } else { 0 };
        // `ways` sets the associativity of the larger caches; one of at
        // most `ways` entries (Intel's 2-entry PML4E cache beside a 4-way
        // PDE cache; the unused PML5E cache of 4-level paging, 0 entries)
        // is a single fully associative set (`LruArray::new`).
        let build = |entries: u32, salt: u64| LruArray::new(entries, cfg.ways, seed ^ salt);
        Pwc {
            enabled: cfg.enabled,
            levels,
            va_bits: PAGE_SHIFT + 9 * levels as u32,
            va_mask: (1u64 << (PAGE_SHIFT + 9 * levels as u32)) - 1,
            caches: [build(cfg.pde_entries, 2), build(cfg.pdpt_entries, 3), build(pml4, 4), build(pml5, 5)],
            missed: [NO_KEY; 4],
            hits: [0; 4],
            stats: PwcStats::default(),
        }
    }

    pub fn levels(&self) -> u8 {
        self.levels
    }

    /// The host bytes [`Pwc::new`] allocates for its caches (the
    /// host-memory budget's count; at most four of 32768 entries).
    pub fn host_bytes(cfg: &PwcConfig) -> u64 {
        [cfg.pde_entries, cfg.pdpt_entries, cfg.pml4_entries, cfg.pml5_entries]
            .iter()
            .map(|&n| LruArray::<Entry>::host_bytes(n, cfg.ways))
            .sum()
    }

    /// VA bit where the prefix cached for a level-`level` entry starts
    /// (21 for a PDE: the entry covers 2 MiB).
    #[inline]
    const fn prefix_shift(level: u8) -> u32 {
        PAGE_SHIFT + 9 * (level as u32 - 1)
    }

    #[inline]
    fn prefix(&self, vaddr: u64, level: u8) -> u64 {
        (vaddr & self.va_mask) >> Self::prefix_shift(level)
    }

    #[inline]
    fn key(asid: Asid, prefix: u64) -> u64 {
        ((asid as u64) << ASID_SHIFT) | prefix
    }

    /// The deepest cached entry for `vaddr`.
    #[inline(always)]
    pub fn lookup(&mut self, asid: Asid, vaddr: VirtAddr) -> PwcHit {
        self.stats.lookups += 1;
        if self.enabled {
            for level in 2..=self.levels {
                let prefix = self.prefix(vaddr.raw(), level);
                let (key, i) = (Self::key(asid, prefix), level as usize - 2);
                if let Some(Entry { table, handle }) = self.caches[i].lookup(key, prefix) {
                    self.hits[i] += 1;
                    return PwcHit { skip_to_level: level - 1, table, handle };
                }
                self.missed[i] = key;
            }
        }
        self.stats.misses += 1;
        PwcHit { skip_to_level: self.levels, table: Pfn::new(0), handle: 0 }
    }

    /// After a walk read the level-`level` entry (2 = PDE ... `levels`) for
    /// `vaddr` and found it pointing at the table in `table_pfn`, which the
    /// walker calls `handle` (returned by the lookups that hit the entry).
    /// (Always inlined: LLVM once left it out of line in the walker after a
    /// change elsewhere in the engine, +0.2% instructions on gups.)
    #[inline(always)]
    pub fn fill(&mut self, asid: Asid, vaddr: VirtAddr, level: u8, table_pfn: Pfn, handle: u32) {
        debug_assert!((2..=self.levels).contains(&level), "level {level} has no paging-structure cache");
        if !self.enabled || !(2..=self.levels).contains(&level) {
            return;
        }
        let prefix = self.prefix(vaddr.raw(), level);
        let (key, i) = (Self::key(asid, prefix), level as usize - 2);
        let cache = &mut self.caches[i];
        if cache.is_disabled() {
            return;
        }
        let entry = Entry { table: table_pfn, handle };
        if self.missed[i] == key {
            self.missed[i] = NO_KEY;
            cache.insert_absent(key, prefix, entry);
        } else {
            cache.insert(key, prefix, entry);
        }
        self.stats.fills += 1;
    }

    fn invalidate_if(&mut self, mut pred: impl FnMut(u8, u64, Pfn) -> bool) -> usize {
        let mut n = 0;
        for (i, cache) in self.caches.iter_mut().enumerate() {
            let level = i as u8 + 2;
            n += cache.invalidate_if(|key, e| pred(level, key, e.table));
        }
        self.stats.invalidations += n as u64;
        n
    }

    /// Drops every entry of `asid` whose region overlaps pages `[start, end)`
    /// (a PDE entry covers 2 MiB, a PDPTE 1 GiB...). Returns how many.
    pub fn invalidate_range(&mut self, asid: Asid, start: Vpn, end: Vpn) -> usize {
        if end.raw() <= start.raw() {
            return 0;
        }
        let vpn_mask = (1u64 << (self.va_bits - PAGE_SHIFT)) - 1;
        let (first, last) = (start.raw() & vpn_mask, (end.raw() - 1) & vpn_mask);
        self.invalidate_if(|level, key, _| {
            let pages_shift = Self::prefix_shift(level) - PAGE_SHIFT;
            let prefix = key & ((1 << ASID_SHIFT) - 1);
            let (lo, hi) = (first >> pages_shift, last >> pages_shift);
            (key >> ASID_SHIFT) as Asid == asid && (lo..=hi).contains(&prefix)
        })
    }

    /// Drops every entry that points at table frame `table` (the page-table
    /// page is being freed), in any asid.
    pub fn invalidate_table(&mut self, table: Pfn) -> usize {
        self.invalidate_if(|_, _, t| t == table)
    }

    pub fn invalidate_asid(&mut self, asid: Asid) -> usize {
        self.invalidate_if(|_, key, _| (key >> ASID_SHIFT) as Asid == asid)
    }

    pub fn flush_all(&mut self) -> usize {
        self.invalidate_if(|_, _, _| true)
    }

    pub fn stats(&self) -> PwcStats {
        let [pde_hits, pdpte_hits, pml4e_hits, pml5e_hits] = self.hits;
        PwcStats { pde_hits, pdpte_hits, pml4e_hits, pml5e_hits, ..self.stats }
    }

    pub fn reset_stats(&mut self) {
        self.stats = PwcStats::default();
        self.hits = [0; 4];
    }

    /// Valid entries over all levels.
    pub fn occupancy(&self) -> usize {
        self.caches.iter().map(|c| c.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Asid = 3;
    const MIB2: u64 = 2 << 20;
    const GIB1: u64 = 1 << 30;

    fn va(x: u64) -> VirtAddr {
        VirtAddr::new(x)
    }

    /// Fills what a 4-level walk of `x` reads: PML4E -> PDPT at `t + 3`,
    /// PDPTE -> PD at `t + 2`, PDE -> PT at `t + 1`.
    fn walk(pwc: &mut Pwc, asid: Asid, x: u64, t: u64) {
        pwc.fill(asid, va(x), 4, Pfn::new(t + 3), 0);
        pwc.fill(asid, va(x), 3, Pfn::new(t + 2), 0);
        pwc.fill(asid, va(x), 2, Pfn::new(t + 1), 0);
    }

    #[test]
    fn a_hit_returns_the_handle_its_fill_gave() {
        // Fully associative and set-associative caches alike hand back the
        // walker's handle of the table with its frame.
        for ways in [0, 4] {
            let mut pwc = Pwc::new(&PwcConfig { ways, ..PwcConfig::default() }, 4, 0);
            let x = 0x7f12_3456_7000;
            pwc.fill(A, va(x), 3, Pfn::new(0x30), 7);
            pwc.fill(A, va(x), 2, Pfn::new(0x20), 11);
            assert_eq!(pwc.lookup(A, va(x + 0x1000)), PwcHit { skip_to_level: 1, table: Pfn::new(0x20), handle: 11 });
            let y = x + 5 * MIB2;
            assert_eq!(pwc.lookup(A, va(y)), PwcHit { skip_to_level: 2, table: Pfn::new(0x30), handle: 7 });
        }
    }

    #[test]
    fn deepest_hit_wins_and_neighbours_share_upper_levels() {
        let mut pwc = Pwc::new(&PwcConfig::default(), 4, 0);
        let x = 0x7f12_3456_7000;
        assert_eq!(pwc.lookup(A, va(x)), PwcHit { skip_to_level: 4, table: Pfn::new(0), handle: 0 });
        walk(&mut pwc, A, x, 0x100);
        // Same 2 MiB region: PDE hit, read the PTE in table 0x101.
        assert_eq!(pwc.lookup(A, va(x + 0x1000)), PwcHit { skip_to_level: 1, table: Pfn::new(0x101), handle: 0 });
        // Another 2 MiB region of the same 1 GiB: PDPTE hit, read the PDE in
        // page directory 0x102.
        let y = (x & !(GIB1 - 1)) + ((x + 5 * MIB2) & (GIB1 - 1));
        assert_eq!(pwc.lookup(A, va(y)), PwcHit { skip_to_level: 2, table: Pfn::new(0x102), handle: 0 });
        // Another 1 GiB of the same 512 GiB: PML4E hit.
        let z = x ^ (1 << 31);
        assert_eq!(pwc.lookup(A, va(z)), PwcHit { skip_to_level: 3, table: Pfn::new(0x103), handle: 0 });
        // Another 512 GiB region: nothing.
        assert_eq!(pwc.lookup(A, va(x ^ (1 << 40))).skip_to_level, 4);
        // Other asid: nothing.
        assert_eq!(pwc.lookup(A + 1, va(x)).skip_to_level, 4);
        let s = pwc.stats();
        assert_eq!((s.lookups, s.pde_hits, s.pdpte_hits, s.pml4e_hits, s.misses), (6, 1, 1, 1, 3));
        assert_eq!(PwcHit { skip_to_level: 4, table: Pfn::new(0), handle: 0 }.start(4, Pfn::new(9)), (4, Pfn::new(9)));
    }

    #[test]
    fn invalidation_clears_entries_that_reach_a_range() {
        let mut pwc = Pwc::new(&PwcConfig::default(), 4, 0);
        let x = 0x40_0000_0000; // 256 GiB
        walk(&mut pwc, A, x, 0x100);
        walk(&mut pwc, A, x + MIB2, 0x200); // shares the PML4E and PDPTE keys
        assert_eq!(pwc.occupancy(), 4); // PML4E, PDPTE (refilled), 2 PDEs
                                        // Unmapping [x + 2M, x + 4M) frees the page table at 0x201: only
                                        // that region's PDE entry goes... and the PDPTE and PML4E covering it,
                                        // since the range overlaps their regions too.
        let start = va(x + MIB2).vpn();
        assert_eq!(pwc.invalidate_range(A, start, start.add(512)), 3);
        assert_eq!(pwc.lookup(A, va(x)).skip_to_level, 1);
        assert_eq!(pwc.lookup(A, va(x + MIB2)).skip_to_level, 4);
        // By table frame, and by asid.
        walk(&mut pwc, A, x + MIB2, 0x200);
        assert_eq!(pwc.invalidate_table(Pfn::new(0x101)), 1);
        assert_eq!(pwc.lookup(A, va(x)), PwcHit { skip_to_level: 2, table: Pfn::new(0x202), handle: 0 });
        walk(&mut pwc, A + 1, x, 0x300);
        assert_eq!(pwc.invalidate_asid(A), 3);
        assert_eq!(pwc.lookup(A + 1, va(x)).skip_to_level, 1);
        assert_eq!(pwc.flush_all(), 3);
        assert_eq!(pwc.occupancy(), 0);
    }

    #[test]
    fn a_disabled_pwc_always_starts_at_the_root() {
        let cfg = PwcConfig { enabled: false, ..PwcConfig::default() };
        for levels in [4, 5] {
            let mut pwc = Pwc::new(&cfg, levels, 0);
            walk(&mut pwc, A, 0x1000, 0x10);
            assert_eq!(pwc.lookup(A, va(0x1000)).skip_to_level, levels);
            assert_eq!(pwc.occupancy(), 0);
        }
    }

    #[test]
    fn five_level_paging_adds_a_pml5e_cache() {
        let mut pwc = Pwc::new(&PwcConfig::default(), 5, 0);
        let x = 0x0100_0000_0000_0000; // bit 56 region 1 of the PML5
        pwc.fill(A, va(x), 5, Pfn::new(0x50), 0);
        pwc.fill(A, va(x), 2, Pfn::new(0x20), 0);
        assert_eq!(pwc.lookup(A, va(x + 0x3000)), PwcHit { skip_to_level: 1, table: Pfn::new(0x20), handle: 0 });
        // Another 256 TiB of the same PML5 entry: PML5E hit, read the PML4E.
        let y = x + (1 << 47);
        assert_eq!(pwc.lookup(A, va(y)), PwcHit { skip_to_level: 4, table: Pfn::new(0x50), handle: 0 });
        // Another PML5 slot: nothing.
        assert_eq!(pwc.lookup(A, va(x ^ (1 << 56))).skip_to_level, 5);
        assert_eq!(pwc.stats().pml5e_hits, 1);
    }

    #[test]
    fn lru_capacity_of_the_pde_cache() {
        // 2-entry fully associative PDE cache: the third 2 MiB region evicts
        // the least recently used one.
        let cfg = PwcConfig { pde_entries: 2, ..PwcConfig::default() };
        let mut pwc = Pwc::new(&cfg, 4, 0);
        for i in 0..2 {
            pwc.fill(A, va(i * MIB2), 2, Pfn::new(0x10 + i), 0);
        }
        assert_eq!(pwc.lookup(A, va(0)).skip_to_level, 1); // region 0 now MRU
        pwc.fill(A, va(2 * MIB2), 2, Pfn::new(0x12), 0);
        assert_eq!(pwc.lookup(A, va(MIB2)).skip_to_level, 4);
        assert_eq!(pwc.lookup(A, va(0)).table, Pfn::new(0x10));
    }

    #[test]
    fn validate_names_the_key() {
        PwcConfig::default().validate("machine.pwc").unwrap();
        // Caches of at most `ways` entries are fully associative: the
        // default 2-entry PML4E and PML5E caches go with any `ways`.
        PwcConfig { ways: 4, ..PwcConfig::default() }.validate("machine.pwc").unwrap();
        let cfg = PwcConfig { ways: 4, pml5_entries: 12, ..PwcConfig::default() };
        match cfg.validate("machine.pwc") {
            Err(Error::Config { key, .. }) => assert_eq!(key, "machine.pwc.pml5_entries"),
            other => panic!("{other:?}"),
        }
        let cfg = PwcConfig { ways: 2, pml4_entries: 2, pml5_entries: 2, pde_entries: 24, ..PwcConfig::default() };
        match cfg.validate("machine.pwc") {
            Err(Error::Config { key, .. }) => assert_eq!(key, "machine.pwc.pde_entries"),
            other => panic!("{other:?}"),
        }
        assert!(toml::from_str::<PwcConfig>("pde_entries = 24\nwaysx = 1").is_err());
        // Too many entries for the fully associative map: an error, not a
        // panic when the cache is built.
        let cfg = PwcConfig { pde_entries: 65535, ..PwcConfig::default() };
        match cfg.validate("machine.pwc") {
            Err(Error::Config { key, .. }) => assert_eq!(key, "machine.pwc.pde_entries"),
            other => panic!("{other:?}"),
        }
        let cfg = PwcConfig { pde_entries: MAX_ENTRIES, ..PwcConfig::default() };
        cfg.validate("machine.pwc").unwrap();
        Pwc::new(&cfg, 4, 0);
    }
}
