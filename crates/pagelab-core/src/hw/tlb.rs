//! The per-core TLB hierarchy, organised as on Intel cores (Skylake defaults).
//!
//! - L1 data TLB: one array per page size (4 KiB, 2 MiB, 1 GiB).
//! - L1 instruction TLB (optional): 4 KiB and 2 MiB arrays.
//! - L2 TLB (STLB): one array shared by 4 KiB and 2 MiB entries (a 4 KiB
//!   entry is indexed by its vpn, a 2 MiB entry by vpn >> 9; both are looked
//!   up; the key carries the size), and a small separate 1 GiB array.
//!
//! Entries have kinds ([`EntryKind`]): a regular page, or a colored huge page
//! (CHP, "Colored Huge Pages" section III-B: a 2 MiB entry carrying eight
//! sub-mapping frames). Only the L2 TLB holds entry kinds other than regular
//! pages: on an L2 hit the hardware generates an ordinary L1 entry (for CHP a
//! 4 KiB one), so the latency-critical L1 path stays a handful of key compares.
//! L1 entries are therefore compact ([`L1Entry`]); each remembers the size of
//! the translation it came from (its *origin*), so that INVLPG on any address
//! of a 2 MiB page also drops the 4 KiB L1 entries built from it, as the
//! Intel SDM (4.10.4.1) requires of fractured pages.
//!
//! Costs (see [`TlbConfig`]): every access pays `l1_latency` (default 0: the
//! L1 TLB lookup overlaps the VIPT L1D access); an access that misses every L1
//! array pays `l2_latency` more, whether the L2 hits or not (a miss then also
//! pays the walk, which the walker prices). The MMU charges them.
//!
//! Two simulator shortcuts, neither a hardware structure, keep the L1
//! probe cheap without changing any outcome: each L1 array counts its
//! entries by region (`RegionCounts`), so a probe skips an array that
//! holds nothing near the address, and each side keeps its last few
//! huge-page entries used (`Recent`), taken without a probe while they
//! stay valid.
//!
//! Who calls what: the MMU calls [`Tlb::lookup`] once per access. On an L2 hit
//! `lookup` itself fills the L1 (the rule of [`Tlb::fill_l1`]). On a miss the
//! MMU walks and calls [`Tlb::fill_after_walk`]. After setting a PTE's D bit
//! on a store through a clean entry it calls [`Tlb::mark_dirty`]. The OS
//! shoots down with the `invalidate_*` calls.

use crate::error::{Error, Result};
use crate::hw::set_assoc::{Replacement, SetAssoc, Slot, INVALID_KEY};
use crate::units::{Asid, PageSize, PhysAddr, Pfn, VirtAddr, Vpn, PAGE_SHIFT};

// ---------------------------------------------------------------------------
// Configuration

/// `machine.tlb`. An `*_entries` of 0 disables that array.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    pub l1_4k_entries: u32,
    pub l1_4k_ways: u32,
    pub l1_2m_entries: u32,
    pub l1_2m_ways: u32,
    pub l1_1g_entries: u32,
    pub l1_1g_ways: u32,
    /// The shared 4 KiB + 2 MiB L2 TLB (STLB).
    pub l2_entries: u32,
    pub l2_ways: u32,
    /// The L2's separate 1 GiB array. With 0 entries (as on Haswell) 1 GiB
    /// translations are not kept in the L2 at all.
    pub l2_1g_entries: u32,
    pub l2_1g_ways: u32,
    /// Cycles every access pays for the L1 TLB lookup. 0 by default: the
    /// lookup is hidden under the (virtually indexed) L1D access.
    pub l1_latency: u32,
    /// Cycles added to an access that misses every L1 array (paid whether the
    /// L2 hits or misses; a miss pays the page walk on top).
    pub l2_latency: u32,
    pub policy: Replacement,
    /// With the L1 instruction TLB off, instruction fetches use the L1 data
    /// arrays (still counted as instruction accesses).
    pub l1i_enabled: bool,
    pub l1i_4k_entries: u32,
    pub l1i_4k_ways: u32,
    pub l1i_2m_entries: u32,
    pub l1i_2m_ways: u32,
}

impl Default for TlbConfig {
    /// Skylake client, per core (Intel optimization manual, table 2-5).
    fn default() -> Self {
        TlbConfig {
            l1_4k_entries: 64,
            l1_4k_ways: 4,
            l1_2m_entries: 32,
            l1_2m_ways: 4,
            l1_1g_entries: 4,
            l1_1g_ways: 4,
            l2_entries: 1536,
            l2_ways: 12,
            l2_1g_entries: 16,
            l2_1g_ways: 4,
            l1_latency: 0,
            l2_latency: 9,
            policy: Replacement::Lru,
            l1i_enabled: true,
            l1i_4k_entries: 128,
            l1i_4k_ways: 8,
            l1i_2m_entries: 8,
            l1i_2m_ways: 8,
        }
    }
}

/// Largest array we accept: beyond this a typo is likelier than intent.
const MAX_ENTRIES: u32 = 1 << 20;

impl TlbConfig {
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let arrays = [
            ("l1_4k", self.l1_4k_entries, self.l1_4k_ways),
            ("l1_2m", self.l1_2m_entries, self.l1_2m_ways),
            ("l1_1g", self.l1_1g_entries, self.l1_1g_ways),
            ("l2", self.l2_entries, self.l2_ways),
            ("l2_1g", self.l2_1g_entries, self.l2_1g_ways),
            ("l1i_4k", self.l1i_4k_entries, self.l1i_4k_ways),
            ("l1i_2m", self.l1i_2m_entries, self.l1i_2m_ways),
        ];
        for (name, entries, ways) in arrays {
            validate_shape(prefix, name, entries, ways)?;
        }
        Ok(())
    }
}

