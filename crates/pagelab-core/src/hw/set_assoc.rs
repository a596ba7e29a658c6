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
//! and beside them each slot has a one-byte tag (a hash of its key, 0 when
//! empty), eight to a `u64`. A lookup compares the set's tags eight at a
//! time with word arithmetic and reads a key only where a tag matches: a
//! miss in a 32-way set is four word compares, and the value is touched
//! only on a hit. Empty slots hold [`INVALID_KEY`]; callers never use that
//! key (the TLB key packing reserves it).
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

/// Sets of up to this many ways keep their recency order as byte ranks
/// (below); wider ones (huge fully associative configurations) as stamps.
const MAX_RANKED_WAYS: usize = 0;

/// Byte-lane constants for the SWAR rank arithmetic: every byte 0x01 / 0x80.
const LANES_ONE: u64 = 0x0101_0101_0101_0101;
const LANES_HIGH: u64 = 0x8080_8080_8080_8080;
/// Rank held by the unused lanes of a set's last rank word: above any real
/// rank (< 64), so aging never moves it and no victim search matches it.
const RANK_PAD: u64 = 0x7f;

/// How the replacement order is kept.
#[derive(Debug, Clone)]
enum Order {
    /// Random replacement needs no order.
    Unordered,
    /// One byte per way, packed like the tags:
    /// the way's recency rank, 0 for the most recently used (LRU) or
    /// inserted (FIFO) way, `ways - 1` for the victim. A set's ranks are
    /// always a permutation of `0..ways`: touching a way of rank r ages
    /// every way ranked below r by one and gives it rank 0. This keeps
    /// exactly the order of the last-use stamps it replaces (every way of a
    /// full set has been inserted, hence ranked, at least once), but the
    /// victim is one byte compare per eight ways instead of a minimum scan.
    Ranks { ranks: Vec<u64> },
    /// Sets wider than [`MAX_RANKED_WAYS`]: tick of the last use (LRU) or of
    /// the insertion (FIFO); the victim has the smallest.
    Stamps { stamps: Vec<u64>, tick: u64 },
}

/// A set-associative array of `sets x ways` `(u64 key, V)` slots.
#[derive(Debug, Clone)]
pub struct SetAssoc<V: Copy + Default> {
    sets: usize,
    ways: usize,
    set_mask: u64,
    /// `u64` words of tags (and of ranks) per set: `ways / 8` rounded up.
    words: usize,
    /// Lanes of a set's last word that hold a way (the high bit of each).
    last_lanes: u64,
    policy: Replacement,
    keys: Vec<u64>,
    /// One byte per slot, packed eight to a word, `words` words per set: a
    /// hash of the slot's key in 1..=255, or 0 for an empty slot (and for
    /// the padding lanes past the last way). A lookup compares eight tags
    /// per word operation and reads a key only where the tag matches, so a
    /// miss in a 32-way set costs four word compares, not 32 key compares.
    tags: Vec<u64>,
    values: Vec<V>,
    order: Order,
    rng: Xoshiro256PlusPlus,
}

