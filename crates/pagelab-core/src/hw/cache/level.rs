//! One cache level: sets of ways holding physical line numbers.
//!
//! Layout: `tags[set * ways + way]` holds the line number cached in that way
//! (`INVALID` when empty); `meta[set * stride ..]` holds the set's dirty
//! bits (a little-endian `u64`, bit = way), then its replacement state
//! (8 bytes of packed LRU order, or a byte per way), then, for sets of at
//! most 16 ways, one partial tag byte per way (8 or 16 bytes). A 16-way LRU
//! set is thus 128 bytes of tags plus 32 of metadata, which
//! [`Cache::prefetch_set`] can bring into the host's caches ahead of time.
//!
//! Partial tags: a lookup compares one hash byte of the line against the
//! set's partial tags, 8 at a time in a `u64` (SWAR), and checks the full tag
//! only of the ways whose byte matches, usually one or none. This is a pure
//! speed-up: the full tags stay authoritative, so a false match costs a
//! compare and never a wrong answer, and the partial byte of an empty or
//! invalidated way may hold anything.
//!
//! Write-allocate, write-back: a store that misses fills the line and marks
//! it dirty; the caller learns of a dirty victim through [`Evicted`] and
//! writes it to the next level.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::config::Geometry;
use super::replacement::{full_mask, packed, ReplacementKind, SetPolicy};
use super::slice::{intel_slice, modulo_slice, SliceHash};
use super::standin::StandIn;

/// Tag of an empty way. Line numbers stay below 2^61 (addresses are 64 bits
/// and lines at least 8 bytes), so no line equals it.
const INVALID: u64 = u64::MAX;
/// Bytes of dirty bits at the start of each set's metadata.
const DIRTY_BYTES: usize = 8;
/// Most ways that keep partial tags (two `u64` words of them).
const PTAG_MAX_WAYS: usize = 16;
const BYTES_LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const BYTES_ONE: u64 = 0x0101_0101_0101_0101;

/// A set's metadata for `ways` ways: the partial tags' offset, their words
/// and the bytes per set (see the module's text).
fn meta_layout(policy: SetPolicy, ways: usize) -> (usize, usize, usize) {
    let ptag_offset = DIRTY_BYTES + policy.state_bytes(ways);
    let ptag_words = if ways <= PTAG_MAX_WAYS { ways.div_ceil(8) } else { 0 };
    (ptag_offset, ptag_words, (ptag_offset + 8 * ptag_words).next_multiple_of(8))
}

/// A line pushed out of a cache by a fill or an invalidation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Physical line number (address >> line shift).
    pub line: u64,
    /// Modified since filled: must be written to the next level.
    pub dirty: bool,
}

/// Where a line's set lives: the index of its first tag and of its
/// metadata. Computed once per access by [`Cache::locate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetRef {
    tags: usize,
    meta: usize,
}

/// One cache: one L1D, one L2, or the (sliced) LLC.
#[derive(Debug, Clone)]
pub struct Cache {
    tags: Box<[u64]>,
    meta: Box<[u8]>,
    ways: usize,
    /// Bytes of metadata per set (dirty bits + policy state).
    stride: usize,
    /// Offset of the partial tags in a set's metadata.
    ptag_offset: usize,
    /// Words of partial tags per set: 1 (<= 8 ways), 2 (<= 16), or 0 (more
    /// ways: the lookup compares full tags).
    ptag_words: usize,
    /// Candidate bits that stand for real ways (see [`Cache::find_way`]).
    ptag_valid: u64,
    /// `sets_per_slice - 1`.
    set_mask: u64,
    /// Line bits below the set index (the modulo hash's slice bits).
    set_shift: u32,
    sets_per_slice: usize,
    slices: u32,
    slice_hash: SliceHash,
    /// The stand-in hash's tables, built only for it.
    stand_in: Option<StandIn>,
    line_shift: u32,
    full_mask: u64,
    kind: ReplacementKind,
    policy: SetPolicy,
    /// The way count when it is 4, 8 or 16 under LRU (the presets' shapes),
    /// for which [`Cache::lookup_in`] takes [`Cache::lookup_lru`]; else 0.
    lru_ways: usize,
    rng: Xoshiro256PlusPlus,
}

