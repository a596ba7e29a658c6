//! CoalaKhugepaged: khugepaged for Elastic Translations, promoting the
//! regions Leshy hints (the artifact's `mm/coalapaging/khugepaged.h`,
//! `coala_khugepaged_scan_mm`).
//!
//! It wakes every `os.thp.scan_sleep_ms` of simulated time and visits the
//! hints still marked, each process in turn and each process's hints in
//! the order they were loaded, until it has examined `os.thp.pages_to_scan`
//! pages' worth (512 per 64 KiB or 2 MiB hint, 8192 per 32 MiB one, as the
//! kernel counts them). A hint outside one VMA is passed over at no cost.
//!
//! - **32 MiB** (`coala_khugepaged_scan_contpmd` and `_collapse_contpmd`):
//!   done if the range is contiguous already. Else each of its 16 PMDs
//!   must be a writable 2 MiB page or a page table khugepaged could
//!   collapse (at most `os.thp.max_ptes_none` empty PTEs); then an
//!   order-13 block is taken, each PMD's pages copied into its 2 MiB of
//!   it (4 KiB pages, or a whole 2 MiB page), the 16 PMDs installed with
//!   the contiguous bit, the old frames and tables freed and the range
//!   shot down (`elastic.promotions.32m`). When a PMD does not qualify, or
//!   no order-13 block is free, each PMD khugepaged can collapse is
//!   collapsed to 2 MiB instead (`elastic.promotions.2m`); the hint stays
//!   marked, to be retried. (The artifact falls back to 2 MiB when a PMD
//!   does not qualify; on a failed order-13 allocation it ends the pass
//!   instead. The issue asks for the fallback in both cases.)
//! - **2 MiB**: khugepaged's collapse of the PMD (`elastic.promotions.2m`).
//! - **64 KiB**: the 16 PTEs, at most `max_ptes_none / 32` of them empty
//!   (khugepaged's rule scaled to 16 entries), get an order-4 block: the
//!   present pages copied, the empty ones filled, the 16 PTEs rewritten
//!   with the contiguous bit and the range shot down
//!   (`elastic.promotions.64k`). Here the artifact differs: its kernel
//!   hands a 64 KiB hint to khugepaged's 2 MiB scan of the enclosing PMD
//!   (`khugepaged_scan_pmd`), which collapses the PMD to 2 MiB. This
//!   models the paper's 64 KiB promotion instead.
//!
//! **Greedy 32 MiB promotion** (`os.elastic.greedy_32m`, the artifact's
//! `khuge_etheap_async`, which its virtualized runs set in the host: QEMU's
//! guest memory gets 32 MiB translations with no Leshy): every 32 MiB-aligned
//! range inside a VMA of at least `os.elastic.vma_threshold_32m` becomes a
//! 32 MiB hint when the daemon first sees the VMA, visited as above.
//!
//! The copies cost `os.fault_cost.copy_4k` per 4 KiB page on the daemon's
//! own core (`khugepaged.cpu_cycles`, as khugepaged's); each shootdown
//! costs the interrupted cores their IPI (the engine charges it).

use std::collections::BTreeSet;

use super::hints::{lock, SharedHints};
use super::placement::Size;
use crate::os::{Daemon, Kernel};
use crate::paging::pte::{Pte, ACCESSED, DIRTY};
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{Stat, Stats};
use crate::systems::thp::{all_private, collapse_pmd, ScanResult, ThpConfig};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr};

const PMD: u64 = 2 << 20;

/// A VMA greedy promotion has hinted: its process, start and end.
type SeenVma = (Asid, u64, u64);

/// What one visit of a hint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Promoted to its size (64 KiB or 32 MiB), or collapsed to 2 MiB for
    /// a 2 MiB hint: the mark is cleared.
    Promoted,
    /// The region already has its size: the mark is cleared.
    Already,
    /// A 32 MiB hint fell back to this many 2 MiB collapses.
    Fallback(u32),
    /// Not promotable now (empty entries, no free block, not one VMA).
    Failed,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    promotions: [u64; 3],
    wakeups: u64,
    cpu_cycles: f64,
}

