//! `perforated`: Perforated Pages (Park, Lee et al., ISCA 2021): 2 MiB pages
//! with 4 KiB holes. A hole is a sub-page the 2 MiB frame does not back:
//! unallocated (not backed at all) or remapped to another 4 KiB frame.
//!
//! - OS (this file): where a conventional kernel cannot use a huge page
//!   (the `os.holes` scenario fragments the region: some of its frames are
//!   unmovable), a 2 MiB region becomes a perforated page when the paper's
//!   rule allows it (III-C: under `max_unmovable` of its pages are holes,
//!   at most `max_filter_bits` filter bits set); otherwise it gets 4 KiB
//!   pages as a conventional kernel gives it. Whole regions stay THP's
//!   (the chain `perforated`, `thp`, `base`). munmap of part of a
//!   perforated page and mprotect of part of one punch holes; munmap of a
//!   whole one flushes the process's TLB entries (IV-E). [`punch`] (a
//!   copy-on-write of one sub-page) and [`patch`] (a hole's frame freed
//!   and compacted back) shoot down the one sub-page.
//! - Page table (`pagetable.rs`): the PMD bit, the hole table, the record
//!   of frame, filter, shadow entry and bitmap.
//! - Hardware: the L2 entry kinds (`tlb.rs`), the walk steps (`walk.rs`),
//!   the translation flow past the L2 entry (`translate.rs`).
//!
//! Where the program declares pages it never touches (an allocator's pad
//! pages: `ProcessSpec::untouched`, the paper's III-B Redis case) and no
//! scenario fragments the region, its first fault makes a perforated page
//! whose holes are those pages, unallocated, their frames given back to
//! the allocator: the memory a 2 MiB page would bloat by (the rule still
//! decides; a region it refuses goes down the chain, to THP).
//!
//! The `holes` system is the same scenario on a conventional kernel (the
//! paper's "Base 2MB + 4KB"): fragmented regions get 4 KiB pages, whole
//! ones THP's (the chain `holes`, `thp`, `base`).
//!
//! Hole bitmaps live in a region of simulated memory reserved at boot, one
//! bit per 4 KiB frame (the paper's 0.003% of memory); the shadow PMD
//! entries in one frame per PMD table, allocated with the first perforated
//! page under it.

#[cfg(test)]
mod booted_tests;
pub mod config;
pub mod holes;
mod leaf;
pub mod pagetable;
#[cfg(test)]
pub(crate) mod tests;
pub mod tlb;
pub mod translate;
pub mod translate2d;
pub mod walk;
pub mod walk2d;

use std::collections::{BTreeMap, BTreeSet};

pub use config::{Distribution, HoleKind, HolesConfig, PerforatedConfig, Variant};
pub use leaf::PerforatedLeaf;

use self::holes::{count, filter_of, is_hole, set_hole, HoleBits, HoleScenario};
use self::pagetable::{clear_perforated, perforation_at, set_perforated, Perforation};
use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::{Error, Result};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::pagetable::table_index;
use crate::paging::Pte;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stat, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Asid, Order, PageSize, Pfn, PhysAddr, VirtAddr};

const HUGE: u64 = 2 << 20;

