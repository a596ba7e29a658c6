//! A small generic set-associative array: the storage under the TLBs and the
//! page-walk caches.
//!
//! `sets x ways` slots, each holding a `u64` key and a value `V`. The caller
//! chooses the set (TLBs index by low vpn bits, the page-walk caches by low VA
//! prefix bits) and the key (which must identify the entry completely: the
//! array never looks at the value to decide a hit). A fully associative array
//! is one set.
//!
//! Layout: the keys of one set are contiguous (`keys[set * ways ..][..ways]`),
//! so a lookup in a 4- to 16-way set scans one or two host cache lines of
//! keys and touches a value only on a hit. Empty slots hold [`INVALID_KEY`];
//! callers never use that key (the TLB key packing reserves it).
//!
//! Replacement is chosen once, at construction, and dispatched by a `match`
//! on a small enum (no dynamic dispatch per access). Every policy fills an
//! empty way before evicting anything.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The key of an empty slot. No caller may insert it.
pub const INVALID_KEY: u64 = u64::MAX;

/// Which way of a full set is evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used (looked up or inserted).
    #[default]
    Lru,
    /// Oldest inserted; lookups do not refresh an entry.
    Fifo,
    /// A uniformly random way, from a seeded Xoshiro256++ (deterministic).
    Random,
}

impl Replacement {
    pub const fn name(self) -> &'static str {
        match self {
            Replacement::Lru => "lru",
            Replacement::Fifo => "fifo",
            Replacement::Random => "random",
        }
    }
}

/// Index of one slot (`set * ways + way`), as returned by [`SetAssoc::find`].
pub type Slot = usize;

/// A set-associative array of `sets x ways` `(u64 key, V)` slots.
#[derive(Debug, Clone)]
pub struct SetAssoc<V: Copy + Default> {
    sets: usize,
    ways: usize,
    set_mask: u64,
    policy: Replacement,
    keys: Vec<u64>,
    values: Vec<V>,
    /// LRU: tick of the last use; FIFO: tick of the insertion; Random: unused.
    /// An empty way has stamp 0, below every used one (ticks start at 1), so
    /// the oldest way is the first empty one when there is one.
    stamps: Vec<u64>,
    tick: u64,
    /// Valid entries, kept up to date so that callers can skip probing an
    /// empty array (the 2 MiB and 1 GiB TLB arrays of a 4 KiB workload).
    valid: usize,
    rng: Xoshiro256PlusPlus,
}

/// Where [`SetAssoc::insert_slot`] put a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub slot: Slot,
    /// The valid key it replaced (`None` when the way was empty or already
    /// held the same key).
    pub evicted: Option<u64>,
    /// Whether the key is new to the set (false: updated in place).
    pub fresh: bool,
}

