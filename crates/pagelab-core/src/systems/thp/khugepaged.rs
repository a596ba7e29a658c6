//! khugepaged: the THP daemon that collapses 4 KiB-mapped 2 MiB ranges into
//! huge pages (mm/khugepaged.c). It wakes every `scan_sleep_ms` of simulated
//! time, examines `pages_to_scan` PTEs' worth of ranges (512 per 2 MiB range,
//! as Linux counts HPAGE_PMD_NR), walking each process's VMAs in address
//! order from where it stopped, and collapses a range when at most
//! `max_ptes_none` of its PTEs are empty: it allocates an order-9 block,
//! copies the present pages, frees the old frames and the page-table page,
//! installs the huge PMD and shoots down the range. Each range's outcome is
//! counted under Linux's scan_result name.

use std::collections::BTreeMap;

use super::ThpConfig;
use crate::os::{Daemon, Kernel};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::Mapping;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{Section, StatDecl, StatTable};
use crate::stat::{Stat, Stats};
use crate::units::{Order, PageSize, VirtAddr};

const HPAGE: u64 = 2 << 20;

/// Why a range was or was not collapsed (Linux's enum scan_result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanResult {
    Succeed,
    /// Already a huge page.
    PmdMapped,
    /// Nothing mapped in the range (no page table).
    PmdNull,
    /// More than max_ptes_none empty PTEs.
    ExceedNonePte,
    /// No free order-9 block.
    AllocHugePageFail,
    /// A page in the range is not this mapping's own: a KSM page, shared
    /// by several mappings (Linux finds its reference count above what a
    /// collapse expects, SCAN_PAGE_COUNT, and leaves the range alone).
    PageCount,
}

impl ScanResult {
    pub const ALL: [ScanResult; 6] = [
        ScanResult::Succeed,
        ScanResult::PmdMapped,
        ScanResult::PmdNull,
        ScanResult::ExceedNonePte,
        ScanResult::AllocHugePageFail,
        ScanResult::PageCount,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ScanResult::Succeed => "succeed",
            ScanResult::PmdMapped => "pmd_mapped",
            ScanResult::PmdNull => "pmd_null",
            ScanResult::ExceedNonePte => "exceed_none_pte",
            ScanResult::AllocHugePageFail => "alloc_huge_page_fail",
            ScanResult::PageCount => "page_count",
        }
    }
}

#[derive(Debug)]
pub struct Khugepaged {
    clock: crate::os::WakeClock,
    pages_to_scan: u32,
    max_ptes_none: u32,
    /// Where the scan resumes: process index and address.
    cursor: (usize, VirtAddr),
    /// Outcomes by name (scan_result).
    outcomes: BTreeMap<&'static str, u64>,
    wakeups: u64,
    /// CPU time spent on its own core (not charged to workloads).
    cpu_cycles: f64,
}

impl Khugepaged {
    pub fn new(cfg: &ThpConfig, freq_ghz: f64) -> Khugepaged {
        Khugepaged {
            clock: crate::os::WakeClock::every_ms(cfg.scan_sleep_ms, freq_ghz),
            pages_to_scan: cfg.pages_to_scan,
            max_ptes_none: cfg.max_ptes_none,
            cursor: (0, VirtAddr::new(0)),
            outcomes: BTreeMap::new(),
            wakeups: 0,
            cpu_cycles: 0.0,
        }
    }

    fn report_counters(outcomes: &BTreeMap<&'static str, u64>, wakeups: u64, cpu_cycles: f64, out: &mut Stats) {
        out.insert("khugepaged.wakeups".into(), Stat::Int(wakeups));
        for result in ScanResult::ALL {
            let n = outcomes.get(result.name()).copied().unwrap_or(0);
            out.insert(format!("khugepaged.{}", result.name()), Stat::Int(n));
        }
        out.insert("khugepaged.cpu_cycles".into(), Stat::Float(cpu_cycles));
    }

    /// Its statistics' names, all zero (when it does not run).
    pub fn idle_stats(out: &mut Stats) {
        Self::report_counters(&BTreeMap::new(), 0, 0.0, out);
    }
}

/// khugepaged's statistics (Linux's `scan_result` names); CoalaKhugepaged
/// reports under the same names in an `elastic` chain.
pub const STATS: StatTable = StatTable {
    section: Section::Os,
    stats: &[
        StatDecl::count(
            "khugepaged.wakeups",
            "khugepaged wake-ups (every `os.thp.scan_sleep_ms` of simulated time); in an `elastic` chain with \
             Leshy online or offline, CoalaKhugepaged's",
        )
        .os(),
        StatDecl::count("khugepaged.succeed", "2 MiB ranges khugepaged collapsed").os(),
        StatDecl::count("khugepaged.pmd_mapped", "ranges examined that were a huge page already").os(),
        StatDecl::count("khugepaged.pmd_null", "ranges examined with no page table").os(),
        StatDecl::count("khugepaged.exceed_none_pte", "ranges with more empty PTEs than `max_ptes_none` allows").os(),
        StatDecl::count("khugepaged.alloc_huge_page_fail", "ranges whose collapse found no free order-9 block").os(),
        StatDecl::count("khugepaged.page_count", "ranges with a page not this mapping's own (a KSM page on the host)")
            .os(),
        StatDecl::count(
            "khugepaged.cpu_cycles",
            "khugepaged's own CPU time (copies; CoalaKhugepaged's in an `elastic` chain); it runs on another \
             core, so this is not in `cycles`",
        )
        .cycles()
        .os(),
    ],
};

