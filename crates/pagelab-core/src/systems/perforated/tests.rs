//! Perforated pages, end to end. The hand-worked cases build one
//! perforated page whose holes are known: the scenario makes it (a few
//! clustered holes), then every hole is patched and pages 70 and 100 (both
//! in 256 KiB region 1, pages 64..127) are punched, so the filter is 0b10
//! and the bitmap has bits 70 and 100. A fresh MMU without page-walk
//! caches then translates by hand, row by row of the paper's Figure 5,
//! with an L2 TLB latency of 9 cycles.

use proptest::prelude::*;

use super::holes::{count, is_hole};
use super::pagetable::{perforation_at, Perforation};
use super::{patch, punch};
use crate::config::SimConfig;
use crate::engine::mmu::Mmu;
use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::{CoreStats, RefBuf, Simulation};
use crate::hw::pwc::Pwc;
use crate::hw::tlb::{ExtPayload, Tlb, TlbLookup, KIND_HOLE_BITMAP};
use crate::phys::FrameOwner;
use crate::systems::perforated::tlb::{HolePage, PerforatedKind, PerforatedPage};
use crate::systems::ExtKind;
use crate::units::{Pfn, VirtAddr};
use crate::workload::MapEvent;

const HUGE: u64 = 2 << 20;
const L2: f64 = 9.0;

fn perforated_config(extra: &[&str]) -> SimConfig {
    let mut all = vec![
        "os.policy=\"perforated\"",
        "os.thp.khugepaged=false",
        "os.holes.portion=1.0",
        "os.holes.degree=0.01",
        "run.check_translations=true",
    ];
    all.extend_from_slice(extra);
    config(&all)
}

/// A simulation that made one perforated page at BASE, with holes exactly
/// at pages 70 and 100 (punched: remapped to frames of their own).
fn known_page(extra: &[&str]) -> (Simulation, Perforation) {
    let mut sim = simulate(perforated_config(extra), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 1))]).unwrap();
    let p = holes_at_70_and_100(&mut sim.kernel);
    (sim, p)
}

/// Process 1's perforated page at BASE, made by the scenario at degree
/// 0.01 (5 holes), with every hole patched and pages 70 and 100 punched
/// (its shootdowns dropped): the page the hand-worked cases use, natively
/// and in a guest (`walk2d_tests.rs`).
pub(crate) fn holes_at_70_and_100(k: &mut crate::os::Kernel) -> Perforation {
    let made = perforation_at(&k.proc(1).aspace.pt, BASE).expect("a perforated page");
    assert_eq!(count(&made.holes), 5, "degree 0.01 of 512 pages");
    for i in (0..512).filter(|&i| is_hole(&made.holes, i)) {
        patch(k, 1, page(i as u64)).unwrap();
    }
    punch(k, 1, page(70)).unwrap();
    punch(k, 1, page(100)).unwrap();
    k.drain_shootdowns().for_each(drop);
    let p = perforation_at(&k.proc(1).aspace.pt, BASE).unwrap();
    assert_eq!(p.filter, 0b10);
    assert_eq!((0..512).filter(|&i| is_hole(&p.holes, i)).collect::<Vec<_>>(), vec![70, 100]);
    p
}

fn page(i: u64) -> VirtAddr {
    BASE.add(i * 4096)
}

fn mmu(sim: &Simulation, cfg: &SimConfig) -> Mmu {
    let mut m = cfg.machine.clone();
    m.pwc.enabled = false;
    Mmu {
        tlb: Tlb::with_extensions(&m.tlb, 1, crate::systems::tlb_extensions(sim.kernel.color_map(), true)),
        pwc: Pwc::new(&m.pwc, 4, 1),
        l2_tlb_latency: L2,
        walk_latency: 0.0,
        check: true,
    }
}

/// One access by hand: the frame, the references it made, and its
/// translation cycles (L2 TLB accesses x 9).
struct Probe {
    refs: RefBuf,
    stats: CoreStats,
}

