//! A seeded pseudo-random bijection of `[0, n)`, computed, never stored.
//!
//! Pointer chasing over a huge footprint needs a random cyclic order of
//! nodes without a permutation table as large as the footprint; kv needs to
//! scramble zipfian ranks over the key space without collisions; sparse
//! needs a per-region choice of pages. All three walk this bijection.
//!
//! Construction: on `b` bits (the smallest power of two >= n), four rounds
//! of `x ^= key; x *= odd (mod 2^b); x ^= x >> ceil(b/2)`. Each operation
//! is a bijection of `[0, 2^b)`: xor with a constant, multiplication by an
//! odd number modulo 2^b (odd numbers are invertible there), and an
//! xorshift (its inverse is repeated xorshifts). Multiplication moves
//! information up, the shift moves it down, so after four rounds
//! neighbouring inputs land far apart. For n that is not a power of two,
//! cycle-walking (apply again until the value is below n) restricts the
//! bijection to `[0, n)`: since 2^b < 2n, fewer than two rounds of
//! walking on average.

use super::mix64;

const ROUNDS: usize = 4;
/// Odd multipliers (from splitmix64, murmur3 and the golden ratio).
const MULTIPLIERS: [u64; ROUNDS] =
    [0xbf58_476d_1ce4_e5b9, 0x94d0_49bb_1331_11eb, 0xff51_afd7_ed55_8ccd, 0x9e37_79b9_7f4a_7c15];

/// A bijection of `[0, n)` chosen by `seed`.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; ROUNDS],
}

impl Permutation {
    /// `n >= 1`.
    pub fn new(n: u64, seed: u64) -> Self {
        debug_assert!(n >= 1);
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let mut keys = [0u64; ROUNDS];
        for (r, k) in keys.iter_mut().enumerate() {
            *k = mix64(seed.wrapping_add(0x632b_e59b_d9b4_e019u64.wrapping_mul(r as u64 + 1)));
        }
        Permutation { n, mask, shift: bits.div_ceil(2).max(1), keys }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The element at position `x` (`x < n`).
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        self.apply_tweaked(x, 0)
    }

    /// `apply` of a sibling permutation picked by `tweak`: one `Permutation`
    /// serves many independent choices (sparse: one per 2 MiB region).
    #[inline]
    pub fn apply_tweaked(&self, x: u64, tweak: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.encrypt(x, tweak);
        while y >= self.n {
            y = self.encrypt(y, tweak);
        }
        y
    }

    #[inline]
    fn encrypt(&self, mut x: u64, tweak: u64) -> u64 {
        for (key, multiplier) in self.keys.iter().zip(MULTIPLIERS) {
            x = ((x ^ key ^ tweak) & self.mask).wrapping_mul(multiplier) & self.mask;
            x ^= x >> self.shift;
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_bijection(p: &Permutation, tweak: u64) -> bool {
        let mut seen = vec![false; p.len() as usize];
        for i in 0..p.len() {
            let v = p.apply_tweaked(i, tweak) as usize;
            if v >= seen.len() || seen[v] {
                return false;
            }
            seen[v] = true;
        }
        true
    }

    #[test]
    fn every_size_up_to_1000_is_a_bijection() {
        for n in 1..=1000 {
            for seed in [0, 1, 0xdead_beef] {
                assert!(is_bijection(&Permutation::new(n, seed), 0), "n={n} seed={seed}");
            }
        }
        assert!(is_bijection(&Permutation::new(512, 3), 77));
        assert!(is_bijection(&Permutation::new(1 << 16, 9), 0));
    }

    #[test]
    fn seeds_and_tweaks_give_different_orders() {
        let a: Vec<u64> = (0..100).map(|i| Permutation::new(100, 1).apply(i)).collect();
        let b: Vec<u64> = (0..100).map(|i| Permutation::new(100, 2).apply(i)).collect();
        let c: Vec<u64> = (0..100).map(|i| Permutation::new(100, 1).apply_tweaked(i, 5)).collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn neighbours_scatter() {
        // 2^20 nodes of 64 B: consecutive positions should share a 4 KiB page
        // (64 nodes) about 1/16384 of the time, and be spread in distance.
        let n = 1 << 20;
        let p = Permutation::new(n, 42);
        let mut same_page = 0;
        let mut near = 0;
        let mut prev = p.apply(0);
        for i in 1..n {
            let v = p.apply(i);
            same_page += (v / 64 == prev / 64) as u32;
            near += (v.abs_diff(prev) < n / 16) as u32;
            prev = v;
        }
        assert!(same_page < 200, "{same_page}");
        // Uniform pairs are within n/16 of each other ~12% of the time.
        assert!((100_000..160_000).contains(&near), "{near}");
    }
}