/// Perforated pages' statistics (their hardware's are in `tlb.rs`).
const STATS: StatTable = StatTable {
    section: Section::Systems,
    stats: &[
        StatDecl::count("os.faults.perforated", "faults that made a perforated page").os(),
        StatDecl::count(
            "os.faults.fragmented",
            "first faults of a fragmented region backed by one 4 KiB page (the rule declined it, or no 2 MiB \
             block: `perforated`; always: `holes`)",
        )
        .os(),
        StatDecl::count("perforated.pages", "perforated pages in the page tables at the end").os().contract(),
        StatDecl::count("perforated.holes", "their holes").os().contract(),
        StatDecl::count(
            "mem.mapped.perforated",
            "bytes of virtual memory perforated pages map (2 MiB each, holes included)",
        )
        .bytes()
        .os()
        .contract(),
        StatDecl::count("os.perforated.created", "perforated pages made").os(),
        StatDecl::count(
            "os.perforated.declined",
            "fragmented regions the rule (`os.perforated.max_unmovable`, `max_filter_bits`) kept from being one \
             (with no free 2 MiB block left, also the 2 MiB regions of physical memory of only free and pinned \
             frames it refused)",
        )
        .os(),
        StatDecl::count("os.perforated.fragmented", "fragmented regions given 4 KiB pages").os(),
        StatDecl::count(
            "os.perforated.flushes",
            "perforated pages unmapped whole (each flushes the process's TLB entries, IV-E)",
        )
        .os(),
        StatDecl::count(
            "os.perforated.demoted",
            "perforated pages an mprotect covered whole (made plain 4 KiB mappings)",
        )
        .os(),
    ],
};

/// The `holes` system's statistic.
const HOLES_STATS: StatTable = StatTable {
    section: Section::Systems,
    stats: &[StatDecl::count(
        "os.holes.fragmented",
        "the `holes` system (a conventional kernel under `os.holes`): fragmented regions given 4 KiB pages",
    )
    .os()],
};