impl Probe {
    fn new() -> Self {
        Probe { refs: RefBuf::default(), stats: CoreStats::default() }
    }
    fn access(&mut self, mmu: &mut Mmu, sim: &mut Simulation, va: VirtAddr) -> (Pfn, Vec<u64>, f64) {
        self.access_as(1, mmu, sim, va)
    }
    fn access_as(&mut self, asid: u16, mmu: &mut Mmu, sim: &mut Simulation, va: VirtAddr) -> (Pfn, Vec<u64>, f64) {
        self.refs.clear();
        let before = self.stats.cycles_translation;
        let req = crate::engine::mmu::Request { asid, ..crate::engine::testutil::req(va) };
        let frame = mmu.translate(&mut sim.kernel, req, &mut self.refs, &mut self.stats);
        let refs = (0..self.refs.len()).map(|j| self.refs.get(j).0).collect();
        (frame.unwrap(), refs, self.stats.cycles_translation - before)
    }
}

fn counters(mmu: &Mmu) -> (u64, u64, u64, u64) {
    let c = mmu.tlb.extensions().perforated.counters;
    (c.filter_hits, c.bitmap_lookups, c.bitmap_refs, c.hole_walks)
}

fn frame_in_pt(sim: &Simulation, va: VirtAddr) -> Pfn {
    sim.kernel.proc(1).aspace.pt.lookup(va).unwrap().frame
}

#[test]
fn figure_5_row_by_row() {
    let cfg = perforated_config(&[]);
    let (mut sim, p) = known_page(&[]);
    let mut mmu = mmu(&sim, &cfg);
    let mut probe = Probe::new();
    // An L2 miss: the walk reads PML4, PDPT and the perforated PMD (3
    // references, the one L2 access); page 0's region has no hole, so the
    // filter answers: a 4 KiB entry for the L1 from the 2 MiB frame.
    let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(0));
    assert_eq!((f, refs.len(), cycles), (p.frame, 3, L2));
    assert_eq!(counters(&mmu), (1, 0, 0, 0));
    // Row 1: L1 miss, L2 hit, the filter says no hole: no reference, one
    // L2 access.
    let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(5));
    assert_eq!((f, refs, cycles), (p.frame.add(5), vec![], L2));
    assert_eq!(counters(&mmu), (2, 0, 0, 0));
    // Row 4: region 1 may hold holes; the bitmap entry of pages 64..95 is
    // not in the L2: one reference to its bytes in the bitmap's line
    // (65 / 32 = chunk 2, 4 bytes each), a second L2 access; page 65 is
    // no hole, so the 2 MiB frame translates it.
    let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(65));
    assert_eq!((f, refs, cycles), (p.frame.add(65), vec![p.bitmap_line.raw() + 8], 2.0 * L2));
    assert_eq!(counters(&mmu), (2, 1, 1, 0));
    // Row 2: the bitmap entry is in the L2 now, and says no hole.
    let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(66));
    assert_eq!((f, refs, cycles), (p.frame.add(66), vec![], 2.0 * L2));
    assert_eq!(counters(&mmu), (2, 2, 1, 0));
    // Row 3: the bitmap in the L2 says hole: the hole walk reads the
    // shadow PMD entry and the hole's PTE; the punched frame, not the 2
    // MiB frame's.
    let pte_70 = hole_pte_addr(&sim, 70);
    let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(70));
    assert_eq!((f, refs, cycles), (frame_in_pt(&sim, page(70)), vec![p.shadow.raw(), pte_70], 2.0 * L2));
    assert_ne!(f, p.frame.add(70));
    assert_eq!(counters(&mmu), (2, 3, 1, 1));
    // Row 5: bitmap of pages 96..127 not in the L2, page 100 a hole: the
    // bitmap reference, then the hole walk.
    let pte_100 = hole_pte_addr(&sim, 100);
    let (f, refs, _) = probe.access(&mut mmu, &mut sim, page(100));
    assert_eq!((f, refs), (frame_in_pt(&sim, page(100)), vec![p.bitmap_line.raw() + 12, p.shadow.raw(), pte_100]));
    assert_eq!(counters(&mmu), (2, 4, 2, 2));
    // The hole's entry went into the L2 and the L1: an L1 hit now.
    let (_, refs, cycles) = probe.access(&mut mmu, &mut sim, page(70));
    assert_eq!((refs.len(), cycles), (0, 0.0));
    let kinds: Vec<u8> = mmu.tlb.l2_kinds().map(|(k, _)| k).collect();
    // (The TLB's numbers of the two kinds, as the registry gives them.)
    let page_kind = ExtKind::Perforated(PerforatedKind::Page(PerforatedPage::default())).kind();
    let hole_kind = ExtKind::Perforated(PerforatedKind::Hole(HolePage::default())).kind();
    assert_eq!(kinds.iter().filter(|&&k| k == page_kind).count(), 1);
    assert_eq!(kinds.iter().filter(|&&k| k == KIND_HOLE_BITMAP).count(), 2);
    assert_eq!(kinds.iter().filter(|&&k| k == hole_kind).count(), 2);
}

