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

use super::entry::{EntryKind, ExtPayload, TlbEntry, TlbExtension, KIND_PAGE};
use super::key::{key_reach, make_key, ReachSize, REACHES, VPN_MASK};
use super::stats::Counters;
use crate::hw::set_assoc::{SetAssoc, Slot, INVALID_KEY};
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
        L2Entry { vbase: Vpn::new(0), target: 0, asid: 0, reach: ReachSize::Size4K, writable: false, dirty: false, kind: KIND_PAGE }
    }
}

impl L2Entry {
    /// Does this entry translate any page of `[start, end)`?
    pub fn overlaps(&self, start: Vpn, end: Vpn) -> bool {
        self.vbase.raw() < end.raw() && start.raw() < self.vbase.raw() + self.reach.nr_pages()
    }
    /// A plain page's first frame.
    #[inline]
    pub fn pfn(&self) -> Pfn {
        debug_assert_eq!(self.kind, KIND_PAGE);
        Pfn::new(self.target)
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
/// [`L2Tlb::array_of`] of a reach no array holds.
const NO_ARRAY: u8 = u8::MAX;

#[derive(Debug, Clone)]
pub(super) struct L2Tlb<X> {
    pub arrays: [L2Array; 2],
    /// The array holding each reach (by `ReachSize as usize`), or `NO_ARRAY`.
    array_of: [u8; REACHES],
    /// Valid entries of each reach.
    pub live: [u32; REACHES],
    /// Bit `r` set when reach `r` has live entries: the reaches a lookup
    /// probes (the others could not hit).
    live_set: u8,
    /// Per reach, a key that a probe found absent, and its set: the fill
    /// after the walk that follows an L2 miss neither recomputes them nor
    /// scans the set for the key again. Only inserting that key could make
    /// a record false, and `insert` clears it then (invalidations only
    /// remove keys).
    pub absent: [Absent; REACHES],
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
    pub fn new(shared: SetAssoc<L2Entry>, giant: SetAssoc<L2Entry>, shared_reach: super::key::ReachSet, ext: X) -> Self {
        let mut array_of = [NO_ARRAY; REACHES];
        for r in shared_reach.iter() {
            array_of[r as usize] = SHARED as u8;
        }
        array_of[ReachSize::Size1G as usize] = GIANT as u8;
        L2Tlb {
            arrays: [L2Array { sa: shared, counters: Counters::default() }, L2Array { sa: giant, counters: Counters::default() }],
            array_of,
            live: [0; REACHES],
            live_set: 0,
            absent: [Absent::NONE; REACHES],
            ext,
        }
    }

    /// Whether entries of `reach` are live (so a probe could hit).
    #[inline]
    pub fn holds(&self, reach: ReachSize) -> bool {
        self.live_set & (1 << reach as u8) != 0
    }

    /// The set and key of the `reach` page holding `mvpn` in its array.
    #[inline]
    fn set_and_key(sa: &SetAssoc<L2Entry>, asid: Asid, reach: ReachSize, mvpn: u64) -> (usize, u64) {
        (sa.set_of(mvpn >> reach.pages_shift()), make_key(asid, reach, mvpn))
    }

    /// The entry translating `mvpn`: its array and slot. Records in
    /// `absent` the keys it probed in vain.
    /// (Of the fields, not `self`: a lookup records in `self.absent`.)
    #[inline]
    fn find(
        arrays: &[L2Array; 2],
        array_of: &[u8; REACHES],
        live_set: u8,
        asid: Asid,
        mvpn: u64,
        absent: &mut [Absent; REACHES],
    ) -> Option<(usize, Slot)> {
        let mut live = live_set;
        while live != 0 {
            let r = ReachSize::ALL[live.trailing_zeros() as usize];
            live &= live - 1;
            let a = array_of[r as usize] as usize;
            let sa = &arrays[a].sa;
            let (set, key) = Self::set_and_key(sa, asid, r, mvpn);
            match sa.find(set, key) {
                Some(slot) => return Some((a, slot)),
                None => absent[r as usize] = Absent { set, key },
            }
        }
        None
    }

    /// A lookup: the entry translating `mvpn`, touched and counted.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, mvpn: u64) -> Option<L2Entry> {
        let (a, slot) = Self::find(&self.arrays, &self.array_of, self.live_set, asid, mvpn, &mut self.absent)?;
        let array = &mut self.arrays[a];
        array.sa.touch(slot);
        array.counters.hits += 1;
        Some(*array.sa.value(slot))
    }

    pub fn peek(&self, asid: Asid, mvpn: u64) -> Option<L2Entry> {
        Self::find(&self.arrays, &self.array_of, self.live_set, asid, mvpn, &mut [Absent::NONE; REACHES]).map(|(a, slot)| *self.arrays[a].sa.value(slot))
    }

    /// The whole entry `e` stands for (an extension kind's payload loaded
    /// from its owner).
    pub fn entry(&self, e: &L2Entry) -> TlbEntry<X::Payload> {
        let kind = match e.kind {
            KIND_PAGE => EntryKind::Page { pfn: Pfn::new(e.target) },
            k => EntryKind::Ext(self.ext.load(k, e.target as u32)),
        };
        TlbEntry { asid: e.asid, vbase: e.vbase, size: e.reach, writable: e.writable, dirty: e.dirty, kind }
    }

    /// Counts `n` fewer live entries of `reach`.
    #[inline]
    fn dropped(&mut self, reach: ReachSize, n: u32) {
        self.live[reach as usize] -= n;
        if self.live[reach as usize] == 0 {
            self.live_set &= !(1 << reach as u8);
        }
    }

    pub fn insert(&mut self, entry: &TlbEntry<X::Payload>) {
        let r = entry.size;
        let a = self.array_of[r as usize];
        if a == NO_ARRAY {
            return; // no array holds this reach
        }
        let mvpn = entry.vbase.raw() & VPN_MASK;
        let key = make_key(entry.asid, r, mvpn);
        let (kind, target) = match entry.kind {
            EntryKind::Page { pfn } => (KIND_PAGE, pfn.raw()),
            EntryKind::Ext(p) => (p.kind(), 0),
        };
        let value = L2Entry { vbase: entry.vbase, target, asid: entry.asid, reach: r, writable: entry.writable, dirty: entry.dirty, kind };
        let array = &mut self.arrays[a as usize];
        let record = &mut self.absent[r as usize];
        let placed = if record.key == key {
            // The probe before the walk found the key absent.
            let set = record.set;
            *record = Absent::NONE;
            array.sa.insert_absent(set, key, value)
        } else {
            let set = array.sa.set_of(mvpn >> r.pages_shift());
            array.sa.insert_slot(set, key, value)
        };
        let Some(placed) = placed else {
            return; // a disabled array
        };
        array.counters.fills += 1;
        array.counters.evictions += placed.evicted.is_some() as u64;
        // Keep the counts per reach: a new key adds its reach, a victim
        // removes its own (an update in place changes neither).
        if placed.fresh {
            self.live[r as usize] += 1;
            self.live_set |= 1 << r as u8;
        }
        if let Some(old) = placed.evicted {
            self.dropped(key_reach(old), 1);
        }
        if let EntryKind::Ext(p) = entry.kind {
            self.store_ext(a as usize, placed.slot, &p);
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
        let array = &mut self.arrays[self.array_of[reach as usize] as usize];
        let (set, key) = Self::set_and_key(&array.sa, asid, reach, mvpn);
        let n = array.sa.invalidate(set, key).is_some() as u32;
        array.counters.invalidations += n as u64;
        self.dropped(reach, n);
        n as usize
    }

    pub fn invalidate_if(&mut self, mut pred: impl FnMut(&L2Entry) -> bool) -> usize {
        let mut dropped = [0u32; REACHES];
        let mut n = 0;
        for array in &mut self.arrays {
            let k = array.sa.invalidate_if(|_, e| {
                let drop = pred(e);
                dropped[e.reach as usize] += drop as u32;
                drop
            });
            array.counters.invalidations += k as u64;
            n += k;
        }
        for r in ReachSize::ALL {
            if dropped[r as usize] > 0 {
                self.dropped(r, dropped[r as usize]);
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
            let sa = &mut self.arrays[self.array_of[r as usize] as usize].sa;
            let (set, key) = Self::set_and_key(sa, asid, r, mvpn);
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
        let mut live = self.live_set;
        while live != 0 {
            let r = ReachSize::ALL[live.trailing_zeros() as usize];
            live &= live - 1;
            if self.array_of[r as usize] == SHARED as u8 {
                shared.prefetch(shared.set_of(mvpn >> r.pages_shift()));
            }
        }
    }

    pub fn len(&self) -> usize {
        self.arrays.iter().map(|a| a.sa.len()).sum()
    }
}