pub const REGISTRATION: Registration = Registration {
    name: "perforated",
    policies: &[Policy {
        name: "perforated",
        chain: &["perforated", "thp", "base"],
        doc: "THP with perforated pages where a region cannot be a huge page.",
    }],
    fault_kinds: &["perforated", "fragmented"],
    terminal: false,
    caps: Caps { samples_l2_occupancy: true, ept_leaf_ext: true, follows_contents: false, ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: &[STATS, tlb::STATS],
    idle_stats: |out| PerforatedStats::default().report(out, 0, 0),
    build: |b, k| build(b, k, true),
};

pub const HOLES_REGISTRATION: Registration = Registration {
    name: "holes",
    policies: &[],
    fault_kinds: &["fragmented"],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks { untouched_pages: Some(untouched_pages), ..Hooks::NONE },
    stats: &[HOLES_STATS],
    idle_stats: |out| {
        out.insert("os.holes.fragmented".into(), Stat::Int(0));
    },
    build: |b, k| build(b, k, false),
};

fn build(b: &Build, k: &mut Kernel, make: bool) -> Result<()> {
    let bitmap_base = if make { Some(reserve_bitmaps(k)?) } else { None };
    k.plug(Box::new(Perforated {
        make,
        cfg: b.os.perforated.clone(),
        kind: b.os.holes.kind,
        scenario: HoleScenario::new(&b.os.holes, b.seed),
        bitmap_base,
        shadows: BTreeMap::new(),
        live: BTreeSet::new(),
        declared: BTreeMap::new(),
        stats: PerforatedStats::default(),
        next_pinned_region: 0,
    }));
    Ok(())
}

/// The reserved region of hole bitmaps: one bit per frame of memory, in
/// one block of unmovable kernel memory (KSM's punch reserves its own).
pub fn reserve_bitmaps(k: &mut Kernel) -> Result<Pfn> {
    let pages = k.mem.nr_frames().div_ceil(8 * 4096).max(1);
    let order = Order::new(pages.next_power_of_two().trailing_zeros() as u8);
    k.mem
        .alloc(order, Migratetype::Unmovable, FrameOwner::Kernel)
        .ok_or_else(|| Error::Workload(format!("no free block of order {} for the hole bitmaps", order.get())))
}

/// What the perforated system did.
#[derive(Debug, Default, Clone)]
pub struct PerforatedStats {
    /// Perforated pages made.
    pub created: u64,
    /// Fragmented regions the rule kept from being perforated pages.
    pub declined: u64,
    /// Fragmented regions given 4 KiB pages (declined, or no 2 MiB block).
    pub fragmented: u64,
    /// Perforated pages whose whole range was unmapped (a TLB flush each).
    pub flushes: u64,
    /// Perforated pages made ordinary 4 KiB mappings by a whole mprotect.
    pub demoted: u64,
}

impl PerforatedStats {
    fn report(&self, out: &mut Stats, pages: u64, holes: u64) {
        put_ints(out, "perforated.", &[("pages", pages), ("holes", holes)]);
        out.insert("mem.mapped.perforated".into(), Stat::Int(pages * HUGE));
        put_ints(
            out,
            "os.perforated.",
            &[
                ("created", self.created),
                ("declined", self.declined),
                ("fragmented", self.fragmented),
                ("flushes", self.flushes),
                ("demoted", self.demoted),
            ],
        );
    }
}

#[derive(Debug)]
pub struct Perforated {
    /// Make perforated pages (`perforated`), or only fragment (`holes`).
    make: bool,
    cfg: PerforatedConfig,
    kind: HoleKind,
    scenario: HoleScenario,
    bitmap_base: Option<Pfn>,
    /// The shadow PMD table of each PMD table (by process and 1 GiB
    /// region) that has held a perforated page.
    shadows: BTreeMap<(Asid, u64), Pfn>,
    /// Perforated pages, by process and 2 MiB region.
    live: BTreeSet<(Asid, u64)>,
    /// The pages each process declares it never touches, by process and
    /// 2 MiB region (`ProcessSpec::untouched`; kept by `perforated` only).
    declared: BTreeMap<(Asid, u64), HoleBits>,
    stats: PerforatedStats,
    /// The next 2 MiB region of physical memory to try for a perforated
    /// page over pinned frames (regions are tried in order, each once).
    next_pinned_region: u64,
}

impl Perforated {
    /// The paper's creation rule (III-C).
    fn rule_allows(&self, holes: &HoleBits) -> bool {
        (count(holes) as f64) < self.cfg.max_unmovable * 512.0
            && filter_of(holes).count_ones() <= self.cfg.max_filter_bits
    }

    /// Backs the faulting page alone, from any frame (a fragmented region
    /// on a conventional kernel).
    fn back_4k(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let page = f.vaddr.align_down(4096);
        let owner = FrameOwner::User { asid: f.asid, vpn: page.vpn() };
        let frame = k.mem.alloc(Order::BASE, Migratetype::Movable, owner).ok_or_else(out_of_memory)?;
        k.map_user(f.asid, page, frame, PageSize::Size4K, f.vma.writable)?;
        self.stats.fragmented += 1;
        Ok(Some(FaultOutcome { kind: "fragmented", size: PageSize::Size4K, cycles: k.costs.base }))
    }

    /// Makes the region at `base` a perforated page with these holes, or
    /// `None` when no 2 MiB block is free.
    fn create(&mut self, k: &mut Kernel, f: &Fault, base: VirtAddr, holes: HoleBits) -> Result<Option<FaultOutcome>> {
        let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
        let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
            return Ok(None);
        };
        let under = if self.kind == HoleKind::Allocated { Under::Remapped } else { Under::Unbacked };
        self.install(k, f, base, frame, holes, under)
    }

    /// A region whose declared untouched pages become unallocated holes,
    /// their frames freed; `None` (down the chain) when the rule refuses
    /// or no 2 MiB block is free.
    fn over_untouched(
        &mut self,
        k: &mut Kernel,
        f: &Fault,
        base: VirtAddr,
        holes: HoleBits,
    ) -> Result<Option<FaultOutcome>> {
        if !self.rule_allows(&holes) {
            self.stats.declined += 1;
            return Ok(None);
        }
        let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
        let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
            return Ok(None);
        };
        self.install(k, f, base, frame, holes, Under::Freed)
    }

    /// When no free 2 MiB block is left (while one is, THP next in the
    /// chain takes it): a perforated page over the next 2 MiB region of
    /// physical memory whose frames are all free or pinned (not movable:
    /// the kernel's, as a booted snapshot's used frames are, a page
    /// table's, a pool's, faulty ones) and that the rule allows, its holes at
    /// the pinned frames, each remapped to a frame of its own (the program
    /// uses the whole region). The paper's III-C kernel does this with a
    /// fragmented machine's partly used pageblocks. `None` when there is
    /// no such region (the chain gives 4 KiB pages).
    fn over_pinned_frames(&mut self, k: &mut Kernel, f: &Fault, base: VirtAddr) -> Result<Option<FaultOutcome>> {
        if !self.make || k.mem.free_pages_at_or_above(Order::PMD) > 0 {
            return Ok(None);
        }
        while let Some((frame, holes)) = next_pinned_region(&k.mem, &mut self.next_pinned_region) {
            if !self.rule_allows(&holes) {
                self.stats.declined += 1;
                continue;
            }
            for i in (0..512).filter(|&i| !is_hole(&holes, i as usize)) {
                let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn().add(i) };
                let taken = k.mem.alloc_specific(frame.add(i), Order::BASE, owner);
                debug_assert!(taken, "frame {i} of the region was free");
            }
            return self.install(k, f, base, frame, holes, Under::Remapped);
        }
        Ok(None)
    }

    /// Maps the region at `base` as a perforated page of the 2 MiB frame
    /// `frame` (taken, save its pinned frames) with these holes.
    fn install(
        &mut self,
        k: &mut Kernel,
        f: &Fault,
        base: VirtAddr,
        frame: Pfn,
        holes: HoleBits,
        under: Under,
    ) -> Result<Option<FaultOutcome>> {
        let (asid, writable) = (f.asid, f.vma.writable);
        for i in 0..512 {
            let page = base.add(i * 4096);
            let owner = FrameOwner::User { asid, vpn: page.vpn() };
            if !is_hole(&holes, i as usize) {
                k.mem.set_owner(frame.add(i), owner);
                k.map_user(asid, page, frame.add(i), PageSize::Size4K, writable)?;
                continue;
            }
            if under == Under::Freed {
                k.mem.free(frame.add(i), Order::BASE);
                continue;
            }
            // The frame under a hole stands for the unmovable data that
            // made the region fragmented: a frame of the block taken for
            // the page becomes the kernel's; a pinned one keeps its owner.
            if matches!(k.mem.owner(frame.add(i)), FrameOwner::User { .. }) {
                k.mem.set_owner(frame.add(i), FrameOwner::Kernel);
            }
            if under == Under::Remapped {
                let other = k.mem.alloc(Order::BASE, Migratetype::Movable, owner).ok_or_else(out_of_memory)?;
                k.map_user(asid, page, other, PageSize::Size4K, writable)?;
            }
        }
        let shadow = self.shadow_entry(k, asid, base)?;
        let bitmap_base = self.bitmap_base.expect("the perforated system reserves bitmaps").addr();
        let p = Perforation {
            frame,
            filter: filter_of(&holes),
            variant: self.cfg.variant.code() as u8,
            writable,
            shadow,
            bitmap_line: bitmap_base.add(frame.raw() / 8),
            holes,
        };
        set_perforated(k.page_table_mut(asid), base, &p);
        self.live.insert((asid, base.raw() >> 21));
        self.stats.created += 1;
        Ok(Some(FaultOutcome { kind: "perforated", size: PageSize::Size2M, cycles: k.costs.thp }))
    }

    /// The physical address of the shadow PMD entry of `base`'s region:
    /// in the shadow table of its PMD table, made with the first
    /// perforated page under it.
    fn shadow_entry(&mut self, k: &mut Kernel, asid: Asid, base: VirtAddr) -> Result<PhysAddr> {
        let table = match self.shadows.get(&(asid, base.raw() >> 30)) {
            Some(&t) => t,
            None => {
                let owner = FrameOwner::PageTable { asid };
                let t = k.mem.alloc(Order::BASE, Migratetype::Unmovable, owner).ok_or_else(out_of_memory)?;
                self.shadows.insert((asid, base.raw() >> 30), t);
                t
            }
        };
        Ok(table.addr().add(table_index(base, 2) as u64 * 8))
    }

    /// The perforated pages of `asid` overlapping [start, end), by base.
    fn live_in(&self, asid: Asid, start: VirtAddr, end: VirtAddr) -> Vec<VirtAddr> {
        let (first, last) = (start.raw() >> 21, (end.raw() - 1) >> 21);
        self.live.range((asid, first)..=(asid, last)).map(|&(_, r)| VirtAddr::new(r << 21)).collect()
    }

    /// Perforated pages still in the page tables, and their holes.
    fn census(&self, k: &Kernel) -> (u64, u64) {
        let mut pages = 0;
        let mut holes = 0;
        for &(asid, r) in &self.live {
            if let Some(p) = perforation_at(&k.proc(asid).aspace.pt, VirtAddr::new(r << 21)) {
                pages += 1;
                holes += count(&p.holes) as u64;
            }
        }
        (pages, holes)
    }
}

