//! A small fully associative cache with exact LRU replacement in O(1):
//! an open-addressed index from key to slot, and the slots on a doubly
//! linked recency list (head = most recently used, tail = the victim).
//!
//! Same behaviour as a fully associative `SetAssoc` with LRU (the victim is
//! always the least recently used entry), without scanning every entry on
//! each lookup and fill. The page-walk caches use it: a walk over a large
//! footprint misses the 32-entry PDE cache almost every time, and scanning
//! it twice per walk was a large part of the simulator's time.

/// An empty bucket.
const EMPTY: u16 = u16::MAX;
/// Fibonacci hashing constant (2^64 / golden ratio).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// One slot: its entry, its neighbours on the recency list and the bucket
/// that indexes it, together (one bounds check per slot touched).
#[derive(Debug, Clone, Copy, Default)]
struct Node<V> {
    key: u64,
    value: V,
    /// The neighbour used more recently (`prev`) and less recently (`next`).
    prev: u16,
    next: u16,
    /// The bucket holding this slot, so that evicting it needs no search.
    bucket: u32,
}

#[derive(Debug, Clone)]
pub struct LruMap<V> {
    /// The slots, then the recency list's sentinel (index `capacity`): the
    /// list is circular through it (its `next` is the most recently used
    /// slot, its `prev` the least), so linking and unlinking never branch.
    nodes: Vec<Node<V>>,
    len: usize,
    /// Slot of each key, by open addressing with linear probing.
    buckets: Vec<u16>,
    shift: u32,
}

impl<V: Copy + Default> LruMap<V> {
    /// The buckets of a map of `capacity` entries (see `new`).
    fn buckets_for(capacity: usize) -> usize {
        (capacity * 16).next_power_of_two().max(8)
    }

    /// The host bytes [`LruMap::new`] allocates (the host-memory budget's
    /// count).
    pub fn host_bytes(capacity: usize) -> u64 {
        ((capacity + 1) * std::mem::size_of::<Node<V>>() + Self::buckets_for(capacity) * 2) as u64
    }

    /// An empty map of `capacity` entries (below 65535).
    pub fn new(capacity: usize) -> Self {
        assert!(capacity < EMPTY as usize, "LruMap capacity {capacity} too large");
        // A sixteenth full at most (1 KiB of buckets for the 32-entry PDE
        // cache). A walk over a large footprint misses, and evicts, on
        // nearly every fill, and each probe that meets an occupied bucket
        // is a branch the host cannot predict: at a quarter full, gups
        // over 16 GiB ran 8% slower.
        let nb = Self::buckets_for(capacity);
        let mut map = LruMap {
            nodes: vec![Node::default(); capacity + 1],
            len: 0,
            buckets: vec![EMPTY; nb],
            shift: 64 - nb.trailing_zeros(),
        };
        map.clear();
        map
    }

    pub fn capacity(&self) -> usize {
        self.nodes.len() - 1
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The recency list's sentinel.
    #[inline]
    fn sentinel(&self) -> usize {
        self.nodes.len() - 1
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(GOLDEN) >> self.shift) as usize
    }

    /// The bucket holding `key`, if present.
    #[inline]
    fn find_bucket(&self, key: u64) -> Option<usize> {
        let mask = self.buckets.len() - 1;
        let mut b = self.home(key);
        loop {
            let slot = self.buckets[b];
            if slot == EMPTY {
                return None;
            }
            if self.nodes[slot as usize].key == key {
                return Some(b);
            }
            b = (b + 1) & mask;
        }
    }

