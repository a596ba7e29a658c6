//! The per-core TLB hierarchy, organised as on Intel cores (Skylake defaults).
//!
//! - L1 data TLB: one array per page size (4 KiB, 2 MiB, 1 GiB) ([`l1`]).
//! - L1 instruction TLB (optional): 4 KiB and 2 MiB arrays.
//! - L2 TLB (STLB) ([`l2`]): one array shared by the small reaches (4 KiB
//!   and 2 MiB on today's cores, configurable), each entry indexed by its
//!   vpn at its reach and keyed with its reach ([`key`]); and a small
//!   separate 1 GiB array.
//!
//! Entries have kinds ([`entry`]): a plain page, or a kind that a system
//! defines (Colored Huge Pages' 2 MiB entry carrying eight sub-mapping
//! frames, in `systems::chp::tlb`), whose data its owner keeps beside the
//! L2 ([`TlbExtension`], the type parameter `X`). Only the L2 holds kinds
//! other than plain pages: on an L2 hit the hardware generates an
//! ordinary L1 entry (for CHP a 4 KiB one), so the latency-critical L1
//! path stays a handful of key compares. L1 entries are therefore compact;
//! each remembers the reach of the translation it came from (its
//! *origin*), so that INVLPG on any address of a 2 MiB page also drops the
//! 4 KiB L1 entries built from it, as the Intel SDM (4.10.4.1) requires of
//! fractured pages.
//!
//! Costs (see [`TlbConfig`]): every access pays `l1_latency` (default 0: the
//! L1 TLB lookup overlaps the VIPT L1D access); an access that misses every L1
//! array pays `l2_latency` more, whether the L2 hits or not (a miss then also
//! pays the walk, which the walker prices). The MMU charges them.
//!
//! Who calls what: the MMU calls [`Tlb::lookup`] once per access. On an L2 hit
//! `lookup` itself fills the L1 (the rule of [`Tlb::fill_l1`]). On a miss the
//! MMU walks and calls [`Tlb::fill_page_after_walk`] for a plain page (its
//! [`PageLeaf`] passes in registers), [`Tlb::fill_after_walk`] for any
//! other entry. After setting a PTE's D bit
//! on a store through a clean entry it calls [`Tlb::mark_dirty`]. The OS
//! shoots down with the `invalidate_*` calls.

mod config;
mod entry;
mod key;
mod l1;
mod l2;
mod sampler;
pub mod stats;
#[cfg(test)]
pub(crate) mod tests;

pub use config::TlbConfig;
pub use entry::{
    EntryKind, ExtPayload, Holds, NoExtension, NoPayload, PageLeaf, TlbEntry, TlbExtension, TlbLookup, Translation,
    BITMAP_CHUNK_PAGES, KIND_HOLE_BITMAP, KIND_PAGE,
};
pub use key::{
    ReachSet, ReachSize, KEY_CLASS_1G, KEY_CLASS_2M, KEY_CLASS_32M, KEY_CLASS_4K, KEY_CLASS_64K, KEY_CLASS_HOLE_BITMAP,
    REACHES,
};
pub use sampler::{MissSample, MissSampler, MissSamples};
pub use stats::{ArrayStats, SideStats, TlbStats};

use crate::hw::set_assoc::SetAssoc;
use crate::units::{Asid, VirtAddr, Vpn};
use key::{key_asid, key_first_vpn, masked_vpn, VPN_MASK};
use l1::{build, miss_tag, L1Array, L1Entry, L1Tlb, NO_MISS};
use l2::{L2Entry, L2Tlb, GIANT, SHARED};
use stats::Counters;

/// Ranges up to this many pages are shot down in the L2 by probing each
/// page's set; longer ones by scanning the array.
const L2_PROBE_LIMIT_PAGES: u64 = 64;

/// The TLBs of one core; `X` owns the L2's extension kinds.
#[derive(Debug, Clone)]
pub struct Tlb<X = NoExtension> {
    l1d: L1Tlb,
    l1i: L1Tlb,
    l2: L2Tlb<X>,
    l1i_enabled: bool,
    data: SideStats,
    instr: SideStats,
}

