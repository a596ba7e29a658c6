//! The L2 TLB (STLB): arrays of entries of any reach and kind. Today's x86
//! cores have one array shared by 4 KiB and 2 MiB entries and a small one
//! for 1 GiB entries; which reaches the shared array holds is
//! configuration (`TlbConfig::l2_reach`), so coalesced 64 KiB and 32 MiB
//! entries take a place beside them when a system makes them.
//!
//! A lookup probes the reaches that hold live entries, smallest first (a
//! smaller entry, e.g. a perforated page's hole, takes precedence over a
//! larger one covering the same address): a count per reach says which,
//! so a workload of 4 KiB pages probes one set per lookup.
//!
//! An entry is 24 bytes, so a set's entries take a few host cache lines
//! and a fill copies no `memcpy`: it keeps a kind tag, and for an extension
//! kind an index into the side table its owner ([`TlbExtension`]) keeps.

use super::entry::{EntryKind, ExtPayload, TlbEntry, TlbExtension, BITMAP_CHUNK_PAGES, KIND_HOLE_BITMAP, KIND_PAGE};
use super::key::{ReachSet, ReachSize, ASID_SHIFT, KEY_CLASS_HOLE_BITMAP, REACHES, VPN_BITS, VPN_MASK};
use super::stats::Counters;
use crate::hw::set_assoc::{Placed, SetAssoc, Slot, INVALID_KEY};
use crate::units::{Asid, Pfn, Vpn};

/// An L2 entry as the array stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct L2Entry {
    pub vbase: Vpn,
    /// A plain page's first frame; for an extension kind, the index its
    /// owner gave (its side table's).
    pub target: u64,
    pub asid: Asid,
    pub reach: ReachSize,
    pub writable: bool,
    pub dirty: bool,
    /// [`KIND_PAGE`], or the tag of an extension kind.
    pub kind: u8,
}

/// L2 entries stay small: the hot probe reads a set of them.
const _: () = assert!(std::mem::size_of::<L2Entry>() <= 24);

impl Default for L2Entry {
    fn default() -> Self {
        L2Entry {
            vbase: Vpn::new(0),
            target: 0,
            asid: 0,
            reach: ReachSize::Size4K,
            writable: false,
            dirty: false,
            kind: KIND_PAGE,
        }
    }
}

impl L2Entry {
    /// The L2 entry of `entry` (an extension kind's index is filled in
    /// once its owner has stored the payload).
    #[inline(always)]
    fn of<P: ExtPayload>(entry: &TlbEntry<P>) -> L2Entry {
        let (kind, target) = match entry.kind {
            EntryKind::Page { pfn } => (KIND_PAGE, pfn.raw()),
            EntryKind::Ext(p) => (p.kind(), 0),
        };
        L2Entry {
            vbase: entry.vbase,
            target,
            asid: entry.asid,
            reach: entry.size,
            writable: entry.writable,
            dirty: entry.dirty,
            kind,
        }
    }
    /// Does this entry translate (or, a hole-bitmap entry, describe) any
    /// page of `[start, end)`?
    pub fn overlaps(&self, start: Vpn, end: Vpn) -> bool {
        let pages = if self.kind == KIND_HOLE_BITMAP { BITMAP_CHUNK_PAGES } else { self.reach.nr_pages() };
        self.vbase.raw() < end.raw() && start.raw() < self.vbase.raw() + pages
    }
    /// Its row in the live counts: its reach, or [`BITMAP_ROW`].
    fn row(&self) -> usize {
        if self.kind == KIND_HOLE_BITMAP {
            BITMAP_ROW
        } else {
            self.reach as usize
        }
    }
    /// The whole entry of a plain page.
    #[inline]
    pub fn page_entry<P>(&self) -> TlbEntry<P> {
        let kind = EntryKind::Page { pfn: Pfn::new(self.target) };
        TlbEntry {
            asid: self.asid,
            vbase: self.vbase,
            size: self.reach,
            writable: self.writable,
            dirty: self.dirty,
            kind,
        }
    }
}

/// One array of the L2 and what it counts.
#[derive(Debug, Clone)]
pub(super) struct L2Array {
    pub sa: SetAssoc<L2Entry>,
    pub counters: Counters,
}