/// The physical address of the hole table's PTE of page `i` of BASE.
fn hole_pte_addr(sim: &Simulation, i: usize) -> u64 {
    let pt = &sim.kernel.proc(1).aspace.pt;
    let (table, _) = pt.pmd_table_of(BASE).unwrap();
    pt.entry_at(table, i).1.raw()
}

#[test]
fn without_the_filter_every_access_consults_the_bitmap_and_naive_loads_all_sixteen() {
    for (variant, bitmaps) in [("on-demand", 1), ("naive", 16)] {
        let set = format!("os.perforated.variant=\"{variant}\"");
        let cfg = perforated_config(&[&set]);
        let (mut sim, p) = known_page(&[&set]);
        let mut mmu = mmu(&sim, &cfg);
        let mut probe = Probe::new();
        // Page 5's region has no hole, but without a filter the bitmap is
        // fetched (one reference, after the walk's three).
        let (f, refs, cycles) = probe.access(&mut mmu, &mut sim, page(5));
        assert_eq!((f, refs.len(), cycles), (p.frame.add(5), 4, 2.0 * L2), "{variant}");
        assert_eq!(refs[3], p.bitmap_line.raw(), "{variant}");
        assert_eq!(counters(&mmu), (0, 1, 1, 0), "{variant}");
        let cached = mmu.tlb.l2_kinds().filter(|&(k, _)| k == KIND_HOLE_BITMAP).count();
        assert_eq!(cached, bitmaps, "{variant}");
        // Page 100 (chunk 3): naive has its bitmap already.
        let (_, refs, _) = probe.access(&mut mmu, &mut sim, page(100));
        assert_eq!(refs.len(), if variant == "naive" { 2 } else { 3 }, "{variant}");
    }
}

/// Fills the TLB with page 0..128's translations through the perforated
/// page, then returns it.
fn warm(sim: &mut Simulation, cfg: &SimConfig) -> Mmu {
    let mut mmu = mmu(sim, cfg);
    let mut probe = Probe::new();
    for i in 0..128 {
        probe.access(&mut mmu, sim, page(i));
    }
    mmu
}

fn shoot(sim: &mut Simulation, mmu: &mut Mmu) -> usize {
    let s: Vec<_> = sim.kernel.drain_shootdowns().collect();
    assert_eq!(s.len(), 1);
    mmu.tlb.invalidate_range(s[0].asid, s[0].start, s[0].end)
}

#[test]
fn punch_and_patch_shoot_down_the_sub_page_its_bitmap_entry_and_the_perforated_entry() {
    let cfg = perforated_config(&["machine.tlb.l1_4k_entries=256", "machine.tlb.l1_4k_ways=8"]);
    let (mut sim, p) = known_page(&["machine.tlb.l1_4k_entries=256", "machine.tlb.l1_4k_ways=8"]);
    let mut mmu = warm(&mut sim, &cfg);
    // Punch page 66 (a copy-on-write): its L1 entry, the bitmap entry of
    // pages 64..95 and the perforated entry (its filter is cached in it).
    let new = punch(&mut sim.kernel, 1, page(66)).unwrap();
    assert_eq!(shoot(&mut sim, &mut mmu), 3);
    assert!(matches!(mmu.tlb.peek(1, page(65), false), TlbLookup::L1(_)), "the neighbours' L1 entries stay");
    let mut probe = Probe::new();
    assert_eq!(probe.access(&mut mmu, &mut sim, page(66)).0, new);
    // Patch page 70: the hole's L1 and L2 entries, its bitmap entry (the
    // one of 64..95 again), the perforated entry.
    patch(&mut sim.kernel, 1, page(70)).unwrap();
    assert_eq!(shoot(&mut sim, &mut mmu), 4);
    assert_eq!(probe.access(&mut mmu, &mut sim, page(70)).0, p.frame.add(70));
    // Every page still translates as the page table says (check mode).
    for i in 0..512 {
        probe.access(&mut mmu, &mut sim, page(i));
    }
}

