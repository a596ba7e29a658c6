//! `elastic`: Elastic Translations (Psomadakis et al., MICRO 2024): 64 KiB
//! and 32 MiB coalesced translations through Arm's contiguous bit, made
//! transparent by CoalaPaging at fault time ([`coala`]) and by managing the
//! bit at fault time (`paging::contig`), guided by Leshy's size hints
//! ([`placement`], [`hints`]): online from sampled TLB misses ([`leshy`])
//! or offline from a file, promoted by CoalaKhugepaged ([`khugepaged`]).
//! or from access bits ([`leshy`] too). Not yet: the virtualized walk of
//! contiguous entries (docs/systems/elastic.md).
//!
//! A fault in a VMA of at least `os.elastic.vma_threshold_32m` takes a
//! 2 MiB page where THP would (the range inside the VMA, nothing mapped
//! there), placed by CoalaPaging among the 16 PMDs of its 32 MiB range;
//! other faults take a 4 KiB page placed among the 16 PTEs of its 64 KiB
//! range. When CoalaPaging cannot place a page the fault is declined, and
//! the chain's next system (`base`) backs it with the normal allocator.
//! After each page is mapped the contiguous bit is tried on its range: set
//! when all 16 entries qualify. The other 15 are live then, so Arm's
//! break-before-make applies: the 15 are invalidated and the range shot
//! down before the bit is written (one shootdown, `os.fault_cost.shootdown`
//! cycles on the fault).
//!
//! With offline hints (the artifact's `coalapaging.fault_hints`), the
//! hints decide instead of the threshold, as the artifact's fault path
//! does (`coala_skip_thp`, `coala_alloc_pages_vma`): a 2 MiB page only
//! where a 2 MiB or 32 MiB hint covers the fault (placed among its 16 PMDs
//! by CoalaPaging for 32 MiB, by the normal allocator for 2 MiB); a 4 KiB
//! page placed by CoalaPaging where any hint covers it; elsewhere the
//! normal allocator's 4 KiB page.

pub mod coala;
mod config;
pub mod hints;
pub mod khugepaged;
pub mod leshy;
#[cfg(test)]
mod leshy_tests;
pub mod placement;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod virt_tests;

pub use config::{ElasticConfig, HintSource, LeshyMode};

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, ProcessSpec, System};
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Asid, Order, PageSize, VirtAddr};
use coala::{Fallback, Placement};
use hints::{lock, HintTable, Hints, SharedHints};
use placement::Size;

