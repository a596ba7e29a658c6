//! Leshy online: every `os.elastic.leshy_epoch_ms` of simulated time it
//! reads the TLB-miss samples the cores took (the kernel's SPE buffer),
//! runs the placement ([`super::placement`]) over the samples of the last
//! `os.elastic.leshy_epochs` epochs of each process, and loads the result
//! as that process's hints, which CoalaKhugepaged then promotes.
//!
//! With `os.elastic.leshy = "access-bit"` the observations are access
//! bits instead, as the artifact's `idle` tool gathers them (etutils-rs
//! `src/idle.rs`, Linux's idle page tracking): at each epoch's end every
//! present page whose accessed bit is set counts one hit per 4 KiB page it
//! maps, and the bits are cleared (without a shootdown, as idle page
//! tracking clears them: a translation the TLB still holds sets no bit
//! until it is refetched). The placement then weighs pages by hits, as
//! the tool's access traces are weighed.
//!
//! Followed from the artifact's `bin/epochs.sh`: each epoch's samples are
//! merged with the previous epoch's (`cat` of the two dumps: plain counts,
//! no decay); the hints skip 4 KiB regions and stop once their pages
//! exceed what khugepaged can collapse in an epoch, `12 x pages_to_scan x
//! epoch / scan_sleep` (the script's `nrpages`); hints equal to the
//! previous epoch's are not reloaded (CoalaKhugepaged's marks survive);
//! other hints replace the process's old ones, all marked again (the
//! script's `echo 1 > /proc/PID/coala_hints` then `prctl --khuge`).
//!
//! With `os.elastic.leshy_hints_out` Leshy also keeps the whole run's
//! observations per 4 KiB page and, when the run ends, places them once
//! more under the same budget and coverage and writes the hints to that
//! file: the artifact's profiling run (`bin/sample.sh` records the whole
//! run, `bin/hints/generate_hints.sh` runs `leshy` over it), whose file
//! `os.elastic.leshy = "offline"` reads back.

use std::collections::{BTreeMap, VecDeque};

use super::hints::{lock, Hints, SharedHints};
use super::placement::{place, roll_up_counts, Region, Size};
use crate::error::Result;
use crate::os::{Daemon, Kernel};
use crate::units::{Asid, PageSize, VirtAddr};

/// What one epoch observed of a page: (address space, address, count,
/// latency sum).
type Observation = (Asid, u64, u64, u64);

/// The whole run's observations for the profile: (count, latency sum) by
/// (address space, 4 KiB page).
type Profile = BTreeMap<(Asid, u64), (u64, u64)>;

/// Where the observations come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Sampled L2 TLB misses (the kernel's SPE buffer).
    TlbMisses,
    /// Accessed bits, read and cleared every epoch.
    AccessBits,
}

#[derive(Debug)]
pub struct Leshy {
    hints: SharedHints,
    period: f64,
    next_epoch: f64,
    source: Source,
    /// The observations of the last epochs, oldest first.
    epochs: VecDeque<Vec<Observation>>,
    keep: usize,
    budget: usize,
    coverage: f64,
    /// Pages of hints loaded per epoch at most.
    max_pages: u64,
    /// Where the profile's hints go at the end of the run, if anywhere.
    hints_out: Option<String>,
    /// Kept only with `hints_out`.
    profile: Profile,
}

/// Leshy's settings (from `os.elastic` and khugepaged's `os.thp`).
#[derive(Debug, Clone)]
pub struct LeshySettings {
    pub source: Source,
    pub epoch_ms: f64,
    pub epochs: usize,
    pub budget: usize,
    pub coverage: f64,
    pub pages_to_scan: u64,
    pub scan_sleep_ms: f64,
    /// `os.elastic.leshy_hints_out`.
    pub hints_out: Option<String>,
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
            source: s.source,
            epochs: VecDeque::new(),
            keep: s.epochs,
            budget: s.budget,
            coverage: s.coverage,
            max_pages,
            hints_out: s.hints_out,
            profile: Profile::new(),
        }
    }

    /// Adds observations to the whole run's profile (when one is kept).
    fn record(&mut self, observed: &[Observation]) {
        if self.hints_out.is_none() {
            return;
        }
        for &(asid, addr, count, latency) in observed {
            let e = self.profile.entry((asid, addr & !4095)).or_default();
            e.0 += count;
            e.1 += latency;
        }
    }

    /// The placement over the whole run's observations, every process's
    /// in the order of their address spaces (the file has no process: an
    /// offline run gives its hints to every process; a range overlapping
    /// an earlier process's is left out).
    pub fn profile_hints(&self) -> Hints {
        let mut by_asid: BTreeMap<Asid, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for (&(asid, page), &(count, latency)) in &self.profile {
            by_asid.entry(asid).or_default().push((page, count, latency));
        }
        let mut all = Hints::default();
        for observed in by_asid.into_values() {
            for (base, size) in
                Hints::from_regions(&place(&roll_up_counts(observed), self.budget, self.coverage)).regions()
            {
                all.insert(base, size);
            }
        }
        all
    }

    /// The end of an epoch: this epoch's observations in, new hints out.
    pub fn end_epoch(&mut self, observed: Vec<Observation>) {
        self.record(&observed);
        self.epochs.push_back(observed);
        while self.epochs.len() > self.keep {
            self.epochs.pop_front();
        }
        let mut by_asid: BTreeMap<Asid, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for &(asid, addr, count, latency) in self.epochs.iter().flatten() {
            by_asid.entry(asid).or_default().push((addr, count, latency));
        }
        let mut table = lock(&self.hints);
        for (asid, observed) in by_asid {
            let regions = place(&roll_up_counts(observed), self.budget, self.coverage);
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

/// This epoch's observations from `source`.
fn observe(k: &mut Kernel, source: Source) -> Vec<Observation> {
    match source {
        Source::TlbMisses => {
            k.miss_samples.drain().into_iter().map(|s| (s.asid, s.vaddr.raw(), 1, s.walk_refs as u64)).collect()
        }
        Source::AccessBits => (1..=k.procs.len() as Asid).flat_map(|asid| scan_access_bits(k, asid)).collect(),
    }
}

/// One hit per 4 KiB page of every leaf of `asid` whose accessed bit is
/// set; the bits cleared.
pub(super) fn scan_access_bits(k: &mut Kernel, asid: Asid) -> Vec<Observation> {
    let aspace = &mut k.proc_mut(asid).aspace;
    let ranges: Vec<(u64, u64)> = aspace.vmas.iter().map(|v| (v.start.raw(), v.end.raw())).collect();
    let mut hits = Vec::new();
    for (start, end) in ranges {
        for (base, size) in aspace.accessed_leaves(VirtAddr::new(start), VirtAddr::new(end), true) {
            let pages = if size == PageSize::Size4K { 1 } else { size.nr_pages() };
            hits.extend((0..pages).map(|i| (asid, base.raw() + i * 4096, 1, 0)));
        }
    }
    hits
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
            let observed = observe(k, self.source);
            self.end_epoch(observed);
            self.next_epoch = if self.period > 0.0 { self.next_epoch + self.period } else { now + 1.0 };
        }
    }

    /// With `hints_out`: the observations since the last epoch join the
    /// profile, and its hints are written.
    fn finish(&mut self, k: &mut Kernel) -> Result<()> {
        let Some(path) = self.hints_out.clone() else {
            return Ok(());
        };
        let rest = observe(k, self.source);
        self.record(&rest);
        self.profile_hints().write_file(&path, "os.elastic.leshy_hints_out")
    }
}
