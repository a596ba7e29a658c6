//! kbinmanager, HawkEye's access-bit sampler (`mm/hawkeye/ohp.c`), on the
//! simulated clock: it clears the accessed bits of every candidate
//! region's 4 KiB pages, waits `os.hawkeye.access_window_ms`, counts each
//! region's pages whose bit is set again (its access coverage in that
//! window), averages it into the region's weight and re-bins the region
//! ([`super::bins`]); then it sleeps `os.hawkeye.rescan_sleep_ms` and
//! starts over. The bits are cleared without a shootdown, as the kernel's
//! `pte_mkold` is (`AddressSpace::accessed_leaves`).
//!
//! One difference: the kernel samples one process per window, in turn;
//! here one window covers every process (the experiments run one).

use super::bins::Coverage;
use super::{lock, SharedCandidates};
use crate::os::{Daemon, Kernel};
use crate::stat::{put_ints, Stats};
use crate::units::{Asid, PageSize, VirtAddr};

const HPAGE: u64 = 2 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Clear the candidates' accessed bits, then wait a window.
    Clear,
    /// Count them, re-bin, then sleep.
    Count,
}

#[derive(Debug)]
pub struct Kbinmanager {
    candidates: SharedCandidates,
    window: f64,
    sleep: f64,
    next: f64,
    step: Step,
    /// Counting rounds, one per process counted (`mm->ohp.nr_scans`).
    scans: u64,
    /// Candidates dropped by a count (already huge, unmapped, or no longer
    /// inside one VMA: `ohp_nr_accessed` < 0).
    dropped: u64,
}

impl Kbinmanager {
    pub fn new(candidates: SharedCandidates, access_window_ms: f64, rescan_sleep_ms: f64, freq_ghz: f64) -> Self {
        let cycles = |ms: f64| ms * 1e6 * freq_ghz;
        Kbinmanager {
            candidates,
            window: cycles(access_window_ms),
            sleep: cycles(rescan_sleep_ms),
            next: 0.0,
            step: Step::Clear,
            scans: 0,
            dropped: 0,
        }
    }

    pub fn report_counters(scans: u64, dropped: u64, out: &mut Stats) {
        put_ints(out, "hawkeye.", &[("scans", scans), ("dropped", dropped)]);
    }

    fn clear(&self, k: &mut Kernel) {
        let table = lock(&self.candidates);
        for (&asid, bins) in &table.by_asid {
            for base in bins.regions() {
                if mapped_by_ptes(k, asid, base) {
                    k.proc_mut(asid).aspace.accessed_leaves(base, base.add(HPAGE), true);
                }
            }
        }
    }

    fn count(&mut self, k: &mut Kernel) {
        let mut table = lock(&self.candidates);
        for (&asid, bins) in table.by_asid.iter_mut() {
            self.dropped += bins.adjust(|base| coverage(k, asid, base));
            self.scans += 1;
        }
    }
}

/// Whether the region is inside one VMA and mapped through a page table
/// of PTEs (not a huge page, not empty): the regions whose bits
/// kbinmanager clears (`ohp_clear_pte_accessed_range`) and counts.
fn mapped_by_ptes(k: &Kernel, asid: Asid, base: VirtAddr) -> bool {
    let aspace = &k.proc(asid).aspace;
    aspace.find_vma(base).is_some_and(|v| v.covers(base, HPAGE))
        && aspace.pt.leaf_slot(base).is_some_and(|slot| slot.level == 1)
}

/// The region's accessed 4 KiB pages (`ohp_nr_accessed`): invalid when it
/// is not inside one VMA, has no page table or is a huge page already.
/// The bits are only read: the next round clears them.
fn coverage(k: &mut Kernel, asid: Asid, base: VirtAddr) -> Coverage {
    if !mapped_by_ptes(k, asid, base) {
        return Coverage::Invalid;
    }
    let leaves = k.proc_mut(asid).aspace.accessed_leaves(base, base.add(HPAGE), false);
    Coverage::Accessed(leaves.iter().filter(|(_, size)| *size == PageSize::Size4K).count() as u32)
}

impl Daemon for Kbinmanager {
    fn name(&self) -> &'static str {
        "kbinmanager"
    }

    fn run_due(&mut self, k: &mut Kernel, now: f64) {
        while now >= self.next {
            let wait = match self.step {
                Step::Clear => {
                    self.clear(k);
                    self.step = Step::Count;
                    self.window
                }
                Step::Count => {
                    self.count(k);
                    self.step = Step::Clear;
                    self.sleep
                }
            };
            // A zero sleep would loop forever at one instant: once per call.
            self.next = if wait > 0.0 { self.next + wait } else { now + 1.0 };
        }
    }

    fn report(&self, out: &mut Stats) {
        Self::report_counters(self.scans, self.dropped, out);
    }

    fn reset_stats(&mut self) {
        self.scans = 0;
        self.dropped = 0;
    }
}
