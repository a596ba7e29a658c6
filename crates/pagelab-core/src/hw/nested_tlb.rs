//! The nested TLB: a small cache of guest-physical to host-physical
//! translations (AMD's NTLB; Intel caches the same in its EPT
//! paging-structure caches' leaves), consulted by the two-dimensional
//! walker before each EPT walk (`engine::walk2d`). An entry holds what one
//! EPT leaf says: the host frame of a guest frame range of the leaf's size
//! (4 KiB, 2 MiB or 1 GiB), tagged with the VM's VPID, and whether the leaf
//! allows stores (a leaf KSM merged does not: a store through it is an EPT
//! violation, `engine::walk2d`), and whether the leaf's EPT dirty bit was
//! set when the entry was filled (a store through a clean entry sets it:
//! `virt::ept_bits`).
//!
//! Host changes drop entries by guest-physical range
//! ([`NestedTlb::invalidate_range`]), the INVEPT the hypervisor issues.

use crate::error::{Error, Result};
use crate::hw::lru_array::LruArray;
use crate::units::{Gfn, PageSize, Pfn};

/// `machine.nested_tlb`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NestedTlbConfig {
    /// Entries; 0 switches the nested TLB off (every translation of a guest
    /// frame walks the EPT).
    pub entries: u32,
    /// Ways; 0 (or at least `entries`) = fully associative.
    pub ways: u32,
    /// Cycles of one lookup, paid by every nested translation.
    pub latency: u32,
}

impl Default for NestedTlbConfig {
    /// 16 entries, fully associative, as the nested TLBs studied by
    /// Bhargava et al. (ASPLOS 2008) had; not a measured part.
    fn default() -> Self {
        NestedTlbConfig { entries: 16, ways: 0, latency: 1 }
    }
}

impl NestedTlbConfig {
    pub fn validate(&self, prefix: &str) -> Result<()> {
        // A fully associative one is an `LruMap`, whose slots are 16-bit.
        if self.entries > 1 << 15 {
            return Err(Error::config(format!("{prefix}.entries"), "at most 32768 entries"));
        }
        let full = self.ways == 0 || self.entries <= self.ways;
        if !full && (!self.entries.is_multiple_of(self.ways) || !(self.entries / self.ways).is_power_of_two()) {
            return Err(Error::config(
                format!("{prefix}.entries"),
                format!("{} entries do not make a power-of-two number of {}-way sets", self.entries, self.ways),
            ));
        }
        Ok(())
    }
}

/// Where the VPID sits in a key; the size class sits at 45..47, the guest
/// frame at its leaf's granularity below (at most 2^40 frames).
const VPID_SHIFT: u32 = 48;
const CLASS_SHIFT: u32 = 45;

/// A read-only leaf's entry keeps this bit beside its base frame (host
/// frames are below 2^40), so a hit yields the permission with the frame.
const READ_ONLY: u64 = 1 << 63;
/// A leaf whose EPT dirty bit was clear at the fill keeps this bit too.
const CLEAN: u64 = 1 << 62;
/// What a hit returns: the host frame, the leaf's size, whether it allows
/// stores, whether its dirty bit was set.
pub type NestedHit = (Pfn, PageSize, bool, bool);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NestedTlbStats {
    pub hits: u64,
    pub misses: u64,
    pub invalidations: u64,
}

/// One core's nested TLB.
#[derive(Debug, Clone)]
pub struct NestedTlb {
    /// Exact LRU: an O(1) map when fully associative (the default), sets
    /// when `ways` says so.
    array: LruArray<Pfn>,
    /// Live entries per leaf size (indexed as `PageSize::ALL`): a lookup
    /// probes only the sizes that hold some (a VM on 4 KiB host pages
    /// would otherwise probe three times on every miss).
    live: [u32; 3],
    stats: NestedTlbStats,
}

