//! Key popularity distributions of YCSB: zipfian (scrambled), hotspot,
//! uniform.
//!
//! Keeps (reference/workloads.md, "YCSB"): YCSB's `ZipfianGenerator`
//! algorithm (Gray et al., "Quickly generating billion-record synthetic
//! databases") with its constant 0.99; ranks scrambled by a hash so popular
//! keys are spread over the key space; `HotspotIntegerGenerator` with the
//! hot keys the lowest-numbered (the first inserted) and its defaults of 20%
//! of keys getting 80% of operations.
//!
//! Simplifies: YCSB's `ScrambledZipfianGenerator` draws from a zipfian over
//! 10 billion items and reduces `fnv64(rank) % n`, so several ranks collide
//! on one key; here ranks are drawn over exactly n items and scrambled by a
//! bijection ([`Permutation`]), so key popularity is exactly zipfian.
//! `zeta(n)` is summed exactly for n up to 2^22 and completed with the
//! Euler-Maclaurin formula beyond (relative error below 1e-12).

use super::permute::Permutation;
use super::{below, unit_f64, KeyDistribution};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// YCSB's zipfian over ranks `0..items` (rank 0 the most popular).
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    /// `1 + 0.5^theta`: below it (after scaling by zetan) the draw is rank 1.
    second_bound: f64,
}