impl Daemon for Khugepaged {
    fn name(&self) -> &'static str {
        "khugepaged"
    }

    /// Runs every wake-up due by `now`. Its shootdowns are queued in the
    /// kernel; the engine charges each to the core it interrupts.
    fn run_due(&mut self, k: &mut Kernel, now: f64) {
        while self.clock.due(now) {
            self.wakeups += 1;
            self.scan(k);
        }
    }

    fn report(&self, out: &mut Stats) {
        Self::report_counters(&self.outcomes, self.wakeups, self.cpu_cycles, out);
    }

    fn reset_stats(&mut self) {
        self.outcomes.clear();
        self.wakeups = 0;
        self.cpu_cycles = 0.0;
    }
}

impl Khugepaged {
    /// One wake-up: scan up to pages_to_scan PTEs' worth of ranges.
    fn scan(&mut self, k: &mut Kernel) {
        let mut budget = self.pages_to_scan as i64;
        let mut idle_wraps = 0;
        while budget > 0 && idle_wraps <= k.procs.len() {
            let Some(base) = self.next_range(k) else {
                // End of this process: move on to the next one.
                self.cursor = ((self.cursor.0 + 1) % k.procs.len().max(1), VirtAddr::new(0));
                idle_wraps += 1;
                continue;
            };
            idle_wraps = 0;
            self.cursor.1 = base.add(HPAGE);
            let result = self.collapse(k, base);
            *self.outcomes.entry(result.name()).or_insert(0) += 1;
            budget -= 512;
        }
    }

    /// The next 2 MiB-aligned range wholly inside a VMA of the current
    /// process, at or after the cursor.
    fn next_range(&self, k: &Kernel) -> Option<VirtAddr> {
        let proc = k.procs.get(self.cursor.0)?;
        proc.aspace.vmas.iter().find_map(|v| {
            let first = v.start.raw().max(self.cursor.1.raw()).div_ceil(HPAGE) * HPAGE;
            (first + HPAGE <= v.end.raw()).then(|| VirtAddr::new(first))
        })
    }

    fn collapse(&mut self, k: &mut Kernel, base: VirtAddr) -> ScanResult {
        let asid = (self.cursor.0 + 1) as crate::units::Asid;
        let (result, cycles) = collapse_pmd(k, asid, base, self.max_ptes_none);
        self.cpu_cycles += cycles;
        result
    }
}

/// khugepaged's collapse of the 2 MiB range at `base` of `asid`'s address
/// space, when at most `max_ptes_none` of its PTEs are empty: an order-9
/// block, the present pages copied, the old frames and the page-table page
/// freed, the huge PMD installed and the range shot down. Returns the
/// outcome and the cycles the copies took (on the daemon's own core).
/// (CoalaKhugepaged's 2 MiB collapses are this one.)
pub fn collapse_pmd(k: &mut Kernel, asid: crate::units::Asid, base: VirtAddr, max_ptes_none: u32) -> (ScanResult, f64) {
    let aspace = &k.proc(asid).aspace;
    if aspace.table_only_split(base).is_some() {
        // Split in the EPT only (HugeScope): the metadata holds a huge page.
        return (ScanResult::PmdMapped, 0.0);
    }
    let slot = match aspace.pt.leaf_slot(base) {
        Some(s) => s,
        None => return (ScanResult::PmdNull, 0.0),
    };
    if slot.level >= 2 {
        let present = aspace.pt.entry(slot).present();
        return (if present { ScanResult::PmdMapped } else { ScanResult::PmdNull }, 0.0);
    }
    let leaves = aspace.pt.leaves_in(base, base.add(HPAGE));
    let none = 512 - leaves.len() as u32;
    if none > max_ptes_none {
        return (ScanResult::ExceedNonePte, 0.0);
    }
    if !all_private(k, asid, &leaves) {
        return (ScanResult::PageCount, 0.0);
    }
    let writable = aspace.find_vma(base).is_some_and(|v| v.writable);
    let owner = FrameOwner::User { asid, vpn: base.vpn() };
    let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
        return (ScanResult::AllocHugePageFail, 0.0);
    };
    let old = k.procs[asid as usize - 1].aspace.collapse(base, frame, PageSize::Size2M, writable, &mut k.mem);
    let mut bits = 0;
    for pte in &old {
        bits |= pte.raw() & (ACCESSED | DIRTY);
        k.mem.free(pte.pfn(), Order::BASE);
    }
    let aspace = &mut k.proc_mut(asid).aspace;
    let slot = aspace.pt.leaf_slot(base).expect("just collapsed");
    aspace.pt.set_bits(slot, bits);
    k.stats.pages_copied += old.len() as u64;
    let cycles = old.len() as f64 * k.costs.copy_4k;
    k.shoot(asid, base, base.add(HPAGE));
    (ScanResult::Succeed, cycles)
}

/// Whether every page of `leaves` (`PageTable::leaves_in`'s) is `asid`'s
/// own at that address: a collapse copies and frees them, which a page
/// another mapping shares (a KSM page, owned by the KSM pool) must not be.
/// (CoalaKhugepaged's promotions ask the same.)
pub fn all_private(k: &Kernel, asid: crate::units::Asid, leaves: &[(VirtAddr, Mapping)]) -> bool {
    leaves.iter().all(|(va, m)| k.mem.owner(m.frame) == FrameOwner::User { asid, vpn: va.vpn() })
}