impl NestedTlb {
    /// `cfg` must have passed [`NestedTlbConfig::validate`].
    pub fn new(cfg: &NestedTlbConfig, seed: u64) -> Self {
        let array = LruArray::new(cfg.entries, cfg.ways, seed);
        NestedTlb { array, live: [0; 3], stats: NestedTlbStats::default() }
    }

    /// The host bytes [`NestedTlb::new`] allocates (the host-memory
    /// budget's count).
    pub fn host_bytes(cfg: &NestedTlbConfig) -> u64 {
        LruArray::<Pfn>::host_bytes(cfg.entries, cfg.ways)
    }

    fn key(vpid: u16, gfn: Gfn, size: PageSize) -> (u64, u64) {
        let index = gfn.raw() >> (size.shift() - 12);
        let class = size.leaf_level() as u64;
        (((vpid as u64) << VPID_SHIFT) | (class << CLASS_SHIFT) | index, index)
    }

    /// The row of `live` counting a key's size: its leaf level less one.
    fn live_row(key: u64) -> usize {
        (((key >> CLASS_SHIFT) & 7) - 1) as usize
    }

    /// The host frame of `gfn`, the size of the EPT leaf it came from,
    /// whether that leaf allows stores and whether it was dirty.
    #[inline]
    pub fn lookup(&mut self, vpid: u16, gfn: Gfn) -> Option<NestedHit> {
        if self.array.is_disabled() {
            return None;
        }
        for (size, _) in PageSize::ALL.into_iter().zip(self.live).filter(|&(_, n)| n != 0) {
            let (key, index) = Self::key(vpid, gfn, size);
            if let Some(base) = self.array.lookup(key, index) {
                self.stats.hits += 1;
                let frame = Pfn::new((base.raw() & !(READ_ONLY | CLEAN)) + (gfn.raw() & (size.nr_pages() - 1)));
                return Some((frame, size, base.raw() & READ_ONLY == 0, base.raw() & CLEAN == 0));
            }
        }
        self.stats.misses += 1;
        None
    }

    /// After an EPT walk found `gfn` in a leaf of `size` mapping to host
    /// frame `frame` (of `gfn` itself), `writable` or not, `dirty` or not.
    pub fn fill(&mut self, vpid: u16, gfn: Gfn, frame: Pfn, size: PageSize, writable: bool, dirty: bool) {
        let (key, index) = Self::key(vpid, gfn, size);
        let fresh = self.array.peek(key, index).is_none();
        self.fill_with(vpid, gfn, frame, size, (writable, dirty), fresh);
    }

    /// [`fill`](Self::fill) right after [`lookup`](Self::lookup) missed
    /// `gfn` (the walker's case): the entry cannot be present, so only the
    /// victim is searched for.
    #[inline]
    pub fn fill_after_miss(&mut self, vpid: u16, gfn: Gfn, frame: Pfn, size: PageSize, writable: bool, dirty: bool) {
        self.fill_with(vpid, gfn, frame, size, (writable, dirty), true);
    }

    /// Marks the entry a lookup of `gfn` just hit (so the most recent)
    /// dirty: its EPT leaf's dirty bit was set since its fill. (Out of line,
    /// with a plain insert: the walker's fill keeps its inlining.)
    #[cold]
    #[inline(never)]
    pub fn mark_dirty(&mut self, vpid: u16, gfn: Gfn, hit: NestedHit) {
        let (frame, size, writable, _) = hit;
        let (key, index) = Self::key(vpid, gfn, size);
        if self.array.peek(key, index).is_some() {
            let read_only = if writable { 0 } else { READ_ONLY };
            let base = Pfn::new((frame.raw() - (gfn.raw() & (size.nr_pages() - 1))) | read_only);
            self.array.insert(key, index, base);
        }
    }