/// Elastic Translations' statistics.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Systems,
    stats: &[
        StatDecl::count("os.faults.elastic", "a 4 KiB page placed by CoalaPaging among 16 PTEs").os(),
        StatDecl::count(
            "os.faults.elastic_2m",
            "a 2 MiB page among 16 PMDs (or, CoalaPaging failing, an ordinary order-9 block)",
        )
        .os(),
        StatDecl::count(
            "elastic.anchored",
            "pages CoalaPaging placed at the offset a present neighbour's anchor fixed",
        )
        .os(),
        StatDecl::count(
            "elastic.carved",
            "pages placed at their offset in a freshly carved block of 16 pages (order 4 or 13)",
        )
        .os(),
        StatDecl::count(
            "elastic.fallback.target_taken",
            "pages left to the normal allocator: the anchored frame was taken",
        )
        .os(),
        StatDecl::count(
            "elastic.fallback.no_block",
            "pages left to the normal allocator: no anchor and no free block of 16 pages",
        )
        .os(),
        StatDecl::count(
            "elastic.contig_sets",
            "contiguous ranges a fault completed on live entries (each with break-before-make: one shootdown of the \
             range, `os.fault_cost.shootdown` cycles)",
        )
        .os(),
        StatDecl::count(
            "elastic.promotions.64k",
            "CoalaKhugepaged's 64 KiB ranges made contiguous in an order-4 block",
        )
        .os(),
        StatDecl::count(
            "elastic.promotions.2m",
            "its 2 MiB collapses (2 MiB hints, and the 2 MiB fallback of a 32 MiB hint)",
        )
        .os(),
        StatDecl::count("elastic.promotions.32m", "its 32 MiB ranges made contiguous in an order-13 block").os(),
        StatDecl::count(
            "leshy.samples",
            "L2 TLB misses sampled for Leshy online (one data-side miss in `os.elastic.leshy_sample_period`; 0 in \
             other modes and in virtualized runs)",
        )
        .os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "elastic",
    policies: &[Policy { name: "elastic", chain: &["elastic", "base"], doc: "Elastic Translations: CoalaPaging and the contiguous bit (64 KiB and 32 MiB coalesced translations on Arm-style machines)." }],
    fault_kinds: &["elastic", "elastic_2m"],
    terminal: false,
    caps: Caps { samples_l2_occupancy: true, ..Caps::NONE },
    hooks: Hooks { miss_sample_period: Some(miss_sample_period), ..Hooks::NONE },
    stats: STATS,
    idle_stats: |out| {
        Counters::default().report(out);
        put_ints(out, "leshy.", &[("samples", 0)]);
        khugepaged::CoalaKhugepaged::idle_stats(out);
    },
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    let cfg = &b.os.elastic;
    let loaded = match (&cfg.hints, cfg.leshy) {
        (Some(source), LeshyMode::Offline) => load_hints(source)?,
        _ => Hints::default(),
    };
    let hints: SharedHints = std::sync::Arc::new(std::sync::Mutex::new(HintTable { loaded, ..Default::default() }));
    let fault_hints = cfg.leshy == LeshyMode::Offline;
    let source = match cfg.leshy {
        LeshyMode::Online => Some(leshy::Source::TlbMisses),
        LeshyMode::AccessBit => Some(leshy::Source::AccessBits),
        LeshyMode::Offline | LeshyMode::Off => None,
    };
    if let Some(out) = &cfg.leshy_hints_out {
        // Written at the end of the run: refused now, not after it.
        let refused = |e: crate::error::Error| crate::error::Error::config("os.elastic.leshy_hints_out", e.to_string());
        crate::outfile::check_target(std::path::Path::new(out)).map_err(refused)?;
    }
    if let Some(source) = source {
        let settings = leshy::LeshySettings {
            source,
            epoch_ms: cfg.leshy_epoch_ms,
            epochs: cfg.leshy_epochs as usize,
            budget: cfg.budget(),
            coverage: cfg.leshy_coverage,
            pages_to_scan: b.os.thp.pages_to_scan as u64,
            scan_sleep_ms: b.os.thp.scan_sleep_ms,
            hints_out: cfg.leshy_hints_out.clone(),
        };
        k.add_daemon(Box::new(leshy::Leshy::new(hints.clone(), settings, b.freq_ghz)));
    }
    let threshold_32m = cfg.vma_threshold_32m.bytes();
    if cfg.khugepaged && (cfg.leshy != LeshyMode::Off || cfg.greedy_32m) {
        let daemon = khugepaged::CoalaKhugepaged::new(hints.clone(), &b.os.thp, b.freq_ghz);
        let daemon = if cfg.greedy_32m { daemon.greedy_32m(threshold_32m) } else { daemon };
        k.add_daemon(Box::new(daemon));
    }
    k.plug(Box::new(Elastic { threshold_32m, hints, fault_hints, counters: Counters::default() }));
    Ok(())
}

/// Offline Leshy's hints, from the file or list `os.elastic.hints` names.
fn load_hints(source: &HintSource) -> Result<Hints> {
    match source {
        HintSource::Ranges(ranges) => Hints::parse(ranges.iter().map(String::as_str), "os.elastic.hints"),
        HintSource::File(path) => Hints::read_file(path, "os.elastic.hints"),
    }
}

/// One L2 TLB miss in how many the cores sample (for Leshy online), or
/// `None` when Leshy does not sample (the registry asks only when
/// `elastic` is in the chain).
fn miss_sample_period(os: &super::OsConfig) -> Option<u64> {
    (os.elastic.leshy == LeshyMode::Online).then_some(os.elastic.leshy_sample_period)
}

/// What CoalaPaging and the bit management did, by outcome.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    anchored: u64,
    carved: u64,
    fallback_taken: u64,
    fallback_no_block: u64,
    /// Ranges whose bit a fault set on live entries (break-before-make).
    contig_sets: u64,
}

impl Counters {
    fn report(&self, out: &mut Stats) {
        put_ints(
            out,
            "elastic.",
            &[
                ("anchored", self.anchored),
                ("carved", self.carved),
                ("fallback.target_taken", self.fallback_taken),
                ("fallback.no_block", self.fallback_no_block),
                ("contig_sets", self.contig_sets),
            ],
        );
    }
}

#[derive(Debug)]
pub struct Elastic {
    threshold_32m: u64,
    /// Every process's size hints (shared with Leshy and CoalaKhugepaged).
    hints: SharedHints,
    /// Hints decide faults (offline Leshy); else the threshold does.
    fault_hints: bool,
    counters: Counters,
}

