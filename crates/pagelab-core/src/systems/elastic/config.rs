//! `os.elastic`: Elastic Translations' keys.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};
use crate::units::ByteSize;

/// Where Leshy's size hints come from (`os.elastic.leshy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeshyMode {
    /// Every `leshy_epoch_ms` Leshy re-runs over the TLB-miss samples of
    /// the last `leshy_epochs` epochs and CoalaKhugepaged promotes what it
    /// hints; faults stay greedy (the artifact's "ET": `bin/epochs.sh`
    /// with `fault_hints` off).
    Online,
    /// Hints from a profiling run (`os.elastic.hints`), applied at fault
    /// time and by CoalaKhugepaged (the artifact's "ET-offline").
    Offline,
    /// As `Online`, with hints from access-bit tracking (the accessed
    /// bits read and cleared every epoch) instead of TLB-miss samples:
    /// the paper's comparison of the two sources.
    AccessBit,
    /// No hints: CoalaPaging and the contiguous bit alone, the VMA-size
    /// threshold choosing 64 KiB or 32 MiB contiguity (greedy ET).
    Off,
}

/// `os.elastic.hints`: a file of ranges (the artifact's hint files, one
/// `0xSTART-0xEND` per line), or the ranges themselves as a list.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum HintSource {
    File(String),
    Ranges(Vec<String>),
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
    /// Offline Leshy's hints (required when `leshy = "offline"`).
    pub hints: Option<HintSource>,
    /// CoalaKhugepaged promotes hinted regions (the artifact's
    /// `coalapaging.khugepaged`); it wakes and scans as khugepaged does,
    /// by `os.thp.scan_sleep_ms` and `os.thp.pages_to_scan`.
    pub khugepaged: bool,
    /// CoalaKhugepaged also promotes, with no hints, every 32 MiB-aligned
    /// range of each VMA of at least `vma_threshold_32m` (the artifact's
    /// `khuge_etheap_async`: its virtualized runs' host, "greedy ET with
    /// asynchronous 32 MiB promotion"). Works with `leshy = "off"`.
    pub greedy_32m: bool,
    /// One L2 TLB miss in this many is sampled (the artifact's `perf record
    /// -c 1024` of SPE).
    pub leshy_sample_period: u64,
    /// The TLB entries the placement may spend (the artifact's TLBSIZE:
    /// 1280, the N1's L2 TLB; its online runs used 70% of it). Unset: the
    /// machine's L2 TLB entries (`machine.tlb.l2_entries`), filled in when
    /// the configuration is read (`SimConfig::fill_machine_defaults`).
    pub leshy_budget: Option<u32>,
    /// The share of sampled misses the hints must cover (the artifact's
    /// target 100000 of 100000: all of them).
    pub leshy_coverage: f64,
    /// Online Leshy's epoch (the artifact's `epochs.sh` interval: 5 s).
    pub leshy_epoch_ms: f64,
    /// How many epochs' samples each run of online Leshy merges
    /// (`epochs.sh` concatenates the current and the previous one).
    pub leshy_epochs: u32,
    /// A file that Leshy's placement over the whole run's observations is
    /// written to when the run ends (`online` or `access-bit`), in the
    /// artifact's format, for `leshy = "offline"` to read: the profiling
    /// run of the artifact's "ET-offline".
    pub leshy_hints_out: Option<String>,
}

impl ElasticConfig {
    /// Leshy's budget: the key, or else the N1's L2 TLB (1280 entries),
    /// for a configuration built without `SimConfig::fill_machine_defaults`.
    pub fn budget(&self) -> usize {
        self.leshy_budget.unwrap_or(1280) as usize
    }
}

impl Default for ElasticConfig {
    fn default() -> Self {
        ElasticConfig {
            leshy: LeshyMode::Online,
            vma_threshold_32m: ByteSize(32 << 20),
            hints: None,
            khugepaged: true,
            greedy_32m: false,
            leshy_sample_period: 1024,
            leshy_budget: None,
            leshy_coverage: 1.0,
            leshy_epoch_ms: 5000.0,
            leshy_epochs: 2,
            leshy_hints_out: None,
        }
    }
}

impl ElasticConfig {
    /// Checks every key. `used`: `elastic` is in the chain (the modes'
    /// requirements apply only then).
    fn check_keys(&self, prefix: &str, used: bool) -> Result<()> {
        let key = |name: &str| format!("{prefix}.elastic.{name}");
        if used && self.leshy == LeshyMode::Offline && self.hints.is_none() {
            return Err(Error::config(
                key("hints"),
                "offline Leshy needs hints: a file, or a list of \"0xSTART-0xEND\"",
            ));
        }
        let profiling = matches!(self.leshy, LeshyMode::Online | LeshyMode::AccessBit);
        if used && self.leshy_hints_out.is_some() && !profiling {
            return Err(Error::config(
                key("leshy_hints_out"),
                "only a run that profiles writes hints: needs leshy = \"online\" or \"access-bit\"",
            ));
        }
        if self.leshy_hints_out.as_deref() == Some("") {
            return Err(Error::config(key("leshy_hints_out"), "an empty file name"));
        }
        if let Some(HintSource::Ranges(ranges)) = &self.hints {
            super::hints::Hints::parse(ranges.iter().map(String::as_str), &key("hints"))?;
        }
        if used && self.greedy_32m && !self.khugepaged {
            return Err(Error::config(
                key("greedy_32m"),
                "greedy promotion is CoalaKhugepaged's: needs khugepaged = true",
            ));
        }
        if self.vma_threshold_32m.bytes() < 2 << 20 {
            return Err(Error::config(key("vma_threshold_32m"), "must be at least 2MiB"));
        }
        if self.leshy_sample_period == 0 {
            return Err(Error::config(key("leshy_sample_period"), "must be at least 1"));
        }
        if self.leshy_budget == Some(0) {
            return Err(Error::config(key("leshy_budget"), "must be at least 1"));
        }
        if !(self.leshy_coverage > 0.0 && self.leshy_coverage <= 1.0) {
            return Err(Error::config(key("leshy_coverage"), "must be in (0, 1]"));
        }
        if !(self.leshy_epoch_ms > 0.0 && self.leshy_epoch_ms.is_finite()) {
            return Err(Error::config(key("leshy_epoch_ms"), "must be a finite number of milliseconds above 0"));
        }
        if self.leshy_epochs == 0 {
            return Err(Error::config(key("leshy_epochs"), "must be at least 1"));
        }
        Ok(())
    }
}

impl SystemTable for ElasticConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix, check.in_chain)
    }

    fn fill_machine_defaults(&mut self, l2_tlb_entries: u32) {
        self.leshy_budget.get_or_insert(l2_tlb_entries);
    }

    fn input_files(&self) -> Vec<std::path::PathBuf> {
        match &self.hints {
            Some(HintSource::File(f)) => vec![f.into()],
            _ => Vec::new(),
        }
    }
}