impl<X: TlbExtension + Default> Tlb<X> {
    /// Builds the hierarchy; `cfg` must have passed [`TlbConfig::validate`].
    /// `seed` feeds random replacement (give each core its own).
    pub fn new(cfg: &TlbConfig, seed: u64) -> Self {
        Tlb::with_extensions(cfg, seed, X::default())
    }
}

impl<X: TlbExtension> Tlb<X> {
    /// [`Tlb::new`] with the owner of the extension kinds given.
    pub fn with_extensions(cfg: &TlbConfig, seed: u64, ext: X) -> Self {
        let p = cfg.policy;
        let seed_of = |i: u64| seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        // Three data arrays, smallest first (an Arm core's may be 4 KiB,
        // 64 KiB and 2 MiB: `TlbConfig::l1_data_sizes`); a missing one is
        // disabled, of the largest reach so that the order holds.
        let sizes = cfg.l1_data_sizes();
        let data_array = |i: usize| match sizes.get(i) {
            Some(&(reach, entries, ways)) => L1Array::new(reach, entries, ways, p, seed_of(1 + i as u64)),
            None => L1Array::new(ReachSize::Size1G, 0, 0, p, seed_of(1 + i as u64)),
        };
        let l1d = L1Tlb::new([data_array(0), data_array(1), data_array(2)]);
        let l1i = L1Tlb::new([
            L1Array::new(ReachSize::Size4K, cfg.l1i_4k_entries, cfg.l1i_4k_ways, p, seed_of(4)),
            L1Array::new(ReachSize::Size2M, cfg.l1i_2m_entries, cfg.l1i_2m_ways, p, seed_of(5)),
            // No 1 GiB instruction array: 1 GiB code pages are fractured
            // into 2 MiB pieces, as on Skylake.
            L1Array::new(ReachSize::Size1G, 0, 0, p, seed_of(6)),
        ]);
        let shared = build(cfg.l2_entries, cfg.l2_ways, p, seed_of(7));
        let giant = build(cfg.l2_1g_entries, cfg.l2_1g_ways, p, seed_of(8));
        Tlb {
            l1d,
            l1i,
            l2: L2Tlb::new(shared, giant, cfg.shared_reach(), ext),
            l1i_enabled: cfg.l1i_enabled,
            data: SideStats::default(),
            instr: SideStats::default(),
        }
    }

    /// The host bytes [`Tlb::new`] allocates for each array, by its
    /// `machine.tlb` key (`l2_entries`...), the L2's with the extension
    /// kinds' side table (a payload per L2 slot): the host-memory budget's
    /// count.
    pub fn host_bytes(cfg: &TlbConfig) -> Vec<(&'static str, u64)> {
        let l1 = |entries: u32| SetAssoc::<L1Entry>::host_bytes(entries as u64);
        let payload = std::mem::size_of::<X::Payload>() as u64;
        let l2 = |entries: u32| SetAssoc::<L2Entry>::host_bytes(entries as u64) + entries as u64 * payload;
        vec![
            ("l1_4k_entries", l1(cfg.l1_4k_entries)),
            ("l1_2m_entries", l1(cfg.l1_2m_entries)),
            ("l1_1g_entries", l1(cfg.l1_1g_entries)),
            ("l1_64k_entries", l1(cfg.l1_64k_entries)),
            ("l1_32m_entries", l1(cfg.l1_32m_entries)),
            ("l1i_4k_entries", l1(cfg.l1i_4k_entries)),
            ("l1i_2m_entries", l1(cfg.l1i_2m_entries)),
            ("l2_entries", l2(cfg.l2_entries)),
            ("l2_1g_entries", l2(cfg.l2_1g_entries)),
        ]
    }

    /// Whether an L2 array holds translations of `reach` (coalesced 64 KiB
    /// and 32 MiB ones only on cores that coalesce: `TlbConfig::l2_coalesced`).
    pub fn holds_reach(&self, reach: ReachSize) -> bool {
        self.l2.has_array(reach)
    }

    /// The owner of the extension kinds.
    pub fn extensions(&self) -> &X {
        &self.l2.ext
    }