#[test]
fn a_fragmented_region_is_a_perforated_page_under_the_rule_and_4k_pages_otherwise() {
    let touch_all = || vec![batch(vec![mmap(BASE, 4 * HUGE)], stores(BASE, 4 * 512))];
    // Degree 0.1 clustered: 51 holes, two or so filter bits: allowed.
    let sim = simulate(perforated_config(&["os.holes.degree=0.1"]), touch_all()).unwrap();
    assert_eq!(stat(&sim, "perforated.pages"), 4.0);
    assert_eq!(stat(&sim, "perforated.holes"), 4.0 * 51.0);
    assert_eq!(stat(&sim, "mem.mapped.perforated"), 4.0 * HUGE as f64);
    assert_eq!(stat(&sim, "os.faults.perforated"), 4.0);
    // The holes were backed at creation (allocated): no later fault.
    assert_eq!(stat(&sim, "faults"), 4.0);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 4.0 * HUGE as f64);
    // Degree 0.3: over the rule's 25%: 4 KiB pages, as a conventional
    // kernel gives them.
    let sim = simulate(perforated_config(&["os.holes.degree=0.3"]), touch_all()).unwrap();
    assert_eq!(stat(&sim, "perforated.pages"), 0.0);
    assert_eq!(stat(&sim, "os.perforated.declined"), 4.0);
    assert_eq!(stat(&sim, "faults"), 4.0 * 512.0);
    // Dispersed degree 0.1: every filter bit set, over the rule's 4.
    let dispersed = perforated_config(&["os.holes.degree=0.1", "os.holes.distribution=\"dispersed\""]);
    let sim = simulate(dispersed, touch_all()).unwrap();
    assert_eq!(stat(&sim, "os.perforated.declined"), 4.0);
    // The conventional kernel under the same scenario: `holes` first.
    let holes = perforated_config(&["os.holes.degree=0.1", "os.systems=[\"holes\",\"thp\",\"base\"]"]);
    let sim = simulate(holes, touch_all()).unwrap();
    assert_eq!(stat(&sim, "os.holes.fragmented"), 4.0);
    assert_eq!((stat(&sim, "mem.mapped.2m"), stat(&sim, "perforated.pages")), (0.0, 0.0));
}

#[test]
fn unallocated_holes_are_backed_when_touched_and_munmap_of_a_whole_page_flushes() {
    let cfg = perforated_config(&["os.holes.degree=0.1", "os.holes.kind=\"unallocated\""]);
    let unmap = (0, MapEvent::Munmap { start: BASE, len: HUGE });
    let sim = simulate(
        cfg.clone(),
        vec![
            batch(vec![mmap(BASE, HUGE)], stores(BASE, 512)),
            batch(vec![unmap], vec![]),
            batch(vec![mmap(BASE, HUGE)], stores(BASE, 512)),
        ],
    )
    .unwrap();
    // Each perforated page: its creating fault, then one fault per hole
    // touched (51), backed by `base`.
    assert_eq!(stat(&sim, "os.faults.perforated"), 2.0);
    assert_eq!(stat(&sim, "os.faults.base"), 2.0 * 51.0);
    assert_eq!(stat(&sim, "os.perforated.flushes"), 1.0);
    assert_eq!(stat(&sim, "perforated.pages"), 1.0);
    assert!(stat(&sim, "perforated.hole_walks") >= 51.0);
}

