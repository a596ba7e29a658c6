//! The fragmentation scenario of the Perforated Pages paper's evaluation
//! (VII-A): which of a process's 2 MiB regions are fragmented
//! (`os.holes.portion`), how many of each one's 512 pages are holes
//! (`degree`), and where they sit (`distribution`). Every choice is a
//! function of the seed, the process and the region's index, so a run is
//! deterministic whatever order its faults come in. The `perforated` and
//! `holes` systems fragment by it; a workload's partly shared data picks
//! its shared pages by it (`virt::contents`).

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::units::Asid;

/// One bit per 4 KiB page of a 2 MiB region (bit `i % 64` of word
/// `i / 64`): word `r` is the 256 KiB region of filter bit `r`.
pub type HoleBits = [u64; 8];

/// Where the holes of a fragmented region sit (`os.holes.distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// One run of consecutive pages, at a random place in the region.
    Clustered,
    /// Spread evenly over the region, from a random phase.
    Dispersed,
}

/// What a hole is (`os.holes.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HoleKind {
    /// Backed by another 4 KiB frame at creation.
    Allocated,
    /// Not backed; the program is not meant to touch it (a touch backs it
    /// then, as a lazily allocated hole).
    Unallocated,
}

/// The fragmentation scenario (`os.holes`): a share of the workload's
/// 2 MiB regions (`portion`) hold frames the kernel cannot use for a huge
/// page, a share of each such region's pages (`degree`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HolesConfig {
    pub portion: f64,
    pub degree: f64,
    pub distribution: Distribution,
    pub kind: HoleKind,
    /// The share of the fragmented regions whose holes are dispersed
    /// whatever `distribution` says: with 8 holes or more they set every
    /// filter bit, so the paper's creation rule refuses them. pp-realfrag
    /// needs it: a real machine's fragmented pageblocks are a mix of
    /// blocks a perforated page can use and blocks it cannot.
    pub spread: f64,
}

impl Default for HolesConfig {
    fn default() -> Self {
        HolesConfig {
            portion: 0.0,
            degree: 0.25,
            distribution: Distribution::Clustered,
            kind: HoleKind::Allocated,
            spread: 0.0,
        }
    }
}

impl HolesConfig {
    /// Checks its keys, named under `prefix.holes`.
    pub fn check_keys(&self, prefix: &str) -> Result<()> {
        for (name, v) in [("portion", self.portion), ("degree", self.degree), ("spread", self.spread)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(format!("{prefix}.holes.{name}"), format!("{v} is not in [0, 1]")));
            }
        }
        if self.portion > 0.0 && self.holes_per_region() == 0 {
            let key = format!("{prefix}.holes.degree");
            return Err(Error::config(key, "a fragmented region needs at least one hole of its 512 pages"));
        }
        if self.holes_per_region() >= 512 {
            let key = format!("{prefix}.holes.degree");
            return Err(Error::config(key, "a region of only holes is not a huge page of any kind"));
        }
        Ok(())
    }

    /// Holes in each fragmented region (of 512 pages).
    pub fn holes_per_region(&self) -> u32 {
        (self.degree * 512.0).round() as u32
    }
}

/// The golden ratio's fractional part: region `n` is fragmented when
/// frac(n * PHI + offset) < portion, a low-discrepancy sequence whose
/// share of fragmented regions is within 1/n of `portion` over any n
/// consecutive regions (a coin per region would stray by sqrt(n)).
const PHI_FRAC: f64 = 0.618_033_988_749_894_9;

#[derive(Debug, Clone, Copy)]
pub struct HoleScenario {
    cfg: HolesConfig,
    seed: u64,
}

impl HoleScenario {
    pub fn new(cfg: &HolesConfig, seed: u64) -> Self {
        HoleScenario { cfg: *cfg, seed }
    }

    /// Whether the scenario fragments anything.
    pub fn active(&self) -> bool {
        self.cfg.portion > 0.0
    }

    /// The holes of region `region` (virtual address >> 21) of `asid`, or
    /// `None` when the scenario leaves it whole.
    pub fn holes(&self, asid: Asid, region: u64) -> Option<HoleBits> {
        let offset = self.rng(asid, u64::MAX).random::<f64>();
        let u = (region as f64 * PHI_FRAC + offset).fract();
        if u >= self.cfg.portion {
            return None;
        }
        let n = self.cfg.holes_per_region() as u64;
        let mut rng = self.rng(asid, region);
        let mut bits = [0u64; 8];
        let mut set = |i: u64| bits[(i / 64) as usize] |= 1 << (i % 64);
        // The last `spread` share of the fragmented regions (in the
        // sequence's order) are dispersed whatever the distribution.
        let spread = u >= self.cfg.portion * (1.0 - self.cfg.spread);
        let distribution = if spread { Distribution::Dispersed } else { self.cfg.distribution };
        match distribution {
            Distribution::Clustered => {
                let start = rng.random_range(0..=512 - n);
                (start..start + n).for_each(&mut set);
            }
            Distribution::Dispersed => {
                // Page floor((j * 512 + phase) / n) for j < n: distinct
                // (512 >= n), evenly spaced, the last below 512.
                let phase = rng.random_range(0..n);
                (0..n).map(|j| (j * 512 + phase) / n).for_each(&mut set);
            }
        }
        Some(bits)
    }