impl Cache {
    /// An empty cache of shape `geometry` (see [`Geometry::is_valid`]; shapes
    /// from a validated configuration always are). `seed` drives the random
    /// policy only.
    pub fn new(geometry: Geometry, kind: ReplacementKind, seed: u64) -> Cache {
        assert!(geometry.is_valid(), "invalid cache geometry {geometry:?}");
        let ways = geometry.ways as usize;
        let nr_sets = geometry.nr_sets();
        let policy = SetPolicy::new(kind, ways);
        let (ptag_offset, ptag_words, stride) = meta_layout(policy, ways);
        let mut cache = Cache {
            ptag_offset,
            ptag_words,
            ptag_valid: ptag_valid_bits(ways),
            tags: crate::hostmem::filled_vec(nr_sets * ways, INVALID).into_boxed_slice(),
            meta: crate::hostmem::filled_vec(nr_sets * stride, 0u8).into_boxed_slice(),
            ways,
            stride,
            set_mask: u64::from(geometry.sets_per_slice - 1),
            set_shift: match geometry.slice_hash {
                SliceHash::Modulo => geometry.slices.trailing_zeros(),
                SliceHash::Intel | SliceHash::StandIn => 0,
            },
            sets_per_slice: geometry.sets_per_slice as usize,
            slices: geometry.slices,
            slice_hash: geometry.slice_hash,
            stand_in: (geometry.slice_hash == SliceHash::StandIn).then(|| {
                StandIn::new(geometry.slices, geometry.sets_per_slice, geometry.line_shift(), geometry.slice_seed)
            }),
            line_shift: geometry.line_shift(),
            full_mask: full_mask(ways),
            kind,
            policy,
            lru_ways: if policy == SetPolicy::PackedLru && matches!(ways, 4 | 8 | 16) { ways } else { 0 },
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        };
        cache.clear();
        cache
    }