/// The pages process `asid` never touches under the scenario `os.holes`:
/// the holes of its fragmented regions when they are unallocated (VII-B:
/// "unallocated hole pages are not accessed"), whatever the chain, so that
/// every kernel runs the same program; `None` when it touches them all.
fn untouched_pages(os: &super::OsConfig, seed: u64, asid: Asid) -> Option<super::Untouched> {
    let scenario = HoleScenario::new(&os.holes, seed);
    let untouched = move |r| scenario.holes(asid, r);
    (scenario.active() && os.holes.kind == HoleKind::Unallocated).then(|| Box::new(untouched) as super::Untouched)
}

/// The next 2 MiB region of physical memory, from `cursor` on, whose frames
/// are all free or pinned (at least one pinned, at least one free): its
/// first frame and its pinned frames as holes. A user page (movable, but
/// moving it is compaction's work, which the fault does not do) rules a
/// region out.
fn next_pinned_region(mem: &crate::phys::PhysMem, cursor: &mut u64) -> Option<(Pfn, HoleBits)> {
    while (*cursor + 1) * 512 <= mem.nr_frames() {
        let frame = Pfn::new(*cursor * 512);
        *cursor += 1;
        let mut holes = [0u64; 8];
        let usable = (0..512).all(|i| match mem.owner(frame.add(i)) {
            FrameOwner::Free => true,
            FrameOwner::User { .. } => false,
            _ => {
                set_hole(&mut holes, i as usize, true);
                true
            }
        });
        if usable && holes != [0; 8] && count(&holes) < 512 {
            return Some((frame, holes));
        }
    }
    None
}