impl<V: Copy + Default> SetAssoc<V> {
    /// `sets` must be a power of two (>= 1). `ways == 0` builds an empty array
    /// (a disabled structure): lookups miss, inserts are dropped.
    /// Configuration is validated before this is called (a bad shape is a bug
    /// here, not a user error).
    pub fn new(sets: usize, ways: usize, policy: Replacement, seed: u64) -> Self {
        assert!(sets.is_power_of_two(), "set count {sets} is not a power of two");
        let slots = sets * ways;
        SetAssoc {
            sets,
            ways,
            set_mask: sets as u64 - 1,
            policy,
            keys: vec![INVALID_KEY; slots],
            values: vec![V::default(); slots],
            stamps: vec![0; slots],
            tick: 0,
            valid: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The host bytes [`SetAssoc::new`] allocates for `slots` ways in all
    /// (a key, a value and a stamp each): the host-memory budget's count.
    pub fn host_bytes(slots: u64) -> u64 {
        slots.saturating_mul((2 * std::mem::size_of::<u64>() + std::mem::size_of::<V>()) as u64)
    }

    /// One set of `entries` ways: every entry can go anywhere.
    pub fn fully_associative(entries: usize, policy: Replacement, seed: u64) -> Self {
        Self::new(1, entries, policy, seed)
    }

    #[inline]
    pub fn sets(&self) -> usize {
        self.sets
    }
    #[inline]
    pub fn ways(&self) -> usize {
        self.ways
    }
    #[inline]
    pub fn capacity(&self) -> usize {
        self.sets * self.ways
    }
    #[inline]
    pub fn is_disabled(&self) -> bool {
        self.ways == 0
    }
    pub fn policy(&self) -> Replacement {
        self.policy
    }

    /// The set an index maps to: its low bits.
    #[inline]
    pub fn set_of(&self, index: u64) -> usize {
        (index & self.set_mask) as usize
    }

    #[inline]
    fn base(&self, set: usize) -> usize {
        debug_assert!(set < self.sets, "set {set} out of {}", self.sets);
        set * self.ways
    }

    /// The slot holding `key` in `set`, without touching replacement state.
    /// (An early-exit scan: a hit, the common case of the L1 TLB probe of
    /// every access, stops at its way.)
    #[inline(always)]
    pub fn find(&self, set: usize, key: u64) -> Option<Slot> {
        debug_assert_ne!(key, INVALID_KEY);
        let base = self.base(set);
        let keys = &self.keys[base..base + self.ways];
        by_ways!(self.ways, N => match_way::<N>(keys, key), _ => keys.iter().position(|&k| k == key)).map(|w| base + w)
    }

    /// Looks `key` up in `set`; a hit counts as a use (LRU).
    #[inline]
    pub fn lookup(&mut self, set: usize, key: u64) -> Option<&mut V> {
        let slot = self.find(set, key)?;
        self.touch(slot);
        Some(&mut self.values[slot])
    }

    /// Looks `key` up without counting a use.
    #[inline]
    pub fn peek(&self, set: usize, key: u64) -> Option<&V> {
        self.find(set, key).map(|slot| &self.values[slot])
    }

    /// Marks a slot as just used (LRU only; FIFO and Random ignore uses).
    #[inline]
    pub fn touch(&mut self, slot: Slot) {
        if self.policy == Replacement::Lru {
            self.tick += 1;
            self.stamps[slot] = self.tick;
        }
    }

    #[inline]
    pub fn key(&self, slot: Slot) -> u64 {
        self.keys[slot]
    }
    #[inline]
    pub fn value(&self, slot: Slot) -> &V {
        &self.values[slot]
    }
    #[inline]
    pub fn value_mut(&mut self, slot: Slot) -> &mut V {
        &mut self.values[slot]
    }

    /// Inserts `key -> value` into `set`. If `key` is already there its value
    /// is replaced in place (no eviction). Otherwise an empty way is used, or
    /// the policy's victim is evicted and returned.
    pub fn insert(&mut self, set: usize, key: u64, value: V) -> Option<(u64, V)> {
        debug_assert_ne!(key, INVALID_KEY);
        if self.ways == 0 {
            return None;
        }
        let (slot, present) = self.slot_for_insert(set, key);
        let evicted = (!present && self.keys[slot] != INVALID_KEY).then(|| (self.keys[slot], self.values[slot]));
        self.store(slot, key, value, present);
        evicted
    }

    /// [`insert`](Self::insert), returning where the key went and the key
    /// it evicted rather than a copy of the evicted value: for callers that
    /// keep more per slot beside the array, or whose values are large.
    /// `None` when the array is disabled.
    #[inline]
    pub fn insert_slot(&mut self, set: usize, key: u64, value: V) -> Option<Placed> {
        debug_assert_ne!(key, INVALID_KEY);
        if self.ways == 0 {
            return None;
        }
        let (slot, present) = self.slot_for_insert(set, key);
        let old = self.keys[slot];
        let evicted = (!present && old != INVALID_KEY).then_some(old);
        self.store(slot, key, value, present);
        Some(Placed { slot, evicted, fresh: !present })
    }

    /// [`insert_slot`](Self::insert_slot) of a key the caller knows is not
    /// in `set` (a probe just missed it): only the victim is searched for,
    /// not the key. Same result as `insert_slot` for such a key.
    #[inline(always)]
    pub fn insert_absent(&mut self, set: usize, key: u64, value: V) -> Option<Placed> {
        debug_assert_ne!(key, INVALID_KEY);
        debug_assert_eq!(self.find(set, key), None, "key {key:#x} is in set {set}");
        if self.ways == 0 {
            return None;
        }
        let base = self.base(set);
        let stamps = &self.stamps[base..base + self.ways];
        let oldest = base + by_ways!(self.ways, N => oldest::<N>(stamps), _ => oldest_any(stamps));
        let slot = self.victim(set, oldest);
        let old = self.keys[slot];
        self.store(slot, key, value, false);
        Some(Placed { slot, evicted: (old != INVALID_KEY).then_some(old), fresh: true })
    }

    /// The way an insertion of a new key takes, `oldest` being the set's
    /// way with the smallest stamp: that one when it is empty (stamp 0) or
    /// under LRU and FIFO; a random one of a full set under Random (which
    /// also replaces only once no way is empty).
    #[inline]
    fn victim(&mut self, set: usize, oldest: Slot) -> Slot {
        // The policy first: it is the run's, so under LRU and FIFO the one
        // branch taken here always goes the same way (testing the way's key
        // first cost a mispredicted branch on every L1 TLB fill).
        if self.policy != Replacement::Random || self.keys[oldest] == INVALID_KEY {
            return oldest;
        }
        // Multiply-shift maps a 64-bit draw onto [0, ways) without a
        // division (bias below 2^-32 for any realistic way count).
        let way = ((self.rng.next_u64() as u128 * self.ways as u128) >> 64) as usize;
        self.base(set) + way
    }

    /// The slot an insertion of `key` into `set` takes, and whether `key`
    /// is already there. A random victim is drawn only from a full set.
    #[inline]
    fn slot_for_insert(&mut self, set: usize, key: u64) -> (Slot, bool) {
        let base = self.base(set);
        let keys = &self.keys[base..base + self.ways];
        let stamps = &self.stamps[base..base + self.ways];
        let (present, oldest) =
            by_ways!(self.ways, N => scan::<N>(keys, stamps, key), _ => scan_any(keys, stamps, key));
        match present {
            Some(w) => (base + w, true),
            None => (self.victim(set, base + oldest), false),
        }
    }

    /// Writes `key -> value` into `slot`. A key already present is updated
    /// in place and counts as a use; a new one is the most recently used
    /// (LRU) and the youngest (FIFO).
    #[inline]
    fn store(&mut self, slot: Slot, key: u64, value: V, present: bool) {
        self.values[slot] = value;
        if present {
            self.touch(slot);
            return;
        }
        self.valid += (self.keys[slot] == INVALID_KEY) as usize;
        self.keys[slot] = key;
        self.tick += 1;
        self.stamps[slot] = self.tick;
    }

    /// Empties `key`'s slot in `set`, returning its value.
    pub fn invalidate(&mut self, set: usize, key: u64) -> Option<V> {
        let slot = self.find(set, key)?;
        self.keys[slot] = INVALID_KEY;
        self.stamps[slot] = 0;
        self.valid -= 1;
        Some(self.values[slot])
    }

    /// Empties every slot whose `(key, value)` satisfies `pred`; returns how
    /// many were emptied. Scans the whole array: for shootdowns, not the hot
    /// path.
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64, &V) -> bool) -> usize {
        let mut dropped = 0;
        for ((key, value), stamp) in self.keys.iter_mut().zip(&self.values).zip(&mut self.stamps) {
            if *key != INVALID_KEY && pred(*key, value) {
                *key = INVALID_KEY;
                *stamp = 0;
                dropped += 1;
            }
        }
        self.valid -= dropped;
        dropped
    }