/// gups over two regions (4 MiB), every region fragmented with 51
/// unallocated holes (degree 0.1, clustered): the program never touches
/// the holes (VII-B), whatever the kernel.
fn gups_over_unallocated_holes(extra: &[&str]) -> Simulation {
    let mut all = vec![
        "os.holes.degree=0.1",
        "os.holes.kind=\"unallocated\"",
        "workload.footprint=\"4MiB\"",
        "workload.init=\"pages\"",
        "workload.accesses=20000",
        "workload.write_fraction=0.0",
    ];
    all.extend_from_slice(extra);
    let mut sim = Simulation::new(perforated_config(&all)).unwrap();
    sim.run().unwrap();
    sim
}

#[test]
fn the_microbenchmark_never_touches_unallocated_holes_on_any_kernel() {
    // Perforated pages: the two creating faults and nothing else; no hole
    // is walked, every access is a non-hole of a perforated page.
    let sim = gups_over_unallocated_holes(&[]);
    assert_eq!(stat(&sim, "perforated.pages"), 2.0);
    assert_eq!(stat(&sim, "perforated.holes"), 2.0 * 51.0);
    assert_eq!(stat(&sim, "faults"), 2.0);
    assert_eq!(stat(&sim, "perforated.hole_walks"), 0.0);
    // The conventional kernel and plain 4 KiB pages under the same
    // scenario back exactly the 1024 - 2 x 51 pages touched (the first of
    // each region by `holes`, the rest by `base`).
    let sim = gups_over_unallocated_holes(&["os.systems=[\"holes\",\"thp\",\"base\"]"]);
    assert_eq!(stat(&sim, "os.holes.fragmented"), 2.0);
    assert_eq!(stat(&sim, "faults"), 1024.0 - 102.0);
    let sim = gups_over_unallocated_holes(&["os.policy=\"base\""]);
    assert_eq!(stat(&sim, "faults"), 1024.0 - 102.0);
    // Allocated holes are touched (and were backed at creation).
    let sim = gups_over_unallocated_holes(&["os.holes.kind=\"allocated\""]);
    assert_eq!(stat(&sim, "faults"), 2.0);
    assert!(stat(&sim, "perforated.hole_walks") > 0.0);
}

#[test]
fn partial_munmap_punches_holes_and_translations_stay_right() {
    let cfg = perforated_config(&["os.holes.degree=0.1"]);
    let unmap = (0, MapEvent::Munmap { start: BASE.add(64 * 4096), len: 8 * 4096 });
    let sim =
        simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512)), batch(vec![unmap], stores(BASE, 64))])
            .unwrap();
    let p = perforation_at(&sim.kernel.proc(1).aspace.pt, BASE).unwrap();
    assert!((64..72).all(|i| is_hole(&p.holes, i)));
    assert_eq!(
        stat(&sim, "perforated.holes"),
        51.0 + 8.0 - (64..72).filter(|&i| is_hole(&first_holes(), i)).count() as f64
    );
}

/// The holes the scenario gives BASE's region at degree 0.1 (seed of the
/// test configuration).
fn first_holes() -> super::holes::HoleBits {
    let cfg = perforated_config(&["os.holes.degree=0.1"]);
    super::holes::HoleScenario::new(&cfg.os.holes, cfg.run.seed).holes(1, BASE.raw() >> 21).unwrap()
}