impl<V: Copy + Default> SetAssoc<V> {
    /// `sets` must be a power of two (>= 1). `ways == 0` builds an empty array
    /// (a disabled structure): lookups miss, inserts are dropped.
    /// Configuration is validated before this is called (a bad shape is a bug
    /// here, not a user error).
    pub fn new(sets: usize, ways: usize, policy: Replacement, seed: u64) -> Self {
        let order = match policy {
            Replacement::Random => Order::Unordered,
            _ if ways <= MAX_RANKED_WAYS => Order::Ranks { ranks: initial_ranks(sets, ways) },
            _ => Order::Stamps { stamps: vec![0; sets * ways], tick: 0 },
        };
        assert!(sets.is_power_of_two(), "set count {sets} is not a power of two");
        let slots = sets * ways;
        let words = ways.div_ceil(8);
        let used_lanes = ways - 8 * words.saturating_sub(1);
        SetAssoc {
            sets,
            ways,
            set_mask: sets as u64 - 1,
            words,
            last_lanes: LANES_HIGH >> (8 * (8 - used_lanes) % 64),
            policy,
            keys: vec![INVALID_KEY; slots],
            tags: vec![0; sets * words],
            values: vec![V::default(); slots],
            order,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
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

    #[inline(always)]
    fn set_tags(&self, set: usize) -> &[u64] {
        let first = set * self.words;
        &self.tags[first..first + self.words]
    }

    /// The way of `set` holding `key`.
    #[inline(always)]
    fn find_way(&self, set: usize, key: u64) -> Option<usize> {
        debug_assert_ne!(key, INVALID_KEY);
        let base = self.base(set);
        let tag_lanes = tag_of(key) * LANES_ONE;
        for (i, &word) in self.set_tags(set).iter().enumerate() {
            let mut candidates = zero_lanes(word ^ tag_lanes);
            while candidates != 0 {
                let way = 8 * i + candidates.trailing_zeros() as usize / 8;
                if self.keys[base + way] == key {
                    return Some(way);
                }
                candidates &= candidates - 1;
            }
        }
        None
    }

    /// The slot holding `key` in `set`, without touching replacement state.
    #[inline]
    pub fn find(&self, set: usize, key: u64) -> Option<Slot> {
        self.find_way(set, key).map(|way| self.base(set) + way)
    }

    /// Looks `key` up in `set`; a hit counts as a use (LRU).
    #[inline]
    pub fn lookup(&mut self, set: usize, key: u64) -> Option<&mut V> {
        let way = self.find_way(set, key)?;
        self.use_way(set, way);
        Some(&mut self.values[set * self.ways + way])
    }

    /// Looks `key` up without counting a use.
    #[inline]
    pub fn peek(&self, set: usize, key: u64) -> Option<&V> {
        self.find(set, key).map(|slot| &self.values[slot])
    }

    /// Marks a slot as just used (LRU only; FIFO and Random ignore uses).
    #[inline]
    pub fn touch(&mut self, slot: Slot) {
        self.use_way(slot / self.ways, slot % self.ways);
    }

    #[inline(always)]
    fn use_way(&mut self, set: usize, way: usize) {
        if self.policy == Replacement::Lru {
            self.make_youngest(set, way);
        }
    }

    /// Gives `way` the most recent rank / stamp of its set.
    #[inline(always)]
    fn make_youngest(&mut self, set: usize, way: usize) {
        match &mut self.order {
            Order::Unordered => {}
            Order::Ranks { ranks } => promote_rank(&mut ranks[set * self.words..][..self.words], way),
            Order::Stamps { stamps, tick } => {
                *tick += 1;
                stamps[set * self.ways + way] = *tick;
            }
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
    #[inline]
    pub fn insert(&mut self, set: usize, key: u64, value: V) -> Option<(u64, V)> {
        let (slot, evicted_key) = self.insert_slot(set, key)?;
        let evicted = (evicted_key != INVALID_KEY).then(|| (evicted_key, self.values[slot]));
        self.values[slot] = value;
        evicted
    }

    /// Like [`SetAssoc::insert`], for callers that keep per-slot data beside
    /// the array: makes `key` present in `set` and returns its slot and the
    /// key it displaced ([`INVALID_KEY`] if the way was empty or already held
    /// `key`); the caller then writes the slot's value. `None` when the array
    /// is disabled.
    #[inline]
    pub fn insert_slot(&mut self, set: usize, key: u64) -> Option<(Slot, u64)> {
        if self.ways == 0 {
            return None;
        }
        let base = self.base(set);
        if let Some(way) = self.find_way(set, key) {
            self.use_way(set, way);
            return Some((base + way, INVALID_KEY));
        }
        let way = match self.first_empty_way(set) {
            Some(way) => way,
            None => self.victim(set),
        };
        let slot = base + way;
        let evicted = self.keys[slot];
        self.keys[slot] = key;
        self.set_tag(set, way, tag_of(key));
        // A new entry is the most recently used (LRU) and the youngest (FIFO).
        self.make_youngest(set, way);
        Some((slot, evicted))
    }

    /// The first way of `set` whose tag says empty.
    #[inline(always)]
    fn first_empty_way(&self, set: usize) -> Option<usize> {
        let tags = self.set_tags(set);
        let last = tags.len() - 1;
        tags.iter().enumerate().find_map(|(i, &word)| {
            let lanes = if i == last { self.last_lanes } else { LANES_HIGH };
            let empty = zero_lanes(word) & lanes;
            (empty != 0).then(|| 8 * i + empty.trailing_zeros() as usize / 8)
        })
    }

    #[inline(always)]
    fn set_tag(&mut self, set: usize, way: usize, tag: u64) {
        let word = &mut self.tags[set * self.words + way / 8];
        let shift = 8 * (way % 8);
        *word = (*word & !(0xff << shift)) | (tag << shift);
    }

    /// The way of a full `set` that the policy evicts.
    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        let ways = self.ways;
        match &self.order {
            Order::Unordered => {
                // Multiply-shift maps a 64-bit draw onto [0, ways) without a
                // division (bias below 2^-32 for any realistic way count).
                ((self.rng.next_u64() as u128 * ways as u128) >> 64) as usize
            }
            Order::Ranks { ranks } => oldest_ranked_way(&ranks[set * self.words..][..self.words], ways),
            Order::Stamps { stamps, .. } => {
                // First smallest stamp (stamps of a full set are distinct);
                // selections, not branches, so it compiles to cmovs.
                let stamps = &stamps[set * ways..(set + 1) * ways];
                let (mut oldest, mut oldest_stamp) = (0, u64::MAX);
                for (w, &stamp) in stamps.iter().enumerate() {
                    let older = stamp < oldest_stamp;
                    oldest = if older { w } else { oldest };
                    oldest_stamp = if older { stamp } else { oldest_stamp };
                }
                oldest
            }
        }
    }

    /// Empties `key`'s slot in `set`, returning its value.
    pub fn invalidate(&mut self, set: usize, key: u64) -> Option<V> {
        let way = self.find_way(set, key)?;
        let slot = self.base(set) + way;
        self.keys[slot] = INVALID_KEY;
        self.set_tag(set, way, 0);
        Some(self.values[slot])
    }

    /// Empties every slot whose `(key, value)` satisfies `pred`; returns how
    /// many were emptied. Scans the whole array: for shootdowns, not the hot
    /// path.
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64, &V) -> bool) -> usize {
        self.invalidate_slots_if(|_, key, value| pred(key, value))
    }

    /// [`SetAssoc::invalidate_if`] with the slot passed too (for callers that
    /// keep per-slot data beside the array).
    pub fn invalidate_slots_if(&mut self, mut pred: impl FnMut(Slot, u64, &V) -> bool) -> usize {
        let mut dropped = 0;
        for slot in 0..self.keys.len() {
            let key = self.keys[slot];
            if key != INVALID_KEY && pred(slot, key, &self.values[slot]) {
                self.keys[slot] = INVALID_KEY;
                self.set_tag(slot / self.ways, slot % self.ways, 0);
                dropped += 1;
            }
        }
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

    /// Valid entries (a scan; for statistics and tests).
    pub fn len(&self) -> usize {
        self.keys.iter().filter(|&&k| k != INVALID_KEY).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every valid `(key, value)`, set by set.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        self.keys.iter().zip(&self.values).filter(|(k, _)| **k != INVALID_KEY).map(|(k, v)| (*k, v))
    }

    /// Asks the host to bring `set`'s tags into its cache ahead of a lookup
    /// (a hint: no effect on results, none at all off x86-64).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        if self.ways == 0 {
            return;
        }
        let tags = self.set_tags(set);
        prefetch_line(tags.as_ptr() as *const u8);
        // Sets of more than 64 ways span two host lines of tags.
        prefetch_line(tags[tags.len() - 1..].as_ptr() as *const u8);
    }
}

