//! Leshy online: every `os.elastic.leshy_epoch_ms` of simulated time it
//! reads the TLB-miss samples the cores took (the kernel's SPE buffer),
//! runs the placement ([`super::placement`]) over the samples of the last
//! `os.elastic.leshy_epochs` epochs of each process, and loads the result
//! as that process's hints, which CoalaKhugepaged then promotes.
//!
//! Followed from the artifact's `bin/epochs.sh`: each epoch's samples are
//! merged with the previous epoch's (`cat` of the two dumps: plain counts,
//! no decay); the hints skip 4 KiB regions and stop once their pages
//! exceed what khugepaged can collapse in an epoch, `12 x pages_to_scan x
//! epoch / scan_sleep` (the script's `nrpages`); hints equal to the
//! previous epoch's are not reloaded (CoalaKhugepaged's marks survive);
//! other hints replace the process's old ones, all marked again (the
//! script's `echo 1 > /proc/PID/coala_hints` then `prctl --khuge`).

use std::collections::{BTreeMap, VecDeque};

use super::hints::{lock, Hints, SharedHints};
use super::placement::{place, roll_up, Region, Size};
use crate::hw::tlb::MissSample;
use crate::os::{Daemon, Kernel};
use crate::units::Asid;

#[derive(Debug)]
pub struct Leshy {
    hints: SharedHints,
    period: f64,
    next_epoch: f64,
    /// The samples of the last epochs, oldest first.
    epochs: VecDeque<Vec<MissSample>>,
    keep: usize,
    budget: usize,
    coverage: f64,
    /// Pages of hints loaded per epoch at most.
    max_pages: u64,
}

/// Leshy's settings (from `os.elastic` and khugepaged's `os.thp`).
#[derive(Debug, Clone, Copy)]
pub struct LeshySettings {
    pub epoch_ms: f64,
    pub epochs: usize,
    pub budget: usize,
    pub coverage: f64,
    pub pages_to_scan: u64,
    pub scan_sleep_ms: f64,
}

impl Leshy {
    pub fn new(hints: SharedHints, s: LeshySettings, freq_ghz: f64) -> Leshy {
        let period = s.epoch_ms * 1e6 * freq_ghz;
        let per_epoch = if s.scan_sleep_ms > 0.0 { s.epoch_ms / s.scan_sleep_ms } else { f64::INFINITY };
        let max_pages = (12.0 * s.pages_to_scan as f64 * per_epoch).min(u64::MAX as f64) as u64;
        Leshy {
            hints,
            period,
            next_epoch: period,
            epochs: VecDeque::new(),
            keep: s.epochs,
            budget: s.budget,
            coverage: s.coverage,
            max_pages,
        }
    }

    /// The end of an epoch: this epoch's samples in, new hints out.
    pub fn end_epoch(&mut self, samples: Vec<MissSample>) {
        self.epochs.push_back(samples);
        while self.epochs.len() > self.keep {
            self.epochs.pop_front();
        }
        let mut by_asid: BTreeMap<Asid, Vec<(u64, u64)>> = BTreeMap::new();
        for s in self.epochs.iter().flatten() {
            by_asid.entry(s.asid).or_default().push((s.vaddr.raw(), s.walk_refs as u64));
        }
        let mut table = lock(&self.hints);
        for (asid, samples) in by_asid {
            let regions = place(&roll_up(samples), self.budget, self.coverage);
            let hints = Hints::from_regions(&capped(&regions, self.max_pages));
            if hints.is_empty() {
                continue;
            }
            let old = table.by_asid.get(&asid);
            if old.is_some_and(|old| old.regions().eq(hints.regions())) {
                continue;
            }
            table.by_asid.insert(asid, hints);
        }
    }
}

/// The regions, 4 KiB ones skipped, until their pages exceed `max_pages`.
fn capped(regions: &[Region], max_pages: u64) -> Vec<Region> {
    let mut pages = 0;
    regions
        .iter()
        .filter(|r| r.size != Size::Size4K)
        .take_while(|r| {
            pages += r.size.bytes() >> 12;
            pages <= max_pages
        })
        .copied()
        .collect()
}

impl Daemon for Leshy {
    fn name(&self) -> &'static str {
        "leshy"
    }

    fn run_due(&mut self, k: &mut Kernel, now: f64) {
        while now >= self.next_epoch {
            self.end_epoch(k.miss_samples.drain());
            self.next_epoch = if self.period > 0.0 { self.next_epoch + self.period } else { now + 1.0 };
        }
    }
}