/// What a perforated page's hole leaves of the frame under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Under {
    /// The frame stands for unmovable data (the kernel's) and the page is
    /// unbacked: a fragmentation scenario's unallocated hole.
    Unbacked,
    /// The same frame, and the page backed by a frame of its own (an
    /// allocated hole, a faulty frame's).
    Remapped,
    /// The program never touches the page: its frame is given back to the
    /// allocator and the page stays unbacked.
    Freed,
}

fn out_of_memory() -> Error {
    Error::Workload("out of memory backing a perforated page's holes".into())
}

impl System for Perforated {
    fn name(&self) -> &'static str {
        if self.make {
            "perforated"
        } else {
            "holes"
        }
    }

    fn spawn(&mut self, _k: &mut Kernel, asid: Asid, spec: &crate::os::ProcessSpec) {
        if self.make {
            self.declared.extend(spec.untouched.iter().map(|&(region, mask)| ((asid, region), mask)));
        }
    }

    /// A fragmented region's first fault: a perforated page, or 4 KiB
    /// pages; whole regions and later faults go down the chain.
    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let base = f.vaddr.align_down(HUGE);
        if !f.vma.covers(base, HUGE) || !k.range_is_empty(f.asid, base, PageSize::Size2M) {
            return Ok(None);
        }
        let region = base.raw() >> 21;
        let Some(holes) = self.scenario.holes(f.asid, region) else {
            if let Some(&holes) = self.declared.get(&(f.asid, region)) {
                return self.over_untouched(k, f, base, holes);
            }
            return self.over_pinned_frames(k, f, base);
        };
        if self.make {
            if !self.rule_allows(&holes) {
                self.stats.declined += 1;
            } else if let Some(outcome) = self.create(k, f, base, holes)? {
                return Ok(Some(outcome));
            }
        }
        self.back_4k(k, f)
    }

    /// munmap: a perforated page wholly inside the range stops being one,
    /// and the process's TLB entries are flushed (IV-E: its entries could
    /// number 512 + 17); one cut by the range gets holes where it is
    /// unmapped (the kernel's shootdown of the range then drops the
    /// sub-pages' entries, their bitmap entries and the perforated entry).
    fn before_unmap(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        for base in self.live_in(asid, start, end) {
            let pt = k.page_table_mut(asid);
            if base >= start && base.add(HUGE) <= end {
                clear_perforated(pt, base);
                self.live.remove(&(asid, base.raw() >> 21));
                k.shoot(asid, VirtAddr::new(0), VirtAddr::new(1 << 57));
                self.stats.flushes += 1;
            } else {
                punch_range(pt, base, start, end);
            }
        }
    }

    /// mprotect: the pages of a perforated page the range cuts become
    /// holes (their permission may differ from the page's); a perforated
    /// page wholly inside becomes ordinary 4 KiB mappings (the hook does
    /// not say the new permission, which the page's entry carries).
    fn protect(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        for base in self.live_in(asid, start, end) {
            let pt = k.page_table_mut(asid);
            if base >= start && base.add(HUGE) <= end {
                clear_perforated(pt, base);
                self.live.remove(&(asid, base.raw() >> 21));
                self.stats.demoted += 1;
            } else {
                punch_range(pt, base, start, end);
            }
        }
    }

    /// A perforated page's non-holes must stay at their place in its
    /// 2 MiB frame.
    fn may_migrate(&self, pt: &crate::paging::PageTable, vpn: crate::units::Vpn) -> bool {
        match perforation_at(pt, vpn.addr()) {
            Some(p) => is_hole(&p.holes, (vpn.raw() & 511) as usize),
            None => true,
        }
    }

    fn report(&self, k: &Kernel, out: &mut Stats) {
        if self.make {
            let (pages, holes) = self.census(k);
            self.stats.report(out, pages, holes);
        } else {
            out.insert("os.holes.fragmented".into(), Stat::Int(self.stats.fragmented));
        }
    }

    fn reset_stats(&mut self) {
        self.stats = PerforatedStats::default();
    }
}