/// The tag of a key: the top byte of a multiplicative hash (so that keys of
/// one set, which differ in their high index bits, rarely share one),
/// moved off 0, which marks an empty slot.
#[inline(always)]
fn tag_of(key: u64) -> u64 {
    let tag = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56;
    tag + (tag == 0) as u64
}

/// The high bit of every zero byte of `v`, exactly (no false positives:
/// adding 0x7f to each byte's low seven bits never carries into the next).
#[inline(always)]
fn zero_lanes(v: u64) -> u64 {
    !(((v & !LANES_HIGH) + !LANES_HIGH) | v) & LANES_HIGH
}

/// Ranks `0..ways` in way order, unused lanes padded.
fn initial_ranks(sets: usize, ways: usize) -> Vec<u64> {
    let words = ways.div_ceil(8);
    let set_words: Vec<u64> = (0..words)
        .map(|i| {
            (0..8).fold(0, |word, lane| {
                let way = i * 8 + lane;
                word | (if way < ways { way as u64 } else { RANK_PAD }) << (8 * lane)
            })
        })
        .collect();
    set_words.repeat(sets)
}

/// Rank of `way` in a set's rank words.
#[inline(always)]
fn rank_of(ranks: &[u64], way: usize) -> u64 {
    (ranks[way / 8] >> (8 * (way % 8))) & 0xff
}