    /// Applies `f` to every valid entry's value (e.g. setting a dirty bit on
    /// every entry derived from one page).
    pub fn for_each_mut(&mut self, mut f: impl FnMut(u64, &mut V)) {
        for (key, value) in self.keys.iter().zip(self.values.iter_mut()) {
            if *key != INVALID_KEY {
                f(*key, value);
            }
        }
    }

    /// Empties everything; returns how many valid entries were dropped.
    pub fn flush(&mut self) -> usize {
        self.invalidate_if(|_, _| true)
    }

    /// Valid entries.
    #[inline]
    pub fn len(&self) -> usize {
        debug_assert_eq!(self.valid, self.keys.iter().filter(|&&k| k != INVALID_KEY).count());
        self.valid
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.valid == 0
    }

    /// Every valid `(key, value)`, set by set.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        self.keys.iter().zip(&self.values).filter(|(k, _)| **k != INVALID_KEY).map(|(k, v)| (*k, v))
    }

    /// Asks the host to bring `set`'s keys into its cache ahead of a lookup
    /// (a hint: no effect on results, none at all off x86-64).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        if self.ways == 0 {
            return;
        }
        let base = self.base(set);
        let keys = &self.keys[base..base + self.ways];
        prefetch_line(keys.as_ptr() as *const u8);
        // Sets of more than 8 ways span two host lines of keys.
        prefetch_line(keys[keys.len() - 1..].as_ptr() as *const u8);
    }
}

