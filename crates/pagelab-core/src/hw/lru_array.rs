//! A small LRU cache of one of two shapes: fully associative, as an O(1)
//! exact-LRU map ([`LruMap`]), or set-associative ([`SetAssoc`] with LRU).
//! The page-walk caches and the nested TLB are fully associative by
//! default and set-associative when their `ways` say so; both shapes give
//! the same hits under exact LRU (a test below), the map without scanning
//! every entry on each lookup and fill.

use crate::hw::lru_map::LruMap;
use crate::hw::set_assoc::{Replacement, SetAssoc};

#[derive(Debug, Clone)]
pub enum LruArray<V: Copy + Default> {
    Full(LruMap<V>),
    Sets(SetAssoc<V>),
}

impl<V: Copy + Default> LruArray<V> {
    /// `entries` of `ways` ways: fully associative when `ways` is 0 or at
    /// least `entries` (one set; `entries / ways` would be 0 sets), else
    /// `entries / ways` sets (a power of two: the caller validated it).
    /// Fully associative caches are LRU maps, even the smallest: as scanned
    /// sets, the 2-entry PML4E and 4-entry PDPTE caches took fewer
    /// instructions but ran slower (the walk's branch on each level's
    /// shape of cache alternated, a branch the host mispredicted).
    pub fn new(entries: u32, ways: u32, seed: u64) -> Self {
        match (entries, ways) {
            (n, w) if w == 0 || n <= w => LruArray::Full(LruMap::new(n as usize)),
            (n, w) => LruArray::Sets(SetAssoc::new((n / w) as usize, w as usize, Replacement::Lru, seed)),
        }
    }

    /// The host bytes [`LruArray::new`] allocates for this shape.
    pub fn host_bytes(entries: u32, ways: u32) -> u64 {
        match (entries, ways) {
            (n, w) if w == 0 || n <= w => LruMap::<V>::host_bytes(n as usize),
            (n, _) => SetAssoc::<V>::host_bytes(n as u64),
        }
    }

    /// `key`'s value; a hit becomes the most recently used. `index` picks
    /// the set of a set-associative array.
    // Always inlined, like the page-walk cache's lookup around it: out of
    // line, its probe's empty-bucket test is one branch for every level's
    // hits and misses.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64, index: u64) -> Option<V> {
        match self {
            LruArray::Full(m) => m.lookup(key),
            LruArray::Sets(sa) => sa.lookup(sa.set_of(index), key).copied(),
        }
    }

    /// Whether `key` is present (no change to recency).
    pub fn peek(&self, key: u64, index: u64) -> Option<V> {
        match self {
            LruArray::Full(m) => m.peek(key),
            LruArray::Sets(sa) => sa.peek(sa.set_of(index), key).copied(),
        }
    }

    /// Inserts or updates `key`; returns the key it evicted, if any.
    #[inline]
    pub fn insert(&mut self, key: u64, index: u64, value: V) -> Option<u64> {
        match self {
            LruArray::Full(m) => m.insert(key, value).map(|(k, _)| k),
            LruArray::Sets(sa) => sa.insert(sa.set_of(index), key, value).map(|(k, _)| k),
        }
    }

    /// [`insert`](Self::insert) of a key a lookup just missed: only the
    /// victim is searched for. (Always inlined: the page-walk cache's fill
    /// in the walk, which LLVM had left out of line.)
    #[inline(always)]
    pub fn insert_absent(&mut self, key: u64, index: u64, value: V) -> Option<u64> {
        match self {
            LruArray::Full(m) => m.insert_absent(key, value).map(|(k, _)| k),
            LruArray::Sets(sa) => sa.insert_absent(sa.set_of(index), key, value).and_then(|p| p.evicted),
        }
    }

    /// Drops every entry whose key and value satisfy `pred`; returns how
    /// many (shootdowns: rare).
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64, V) -> bool) -> usize {
        match self {
            LruArray::Full(m) => m.invalidate_if(|k, v| pred(k, *v)),
            LruArray::Sets(sa) => sa.invalidate_if(|k, v| pred(k, *v)),
        }
    }

    /// The keys held, in no particular order.
    pub fn keys(&self) -> Vec<u64> {
        match self {
            LruArray::Full(m) => m.iter().map(|(k, _)| k).collect(),
            LruArray::Sets(sa) => sa.iter().map(|(k, _)| k).collect(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            LruArray::Full(m) => m.len(),
            LruArray::Sets(sa) => sa.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it has no entries at all (configured with 0).
    pub fn is_disabled(&self) -> bool {
        match self {
            LruArray::Full(m) => m.capacity() == 0,
            LruArray::Sets(sa) => sa.is_disabled(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lru_map_agrees_with_a_scanned_set() {
        // The LRU map and a fully associative SetAssoc (exact LRU by
        // stamps) give the same hits, values, evictions and occupancy
        // under random lookups, fills (of keys just missed, and of any
        // key) and invalidations, with few enough keys that evictions are
        // frequent.
        use rand_xoshiro::rand_core::{Rng, SeedableRng};
        for n in 1..=8 {
            let mut map = LruArray::Full(LruMap::new(n));
            let mut scan = LruArray::Sets(SetAssoc::fully_associative(n, Replacement::Lru, 0));
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(n as u64);
            for step in 0..20_000u64 {
                let key = rng.next_u64() % (n as u64 + 3);
                match rng.next_u64() % 8 {
                    0..=3 => {
                        let (a, b) = (map.lookup(key, key), scan.lookup(key, key));
                        assert_eq!(a, b, "lookup of {key} at step {step}, {n} entries");
                        if a.is_none() && rng.next_u64() % 2 == 0 {
                            let (ea, eb) = (map.insert_absent(key, key, step), scan.insert_absent(key, key, step));
                            assert_eq!(ea, eb, "eviction at step {step}");
                        }
                    }
                    4..=6 => {
                        assert_eq!(map.insert(key, key, step), scan.insert(key, key, step), "eviction at step {step}");
                    }
                    _ => {
                        let gone = |k: u64, _| k == key || k == key + 1;
                        assert_eq!(map.invalidate_if(gone), scan.invalidate_if(gone), "step {step}");
                    }
                }
                assert_eq!(map.len(), scan.len(), "occupancy at step {step}, {n} entries");
            }
        }
    }

    #[test]
    fn ways_pick_the_shape() {
        assert!(matches!(LruArray::<u64>::new(16, 0, 1), LruArray::Full(_)));
        assert!(matches!(LruArray::<u64>::new(2, 4, 1), LruArray::Full(_)), "fewer entries than ways: one set");
        assert!(matches!(LruArray::<u64>::new(32, 4, 1), LruArray::Sets(_)));
        assert!(LruArray::<u64>::new(0, 0, 1).is_disabled());
    }
}
