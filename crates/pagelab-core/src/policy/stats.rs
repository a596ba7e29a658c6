//! The OS side's counters. Outcomes of policy decisions are named, as
//! khugepaged's scan_result values are in Linux, so a statistic tells why
//! something did not happen.

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct OsStats {
    /// Faults by what they installed (index: `FaultKind as usize`).
    pub faults_by_kind: [u64; 6],
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
    /// Colored huge pages: 2 MiB regions tried, backed, fallen back to 4
    /// KiB coloring; sub-mappings served by the allocator cache; blocks
    /// taken from the buddy allocator; sub-mappings returned by munmap;
    /// colored huge pages demoted to 4 KiB by a partial munmap/mprotect.
    pub chp_attempts: u64,
    pub chp_success: u64,
    pub chp_fallback: u64,
    pub chp_cache_hits: u64,
    pub chp_blocks: u64,
    pub chp_returned: u64,
    pub chp_demoted: u64,
    /// Automatic VMAs created where a munmap had unmapped.
    pub auto_vmas_after_munmap: u64,
}

impl OsStats {
    pub fn reset(&mut self) {
        *self = OsStats::default();
    }
}