    /// The host bytes [`Cache::new`] allocates for `geometry` (tags and
    /// metadata): the host-memory budget's count. Computed, not allocated.
    pub fn host_bytes(geometry: Geometry, kind: ReplacementKind) -> u64 {
        let ways = geometry.ways as usize;
        let (_, _, stride) = meta_layout(SetPolicy::new(kind, ways), ways);
        let sets = geometry.nr_sets() as u64;
        sets.saturating_mul(ways as u64 * 8 + stride as u64)
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    pub fn nr_sets(&self) -> usize {
        self.tags.len() / self.ways
    }

    pub fn slices(&self) -> u32 {
        self.slices
    }

    pub fn policy(&self) -> ReplacementKind {
        self.kind
    }

    /// The mask of every way: the fill mask of an unpartitioned cache.
    #[inline]
    pub fn full_mask(&self) -> u64 {
        self.full_mask
    }

    /// The slice holding `line` (0 when unsliced).
    #[inline(always)]
    pub fn slice_of(&self, line: u64) -> u32 {
        if self.slices == 1 {
            return 0;
        }
        match self.slice_hash {
            SliceHash::Modulo => modulo_slice(line, self.slices),
            SliceHash::Intel => intel_slice(line << self.line_shift, self.slices),
            SliceHash::StandIn => self.stand_in_slice(line),
        }
    }

    /// The stand-in hash's slice of `line`. Out of line: inlined, its table
    /// lookups grew every `locate` enough that LLVM stopped inlining cache
    /// probes into the prefetchers' path (+1.35% instructions on
    /// gups-4k-caches, callgrind, with the stand-in unused).
    #[inline(never)]
    fn stand_in_slice(&self, line: u64) -> u32 {
        self.stand_in.as_ref().map_or(0, |hash| hash.slice(line))
    }

    /// The global set index (slice * sets_per_slice + set in slice) of `line`.
    #[inline(always)]
    pub fn set_of(&self, line: u64) -> usize {
        let in_slice = ((line >> self.set_shift) & self.set_mask) as usize;
        if self.slices == 1 {
            return in_slice;
        }
        self.slice_of(line) as usize * self.sets_per_slice + in_slice
    }

    /// The set of `line`, for the `*_in` methods.
    #[inline(always)]
    pub fn locate(&self, line: u64) -> SetRef {
        debug_assert!(line < 1 << 61, "line {line:#x}");
        let set = self.set_of(line);
        SetRef { tags: set * self.ways, meta: set * self.stride }
    }

    /// [`locate`](Self::locate) and [`slice_of`](Self::slice_of) at once,
    /// hashing the line once.
    #[inline(always)]
    pub fn locate_in_slice(&self, line: u64) -> (SetRef, u32) {
        debug_assert!(line < 1 << 61, "line {line:#x}");
        let in_slice = ((line >> self.set_shift) & self.set_mask) as usize;
        let slice = self.slice_of(line);
        let set = slice as usize * self.sets_per_slice + in_slice;
        (SetRef { tags: set * self.ways, meta: set * self.stride }, slice)
    }

    /// Looks `line` up and, on a miss, fills it choosing the victim among the
    /// ways of `fill_mask`. A write marks the line dirty. Returns whether it
    /// hit and the valid line the fill pushed out.
    #[inline]
    pub fn access(&mut self, line: u64, is_write: bool, fill_mask: u64) -> (bool, Option<Evicted>) {
        let set = self.locate(line);
        if self.lookup_in(set, line, is_write) {
            return (true, None);
        }
        (false, self.fill_in(set, line, is_write, fill_mask))
    }

    /// Looks `line` up; a hit updates the replacement state and, for a
    /// write, marks the line dirty. A miss changes nothing.
    #[inline]
    pub fn lookup(&mut self, line: u64, is_write: bool) -> bool {
        self.lookup_in(self.locate(line), line, is_write)
    }

    /// Inserts `line`, known to be absent, into a way of `fill_mask`
    /// (dirty for a write). Returns the valid line it replaced.
    #[inline]
    pub fn fill(&mut self, line: u64, is_write: bool, fill_mask: u64) -> Option<Evicted> {
        self.fill_in(self.locate(line), line, is_write, fill_mask)
    }

    /// [`lookup`](Self::lookup) in the set `set` = `locate(line)`.
    #[inline(always)]
    pub fn lookup_in(&mut self, set: SetRef, line: u64, is_write: bool) -> bool {
        debug_assert_eq!(set, self.locate(line));
        match self.lru_ways {
            4 => return self.lookup_lru::<4, 24>(set, line, is_write),
            8 => return self.lookup_lru::<8, 24>(set, line, is_write),
            16 => return self.lookup_lru::<16, 32>(set, line, is_write),
            _ => {}
        }
        let Some(way) = self.find_way(set, line) else {
            return false;
        };
        let meta = &mut self.meta[set.meta..set.meta + self.stride];
        let (dirty, state) = meta.split_at_mut(DIRTY_BYTES);
        if is_write {
            set_dirty(dirty, way, true);
        }
        self.policy.on_hit(state, way);
        true
    }

    /// The way of set `set` holding `line`. With partial tags: the bytes of
    /// the set's partial-tag words equal to `line`'s byte become candidate
    /// bits (bit 8k for way k of the first word, 8k + 1 for way 8 + k of the
    /// second), and only candidates get their full tag compared. Without:
    /// every full tag is compared.
    #[inline(always)]
    fn find_way(&self, set: SetRef, line: u64) -> Option<usize> {
        let tags = &self.tags[set.tags..set.tags + self.ways];
        if self.ptag_words == 0 {
            return tags.iter().position(|&t| t == line);
        }
        let words = &self.meta[set.meta + self.ptag_offset..set.meta + self.ptag_offset + 8 * self.ptag_words];
        let wanted = u64::from(ptag(line)) * BYTES_ONE;
        let mut candidates = zero_bytes(load_word(words, 0) ^ wanted) >> 7;
        if self.ptag_words == 2 {
            candidates |= zero_bytes(load_word(words, 1) ^ wanted) >> 6;
        }
        candidates &= self.ptag_valid;
        while candidates != 0 {
            let bit = candidates.trailing_zeros() as usize;
            let way = bit >> 3 | (bit & 1) << 3;
            if tags[way] == line {
                return Some(way);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// [`lookup_in`](Self::lookup_in) for an LRU set of `W` ways whose
    /// metadata is `S` bytes (dirty bits, packed order, partial tags): the
    /// same steps as the general path, on fixed-size views of the set, so
    /// that the compiler checks each set's bounds once and unrolls the rest.
    #[inline(always)]
    fn lookup_lru<const W: usize, const S: usize>(&mut self, set: SetRef, line: u64, is_write: bool) -> bool {
        debug_assert_eq!((self.ways, self.stride, self.ptag_offset, self.ptag_words), (W, S, 16, W.div_ceil(8)));
        let tags: &[u64; W] = self.tags[set.tags..set.tags + W].try_into().expect("W tags");
        let meta: &mut [u8; S] = (&mut self.meta[set.meta..set.meta + S]).try_into().expect("S bytes of metadata");
        let word = |meta: &[u8; S], i: usize| u64::from_le_bytes(meta[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let wanted = u64::from(ptag(line)) * BYTES_ONE;
        let mut candidates = zero_bytes(word(meta, 2) ^ wanted) >> 7;
        if W > 8 {
            candidates |= zero_bytes(word(meta, 3) ^ wanted) >> 6;
        }
        candidates &= ptag_valid_bits_const::<W>();
        while candidates != 0 {
            let bit = candidates.trailing_zeros() as usize;
            let way = bit >> 3 | (bit & 1) << 3;
            if tags[way] == line {
                if is_write {
                    let dirty = word(meta, 0) | 1 << way;
                    meta[..8].copy_from_slice(&dirty.to_le_bytes());
                }
                let order = packed::to_front(word(meta, 1), way);
                meta[8..16].copy_from_slice(&order.to_le_bytes());
                return true;
            }
            candidates &= candidates - 1;
        }
        false
    }

    /// Records `line`'s partial tag in `way` (after a fill).
    #[inline(always)]
    fn set_ptag(&mut self, set: SetRef, way: usize, line: u64) {
        if self.ptag_words != 0 {
            self.meta[set.meta + self.ptag_offset + way] = ptag(line);
        }
    }

    /// [`fill`](Self::fill) in the set `set` = `locate(line)`.
    #[inline(always)]
    pub fn fill_in(&mut self, set: SetRef, line: u64, is_write: bool, fill_mask: u64) -> Option<Evicted> {
        debug_assert_eq!(set, self.locate(line));
        debug_assert!(fill_mask != 0 && fill_mask & !self.full_mask == 0, "fill mask {fill_mask:#x}");
        debug_assert!(!self.probe(line), "fill of present line {line:#x}");
        match self.lru_ways {
            4 => return self.fill_lru::<4, 24>(set, line, is_write, fill_mask),
            8 => return self.fill_lru::<8, 24>(set, line, is_write, fill_mask),
            16 => return self.fill_lru::<16, 32>(set, line, is_write, fill_mask),
            _ => {}
        }
        let tags = &mut self.tags[set.tags..set.tags + self.ways];
        let meta = &mut self.meta[set.meta..set.meta + self.stride];
        let (dirty, state) = meta.split_at_mut(DIRTY_BYTES);
        let way = self.policy.replace(state, self.ways, fill_mask, || free_way(tags, fill_mask), &mut self.rng);
        debug_assert!(fill_mask >> way & 1 == 1);
        let old = tags[way];
        let was_dirty = set_dirty(dirty, way, is_write);
        tags[way] = line;
        self.set_ptag(set, way, line);
        (old != INVALID).then_some(Evicted { line: old, dirty: was_dirty })
    }

    /// [`fill_in`](Self::fill_in) for an LRU set of `W` ways and `S` bytes
    /// of metadata (see [`lookup_lru`](Self::lookup_lru)): the victim is the
    /// oldest way of `fill_mask` (an invalid one when there is one: they sit
    /// at the oldest positions), which becomes the most recent.
    #[inline(always)]
    fn fill_lru<const W: usize, const S: usize>(
        &mut self,
        set: SetRef,
        line: u64,
        is_write: bool,
        fill_mask: u64,
    ) -> Option<Evicted> {
        debug_assert_eq!((self.ways, self.stride, self.ptag_offset), (W, S, 16));
        let tags: &mut [u64; W] = (&mut self.tags[set.tags..set.tags + W]).try_into().expect("W tags");
        let meta: &mut [u8; S] = (&mut self.meta[set.meta..set.meta + S]).try_into().expect("S bytes of metadata");
        let word = |meta: &[u8; S], i: usize| u64::from_le_bytes(meta[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let order = word(meta, 1);
        let way =
            if fill_mask == full_mask(W) { packed::oldest(order, W) } else { packed::oldest_in(order, W, fill_mask) };
        meta[8..16].copy_from_slice(&packed::to_front(order, way).to_le_bytes());
        let dirty = word(meta, 0);
        let was_dirty = dirty >> way & 1 == 1;
        let dirty = dirty & !(1 << way) | u64::from(is_write) << way;
        meta[..8].copy_from_slice(&dirty.to_le_bytes());
        meta[16 + way] = ptag(line);
        let old = std::mem::replace(&mut tags[way], line);
        (old != INVALID).then_some(Evicted { line: old, dirty: was_dirty })
    }

    /// Whether `line` is present; changes nothing.
    #[inline]
    pub fn probe(&self, line: u64) -> bool {
        self.way_of(line).is_some()
    }

    /// The way holding `line`, if present.
    pub fn way_of(&self, line: u64) -> Option<usize> {
        self.find_way(self.locate(line), line)
    }

    /// Whether `line` is present and dirty.
    pub fn is_dirty(&self, line: u64) -> bool {
        let set = self.locate(line);
        self.way_of(line).is_some_and(|way| dirty_bits(&self.meta[set.meta..]) >> way & 1 == 1)
    }

    /// Removes `line` if present (back-invalidation); the way becomes the
    /// next victim. Returns the removed line, dirty if it was modified.
    pub fn invalidate(&mut self, line: u64) -> Option<Evicted> {
        let way = self.way_of(line)?;
        let set = self.locate(line);
        self.tags[set.tags + way] = INVALID;
        let (dirty, state) = self.meta[set.meta..set.meta + self.stride].split_at_mut(DIRTY_BYTES);
        let was_dirty = set_dirty(dirty, way, false);
        self.policy.on_invalidate(state, way, self.ways);
        Some(Evicted { line, dirty: was_dirty })
    }

    /// Empties the cache (contents and replacement state, not the random
    /// generator's progress).
    pub fn clear(&mut self) {
        self.tags.fill(INVALID);
        let (policy, ways) = (self.policy, self.ways);
        for meta in self.meta.chunks_exact_mut(self.stride) {
            meta.fill(0);
            policy.init(&mut meta[DIRTY_BYTES..], ways);
        }
    }

    /// Number of valid lines (a scan: for tests and reports).
    pub fn nr_valid(&self) -> usize {
        self.tags.iter().filter(|&&t| t != INVALID).count()
    }

    /// Every valid line, set by set (a scan: for tests and reports).
    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.tags.iter().copied().filter(|&t| t != INVALID)
    }

    /// Asks the host to fetch the tag and metadata words of `line`'s set
    /// into its caches, so that an access issued a little later does not
    /// stall on them. A hint: no effect on the simulated state.
    #[inline(always)]
    pub fn prefetch_set(&self, line: u64) {
        let set = self.locate(line);
        let tags = self.tags[set.tags..].as_ptr();
        prefetch(tags.cast());
        if self.ways > 8 {
            // A 16-way set spans two host lines of tags (three if unaligned).
            prefetch(tags.wrapping_add(self.ways - 1).cast());
        }
        prefetch(self.meta[set.meta..].as_ptr());
    }
}

#[inline]
fn dirty_bits(meta: &[u8]) -> u64 {
    u64::from_le_bytes(meta[..DIRTY_BYTES].try_into().expect("dirty bytes"))
}

/// Sets or clears the dirty bit of `way`; returns its old value.
#[inline]
fn set_dirty(dirty: &mut [u8], way: usize, value: bool) -> bool {
    let bits = dirty_bits(dirty);
    let new = bits & !(1 << way) | u64::from(value) << way;
    dirty[..DIRTY_BYTES].copy_from_slice(&new.to_le_bytes());
    bits >> way & 1 == 1
}

/// The partial tag of `line`: the top byte of a multiplicative hash, so
/// that lines of one set that differ only in high bits (arrays a power of two
/// apart) still get different bytes.
#[inline]
fn ptag(line: u64) -> u8 {
    (line.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8
}

/// 0x80 in exactly the bytes of `x` that are zero (no false positives: the
/// low seven bits are added apart, so no carry crosses a byte).
#[inline]
fn zero_bytes(x: u64) -> u64 {
    !(((x & BYTES_LOW7) + BYTES_LOW7) | x | BYTES_LOW7)
}

/// Word `i` of the partial tags, little-endian (byte k = way 8i + k).
#[inline]
fn load_word(words: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(words[8 * i..8 * i + 8].try_into().expect("8 bytes of partial tags"))
}

/// The candidate bits of [`Cache::find_way`] that are real ways: bit 8k for
/// way k < 8, bit 8k + 1 for way 8 + k. Padding bytes of a set with fewer
/// ways are masked off.
fn ptag_valid_bits(ways: usize) -> u64 {
    (0..ways.min(PTAG_MAX_WAYS)).fold(0, |bits, way| bits | 1 << (8 * (way % 8) + way / 8))
}

/// [`ptag_valid_bits`] as a constant of `W`.
#[inline(always)]
const fn ptag_valid_bits_const<const W: usize>() -> u64 {
    let mut bits = 0;
    let mut way = 0;
    while way < W {
        bits |= 1 << (8 * (way % 8) + way / 8);
        way += 1;
    }
    bits
}

/// The first invalid way of `mask`.
#[inline]
fn free_way(tags: &[u64], mask: u64) -> Option<usize> {
    let mut rest = mask;
    while rest != 0 {
        let way = rest.trailing_zeros() as usize;
        if tags[way] == INVALID {
            return Some(way);
        }
        rest &= rest - 1;
    }
    None
}

#[inline(always)]
#[allow(unused_unsafe)]
fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0;
    const B: u64 = 2;
    const C: u64 = 4;
    const D: u64 = 6;

    /// Two sets of `ways` ways, 64-byte lines: even lines go to set 0.
    fn two_sets(ways: u32, policy: ReplacementKind) -> Cache {
        Cache::new(Geometry::sets(2, ways, 64), policy, 7)
    }

    fn run(cache: &mut Cache, lines: &[u64]) -> Vec<bool> {
        let mask = cache.full_mask();
        lines.iter().map(|&l| cache.access(l, false, mask).0).collect()
    }

    #[test]
    fn the_budget_counts_what_a_cache_allocates() {
        // Every policy's metadata, below and above the partial tags' 16 ways.
        for (ways, kind) in [(4, ReplacementKind::Lru), (16, ReplacementKind::Srrip), (20, ReplacementKind::Random)] {
            let g = Geometry::sets(64, ways, 64);
            let cache = Cache::new(g, kind, 1);
            let allocated = (cache.tags.len() * 8 + cache.meta.len()) as u64;
            assert_eq!(Cache::host_bytes(g, kind), allocated, "{ways} ways, {kind:?}");
        }
    }

    #[test]
    fn lru_two_way_evicts_least_recent() {
        // A B A C: C evicts B (A was used after B); then B misses, evicting A.
        let mut cache = two_sets(2, ReplacementKind::Lru);
        let mask = cache.full_mask();
        assert_eq!(run(&mut cache, &[A, B, A]), [false, false, true]);
        assert_eq!(cache.access(C, false, mask), (false, Some(Evicted { line: B, dirty: false })));
        assert_eq!(cache.access(B, false, mask), (false, Some(Evicted { line: A, dirty: false })));
        assert!(cache.probe(C) && cache.probe(B) && !cache.probe(A));
    }

    #[test]
    fn fifo_differs_from_lru_on_the_same_sequence() {
        // FIFO ignores the reuse of A: C evicts A (first in), and A misses.
        let mut fifo = two_sets(2, ReplacementKind::Fifo);
        assert_eq!(run(&mut fifo, &[A, B, A, C, A, B]), [false, false, true, false, false, false]);
        let mut lru = two_sets(2, ReplacementKind::Lru);
        assert_eq!(run(&mut lru, &[A, B, A, C, A, B]), [false, false, true, false, true, false]);
    }

    #[test]
    fn sets_are_independent() {
        let mut cache = two_sets(1, ReplacementKind::Lru);
        // Lines 0 and 1 map to different sets of a 2-set direct-mapped cache.
        assert_eq!(run(&mut cache, &[0, 1, 0, 1, 2, 1, 0]), [false, false, true, true, false, true, false]);
    }

    #[test]
    fn srrip_resists_a_scan() {
        // 4-way set. A and B are reused (RRPV 0); then a scan of lines used
        // once (C, D, E, F, G) passes through. Under SRRIP the scan lines
        // enter at 2 and reach 3 before A and B do, so the scan only evicts
        // scan lines; under LRU the scan flushes A and B.
        let (e, f, g) = (8, 10, 12);
        let pattern = [A, B, A, B, C, D, e, f, g, A, B];
        let mut srrip = two_sets(4, ReplacementKind::Srrip);
        let hits = run(&mut srrip, &pattern);
        assert_eq!(&hits[9..], [true, true], "SRRIP keeps the reused lines");
        let mut lru = two_sets(4, ReplacementKind::Lru);
        let hits = run(&mut lru, &pattern);
        assert_eq!(&hits[9..], [false, false], "LRU loses them to the scan");
    }

    #[test]
    fn srrip_worked_example() {
        // One 2-way set. Fill A (ways 0, RRPV 2), fill B (way 1, 2), hit A
        // (0). Fill C: no way at 3; age by 1 -> A 1, B 3: B goes.
        let mut cache = two_sets(2, ReplacementKind::Srrip);
        let mask = cache.full_mask();
        run(&mut cache, &[A, B, A]);
        assert_eq!(cache.access(C, false, mask).1.map(|e| e.line), Some(B));
        // Now A = 1, C = 2. Fill D: age by 1 -> A 2, C 3: C goes.
        assert_eq!(cache.access(D, false, mask).1.map(|e| e.line), Some(C));
    }

    #[test]
    fn random_is_deterministic_per_seed() {
        let stream: Vec<u64> = (0..2000u64).map(|i| (i * 7919) % 64 * 2).collect();
        let misses = |seed| {
            let mut c = Cache::new(Geometry::sets(2, 8, 64), ReplacementKind::Random, seed);
            let mask = c.full_mask();
            stream.iter().map(|&l| c.access(l, false, mask).1.map(|e| e.line)).collect::<Vec<_>>()
        };
        assert_eq!(misses(1), misses(1));
        assert_ne!(misses(1), misses(2), "another seed evicts other lines");
    }

    #[test]
    fn random_fills_free_ways_first() {
        let mut cache = two_sets(4, ReplacementKind::Random);
        let hits = run(&mut cache, &[A, B, C, D, A, B, C, D]);
        assert_eq!(hits, [false, false, false, false, true, true, true, true]);
    }

    #[test]
    fn write_back_marks_and_reports_dirty_victims() {
        let mut cache = two_sets(2, ReplacementKind::Lru);
        let mask = cache.full_mask();
        assert_eq!(cache.access(A, true, mask), (false, None)); // store miss: allocate dirty
        assert!(cache.is_dirty(A));
        cache.access(B, false, mask);
        cache.access(B, true, mask); // store hit dirties B
        assert_eq!(cache.access(C, false, mask).1, Some(Evicted { line: A, dirty: true }));
        assert_eq!(cache.access(D, false, mask).1, Some(Evicted { line: B, dirty: true }));
        assert_eq!(cache.access(A, false, mask).1, Some(Evicted { line: C, dirty: false }));
    }

    #[test]
    fn invalidate_frees_the_way_for_the_next_fill() {
        let mut cache = two_sets(2, ReplacementKind::Lru);
        let mask = cache.full_mask();
        cache.access(A, true, mask);
        cache.access(B, false, mask);
        assert_eq!(cache.invalidate(A), Some(Evicted { line: A, dirty: true }));
        assert_eq!(cache.invalidate(A), None);
        // B is the only valid line; C takes A's old way and evicts nothing.
        assert_eq!(cache.access(C, false, mask), (false, None));
        assert!(cache.probe(B) && cache.probe(C));
        assert_eq!(cache.nr_valid(), 2);
    }

    #[test]
    fn fills_stay_inside_the_mask() {
        // One 4-way set; A B C D fill all ways; then E.. with mask 0b0011 may
        // only replace the lines in ways 0 and 1.
        let mut cache = Cache::new(Geometry::sets(1, 4, 64), ReplacementKind::Lru, 0);
        run(&mut cache, &[10, 11, 12, 13]);
        let high: Vec<u64> = [10, 11, 12, 13].into_iter().filter(|&l| cache.way_of(l).unwrap() >= 2).collect();
        for line in 20..40 {
            cache.access(line, false, 0b0011);
            for &l in &high {
                assert!(cache.probe(l), "line {l} in ways 2.. was evicted");
            }
        }
        // Hits are allowed in any way, and do not move the line.
        let way = cache.way_of(high[0]).unwrap();
        assert!(cache.access(high[0], false, 0b0011).0);
        assert_eq!(cache.way_of(high[0]), Some(way));
    }

    #[test]
    fn sliced_sets_follow_the_hash() {
        // 8 sets in 4 slices of 2: modulo puts line 5 in slice 1, and uses
        // line bit 2 (5 >> 2 = 1) for the set within the slice.
        let g = Geometry::sets(8, 2, 64).with_slices(4, SliceHash::Modulo);
        let cache = Cache::new(g, ReplacementKind::Lru, 0);
        assert_eq!(cache.slice_of(5), 1);
        assert_eq!(cache.set_of(5), 2 + 1);
        // Intel: address 0x80 (line 2) is slice 2; set within slice = 2 & 1.
        let g = Geometry::sets(8, 2, 64).with_slices(4, SliceHash::Intel);
        let cache = Cache::new(g, ReplacementKind::Lru, 0);
        assert_eq!(cache.slice_of(2), 2);
        assert_eq!(cache.set_of(2), 4);
        assert_eq!(cache.set_of(3), 3 * 2 + 1, "line 3 = 0xc0: o0 = o1 = 1");
    }

    #[test]
    fn clear_empties_contents() {
        let mut cache = two_sets(2, ReplacementKind::Lru);
        run(&mut cache, &[A, B, 1]);
        cache.clear();
        assert_eq!(cache.nr_valid(), 0);
        assert_eq!(run(&mut cache, &[A, A]), [false, true]);
    }
}