    #[inline(always)]
    fn fill_with(&mut self, vpid: u16, gfn: Gfn, frame: Pfn, size: PageSize, perm: (bool, bool), fresh: bool) {
        let (writable, dirty) = perm;
        if self.array.is_disabled() {
            return;
        }
        let (key, index) = Self::key(vpid, gfn, size);
        let flags = (if writable { 0 } else { READ_ONLY }) | (if dirty { 0 } else { CLEAN });
        let base = Pfn::new((frame.raw() - (gfn.raw() & (size.nr_pages() - 1))) | flags);
        let evicted =
            if fresh { self.array.insert_absent(key, index, base) } else { self.array.insert(key, index, base) };
        self.live[Self::live_row(key)] += fresh as u32;
        if let Some(old) = evicted {
            self.live[Self::live_row(old)] -= 1;
        }
    }

    /// Drops every entry of `vpid` overlapping guest frames [start, end).
    pub fn invalidate_range(&mut self, vpid: u16, start: Gfn, end: Gfn) -> usize {
        let live = &mut self.live;
        let n = self.array.invalidate_if(|key, _| {
            let row = Self::live_row(key);
            let pages_shift = 9 * row as u32;
            let first = (key & ((1 << CLASS_SHIFT) - 1)) << pages_shift;
            let last = first + (1 << pages_shift);
            let hit = (key >> VPID_SHIFT) as u16 == vpid && first < end.raw() && start.raw() < last;
            live[row] -= hit as u32;
            hit
        });
        self.stats.invalidations += n as u64;
        n
    }

    pub fn flush_all(&mut self) -> usize {
        self.live = [0; 3];
        self.array.invalidate_if(|_, _| true)
    }