#[test]
fn the_l2_occupancy_is_sampled_by_kind_only_with_the_system() {
    let touch = || vec![batch(vec![mmap(BASE, 2 * HUGE)], stores(BASE, 2 * 512))];
    let sim = simulate(perforated_config(&["os.holes.degree=0.1"]), touch()).unwrap();
    let shares: f64 =
        ["4k", "2m", "perforated", "bitmap", "hole"].iter().map(|k| stat(&sim, &format!("dtlb.l2.share.{k}"))).sum();
    assert!((shares - 1.0).abs() < 1e-9, "shares sum to {shares}");
    assert!(stat(&sim, "dtlb.l2.share.perforated") > 0.0);
    let sim = simulate(config(&["os.policy=\"thp\""]), touch()).unwrap();
    assert_eq!(stat(&sim, "dtlb.l2.share.2m"), 0.0, "not sampled without the system");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Whatever its holes (punched, patched, allocated or not), a
    /// perforated page translates every address as the equivalent 4 KiB
    /// mappings in its page table do (check mode compares each).
    #[test]
    fn a_perforated_page_translates_as_its_4k_mappings(
        ops in proptest::collection::vec((0u64..512, any::<bool>()), 0..24),
        accesses in proptest::collection::vec(0u64..512, 1..200),
        variant in 0usize..3,
    ) {
        let set = format!("os.perforated.variant=\"{}\"", ["naive", "on-demand", "on-demand-filter"][variant]);
        let cfg = perforated_config(&[&set, "os.holes.degree=0.1"]);
        let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 1))]).unwrap();
        let mut mmu = mmu(&sim, &cfg);
        let mut probe = Probe::new();
        for (n, &(i, is_punch)) in ops.iter().enumerate() {
            if is_punch { punch(&mut sim.kernel, 1, page(i)).unwrap(); } else { patch(&mut sim.kernel, 1, page(i)).unwrap(); }
            let s: Vec<_> = sim.kernel.drain_shootdowns().collect();
            for s in &s { mmu.shoot_down(s); }
            for &a in accesses.iter().skip(n * 8).take(8) {
                let (f, _, _) = probe.access(&mut mmu, &mut sim, page(a));
                prop_assert_eq!(f, frame_in_pt(&sim, page(a)));
            }
        }
        for &a in &accesses {
            let (f, _, _) = probe.access(&mut mmu, &mut sim, page(a).add(0x123));
            prop_assert_eq!(f, frame_in_pt(&sim, page(a)));
        }
    }
}

fn redis_like(extra: &[&str]) -> Simulation {
    let mut all = vec![
        "os.holes.portion=0.0",
        "os.perforated.max_filter_bits=8",
        "workload.kind=\"kv\"",
        "workload.objects=300",
        "workload.object_size=16390",
        "workload.cache_oblivious=true",
        "workload.distribution=\"uniform\"",
        "workload.get_ratio=1.0",
        "workload.init=\"pages\"",
        "workload.accesses=30000",
    ];
    all.extend_from_slice(extra);
    let mut sim = Simulation::new(perforated_config(&all)).unwrap();
    sim.run().unwrap();
    sim
}

#[test]
fn declared_untouched_pages_become_unallocated_holes_whose_frames_are_free() {
    // 300 values of a 24 KiB extent each (7 MiB): their pad pages, one in
    // six, are declared untouched. Each whole 2 MiB region of the heap
    // becomes a perforated page with exactly its pad pages as holes; THP
    // backs those pages too (the bloat), 4 KiB pages never do.
    let perforated = redis_like(&[]);
    let (pages, holes) = (stat(&perforated, "perforated.pages"), stat(&perforated, "perforated.holes"));
    assert!(pages >= 2.0, "{pages} perforated pages");
    assert!((pages * 85.0..=pages * 86.0).contains(&holes), "{holes} holes in {pages} pages: 2 MiB / 24 KiB");
    assert_eq!(stat(&perforated, "perforated.hole_walks"), 0.0, "no hole is ever touched");
    let thp = redis_like(&["os.policy=\"thp\""]);
    let base = redis_like(&["os.policy=\"base\""]);
    // The program's frames (page tables, the shadow table and the bitmaps
    // apart): each hole's frame went back to the allocator.
    let user = |sim: &Simulation| {
        let mem = &sim.kernel.mem;
        (0..mem.nr_frames()).filter(|&f| matches!(mem.owner(Pfn::new(f)), FrameOwner::User { .. })).count() as u64
    };
    assert_eq!(user(&thp) - user(&perforated), holes as u64, "each hole's frame is free");
    assert_eq!(user(&perforated), user(&base), "perforated pages back exactly the pages 4 KiB pages do");
    // Refused by the rule (the holes set every filter bit): THP's page.
    let refused = redis_like(&["os.perforated.max_filter_bits=4"]);
    assert_eq!(stat(&refused, "perforated.pages"), 0.0);
    assert_eq!(user(&refused), user(&thp));
}

