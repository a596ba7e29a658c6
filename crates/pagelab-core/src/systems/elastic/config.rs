//! `os.elastic`: Elastic Translations' keys.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::units::ByteSize;

/// Where Leshy's size hints come from (`os.elastic.leshy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeshyMode {
    /// Re-run every epoch over the last epochs' TLB-miss samples (the
    /// artifact's "ET"). Not built yet.
    Online,
    /// Hints from a profiling run, applied at fault time (`os.elastic.hints`;
    /// the artifact's "ET-offline"). Not built yet.
    Offline,
    /// Hints from access-bit tracking instead of TLB-miss samples. Not
    /// built yet.
    AccessBit,
    /// No hints: CoalaPaging and the contiguous bit alone, the VMA-size
    /// threshold choosing 64 KiB or 32 MiB contiguity (greedy ET).
    Off,
}

/// Elastic Translations (`os.policy = "elastic"`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ElasticConfig {
    pub leshy: LeshyMode,
    /// VMAs at least this long get 32 MiB contiguity (2 MiB pages placed by
    /// CoalaPaging over 16 PMDs); smaller ones 64 KiB (4 KiB pages over 16
    /// PTEs). The artifact's scripts do not state the kernel's value; 32 MiB
    /// is the smallest VMA that can hold one 32 MiB translation.
    pub vma_threshold_32m: ByteSize,
}

impl Default for ElasticConfig {
    fn default() -> Self {
        ElasticConfig { leshy: LeshyMode::Online, vma_threshold_32m: ByteSize(32 << 20) }
    }
}

impl ElasticConfig {
    /// Checks every key. `used`: `elastic` is in the chain (Leshy's modes
    /// that are not built are refused only then).
    pub fn validate(&self, prefix: &str, used: bool) -> Result<()> {
        if used && self.leshy != LeshyMode::Off {
            return Err(Error::config(
                format!("{prefix}.elastic.leshy"),
                "Leshy (online, offline, access-bit) is not built yet; set \"off\" (CoalaPaging and the contiguous bit)",
            ));
        }
        if self.vma_threshold_32m.bytes() < 2 << 20 {
            return Err(Error::config(format!("{prefix}.elastic.vma_threshold_32m"), "must be at least 2MiB"));
        }
        Ok(())
    }
}
