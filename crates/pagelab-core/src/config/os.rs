//! The `os` section: the paging policy and its knobs, fragmentation, costs.

use serde::{Deserialize, Serialize};

use super::MachineConfig;
use crate::error::{Error, Result};
use crate::units::ByteSize;

/// What backs a page fault (see `policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// 4 KiB pages only, from the buddy allocator.
    Base,
    /// Transparent huge pages at fault, plus khugepaged.
    Thp,
    /// A reserved pool of huge pages for chosen VMAs.
    Hugetlb,
    /// PALLOC-style page coloring of 4 KiB pages.
    Coloring,
    /// Consecutive faults get consecutive colors (Kessler and Hill).
    BinHopping,
    /// Colored Huge Pages: 2 MiB regions backed by strided colored
    /// sub-mappings (and the Scattered Superpages and SWAP baselines).
    Chp,
}

impl PolicyKind {
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Base => "base",
            PolicyKind::Thp => "thp",
            PolicyKind::Hugetlb => "hugetlb",
            PolicyKind::Coloring => "coloring",
            PolicyKind::BinHopping => "bin-hopping",
            PolicyKind::Chp => "chp",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct OsConfig {
    pub policy: PolicyKind,
    /// Create VMAs around touched addresses when the workload emits no
    /// mapping events: "auto" (on only then, or when its events are
    /// partial: `Workload::partial_mappings`), "on", "off".
    pub auto_vma: AutoVma,
    pub fragmentation: FragmentationConfig,
    pub thp: ThpConfig,
    pub hugetlb: HugetlbConfig,
    pub coloring: ColoringConfig,
    pub chp: ChpConfig,
    pub fault_cost: FaultCosts,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            policy: PolicyKind::Base,
            auto_vma: AutoVma::Auto,
            fragmentation: FragmentationConfig::default(),
            thp: ThpConfig::default(),
            hugetlb: HugetlbConfig::default(),
            coloring: ColoringConfig::default(),
            chp: ChpConfig::default(),
            fault_cost: FaultCosts::default(),
        }
    }
}

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

/// Unmovable pages placed before the workload starts, to reach a target F_i
/// (the fraction of memory that free 2 MiB blocks cannot back).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FragmentationConfig {
    pub target: f64,
    pub pattern: FragPattern,
    /// Unmovable 4 KiB frames pinned in each fragmented pageblock.
    pub holes: u32,
    /// A real machine's state saved by `pagelab frag capture`: the
    /// simulated machine starts with the same free blocks per order and
    /// migratetype, scaled to its size (instead of `target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

impl Default for FragmentationConfig {
    fn default() -> Self {
        FragmentationConfig { target: 0.0, pattern: FragPattern::Dispersed, holes: 1, snapshot: None }
    }
}

/// Linux's THP knobs (/sys/kernel/mm/transparent_hugepage).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpConfig {
    /// Run khugepaged.
    pub khugepaged: bool,
    /// khugepaged/scan_sleep_millisecs (Linux default 10000).
    pub scan_sleep_ms: f64,
    /// khugepaged/pages_to_scan: PTEs examined per wake-up (Linux 4096).
    pub pages_to_scan: u32,
    /// khugepaged/max_ptes_none: empty PTEs a range may have and still be
    /// collapsed (Linux 511: collapse even a range with one present page).
    pub max_ptes_none: u32,
    /// Allocate huge pages at fault time (enabled=always); false models
    /// enabled=madvise with no madvise: only khugepaged makes huge pages.
    pub fault: bool,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig { khugepaged: true, scan_sleep_ms: 10_000.0, pages_to_scan: 4096, max_ptes_none: 511, fault: true }
    }
}

/// hugetlbfs: a pool of huge pages reserved from the buddy allocator.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbConfig {
    /// "2MiB" or "1GiB".
    pub size: ByteSize,
    /// Bytes reserved at boot, before fragmentation is injected (like
    /// hugepages= on the kernel command line). "0" reserves at mmap time,
    /// best effort, as much of the VMA as can be had.
    pub pool: ByteSize,
    /// Names of the VMAs backed from the pool; empty = every anonymous VMA
    /// at least one huge page long.
    pub vmas: Vec<String>,
}

impl Default for HugetlbConfig {
    fn default() -> Self {
        HugetlbConfig { size: ByteSize(2 << 20), pool: ByteSize(0), vmas: Vec::new() }
    }
}

/// PALLOC-style coloring.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ColoringConfig {
    /// Physical-address bits whose concatenation is a page's color (PALLOC's
    /// mask). Empty = `machine.color_bits`.
    pub bits: Vec<u32>,
}

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
}

impl Default for ChpConfig {
    fn default() -> Self {
        ChpConfig { scheme: ChpScheme::Chp, submappings: None, min_vma: ByteSize(2 << 20) }
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

    fn validate(&self, prefix: &str) -> Result<()> {
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

impl OsConfig {
    pub fn validate(&self, prefix: &str, machine: &MachineConfig) -> Result<()> {
        let f = &self.fragmentation;
        if !(0.0..=0.999).contains(&f.target) {
            return Err(Error::config(format!("{prefix}.fragmentation.target"), "must be in [0, 0.999]"));
        }
        if f.snapshot.is_some() && f.target > 0.0 {
            return Err(Error::config(format!("{prefix}.fragmentation.snapshot"), "give either a snapshot or a target, not both"));
        }
        if f.holes == 0 || f.holes > 512 {
            return Err(Error::config(format!("{prefix}.fragmentation.holes"), "must be between 1 and 512"));
        }
        let t = &self.thp;
        if t.max_ptes_none > 511 {
            return Err(Error::config(format!("{prefix}.thp.max_ptes_none"), "must be at most 511"));
        }
        if t.scan_sleep_ms.is_nan() || t.scan_sleep_ms < 0.0 || t.pages_to_scan == 0 {
            return Err(Error::config(format!("{prefix}.thp.pages_to_scan"), "must be positive"));
        }
        let h = &self.hugetlb;
        if h.size.bytes() != 2 << 20 && h.size.bytes() != 1 << 30 {
            return Err(Error::config(format!("{prefix}.hugetlb.size"), "must be \"2MiB\" or \"1GiB\""));
        }
        if h.size.bytes() == 1 << 30 && machine.max_order < 18 && h.pool.bytes() > 0 {
            // A boot-time 1 GiB pool comes from the buddy allocator, which
            // only has 1 GiB blocks with max_order 18.
            return Err(Error::config(format!("{prefix}.hugetlb.size"), "1GiB pages need machine.max_order = 18"));
        }
        if !h.pool.bytes().is_multiple_of(h.size.bytes()) || h.pool.bytes() > machine.phys_mem.bytes() {
            return Err(Error::config(format!("{prefix}.hugetlb.pool"), "must be a multiple of hugetlb.size within phys_mem"));
        }
        self.chp.validate(prefix)?;
        let c = &self.fault_cost;
        for (k, v) in [
            ("base", c.base), ("colored", c.colored), ("thp", c.thp), ("hugetlb_2m", c.hugetlb_2m),
            ("hugetlb_1g", c.hugetlb_1g), ("shootdown", c.shootdown), ("copy_4k", c.copy_4k), ("split", c.split),
            ("chp", c.chp),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::config(format!("{prefix}.fault_cost.{k}"), "must be a non-negative number of cycles"));
            }
        }
        Ok(())
    }
}
