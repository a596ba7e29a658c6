//! The kernel's own configuration: when VMAs are made around touches, the
//! fragmentation the machine boots with, and what OS work costs. The
//! systems' tables (`os.thp`, `os.chp`...) sit beside each system; the
//! `os` table that assembles them is `systems::OsConfig`.
//!
//! The cost names of systems (`chp`, `thp`, `hugetlb_2m`...) are kept here,
//! in one table, for compatibility with existing configurations.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::units::ByteSize;

/// When the OS creates VMAs around touched addresses (for traces without
/// mapping events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AutoVma {
    /// Only while the workload has emitted no mapping event, unless its
    /// events are partial (a captured program): then always.
    Auto,
    /// Always, also beside mapping events.
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FragPattern {
    Dispersed,
    Clustered,
}

/// Which pageblocks hold the unmovable frames (see `phys::fragmentation::Placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FragPlacement {
    #[default]
    Random,
    Clustered,
}

/// Unmovable pages placed before the workload starts, to reach a target F_i
/// (the fraction of memory that free 2 MiB blocks cannot back).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FragmentationConfig {
    pub target: f64,
    pub pattern: FragPattern,
    /// Where the fragmented pageblocks (of `target`), or a snapshot's
    /// Unmovable and Reclaimable ones, sit: at random or in one run.
    pub placement: FragPlacement,
    /// Unmovable 4 KiB frames pinned in each fragmented pageblock.
    pub holes: u32,
    /// A real machine's state saved by `pagelab frag capture`: the
    /// simulated machine starts with the same free blocks per order and
    /// migratetype, scaled to its size (instead of `target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// A target FMFI (the unusable free space index at order 9) in [0, 1),
    /// reached as the Elastic Translations artifact's frag.sh and memfrag
    /// reach it (`phys::fragmentation::memfrag`), scaled to the
    /// workloads' footprint; 0 leaves memory alone (instead of `target`).
    #[serde(skip_serializing_if = "is_zero")]
    pub fmfi: f64,
    /// What memfrag leaves unfilled (frag.sh's `FRAG_SLACK`, 1 GiB): free
    /// memory that stays in large blocks beside the released chunks.
    #[serde(skip_serializing_if = "is_default_slack")]
    pub fmfi_slack: ByteSize,
}

/// frag.sh's `FRAG_SLACK`.
const DEFAULT_FMFI_SLACK: ByteSize = ByteSize(1 << 30);

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_default_slack(slack: &ByteSize) -> bool {
    *slack == DEFAULT_FMFI_SLACK
}

impl Default for FragmentationConfig {
    fn default() -> Self {
        FragmentationConfig {
            target: 0.0,
            pattern: FragPattern::Dispersed,
            placement: FragPlacement::Random,
            holes: 1,
            snapshot: None,
            fmfi: 0.0,
            fmfi_slack: DEFAULT_FMFI_SLACK,
        }
    }
}

impl FragmentationConfig {
    pub fn validate(&self, prefix: &str) -> Result<()> {
        if !(0.0..=0.999).contains(&self.target) {
            return Err(Error::config(format!("{prefix}.fragmentation.target"), "must be in [0, 0.999]"));
        }
        if self.snapshot.is_some() && self.target > 0.0 {
            return Err(Error::config(
                format!("{prefix}.fragmentation.snapshot"),
                "give either a snapshot or a target, not both",
            ));
        }
        if !(0.0..1.0).contains(&self.fmfi) {
            return Err(Error::config(format!("{prefix}.fragmentation.fmfi"), "must be in [0, 1)"));
        }
        if self.fmfi > 0.0 && (self.target > 0.0 || self.snapshot.is_some()) {
            return Err(Error::config(
                format!("{prefix}.fragmentation.fmfi"),
                "give one of fmfi, target and snapshot, not several",
            ));
        }
        if self.holes == 0 || self.holes > 512 {
            return Err(Error::config(format!("{prefix}.fragmentation.holes"), "must be between 1 and 512"));
        }
        Ok(())
    }
}

/// Cycles charged for OS work. Defaults are the Colored Huge Pages paper's
/// Table IV (bpftrace on an i7-10700 at 2.9 GHz): 4 KiB fault 0.53 us,
/// PALLOC 1.47 us, THP 2.02 us; the rest from Linux measurements cited in
/// the HugeScope paper (split 145 us, collapse 240 us) and Amit et al. for
/// shootdowns (a few microseconds with IPIs).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultCosts {
    pub base: f64,
    pub colored: f64,
    pub thp: f64,
    /// Faulting a page in from the hugetlb pool (Linux zeroes it at fault,
    /// like THP, so the same cost as a THP fault by default).
    pub hugetlb_2m: f64,
    /// A 1 GiB hugetlb fault: the THP cost scaled by 512.
    pub hugetlb_1g: f64,
    /// One TLB shootdown (IPI round trip and invalidation).
    pub shootdown: f64,
    /// Copying one 4 KiB page (collapse, compaction).
    pub copy_4k: f64,
    /// Splitting a huge PMD into a page table.
    pub split: f64,
    /// A colored-huge-page fault: the paper's Table IV, 160.7 us, for a
    /// prototype that installs all 512 PTEs one by one.
    pub chp: f64,
}

impl Default for FaultCosts {
    fn default() -> Self {
        FaultCosts {
            base: 1537.0,
            colored: 4263.0,
            thp: 5858.0,
            hugetlb_2m: 5858.0,
            hugetlb_1g: 3_000_000.0,
            shootdown: 6000.0,
            copy_4k: 1000.0,
            split: 20_000.0,
            chp: 466_030.0,
        }
    }
}

impl FaultCosts {
    /// Every cost is a number of cycles >= 0 (its key is its field's name,
    /// the fault kind or operation it costs).
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let costs = toml::Value::try_from(self).expect("costs are numbers");
        for (k, v) in costs.as_table().into_iter().flatten() {
            if !v.as_float().is_some_and(|v| v >= 0.0 && v.is_finite()) {
                return Err(Error::config(
                    format!("{prefix}.fault_cost.{k}"),
                    "must be a non-negative number of cycles",
                ));
            }
        }
        Ok(())
    }
}