/// An array of `entries` in `ways`-way sets: `entries == 0` (disabled), or
/// `ways >= 1` dividing `entries` into a power-of-two number of sets.
pub(crate) fn validate_shape(prefix: &str, name: &str, entries: u32, ways: u32) -> Result<()> {
    let entries_key = format!("{prefix}.{name}_entries");
    let ways_key = format!("{prefix}.{name}_ways");
    if entries == 0 {
        return Ok(());
    }
    if entries > MAX_ENTRIES {
        return Err(Error::config(entries_key, format!("{entries} entries; at most {MAX_ENTRIES}")));
    }
    if ways == 0 || ways > entries {
        return Err(Error::config(ways_key, format!("{ways} ways; must be 1..={entries} (the entries)")));
    }
    if !entries.is_multiple_of(ways) {
        return Err(Error::config(entries_key, format!("{entries} entries are not a multiple of {ways} ways")));
    }
    let sets = entries / ways;
    if !sets.is_power_of_two() {
        return Err(Error::config(
            entries_key,
            format!("{entries} entries / {ways} ways = {sets} sets, not a power of two"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Entries

/// What an L2 TLB entry translates, beyond its tag and permissions.
///
/// Later kinds go here, each with its arm in [`TlbEntry::frame_of`] and in
/// [`Tlb::fill_l1`]:
/// - `Perforated { pfn, filter: u8 }` (perforated pages IV-B..D): a 2 MiB
///   entry (size class 2M) whose 8-bit filter says which 256 KiB regions may
///   hold holes; a hit in a filtered region generates a 4 KiB L1 entry,
///   otherwise the hole bitmap must be consulted before filling.
/// - hole entries: ordinary 4 KiB `Page` entries (they win over the
///   perforated 2 MiB entry because the 4 KiB key is probed first).
/// - `HoleBitmap { bits: u32 }`: 32 bits of a page's hole bitmap, in the
///   shared L2 under key class [`KEY_CLASS_HOLE_BITMAP`] (vpn field = 2 MiB
///   vpn << 4 | chunk), so it competes for L2 capacity as in the paper.
/// - `Coalesced { pfn }` (Elastic Translations' contiguous bit): 64 KiB and
///   32 MiB entries under key classes [`KEY_CLASS_64K`] / [`KEY_CLASS_32M`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular page of the entry's size; `pfn` is its first frame.
    Page { pfn: Pfn },
    /// A colored huge page (CHP): 2 MiB of virtual memory as 8 sub-mappings
    /// of 64 pages; page `i` of sub-mapping `s` is frame
    /// `sub[s] | (i << stride_shift)`, the stride being the number of colors.
    ColoredHuge { sub: [Pfn; 8], stride_shift: u8 },
}

/// One L2 TLB entry (and what a walk returns to be cached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbEntry {
    pub asid: Asid,
    /// First virtual page, aligned to `size`.
    pub vbase: Vpn,
    pub size: PageSize,
    pub writable: bool,
    pub dirty: bool,
    pub kind: EntryKind,
}

impl Default for TlbEntry {
    fn default() -> Self {
        TlbEntry::page(0, Vpn::new(0), PageSize::Size4K, Pfn::new(0), false, false)
    }
}

/// CHP geometry: 8 sub-mappings of 64 base pages make one 2 MiB page.
const CHP_SUB_SHIFT: u32 = 18; // bits 18..20 of the 2 MiB offset pick the sub-mapping
const CHP_PAGES_PER_SUB: u64 = 64; // bits 12..17 index a page inside it

impl TlbEntry {
    pub fn page(asid: Asid, vbase: Vpn, size: PageSize, pfn: Pfn, writable: bool, dirty: bool) -> Self {
        debug_assert!(vbase.is_aligned(size.nr_pages()), "{vbase:?} not aligned to {size:?}");
        debug_assert!(pfn.is_aligned(size.nr_pages()), "{pfn:?} not aligned to {size:?}");
        TlbEntry { asid, vbase, size, writable, dirty, kind: EntryKind::Page { pfn } }
    }

    /// A 2 MiB colored huge page. Each `sub[s]` must leave clear the bits
    /// that page indexes OR into (`63 << stride_shift`), as the paper's
    /// allocator guarantees by carving sub-mappings from aligned blocks.
    pub fn colored_huge(asid: Asid, vbase: Vpn, sub: [Pfn; 8], stride_shift: u8, writable: bool, dirty: bool) -> Self {
        debug_assert!(vbase.is_aligned(PageSize::Size2M.nr_pages()));
        debug_assert!(sub.iter().all(|p| p.raw() & ((CHP_PAGES_PER_SUB - 1) << stride_shift) == 0));
        TlbEntry { asid, vbase, size: PageSize::Size2M, writable, dirty, kind: EntryKind::ColoredHuge { sub, stride_shift } }
    }

    /// Does this entry translate virtual page `vpn`?
    #[inline]
    pub fn covers(&self, vpn: Vpn) -> bool {
        vpn.raw() >= self.vbase.raw() && vpn.raw() - self.vbase.raw() < self.size.nr_pages()
    }

    /// Does this entry translate any page of `[start, end)`?
    pub fn overlaps(&self, start: Vpn, end: Vpn) -> bool {
        self.vbase.raw() < end.raw() && start.raw() < self.vbase.raw() + self.size.nr_pages()
    }

    /// The 4 KiB frame that backs `vaddr` (which the entry must cover).
    #[inline]
    pub fn frame_of(&self, vaddr: VirtAddr) -> Pfn {
        debug_assert!(self.covers(vaddr.vpn()), "{vaddr:?} outside {self:?}");
        match self.kind {
            EntryKind::Page { pfn } => pfn.add(vaddr.vpn().offset_from(self.vbase)),
            EntryKind::ColoredHuge { sub, stride_shift } => {
                // Paper III-B-2: step 3 takes the sub-mapping from offset bits
                // 18..20; step 4 picks its base frame; step 5 shifts the page
                // index (bits 12..17) by log2(colors); step 6 ORs them.
                let offset = vaddr.raw() & (PageSize::Size2M.bytes() - 1);
                let s = (offset >> CHP_SUB_SHIFT) as usize;
                let index = (offset >> PAGE_SHIFT) & (CHP_PAGES_PER_SUB - 1);
                Pfn::new(sub[s].raw() | (index << stride_shift))
            }
        }
    }

    /// The translation of `vaddr` by this entry.
    #[inline]
    pub fn translate(&self, vaddr: VirtAddr) -> Translation {
        Translation { pfn: self.frame_of(vaddr), size: self.size, writable: self.writable, dirty: self.dirty }
    }

    pub fn is_colored_huge(&self) -> bool {
        matches!(self.kind, EntryKind::ColoredHuge { .. })
    }
}

/// What a TLB hit yields for one access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// The 4 KiB frame backing the accessed address.
    pub pfn: Pfn,
    /// Size of the entry that hit (an L1 entry built from a larger page has
    /// the size of its L1 array).
    pub size: PageSize,
    pub writable: bool,
    pub dirty: bool,
}

impl Translation {
    #[inline]
    pub fn paddr(&self, vaddr: VirtAddr) -> PhysAddr {
        self.pfn.addr().add(vaddr.page_offset())
    }
}

/// Outcome of [`Tlb::lookup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // no allocation on the hot path; L2 hits are the rarer case
pub enum TlbLookup {
    L1(Translation),
    /// Missed every L1 array, hit the L2: the translation and the whole L2
    /// entry (the L1 has already been filled from it).
    L2(Translation, TlbEntry),
    /// Missed everywhere: walk, then [`Tlb::fill_after_walk`].
    Miss,
}

impl TlbLookup {
    pub fn translation(&self) -> Option<Translation> {
        match self {
            TlbLookup::L1(t) | TlbLookup::L2(t, _) => Some(*t),
            TlbLookup::Miss => None,
        }
    }
}

/// An L1 entry: always a plain page of its array's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct L1Entry {
    /// First frame of this L1 page.
    pfn: Pfn,
    writable: bool,
    dirty: bool,
    /// Size of the translation this entry was built from (>= the array's
    /// size): INVLPG anywhere in that translation must drop this entry.
    origin: PageSize,
}

impl Default for L1Entry {
    fn default() -> Self {
        L1Entry { pfn: Pfn::new(0), writable: false, dirty: false, origin: PageSize::Size4K }
    }
}

// ---------------------------------------------------------------------------
// Keys
//
// key = asid (bits 48..63) | size class (45..47) | vpn at that size (0..44).
// 45 vpn bits cover a 57-bit (5-level) virtual address; canonical addresses
// are distinct in their low 57 bits, so masking keeps keys unique. The class
// keeps a 4 KiB and a 2 MiB entry with equal index apart in the shared L2.
// Class 7 is never used, so no key equals the array's INVALID_KEY.

const VPN_BITS: u32 = 45;
const VPN_MASK: u64 = (1 << VPN_BITS) - 1;
const ASID_SHIFT: u32 = 48;

pub const KEY_CLASS_4K: u64 = 0;
pub const KEY_CLASS_2M: u64 = 1;
pub const KEY_CLASS_1G: u64 = 2;
/// Reserved for coalesced 64 KiB entries (contiguous PTEs).
pub const KEY_CLASS_64K: u64 = 3;
/// Reserved for coalesced 32 MiB entries (contiguous PMDs).
pub const KEY_CLASS_32M: u64 = 4;
/// Reserved for cached hole-bitmap chunks of perforated pages.
pub const KEY_CLASS_HOLE_BITMAP: u64 = 5;

#[inline]
const fn key_class(size: PageSize) -> u64 {
    match size {
        PageSize::Size4K => KEY_CLASS_4K,
        PageSize::Size2M => KEY_CLASS_2M,
        PageSize::Size1G => KEY_CLASS_1G,
    }
}

/// log2 of the 4 KiB pages in one page of `size`.
#[inline]
const fn pages_shift(size: PageSize) -> u32 {
    size.shift() - PAGE_SHIFT
}

/// The 45-bit vpn of `vaddr` used for indexing and keys.
#[inline]
fn masked_vpn(vaddr: VirtAddr) -> u64 {
    (vaddr.raw() >> PAGE_SHIFT) & VPN_MASK
}

/// Key of the `size` page containing 4 KiB page `mvpn` (a masked vpn).
#[inline]
fn make_key(asid: Asid, size: PageSize, mvpn: u64) -> u64 {
    ((asid as u64) << ASID_SHIFT) | (key_class(size) << VPN_BITS) | (mvpn >> pages_shift(size))
}

#[inline]
fn key_asid(key: u64) -> Asid {
    (key >> ASID_SHIFT) as Asid
}

/// First (masked) 4 KiB vpn of the page a key of size `size` names.
#[inline]
fn key_first_vpn(key: u64, size: PageSize) -> u64 {
    (key & VPN_MASK) << pages_shift(size)
}

// ---------------------------------------------------------------------------
// Statistics

/// Counters of one array. `lookups` counts accesses that reached its level
/// (all arrays of a level are probed in parallel); `misses = lookups - hits`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArrayStats {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    pub evictions: u64,
    pub invalidations: u64,
}

/// Per access side (data or instruction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SideStats {
    pub accesses: u64,
    /// Missed every L1 array (the engine's `dtlb.l1.misses`).
    pub l1_misses: u64,
    /// Missed the L2 too: page walks (`dtlb.l2.misses`).
    pub l2_misses: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlbStats {
    pub data: SideStats,
    pub instr: SideStats,
    pub l1d_4k: ArrayStats,
    pub l1d_2m: ArrayStats,
    pub l1d_1g: ArrayStats,
    pub l1i_4k: ArrayStats,
    pub l1i_2m: ArrayStats,
    /// The shared 4 KiB + 2 MiB L2 array.
    pub l2: ArrayStats,
    pub l2_1g: ArrayStats,
}

impl TlbStats {
    /// Flat `(name, value)` pairs: `dtlb.accesses`, `dtlb.l1.misses`,
    /// `dtlb.l2.misses`, the `itlb.` equivalents, then `tlb.<array>.<counter>`.
    pub fn named(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (side, s) in [("dtlb", &self.data), ("itlb", &self.instr)] {
            out.push((format!("{side}.accesses"), s.accesses));
            out.push((format!("{side}.l1.misses"), s.l1_misses));
            out.push((format!("{side}.l2.misses"), s.l2_misses));
        }
        for (name, a) in self.arrays() {
            for (counter, v) in [
                ("lookups", a.lookups),
                ("hits", a.hits),
                ("misses", a.misses),
                ("fills", a.fills),
                ("evictions", a.evictions),
                ("invalidations", a.invalidations),
            ] {
                out.push((format!("tlb.{name}.{counter}"), v));
            }
        }
        out
    }