impl Zipfian {
    /// `items >= 1`, `0 <= theta < 1`.
    pub fn new(items: u64, theta: f64) -> Self {
        debug_assert!(items >= 1 && (0.0..1.0).contains(&theta));
        let zetan = zeta(items, theta);
        let zeta2 = zeta(2, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipfian { items, theta, zetan, alpha: 1.0 / (1.0 - theta), eta, second_bound: 1.0 + 0.5f64.powf(theta) }
    }

    /// The rank for one uniform 64-bit draw (YCSB's `nextLong`).
    #[inline]
    pub fn rank(&self, random: u64) -> u64 {
        let u = unit_f64(random);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.second_bound {
            return 1.min(self.items - 1);
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    /// The theoretical probability of `rank`: `(rank+1)^-theta / zeta(n)`.
    pub fn probability(&self, rank: u64) -> f64 {
        ((rank + 1) as f64).powf(-self.theta) / self.zetan
    }
}

/// `sum_{i=1..n} i^-theta`.
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1 << 22;
    let m = n.min(EXACT);
    let mut sum = 0.0;
    for i in 1..=m {
        sum += (i as f64).powf(-theta);
    }
    if n == m {
        return sum;
    }
    // Euler-Maclaurin for sum_{i=m+1..n} f(i), f(x) = x^-theta.
    let (mf, nf) = (m as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    let integral = (nf.powf(1.0 - theta) - mf.powf(1.0 - theta)) / (1.0 - theta);
    sum + integral + (f(nf) - f(mf)) / 2.0 + (df(nf) - df(mf)) / 12.0
}

/// YCSB's hotspot: `hot_ops` of operations go uniformly to the lowest
/// `hot_fraction` of keys, the rest uniformly to the others.
#[derive(Clone, Debug)]
pub struct Hotspot {
    hot: u64,
    cold: u64,
    /// An operation is hot when its draw is below this (or always).
    hot_threshold: u64,
    always_hot: bool,
}

impl Hotspot {
    pub fn new(items: u64, hot_fraction: f64, hot_ops: f64) -> Self {
        let hot = ((items as f64 * hot_fraction) as u64).min(items);
        let hot_threshold = (hot_ops * 18_446_744_073_709_551_616.0) as u64;
        Hotspot { hot, cold: items - hot, hot_threshold, always_hot: hot_ops >= 1.0 }
    }

    #[inline]
    pub fn key(&self, choose: u64, pick: u64) -> u64 {
        let go_hot = self.always_hot || choose < self.hot_threshold;
        if (go_hot && self.hot > 0) || self.cold == 0 {
            below(pick, self.hot)
        } else {
            self.hot + below(pick, self.cold)
        }
    }

    /// Keys `0..hot_keys()` are the hot set.
    pub fn hot_keys(&self) -> u64 {
        self.hot
    }
}

/// Picks the key of the next operation.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Zipfian ranks, scrambled over the keys.
    Zipf {
        zipf: Zipfian,
        scramble: Permutation,
    },
    Hotspot(Hotspot),
    Uniform(u64),
}

impl KeyChooser {
    pub fn new(dist: KeyDistribution, items: u64, cfg: &super::WorkloadConfig, seed: u64) -> Self {
        match dist {
            KeyDistribution::Zipf => {
                KeyChooser::Zipf { zipf: Zipfian::new(items, cfg.zipf_theta), scramble: Permutation::new(items, seed) }
            }
            KeyDistribution::Hotspot => KeyChooser::Hotspot(Hotspot::new(items, cfg.hot_fraction, cfg.hot_ops)),
            KeyDistribution::Uniform => KeyChooser::Uniform(items),
        }
    }

    #[inline]
    pub fn next(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            KeyChooser::Zipf { zipf, scramble } => scramble.apply(zipf.rank(rng.next_u64())),
            KeyChooser::Hotspot(h) => h.key(rng.next_u64(), rng.next_u64()),
            KeyChooser::Uniform(n) => below(rng.next_u64(), *n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{rng_for, WorkloadConfig};
    use super::*;

    #[test]
    fn zeta_small_cases_by_hand() {
        // zeta(2, 0.99) = 1 + 2^-0.99 = 1 + 0.503477...
        assert!((zeta(2, 0.99) - 1.503_477_4).abs() < 1e-6);
        assert_eq!(zeta(3, 0.0), 3.0);
    }

    #[test]
    fn zeta_tail_approximation_is_accurate() {
        // Compare Euler-Maclaurin beyond 2^22 with the exact sum at 2^22 + 1000.
        let n = (1u64 << 22) + 1000;
        let exact: f64 = (1..=n).map(|i| (i as f64).powf(-0.99)).sum();
        assert!((zeta(n, 0.99) - exact).abs() / exact < 1e-10);
    }

    #[test]
    fn zipf_rank_frequencies_match_theory() {
        let zipf = Zipfian::new(100, 0.99);
        let mut rng = rng_for(3, 1);
        let draws = 1_000_000;
        let mut counts = [0u32; 100];
        for _ in 0..draws {
            counts[zipf.rank(rng.next_u64()) as usize] += 1;
        }
        // Rank 0: p = 1 / zeta(100, 0.99); zeta(100, 1) = H_100 = 5.187 and
        // the 0.99 power adds ~2%, so p ~ 0.189. Sigma of the frequency ~4e-4.
        let p0 = zipf.probability(0);
        assert!((p0 - 0.1889).abs() < 0.001, "{p0}");
        let f0 = counts[0] as f64 / draws as f64;
        assert!((f0 - p0).abs() < 0.003, "f0 = {f0}, p0 = {p0}");
        let f1 = counts[1] as f64 / draws as f64;
        assert!((f1 - zipf.probability(1)).abs() < 0.003, "f1 = {f1}");
        assert!(counts[10] > counts[50] && counts[50] > 0);
    }

    #[test]
    fn hotspot_gives_80_percent_to_the_first_20_percent() {
        let h = Hotspot::new(1000, 0.2, 0.8);
        assert_eq!(h.hot_keys(), 200);
        let mut rng = rng_for(1, 2);
        let draws = 200_000;
        let hot = (0..draws).filter(|_| h.key(rng.next_u64(), rng.next_u64()) < 200).count();
        let share = hot as f64 / draws as f64;
        assert!((share - 0.8).abs() < 0.005, "{share}");
    }

    #[test]
    fn hotspot_edges_stay_in_range() {
        let mut rng = rng_for(1, 2);
        for (frac, ops) in [(0.0, 0.8), (1.0, 0.8), (0.2, 0.0), (0.2, 1.0)] {
            let h = Hotspot::new(10, frac, ops);
            for _ in 0..1000 {
                let k = h.key(rng.next_u64(), rng.next_u64());
                assert!(k < 10);
                if ops == 1.0 {
                    assert!(k < 2);
                }
                if ops == 0.0 {
                    assert!(k >= 2);
                }
            }
        }
    }

    #[test]
    fn scrambled_zipf_spreads_the_popular_keys() {
        let cfg = WorkloadConfig::default();
        let chooser = KeyChooser::new(KeyDistribution::Zipf, 10_000, &cfg, 7);
        let mut rng = rng_for(1, 3);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..200_000 {
            counts[chooser.next(&mut rng) as usize] += 1;
        }
        let mut top: Vec<usize> = (0..10_000).collect();
        top.sort_by_key(|&k| std::cmp::Reverse(counts[k]));
        // The ten most popular keys are not the ten lowest-numbered ones.
        assert!(top[..10].iter().filter(|&&k| k < 100).count() <= 2, "{:?}", &top[..10]);
    }
}
