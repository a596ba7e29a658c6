//! The L1 TLB of one access side: one array per page size (4 KiB, 2 MiB,
//! 1 GiB), probed smallest first. Only plain pages live here: an L2 hit
//! on any other kind of entry installs a plain piece of it, so the probe
//! of every access stays a handful of key compares.
//!
//! Two simulator shortcuts, neither a hardware structure, keep the probe
//! cheap without changing any outcome: each array counts its entries by
//! region ([`RegionCounts`]), so a probe skips an array that holds nothing
//! near the address, and each side keeps its last few huge-page entries
//! used ([`Recent`]), taken without a probe while they stay valid.

use super::entry::Translation;
use super::key::{key_asid, key_first_vpn, make_key, ReachSize, ASID_SHIFT, REACHES, VPN_BITS};
use super::stats::Counters;
use crate::hw::set_assoc::{Placed, Replacement, SetAssoc, Slot};
use crate::units::{Asid, Pfn};

/// An L1 entry: always a plain page of its array's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct L1Entry {
    /// First frame of this L1 page.
    pub(super) pfn: Pfn,
    pub(super) writable: bool,
    pub(super) dirty: bool,
    /// Size of the translation this entry was built from (>= the array's
    /// size): INVLPG anywhere in that translation must drop this entry.
    pub(super) origin: ReachSize,
}

impl Default for L1Entry {
    fn default() -> Self {
        L1Entry { pfn: Pfn::new(0), writable: false, dirty: false, origin: ReachSize::Size4K }
    }
}

#[derive(Debug, Clone)]
pub(super) struct L1Array {
    pub(super) size: ReachSize,
    /// `pages_shift(size)`, `key_class(size) << VPN_BITS` and the mask of a
    /// 4 KiB page's index inside a `size` page, precomputed: the L1 probe is
    /// the hottest code of the simulator and should not branch on `size`.
    pub(super) pages_shift: u32,
    pub(super) class_bits: u64,
    pub(super) offset_mask: u64,
    pub(super) sa: SetAssoc<L1Entry>,
    pub(super) counters: Counters,
    pub(super) regions: RegionCounts,
}

/// Buckets of [`RegionCounts`].
pub(super) const REGION_BUCKETS: usize = 64;
/// The L1 probe consults [`RegionCounts`] only for an array with fewer
/// entries than this (a quarter of the buckets: most of them then count
/// nothing).
const REGION_SPARSE: usize = REGION_BUCKETS / 4;

/// An L1 array's entries counted by a hash of their region: the aligned
/// block of 512 of the array's pages (2 MiB for the 4 KiB array) in one
/// address space. A probe skips the array when the address's bucket is
/// empty: it could not hit. The L1 probes the smaller pages first (a 4
/// KiB entry takes precedence), so without this every access through a
/// 2 MiB entry also scans the 4 KiB array, which a few 4 KiB pages (a
/// mapping's unaligned tail) keep from ever being empty. Exact: every
/// insertion and removal is counted; collisions only cost a probe.
#[derive(Debug, Clone)]
pub(super) struct RegionCounts(pub(super) [u32; REGION_BUCKETS]);

impl RegionCounts {
    /// The bucket of an L1 key (asid | class | page index): its bits above
    /// the low 9 of the index name the region.
    #[inline]
    pub(super) fn bucket(key: u64) -> usize {
        ((key >> 9).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize
    }
    #[inline]
    pub(super) fn may_hold(&self, key: u64) -> bool {
        self.0[Self::bucket(key)] != 0
    }
    #[inline]
    pub(super) fn add(&mut self, key: u64) {
        self.0[Self::bucket(key)] += 1;
    }
    #[inline]
    pub(super) fn remove(&mut self, key: u64) {
        self.0[Self::bucket(key)] -= 1;
    }
}

impl L1Array {
    pub(super) fn new(size: ReachSize, entries: u32, ways: u32, policy: Replacement, seed: u64) -> Self {
        L1Array {
            size,
            pages_shift: size.pages_shift(),
            class_bits: size.key_class() << VPN_BITS,
            offset_mask: size.nr_pages() - 1,
            sa: build(entries, ways, policy, seed),
            counters: Counters::default(),
            regions: RegionCounts([0; REGION_BUCKETS]),
        }
    }