/// Marks the pages of the perforated page at `base` inside [start, end)
/// holes, and updates its filter.
fn punch_range(pt: &mut crate::paging::PageTable, base: VirtAddr, start: VirtAddr, end: VirtAddr) {
    let Some(mut p) = perforation_at(pt, base) else { return };
    let (from, to) = (start.max(base), end.min(base.add(HUGE)));
    for i in (from.raw() - base.raw()) / 4096..(to.raw() - base.raw()).div_ceil(4096) {
        set_hole(&mut p.holes, i as usize, true);
    }
    p.filter = filter_of(&p.holes);
    set_perforated(pt, base, &p);
}

/// Punches a hole at the sub-page of `vaddr` of a perforated page and
/// remaps it, writable, to a new frame (a copy-on-write of that sub-page:
/// the rest of the page stays as it is). Shoots down the one sub-page
/// (its 4 KiB entries, its bitmap entry, and the perforated entry, whose
/// filter may change). Returns the new frame.
///
/// A perforated page other processes share (the same 2 MiB frame at the
/// same address, as after a fork: the paper's Figure 1) shares its hole
/// bitmap, which belongs to the physical region: each sharer gets the
/// hole too, its hole PTE still mapping the original sub-page in the
/// 2 MiB frame (a hole that maps its own place: right, at the cost of a
/// hole walk), and the same shootdown. The original frame becomes the
/// first sharer's.
pub fn punch(k: &mut Kernel, asid: Asid, vaddr: VirtAddr) -> Result<Pfn> {
    let base = vaddr.align_down(HUGE);
    let mut p = perforation_at(&k.proc(asid).aspace.pt, base)
        .ok_or_else(|| Error::Workload(format!("punch at {vaddr}: not a perforated page")))?;
    let page = vaddr.align_down(4096);
    let owner = FrameOwner::User { asid, vpn: page.vpn() };
    let frame = k.mem.alloc(Order::BASE, Migratetype::Movable, owner).ok_or_else(out_of_memory)?;
    let sharers = sharers(k, asid, base, p.frame);
    let pt = k.page_table_mut(asid);
    let slot = pt.leaf_slot(page).expect("a perforated page has its PTE page");
    let old = pt.entry(slot);
    let i = (page.raw() - base.raw()) as usize / 4096;
    if old.present() {
        pt.replace(slot, Pte::leaf(frame, true, false));
        if old.pfn() == p.frame.add(i as u64) {
            // The page being copied stays where it is, for whoever else
            // maps it: no longer this process's.
            let keeper = sharers.first().map_or(FrameOwner::Kernel, |&q| FrameOwner::User { asid: q, vpn: page.vpn() });
            k.mem.set_owner(old.pfn(), keeper);
        } else {
            k.mem.free(old.pfn(), Order::BASE);
        }
    } else {
        k.map_user(asid, page, frame, PageSize::Size4K, true)?;
    }
    set_hole(&mut p.holes, i, true);
    p.filter = filter_of(&p.holes);
    set_perforated(k.page_table_mut(asid), base, &p);
    k.shoot(asid, page, page.add(4096));
    for q in sharers {
        let pt = k.page_table_mut(q);
        let mut theirs = perforation_at(pt, base).expect("a sharer maps the perforated page");
        set_hole(&mut theirs.holes, i, true);
        theirs.filter = filter_of(&theirs.holes);
        set_perforated(pt, base, &theirs);
        k.shoot(q, page, page.add(4096));
    }
    Ok(frame)
}

