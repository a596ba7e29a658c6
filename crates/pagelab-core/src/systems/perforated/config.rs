//! `os.perforated` (the system's hardware variant and the paper's creation
//! rule) and `os.holes` (the fragmentation scenario of the paper's
//! evaluation, `phys::holes`, whose table the `holes` system owns).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};

pub use crate::phys::holes::{Distribution, HoleKind, HolesConfig};

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
    fn check_keys(&self, prefix: &str) -> Result<()> {
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

impl SystemTable for PerforatedConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix)
    }
}

impl SystemTable for HolesConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix)
    }
}