    pub fn arrays(&self) -> [(&'static str, &ArrayStats); 7] {
        [
            ("l1d_4k", &self.l1d_4k),
            ("l1d_2m", &self.l1d_2m),
            ("l1d_1g", &self.l1d_1g),
            ("l1i_4k", &self.l1i_4k),
            ("l1i_2m", &self.l1i_2m),
            ("l2", &self.l2),
            ("l2_1g", &self.l2_1g),
        ]
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    hits: u64,
    fills: u64,
    evictions: u64,
    invalidations: u64,
}

impl Counters {
    fn report(&self, lookups: u64) -> ArrayStats {
        ArrayStats {
            lookups,
            hits: self.hits,
            misses: lookups - self.hits,
            fills: self.fills,
            evictions: self.evictions,
            invalidations: self.invalidations,
        }
    }
}

// ---------------------------------------------------------------------------
// L1: one array per page size

#[derive(Debug, Clone)]
struct L1Array {
    size: PageSize,
    /// `pages_shift(size)`, `key_class(size) << VPN_BITS` and the mask of a
    /// 4 KiB page's index inside a `size` page, precomputed: the L1 probe is
    /// the hottest code of the simulator and should not branch on `size`.
    pages_shift: u32,
    class_bits: u64,
    offset_mask: u64,
    sa: SetAssoc<L1Entry>,
    counters: Counters,
    regions: RegionCounts,
}

/// Buckets of [`RegionCounts`].
const REGION_BUCKETS: usize = 64;
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
struct RegionCounts([u32; REGION_BUCKETS]);

impl RegionCounts {
    /// The bucket of an L1 key (asid | class | page index): its bits above
    /// the low 9 of the index name the region.
    #[inline]
    fn bucket(key: u64) -> usize {
        ((key >> 9).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize
    }
    #[inline]
    fn may_hold(&self, key: u64) -> bool {
        self.0[Self::bucket(key)] != 0
    }
    #[inline]
    fn add(&mut self, key: u64) {
        self.0[Self::bucket(key)] += 1;
    }
    #[inline]
    fn remove(&mut self, key: u64) {
        self.0[Self::bucket(key)] -= 1;
    }
}

impl L1Array {
    fn new(size: PageSize, entries: u32, ways: u32, policy: Replacement, seed: u64) -> Self {
        L1Array {
            size,
            pages_shift: pages_shift(size),
            class_bits: key_class(size) << VPN_BITS,
            offset_mask: size.nr_pages() - 1,
            sa: build(entries, ways, policy, seed),
            counters: Counters::default(),
            regions: RegionCounts([0; REGION_BUCKETS]),
        }
    }

    /// Inserts `entry` under `key` in `set` (`known_absent`: a probe just
    /// missed the key), keeping the region counts; returns the slot it
    /// took (`None` for a disabled array).
    #[inline]
    fn insert(&mut self, set: usize, key: u64, entry: L1Entry, known_absent: bool) -> Option<Slot> {
        let placed = if known_absent { self.sa.insert_absent(set, key, entry) } else { self.sa.insert_slot(set, key, entry) };
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

    /// Drops the entries whose key and value satisfy `pred` (counted as
    /// invalidations); returns how many.
    fn drop_if(&mut self, mut pred: impl FnMut(u64, &L1Entry) -> bool) -> usize {
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
    fn set_and_key(&self, asid: Asid, mvpn: u64) -> (usize, u64) {
        let index = mvpn >> self.pages_shift;
        debug_assert_eq!(((asid as u64) << ASID_SHIFT) | self.class_bits | index, make_key(asid, self.size, mvpn));
        (self.sa.set_of(index), ((asid as u64) << ASID_SHIFT) | self.class_bits | index)
    }

    #[inline]
    fn translation(&self, e: &L1Entry, mvpn: u64) -> Translation {
        Translation { pfn: e.pfn.add(mvpn & self.offset_mask), size: self.size, writable: e.writable, dirty: e.dirty }
    }

    /// Drops every entry of `asid` whose origin translation contains a page
    /// of `[first, end)` (masked vpns).
    fn invalidate_origin_overlapping(&mut self, asid: Asid, first: u64, end: u64) -> usize {
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
/// not counted here: they equal the side's accesses, see [`Tlb::stats`].)
#[derive(Debug, Clone)]
struct L1Tlb {
    arrays: [L1Array; 3],
    /// For each page size (by `PageSize as usize`), the index of the array
    /// a translation of that size fills ([`L1Tlb::array_index_for`]), or
    /// [`NO_ARRAY`]: chosen once, since arrays are enabled for good.
    fill_target: [usize; 3],
    /// [`miss_tag`] of the last access that missed every array, until the
    /// next fill: the fill for that access then knows its key is absent
    /// (invalidations only remove keys, and every fill clears the tag).
    missed: u64,
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
const NO_ARRAY: usize = 3;
/// [`L1Tlb::missed`] when no miss is pending (no [`miss_tag`] equals it:
/// bits 45..47 of a tag are clear).
const NO_MISS: u64 = u64::MAX;

/// The asid and masked vpn of an access, in one word.
#[inline]
fn miss_tag(asid: Asid, mvpn: u64) -> u64 {
    ((asid as u64) << ASID_SHIFT) | mvpn
}

impl L1Tlb {
    fn new(arrays: [L1Array; 3]) -> Self {
        let mut side = L1Tlb {
            arrays,
            fill_target: [NO_ARRAY; 3],
            missed: NO_MISS,
            recent: [Recent::NONE; RECENT],
            recent_next: 0,
            generation: 1,
            recent_generation: 0,
        };
        for size in PageSize::ALL {
            side.fill_target[size as usize] = side.array_index_for(size);
        }
        side
    }

    #[inline]
    fn lookup(&mut self, asid: Asid, mvpn: u64) -> Option<Translation> {
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
    #[inline]
    fn probe(&mut self, asid: Asid, mvpn: u64) -> Option<Translation> {
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
    fn note_use(&mut self, k: usize, slot: Slot, asid: Asid, mvpn: u64) {
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
    fn may_remember(&self, k: usize, asid: Asid, mvpn: u64) -> bool {
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
    fn remember(&mut self, k: usize, slot: Slot, asid: Asid, mvpn: u64) {
        debug_assert!(k > 0, "4 KiB entries are not kept");
        if !self.may_remember(k, asid, mvpn) {
            return;
        }
        if self.recent_generation != self.generation {
            self.recent = [Recent::NONE; RECENT];
            self.recent_generation = self.generation;
        }
        let shift = self.arrays[k].pages_shift;
        self.recent[self.recent_next] = Recent { index: mvpn >> shift, asid, shift: shift as u8, array: k as u8, slot: slot as u32 };
        self.recent_next = (self.recent_next + 1) % RECENT;
    }

    /// Records a change of the arrays' keys: every `recent` entry lapses.
    #[inline]
    fn keys_changed(&mut self) {
        self.generation += 1;
    }

    fn peek(&self, asid: Asid, mvpn: u64) -> Option<Translation> {
        self.arrays.iter().find_map(|array| {
            let (set, key) = array.set_and_key(asid, mvpn);
            array.sa.peek(set, key).map(|e| array.translation(e, mvpn))
        })
    }

    /// The largest enabled array for pages no bigger than `size` (a page
    /// too big for every enabled array is fractured into pieces of that
    /// size), or [`NO_ARRAY`].
    fn array_index_for(&self, size: PageSize) -> usize {
        self.arrays.iter().rposition(|a| a.size <= size && !a.sa.is_disabled()).unwrap_or(NO_ARRAY)
    }

    /// Applies an invalidation to every array.
    fn for_each_array(&mut self, mut f: impl FnMut(&mut L1Array) -> usize) -> usize {
        self.keys_changed();
        self.arrays.iter_mut().map(&mut f).sum()
    }
}

fn build<V: Copy + Default>(entries: u32, ways: u32, policy: Replacement, seed: u64) -> SetAssoc<V> {
    if entries == 0 {
        return SetAssoc::new(1, 0, policy, seed);
    }
    SetAssoc::new((entries / ways) as usize, ways as usize, policy, seed)
}

// ---------------------------------------------------------------------------
// L2

/// An L2 entry as the array stores it: a [`TlbEntry`] without the eight
/// frames of a colored huge page, which live beside the array at the
/// entry's slot ([`L2Tlb::chp_frames`]). 24 bytes instead of 88, so a set's
/// entries take a few host cache lines and filling one copies no `memcpy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct L2Entry {
    vbase: Vpn,
    /// A regular page's first frame (0 for a colored huge page).
    pfn: Pfn,
    asid: Asid,
    size: PageSize,
    writable: bool,
    dirty: bool,
    /// `Some(stride_shift)`: a colored huge page, frames in the side array.
    chp_stride_shift: Option<u8>,
}

impl Default for L2Entry {
    fn default() -> Self {
        L2Entry::of(&TlbEntry::default())
    }
}

impl L2Entry {
    #[inline]
    fn of(e: &TlbEntry) -> Self {
        let (pfn, chp_stride_shift) = match e.kind {
            EntryKind::Page { pfn } => (pfn, None),
            EntryKind::ColoredHuge { stride_shift, .. } => (Pfn::new(0), Some(stride_shift)),
        };
        L2Entry { vbase: e.vbase, pfn, asid: e.asid, size: e.size, writable: e.writable, dirty: e.dirty, chp_stride_shift }
    }

    /// Does this entry translate any page of `[start, end)`?
    fn overlaps(&self, start: Vpn, end: Vpn) -> bool {
        self.vbase.raw() < end.raw() && start.raw() < self.vbase.raw() + self.size.nr_pages()
    }
}

#[derive(Debug, Clone)]
struct L2Tlb {
    /// 4 KiB and 2 MiB entries (and the later kinds keyed in this array).
    shared: SetAssoc<L2Entry>,
    /// 1 GiB entries.
    giant: SetAssoc<L2Entry>,
    /// The sub-mapping frames of the colored huge page in each slot of
    /// `shared` (stale for other slots). Empty until the first colored huge
    /// page is inserted.
    chp_frames: Vec<[Pfn; 8]>,
    /// Valid 2 MiB entries in `shared`, so that a workload without any
    /// skips their probe (and one without 4 KiB entries the other).
    shared_2m: usize,
    shared_counters: Counters,
    giant_counters: Counters,
    /// Per class (4 KiB, 2 MiB), a key that a probe of `shared` found
    /// absent, and its set: the fill after the walk that follows an L2
    /// miss neither recomputes them nor scans the set for the key again.
    /// Only inserting that key could make a record false, and `insert`
    /// clears it then (invalidations only remove keys).
    absent: [Absent; 2],
}

/// A key known to be absent from its set of the L2's `shared` array.
#[derive(Debug, Clone, Copy)]
struct Absent {
    set: usize,
    key: u64,
}

impl Absent {
    /// No record: no key equals `INVALID_KEY`.
    const NONE: Absent = Absent { set: 0, key: INVALID_KEY };
}

impl L2Tlb {
    fn new(shared: SetAssoc<L2Entry>, giant: SetAssoc<L2Entry>) -> Self {
        L2Tlb {
            shared,
            giant,
            chp_frames: Vec::new(),
            shared_2m: 0,
            absent: [Absent::NONE; 2],
            shared_counters: Counters::default(),
            giant_counters: Counters::default(),
        }
    }

    #[inline]
    fn set_and_key(sa: &SetAssoc<L2Entry>, asid: Asid, size: PageSize, mvpn: u64) -> (usize, u64) {
        (sa.set_of(mvpn >> pages_shift(size)), make_key(asid, size, mvpn))
    }

    /// The full entry in `slot` of `shared` (`in_shared`) or `giant`.
    #[inline]
    fn entry(&self, in_shared: bool, slot: Slot) -> TlbEntry {
        let e = if in_shared { self.shared.value(slot) } else { self.giant.value(slot) };
        let kind = match e.chp_stride_shift {
            None => EntryKind::Page { pfn: e.pfn },
            Some(stride_shift) => EntryKind::ColoredHuge { sub: self.chp_frames[slot], stride_shift },
        };
        TlbEntry { asid: e.asid, vbase: e.vbase, size: e.size, writable: e.writable, dirty: e.dirty, kind }
    }

    /// Whether `shared` may hold entries of `size` (4 KiB or 2 MiB).
    #[inline]
    fn shared_may_hold(&self, size: PageSize) -> bool {
        may_hold(&self.shared, self.shared_2m, size)
    }

    /// The slot of the 1 GiB entry translating `mvpn`.
    #[inline]
    fn find_giant(&self, asid: Asid, mvpn: u64) -> Option<Slot> {
        if self.giant.is_empty() {
            return None;
        }
        let (set, key) = Self::set_and_key(&self.giant, asid, PageSize::Size1G, mvpn);
        self.giant.find(set, key)
    }

    /// The slot of the entry translating `mvpn`: `(true, slot)` in `shared`,
    /// `(false, slot)` in `giant`. Records in `absent` the keys of `shared`
    /// it probed in vain.
    #[inline]
    fn find(&self, asid: Asid, mvpn: u64, absent: &mut [Absent; 2]) -> Option<(bool, Slot)> {
        match probe_shared(&self.shared, self.shared_2m, asid, mvpn, absent) {
            Some(slot) => Some((true, slot)),
            None => self.find_giant(asid, mvpn).map(|slot| (false, slot)),
        }
    }

    fn lookup(&mut self, asid: Asid, mvpn: u64) -> Option<TlbEntry> {
        // (Not `find`: the records are a field beside the arrays it borrows.)
        let (in_shared, slot) = match probe_shared(&self.shared, self.shared_2m, asid, mvpn, &mut self.absent) {
            Some(slot) => (true, slot),
            None => (false, self.find_giant(asid, mvpn)?),
        };
        if in_shared {
            self.shared.touch(slot);
            self.shared_counters.hits += 1;
        } else {
            self.giant.touch(slot);
            self.giant_counters.hits += 1;
        }
        Some(self.entry(in_shared, slot))
    }

    fn peek(&self, asid: Asid, mvpn: u64) -> Option<TlbEntry> {
        self.find(asid, mvpn, &mut [Absent::NONE; 2]).map(|(in_shared, slot)| self.entry(in_shared, slot))
    }

    fn array_mut(&mut self, size: PageSize) -> (&mut SetAssoc<L2Entry>, &mut Counters) {
        match size {
            PageSize::Size1G => (&mut self.giant, &mut self.giant_counters),
            _ => (&mut self.shared, &mut self.shared_counters),
        }
    }

    fn insert(&mut self, entry: &TlbEntry) {
        let mvpn = entry.vbase.raw() & VPN_MASK;
        if entry.size == PageSize::Size1G {
            let (set, key) = Self::set_and_key(&self.giant, entry.asid, entry.size, mvpn);
            if let Some(placed) = self.giant.insert_slot(set, key, L2Entry::of(entry)) {
                self.giant_counters.fills += 1;
                self.giant_counters.evictions += placed.evicted.is_some() as u64;
            }
            return;
        }
        let key = make_key(entry.asid, entry.size, mvpn);
        let record = &mut self.absent[key_class(entry.size) as usize];
        let placed = if record.key == key {
            // The probe before the walk found the key absent.
            let set = record.set;
            *record = Absent::NONE;
            self.shared.insert_absent(set, key, L2Entry::of(entry))
        } else {
            let set = self.shared.set_of(mvpn >> pages_shift(entry.size));
            self.shared.insert_slot(set, key, L2Entry::of(entry))
        };
        let Some(placed) = placed else {
            return; // a disabled array
        };
        self.shared_counters.fills += 1;
        self.shared_counters.evictions += placed.evicted.is_some() as u64;
        // Keep the 2 MiB count: a new key adds its class, a victim removes
        // its own (an update in place changes neither).
        let is_2m = |key: u64| (key >> VPN_BITS & 7 == KEY_CLASS_2M) as usize;
        if placed.fresh {
            self.shared_2m += is_2m(key);
        }
        self.shared_2m -= placed.evicted.map_or(0, is_2m);
        if let EntryKind::ColoredHuge { sub, .. } = entry.kind {
            if self.chp_frames.is_empty() {
                self.chp_frames = vec![[Pfn::new(0); 8]; self.shared.capacity()];
            }
            self.chp_frames[placed.slot] = sub;
        }
    }

    /// The entries whose key is exactly the `size` page containing `mvpn`.
    fn invalidate_key(&mut self, asid: Asid, size: PageSize, mvpn: u64) -> usize {
        let (sa, counters) = self.array_mut(size);
        let (set, key) = Self::set_and_key(sa, asid, size, mvpn);
        let n = sa.invalidate(set, key).is_some() as usize;
        counters.invalidations += n as u64;
        if size == PageSize::Size2M {
            self.shared_2m -= n;
        }
        n
    }

    fn invalidate_if(&mut self, mut pred: impl FnMut(&L2Entry) -> bool) -> usize {
        let mut dropped_2m = 0;
        let shared = self.shared.invalidate_if(|_, e| {
            let drop = pred(e);
            dropped_2m += (drop && e.size == PageSize::Size2M) as usize;
            drop
        });
        self.shared_2m -= dropped_2m;
        let giant = self.giant.invalidate_if(|_, e| pred(e));
        self.shared_counters.invalidations += shared as u64;
        self.giant_counters.invalidations += giant as u64;
        shared + giant
    }
}

/// Whether `shared`, holding `shared_2m` 2 MiB entries, may hold entries
/// of `size` (4 KiB or 2 MiB).
#[inline]
fn may_hold(shared: &SetAssoc<L2Entry>, shared_2m: usize, size: PageSize) -> bool {
    match size {
        PageSize::Size2M => shared_2m > 0,
        _ => shared.len() > shared_2m,
    }
}

/// Probes the L2's shared array for the 4 KiB then the 2 MiB key of
/// `mvpn`, and records in `absent` each key it found missing. The 4 KiB
/// key goes first: a 4 KiB entry (e.g. a perforated page's hole) takes
/// precedence over a 2 MiB entry covering the same address. Classes the
/// array holds no entry of are not probed (they could not hit).
#[inline]
fn probe_shared(shared: &SetAssoc<L2Entry>, shared_2m: usize, asid: Asid, mvpn: u64, absent: &mut [Absent; 2]) -> Option<Slot> {
    for size in [PageSize::Size4K, PageSize::Size2M] {
        if !may_hold(shared, shared_2m, size) {
            continue;
        }
        let (set, key) = L2Tlb::set_and_key(shared, asid, size, mvpn);
        match shared.find(set, key) {
            Some(slot) => return Some(slot),
            None => absent[key_class(size) as usize] = Absent { set, key },
        }
    }
    None
}

// ---------------------------------------------------------------------------
// The hierarchy

/// Ranges up to this many pages are shot down in the L2 by probing each
/// page's set; longer ones by scanning the array.
const L2_PROBE_LIMIT_PAGES: u64 = 64;

/// The TLBs of one core.
#[derive(Debug, Clone)]
pub struct Tlb {
    l1d: L1Tlb,
    l1i: L1Tlb,
    l2: L2Tlb,
    l1i_enabled: bool,
    data: SideStats,
    instr: SideStats,
}

impl Tlb {
    /// Builds the hierarchy; `cfg` must have passed [`TlbConfig::validate`].
    /// `seed` feeds random replacement (give each core its own).
    pub fn new(cfg: &TlbConfig, seed: u64) -> Self {
        let p = cfg.policy;
        let seed_of = |i: u64| seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let l1d = L1Tlb::new([
            L1Array::new(PageSize::Size4K, cfg.l1_4k_entries, cfg.l1_4k_ways, p, seed_of(1)),
            L1Array::new(PageSize::Size2M, cfg.l1_2m_entries, cfg.l1_2m_ways, p, seed_of(2)),
            L1Array::new(PageSize::Size1G, cfg.l1_1g_entries, cfg.l1_1g_ways, p, seed_of(3)),
        ]);
        let l1i = L1Tlb::new([
            L1Array::new(PageSize::Size4K, cfg.l1i_4k_entries, cfg.l1i_4k_ways, p, seed_of(4)),
            L1Array::new(PageSize::Size2M, cfg.l1i_2m_entries, cfg.l1i_2m_ways, p, seed_of(5)),
            // No 1 GiB instruction array: 1 GiB code pages are fractured
            // into 2 MiB pieces, as on Skylake.
            L1Array::new(PageSize::Size1G, 0, 0, p, seed_of(6)),
        ]);
        let l2 = L2Tlb::new(build(cfg.l2_entries, cfg.l2_ways, p, seed_of(7)), build(cfg.l2_1g_entries, cfg.l2_1g_ways, p, seed_of(8)));
        Tlb {
            l1d,
            l1i,
            l2,
            l1i_enabled: cfg.l1i_enabled,
            data: SideStats::default(),
            instr: SideStats::default(),
        }
    }

    #[inline]
    fn l1_side(&mut self, is_instr: bool) -> &mut L1Tlb {
        if is_instr && self.l1i_enabled {
            &mut self.l1i
        } else {
            &mut self.l1d
        }
    }

    /// Translates `vaddr` for `asid`. An L1 hit costs a few key compares; on
    /// an L2 hit the L1 is filled (see [`Tlb::fill_l1`]) before returning.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        let mvpn = masked_vpn(vaddr);
        if is_instr {
            self.instr.accesses += 1;
        } else {
            self.data.accesses += 1;
        }
        match self.l1_side(is_instr).lookup(asid, mvpn) {
            Some(t) => TlbLookup::L1(t),
            None => self.lookup_l2(asid, vaddr, is_instr),
        }
    }

    #[inline(never)]
    fn lookup_l2(&mut self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        self.l1_side(is_instr).missed = miss_tag(asid, masked_vpn(vaddr));
        let side = if is_instr { &mut self.instr } else { &mut self.data };
        side.l1_misses += 1;
        let Some(entry) = self.l2.lookup(asid, masked_vpn(vaddr)) else {
            side.l2_misses += 1;
            return TlbLookup::Miss;
        };
        self.fill_l1(&entry, vaddr, is_instr);
        TlbLookup::L2(entry.translate(vaddr), entry)
    }

    /// What `lookup` would return, without counting, filling or touching
    /// replacement state (for tests, debugging and shootdown accounting).
    pub fn peek(&self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        let mvpn = masked_vpn(vaddr);
        let l1 = if is_instr && self.l1i_enabled { &self.l1i } else { &self.l1d };
        if let Some(t) = l1.peek(asid, mvpn) {
            return TlbLookup::L1(t);
        }
        match self.l2.peek(asid, mvpn) {
            Some(e) => TlbLookup::L2(e.translate(vaddr), e),
            None => TlbLookup::Miss,
        }
    }

    /// Installs in the L1 of the access's side the entry an access to `vaddr`
    /// through `entry` needs: a regular page goes to the array of its size
    /// (fractured into the largest enabled smaller size if that array is
    /// absent); a colored huge page yields a 4 KiB page (paper III-B-1).
    pub fn fill_l1(&mut self, entry: &TlbEntry, vaddr: VirtAddr, is_instr: bool) {
        debug_assert!(entry.covers(vaddr.vpn()));
        let piece = match entry.kind {
            EntryKind::Page { .. } => entry.size,
            EntryKind::ColoredHuge { .. } => PageSize::Size4K,
        };
        let mvpn = masked_vpn(vaddr);
        let side = self.l1_side(is_instr);
        // Filling for the access whose lookup just missed every array of
        // this side: the key is in none of them.
        let known_absent = side.missed == miss_tag(entry.asid, mvpn);
        side.missed = NO_MISS;
        let k = side.fill_target[piece as usize];
        let Some(array) = side.arrays.get_mut(k) else {
            return; // no array takes pages of this size
        };
        let piece_base = vaddr.align_down(array.size.bytes());
        let l1_entry =
            L1Entry { pfn: entry.frame_of(piece_base), writable: entry.writable, dirty: entry.dirty, origin: entry.size };
        let (set, key) = array.set_and_key(entry.asid, mvpn);
        let placed = array.insert(set, key, l1_entry, known_absent);
        side.keys_changed();
        if let Some(slot) = placed {
            side.note_use(k, slot, entry.asid, mvpn);
        }
    }

    /// After a walk for an access to `vaddr`: caches `entry` in the L2 (a
    /// 1 GiB entry only if the L2 has a 1 GiB array) and fills the L1.
    pub fn fill_after_walk(&mut self, entry: TlbEntry, vaddr: VirtAddr, is_instr: bool) {
        debug_assert!(entry.vbase.is_aligned(entry.size.nr_pages()));
        debug_assert!(!entry.is_colored_huge() || entry.size == PageSize::Size2M);
        self.l2.insert(&entry);
        self.fill_l1(&entry, vaddr, is_instr);
    }

    /// Sets the dirty bit of every entry translating `vaddr` (all L1 entries
    /// built from the same page share its D bit). Returns how many changed.
    pub fn mark_dirty(&mut self, asid: Asid, vaddr: VirtAddr) -> usize {
        let mvpn = masked_vpn(vaddr);
        let mut changed = 0;
        for size in PageSize::ALL {
            let (sa, _) = self.l2.array_mut(size);
            let (set, key) = L2Tlb::set_and_key(sa, asid, size, mvpn);
            if let Some(slot) = sa.find(set, key) {
                let e = sa.value_mut(slot);
                changed += !e.dirty as usize;
                e.dirty = true;
            }
        }
        for l1 in [&mut self.l1d, &mut self.l1i] {
            for array in &mut l1.arrays {
                let size = array.size;
                array.sa.for_each_mut(|key, e| {
                    let origin_pages = e.origin.nr_pages();
                    let base = key_first_vpn(key, size) & !(origin_pages - 1);
                    if key_asid(key) == asid && (base..base + origin_pages).contains(&mvpn) && !e.dirty {
                        e.dirty = true;
                        changed += 1;
                    }
                });
            }
        }
        changed
    }

    /// INVLPG: drops every entry of `asid`, of any size, that translates
    /// `vaddr`, including L1 pieces of a larger page containing it.
    pub fn invalidate_page(&mut self, asid: Asid, vaddr: VirtAddr) -> usize {
        let mvpn = masked_vpn(vaddr);
        let mut n = 0;
        for size in PageSize::ALL {
            n += self.l2.invalidate_key(asid, size, mvpn);
        }
        n + self.invalidate_l1(asid, mvpn, mvpn + 1)
    }

    /// Drops every entry of `asid` overlapping pages `[start, end)`.
    pub fn invalidate_range(&mut self, asid: Asid, start: Vpn, end: Vpn) -> usize {
        if end.raw() <= start.raw() {
            return 0;
        }
        let (first, last) = (start.raw() & VPN_MASK, (end.raw() - 1) & VPN_MASK);
        let n = if end.raw() - start.raw() <= L2_PROBE_LIMIT_PAGES && first <= last {
            self.invalidate_l2_by_probing(asid, first, last)
        } else {
            self.l2.invalidate_if(|e| e.asid == asid && e.overlaps(start, end))
        };
        n + self.invalidate_l1(asid, first, last + 1)
    }

    /// L2 shootdown of masked pages `first..=last` one key at a time.
    fn invalidate_l2_by_probing(&mut self, asid: Asid, first: u64, last: u64) -> usize {
        let mut n = 0;
        for size in PageSize::ALL {
            let step = size.nr_pages();
            let mut vpn = first & !(step - 1);
            while vpn <= last {
                n += self.l2.invalidate_key(asid, size, vpn);
                vpn += step;
            }
        }
        n
    }

    fn invalidate_l1(&mut self, asid: Asid, first: u64, end: u64) -> usize {
        let d = self.l1d.for_each_array(|a| a.invalidate_origin_overlapping(asid, first, end));
        let i = self.l1i.for_each_array(|a| a.invalidate_origin_overlapping(asid, first, end));
        d + i
    }

    /// Drops every entry of `asid` (INVPCID single-context).
    pub fn invalidate_asid(&mut self, asid: Asid) -> usize {
        let mut n = self.l2.invalidate_if(|e| e.asid == asid);
        for l1 in [&mut self.l1d, &mut self.l1i] {
            n += l1.for_each_array(|a| a.drop_if(|key, _| key_asid(key) == asid));
        }
        n
    }

    /// Drops everything (a CR3 write without PCID, or a full flush).
    pub fn flush_all(&mut self) -> usize {
        let mut n = self.l2.invalidate_if(|_| true);
        for l1 in [&mut self.l1d, &mut self.l1i] {
            n += l1.for_each_array(|a| a.drop_if(|_, _| true));
        }
        n
    }

    /// Host-prefetches the L2 sets `vaddr` maps to (those of the classes
    /// the L2 holds), so a caller that knows the next address can hide the
    /// host miss on them.
    #[inline]
    pub fn prefetch(&self, vaddr: VirtAddr) {
        let mvpn = masked_vpn(vaddr);
        let l2 = &self.l2;
        if l2.shared_may_hold(PageSize::Size4K) {
            l2.shared.prefetch(l2.shared.set_of(mvpn));
        }
        if l2.shared_may_hold(PageSize::Size2M) {
            l2.shared.prefetch(l2.shared.set_of(mvpn >> pages_shift(PageSize::Size2M)));
        }
    }

    pub fn stats(&self) -> TlbStats {
        let [d4, d2, d1] = &self.l1d.arrays;
        let [i4, i2, _] = &self.l1i.arrays;
        // Every access probes all L1 arrays of its side (in parallel, in
        // hardware); every L1 miss probes both L2 arrays.
        let (l1d_lookups, l1i_lookups) = if self.l1i_enabled {
            (self.data.accesses, self.instr.accesses)
        } else {
            (self.data.accesses + self.instr.accesses, 0)
        };
        let l2_lookups = self.data.l1_misses + self.instr.l1_misses;
        TlbStats {
            data: self.data,
            instr: self.instr,
            l1d_4k: d4.counters.report(l1d_lookups),
            l1d_2m: d2.counters.report(l1d_lookups),
            l1d_1g: d1.counters.report(l1d_lookups),
            l1i_4k: i4.counters.report(l1i_lookups),
            l1i_2m: i2.counters.report(l1i_lookups),
            l2: self.l2.shared_counters.report(l2_lookups),
            l2_1g: self.l2.giant_counters.report(l2_lookups),
        }
    }

    /// Zeroes the counters (contents stay: for a warm-up phase).
    pub fn reset_stats(&mut self) {
        for l1 in [&mut self.l1d, &mut self.l1i] {
            for a in &mut l1.arrays {
                a.counters = Counters::default();
            }
        }
        self.l2.shared_counters = Counters::default();
        self.l2.giant_counters = Counters::default();
        self.data = SideStats::default();
        self.instr = SideStats::default();
    }

    /// Valid entries held in (L1 data + L1 instruction, L2).
    pub fn occupancy(&self) -> (usize, usize) {
        let l1 = self.l1d.arrays.iter().chain(&self.l1i.arrays).map(|a| a.sa.len()).sum();
        (l1, self.l2.shared.len() + self.l2.giant.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Asid = 1;
    const KIB4: u64 = 4 << 10;
    const MIB2: u64 = 2 << 20;
    const GIB1: u64 = 1 << 30;

    fn va(x: u64) -> VirtAddr {
        VirtAddr::new(x)
    }

    fn page4k(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
        TlbEntry::page(asid, va(vaddr).vpn(), PageSize::Size4K, Pfn::new(pfn), true, false)
    }

    fn page2m(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
        TlbEntry::page(asid, va(vaddr).vpn(), PageSize::Size2M, Pfn::new(pfn), true, false)
    }

    fn page1g(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
        TlbEntry::page(asid, va(vaddr).vpn(), PageSize::Size1G, Pfn::new(pfn), true, false)
    }

    fn frame(outcome: TlbLookup) -> Option<u64> {
        outcome.translation().map(|t| t.pfn.raw())
    }

    /// A small machine: L1 4K 4 entries 2-way (2 sets), L1 2M 2 x 2-way,
    /// L1 1G 1, L2 8 entries 2-way (4 sets), L2 1G 2.
    fn small() -> TlbConfig {
        TlbConfig {
            l1_4k_entries: 4,
            l1_4k_ways: 2,
            l1_2m_entries: 2,
            l1_2m_ways: 2,
            l1_1g_entries: 1,
            l1_1g_ways: 1,
            l2_entries: 8,
            l2_ways: 2,
            l2_1g_entries: 2,
            l2_1g_ways: 2,
            ..TlbConfig::default()
        }
    }

    #[test]
    fn defaults_are_skylake_and_valid() {
        let c = TlbConfig::default();
        c.validate("machine.tlb").unwrap();
        assert_eq!((c.l2_entries, c.l2_ways, c.l2_latency), (1536, 12, 9));
        let tlb = Tlb::new(&c, 0);
        assert_eq!(tlb.l2.shared.sets(), 128);
        assert_eq!(tlb.l1d.arrays[0].sa.sets(), 16);
        assert_eq!(tlb.l1d.arrays[2].sa.sets(), 1);
    }

    #[test]
    fn validate_names_the_bad_key() {
        let err = |c: TlbConfig| match c.validate("machine.tlb") {
            Err(Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {other:?}"),
        };
        let c = TlbConfig { l2_entries: 1000, ..TlbConfig::default() };
        assert_eq!(err(c), "machine.tlb.l2_entries"); // not a multiple of 12
        let c = TlbConfig { l2_entries: 1200, ..TlbConfig::default() };
        assert_eq!(err(c), "machine.tlb.l2_entries"); // 100 sets
        let c = TlbConfig { l1i_2m_ways: 0, ..TlbConfig::default() };
        assert_eq!(err(c), "machine.tlb.l1i_2m_ways");
        // 0 entries disables the array; its ways are then irrelevant.
        TlbConfig { l2_1g_entries: 0, l2_1g_ways: 0, ..TlbConfig::default() }.validate("m").unwrap();
    }

    #[test]
    fn config_keys_parse_and_unknown_keys_are_rejected() {
        let c: TlbConfig = toml::from_str("l2_entries = 2048\nl2_ways = 16\npolicy = \"random\"").unwrap();
        assert_eq!((c.l2_entries, c.l2_ways, c.policy), (2048, 16, Replacement::Random));
        assert_eq!(c.l1_4k_entries, 64);
        assert!(toml::from_str::<TlbConfig>("l2_entires = 2048").is_err());
    }

    #[test]
    fn a_4k_entry_keeps_precedence_over_a_recently_used_2m_entry() {
        // A 2 MiB entry used recently is taken without probing the arrays,
        // but only while the 4 KiB array holds nothing in its 2 MiB page:
        // a 4 KiB entry filled inside that page (a perforated page's hole,
        // say) must win for its address, and the 2 MiB entry for the rest.
        let mut tlb = Tlb::new(&TlbConfig::default(), 0);
        let base = 0x4000_0000;
        tlb.fill_after_walk(page2m(A, base, 0x1000), va(base), false);
        for _ in 0..3 {
            assert_eq!(frame(tlb.lookup(A, va(base + 0x5000), false)), Some(0x1005));
        }
        let hole = base + 0x7000;
        tlb.fill_l1(&page4k(A, hole, 0x9999), va(hole), false);
        for _ in 0..3 {
            assert_eq!(frame(tlb.lookup(A, va(hole), false)), Some(0x9999));
            assert_eq!(frame(tlb.lookup(A, va(base + 0x5000), false)), Some(0x1005));
        }
        let s = tlb.stats();
        assert_eq!((s.l1d_4k.hits, s.l1d_2m.hits), (3, 6));
    }

    #[test]
    fn l1_miss_l2_hit_fills_l1() {
        // Walk fills L2 and L1; evict the L1 copy with two conflicting pages;
        // the next access misses L1, hits L2, refills L1; then hits L1.
        let mut tlb = Tlb::new(&small(), 0);
        let x = 0x40_0000; // vpn 0x400: L1 4K set 0, L2 set 0
        assert_eq!(tlb.lookup(A, va(x), false), TlbLookup::Miss);
        tlb.fill_after_walk(page4k(A, x, 0x77), va(x), false);
        assert_eq!(frame(tlb.lookup(A, va(x + 0x123), false)), Some(0x77));
        // vpns 0x402 and 0x404 share L1 set 0 (2 sets) but not L2 set 0 (4 sets).
        for (v, p) in [(0x40_2000, 0x80), (0x40_4000, 0x81)] {
            tlb.fill_after_walk(page4k(A, v, p), va(v), false);
        }
        match tlb.lookup(A, va(x), false) {
            TlbLookup::L2(t, e) => {
                assert_eq!(t.pfn.raw(), 0x77);
                assert_eq!(t.size, PageSize::Size4K);
                assert_eq!(e, page4k(A, x, 0x77));
            }
            other => panic!("expected an L2 hit, got {other:?}"),
        }
        assert!(matches!(tlb.lookup(A, va(x), false), TlbLookup::L1(_)));
        let s = tlb.stats();
        assert_eq!(s.data, SideStats { accesses: 4, l1_misses: 2, l2_misses: 1 });
        assert_eq!(s.l1d_4k.hits, 2);
        assert_eq!(s.l1d_4k.fills, 4);
        assert_eq!(s.l1d_4k.evictions, 2); // 0x400 by 0x404, then 0x402 by the refill
        assert_eq!((s.l2.lookups, s.l2.hits, s.l2.misses, s.l2.fills), (2, 1, 1, 3));
        tlb.reset_stats();
        assert_eq!(tlb.stats(), TlbStats::default());
    }

    #[test]
    fn shared_l2_keeps_4k_and_2m_entries_with_equal_index_apart() {
        // 4K vpn 0x10 and the 2 MiB page with index 0x10 (va 0x200_0000) have
        // the same set index and the same vpn-at-size field: only the size
        // class tells them apart.
        let mut cfg = small();
        cfg.l1_4k_entries = 0; // force every hit to come from the L2
        cfg.l1_2m_entries = 0;
        let mut tlb = Tlb::new(&cfg, 0);
        let small_va = 0x10 * KIB4;
        let huge_va = 0x10 * MIB2;
        tlb.fill_after_walk(page4k(A, small_va, 0x5), va(small_va), false);
        tlb.fill_after_walk(page2m(A, huge_va, 0x2000), va(huge_va), false);
        assert_eq!(tlb.occupancy().1, 2);
        assert_eq!(frame(tlb.lookup(A, va(small_va), false)), Some(0x5));
        assert_eq!(frame(tlb.lookup(A, va(huge_va + 3 * KIB4), false)), Some(0x2003));
    }

    #[test]
    fn a_2m_entry_serves_every_4k_page_inside_and_none_outside() {
        let mut tlb = Tlb::new(&small(), 0);
        let base = 3 * MIB2;
        tlb.fill_after_walk(page2m(A, base, 0x1_0000), va(base), false);
        for i in [0u64, 1, 255, 511] {
            let t = tlb.lookup(A, va(base + i * KIB4 + 8), false);
            assert!(matches!(t, TlbLookup::L1(_)), "page {i}: {t:?}");
            let t = t.translation().unwrap();
            assert_eq!((t.pfn.raw(), t.size), (0x1_0000 + i, PageSize::Size2M));
        }
        assert_eq!(tlb.lookup(A, va(base - KIB4), false), TlbLookup::Miss);
        assert_eq!(tlb.lookup(A, va(base + MIB2), false), TlbLookup::Miss);
    }

    #[test]
    fn one_gib_entries_fill_their_arrays_and_translate() {
        let mut tlb = Tlb::new(&small(), 0);
        let base = 2 * GIB1;
        let x = base + 5 * MIB2 + 7 * KIB4;
        tlb.fill_after_walk(page1g(A, base, 0x40_0000), va(x), false);
        let t = tlb.lookup(A, va(x), false).translation().unwrap();
        assert_eq!((t.pfn.raw(), t.size), (0x40_0000 + 5 * 512 + 7, PageSize::Size1G));
        assert_eq!(tlb.stats().l2_1g.fills, 1);
        assert_eq!(tlb.stats().l1d_1g.hits, 1);
        // Instruction side has no 1 GiB array: the L2 hit fills a 2 MiB piece.
        match tlb.lookup(A, va(x), true) {
            TlbLookup::L2(t, _) => assert_eq!(t.pfn.raw(), 0x40_0000 + 5 * 512 + 7),
            other => panic!("expected an L2 hit, got {other:?}"),
        }
        let t = tlb.lookup(A, va(base + 5 * MIB2), true);
        assert!(matches!(t, TlbLookup::L1(Translation { size: PageSize::Size2M, .. })), "{t:?}");
        assert_eq!(frame(t), Some(0x40_0000 + 5 * 512));
        // Another 2 MiB of the same 1 GiB page is not in the L1I piece.
        assert!(matches!(tlb.lookup(A, va(base), true), TlbLookup::L2(..)));
    }

    #[test]
    fn without_an_l2_1g_array_1g_pages_live_only_in_l1() {
        let mut cfg = small();
        cfg.l2_1g_entries = 0;
        cfg.l1_1g_entries = 0;
        let mut tlb = Tlb::new(&cfg, 0);
        tlb.fill_after_walk(page1g(A, 0, 0), va(MIB2 + 1), false);
        // Fractured into the 2 MiB L1 array; nothing in L2.
        assert_eq!(tlb.occupancy(), (1, 0));
        assert_eq!(frame(tlb.lookup(A, va(MIB2 + KIB4), false)), Some(513));
        assert_eq!(tlb.lookup(A, va(0), false), TlbLookup::Miss);
    }

    #[test]
    fn invalidate_page_drops_a_2m_entry_from_any_address_inside_it() {
        let mut tlb = Tlb::new(&small(), 0);
        let base = 7 * MIB2;
        tlb.fill_after_walk(page2m(A, base, 0x800), va(base), false);
        tlb.fill_after_walk(page4k(A, base + MIB2, 0x9), va(base + MIB2), false);
        assert_eq!(tlb.invalidate_page(A, va(base + 300 * KIB4)), 2); // L1 2M + L2 2M
        assert_eq!(tlb.lookup(A, va(base), false), TlbLookup::Miss);
        assert_eq!(frame(tlb.lookup(A, va(base + MIB2), false)), Some(0x9));
    }

    #[test]
    fn invalidate_range_across_sizes() {
        // Entries: 4K at 0x1000 and 0xa000, 2M at [2M, 4M), 1G at [1G, 2G)
        // (no two in one 2-way L2 set: vpn 1 and 2M index 1 share set 1).
        // Range [0x8000, 2M + 4K) overlaps the 4K page at 0xa000 and the 2M
        // page, not the 4K page at 0x1000 nor the 1G page. It is 505 pages
        // long, so the L2 is scanned.
        let mut tlb = Tlb::new(&small(), 0);
        for e in [page4k(A, 0x1000, 1), page4k(A, 0xa000, 10), page2m(A, MIB2, 0x200), page1g(A, GIB1, 0x4_0000)] {
            tlb.fill_after_walk(e, e.vbase.addr(), false);
        }
        assert_eq!(tlb.occupancy(), (4, 4));
        let dropped = tlb.invalidate_range(A, va(0x8000).vpn(), va(MIB2 + KIB4).vpn());
        assert_eq!(dropped, 4); // 4K and 2M, each in L1 and L2
        assert_eq!(tlb.lookup(A, va(0xa000), false), TlbLookup::Miss);
        assert_eq!(tlb.lookup(A, va(MIB2 + MIB2 - 1), false), TlbLookup::Miss);
        assert_eq!(frame(tlb.lookup(A, va(0x1000), false)), Some(1));
        // Two pages in the middle of the 1G page (the L2 is probed): the 1G
        // entry goes from L1 and L2; a range just past the 4K page at 0x1000
        // and one of another asid drop nothing.
        let start = va(GIB1 + 5 * MIB2).vpn();
        assert_eq!(tlb.invalidate_range(A, start, start.add(2)), 2);
        assert_eq!(tlb.invalidate_range(A, Vpn::new(2), Vpn::new(3)), 0);
        assert_eq!(tlb.invalidate_range(2, Vpn::new(0), Vpn::new(4)), 0);
        assert_eq!(tlb.lookup(A, va(GIB1), false), TlbLookup::Miss);
        assert_eq!(tlb.invalidate_range(A, Vpn::new(0), va(2 * GIB1).vpn()), 2);
        assert_eq!(tlb.occupancy(), (0, 0));
    }

    #[test]
    fn asids_are_isolated() {
        let mut tlb = Tlb::new(&small(), 0);
        let x = 0x7f00_0000_1000;
        tlb.fill_after_walk(page4k(1, x, 0x111), va(x), false);
        tlb.fill_after_walk(page4k(2, x, 0x222), va(x), false);
        assert_eq!(frame(tlb.lookup(1, va(x), false)), Some(0x111));
        assert_eq!(frame(tlb.lookup(2, va(x), false)), Some(0x222));
        assert_eq!(tlb.lookup(3, va(x), false), TlbLookup::Miss);
        assert_eq!(tlb.invalidate_asid(1), 2);
        assert_eq!(tlb.lookup(1, va(x), false), TlbLookup::Miss);
        assert_eq!(frame(tlb.lookup(2, va(x), false)), Some(0x222));
        assert_eq!(tlb.flush_all(), 2);
        assert_eq!(tlb.occupancy(), (0, 0));
    }

    fn chp(asid: Asid, base: u64) -> TlbEntry {
        // 16 colors (stride_shift 4); sub-mapping s starts at frame 0x1000 + s
        // (color s). Bits 4..9 of each start are clear, as the OR needs.
        let sub = std::array::from_fn(|s| Pfn::new(0x1000 + s as u64));
        TlbEntry::colored_huge(asid, va(base).vpn(), sub, 4, true, false)
    }

    #[test]
    fn colored_huge_frame_of_by_hand() {
        let e = chp(A, 4 * MIB2);
        let at = |offset: u64| e.frame_of(va(4 * MIB2 + offset)).raw();
        // Offset 0: sub 0, page 0 -> 0x1000.
        assert_eq!(at(0), 0x1000);
        // Offset 0x5000: sub 0, page 5 -> 0x1000 | 5 << 4 = 0x1050.
        assert_eq!(at(0x5abc), 0x1050);
        // Offset 0x40000 (256 KiB): sub 1, page 0 -> 0x1001.
        assert_eq!(at(0x4_0000), 0x1001);
        // Offset 0xa3000: sub 2 (0xa3000 >> 18 = 2), page (0xa3000 >> 12) & 63
        // = 0xa3 & 0x3f = 0x23 -> 0x1002 | 0x230 = 0x1232.
        assert_eq!(at(0xa_3000), 0x1232);
        // Last page of sub-mapping 7: offset 0x1f_f000, page 63
        // -> 0x1007 | 0x3f0 = 0x13f7.
        assert_eq!(at(0x1f_ffff), 0x13f7);
    }

    #[test]
    fn colored_huge_l2_hit_installs_the_constructed_4k_page_in_l1() {
        let mut tlb = Tlb::new(&small(), 0);
        let base = 4 * MIB2;
        let x = base + 0x1f_f000; // last page of sub-mapping 7
        tlb.fill_after_walk(chp(A, base), va(base), false);
        // The walk filled a 4K L1 entry for page 0 only (nothing in L1 2M).
        assert_eq!(tlb.stats().l1d_2m.fills, 0);
        match tlb.lookup(A, va(x), false) {
            TlbLookup::L2(t, e) => {
                assert_eq!((t.pfn.raw(), t.size), (0x13f7, PageSize::Size2M));
                assert!(e.is_colored_huge());
            }
            other => panic!("expected an L2 hit, got {other:?}"),
        }
        let t = tlb.lookup(A, va(x + 0x10), false);
        assert_eq!(t, TlbLookup::L1(Translation { pfn: Pfn::new(0x13f7), size: PageSize::Size4K, writable: true, dirty: false }));
        // A neighbouring page is not served by that L1 entry.
        assert!(matches!(tlb.lookup(A, va(x - KIB4), false), TlbLookup::L2(..)));
        // INVLPG of the base drops the constructed L1 entries too.
        assert_eq!(tlb.invalidate_page(A, va(base)), 3 + 1);
        assert_eq!(tlb.lookup(A, va(x), false), TlbLookup::Miss);
    }

    #[test]
    fn mark_dirty_reaches_l2_and_every_l1_piece() {
        let mut tlb = Tlb::new(&small(), 0);
        let base = 4 * MIB2;
        tlb.fill_after_walk(chp(A, base), va(base), false);
        tlb.lookup(A, va(base + KIB4), false); // second 4K piece in L1
        tlb.fill_after_walk(page4k(A, base + MIB2, 1), va(base + MIB2), false);
        assert_eq!(tlb.mark_dirty(A, va(base + 0x2000)), 3); // L2 + both pieces
        assert!(tlb.lookup(A, va(base), false).translation().unwrap().dirty);
        assert!(!tlb.lookup(A, va(base + MIB2), false).translation().unwrap().dirty);
        assert_eq!(tlb.mark_dirty(A, va(base)), 0);
    }

    #[test]
    fn instruction_fetches_use_the_l1i_and_count_separately() {
        let mut tlb = Tlb::new(&small(), 0);
        let x = 0x40_1000;
        tlb.fill_after_walk(page4k(A, x, 3), va(x), true);
        assert!(matches!(tlb.lookup(A, va(x), true), TlbLookup::L1(_)));
        assert!(matches!(tlb.lookup(A, va(x), false), TlbLookup::L2(..)));
        let s = tlb.stats();
        assert_eq!((s.instr.accesses, s.instr.l1_misses, s.data.l1_misses), (1, 0, 1));
        assert_eq!((s.l1i_4k.hits, s.l1d_4k.fills), (1, 1));
        let named = s.named();
        assert!(named.contains(&("dtlb.l1.misses".to_string(), 1)));
        assert!(named.contains(&("itlb.l2.misses".to_string(), 0)));
    }

    #[test]
    fn lru_order_in_a_2_way_l1_set() {
        // L1 4K: 2 sets x 2 ways. vpns 0, 2, 4 map to set 0. Fill 0, 2; touch
        // 0; fill 4 -> 2 is evicted from L1 (still in L2).
        let mut tlb = Tlb::new(&small(), 0);
        for v in [0u64, 2] {
            tlb.fill_after_walk(page4k(A, v * KIB4, 100 + v), va(v * KIB4), false);
        }
        assert!(matches!(tlb.lookup(A, va(0), false), TlbLookup::L1(_)));
        tlb.fill_after_walk(page4k(A, 4 * KIB4, 104), va(4 * KIB4), false);
        assert!(matches!(tlb.peek(A, va(0), false), TlbLookup::L1(_)));
        assert!(matches!(tlb.peek(A, va(2 * KIB4), false), TlbLookup::L2(..)));
        assert!(matches!(tlb.peek(A, va(4 * KIB4), false), TlbLookup::L1(_)));
    }

    /// The invariant that matters most: whatever sequence of fills,
    /// evictions and shootdowns happened, a hit never returns a translation
    /// (frame or dirty bit) that differs from the current page table. The
    /// model OS shoots down before changing a mapping, as Linux does, using
    /// INVLPG at a random address inside each removed page, a range, the
    /// asid, or a full flush.
    mod no_stale_translations {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone, Copy)]
        enum Op {
            Access { asid: Asid, addr: u64, write: bool, instr: bool },
            Map { asid: Asid, addr: u64, kind: u8 },
            Unmap { asid: Asid, addr: u64, how: u8 },
        }

        /// Addresses concentrated on 2 GiB x 4 (2 MiB) x 16 (4 KiB) slots so
        /// that mappings of different sizes overlap often.
        fn addr(seed: u64) -> u64 {
            (seed & 1) * GIB1 + ((seed >> 1) & 3) * MIB2 + ((seed >> 3) & 15) * KIB4 + ((seed >> 7) & 0xfff)
        }

        fn op() -> impl Strategy<Value = Op> {
            let asid = 1..3u16;
            prop_oneof![
                6 => (asid.clone(), any::<u64>(), any::<bool>(), prop::bool::weighted(0.2))
                    .prop_map(|(asid, a, write, instr)| Op::Access { asid, addr: addr(a), write, instr }),
                2 => (asid.clone(), any::<u64>(), 0..10u8).prop_map(|(asid, a, kind)| Op::Map { asid, addr: addr(a), kind }),
                1 => (asid, any::<u64>(), 0..8u8).prop_map(|(asid, a, how)| Op::Unmap { asid, addr: addr(a), how }),
            ]
        }

        struct Model {
            tlb: Tlb,
            maps: Vec<TlbEntry>,
            next_pfn: u64,
        }

        impl Model {
            fn find(&self, asid: Asid, vaddr: VirtAddr) -> Option<usize> {
                self.maps.iter().position(|e| e.asid == asid && e.covers(vaddr.vpn()))
            }

            fn access(&mut self, asid: Asid, vaddr: VirtAddr, write: bool, instr: bool) {
                let current = self.find(asid, vaddr);
                // The same lookup without the L1's recent entries must give
                // the same translation, counters and replacement state.
                let mut plain = self.tlb.clone();
                plain.l1d.keys_changed();
                plain.l1i.keys_changed();
                let expected = plain.lookup(asid, vaddr, instr);
                let got = self.tlb.lookup(asid, vaddr, instr);
                assert_eq!(got.translation(), expected.translation(), "{vaddr:?}: the recent entries changed the lookup");
                assert_eq!(self.tlb.stats(), plain.stats());
                for (a, b) in [(&self.tlb.l1d, &plain.l1d), (&self.tlb.l1i, &plain.l1i)] {
                    assert_eq!(format!("{:?}", a.arrays), format!("{:?}", b.arrays));
                }
                match (got.translation(), current) {
                    (Some(t), Some(i)) => {
                        let e = self.maps[i];
                        assert_eq!(t.pfn, e.frame_of(vaddr), "{vaddr:?}: stale frame");
                        assert_eq!(t.dirty, e.dirty, "{vaddr:?}: stale dirty bit");
                    }
                    (Some(t), None) => panic!("{vaddr:?} asid {asid}: hit {t:?} on an unmapped page"),
                    (None, Some(i)) => self.tlb.fill_after_walk(self.maps[i], vaddr, instr),
                    (None, None) => {} // a page fault; the model maps on Map only
                }
                if let (true, Some(i)) = (write, current) {
                    if !self.maps[i].dirty {
                        self.maps[i].dirty = true;
                        self.tlb.mark_dirty(asid, vaddr);
                    }
                }
            }

            fn map(&mut self, asid: Asid, vaddr: VirtAddr, kind: u8) {
                let size = match kind {
                    0..=5 => PageSize::Size4K,
                    6..=8 => PageSize::Size2M,
                    _ => PageSize::Size1G,
                };
                let base = vaddr.align_down(size.bytes()).vpn();
                let end = base.add(size.nr_pages());
                // Remove what overlaps, then shoot the range down.
                self.maps.retain(|e| !(e.asid == asid && e.overlaps(base, end)));
                self.tlb.invalidate_range(asid, base, end);
                self.next_pfn += 2 * size.nr_pages();
                let pfn = self.next_pfn & !(size.nr_pages() - 1);
                let entry = if kind == 8 {
                    // A colored huge page: 8 colors (stride_shift 3).
                    let sub = std::array::from_fn(|s| Pfn::new(pfn + (s as u64 % 8)));
                    TlbEntry::colored_huge(asid, base, sub, 3, true, false)
                } else {
                    TlbEntry::page(asid, base, size, Pfn::new(pfn), true, false)
                };
                self.maps.push(entry);
            }

            fn unmap(&mut self, asid: Asid, vaddr: VirtAddr, how: u8) {
                match how {
                    0..=4 => {
                        // INVLPG at the accessed address, wherever it is in the page.
                        if let Some(i) = self.find(asid, vaddr) {
                            self.maps.swap_remove(i);
                            self.tlb.invalidate_page(asid, vaddr);
                        }
                    }
                    5 | 6 => {
                        let start = vaddr.vpn();
                        let end = start.add(if how == 5 { 3 } else { 700 });
                        self.maps.retain(|e| !(e.asid == asid && e.overlaps(start, end)));
                        // The OS flushes the whole of every page it removed.
                        let (lo, hi) = (start.align_down(1 << 18), end.add(1 << 18).align_down(1 << 18));
                        self.tlb.invalidate_range(asid, lo, hi);
                    }
                    _ => {
                        self.maps.retain(|e| e.asid != asid);
                        self.tlb.invalidate_asid(asid);
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn hits_always_match_the_page_table(
                ops in prop::collection::vec(op(), 1..300),
                policy in prop_oneof![Just(Replacement::Lru), Just(Replacement::Fifo), Just(Replacement::Random)],
                no_l1_2m in any::<bool>(),
            ) {
                let mut cfg = TlbConfig { policy, ..small() };
                if no_l1_2m {
                    cfg.l1_2m_entries = 0; // 2 MiB pages fracture into 4 KiB L1 entries
                    cfg.l1_1g_entries = 0;
                }
                let mut m = Model { tlb: Tlb::new(&cfg, 1), maps: Vec::new(), next_pfn: 1 << 20 };
                for op in ops {
                    match op {
                        Op::Access { asid, addr, write, instr } => m.access(asid, va(addr), write, instr),
                        Op::Map { asid, addr, kind } => m.map(asid, va(addr), kind),
                        Op::Unmap { asid, addr, how } => m.unmap(asid, va(addr), how),
                    }
                    // The L2's count of 2 MiB entries (which lets lookups skip
                    // a probe) stays exact through fills, evictions and
                    // shootdowns.
                    let l2 = &m.tlb.l2;
                    let counted = l2.shared.iter().filter(|(key, _)| key >> VPN_BITS & 7 == KEY_CLASS_2M).count();
                    prop_assert_eq!(l2.shared_2m, counted);
                    // The keys recorded as absent (for the fill after a
                    // miss) are absent, from the set recorded with them.
                    for a in l2.absent.iter().filter(|a| a.key != INVALID_KEY) {
                        prop_assert_eq!(l2.shared.set_of(a.key & VPN_MASK), a.set);
                        prop_assert_eq!(l2.shared.find(a.set, a.key), None);
                    }
                    // So is every L1 key of a page recorded as missed.
                    for side in [&m.tlb.l1d, &m.tlb.l1i].into_iter().filter(|s| s.missed != NO_MISS) {
                        let (asid, mvpn) = (key_asid(side.missed), side.missed & VPN_MASK);
                        for array in &side.arrays {
                            let (set, key) = array.set_and_key(asid, mvpn);
                            prop_assert_eq!(array.sa.find(set, key), None);
                        }
                    }
                    // Each L1 array's region counts equal a recount of its
                    // keys (a count too low would skip a probe that hits).
                    for array in m.tlb.l1d.arrays.iter().chain(&m.tlb.l1i.arrays) {
                        let mut recount = [0u32; REGION_BUCKETS];
                        for (key, _) in array.sa.iter() {
                            recount[RegionCounts::bucket(key)] += 1;
                        }
                        prop_assert_eq!(array.regions.0, recount);
                    }
                }
            }
        }
    }

    /// Throughput of the L1-hit path (run: cargo test --release -- --ignored
    /// --nocapture tlb_lookup_speed).
    #[test]
    #[ignore]
    fn tlb_lookup_speed() {
        let mut tlb = Tlb::new(&TlbConfig::default(), 0);
        let pages = 48u64; // fits the 64-entry L1
        for p in 0..pages {
            tlb.fill_after_walk(page4k(A, p * KIB4, p), va(p * KIB4), false);
        }
        let n = 20_000_000u64;
        let t0 = std::time::Instant::now();
        let mut sum = 0u64;
        let mut x = 0u64;
        for i in 0..n {
            x = x.wrapping_add(0x9e37_79b9) ^ i;
            let vaddr = va((x % pages) * KIB4 + (i & 0xfff));
            if let TlbLookup::L1(t) = tlb.lookup(A, std::hint::black_box(vaddr), false) {
                sum = sum.wrapping_add(t.pfn.raw());
            }
        }
        let dt = t0.elapsed();
        println!("L1 hits: {:.2} ns/lookup (sum {sum})", dt.as_nanos() as f64 / n as f64);
        // L2-hit path: 1024 pages spread over the L2, L1 thrashes.
        let mut tlb = Tlb::new(&TlbConfig::default(), 0);
        let pages = 1024u64;
        for p in 0..pages {
            tlb.fill_after_walk(page4k(A, p * KIB4, p), va(p * KIB4), false);
        }
        let n = 5_000_000u64;
        let t0 = std::time::Instant::now();
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let vaddr = va(((x >> 33) % pages) * KIB4);
            sum = sum.wrapping_add(frame(tlb.lookup(A, std::hint::black_box(vaddr), false)).unwrap_or(0) + i);
        }
        let dt = t0.elapsed();
        println!("mostly L2 hits: {:.2} ns/lookup (sum {sum}) {:?}", dt.as_nanos() as f64 / n as f64, tlb.stats().data);
    }
}