#[derive(Debug)]
pub struct CoalaKhugepaged {
    hints: SharedHints,
    clock: crate::os::WakeClock,
    pages_to_scan: u64,
    max_ptes_none: u32,
    /// Greedy 32 MiB promotion: the VMA-size threshold, and the VMAs
    /// already hinted (process, start, end).
    greedy_32m: Option<(u64, BTreeSet<SeenVma>)>,
    counters: Counters,
}

impl CoalaKhugepaged {
    pub fn new(hints: SharedHints, thp: &ThpConfig, freq_ghz: f64) -> CoalaKhugepaged {
        CoalaKhugepaged {
            hints,
            clock: crate::os::WakeClock::every_ms(thp.scan_sleep_ms, freq_ghz),
            pages_to_scan: thp.pages_to_scan as u64,
            max_ptes_none: thp.max_ptes_none,
            greedy_32m: None,
            counters: Counters::default(),
        }
    }

    /// Greedy 32 MiB promotion of every VMA of at least `threshold` bytes.
    pub fn greedy_32m(self, threshold: u64) -> CoalaKhugepaged {
        CoalaKhugepaged { greedy_32m: Some((threshold, BTreeSet::new())), ..self }
    }

    /// Greedy mode: each 32 MiB-aligned range inside a VMA not seen before
    /// (of at least the threshold) becomes a pending 32 MiB hint.
    fn hint_new_vmas(&mut self, k: &Kernel) {
        let Some((threshold, seen)) = self.greedy_32m.as_mut() else { return };
        let mut table = lock(&self.hints);
        for p in &k.procs {
            let asid = p.aspace.asid;
            for vma in p.aspace.vmas.iter().filter(|v| v.len() >= *threshold) {
                let (start, end) = (vma.start.raw(), vma.end.raw());
                if !seen.insert((asid, start, end)) {
                    continue;
                }
                let hints = table.by_asid.entry(asid).or_default();
                let first = start.next_multiple_of(Size::Size32M.bytes());
                for base in
                    (first..end.saturating_sub(Size::Size32M.bytes() - 1)).step_by(Size::Size32M.bytes() as usize)
                {
                    hints.insert(base, Size::Size32M);
                }
            }
        }
    }

    /// The promotions so far: 64 KiB, 2 MiB, 32 MiB.
    pub fn promotions(&self) -> [u64; 3] {
        self.counters.promotions
    }

    /// One wake-up: the marked hints, in order, up to the scan budget.
    pub fn scan(&mut self, k: &mut Kernel) {
        self.hint_new_vmas(k);
        let todo: Vec<(Asid, u64, Size)> = {
            let table = lock(&self.hints);
            table.by_asid.iter().flat_map(|(&asid, h)| h.pending().map(move |(b, s)| (asid, b, s))).collect()
        };
        let mut scanned = 0;
        for (asid, base, size) in todo {
            if scanned >= self.pages_to_scan {
                break;
            }
            let start = VirtAddr::new(base);
            let in_one_vma = k.proc(asid).aspace.find_vma(start).is_some_and(|v| v.covers(start, size.bytes()));
            if !in_one_vma {
                continue;
            }
            scanned += if size == Size::Size32M { 8192 } else { 512 };
            let visit = self.visit(k, asid, start, size);
            if matches!(visit, Visit::Promoted | Visit::Already) {
                if let Some(h) = lock(&self.hints).by_asid.get_mut(&asid) {
                    h.done(base);
                }
            }
        }
    }

    /// Promotes the hinted region at `base` of `size`.
    pub fn visit(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr, size: Size) -> Visit {
        match size {
            Size::Size64K => self.promote_64k(k, asid, base),
            Size::Size2M => match self.collapse(k, asid, base) {
                ScanResult::Succeed => Visit::Promoted,
                ScanResult::PmdMapped => Visit::Already,
                _ => Visit::Failed,
            },
            Size::Size32M => self.promote_32m(k, asid, base),
            Size::Size4K => Visit::Already,
        }
    }

