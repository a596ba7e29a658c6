//! The nested TLB: a small cache of guest-physical to host-physical
//! translations (AMD's NTLB; Intel caches the same in its EPT
//! paging-structure caches' leaves), consulted by the two-dimensional
//! walker before each EPT walk (`engine::walk2d`). An entry holds what one
//! EPT leaf says: the host frame of a guest frame range of the leaf's size
//! (4 KiB, 2 MiB or 1 GiB), tagged with the VM's VPID.
//!
//! Host changes drop entries by guest-physical range
//! ([`NestedTlb::invalidate_range`]), the INVEPT the hypervisor issues.

use crate::error::{Error, Result};
use crate::hw::set_assoc::{Replacement, SetAssoc};
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
        if self.entries > 1 << 16 {
            return Err(Error::config(format!("{prefix}.entries"), "at most 65536 entries"));
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NestedTlbStats {
    pub hits: u64,
    pub misses: u64,
    pub invalidations: u64,
}

/// One core's nested TLB.
#[derive(Debug, Clone)]
pub struct NestedTlb {
    array: SetAssoc<Pfn>,
    stats: NestedTlbStats,
}

impl NestedTlb {
    /// `cfg` must have passed [`NestedTlbConfig::validate`].
    pub fn new(cfg: &NestedTlbConfig, seed: u64) -> Self {
        let (entries, ways) = (cfg.entries as usize, cfg.ways as usize);
        let array = if ways == 0 || entries <= ways {
            SetAssoc::fully_associative(entries, Replacement::Lru, seed)
        } else {
            SetAssoc::new(entries / ways, ways, Replacement::Lru, seed)
        };
        NestedTlb { array, stats: NestedTlbStats::default() }
    }

    fn key(vpid: u16, gfn: Gfn, size: PageSize) -> (u64, u64) {
        let index = gfn.raw() >> (size.shift() - 12);
        let class = size.leaf_level() as u64;
        (((vpid as u64) << VPID_SHIFT) | (class << CLASS_SHIFT) | index, index)
    }

    /// The host frame of `gfn` and the size of the EPT leaf it came from.
    #[inline]
    pub fn lookup(&mut self, vpid: u16, gfn: Gfn) -> Option<(Pfn, PageSize)> {
        if self.array.is_disabled() {
            return None;
        }
        for size in PageSize::ALL {
            let (key, index) = Self::key(vpid, gfn, size);
            let set = self.array.set_of(index);
            if let Some(&mut base) = self.array.lookup(set, key) {
                self.stats.hits += 1;
                return Some((base.add(gfn.raw() & (size.nr_pages() - 1)), size));
            }
        }
        self.stats.misses += 1;
        None
    }

    /// After an EPT walk found `gfn` in a leaf of `size` mapping to host
    /// frame `frame` (of `gfn` itself).
    pub fn fill(&mut self, vpid: u16, gfn: Gfn, frame: Pfn, size: PageSize) {
        if self.array.is_disabled() {
            return;
        }
        let (key, index) = Self::key(vpid, gfn, size);
        let base = Pfn::new(frame.raw() - (gfn.raw() & (size.nr_pages() - 1)));
        let set = self.array.set_of(index);
        self.array.insert(set, key, base);
    }

    /// Drops every entry of `vpid` overlapping guest frames [start, end).
    pub fn invalidate_range(&mut self, vpid: u16, start: Gfn, end: Gfn) -> usize {
        let n = self.array.invalidate_if(|key, _| {
            let class = ((key >> CLASS_SHIFT) & 7) as u32;
            let pages_shift = 9 * (class - 1);
            let first = (key & ((1 << CLASS_SHIFT) - 1)) << pages_shift;
            let last = first + (1 << pages_shift);
            (key >> VPID_SHIFT) as u16 == vpid && first < end.raw() && start.raw() < last
        });
        self.stats.invalidations += n as u64;
        n
    }

    pub fn flush_all(&mut self) -> usize {
        self.array.flush()
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
        t.fill(1, Gfn::new(512 + 7), Pfn::new(4096 + 7), PageSize::Size2M);
        assert_eq!(t.lookup(1, Gfn::new(512 + 300)), Some((Pfn::new(4096 + 300), PageSize::Size2M)));
        assert_eq!(t.lookup(1, Gfn::new(1024)), None, "outside the leaf");
        assert_eq!(t.lookup(2, Gfn::new(512)), None, "another VM's");
        assert_eq!(t.stats(), NestedTlbStats { hits: 1, misses: 2, invalidations: 0 });
    }

    #[test]
    fn lru_keeps_the_last_entries_and_ranges_invalidate_what_they_touch() {
        let mut t = ntlb(2, 0);
        for g in [1, 2, 3] {
            t.fill(1, Gfn::new(g), Pfn::new(100 + g), PageSize::Size4K);
        }
        assert_eq!(t.lookup(1, Gfn::new(1)), None, "evicted");
        assert_eq!(t.lookup(1, Gfn::new(3)), Some((Pfn::new(103), PageSize::Size4K)));
        assert_eq!(t.invalidate_range(1, Gfn::new(3), Gfn::new(4)), 1);
        assert_eq!(t.lookup(1, Gfn::new(3)), None);
        assert_eq!(t.lookup(1, Gfn::new(2)), Some((Pfn::new(102), PageSize::Size4K)));
    }

    #[test]
    fn zero_entries_is_off() {
        let mut t = ntlb(0, 0);
        t.fill(1, Gfn::new(1), Pfn::new(1), PageSize::Size4K);
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
