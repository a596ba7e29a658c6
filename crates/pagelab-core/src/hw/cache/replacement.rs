//! Replacement policies of one cache set.
//!
//! Each set owns a few bytes of policy state (`SetPolicy::state_bytes`),
//! stored contiguously with the set's other metadata. The policy is an enum
//! chosen once per cache and dispatched by `match` (static, predictable).
//!
//! - `lru`: up to 16 ways, a packed recency order: one `u64` whose nibble p
//!   is the way at recency position p (0 = most recent). Victim = the nibble
//!   at position `ways - 1`, in O(1); a hit finds its way's position with a
//!   SWAR nibble search and moves it to the front with two masks and a shift.
//!   Above 16 ways, one rank byte per way (0 = most recent) updated with a
//!   branch-free loop.
//!   Either way, invalid ways sit at the oldest positions (they start there
//!   and an invalidation moves a way there), so the oldest way of a fill mask
//!   is an invalid one whenever the mask holds one: no search for free ways.
//! - `fifo`: the same order, updated on fills only (position = insertion age).
//! - `random`: no state; the victim is an invalid way if any, else a
//!   uniformly drawn way of the fill mask from the cache's seeded generator.
//! - `srrip`: one 2-bit re-reference prediction value per way (Jaleel et al.,
//!   ISCA 2010, SRRIP-HP): fills insert at 2 ("long"), hits promote to 0, the
//!   victim is the first way at 3 ("distant"), ageing the candidate ways until
//!   one is. Invalid ways are used first.

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A replacement policy (`machine.cache.<level>.policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplacementKind {
    Lru,
    Fifo,
    Random,
    Srrip,
}

impl ReplacementKind {
    pub const ALL: [ReplacementKind; 4] =
        [ReplacementKind::Lru, ReplacementKind::Fifo, ReplacementKind::Random, ReplacementKind::Srrip];

    pub const fn name(self) -> &'static str {
        match self {
            ReplacementKind::Lru => "lru",
            ReplacementKind::Fifo => "fifo",
            ReplacementKind::Random => "random",
            ReplacementKind::Srrip => "srrip",
        }
    }
}

/// Largest re-reference prediction value of 2-bit SRRIP ("distant").
pub const RRPV_DISTANT: u8 = 3;
/// Value a fill inserts at under SRRIP ("long"): a line must be reused once
/// to outlive a scan of lines inserted after it.
pub const RRPV_LONG: u8 = 2;

/// Most ways of the packed recency order (16 nibbles in a `u64`).
pub const PACKED_MAX_WAYS: usize = 16;

/// The mask of all `ways` ways.
#[inline]
pub const fn full_mask(ways: usize) -> u64 {
    if ways >= 64 {
        u64::MAX
    } else {
        (1u64 << ways) - 1
    }
}

/// How one cache keeps and updates the state of its sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetPolicy {
    /// Packed recency order, updated on hits and fills (`lru`, <= 16 ways).
    PackedLru,
    /// Packed insertion order, updated on fills (`fifo`, <= 16 ways).
    PackedFifo,
    /// Rank bytes, updated on hits and fills (`lru`, > 16 ways).
    RankLru,
    /// Rank bytes, updated on fills (`fifo`, > 16 ways).
    RankFifo,
    Random,
    Srrip,
}

impl SetPolicy {
    pub(crate) fn new(kind: ReplacementKind, ways: usize) -> SetPolicy {
        let packed = ways <= PACKED_MAX_WAYS;
        match kind {
            ReplacementKind::Lru if packed => SetPolicy::PackedLru,
            ReplacementKind::Lru => SetPolicy::RankLru,
            ReplacementKind::Fifo if packed => SetPolicy::PackedFifo,
            ReplacementKind::Fifo => SetPolicy::RankFifo,
            ReplacementKind::Random => SetPolicy::Random,
            ReplacementKind::Srrip => SetPolicy::Srrip,
        }
    }

    /// Bytes of state per set.
    pub(crate) fn state_bytes(self, ways: usize) -> usize {
        match self {
            SetPolicy::PackedLru | SetPolicy::PackedFifo => 8,
            SetPolicy::RankLru | SetPolicy::RankFifo | SetPolicy::Srrip => ways,
            SetPolicy::Random => 0,
        }
    }

    /// State of an empty set.
    pub(crate) fn init(self, state: &mut [u8], ways: usize) {
        match self {
            SetPolicy::PackedLru | SetPolicy::PackedFifo => store(state, packed::initial(ways)),
            SetPolicy::RankLru | SetPolicy::RankFifo => {
                for (way, rank) in state.iter_mut().enumerate() {
                    *rank = way as u8;
                }
            }
            SetPolicy::Srrip => state.fill(RRPV_DISTANT),
            SetPolicy::Random => {}
        }
    }

    #[inline]
    pub(crate) fn on_hit(self, state: &mut [u8], way: usize) {
        match self {
            SetPolicy::PackedLru => store(state, packed::to_front(load(state), way)),
            SetPolicy::RankLru => ranks::to_front(state, way),
            SetPolicy::Srrip => state[way] = 0,
            SetPolicy::PackedFifo | SetPolicy::RankFifo | SetPolicy::Random => {}
        }
    }

    /// The way `way` became invalid (back-invalidation).
    #[inline]
    pub(crate) fn on_invalidate(self, state: &mut [u8], way: usize, ways: usize) {
        match self {
            SetPolicy::PackedLru | SetPolicy::PackedFifo => store(state, packed::to_back(load(state), way, ways)),
            SetPolicy::RankLru | SetPolicy::RankFifo => ranks::to_back(state, way),
            SetPolicy::Srrip => state[way] = RRPV_DISTANT,
            SetPolicy::Random => {}
        }
    }

    /// Chooses the way a fill replaces among the ways of `mask` (non-empty,
    /// within the set) and records the fill in the set's state. `free_way`
    /// finds an invalid way of the mask; only the policies that cannot tell
    /// from their state call it.
    #[inline]
    pub(crate) fn replace(
        self,
        state: &mut [u8],
        ways: usize,
        mask: u64,
        free_way: impl FnOnce() -> Option<usize>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> usize {
        debug_assert!(mask != 0 && mask & !full_mask(ways) == 0);
        match self {
            SetPolicy::PackedLru | SetPolicy::PackedFifo => {
                let order = load(state);
                let way = if mask == full_mask(ways) {
                    packed::oldest(order, ways)
                } else {
                    packed::oldest_in(order, ways, mask)
                };
                store(state, packed::to_front(order, way));
                way
            }
            SetPolicy::RankLru | SetPolicy::RankFifo => {
                let way = ranks::oldest_in(state, mask);
                ranks::to_front(state, way);
                way
            }
            SetPolicy::Random => free_way().unwrap_or_else(|| random_way(mask, rng)),
            SetPolicy::Srrip => {
                let way = free_way().unwrap_or_else(|| srrip_victim(state, mask));
                state[way] = RRPV_LONG;
                way
            }
        }
    }
}

#[inline]
fn load(state: &[u8]) -> u64 {
    u64::from_le_bytes(state[..8].try_into().expect("8 bytes of packed order"))
}

#[inline]
fn store(state: &mut [u8], order: u64) {
    state[..8].copy_from_slice(&order.to_le_bytes());
}

/// The packed recency order: nibble p of a `u64` = the way at position p
/// (0 = most recent). Positions at or past `ways` hold 0xf, which no way
/// below 16 equals, so a search never finds them.
pub(crate) mod packed {
    const ONES: u64 = 0x1111_1111_1111_1111;
    const HIGHS: u64 = 0x8888_8888_8888_8888;

    /// Way p at position p; unused positions 0xf.
    pub(crate) fn initial(ways: usize) -> u64 {
        (0..16).fold(0, |order, p| order | (if p < ways { p as u64 } else { 0xf }) << (4 * p))
    }

    /// Nibbles below position `p` (p <= 16), without a branch: the shift is
    /// split so that p = 16 does not shift by 64.
    #[inline]
    fn below(p: usize) -> u64 {
        debug_assert!(p <= 16);
        !(u64::MAX << (4 * p.saturating_sub(1)) << (4 * p.min(1)))
    }

    /// Position of `way` (present exactly once). SWAR: the nibbles of
    /// `order ^ way*0x1111..` are zero where `way` sits; the lowest flagged
    /// nibble of the classic has-zero test is always a true zero.
    #[inline]
    pub(crate) fn position(order: u64, way: usize) -> usize {
        let x = order ^ (way as u64).wrapping_mul(ONES);
        let zeros = x.wrapping_sub(ONES) & !x & HIGHS;
        debug_assert!(zeros != 0, "way {way} not in order {order:#x}");
        zeros.trailing_zeros() as usize / 4
    }

    /// `way` moved to position 0; the ways before it shift back by one.
    /// p < 16, so `below(p)` is a plain shift, and `below(p + 1)` follows
    /// from it (for p = 15 the shift drops the top nibble: all ones).
    #[inline]
    pub(crate) fn to_front(order: u64, way: usize) -> u64 {
        let p = position(order, way);
        debug_assert!(p < 16);
        let newer_mask = (1u64 << (4 * p)) - 1;
        let older = order & !(newer_mask << 4 | 0xf);
        older | (order & newer_mask) << 4 | way as u64
    }

    /// `way` moved to the oldest position `ways - 1`; the ways after it
    /// shift forward by one.
    #[inline]
    pub(crate) fn to_back(order: u64, way: usize, ways: usize) -> u64 {
        let p = position(order, way);
        let used = below(ways);
        let newer = order & below(p);
        let older = (order & used & !below(p + 1)) >> 4;
        newer | older | (way as u64) << (4 * (ways - 1)) | (order & !used)
    }

    /// The way at the oldest position.
    #[inline]
    pub(crate) fn oldest(order: u64, ways: usize) -> usize {
        (order >> (4 * (ways - 1)) & 0xf) as usize
    }

    /// The oldest way of `mask`.
    #[inline]
    pub(crate) fn oldest_in(order: u64, ways: usize, mask: u64) -> usize {
        for p in (0..ways).rev() {
            let way = (order >> (4 * p) & 0xf) as usize;
            if mask >> way & 1 == 1 {
                return way;
            }
        }
        unreachable!("empty fill mask {mask:#x}")
    }
}

/// One rank byte per way (0 = most recent); the ranks of a set are a
/// permutation of `0..ways`.
pub(crate) mod ranks {
    /// Moves `way` to rank 0; the ways more recent than it age by one.
    /// Branch-free so that the loop vectorises.
    #[inline]
    pub(crate) fn to_front(ranks: &mut [u8], way: usize) {
        let old = ranks[way];
        for rank in ranks.iter_mut() {
            *rank += u8::from(*rank < old);
        }
        ranks[way] = 0;
    }

    /// Moves `way` to the last rank; the ways older than it get younger.
    #[inline]
    pub(crate) fn to_back(ranks: &mut [u8], way: usize) {
        let old = ranks[way];
        for rank in ranks.iter_mut() {
            *rank -= u8::from(*rank > old);
        }
        ranks[way] = (ranks.len() - 1) as u8;
    }

    /// The way of `mask` with the highest rank.
    #[inline]
    pub(crate) fn oldest_in(ranks: &[u8], mask: u64) -> usize {
        let mut best = 0;
        let mut best_rank = 0;
        let mut rest = mask;
        while rest != 0 {
            let way = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if ranks[way] >= best_rank {
                best = way;
                best_rank = ranks[way];
            }
        }
        best
    }
}

/// A uniformly drawn way of `mask`.
#[inline]
fn random_way(mask: u64, rng: &mut Xoshiro256PlusPlus) -> usize {
    let nth = rng.random_range(0..mask.count_ones());
    nth_set_bit(mask, nth)
}

fn nth_set_bit(mut mask: u64, nth: u32) -> usize {
    for _ in 0..nth {
        mask &= mask - 1;
    }
    mask.trailing_zeros() as usize
}

/// SRRIP victim: the first way of `mask` at the distant value, after ageing
/// the candidates by what the oldest of them still lacks (the same as ageing
/// all by one until one is distant, in one step).
#[inline]
fn srrip_victim(rrpv: &mut [u8], mask: u64) -> usize {
    let mut oldest = 0;
    let mut rest = mask;
    while rest != 0 {
        let way = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        oldest = oldest.max(rrpv[way]);
    }
    let lack = RRPV_DISTANT - oldest;
    let mut victim = usize::MAX;
    let mut rest = mask;
    while rest != 0 {
        let way = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        rrpv[way] += lack;
        if victim == usize::MAX && rrpv[way] == RRPV_DISTANT {
            victim = way;
        }
    }
    victim
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(1)
    }

    #[test]
    fn packed_order_worked_example() {
        // 4 ways: positions 0..3 hold ways 0..3, unused nibbles 0xf.
        let order = packed::initial(4);
        assert_eq!(order, 0xffff_ffff_ffff_3210);
        assert_eq!(packed::oldest(order, 4), 3);
        // Way 3 filled: to the front.
        let order = packed::to_front(order, 3);
        assert_eq!(order & 0xffff, 0x2103);
        // Hit on way 1 (position 2).
        let order = packed::to_front(order, 1);
        assert_eq!(order & 0xffff, 0x2031);
        assert_eq!(packed::oldest(order, 4), 2);
        // Way 0 invalidated: to the back; 2 moves up one position.
        let order = packed::to_back(order, 0, 4);
        assert_eq!(order, 0xffff_ffff_ffff_0231);
        // Oldest of ways {1, 3}: way 3 (position 1) is older than way 1.
        assert_eq!(packed::oldest_in(order, 4, 0b1010), 3);
    }

    #[test]
    fn packed_order_with_sixteen_ways() {
        let mut order = packed::initial(16);
        assert_eq!(order, 0xfedc_ba98_7654_3210);
        order = packed::to_front(order, 15);
        assert_eq!(order, 0xedcb_a987_6543_210f);
        assert_eq!(packed::oldest(order, 16), 14);
        order = packed::to_back(order, 15, 16);
        assert_eq!(order, 0xfedc_ba98_7654_3210);
        assert_eq!(packed::position(order, 0), 0);
        assert_eq!(packed::position(order, 9), 9);
    }

    #[test]
    fn rank_bytes_stay_a_permutation() {
        let mut ranks = [0u8, 1, 2, 3];
        ranks::to_front(&mut ranks, 3);
        assert_eq!(ranks, [1, 2, 3, 0]);
        ranks::to_front(&mut ranks, 1);
        assert_eq!(ranks, [2, 0, 3, 1]);
        ranks::to_back(&mut ranks, 1);
        assert_eq!(ranks, [1, 3, 2, 0]);
        assert_eq!(ranks::oldest_in(&ranks, 0b1111), 1);
        assert_eq!(ranks::oldest_in(&ranks, 0b1101), 2);
    }

    #[test]
    fn packed_and_rank_lru_agree() {
        // The same random operations on both representations of 12 ways.
        let ways = 12;
        let mut order = [0u8; 8];
        let mut ranks = [0u8; 12];
        SetPolicy::PackedLru.init(&mut order, ways);
        SetPolicy::RankLru.init(&mut ranks, ways);
        let mut r = rng();
        for step in 0..2000 {
            let way = r.random_range(0..ways);
            let mask = r.random_range(1..1u64 << ways);
            match step % 4 {
                0 => {
                    SetPolicy::PackedLru.on_hit(&mut order, way);
                    SetPolicy::RankLru.on_hit(&mut ranks, way);
                }
                1 => {
                    SetPolicy::PackedLru.on_invalidate(&mut order, way, ways);
                    SetPolicy::RankLru.on_invalidate(&mut ranks, way, ways);
                }
                _ => {
                    let a = SetPolicy::PackedLru.replace(&mut order, ways, mask, || None, &mut r);
                    let b = SetPolicy::RankLru.replace(&mut ranks, ways, mask, || None, &mut r);
                    assert_eq!(a, b, "step {step}");
                }
            }
        }
    }

    #[test]
    fn fifo_ignores_hits() {
        let mut order = [0u8; 8];
        SetPolicy::PackedFifo.init(&mut order, 2);
        assert_eq!(SetPolicy::PackedFifo.replace(&mut order, 2, 0b11, || None, &mut rng()), 1);
        assert_eq!(SetPolicy::PackedFifo.replace(&mut order, 2, 0b11, || None, &mut rng()), 0);
        SetPolicy::PackedFifo.on_hit(&mut order, 1);
        assert_eq!(SetPolicy::PackedFifo.replace(&mut order, 2, 0b11, || None, &mut rng()), 1);
    }

    #[test]
    fn free_ways_come_first_for_random_and_srrip() {
        let mut rrpv = [0u8, 0, 3, 3];
        let srrip = SetPolicy::Srrip.replace(&mut rrpv, 4, 0b1111, || Some(1), &mut rng());
        assert_eq!((srrip, rrpv), (1, [0, RRPV_LONG, 3, 3]));
        assert_eq!(SetPolicy::Random.replace(&mut [], 4, 0b1111, || Some(3), &mut rng()), 3);
    }

    #[test]
    fn srrip_ages_candidates_until_one_is_distant() {
        let mut rrpv = [0u8, 2, 1, 2];
        // Oldest is 2: all age by 1; way 1 is the first at 3.
        assert_eq!(srrip_victim(&mut rrpv, 0b1111), 1);
        assert_eq!(rrpv, [1, 3, 2, 3]);
        // Confined to ways 0 and 2: only they age (by 1, to reach 3).
        let mut rrpv = [0u8, 1, 2, 0];
        assert_eq!(srrip_victim(&mut rrpv, 0b0101), 2);
        assert_eq!(rrpv, [1, 1, 3, 0]);
    }

    #[test]
    fn random_stays_inside_mask() {
        let mut r = rng();
        for _ in 0..200 {
            let way = random_way(0b1010_0100, &mut r);
            assert!(matches!(way, 2 | 5 | 7), "way {way}");
        }
        assert_eq!(nth_set_bit(0b1010_0100, 0), 2);
        assert_eq!(nth_set_bit(0b1010_0100, 2), 7);
    }

    #[test]
    fn full_masks() {
        assert_eq!(full_mask(1), 1);
        assert_eq!(full_mask(16), 0xffff);
        assert_eq!(full_mask(64), u64::MAX);
    }

    #[test]
    fn policy_names_are_serde_names() {
        for kind in ReplacementKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            let back: ReplacementKind = serde_json::from_str(&json).unwrap();
            assert_eq!(back, kind);
        }
    }
}