    /// The owner of the extension kinds, to count into (cold code).
    pub fn extensions_mut(&mut self) -> &mut X {
        &mut self.l2.ext
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
    /// (Always inlined into the translation stage: with the stage in two
    /// variants LLVM kept it out of line, +3% instructions on gups.)
    #[inline(always)]
    pub fn lookup(&mut self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        match self.lookup_l1(asid, vaddr, is_instr) {
            Some(t) => TlbLookup::L1(t),
            None => self.lookup_below_l1(asid, vaddr, is_instr),
        }
    }

    /// The first half of [`lookup`](Self::lookup): the access counted and
    /// the L1 probed; on a miss the caller goes on with
    /// [`lookup_below_l1`](Self::lookup_below_l1). (The MMU's hit path
    /// takes the translation from here, in registers: through `lookup`,
    /// LLVM kept the `TlbLookup` of every hit in memory, since the call
    /// below returns one there.)
    #[inline(always)]
    pub fn lookup_l1(&mut self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> Option<Translation> {
        let mvpn = masked_vpn(vaddr);
        if is_instr {
            self.instr.accesses += 1;
        } else {
            self.data.accesses += 1;
        }
        self.l1_side(is_instr).lookup(asid, mvpn)
    }

    /// The rest of a lookup after [`lookup_l1`](Self::lookup_l1) missed.
    #[inline(never)]
    pub fn lookup_below_l1(&mut self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        let mvpn = masked_vpn(vaddr);
        self.l1_side(is_instr).missed = miss_tag(asid, mvpn);
        let side = if is_instr { &mut self.instr } else { &mut self.data };
        side.l1_misses += 1;
        let Some(e) = self.l2.lookup(asid, mvpn) else {
            side.l2_misses += 1;
            return TlbLookup::Miss;
        };
        self.l2_hit(&e, vaddr, is_instr)
    }

    /// An L2 hit: fills the L1 and translates. (Out of line: the L2 miss,
    /// the common case where the L2 matters, then keeps its registers.)
    #[inline(never)]
    fn l2_hit(&mut self, e: &l2::L2Entry, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        // An extension kind's payload comes from its owner, out of line.
        let entry = if e.kind == KIND_PAGE {
            e.page_entry()
        } else if X::RESOLVING_KINDS >> (e.kind & 63) & 1 == 0 {
            self.l2.entry(e)
        } else {
            match self.ext_hit(e, vaddr) {
                Some(entry) => entry,
                None => return TlbLookup::Resolve,
            }
        };
        self.fill_l1(&entry, vaddr, is_instr);
        TlbLookup::L2(entry.translate(vaddr))
    }

    /// An L2 hit on an extension kind: its whole entry, or `None` when its
    /// owner says the entry alone cannot translate `vaddr`.
    #[cold]
    #[inline(never)]
    fn ext_hit(&mut self, e: &l2::L2Entry, vaddr: VirtAddr) -> Option<TlbEntry<X::Payload>> {
        let entry = self.l2.entry(e);
        let offset = vaddr.raw() & (entry.size.bytes() - 1);
        match &entry.kind {
            EntryKind::Ext(p) if self.l2.ext.needs_resolution(p, offset) => None,
            _ => Some(entry),
        }
    }

    /// Caches `entry` in the L2 only (an extension kind's entry whose first
    /// access the MMU resolves itself).
    pub fn insert_l2(&mut self, entry: &TlbEntry<X::Payload>) {
        debug_assert!(entry.vbase.is_aligned(entry.size.nr_pages()));
        self.l2.insert(entry);
    }

    /// The cached hole bits (bit `i` for page `i`) of the 32-page chunk
    /// holding `vaddr`, touched; `None` when the L2 does not hold them.
    pub fn lookup_bitmap(&mut self, asid: Asid, vaddr: VirtAddr) -> Option<u32> {
        self.l2.lookup_bitmap(asid, masked_vpn(vaddr))
    }

    /// Caches the hole bits of the 32-page chunk holding `vaddr` in the L2.
    pub fn insert_bitmap(&mut self, asid: Asid, vaddr: VirtAddr, bits: u32) {
        self.l2.insert_bitmap(asid, masked_vpn(vaddr), bits);
    }

    /// Every valid L2 entry, as (kind tag, reach): what the L2 holds, by
    /// kind (a hole-bitmap entry has kind [`KIND_HOLE_BITMAP`]).
    pub fn l2_kinds(&self) -> impl Iterator<Item = (u8, ReachSize)> + '_ {
        self.l2.entries().map(|e| (e.kind, e.reach))
    }

    /// What `lookup` would return, without counting, filling or touching
    /// replacement state (for tests, debugging and shootdown accounting).
    pub fn peek(&self, asid: Asid, vaddr: VirtAddr, is_instr: bool) -> TlbLookup {
        let mvpn = masked_vpn(vaddr);
        let l1 = if is_instr && self.l1i_enabled { &self.l1i } else { &self.l1d };
        if let Some(t) = l1.peek(asid, mvpn) {
            return TlbLookup::L1(t);
        }
        match self.peek_l2(asid, vaddr) {
            Some(e) => TlbLookup::L2(e.translate(vaddr)),
            None => TlbLookup::Miss,
        }
    }

    /// The L2 entry translating `vaddr`, whole, without touching anything.
    pub fn peek_l2(&self, asid: Asid, vaddr: VirtAddr) -> Option<TlbEntry<X::Payload>> {
        self.l2.peek(asid, masked_vpn(vaddr)).map(|e| self.l2.entry(&e))
    }

    /// Installs in the L1 of the access's side the entry an access to `vaddr`
    /// through `entry` needs: a plain page goes to the array of its reach
    /// (fractured into the largest enabled smaller size if that array is
    /// absent); an extension kind yields the piece its payload says (a
    /// colored huge page a 4 KiB page, paper III-B-1).
    pub fn fill_l1(&mut self, entry: &TlbEntry<X::Payload>, vaddr: VirtAddr, is_instr: bool) {
        self.fill_l1_inline(entry, vaddr, is_instr);
    }

    /// [`fill_l1`](Self::fill_l1), for the fill after a walk to inline.
    #[inline(always)]
    fn fill_l1_inline(&mut self, entry: &TlbEntry<X::Payload>, vaddr: VirtAddr, is_instr: bool) {
        debug_assert!(entry.covers(vaddr.vpn()));
        let piece = entry.l1_piece();
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
        let l1_entry = L1Entry {
            pfn: entry.frame_of(piece_base),
            writable: entry.writable,
            dirty: entry.dirty,
            origin: entry.l1_origin(),
        };
        let (set, key) = array.set_and_key(entry.asid, mvpn);
        let placed = array.insert(set, key, l1_entry, known_absent);
        side.keys_changed();
        if let Some(slot) = placed {
            side.note_use(k, slot, entry.asid, mvpn);
        }
    }

    /// After a walk for an access to `vaddr`: caches `entry` in the L2 (if
    /// an L2 array holds its reach) and fills the L1.
    pub fn fill_after_walk(&mut self, entry: TlbEntry<X::Payload>, vaddr: VirtAddr, is_instr: bool) {
        debug_assert!(entry.vbase.is_aligned(entry.size.nr_pages()));
        self.l2.insert(&entry);
        self.fill_l1(&entry, vaddr, is_instr);
    }

    /// [`fill_after_walk`](Self::fill_after_walk) of a plain page, for an
    /// access to `vaddr` of `asid`: the MMU's path after every walk. The
    /// entry is built here and stays in registers through the L2 insert
    /// and the L1 fill, both inlined.
    #[inline(never)]
    pub fn fill_page_after_walk(&mut self, asid: Asid, vaddr: VirtAddr, leaf: PageLeaf, is_instr: bool) {
        let entry = leaf.entry(asid, vaddr);
        self.l2.insert(&entry);
        self.fill_l1_inline(&entry, vaddr, is_instr);
    }

    /// Sets the dirty bit of every entry translating `vaddr` (all L1 entries
    /// built from the same page share its D bit). Returns how many changed.
    pub fn mark_dirty(&mut self, asid: Asid, vaddr: VirtAddr) -> usize {
        let mvpn = masked_vpn(vaddr);
        let mut changed = self.l2.mark_dirty(asid, mvpn);
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

    /// INVLPG: drops every entry of `asid`, of any reach, that translates
    /// `vaddr`, including L1 pieces of a larger page containing it.
    pub fn invalidate_page(&mut self, asid: Asid, vaddr: VirtAddr) -> usize {
        let mvpn = masked_vpn(vaddr);
        let mut n = 0;
        for reach in ReachSize::ALL {
            n += self.l2.invalidate_key(asid, reach, mvpn);
        }
        n += self.l2.invalidate_bitmap(asid, mvpn);
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

    /// L2 shootdown of masked pages `first..=last` one key at a time (the
    /// reaches without live entries are skipped: they hold nothing).
    fn invalidate_l2_by_probing(&mut self, asid: Asid, first: u64, last: u64) -> usize {
        let mut n = 0;
        for reach in ReachSize::ALL {
            let step = reach.nr_pages();
            let mut vpn = first & !(step - 1);
            while vpn <= last && self.l2.holds(reach) {
                n += self.l2.invalidate_key(asid, reach, vpn);
                vpn += step;
            }
        }
        let mut vpn = first & !(BITMAP_CHUNK_PAGES - 1);
        while vpn <= last && self.l2.holds_bitmaps() {
            n += self.l2.invalidate_bitmap(asid, vpn);
            vpn += BITMAP_CHUNK_PAGES;
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

    /// Host-prefetches the L2 sets `vaddr` maps to (those of the reaches
    /// the L2 holds), so a caller that knows the next address can hide the
    /// host miss on them.
    #[inline]
    pub fn prefetch(&self, vaddr: VirtAddr) {
        self.l2.prefetch(masked_vpn(vaddr));
    }

    pub fn stats(&self) -> TlbStats {
        let [i4, i2, _] = &self.l1i.arrays;
        // Every access probes all L1 arrays of its side (in parallel, in
        // hardware); every L1 miss probes both L2 arrays.
        let (l1d_lookups, l1i_lookups) = if self.l1i_enabled {
            (self.data.accesses, self.instr.accesses)
        } else {
            (self.data.accesses + self.instr.accesses, 0)
        };
        let l2_lookups = self.data.l1_misses + self.instr.l1_misses;
        // The data arrays by reach (one the L1 does not have reports zeros;
        // a disabled one its lookups as misses, as before).
        let l1d = |reach: ReachSize| {
            let array = self.l1d.arrays.iter().find(|a| a.size == reach);
            array.map_or_else(ArrayStats::default, |a| a.counters.report(l1d_lookups))
        };
        TlbStats {
            data: self.data,
            instr: self.instr,
            l1d_4k: l1d(ReachSize::Size4K),
            l1d_64k: l1d(ReachSize::Size64K),
            l1d_2m: l1d(ReachSize::Size2M),
            l1d_32m: l1d(ReachSize::Size32M),
            l1d_1g: l1d(ReachSize::Size1G),
            l1i_4k: i4.counters.report(l1i_lookups),
            l1i_2m: i2.counters.report(l1i_lookups),
            l2: self.l2.arrays[SHARED].counters.report(l2_lookups),
            l2_1g: self.l2.arrays[GIANT].counters.report(l2_lookups),
        }
    }

    /// Zeroes the counters (contents stay: for a warm-up phase).
    pub fn reset_stats(&mut self) {
        for l1 in [&mut self.l1d, &mut self.l1i] {
            for a in &mut l1.arrays {
                a.counters = Counters::default();
            }
        }
        for a in &mut self.l2.arrays {
            a.counters = Counters::default();
        }
        self.data = SideStats::default();
        self.instr = SideStats::default();
        self.l2.ext.reset_stats();
    }

    /// Valid entries held in (L1 data + L1 instruction, L2).
    pub fn occupancy(&self) -> (usize, usize) {
        let l1 = self.l1d.arrays.iter().chain(&self.l1i.arrays).map(|a| a.sa.len()).sum();
        (l1, self.l2.len())
    }
}
