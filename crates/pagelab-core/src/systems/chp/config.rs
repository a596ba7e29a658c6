//! `os.chp`: the layout of colored huge pages.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};
use crate::units::ByteSize;

/// How a colored huge page is laid out (`os.chp.scheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChpScheme {
    /// The paper's design: independent sub-mappings, colors round-robin
    /// per sub-mapping.
    Chp,
    /// Scattered Superpages (Chen et al.): one sub-mapping over a strictly
    /// contiguous run of huge pages (the CHP paper's 1-sub-mapping case).
    Scattered,
    /// SWAP (Cui et al.), as the CHP paper emulates it: every sub-mapping of
    /// a 2 MiB page has the same color; colors round-robin per 2 MiB page.
    Swap,
}

/// Colored Huge Pages (`os.policy = "chp"`). Sizes follow from the number
/// of system colors n (`os.coloring.bits`, else `machine.color_bits`): a
/// sub-mapping of p pages is carved from a block of p x n pages.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChpConfig {
    pub scheme: ChpScheme,
    /// Sub-mappings per 2 MiB page: 1, 2, 4 or 8. Unset = 8, or 1 for
    /// `scattered` (which accepts no other value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submappings: Option<u32>,
    /// Only VMAs at least this long get colored huge pages ("large
    /// anonymous VMAs"); smaller ones get 4 KiB coloring.
    pub min_vma: ByteSize,
    /// Whether a carved block's strided mappings of colors the faulting
    /// process may not use are offered to the kernel's color pool, where
    /// 4 KiB coloring (other processes, CHP's fallback) takes them, as the
    /// paper's prototype shares memory with PALLOC. Off, they wait in the
    /// allocator cache for a process allowed their color (pagelab's
    /// behaviour before this key, so results measured then stay). Not
    /// written when off, so configurations of before serialize as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub share_leftovers: bool,
}

impl Default for ChpConfig {
    fn default() -> Self {
        ChpConfig { scheme: ChpScheme::Chp, submappings: None, min_vma: ByteSize(2 << 20), share_leftovers: false }
    }
}

impl ChpConfig {
    /// The number of sub-mappings this configuration means.
    pub fn nr_submappings(&self) -> u32 {
        match (self.scheme, self.submappings) {
            (ChpScheme::Scattered, _) => 1,
            (_, Some(n)) => n,
            (_, None) => 8,
        }
    }

    fn check_keys(&self, prefix: &str) -> Result<()> {
        let key = format!("{prefix}.chp.submappings");
        match (self.scheme, self.submappings) {
            (ChpScheme::Scattered, Some(n)) if n != 1 => {
                Err(Error::config(key, "scheme \"scattered\" is one sub-mapping per huge page; leave it unset or 1"))
            }
            (_, Some(n)) if ![1, 2, 4, 8].contains(&n) => Err(Error::config(key, format!("{n} is not 1, 2, 4 or 8"))),
            _ => Ok(()),
        }
    }
}

impl SystemTable for ChpConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix)
    }
}