    fn collapse(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr) -> ScanResult {
        let (result, cycles) = collapse_pmd(k, asid, base, self.max_ptes_none);
        self.counters.cpu_cycles += cycles;
        if result == ScanResult::Succeed {
            self.counters.promotions[1] += 1;
        }
        result
    }

    fn promote_32m(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr) -> Visit {
        if is_contiguous(k, asid, base, PageSize::Size2M) {
            return Visit::Already;
        }
        let owner = FrameOwner::User { asid, vpn: base.vpn() };
        let block = match self.pmds_qualify(k, asid, base) {
            true => k.mem.alloc(Order::new(13), Migratetype::Movable, owner),
            false => None,
        };
        let Some(block) = block else {
            let collapsed = (0..CONTIG_ENTRIES as u64)
                .filter(|i| self.collapse(k, asid, base.add(i * PMD)) == ScanResult::Succeed)
                .count();
            return Visit::Fallback(collapsed as u32);
        };
        let writable = k.proc(asid).aspace.find_vma(base).is_some_and(|v| v.writable);
        let mut copied = 0;
        for i in 0..CONTIG_ENTRIES as u64 {
            let frame = Pfn::new(block.raw() + i * 512);
            copied += move_pmd(k, asid, base.add(i * PMD), frame, writable);
        }
        let made = k.page_table_mut(asid).set_contiguous(base, PageSize::Size2M);
        debug_assert!(made, "16 PMDs over one aligned order-13 block qualify");
        self.finish(k, asid, base, Size::Size32M, copied);
        self.counters.promotions[2] += 1;
        Visit::Promoted
    }

    /// Whether each of the 16 PMDs at `base` is a writable 2 MiB page or a
    /// page table with at most `max_ptes_none` empty PTEs, all of whose
    /// pages are this mapping's own (no KSM page: `all_private`).
    fn pmds_qualify(&self, k: &Kernel, asid: Asid, base: VirtAddr) -> bool {
        let pt = &k.proc(asid).aspace.pt;
        (0..CONTIG_ENTRIES as u64).all(|i| {
            let pmd = base.add(i * PMD);
            if k.proc(asid).aspace.table_only_split(pmd).is_some() {
                return false; // split in the EPT only: HugeScope's until it collapses it
            }
            match pt.leaf_slot(pmd) {
                Some(slot) if slot.level == 2 => pt.entry(slot).present() && pt.entry(slot).writable(),
                Some(_) => {
                    let leaves = pt.leaves_in(pmd, pmd.add(PMD));
                    512 - leaves.len() as u32 <= self.max_ptes_none && all_private(k, asid, &leaves)
                }
                None => false,
            }
        })
    }

    fn promote_64k(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr) -> Visit {
        let pt = &k.proc(asid).aspace.pt;
        if pt.lookup(base).is_some_and(|m| m.size != PageSize::Size4K) || is_contiguous(k, asid, base, PageSize::Size4K)
        {
            return Visit::Already;
        }
        let present = pt.leaves_in(base, base.add(64 << 10));
        if 16 - present.len() as u32 > self.max_ptes_none / 32 || !all_private(k, asid, &present) {
            return Visit::Failed;
        }
        let owner = FrameOwner::User { asid, vpn: base.vpn() };
        let Some(block) = k.mem.alloc(Order::new(4), Migratetype::Movable, owner) else {
            return Visit::Failed;
        };
        let writable = k.proc(asid).aspace.find_vma(base).is_some_and(|v| v.writable);
        let mut copied = 0;
        for i in 0..CONTIG_ENTRIES as u64 {
            let page = base.add(i * 4096);
            let frame = Pfn::new(block.raw() + i);
            let pt = k.page_table_mut(asid);
            match pt.leaf_slot(page).filter(|s| pt.entry(*s).present()) {
                Some(slot) => {
                    let old = pt.entry(slot);
                    let pte = Pte::leaf(frame, writable, false).with(old.raw() & (ACCESSED | DIRTY));
                    pt.replace(slot, pte);
                    k.mem.free(old.pfn(), Order::BASE);
                    copied += 1;
                }
                None => k.map_user(asid, page, frame, PageSize::Size4K, writable).expect("a table is there"),
            }
        }
        let made = k.page_table_mut(asid).set_contiguous(base, PageSize::Size4K);
        debug_assert!(made, "16 PTEs over one aligned order-4 block qualify");
        self.finish(k, asid, base, Size::Size64K, copied);
        self.counters.promotions[0] += 1;
        Visit::Promoted
    }