    fn rng(&self, asid: Asid, region: u64) -> Xoshiro256PlusPlus {
        let mix =
            self.seed ^ (asid as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ region.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Xoshiro256PlusPlus::seed_from_u64(mix)
    }
}

/// Holes in `bits`.
pub fn count(bits: &HoleBits) -> u32 {
    bits.iter().map(|w| w.count_ones()).sum()
}

/// The 8-bit filter of `bits`: bit `r` set when 256 KiB region `r` holds a
/// hole (IV-B).
pub fn filter_of(bits: &HoleBits) -> u8 {
    bits.iter().enumerate().fold(0, |f, (r, &w)| f | (((w != 0) as u8) << r))
}

/// Whether page `i` (0..512) is a hole.
pub fn is_hole(bits: &HoleBits, i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 != 0
}

/// Marks page `i` a hole (`on`) or not.
pub fn set_hole(bits: &mut HoleBits, i: usize, on: bool) {
    if on {
        bits[i / 64] |= 1 << (i % 64);
    } else {
        bits[i / 64] &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(portion: f64, degree: f64, distribution: Distribution) -> HoleScenario {
        HoleScenario::new(&HolesConfig { portion, degree, distribution, kind: HoleKind::Allocated, spread: 0.0 }, 7)
    }

    #[test]
    fn portion_is_the_share_of_fragmented_regions_within_one_region() {
        for portion in [0.1, 0.25, 0.5, 0.9] {
            let s = scenario(portion, 0.25, Distribution::Clustered);
            let n = (0..1000).filter(|&r| s.holes(1, r).is_some()).count() as f64;
            assert!((n - portion * 1000.0).abs() <= 1.0, "portion {portion}: {n} of 1000");
        }
        assert!((0..1000).all(|r| scenario(0.0, 0.25, Distribution::Clustered).holes(1, r).is_none()));
        assert!((0..1000).all(|r| scenario(1.0, 0.25, Distribution::Clustered).holes(1, r).is_some()));
    }

    #[test]
    fn spread_disperses_that_share_of_the_fragmented_regions_only() {
        let cfg = HolesConfig {
            portion: 0.8,
            degree: 0.2,
            distribution: Distribution::Clustered,
            kind: HoleKind::Allocated,
            spread: 0.25,
        };
        let s = HoleScenario::new(&cfg, 7);
        let fragmented: Vec<HoleBits> = (0..1000).filter_map(|r| s.holes(1, r)).collect();
        assert!((fragmented.len() as f64 - 800.0).abs() <= 1.0, "{}", fragmented.len());
        // 102 holes: evenly spaced they set all 8 bits, one run at most 3.
        let dispersed = fragmented.iter().filter(|h| filter_of(h) == 0xff).count() as f64;
        assert!((dispersed - 200.0).abs() <= 1.0, "{dispersed} of 800 dispersed");
        assert!(fragmented.iter().all(|h| count(h) == 102 && (filter_of(h) == 0xff || filter_of(h).count_ones() <= 3)));
        // spread = 0 keeps the scenario as it was, region by region.
        let plain = HoleScenario::new(&HolesConfig { spread: 0.0, ..cfg }, 7);
        let old = scenario(0.8, 0.2, Distribution::Clustered);
        assert!((0..1000).all(|r| plain.holes(1, r) == old.holes(1, r)));
    }

    #[test]
    fn clustered_holes_are_one_run_and_dispersed_ones_evenly_spaced() {
        // degree 0.25: 128 holes. Clustered: one run of 128 pages, so 2 or
        // 3 filter bits. Dispersed: one hole every 4 pages, all 8 bits.
        let c = scenario(1.0, 0.25, Distribution::Clustered).holes(1, 3).unwrap();
        assert_eq!(count(&c), 128);
        let first = (0..512).find(|&i| is_hole(&c, i)).unwrap();
        assert!((first..first + 128).all(|i| is_hole(&c, i)));
        assert!((2..=3).contains(&filter_of(&c).count_ones()));
        let d = scenario(1.0, 0.25, Distribution::Dispersed).holes(1, 3).unwrap();
        assert_eq!(count(&d), 128);
        assert_eq!(filter_of(&d), 0xff);
        let holes: Vec<usize> = (0..512).filter(|&i| is_hole(&d, i)).collect();
        assert!(holes.windows(2).all(|w| w[1] - w[0] == 4), "{holes:?}");
    }

    #[test]
    fn the_scenario_is_a_function_of_seed_process_and_region() {
        let s = scenario(0.5, 0.1, Distribution::Dispersed);
        assert_eq!(s.holes(1, 11), s.holes(1, 11));
        let other = HoleScenario::new(&s.cfg, 8);
        assert!((0..64).any(|r| s.holes(1, r) != other.holes(1, r)));
    }
}
