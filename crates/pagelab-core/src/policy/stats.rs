//! The OS side's counters. Outcomes of policy decisions are named, as
//! khugepaged's scan_result values are in Linux, so a statistic tells why
//! something did not happen.

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct OsStats {
    /// Faults by what they installed (index: `FaultKind as usize`).
    pub faults_by_kind: [u64; 5],
    /// THP fault-time allocations that fell back to 4 KiB.
    pub thp_fault_fallback: u64,
    pub hugetlb_fallback: u64,
    pub coloring_refills: u64,
    pub coloring_fallback: u64,
    pub splits: u64,
    pub shootdowns: u64,
    pub pages_copied: u64,
    /// khugepaged outcomes by name (scan_result).
    pub khugepaged: BTreeMap<&'static str, u64>,
    pub khugepaged_wakeups: u64,
    /// CPU time khugepaged spent on its own core (not charged to workloads).
    pub khugepaged_cycles: f64,
    pub compaction_runs: u64,
    pub compaction_migrated: u64,
    pub compaction_failed: u64,
    pub auto_vmas: u64,
    /// Automatic VMAs created where a munmap had unmapped.
    pub auto_vmas_after_munmap: u64,
}

impl OsStats {
    pub fn reset(&mut self) {
        *self = OsStats::default();
    }
}