/// The array shared by the small reaches (statistics `tlb.l2.*`).
pub(super) const SHARED: usize = 0;
/// The 1 GiB array (statistics `tlb.l2_1g.*`).
pub(super) const GIANT: usize = 1;
/// [`Probe::array`] of a reach no array holds.
const NO_ARRAY: u8 = u8::MAX;

/// Tables by reach have this many rows, so that a reach taken from the
/// bits of a `u8` (`trailing_zeros() & 7`) indexes them without a bounds
/// check on the probe path.
const ROWS: usize = 8;
const _: () = assert!(REACHES <= ROWS && ReachSize::Size4K as usize == 0 && ReachSize::Size4K.key_class() == 0);

/// The row of the live counts that counts cached hole-bitmap entries: past
/// the reaches, so its bit never enters `live_set` (no lookup for an
/// address probes them).
const BITMAP_ROW: usize = REACHES;
const _: () = assert!(BITMAP_ROW < ROWS);

/// log2 of [`BITMAP_CHUNK_PAGES`]: a hole-bitmap entry's index is the vpn
/// shifted by it.
const BITMAP_SHIFT: u32 = BITMAP_CHUNK_PAGES.trailing_zeros();

/// How a reach is probed: its array, and what its key and set index take
/// from a 4 KiB vpn (precomputed: a lookup should not branch on reach).
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// [`SHARED`], [`GIANT`], or [`NO_ARRAY`].
    array: u8,
    /// `reach.pages_shift()`.
    shift: u32,
    /// `reach.key_class() << VPN_BITS`.
    class_bits: u64,
}

impl Probe {
    #[inline(always)]
    fn key(&self, asid: Asid, mvpn: u64) -> u64 {
        ((asid as u64) << ASID_SHIFT) | self.class_bits | (mvpn >> self.shift)
    }
    #[inline(always)]
    fn set(&self, sa: &SetAssoc<L2Entry>, mvpn: u64) -> usize {
        sa.set_of(mvpn >> self.shift)
    }
}

/// The reach (as a row) of each key class.
const REACH_OF_CLASS: [usize; ROWS] = {
    let mut rows = [0; ROWS];
    let mut i = 0;
    while i < REACHES {
        rows[ReachSize::ALL[i].key_class() as usize] = i;
        i += 1;
    }
    rows[KEY_CLASS_HOLE_BITMAP as usize] = BITMAP_ROW;
    rows
};

#[derive(Debug, Clone)]
pub(super) struct L2Tlb<X> {
    pub arrays: [L2Array; 2],
    /// By reach (`ReachSize as usize`): its array and key geometry.
    probe: [Probe; ROWS],
    /// Valid entries of each reach.
    pub live: [u32; ROWS],
    /// The reaches the shared array holds (the ones `prefetch` fetches).
    shared_set: u8,
    /// Bit `r` set when reach `r` has live entries: the reaches a lookup
    /// probes (the others could not hit).
    live_set: u8,
    /// Per reach, a key that a probe found absent, and its set: the fill
    /// after the walk that follows an L2 miss neither recomputes them nor
    /// scans the set for the key again. Only inserting that key could make
    /// a record false, and `insert` clears it then (invalidations only
    /// remove keys).
    pub absent: [Absent; ROWS],
    /// The owner of the extension kinds, with their side tables.
    pub ext: X,
}

/// A key known to be absent from its set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Absent {
    pub set: usize,
    pub key: u64,
}

impl Absent {
    /// No record: no key equals `INVALID_KEY`.
    pub const NONE: Absent = Absent { set: 0, key: INVALID_KEY };
}

impl<X: TlbExtension> L2Tlb<X> {
    /// `shared` holds the reaches of `shared_reach`; `giant` 1 GiB.
    pub fn new(shared: SetAssoc<L2Entry>, giant: SetAssoc<L2Entry>, shared_reach: ReachSet, ext: X) -> Self {
        let mut probe = [Probe { array: NO_ARRAY, shift: 0, class_bits: 0 }; ROWS];
        for r in ReachSize::ALL {
            // 1 GiB has its own array unless the shared one holds it (an
            // Arm core's unified L2 TLB).
            let array = match r {
                _ if shared_reach.contains(r) => SHARED as u8,
                ReachSize::Size1G => GIANT as u8,
                _ => NO_ARRAY,
            };
            probe[r as usize] = Probe { array, shift: r.pages_shift(), class_bits: r.key_class() << VPN_BITS };
        }
        L2Tlb {
            arrays: [
                L2Array { sa: shared, counters: Counters::default() },
                L2Array { sa: giant, counters: Counters::default() },
            ],
            probe,
            live: [0; ROWS],
            shared_set: shared_reach.0,
            live_set: 0,
            absent: [Absent::NONE; ROWS],
            ext,
        }
    }