    /// Inserts `entry` under `key` in `set` (`known_absent`: a probe just
    /// missed the key), keeping the region counts; returns the slot it
    /// took (`None` for a disabled array).
    #[inline(always)]
    pub(super) fn insert(&mut self, set: usize, key: u64, entry: L1Entry, known_absent: bool) -> Option<Slot> {
        let placed = if known_absent {
            self.sa.insert_absent(set, key, entry)
        } else {
            // The entry's fields, not the entry: passed by reference, it
            // would be built on the stack for both paths, and the host
            // could not forward those narrow stores to the wider loads.
            let L1Entry { pfn, writable, dirty, origin } = entry;
            self.insert_unknown(set, key, pfn, writable, dirty, origin)
        };
        let placed = placed?;
        self.counters.fills += 1;
        if placed.fresh {
            self.regions.add(key);
        }
        if let Some(old) = placed.evicted {
            self.counters.evictions += 1;
            self.regions.remove(old);
        }
        Some(placed.slot)
    }

    /// The insertion of a key no probe just missed.
    #[inline(never)]
    fn insert_unknown(
        &mut self,
        set: usize,
        key: u64,
        pfn: Pfn,
        writable: bool,
        dirty: bool,
        origin: ReachSize,
    ) -> Option<Placed> {
        self.sa.insert_slot(set, key, L1Entry { pfn, writable, dirty, origin })
    }

    /// Drops the entries whose key and value satisfy `pred` (counted as
    /// invalidations); returns how many.
    pub(super) fn drop_if(&mut self, mut pred: impl FnMut(u64, &L1Entry) -> bool) -> usize {
        let regions = &mut self.regions;
        let n = self.sa.invalidate_if(|key, e| {
            let drop = pred(key, e);
            if drop {
                regions.remove(key);
            }
            drop
        });
        self.counters.invalidations += n as u64;
        n
    }

    /// The key of the page of this array's size holding 4 KiB page `mvpn`,
    /// and its set.
    #[inline]
    pub(super) fn set_and_key(&self, asid: Asid, mvpn: u64) -> (usize, u64) {
        let index = mvpn >> self.pages_shift;
        debug_assert_eq!(((asid as u64) << ASID_SHIFT) | self.class_bits | index, make_key(asid, self.size, mvpn));
        (self.sa.set_of(index), ((asid as u64) << ASID_SHIFT) | self.class_bits | index)
    }

    #[inline]
    pub(super) fn translation(&self, e: &L1Entry, mvpn: u64) -> Translation {
        Translation { pfn: e.pfn.add(mvpn & self.offset_mask), size: self.size, writable: e.writable, dirty: e.dirty }
    }