    pub fn stats(&self) -> NestedTlbStats {
        self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = NestedTlbStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ntlb(entries: u32, ways: u32) -> NestedTlb {
        NestedTlb::new(&NestedTlbConfig { entries, ways, latency: 1 }, 1)
    }

    #[test]
    fn a_2m_leaf_translates_every_guest_frame_it_covers() {
        let mut t = ntlb(4, 0);
        t.fill(1, Gfn::new(512 + 7), Pfn::new(4096 + 7), PageSize::Size2M, true, true);
        assert_eq!(t.lookup(1, Gfn::new(512 + 300)), Some((Pfn::new(4096 + 300), PageSize::Size2M, true, true)));
        assert_eq!(t.lookup(1, Gfn::new(1024)), None, "outside the leaf");
        assert_eq!(t.lookup(2, Gfn::new(512)), None, "another VM's");
        assert_eq!(t.stats(), NestedTlbStats { hits: 1, misses: 2, invalidations: 0 });
    }

    #[test]
    fn a_read_only_leaf_gives_its_frame_and_no_store_permission() {
        let mut t = ntlb(16, 0);
        t.fill(1, Gfn::new(5), Pfn::new(77), PageSize::Size4K, false, true);
        t.fill(1, Gfn::new(6), Pfn::new(78), PageSize::Size4K, true, true);
        assert_eq!(t.lookup(1, Gfn::new(5)), Some((Pfn::new(77), PageSize::Size4K, false, true)));
        assert_eq!(t.lookup(1, Gfn::new(6)), Some((Pfn::new(78), PageSize::Size4K, true, true)));
        // A refill after a copy-on-write makes it writable.
        t.fill(1, Gfn::new(5), Pfn::new(90), PageSize::Size4K, true, true);
        assert_eq!(t.lookup(1, Gfn::new(5)), Some((Pfn::new(90), PageSize::Size4K, true, true)));
    }

    #[test]
    fn a_clean_leaf_says_so_until_it_is_filled_dirty() {
        let mut t = ntlb(16, 0);
        t.fill(1, Gfn::new(512), Pfn::new(4096), PageSize::Size2M, true, false);
        assert_eq!(t.lookup(1, Gfn::new(513)), Some((Pfn::new(4097), PageSize::Size2M, true, false)));
        t.mark_dirty(1, Gfn::new(513), (Pfn::new(4097), PageSize::Size2M, true, false));
        assert_eq!(t.lookup(1, Gfn::new(513)), Some((Pfn::new(4097), PageSize::Size2M, true, true)));
        t.mark_dirty(1, Gfn::new(1 << 20), (Pfn::new(1), PageSize::Size4K, true, false));
        assert_eq!(t.lookup(1, Gfn::new(1 << 20)), None, "an absent entry stays absent");
        t.fill(1, Gfn::new(7), Pfn::new(70), PageSize::Size4K, false, false);
        assert_eq!(t.lookup(1, Gfn::new(7)), Some((Pfn::new(70), PageSize::Size4K, false, false)));
    }

    #[test]
    fn lru_keeps_the_last_entries_and_ranges_invalidate_what_they_touch() {
        let mut t = ntlb(2, 0);
        for g in [1, 2, 3] {
            t.fill(1, Gfn::new(g), Pfn::new(100 + g), PageSize::Size4K, true, true);
        }
        assert_eq!(t.lookup(1, Gfn::new(1)), None, "evicted");
        assert_eq!(t.lookup(1, Gfn::new(3)), Some((Pfn::new(103), PageSize::Size4K, true, true)));
        assert_eq!(t.invalidate_range(1, Gfn::new(3), Gfn::new(4)), 1);
        assert_eq!(t.lookup(1, Gfn::new(3)), None);
        assert_eq!(t.lookup(1, Gfn::new(2)), Some((Pfn::new(102), PageSize::Size4K, true, true)));
    }

    /// The live counts a lookup trusts, recounted from the array.
    fn recount(t: &NestedTlb) -> [u32; 3] {
        let mut n = [0; 3];
        for key in t.array.keys() {
            n[NestedTlb::live_row(key)] += 1;
        }
        n
    }

    #[test]
    fn live_counts_follow_fills_evictions_invalidations_and_flushes() {
        let mut t = ntlb(2, 0);
        t.fill(1, Gfn::new(512), Pfn::new(4096), PageSize::Size2M, true, true);
        t.fill(1, Gfn::new(3), Pfn::new(103), PageSize::Size4K, true, true);
        assert_eq!(t.live, [1, 1, 0]);
        t.fill(1, Gfn::new(3), Pfn::new(103), PageSize::Size4K, true, true);
        assert_eq!(t.live, [1, 1, 0], "a refill of a present key adds nothing");
        t.fill(1, Gfn::new(1 << 18), Pfn::new(1 << 18), PageSize::Size1G, true, true);
        assert_eq!(t.live, [1, 0, 1], "the LRU 2 MiB entry was evicted");
        assert_eq!(t.lookup(1, Gfn::new(3)), Some((Pfn::new(103), PageSize::Size4K, true, true)));
        assert_eq!(t.invalidate_range(1, Gfn::new(0), Gfn::new(1 << 19)), 2);
        assert_eq!(t.live, [0, 0, 0]);
        assert_eq!(t.lookup(1, Gfn::new(3)), None);
        for g in [7, 8, 9] {
            t.fill(2, Gfn::new(g), Pfn::new(g), PageSize::Size4K, true, true);
            assert_eq!(t.live, recount(&t));
        }
        t.flush_all();
        assert_eq!(t.live, [0, 0, 0]);
        assert_eq!(t.stats().misses, 1, "a lookup with no live size still counts its miss");
    }

    #[test]
    fn zero_entries_is_off() {
        let mut t = ntlb(0, 0);
        t.fill(1, Gfn::new(1), Pfn::new(1), PageSize::Size4K, true, true);
        assert_eq!(t.lookup(1, Gfn::new(1)), None);
        assert_eq!(t.stats().misses, 0, "a switched-off nested TLB counts nothing");
    }

    #[test]
    fn a_bad_geometry_names_its_key() {
        let cfg = NestedTlbConfig { entries: 24, ways: 4, latency: 1 };
        let e = cfg.validate("machine.nested_tlb").unwrap_err().to_string();
        assert!(e.contains("machine.nested_tlb.entries"), "{e}");
    }
}