impl Elastic {
    /// Maps the page of `size` at aligned `page` where CoalaPaging places
    /// it, then tries the contiguous bit on its range; `None` when
    /// CoalaPaging falls back.
    fn map_placed(&mut self, k: &mut Kernel, f: &Fault, page: VirtAddr, size: PageSize) -> Result<Option<f64>> {
        let frame = match coala::place(k, f.asid, page, size) {
            Ok((frame, placement)) => {
                match placement {
                    Placement::Anchored => self.counters.anchored += 1,
                    Placement::Carved => self.counters.carved += 1,
                }
                frame
            }
            Err(reason) => {
                match reason {
                    Fallback::TargetTaken => self.counters.fallback_taken += 1,
                    Fallback::NoBlock => self.counters.fallback_no_block += 1,
                }
                return Ok(None);
            }
        };
        k.map_user(f.asid, page, frame, size, f.vma.writable)?;
        Ok(Some(self.try_contiguous(k, f.asid, page, size)))
    }

    /// CoalaPaging's fallback for a 2 MiB page: the normal allocator's
    /// order-9 block (as THP's fault), if one is free.
    fn map_plain_2m(&mut self, k: &mut Kernel, f: &Fault, huge: VirtAddr) -> Result<Option<f64>> {
        let owner = FrameOwner::User { asid: f.asid, vpn: huge.vpn() };
        let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
            return Ok(None);
        };
        k.map_user(f.asid, huge, frame, PageSize::Size2M, f.vma.writable)?;
        Ok(Some(self.try_contiguous(k, f.asid, huge, PageSize::Size2M)))
    }

    /// Sets the contiguous bit on `page`'s range if all 16 entries qualify;
    /// returns the cycles it cost (break-before-make on the 15 live ones).
    fn try_contiguous(&mut self, k: &mut Kernel, asid: Asid, page: VirtAddr, size: PageSize) -> f64 {
        if !k.page_table_mut(asid).set_contiguous(page, size) {
            return 0.0;
        }
        self.counters.contig_sets += 1;
        let start = page.align_down(CONTIG_ENTRIES as u64 * size.bytes());
        k.shoot(asid, start, start.add(CONTIG_ENTRIES as u64 * size.bytes()));
        k.costs.shootdown
    }
}

impl System for Elastic {
    fn name(&self) -> &'static str {
        "elastic"
    }

    fn spawn(&mut self, _k: &mut Kernel, asid: Asid, _spec: &ProcessSpec) {
        let mut table = lock(&self.hints);
        if !table.loaded.is_empty() {
            let loaded = table.loaded.clone();
            table.by_asid.insert(asid, loaded);
        }
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let hint =
            if self.fault_hints { lock(&self.hints).by_asid.get(&f.asid).and_then(|h| h.at(f.vaddr)) } else { None };
        let huge = f.vaddr.align_down(2 << 20);
        let vma_len = f.vma.end.raw() - f.vma.start.raw();
        let want_2m = match self.fault_hints {
            true => matches!(hint, Some(Size::Size2M | Size::Size32M)),
            false => vma_len >= self.threshold_32m,
        };
        if want_2m && f.vma.covers(huge, 2 << 20) && k.range_is_empty(f.asid, huge, PageSize::Size2M) {
            // A 2 MiB hint takes the normal allocator's block, as THP.
            let placed = match hint {
                Some(Size::Size2M) => None,
                _ => self.map_placed(k, f, huge, PageSize::Size2M)?,
            };
            let extra = match placed {
                Some(extra) => Some(extra),
                None => self.map_plain_2m(k, f, huge)?,
            };
            if let Some(extra) = extra {
                let cycles = k.costs.thp + extra;
                return Ok(Some(FaultOutcome { kind: "elastic_2m", size: PageSize::Size2M, cycles }));
            }
        }
        if self.fault_hints && hint.is_none() {
            return Ok(None); // unhinted: the normal allocator's 4 KiB page
        }
        let page = f.vaddr.align_down(4096);
        match self.map_placed(k, f, page, PageSize::Size4K)? {
            Some(extra) => {
                let cycles = k.costs.base + extra;
                Ok(Some(FaultOutcome { kind: "elastic", size: PageSize::Size4K, cycles }))
            }
            None => Ok(None),
        }
    }

    fn report(&self, k: &Kernel, out: &mut Stats) {
        self.counters.report(out);
        put_ints(out, "leshy.", &[("samples", k.miss_samples.taken())]);
    }

    fn reset_stats(&mut self) {
        self.counters = Counters::default();
    }
}