    /// A promotion's costs: the copies on this core, the shootdown.
    fn finish(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr, size: Size, copied: u64) {
        k.stats.pages_copied += copied;
        self.counters.cpu_cycles += copied as f64 * k.costs.copy_4k;
        k.shoot(asid, base, base.add(size.bytes()));
    }

    /// Its statistics' names, all zero (khugepaged's, whose work it does
    /// in a chain without `thp`).
    pub fn idle_stats(out: &mut Stats) {
        Counters::default().report(out);
    }
}

impl Counters {
    fn report(&self, out: &mut Stats) {
        for (name, n) in ["64k", "2m", "32m"].iter().zip(self.promotions) {
            out.insert(format!("elastic.promotions.{name}"), Stat::Int(n));
        }
    }
}

/// Whether the range of 16 entries of `size` at `base` is contiguous.
fn is_contiguous(k: &Kernel, asid: Asid, base: VirtAddr, size: PageSize) -> bool {
    let pt = &k.proc(asid).aspace.pt;
    pt.lookup(base).is_some_and(|m| m.size == size && m.pte.raw() & crate::paging::pte::CONTIGUOUS != 0)
}

/// Moves the 2 MiB at `pmd` (a 2 MiB page or a table of 4 KiB pages) to
/// `frame`, as one 2 MiB page; frees the old frames. Returns the 4 KiB
/// pages copied.
fn move_pmd(k: &mut Kernel, asid: Asid, pmd: VirtAddr, frame: Pfn, writable: bool) -> u64 {
    let pt = k.page_table_mut(asid);
    let slot = pt.leaf_slot(pmd).expect("the PMDs qualified");
    if slot.level == 2 {
        let old = pt.entry(slot);
        pt.replace(slot, Pte::leaf(frame, writable, true).with(old.raw() & (ACCESSED | DIRTY)));
        k.mem.free(old.pfn(), Order::PMD);
        return 512;
    }
    let old = k.procs[asid as usize - 1].aspace.collapse(pmd, frame, PageSize::Size2M, writable, &mut k.mem);
    let mut bits = 0;
    for pte in &old {
        bits |= pte.raw() & (ACCESSED | DIRTY);
        k.mem.free(pte.pfn(), Order::BASE);
    }
    let pt = k.page_table_mut(asid);
    let slot = pt.leaf_slot(pmd).expect("just collapsed");
    pt.set_bits(slot, bits);
    old.len() as u64
}

impl Daemon for CoalaKhugepaged {
    fn name(&self) -> &'static str {
        "coala_khugepaged"
    }

    fn run_due(&mut self, k: &mut Kernel, now: f64) {
        while self.clock.due(now) {
            self.counters.wakeups += 1;
            self.scan(k);
        }
    }

    fn report(&self, out: &mut Stats) {
        self.counters.report(out);
        out.insert("khugepaged.wakeups".into(), Stat::Int(self.counters.wakeups));
        out.insert("khugepaged.cpu_cycles".into(), Stat::Float(self.counters.cpu_cycles));
    }

    fn reset_stats(&mut self) {
        self.counters = Counters::default();
    }
}