/// Runs `$fixed` with the const `$n` bound to the way count when it is one
/// of the usual ones (4, 8, 12, 16: TLB and page-walk-cache shapes), so
/// that the compiler unrolls the scan of a set completely and drops its
/// bounds checks; `$other` otherwise. Same results either way.
macro_rules! by_ways {
    ($ways:expr, $n:ident => $fixed:expr, _ => $other:expr) => {
        match $ways {
            4 => {
                const $n: usize = 4;
                $fixed
            }
            8 => {
                const $n: usize = 8;
                $fixed
            }
            12 => {
                const $n: usize = 12;
                $fixed
            }
            16 => {
                const $n: usize = 16;
                $fixed
            }
            _ => $other,
        }
    };
}
use by_ways;

/// One pass over a set of `N` ways: the way holding `key`, and the first
/// way with the smallest stamp (the first empty way if any, stamp 0, else
/// the least recently used (LRU) or first inserted (FIFO)).
#[inline(always)]
fn scan<const N: usize>(keys: &[u64], stamps: &[u64], key: u64) -> (Option<usize>, usize) {
    let keys: &[u64; N] = keys.try_into().expect("a set of N ways");
    let stamps: &[u64; N] = stamps.try_into().expect("a set of N ways");
    let mut present = N;
    let (mut oldest, mut oldest_stamp) = (0, u64::MAX);
    for w in 0..N {
        present = if keys[w] == key { w } else { present };
        let older = stamps[w] < oldest_stamp;
        oldest = if older { w } else { oldest };
        oldest_stamp = if older { stamps[w] } else { oldest_stamp };
    }
    ((present < N).then_some(present), oldest)
}

/// The way of a set of `N` ways holding `key`, without a branch per way:
/// where a hit lands is random (the way a fill found free), and a scan
/// that stops there costs the host a misprediction on most hits.
#[inline(always)]
fn match_way<const N: usize>(keys: &[u64], key: u64) -> Option<usize> {
    let keys: &[u64; N] = keys.try_into().expect("a set of N ways");
    let mut hits = 0u32;
    for (w, &k) in keys.iter().enumerate() {
        hits |= ((k == key) as u32) << w;
    }
    // Keys are unique in a set: at most one bit is set.
    (hits != 0).then(|| hits.trailing_zeros() as usize)
}

/// [`scan`] for any number of ways.
#[inline]
fn scan_any(keys: &[u64], stamps: &[u64], key: u64) -> (Option<usize>, usize) {
    (keys.iter().position(|&k| k == key), oldest_any(stamps))
}

/// The first way of a set of `N` ways with the smallest stamp: [`scan`]
/// without the key.
#[inline(always)]
fn oldest<const N: usize>(stamps: &[u64]) -> usize {
    // The fixed length lets the inlined loop be unrolled.
    let stamps: &[u64; N] = stamps.try_into().expect("a set of N ways");
    oldest_any(stamps)
}

/// [`oldest`] for any number of ways.
#[inline(always)]
fn oldest_any(stamps: &[u64]) -> usize {
    let (mut oldest, mut oldest_stamp) = (0, u64::MAX);
    for (w, &stamp) in stamps.iter().enumerate() {
        let older = stamp < oldest_stamp;
        oldest = if older { w } else { oldest };
        oldest_stamp = if older { stamp } else { oldest_stamp };
    }
    oldest
}