    /// Drops every entry of `asid` whose origin translation contains a page
    /// of `[first, end)` (masked vpns).
    pub(super) fn invalidate_origin_overlapping(&mut self, asid: Asid, first: u64, end: u64) -> usize {
        let size = self.size;
        self.drop_if(|key, e| {
            key_asid(key) == asid && {
                let origin_pages = e.origin.nr_pages();
                let base = key_first_vpn(key, size) & !(origin_pages - 1);
                base < end && first < base + origin_pages
            }
        })
    }
}

/// The L1 arrays of one side, probed smallest page first. (Lookups are
/// not counted here: they equal the side's accesses, see [`super::Tlb::stats`].)
#[derive(Debug, Clone)]
pub(super) struct L1Tlb {
    pub(super) arrays: [L1Array; 3],
    /// For each reach (by `ReachSize as usize`), the index of the array
    /// a translation of that reach fills ([`L1Tlb::array_index_for`]), or
    /// [`NO_ARRAY`]: chosen once, since arrays are enabled for good.
    pub(super) fill_target: [usize; REACHES],
    /// [`miss_tag`] of the last access that missed every array, until the
    /// next fill: the fill for that access then knows its key is absent
    /// (invalidations only remove keys, and every fill clears the tag).
    pub(super) missed: u64,
    /// The entries the last few hits and fills of this side used; see
    /// [`Recent`].
    recent: [Recent; RECENT],
    /// The next of `recent` to replace (round robin).
    recent_next: usize,
    /// Counts the changes to the arrays' keys (fills and invalidations).
    generation: u64,
    /// The generation `recent` belongs to: its entries hold only while no
    /// key has changed since (a side that holds only 4 KiB pages never
    /// keeps any, and skips their search).
    recent_generation: u64,
}

/// How many entries [`L1Tlb::recent`] keeps: stream kernels touch three
/// or four pages in turn.
const RECENT: usize = 4;

/// An L1 entry of a huge page that a recent lookup hit or a fill
/// installed: the page it translates (asid, and page index at its array's
/// size) and where it sits. A lookup of an address in that page takes
/// this entry without probing the arrays, with the same effect as the
/// probe: the same entry (the value is read from its slot), the hit
/// counted in its array, the slot touched. Kept only while the arrays'
/// keys do not change (every fill and invalidation makes them lapse), and
/// only for an entry no smaller array can overrule anywhere in its page
/// (see [`L1Tlb::may_remember`]). 4 KiB entries are not kept: their
/// arrays are filled too often for the shortcut to pay. A simulator
/// shortcut, not a hardware structure: it changes no result.
#[derive(Debug, Clone, Copy)]
struct Recent {
    index: u64,
    asid: Asid,
    shift: u8,
    array: u8,
    slot: u32,
}

impl Recent {
    /// Matches no address (page indexes have at most 45 bits).
    const NONE: Recent = Recent { index: u64::MAX, asid: 0, shift: 0, array: 0, slot: 0 };
}

/// No L1 array can take a translation of this size.
pub(super) const NO_ARRAY: usize = 3;
/// [`L1Tlb::missed`] when no miss is pending (no [`miss_tag`] equals it:
/// bits 45..47 of a tag are clear).
pub(super) const NO_MISS: u64 = u64::MAX;

/// The asid and masked vpn of an access, in one word.
#[inline]
pub(super) fn miss_tag(asid: Asid, mvpn: u64) -> u64 {
    ((asid as u64) << ASID_SHIFT) | mvpn
}

impl L1Tlb {
    pub(super) fn new(arrays: [L1Array; 3]) -> Self {
        let mut side = L1Tlb {
            arrays,
            fill_target: [NO_ARRAY; REACHES],
            missed: NO_MISS,
            recent: [Recent::NONE; RECENT],
            recent_next: 0,
            generation: 1,
            recent_generation: 0,
        };
        for size in ReachSize::ALL {
            side.fill_target[size as usize] = side.array_index_for(size);
        }
        side
    }

    // Always inlined: the translation stage's first probe of every access.
    #[inline(always)]
    pub(super) fn lookup(&mut self, asid: Asid, mvpn: u64) -> Option<Translation> {
        if self.recent_generation == self.generation {
            if let Some(r) = self.recent.iter().find(|r| r.index == mvpn >> r.shift && r.asid == asid) {
                let array = &mut self.arrays[r.array as usize];
                let slot = r.slot as Slot;
                array.sa.touch(slot);
                array.counters.hits += 1;
                return Some(array.translation(array.sa.value(slot), mvpn));
            }
        }
        self.probe(asid, mvpn)
    }

    /// The lookup through the arrays, smallest page first.
    #[inline(always)]
    pub(super) fn probe(&mut self, asid: Asid, mvpn: u64) -> Option<Translation> {
        for k in 0..self.arrays.len() {
            let array = &mut self.arrays[k];
            // An empty array (the 2 MiB and 1 GiB ones of a 4 KiB workload,
            // a disabled one), or one with nothing in the address's region,
            // cannot hit: skip its probe.
            if array.sa.is_empty() {
                continue;
            }
            let (set, key) = array.set_and_key(asid, mvpn);
            // The region count pays where the array holds a few entries
            // (a 2 MiB workload's unaligned tails). In a full one most
            // buckets count something, and the answer, a coin toss for
            // random addresses, costs the host a misprediction; the probe
            // alone is cheaper.
            if array.sa.len() < REGION_SPARSE && !array.regions.may_hold(key) {
                continue;
            }
            if let Some(slot) = array.sa.find(set, key) {
                array.sa.touch(slot);
                array.counters.hits += 1;
                let t = array.translation(array.sa.value(slot), mvpn);
                self.note_use(k, slot, asid, mvpn);
                return Some(t);
            }
        }
        None
    }