/// Process 2 maps process 1's perforated page at BASE as a fork would:
/// the same frames page by page (holes' own frames too), the same 2 MiB
/// frame, filter and bitmap line (the bitmap belongs to the physical
/// region), a shadow entry of its own. (Write protection is left out: the
/// native MMU does not fault a store to a read-only page, and `punch` is
/// what the copy-on-write fault would do.)
fn fork_perforated(sim: &mut Simulation) -> Perforation {
    let k = &mut sim.kernel;
    assert_eq!(k.spawn(crate::os::ProcessSpec::default()).unwrap(), 2);
    let p = perforation_at(&k.proc(1).aspace.pt, BASE).unwrap();
    for i in 0..512 {
        let frame = k.proc(1).aspace.pt.lookup(page(i)).unwrap().frame;
        k.map_user(2, page(i), frame, crate::units::PageSize::Size4K, true).unwrap();
    }
    let shadow =
        k.mem.alloc(crate::units::Order::BASE, crate::phys::Migratetype::Unmovable, FrameOwner::Kernel).unwrap();
    let theirs = Perforation { shadow: shadow.addr(), ..p };
    super::pagetable::set_perforated(k.page_table_mut(2), BASE, &theirs);
    theirs
}

#[test]
fn copy_on_write_of_a_shared_perforated_page_gives_every_sharer_the_hole() {
    // The paper's Figure 1: two processes share a perforated page (holes
    // 70 and 100, filter 0b10); process 2 writes page 7 (256 KiB region
    // 0, no hole yet). Process 2 gets a copy; the bitmap, the physical
    // region's, gets bit 7 for both, each process's filter bit 0; process
    // 1's hole PTE still maps page 7's place in the 2 MiB frame. Each
    // process's page 7 is shot down; nothing else changes.
    let cfg = perforated_config(&[]);
    let (mut sim, p) = known_page(&[]);
    fork_perforated(&mut sim);
    let (mut one, mut two) = (mmu(&sim, &cfg), mmu(&sim, &cfg));
    let mut probe = Probe::new();
    let both = |probe: &mut Probe, one: &mut Mmu, two: &mut Mmu, sim: &mut Simulation, i: u64| {
        (probe.access_as(1, one, sim, page(i)).0, probe.access_as(2, two, sim, page(i)).0)
    };
    for i in 0..512 {
        let (a, b) = both(&mut probe, &mut one, &mut two, &mut sim, i);
        assert_eq!(a, b, "page {i} shared");
    }
    let copy = punch(&mut sim.kernel, 2, page(7)).unwrap();
    let shot: Vec<_> = sim.kernel.drain_shootdowns().map(|s| (s.asid, s.start, s.end)).collect();
    assert_eq!(shot, vec![(2, page(7).vpn(), page(8).vpn()), (1, page(7).vpn(), page(8).vpn())]);
    for (asid, mmu) in [(1, &mut one), (2, &mut two)] {
        mmu.tlb.invalidate_range(asid, page(7).vpn(), page(8).vpn());
        let now = perforation_at(&sim.kernel.proc(asid).aspace.pt, BASE).unwrap();
        assert_eq!((0..512).filter(|&i| is_hole(&now.holes, i)).collect::<Vec<_>>(), vec![7, 70, 100]);
        assert_eq!((now.filter, now.frame, now.bitmap_line), (0b11, p.frame, p.bitmap_line));
    }
    assert_eq!(sim.kernel.mem.owner(p.frame.add(7)), FrameOwner::User { asid: 1, vpn: page(7).vpn() });
    let holes_before = counters(&one).3;
    for i in 0..512 {
        let (a, b) = both(&mut probe, &mut one, &mut two, &mut sim, i);
        match i {
            7 => assert_eq!((a, b), (p.frame.add(7), copy)),
            _ => assert_eq!(a, b, "page {i} still shared"),
        }
    }
    assert_eq!(counters(&one).3 - holes_before, 1, "process 1 reaches its page 7 by a hole walk");
}