    /// Whether an array holds entries of `reach`.
    pub fn has_array(&self, reach: ReachSize) -> bool {
        self.probe[reach as usize].array != NO_ARRAY
    }

    /// Whether entries of `reach` are live (so a probe could hit).
    #[inline]
    pub fn holds(&self, reach: ReachSize) -> bool {
        self.live_set & (1 << reach as u8) != 0
    }

    /// The entry translating `mvpn`: its array and slot. Records in
    /// `absent` the keys it probed in vain.
    /// (Of the fields, not `self`: a lookup records in `self.absent`.)
    #[inline(always)]
    fn find(
        arrays: &[L2Array; 2],
        probe: &[Probe; ROWS],
        live_set: u8,
        asid: Asid,
        mvpn: u64,
        absent: &mut [Absent; ROWS],
    ) -> Option<(usize, Slot)> {
        // 4 KiB first, with its constants (shift 0, class 0): the reach of
        // nearly every lookup that reaches the L2, and the one that takes
        // precedence. A live 4 KiB reach is in the shared array (no other
        // holds it).
        if live_set & 1 != 0 {
            let sa = &arrays[SHARED].sa;
            let (set, key) = (sa.set_of(mvpn), ((asid as u64) << ASID_SHIFT) | mvpn);
            debug_assert_eq!((set, key), (probe[0].set(sa, mvpn), probe[0].key(asid, mvpn)));
            match sa.find(set, key) {
                Some(slot) => return Some((SHARED, slot)),
                None => absent[0] = Absent { set, key },
            }
        }
        let mut live = live_set & !1;
        while live != 0 {
            let r = (live.trailing_zeros() & 7) as usize;
            live &= live - 1;
            let p = probe[r];
            let a = p.array as usize & 1; // a live reach has an array
            let sa = &arrays[a].sa;
            let (set, key) = (p.set(sa, mvpn), p.key(asid, mvpn));
            match sa.find(set, key) {
                Some(slot) => return Some((a, slot)),
                None => absent[r] = Absent { set, key },
            }
        }
        None
    }