    /// A hit or fill of array `k`'s entry in `slot`, translating `mvpn`:
    /// a huge page's entry may be kept in `recent`; a 4 KiB one never is
    /// (see [`Recent`]), and costs no call.
    #[inline(always)]
    pub(super) fn note_use(&mut self, k: usize, slot: Slot, asid: Asid, mvpn: u64) {
        if k > 0 {
            self.remember(k, slot, asid, mvpn);
        }
    }

    /// Whether an entry of huge-page array `k` (1 or 2) translating `mvpn`
    /// may be kept in `recent`: no smaller array holds anything in its
    /// page (one that did would take precedence for some address of it).
    /// For the 2 MiB array the 4 KiB array's region count answers exactly
    /// that (its regions are 2 MiB); for the 1 GiB array only empty smaller
    /// arrays do.
    #[inline]
    pub(super) fn may_remember(&self, k: usize, asid: Asid, mvpn: u64) -> bool {
        let [small, mid, _] = &self.arrays;
        match k {
            1 => small.sa.is_empty() || !small.regions.may_hold(small.set_and_key(asid, mvpn).1),
            _ => small.sa.is_empty() && mid.sa.is_empty(),
        }
    }

    /// Keeps huge-page array `k`'s entry in `slot`, translating `mvpn`, in
    /// `recent` if [`may_remember`](Self::may_remember) allows. (Out of
    /// line: inlined, it crowded the registers of the 4 KiB fill, which
    /// never calls it.)
    #[inline(never)]
    pub(super) fn remember(&mut self, k: usize, slot: Slot, asid: Asid, mvpn: u64) {
        debug_assert!(k > 0, "4 KiB entries are not kept");
        if !self.may_remember(k, asid, mvpn) {
            return;
        }
        if self.recent_generation != self.generation {
            self.recent = [Recent::NONE; RECENT];
            self.recent_generation = self.generation;
        }
        let shift = self.arrays[k].pages_shift;
        self.recent[self.recent_next] =
            Recent { index: mvpn >> shift, asid, shift: shift as u8, array: k as u8, slot: slot as u32 };
        self.recent_next = (self.recent_next + 1) % RECENT;
    }

    /// Records a change of the arrays' keys: every `recent` entry lapses.
    #[inline]
    pub(super) fn keys_changed(&mut self) {
        self.generation += 1;
    }

    pub(super) fn peek(&self, asid: Asid, mvpn: u64) -> Option<Translation> {
        self.arrays.iter().find_map(|array| {
            let (set, key) = array.set_and_key(asid, mvpn);
            array.sa.peek(set, key).map(|e| array.translation(e, mvpn))
        })
    }

    /// The largest enabled array for pages no bigger than `size` (a page
    /// too big for every enabled array is fractured into pieces of that
    /// size), or [`NO_ARRAY`].
    pub(super) fn array_index_for(&self, size: ReachSize) -> usize {
        self.arrays.iter().rposition(|a| a.size <= size && !a.sa.is_disabled()).unwrap_or(NO_ARRAY)
    }

    /// Applies an invalidation to every array.
    pub(super) fn for_each_array(&mut self, mut f: impl FnMut(&mut L1Array) -> usize) -> usize {
        self.keys_changed();
        self.arrays.iter_mut().map(&mut f).sum()
    }
}

pub(super) fn build<V: Copy + Default>(entries: u32, ways: u32, policy: Replacement, seed: u64) -> SetAssoc<V> {
    if entries == 0 {
        return SetAssoc::new(1, 0, policy, seed);
    }
    SetAssoc::new((entries / ways) as usize, ways as usize, policy, seed)
}
