//! HawkEye's khugepaged (`khugepaged_promote_mm` and `ohp_scan_mm` in the
//! artifact's `mm/khugepaged.c`, `promotion_metric = 2`: the global
//! round-robin policy, HawkEye-G's): every `os.thp.scan_sleep_ms` it takes
//! candidates from the highest non-empty bin down to bin 1, one process
//! after another (the process served goes to the back of the list), and
//! collapses each with khugepaged's collapse (`thp::collapse_pmd`: its
//! `max_ptes_none`, copies and shootdown), until `os.thp.pages_to_scan`
//! pages are promoted (512 a region) or 100 failures are counted: a
//! collapse that fails counts 1 (100 when no order-9 block is free,
//! ending the wake-up) and its region goes back to bin 0's tail. Linux's
//! own khugepaged scan does not run (`hwk_fallback = 0`).

use super::bins::{Candidate, BINS};
use super::{lock, CandidateTable, SharedCandidates};
use crate::os::{Daemon, Kernel};
use crate::stat::{put_ints, Stat, Stats};
use crate::systems::thp::{collapse_pmd, ScanResult, ThpConfig};
use crate::units::Asid;

/// `ohp_scan_mm`'s bound on failures per wake-up.
const MAX_FAILED: u32 = 100;
/// What a failed huge-page allocation counts (`failed += 100`).
const ALLOC_FAILED: u32 = 100;
const REGION_PAGES: u32 = 512;

#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub promotions: u64,
    /// Collapses that found no free order-9 block (`OHP_PROMOTE_FAILED`).
    pub promote_failed: u64,
    pub wakeups: u64,
    /// Copy cycles on the daemon's own core (not charged to workloads).
    pub cpu_cycles: f64,
}

impl Counters {
    pub fn report(&self, out: &mut Stats) {
        let ints =
            [("promotions", self.promotions), ("promote_failed", self.promote_failed), ("wakeups", self.wakeups)];
        put_ints(out, "hawkeye.", &ints);
        out.insert("hawkeye.cpu_cycles".into(), Stat::Float(self.cpu_cycles));
    }
}

#[derive(Debug)]
pub struct HawkeyeKhugepaged {
    candidates: SharedCandidates,
    clock: crate::os::WakeClock,
    pages_to_scan: u32,
    max_ptes_none: u32,
    counters: Counters,
}

impl HawkeyeKhugepaged {
    pub fn new(candidates: SharedCandidates, thp: &ThpConfig, freq_ghz: f64) -> Self {
        HawkeyeKhugepaged {
            candidates,
            clock: crate::os::WakeClock::every_ms(thp.scan_sleep_ms, freq_ghz),
            pages_to_scan: thp.pages_to_scan,
            max_ptes_none: thp.max_ptes_none,
            counters: Counters::default(),
        }
    }

    /// One wake-up (`ohp_scan_mm` under `promotion_metric = 2`).
    fn promote(&mut self, k: &mut Kernel) {
        let (mut progress, mut failed) = (0, 0);
        while progress < self.pages_to_scan && failed < MAX_FAILED {
            let Some((asid, c)) = next_global(&mut lock(&self.candidates)) else {
                return;
            };
            let inside = k.proc(asid).aspace.find_vma(c.base).is_some_and(|v| v.covers(c.base, 2 << 20));
            let result = if inside {
                let (result, cycles) = collapse_pmd(k, asid, c.base, self.max_ptes_none);
                self.counters.cpu_cycles += cycles;
                result
            } else {
                ScanResult::PmdNull
            };
            match result {
                ScanResult::Succeed => {
                    progress += REGION_PAGES;
                    self.counters.promotions += 1;
                    continue;
                }
                ScanResult::AllocHugePageFail => {
                    failed += ALLOC_FAILED;
                    self.counters.promote_failed += 1;
                }
                _ => failed += 1,
            }
            put_back(&mut lock(&self.candidates), asid, c);
        }
    }
}

/// `get_ohp_global_kaddr`: the first candidate of the highest non-empty
/// bin above 0, over the processes in list order; the process served
/// moves to the list's tail.
pub fn next_global(table: &mut CandidateTable) -> Option<(Asid, Candidate)> {
    for bin in (1..BINS).rev() {
        for i in 0..table.order.len() {
            let asid = table.order[i];
            let Some(c) = table.by_asid.get_mut(&asid).and_then(|b| b.pop(bin)) else {
                continue;
            };
            table.order.remove(i);
            table.order.push(asid);
            return Some((asid, c));
        }
    }
    None
}

fn put_back(table: &mut CandidateTable, asid: Asid, c: Candidate) {
    table.by_asid.entry(asid).or_default().put_back(c);
}

impl Daemon for HawkeyeKhugepaged {
    fn name(&self) -> &'static str {
        "hawkeye-khugepaged"
    }

    fn run_due(&mut self, k: &mut Kernel, now: f64) {
        while self.clock.due(now) {
            self.counters.wakeups += 1;
            self.promote(k);
        }
    }

    fn report(&self, out: &mut Stats) {
        self.counters.report(out);
    }

    fn reset_stats(&mut self) {
        self.counters = Counters::default();
    }
}