/// Makes `way` the youngest (rank 0), aging every way younger than it.
#[inline(always)]
fn promote_rank(ranks: &mut [u64], way: usize) {
    let r = rank_of(ranks, way);
    if r == 0 {
        return;
    }
    let r_lanes = r * LANES_ONE;
    for word in ranks.iter_mut() {
        // Per byte, (rank | 0x80) - r keeps its high bit iff rank >= r, and
        // never borrows from the next byte (ranks and r are below 0x80).
        let younger = !((*word | LANES_HIGH) - r_lanes) & LANES_HIGH;
        *word += younger >> 7;
    }
    ranks[way / 8] &= !(0xff << (8 * (way % 8)));
}

/// The way ranked `ways - 1` (the least recently used / oldest).
#[inline(always)]
fn oldest_ranked_way(ranks: &[u64], ways: usize) -> usize {
    let target = (ways as u64 - 1) * LANES_ONE;
    for (i, &word) in ranks.iter().enumerate() {
        let oldest = zero_lanes(word ^ target);
        if oldest != 0 {
            return 8 * i + oldest.trailing_zeros() as usize / 8;
        }
    }
    unreachable!("the ranks of a set are a permutation of 0..ways")
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

    #[test]
    fn ranks_by_hand_in_a_four_way_set() {
        // Ranks start as the way numbers: 0 1 2 3 (way 3 is the victim).
        let mut ranks = initial_ranks(1, 4);
        assert_eq!(ranks, vec![0x7f7f_7f7f_0302_0100]);
        // Touch way 2 (rank 2): ways ranked 0 and 1 age -> 1 2 0 3.
        promote_rank(&mut ranks, 2);
        assert_eq!(ranks[0] & 0xffff_ffff, 0x0300_0201);
        assert_eq!(oldest_ranked_way(&ranks, 4), 3);
        // Touch way 3 -> 2 3 1 0: way 1 is now the oldest.
        promote_rank(&mut ranks, 3);
        assert_eq!(ranks[0] & 0xffff_ffff, 0x0001_0302);
        assert_eq!(oldest_ranked_way(&ranks, 4), 1);
        // Touching the youngest changes nothing; padding lanes never move.
        promote_rank(&mut ranks, 3);
        assert_eq!(ranks, vec![0x7f7f_7f7f_0001_0302]);
    }

    #[test]
    fn ranks_span_several_words_in_a_twelve_way_set() {
        let mut ranks = initial_ranks(2, 12);
        assert_eq!(ranks.len(), 4);
        let set1 = &mut ranks[2..];
        assert_eq!(oldest_ranked_way(set1, 12), 11);
        // Touch way 11 (rank 11): every other way ages by one; way 10 is
        // now ranked 11.
        promote_rank(set1, 11);
        assert_eq!(oldest_ranked_way(set1, 12), 10);
        assert_eq!((0..12).map(|w| rank_of(set1, w)).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]);
        // Set 0 untouched.
        assert_eq!(oldest_ranked_way(&ranks[..2], 12), 11);
    }

    #[test]
    fn a_64_way_set_uses_ranks_and_a_65_way_set_stamps_with_the_same_lru() {
        // Fill 0..ways, use key 0, insert a new key: key 1 is the LRU victim
        // in both representations.
        for ways in [64, 65] {
            let mut sa: SetAssoc<u64> = SetAssoc::fully_associative(ways, Replacement::Lru, 0);
            assert_eq!(matches!(sa.order, Order::Ranks { .. }), ways == 64);
            for k in 0..ways as u64 {
                assert_eq!(sa.insert(0, k, k), None);
            }
            assert!(sa.lookup(0, 0).is_some());
            assert_eq!(sa.insert(0, 1000, 0), Some((1, 1)), "{ways} ways");
            assert_eq!(sa.insert(0, 1001, 0), Some((2, 2)), "{ways} ways");
        }
    }

    #[test]
    fn zero_lanes_is_exact() {
        // 0x0100 has a zero low byte next to a one: a plain borrow trick
        // would flag byte 1 too.
        assert_eq!(zero_lanes(0x0100), 0x8080_8080_8080_0080);
        assert_eq!(zero_lanes(u64::MAX), 0);
        assert_eq!(zero_lanes(0x80ff_0001_7f00_0101), 0x0000_8000_0080_0000);
    }

    #[test]
    fn keys_sharing_a_tag_are_told_apart_by_the_full_key() {
        // Find three keys with the tag of key 1 and put them, with key 1, in
        // one 4-way set (plus a fifth to force an eviction).
        let tag = tag_of(1);
        let same: Vec<u64> = (2..).filter(|&k| tag_of(k) == tag).take(4).collect();
        let mut sa: SetAssoc<u64> = SetAssoc::fully_associative(4, Replacement::Lru, 0);
        sa.insert(0, 1, 100);
        for &k in &same[..3] {
            sa.insert(0, k, k);
        }
        assert_eq!(sa.peek(0, 1), Some(&100));
        assert_eq!(sa.peek(0, same[2]), Some(&same[2]));
        assert_eq!(sa.peek(0, same[3]), None);
        assert_eq!(sa.invalidate(0, same[1]), Some(same[1]));
        assert_eq!(sa.peek(0, same[2]), Some(&same[2]));
        // The freed way is reused before anything is evicted.
        assert_eq!(sa.insert(0, same[3], 7), None);
        assert_eq!(sa.insert(0, 99, 9), Some((1, 100)));
    }

    #[test]
    fn padding_lanes_of_a_partial_tag_word_are_never_free_ways() {
        // 3 ways: lanes 3..7 of the tag word are padding (tag 0, like an
        // empty way) and must not be filled.
        let mut sa: SetAssoc<u64> = SetAssoc::fully_associative(3, Replacement::Fifo, 0);
        for k in 1..=3 {
            assert_eq!(sa.insert(0, k, k), None);
        }
        assert_eq!(sa.insert(0, 4, 4), Some((1, 1)));
        assert_eq!(sa.len(), 3);
    }

    /// Exact LRU / FIFO with one global clock, kept the obvious way: the
    /// reference the rank and stamp orders must reproduce.
    mod matches_a_reference_model {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone, Copy)]
        enum Op {
            Insert(u64),
            Lookup(u64),
            Invalidate(u64),
        }

        struct Reference {
            ways: usize,
            /// Per set: (key, value, time of last use or insertion).
            sets: Vec<Vec<(u64, u64, u64)>>,
            now: u64,
            lru: bool,
        }

        impl Reference {
            fn insert(&mut self, set: usize, key: u64, value: u64) -> Option<(u64, u64)> {
                self.now += 1;
                let (now, lru) = (self.now, self.lru);
                let s = &mut self.sets[set];
                if let Some(e) = s.iter_mut().find(|e| e.0 == key) {
                    e.1 = value;
                    if lru {
                        e.2 = now;
                    }
                    return None;
                }
                if s.len() < self.ways {
                    s.push((key, value, now));
                    return None;
                }
                let oldest = (0..s.len()).min_by_key(|&i| s[i].2).unwrap();
                let (k, v, _) = std::mem::replace(&mut s[oldest], (key, value, now));
                Some((k, v))
            }

            fn lookup(&mut self, set: usize, key: u64) -> Option<u64> {
                self.now += 1;
                let (now, lru) = (self.now, self.lru);
                let e = self.sets[set].iter_mut().find(|e| e.0 == key)?;
                if lru {
                    e.2 = now;
                }
                Some(e.1)
            }

            fn invalidate(&mut self, set: usize, key: u64) -> Option<u64> {
                let s = &mut self.sets[set];
                let i = s.iter().position(|e| e.0 == key)?;
                Some(s.swap_remove(i).1)
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]
            #[test]
            fn lru_and_fifo_evict_exactly_as_the_reference(
                ways in prop_oneof![1..=13usize, Just(32usize), Just(63), Just(64), Just(65), Just(70)],
                sets_log in 0..3u32,
                lru in any::<bool>(),
                ops in prop::collection::vec(
                    (0..3u8, 0..200u64).prop_map(|(kind, k)| match kind {
                        0 => Op::Insert(k),
                        1 => Op::Lookup(k),
                        _ => Op::Invalidate(k),
                    }),
                    1..600,
                ),
            ) {
                let sets = 1usize << sets_log;
                let policy = if lru { Replacement::Lru } else { Replacement::Fifo };
                let mut sa: SetAssoc<u64> = SetAssoc::new(sets, ways, policy, 0);
                let mut reference = Reference { ways, sets: vec![Vec::new(); sets], now: 0, lru };
                for (i, op) in ops.into_iter().enumerate() {
                    match op {
                        Op::Insert(k) => {
                            let set = sa.set_of(k);
                            prop_assert_eq!(sa.insert(set, k, i as u64), reference.insert(set, k, i as u64));
                        }
                        Op::Lookup(k) => {
                            let set = sa.set_of(k);
                            prop_assert_eq!(sa.lookup(set, k).copied(), reference.lookup(set, k));
                        }
                        Op::Invalidate(k) => {
                            let set = sa.set_of(k);
                            prop_assert_eq!(sa.invalidate(set, k), reference.invalidate(set, k));
                        }
                    }
                }
                prop_assert_eq!(sa.len(), reference.sets.iter().map(Vec::len).sum::<usize>());
            }
        }
    }
}
