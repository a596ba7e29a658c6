//! Request latencies (`coreN.requests`, `coreN.request.cycles_*`): for a
//! core whose program serves requests (`Workload::request_site`), the
//! cycles of each request, from one access at the request site to the
//! next (docs/timing.md, "Requests").
//!
//! A request's cycles are read from the core's clock, base_cpi x
//! instructions plus every stall, fault and daemon cycle charged to the
//! core so far (`Core::clock`), when the stages reach a request-site
//! access: before that access's instructions dispatch and before its
//! translation. So whatever the core is charged between two such
//! accesses (the stalls the interval model charges when the core waits,
//! faults, shootdowns, daemons' interrupts) is the earlier request's, each
//! cycle lands in exactly one request, and the requests' cycles add up to
//! the core's cycles over the span they cover.
//!
//! No test per access: a stage call covers a run of accesses, so the
//! engine ends a core's stage call at its next request-site access
//! (`Requests::cut`, through `Core::cut_for_requests`), and the clock is
//! read between stage calls. A run without a
//! request site runs the stages it always ran, one call per quantum; a
//! run with one makes a stage call per request (each stage call's
//! per-quantum work, here per request, never changes a result).

use crate::stat::{Scope, Section, Stat, StatDecl, StatTable, Stats};
use crate::workload::{Access, Site, Workload};

/// The requests' statistics, per core only (`vmN.coreM.` with several VMs).
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Time,
    stats: &[
        StatDecl::count(
            "requests",
            "for a core whose program serves requests (kv, or a workload with a request site): the requests \
             measured, each from an access at the request site to the next (docs/timing.md, \"Requests\"); not \
             emitted for other cores",
        )
        .scope(Scope::PerCore)
        .contract(),
        StatDecl::count(
            "request.cycles_mean",
            "the mean of the measured requests' cycles (the core's clock from one request-site access to the \
             next; the last request ends at the core's last measured access); 0 without requests",
        )
        .cycles()
        .scope(Scope::PerCore)
        .contract(),
        StatDecl::count("request.cycles_p90", "the 90th percentile of the requests' cycles (nearest rank, exact)")
            .cycles()
            .scope(Scope::PerCore)
            .contract(),
        StatDecl::count("request.cycles_p95", "the 95th percentile of the requests' cycles (nearest rank, exact)")
            .cycles()
            .scope(Scope::PerCore)
            .contract(),
        StatDecl::count("request.cycles_p99", "the 99th percentile of the requests' cycles (nearest rank, exact)")
            .cycles()
            .scope(Scope::PerCore)
            .contract(),
    ],
}];

/// One core's requests.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    /// The request site of the program now on the core (None: that
    /// program serves no requests).
    site: Option<Site>,
    /// The core's clock when the open request began (None: none open).
    open: Option<f64>,
    /// The cycles of each closed measured request, in order: 8 bytes per
    /// request, 80 MB for ten million.
    cycles: Vec<f64>,
    /// How many of `cycles` a reset keeps: those of closed sampling windows.
    kept: usize,
}

/// The site a program's requests begin at, if it serves requests (a site
/// with no program counter, tag 0, could not tell them from other
/// accesses: none).
fn site_of(workload: &dyn Workload) -> Option<Site> {
    workload.request_site().filter(|s| s.pc_tag() != 0)
}

