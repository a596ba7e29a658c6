//! `hawkeye`: HawkEye (Panwar, Bansal and Gopinath, "HawkEye: Efficient
//! Fine-grained OS Support for Huge Pages", ASPLOS 2019) as the Elastic
//! Translations artifact runs it (its port to Linux 5.18 in
//! cslab-ntua/et-linux, `mm/hawkeye/`, with `env/hwk.env`'s settings).
//!
//! - **At fault**, where THP would take a huge page (the 2 MiB range inside
//!   the VMA, nothing mapped there), the range becomes a promotion
//!   candidate (`ohp_enter`) and, with `os.hawkeye.fault` (`HWK_THP=1`),
//!   takes the huge page as THP's fault does; when no order-9 block is
//!   free the fault is declined (`base` backs it) and the candidate
//!   waits for promotion.
//! - **kbinmanager** ([`scan`]) samples the candidates' access bits and
//!   keeps each region's access coverage in bins ([`bins`]).
//! - **khugepaged** ([`khugepaged`]) promotes the most covered regions
//!   first, HawkEye-G's global round-robin over processes.
//!
//! Not built: asynchronous pre-zeroing and bloat recovery (see
//! docs/systems/hawkeye.md for why), HawkEye-PMU's per-process ordering
//! by measured TLB overhead (the artifact runs `promotion_metric = 2`).

pub mod bins;
mod config;
pub mod khugepaged;
pub mod scan;
#[cfg(test)]
mod tests;

pub use config::HawkeyeConfig;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::thp::{huge_fault_range, map_huge_at_fault};
use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::Asid;
use bins::Bins;

/// HawkEye's statistics (its huge faults count as `os.faults.thp`).
const STATS: &[StatTable] = &[StatTable {
    section: Section::Systems,
    stats: &[
        StatDecl::count(
            "hawkeye.candidates",
            "promotion candidates: 2 MiB ranges whose first fault was THP-eligible (inside the VMA, nothing \
             mapped; counted whether or not the fault took the huge page)",
        )
        .os(),
        StatDecl::count(
            "hawkeye.fault_fallback",
            "fault-time huge pages that found no free order-9 block (the fault then took 4 KiB from `base`)",
        )
        .os(),
        StatDecl::count(
            "hawkeye.scans",
            "kbinmanager's counts of a process's candidates' access bits (one per process per window, every \
             `os.hawkeye.access_window_ms` + `rescan_sleep_ms`)",
        )
        .os(),
        StatDecl::count(
            "hawkeye.dropped",
            "candidates a count dropped (a huge page already, no page table, or no longer inside one VMA)",
        )
        .os(),
        StatDecl::count("hawkeye.promotions", "its khugepaged's 2 MiB collapses, highest access coverage first").os(),
        StatDecl::count("hawkeye.promote_failed", "collapses that found no free order-9 block").os(),
        StatDecl::count("hawkeye.wakeups", "its khugepaged's wake-ups (every `os.thp.scan_sleep_ms`)").os(),
        StatDecl::count("hawkeye.cpu_cycles", "its khugepaged's copies' CPU time on its own core (not in `cycles`)")
            .cycles()
            .os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "hawkeye",
    policies: &[Policy { name: "hawkeye", chain: &["hawkeye", "base"], doc: "HawkEye: huge pages at fault as THP, and promotion of the most accessed 2 MiB regions first, by access-bit sampling." }],
    fault_kinds: &[],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| {
        Hawkeye::report_counters(0, 0, out);
        scan::Kbinmanager::report_counters(0, 0, out);
        khugepaged::Counters::default().report(out);
    },
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    let cfg = &b.os.hawkeye;
    let candidates: SharedCandidates = Arc::new(Mutex::new(CandidateTable::default()));
    let scanner = scan::Kbinmanager::new(candidates.clone(), cfg.access_window_ms, cfg.rescan_sleep_ms, b.freq_ghz);
    k.add_daemon(Box::new(scanner));
    k.add_daemon(Box::new(khugepaged::HawkeyeKhugepaged::new(candidates.clone(), &b.os.thp, b.freq_ghz)));
    k.plug(Box::new(Hawkeye { candidates, fault: cfg.fault, registered: 0, fault_fallback: 0 }));
    Ok(())
}

/// Every process's candidates, and the processes in promotion order.
#[derive(Debug, Default)]
pub struct CandidateTable {
    pub by_asid: BTreeMap<Asid, Bins>,
    /// Round-robin order of the processes (`ohp_scan.mm_head`).
    pub order: Vec<Asid>,
}

impl CandidateTable {
    /// A region's first THP-eligible fault (`add_ohp_bin`).
    pub fn add(&mut self, asid: Asid, base: crate::units::VirtAddr) {
        if !self.by_asid.contains_key(&asid) {
            self.order.push(asid);
        }
        self.by_asid.entry(asid).or_default().add(base);
    }
}

/// Shared by the fault hook, kbinmanager and khugepaged.
pub type SharedCandidates = Arc<Mutex<CandidateTable>>;

/// The table's lock (a poisoned lock means a panic already ended the run).
pub fn lock(table: &SharedCandidates) -> MutexGuard<'_, CandidateTable> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
pub struct Hawkeye {
    candidates: SharedCandidates,
    fault: bool,
    /// Regions made candidates at fault.
    registered: u64,
    /// Fault-time huge pages that found no free order-9 block.
    fault_fallback: u64,
}

impl Hawkeye {
    fn report_counters(registered: u64, fault_fallback: u64, out: &mut Stats) {
        put_ints(out, "hawkeye.", &[("candidates", registered), ("fault_fallback", fault_fallback)]);
    }
}

impl System for Hawkeye {
    fn name(&self) -> &'static str {
        "hawkeye"
    }

    /// The candidate is registered even when the fault takes the huge
    /// page (as `ohp_enter` precedes the allocation): kbinmanager drops it
    /// at its next count.
    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let Some(base) = huge_fault_range(k, f) else {
            return Ok(None);
        };
        lock(&self.candidates).add(f.asid, base);
        self.registered += 1;
        if !self.fault {
            return Ok(None);
        }
        let outcome = map_huge_at_fault(k, f, base)?;
        self.fault_fallback += outcome.is_none() as u64;
        Ok(outcome)
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        Self::report_counters(self.registered, self.fault_fallback, out);
    }

    fn reset_stats(&mut self) {
        self.registered = 0;
        self.fault_fallback = 0;
    }
}