    /// A lookup: the entry translating `mvpn`, touched and counted.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, mvpn: u64) -> Option<L2Entry> {
        let (a, slot) = Self::find(&self.arrays, &self.probe, self.live_set, asid, mvpn, &mut self.absent)?;
        let array = &mut self.arrays[a];
        array.sa.touch(slot);
        array.counters.hits += 1;
        Some(*array.sa.value(slot))
    }

    pub fn peek(&self, asid: Asid, mvpn: u64) -> Option<L2Entry> {
        Self::find(&self.arrays, &self.probe, self.live_set, asid, mvpn, &mut [Absent::NONE; ROWS])
            .map(|(a, slot)| *self.arrays[a].sa.value(slot))
    }

    /// The whole entry `e` stands for (an extension kind's payload loaded
    /// from its owner). Out of line: the hit path calls it only for an
    /// extension kind.
    #[cold]
    #[inline(never)]
    pub fn entry(&self, e: &L2Entry) -> TlbEntry<X::Payload> {
        match e.kind {
            KIND_PAGE => e.page_entry(),
            k => TlbEntry { kind: EntryKind::Ext(self.ext.load(k, e.target as u32)), ..e.page_entry() },
        }
    }

    /// Counts `n` fewer live entries of reach row `r`.
    #[inline]
    fn dropped(&mut self, r: usize, n: u32) {
        let r = r & 7;
        self.live[r] -= n;
        if self.live[r] == 0 {
            self.live_set &= !(1 << r);
        }
    }

    /// Places `entry` (always inlined: the fill after a walk is hot, and
    /// `Tlb::insert_l2`'s cold copy must not make it a call). The common
    /// case, a key the probe before the walk found absent, builds the L2
    /// entry on its own path, so that the entry stays in registers up to
    /// its store into the array (through the stack, it stalled the host).
    #[inline(always)]
    pub fn insert(&mut self, entry: &TlbEntry<X::Payload>) {
        let r = entry.size;
        let p = &self.probe[r as usize & 7];
        if p.array == NO_ARRAY {
            return; // no array holds this reach
        }
        let a = p.array as usize & 1;
        let key = p.key(entry.asid, entry.vbase.raw() & VPN_MASK);
        let record = &mut self.absent[r as usize & 7];
        if record.key != key {
            return self.insert_unrecorded(a, key, entry);
        }
        // The probe before the walk found the key absent.
        let set = record.set;
        *record = Absent::NONE;
        let placed = self.arrays[a].sa.insert_absent(set, key, L2Entry::of(entry));
        self.count_fill(a, entry, placed);
    }

    /// [`insert`](Self::insert) of a key no probe recorded absent.
    #[inline(never)]
    fn insert_unrecorded(&mut self, a: usize, key: u64, entry: &TlbEntry<X::Payload>) {
        let array = &mut self.arrays[a];
        let set = self.probe[entry.size as usize & 7].set(&array.sa, entry.vbase.raw() & VPN_MASK);
        let placed = array.sa.insert_slot(set, key, L2Entry::of(entry));
        self.count_fill(a, entry, placed);
    }

    /// Counts a fill of `entry` into array `a` that `placed` says where it
    /// went (`None`: a disabled array), and hands an extension kind's
    /// payload to its owner.
    #[inline(always)]
    fn count_fill(&mut self, a: usize, entry: &TlbEntry<X::Payload>, placed: Option<Placed>) {
        let Some(placed) = placed else {
            return; // a disabled array
        };
        let array = &mut self.arrays[a];
        array.counters.fills += 1;
        array.counters.evictions += placed.evicted.is_some() as u64;
        // Keep the counts per reach: a new key adds its reach, a victim
        // removes its own (an update in place changes neither).
        let r = entry.size;
        if placed.fresh {
            self.live[r as usize & 7] += 1;
            self.live_set |= 1 << r as u8;
        }
        if let Some(old) = placed.evicted {
            self.dropped(REACH_OF_CLASS[(old >> VPN_BITS & 7) as usize], 1);
        }
        if let EntryKind::Ext(payload) = entry.kind {
            self.store_ext(a, placed.slot, &payload);
        }
    }

    /// Hands an extension entry's payload to its owner, and keeps in the
    /// entry the index the owner gives. (Out of line: plain pages never
    /// come here.)
    #[cold]
    #[inline(never)]
    fn store_ext(&mut self, a: usize, slot: Slot, p: &X::Payload) {
        let base = if a == SHARED { 0 } else { self.arrays[SHARED].sa.capacity() };
        let slots = self.arrays[SHARED].sa.capacity() + self.arrays[GIANT].sa.capacity();
        let index = self.ext.store(base + slot, slots, p);
        self.arrays[a].sa.value_mut(slot).target = index as u64;
    }

    /// The entries whose key is exactly the `reach` page containing `mvpn`.
    pub fn invalidate_key(&mut self, asid: Asid, reach: ReachSize, mvpn: u64) -> usize {
        if !self.holds(reach) {
            return 0;
        }
        let p = self.probe[reach as usize & 7];
        let array = &mut self.arrays[p.array as usize & 1];
        let (set, key) = (p.set(&array.sa, mvpn), p.key(asid, mvpn));
        let n = array.sa.invalidate(set, key).is_some() as u32;
        array.counters.invalidations += n as u64;
        self.dropped(reach as usize, n);
        n as usize
    }

    pub fn invalidate_if(&mut self, mut pred: impl FnMut(&L2Entry) -> bool) -> usize {
        let mut dropped = [0u32; ROWS];
        let mut n = 0;
        for array in &mut self.arrays {
            let k = array.sa.invalidate_if(|_, e| {
                let drop = pred(e);
                dropped[e.row() & 7] += drop as u32;
                drop
            });
            array.counters.invalidations += k as u64;
            n += k;
        }
        for (r, &n) in dropped.iter().enumerate().take(BITMAP_ROW + 1) {
            if n > 0 {
                self.dropped(r, n);
            }
        }
        n
    }

    /// Sets the dirty bit of the entries translating `mvpn`; returns how
    /// many changed.
    pub fn mark_dirty(&mut self, asid: Asid, mvpn: u64) -> usize {
        let mut changed = 0;
        for r in ReachSize::ALL {
            if !self.holds(r) {
                continue;
            }
            let p = self.probe[r as usize];
            let sa = &mut self.arrays[p.array as usize & 1].sa;
            let (set, key) = (p.set(sa, mvpn), p.key(asid, mvpn));
            if let Some(slot) = sa.find(set, key) {
                let e = sa.value_mut(slot);
                changed += !e.dirty as usize;
                e.dirty = true;
            }
        }
        changed
    }

    /// Host-prefetches the sets of the shared array that `mvpn` maps to
    /// for the reaches it holds live.
    #[inline]
    pub fn prefetch(&self, mvpn: u64) {
        let shared = &self.arrays[SHARED].sa;
        // 4 KiB with its constants, as in `find`.
        if self.live_set & 1 != 0 {
            shared.prefetch(shared.set_of(mvpn));
        }
        let mut live = self.live_set & self.shared_set & !1;
        while live != 0 {
            let r = (live.trailing_zeros() & 7) as usize;
            live &= live - 1;
            shared.prefetch(self.probe[r].set(shared, mvpn));
        }
    }

    pub fn len(&self) -> usize {
        self.arrays.iter().map(|a| a.sa.len()).sum()
    }

    /// Every valid entry, of both arrays.
    pub fn entries(&self) -> impl Iterator<Item = &L2Entry> + '_ {
        self.arrays.iter().flat_map(|a| a.sa.iter().map(|(_, e)| e))
    }

    /// The set and key of the hole-bitmap entry covering masked page
    /// `mvpn` (in the shared array, indexed by its 32-page chunk).
    fn bitmap_slot(&self, asid: Asid, mvpn: u64) -> (usize, u64) {
        let chunk = mvpn >> BITMAP_SHIFT;
        let key = ((asid as u64) << ASID_SHIFT) | (KEY_CLASS_HOLE_BITMAP << VPN_BITS) | chunk;
        (self.arrays[SHARED].sa.set_of(chunk), key)
    }

    /// Whether hole-bitmap entries are cached.
    #[inline]
    pub fn holds_bitmaps(&self) -> bool {
        self.live[BITMAP_ROW] != 0
    }

    /// The cached hole bits of the 32-page chunk holding `mvpn` (bit `i`
    /// for page `i` of the chunk), touched; `None` when not cached.
    pub fn lookup_bitmap(&mut self, asid: Asid, mvpn: u64) -> Option<u32> {
        let (set, key) = self.bitmap_slot(asid, mvpn);
        let sa = &mut self.arrays[SHARED].sa;
        let slot = sa.find(set, key)?;
        sa.touch(slot);
        Some(sa.value(slot).target as u32)
    }

    /// Caches the hole bits of the chunk holding `mvpn`: it takes an L2
    /// slot as any entry does, and may evict a translation.
    pub fn insert_bitmap(&mut self, asid: Asid, mvpn: u64, bits: u32) {
        let (set, key) = self.bitmap_slot(asid, mvpn);
        let vbase = Vpn::new(mvpn & !(BITMAP_CHUNK_PAGES - 1));
        let value = L2Entry { vbase, target: bits as u64, asid, kind: KIND_HOLE_BITMAP, ..L2Entry::default() };
        let array = &mut self.arrays[SHARED];
        let Some(placed) = array.sa.insert_slot(set, key, value) else {
            return; // a disabled array
        };
        array.counters.fills += 1;
        array.counters.evictions += placed.evicted.is_some() as u64;
        self.live[BITMAP_ROW] += placed.fresh as u32;
        if let Some(old) = placed.evicted {
            self.dropped(REACH_OF_CLASS[(old >> VPN_BITS & 7) as usize], 1);
        }
    }

    /// Drops the hole-bitmap entry of the chunk holding `mvpn`.
    pub fn invalidate_bitmap(&mut self, asid: Asid, mvpn: u64) -> usize {
        if !self.holds_bitmaps() {
            return 0;
        }
        let (set, key) = self.bitmap_slot(asid, mvpn);
        let array = &mut self.arrays[SHARED];
        let n = array.sa.invalidate(set, key).is_some() as u32;
        array.counters.invalidations += n as u64;
        self.dropped(BITMAP_ROW, n);
        n as usize
    }
}