    /// Looks `key` up; a hit becomes the most recently used.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<V> {
        let slot = self.buckets[self.find_bucket(key)?] as usize;
        self.touch(slot);
        Some(self.nodes[slot].value)
    }

    /// Whether `key` is present (no change to recency).
    pub fn peek(&self, key: u64) -> Option<V> {
        self.find_bucket(key).map(|b| self.nodes[self.buckets[b] as usize].value)
    }

    /// Inserts or updates `key`; it becomes the most recently used. Returns
    /// the evicted entry when a full map had to make room.
    pub fn insert(&mut self, key: u64, value: V) -> Option<(u64, V)> {
        if let Some(b) = self.find_bucket(key) {
            let slot = self.buckets[b] as usize;
            self.nodes[slot].value = value;
            self.touch(slot);
            return None;
        }
        self.insert_absent(key, value)
    }

    /// [`insert`](Self::insert) of a key the caller knows is absent (a
    /// lookup just missed it): no search for it. (Always inlined: it is
    /// the page walk's page-walk-cache fill, and LLVM's choice to inline it
    /// there changed with unrelated code elsewhere.)
    #[inline(always)]
    pub fn insert_absent(&mut self, key: u64, value: V) -> Option<(u64, V)> {
        debug_assert!(self.find_bucket(key).is_none(), "key {key:#x} is present");
        if self.capacity() == 0 {
            return None;
        }
        let (slot, evicted) = if self.len < self.capacity() {
            self.len += 1;
            (self.len - 1, None)
        } else {
            let victim = self.nodes[self.sentinel()].prev as usize;
            let old = &self.nodes[victim];
            let evicted = (old.key, old.value);
            self.unindex(victim);
            self.unlink(victim);
            (victim, Some(evicted))
        };
        self.nodes[slot].key = key;
        self.nodes[slot].value = value;
        self.index(key, slot);
        self.push_front(slot);
        evicted
    }

    /// Removes every entry whose key and value satisfy `pred`; returns how
    /// many. Rebuilds the map keeping the recency order (shootdowns are
    /// rare; lookups and fills are not).
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64, &V) -> bool) -> usize {
        let kept: Vec<(u64, V)> = self.iter().filter(|(k, v)| !pred(*k, v)).collect();
        let dropped = self.len - kept.len();
        if dropped > 0 {
            self.clear();
            // Oldest first, so that the most recent ends at the head.
            for (k, v) in kept.into_iter().rev() {
                self.insert(k, v);
            }
        }
        dropped
    }

    /// Empties the map; returns how many entries it held.
    pub fn clear(&mut self) -> usize {
        let n = self.len;
        self.buckets.fill(EMPTY);
        let s = self.sentinel();
        self.nodes[s].prev = s as u16;
        self.nodes[s].next = s as u16;
        self.len = 0;
        n
    }

    /// (key, value) pairs from most to least recently used.
    pub fn iter(&self) -> impl Iterator<Item = (u64, V)> + '_ {
        let sentinel = self.sentinel();
        let mut s = self.nodes[sentinel].next as usize;
        std::iter::from_fn(move || {
            (s != sentinel).then(|| {
                let node = &self.nodes[s];
                s = node.next as usize;
                (node.key, node.value)
            })
        })
    }

    #[inline]
    fn touch(&mut self, slot: usize) {
        if self.nodes[self.sentinel()].next as usize != slot {
            self.unlink(slot);
            self.push_front(slot);
        }
    }

    #[inline(always)]
    fn unlink(&mut self, slot: usize) {
        let (p, n) = (self.nodes[slot].prev, self.nodes[slot].next);
        self.nodes[p as usize].next = n;
        self.nodes[n as usize].prev = p;
    }

    #[inline(always)]
    fn push_front(&mut self, slot: usize) {
        let sentinel = self.sentinel();
        let first = self.nodes[sentinel].next;
        self.nodes[slot].prev = sentinel as u16;
        self.nodes[slot].next = first;
        self.nodes[first as usize].prev = slot as u16;
        self.nodes[sentinel].next = slot as u16;
    }

    #[inline(always)]
    fn index(&mut self, key: u64, slot: usize) {
        let mask = self.buckets.len() - 1;
        let mut b = self.home(key);
        while self.buckets[b] != EMPTY {
            b = (b + 1) & mask;
        }
        self.buckets[b] = slot as u16;
        self.nodes[slot].bucket = b as u32;
    }

    /// Removes the key of `slot` from the index, shifting later entries of
    /// its probe run back so that no lookup stops early at the hole.
    #[inline(always)]
    fn unindex(&mut self, slot: usize) {
        let mask = self.buckets.len() - 1;
        let mut hole = self.nodes[slot].bucket as usize;
        debug_assert_eq!(self.buckets[hole] as usize, slot);
        let mut b = hole;
        loop {
            b = (b + 1) & mask;
            let slot = self.buckets[b];
            if slot == EMPTY {
                break;
            }
            let home = self.home(self.nodes[slot as usize].key);
            // Move the entry into the hole unless its home lies cyclically
            // in (hole, b]: then it is already reachable from its home.
            let reachable = if hole <= b { hole < home && home <= b } else { hole < home || home <= b };
            if !reachable {
                self.buckets[hole] = slot;
                self.nodes[slot as usize].bucket = hole as u32;
                hole = b;
            }
        }
        self.buckets[hole] = EMPTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_least_recently_used_entry_is_evicted() {
        let mut m: LruMap<u32> = LruMap::new(2);
        assert_eq!(m.insert(10, 1), None);
        assert_eq!(m.insert(20, 2), None);
        assert_eq!(m.lookup(10), Some(1)); // 20 is now the LRU
        assert_eq!(m.insert(30, 3), Some((20, 2)));
        assert_eq!(m.lookup(20), None);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(30, 3), (10, 1)]);
    }

    #[test]
    fn invalidation_keeps_the_recency_order() {
        let mut m: LruMap<u32> = LruMap::new(4);
        for k in 1..=4 {
            m.insert(k, k as u32);
        }
        assert_eq!(m.invalidate_if(|k, _| k % 2 == 0), 2);
        assert_eq!(m.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![3, 1]);
        m.insert(5, 5);
        m.insert(6, 6);
        assert_eq!(m.insert(7, 7), Some((1, 1)));
    }

    /// A plainly correct model: a vector in recency order.
    #[derive(Default)]
    struct Model {
        cap: usize,
        entries: Vec<(u64, u32)>,
    }

    impl Model {
        fn lookup(&mut self, k: u64) -> Option<u32> {
            let i = self.entries.iter().position(|e| e.0 == k)?;
            let e = self.entries.remove(i);
            self.entries.insert(0, e);
            Some(e.1)
        }
        fn insert(&mut self, k: u64, v: u32) -> Option<(u64, u32)> {
            if self.lookup(k).is_some() {
                self.entries[0].1 = v;
                return None;
            }
            self.entries.insert(0, (k, v));
            (self.entries.len() > self.cap).then(|| self.entries.pop().expect("over capacity"))
        }
    }

    proptest! {
        #[test]
        fn agrees_with_a_model(cap in 1usize..40, ops in prop::collection::vec((0u8..4, 0u64..60, any::<u32>()), 0..400)) {
            let mut m: LruMap<u32> = LruMap::new(cap);
            let mut model = Model { cap, ..Default::default() };
            for (op, k, v) in ops {
                // Keys spread over the whole range, so hashes collide too.
                let key = k.wrapping_mul(0x1000_0000_0001);
                match op {
                    0 => prop_assert_eq!(m.lookup(key), model.lookup(key)),
                    1 => prop_assert_eq!(m.insert(key, v), model.insert(key, v)),
                    2 if m.peek(key).is_none() => prop_assert_eq!(m.insert_absent(key, v), model.insert(key, v)),
                    2 => prop_assert_eq!(m.insert(key, v), model.insert(key, v)),
                    _ => {
                        let n = m.invalidate_if(|kk, _| kk % 3 == key % 3);
                        let before = model.entries.len();
                        model.entries.retain(|e| e.0 % 3 != key % 3);
                        prop_assert_eq!(n, before - model.entries.len());
                    }
                }
                prop_assert_eq!(m.iter().collect::<Vec<_>>(), model.entries.clone());
            }
        }
    }
}
