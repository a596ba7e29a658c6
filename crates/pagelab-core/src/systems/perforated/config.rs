//! `os.perforated` (the system's hardware variant and the paper's creation
//! rule) and `os.holes` (the fragmentation scenario of the paper's
//! evaluation: which 2 MiB regions hold holes, how many, where, and of
//! which kind).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How hole bitmaps reach the L2 TLB (`os.perforated.variant`; the
/// paper's Figure 3, top to bottom).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// A bitmap fetch loads all 16 entries of the page (one 64-byte line,
    /// one memory reference); no filter.
    Naive,
    /// A fetch loads the one 32-bit entry needed; no filter.
    OnDemand,
    /// On demand, and the 8-bit filter of the perforated entry answers
    /// for 256 KiB regions without holes (the paper's design).
    OnDemandFilter,
}

impl Variant {
    pub fn has_filter(self) -> bool {
        self == Variant::OnDemandFilter
    }
    /// Its code in the page table's record (the hardware reads it there).
    pub fn code(self) -> u64 {
        self as u64
    }
    pub fn from_code(code: u64) -> Variant {
        match code {
            0 => Variant::Naive,
            1 => Variant::OnDemand,
            _ => Variant::OnDemandFilter,
        }
    }
}

/// Perforated pages (`os.policy = "perforated"`): THP, and where a 2 MiB
/// region cannot be a huge page, a perforated page when the paper's rule
/// (III-C) allows it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PerforatedConfig {
    pub variant: Variant,
    /// A region becomes a perforated page only when strictly less than
    /// this share of its 4 KiB pages are holes (unmovable frames).
    pub max_unmovable: f64,
    /// ... and at most this many of its 8 filter bits (256 KiB regions
    /// with holes) are set.
    pub max_filter_bits: u32,
}

impl Default for PerforatedConfig {
    fn default() -> Self {
        PerforatedConfig { variant: Variant::OnDemandFilter, max_unmovable: 0.25, max_filter_bits: 4 }
    }
}

impl PerforatedConfig {
    pub fn validate(&self, prefix: &str) -> Result<()> {
        if !(self.max_unmovable > 0.0 && self.max_unmovable <= 1.0) {
            let key = format!("{prefix}.perforated.max_unmovable");
            return Err(Error::config(key, format!("{} is not in (0, 1]", self.max_unmovable)));
        }
        if self.max_filter_bits > 8 {
            let key = format!("{prefix}.perforated.max_filter_bits");
            return Err(Error::config(
                key,
                format!("{}: must be from 0 to 8 (the filter's bits)", self.max_filter_bits),
            ));
        }
        Ok(())
    }
}

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
    pub fn validate(&self, prefix: &str) -> Result<()> {
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