impl Requests {
    /// A core's requests, if any of its programs (`first`, or one of
    /// `later` that run after it) serves requests; its statistics are then
    /// those of all of its programs that do.
    pub(super) fn for_programs<'a>(
        first: &dyn Workload,
        mut later: impl Iterator<Item = &'a dyn Workload>,
    ) -> Option<Box<Requests>> {
        (site_of(first).is_some() || later.any(|w| site_of(w).is_some()))
            .then(|| Box::new(Requests { site: site_of(first), ..Requests::default() }))
    }

    /// Where a stage call over `accesses[pos..end]` must end so that a
    /// request begins only at a call's first access: at the next request
    /// site after `pos`. A call that begins at one closes the open request
    /// and opens the next at `clock`.
    pub(super) fn cut(&mut self, accesses: &[Access], pos: usize, end: usize, clock: f64) -> usize {
        let Some(site) = self.site else { return end };
        let starts = |a: &Access| a.site.pc_tag() == site.pc_tag();
        if accesses.get(pos).is_some_and(starts) {
            self.close(clock);
            self.open = Some(clock);
        }
        let after = accesses.get(pos + 1..end).unwrap_or_default();
        after.iter().position(starts).map_or(end, |k| pos + 1 + k)
    }

    /// Ends the open request at `clock`.
    pub(super) fn close(&mut self, clock: f64) {
        if let Some(start) = self.open.take() {
            self.cycles.push(clock - start);
        }
    }

    /// The statistics restart (warm-up's end, a measure window's start):
    /// the requests since the last closed window are dropped, and so is
    /// the open one (it began before).
    pub(super) fn reset(&mut self) {
        self.cycles.truncate(self.kept);
        self.open = None;
    }

    /// A sampled measure window ends at `clock`: its last request ends
    /// there, and its requests are kept.
    pub(super) fn close_window(&mut self, clock: f64) {
        self.close(clock);
        self.kept = self.cycles.len();
    }

    /// The core's program exited at `clock` (its last request ends there)
    /// and `next` starts.
    pub(super) fn next_program(&mut self, clock: f64, next: &dyn Workload) {
        self.close(clock);
        self.site = site_of(next);
    }

    /// `requests` and `request.cycles_*` under `prefix`, the open request
    /// ending at `clock`.
    pub(super) fn report(&self, clock: f64, prefix: &str, out: &mut Stats) {
        let mut sorted = self.cycles.clone();
        sorted.extend(self.open.map(|start| clock - start));
        let mean = if sorted.is_empty() { 0.0 } else { sorted.iter().sum::<f64>() / sorted.len() as f64 };
        sorted.sort_by(f64::total_cmp);
        out.insert(format!("{prefix}requests"), Stat::Int(sorted.len() as u64));
        out.insert(format!("{prefix}request.cycles_mean"), Stat::Float(mean));
        for p in [90, 95, 99] {
            out.insert(format!("{prefix}request.cycles_p{p}"), Stat::Float(nearest_rank(&sorted, p)));
        }
    }
}

/// The `p`th percentile of `sorted` by the nearest-rank definition: the
/// smallest value with at least `p`% of the values at or below it (the
/// value of rank ceil(p/100 x n)); 0 when empty.
pub(crate) fn nearest_rank(sorted: &[f64], p: u64) -> f64 {
    let n = sorted.len() as u64;
    if n == 0 {
        return 0.0;
    }
    let rank = (p * n).div_ceil(100).max(1);
    sorted[(rank - 1) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_by_hand() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        // ceil(0.9 x 10) = 9th value; ceil(0.95 x 10) = 10th; ceil(0.99 x 10) = 10th.
        assert_eq!((nearest_rank(&v, 90), nearest_rank(&v, 95), nearest_rank(&v, 99)), (9.0, 10.0, 10.0));
        assert_eq!(nearest_rank(&v[..3], 50), 2.0, "ceil(1.5) = 2nd of 3");
        assert_eq!(nearest_rank(&[7.0], 99), 7.0);
        assert_eq!(nearest_rank(&[], 99), 0.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&hundred, 99), 99.0);
    }

    #[test]
    fn a_reset_drops_what_no_closed_window_kept() {
        let mut r = Requests { site: Some(Site::pc(1)), ..Requests::default() };
        r.open = Some(0.0);
        r.close_window(10.0);
        r.open = Some(20.0);
        r.close(25.0);
        r.open = Some(25.0);
        r.reset();
        assert_eq!((r.cycles.as_slice(), r.open), (&[10.0][..], None));
    }
}