/// The other processes whose page table at `base` is a perforated page
/// over the 2 MiB frame `frame`.
fn sharers(k: &Kernel, asid: Asid, base: VirtAddr, frame: Pfn) -> Vec<Asid> {
    (1..=k.procs.len() as Asid)
        .filter(|&q| q != asid && perforation_at(&k.proc(q).aspace.pt, base).is_some_and(|p| p.frame == frame))
        .collect()
}

/// Patches the hole at the sub-page of `vaddr`: its place in the 2 MiB
/// frame is the process's again (the unmovable frame there was freed, or
/// compaction moved it), the hole's own frame, if any, is freed. Shoots
/// down the one sub-page as [`punch`] does.
pub fn patch(k: &mut Kernel, asid: Asid, vaddr: VirtAddr) -> Result<()> {
    let base = vaddr.align_down(HUGE);
    let mut p = perforation_at(&k.proc(asid).aspace.pt, base)
        .ok_or_else(|| Error::Workload(format!("patch at {vaddr}: not a perforated page")))?;
    let page = vaddr.align_down(4096);
    let i = (page.raw() - base.raw()) as usize / 4096;
    if !is_hole(&p.holes, i) {
        return Ok(());
    }
    let home = p.frame.add(i as u64);
    k.mem.set_owner(home, FrameOwner::User { asid, vpn: page.vpn() });
    let pt = k.page_table_mut(asid);
    let slot = pt.leaf_slot(page).expect("a perforated page has its PTE page");
    let old = pt.entry(slot);
    if old.present() {
        pt.replace(slot, Pte::leaf(home, p.writable, false));
        k.mem.free(old.pfn(), Order::BASE);
    } else {
        k.map_user(asid, page, home, PageSize::Size4K, p.writable)?;
    }
    set_hole(&mut p.holes, i, false);
    p.filter = filter_of(&p.holes);
    set_perforated(k.page_table_mut(asid), base, &p);
    k.shoot(asid, page, page.add(4096));
    Ok(())
}