#[inline(always)]
fn prefetch_line(_ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address;
    // the pointer here is in bounds anyway.
    #[allow(unused_unsafe)]
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(_ptr as *const i8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_way(policy: Replacement) -> SetAssoc<u32> {
        SetAssoc::new(4, 2, policy, 7)
    }

    #[test]
    fn lru_evicts_the_least_recently_used_of_a_two_way_set() {
        // Given a 2-way set 1, insert A then B; use A; insert C: B is the LRU
        // and goes. Then use C; insert D: A goes (C was used after A).
        let mut sa = two_way(Replacement::Lru);
        let (a, b, c, d) = (0x11, 0x21, 0x31, 0x41);
        assert_eq!(sa.insert(1, a, 10), None);
        assert_eq!(sa.insert(1, b, 20), None);
        assert_eq!(sa.lookup(1, a).copied(), Some(10));
        assert_eq!(sa.insert(1, c, 30), Some((b, 20)));
        assert!(sa.lookup(1, c).is_some());
        assert_eq!(sa.insert(1, d, 40), Some((a, 10)));
        assert_eq!(sa.peek(1, c), Some(&30));
        assert_eq!(sa.peek(1, d), Some(&40));
        // Other sets are untouched.
        assert_eq!(sa.len(), 2);
    }

    #[test]
    fn peek_does_not_refresh_lru() {
        let mut sa = two_way(Replacement::Lru);
        sa.insert(0, 1, 1);
        sa.insert(0, 2, 2);
        assert_eq!(sa.peek(0, 1), Some(&1));
        // 1 is still the LRU despite the peek.
        assert_eq!(sa.insert(0, 3, 3), Some((1, 1)));
    }

    #[test]
    fn fifo_ignores_uses() {
        // Same sequence as the LRU test: with FIFO the use of A does not save
        // it, so C evicts A (the oldest), and D evicts B.
        let mut sa = two_way(Replacement::Fifo);
        sa.insert(1, 0xa, 1);
        sa.insert(1, 0xb, 2);
        assert!(sa.lookup(1, 0xa).is_some());
        assert_eq!(sa.insert(1, 0xc, 3), Some((0xa, 1)));
        assert_eq!(sa.insert(1, 0xd, 4), Some((0xb, 2)));
    }

    #[test]
    fn reinserting_a_key_replaces_its_value_without_eviction() {
        let mut sa = two_way(Replacement::Lru);
        sa.insert(2, 5, 1);
        sa.insert(2, 6, 2);
        assert_eq!(sa.insert(2, 5, 9), None);
        assert_eq!(sa.peek(2, 5), Some(&9));
        assert_eq!(sa.len(), 2);
        // The re-insert made 5 the MRU, so 6 goes next.
        assert_eq!(sa.insert(2, 7, 3), Some((6, 2)));
    }

    #[test]
    fn empty_ways_are_filled_before_evicting_even_after_invalidation() {
        let mut sa = two_way(Replacement::Lru);
        sa.insert(0, 1, 1);
        sa.insert(0, 2, 2);
        assert_eq!(sa.invalidate(0, 1), Some(1));
        assert_eq!(sa.insert(0, 3, 3), None);
        assert_eq!(sa.peek(0, 2), Some(&2));
    }

    #[test]
    fn random_is_deterministic_for_a_seed_and_stays_in_the_set() {
        let run = |seed| {
            let mut sa: SetAssoc<u64> = SetAssoc::new(2, 4, Replacement::Random, seed);
            (0..100u64).map(|k| sa.insert(1, k * 2 + 1, k).map(|(key, _)| key)).collect::<Vec<_>>()
        };
        let first = run(42);
        assert_eq!(first, run(42));
        assert_eq!(first.iter().take(4).filter(|e| e.is_some()).count(), 0);
        assert_eq!(first.iter().skip(4).filter(|e| e.is_some()).count(), 96);
        assert_ne!(first, run(43));
    }

    #[test]
    fn invalidate_if_and_flush_count_what_they_drop() {
        let mut sa: SetAssoc<u32> = SetAssoc::fully_associative(8, Replacement::Lru, 0);
        for k in 0..6 {
            sa.insert(0, k, k as u32 * 10);
        }
        assert_eq!(sa.invalidate_if(|k, v| k % 2 == 0 && *v != 40), 2); // 0 and 20
        assert_eq!(sa.len(), 4);
        assert!(sa.peek(0, 4).is_some());
        assert_eq!(sa.flush(), 4);
        assert!(sa.is_empty());
    }

    #[test]
    fn a_disabled_array_misses_and_drops_inserts() {
        let mut sa: SetAssoc<u32> = SetAssoc::new(1, 0, Replacement::Lru, 0);
        assert_eq!(sa.insert(0, 1, 1), None);
        assert!(sa.lookup(0, 1).is_none());
        sa.prefetch(0);
        assert_eq!(sa.capacity(), 0);
    }

    #[test]
    fn replacement_names_parse_from_config() {
        let r: Replacement = serde_json::from_str("\"fifo\"").unwrap();
        assert_eq!(r, Replacement::Fifo);
        assert!(serde_json::from_str::<Replacement>("\"plru\"").is_err());
    }
}
