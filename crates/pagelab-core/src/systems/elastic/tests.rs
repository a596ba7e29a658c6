//! Elastic Translations on the `ampere-altra` machine (Neoverse N1: a
//! 48-entry L1 data TLB of 4 KiB, 64 KiB and 2 MiB translations, a 1280-entry
//! 5-way L2 TLB holding every size), shrunk to 256 MiB of memory.
//! Hand-worked: CoalaPaging's anchor rule; the contiguous bit set by the
//! 16th fault of a range and cleared by a munmap of one page, with the
//! shootdown; one 64 KiB and one 32 MiB TLB entry serving their 16 pages
//! or 16 PMDs' worth of addresses. Property: with the bit honoured or
//! ignored, every address translates alike.

use proptest::prelude::*;

use super::coala::{find_anchor, place, Fallback, Placement};
use crate::config::SimConfig;
use crate::engine::mmu::Mmu;
use crate::engine::testutil::{batch, config, mmap, req, simulate, stat, stores, BASE};
use crate::engine::{CoreStats, RefBuf, Simulation};
use crate::hw::pwc::Pwc;
use crate::hw::tlb::{ReachSize, Tlb, TlbEntry, TlbLookup};
use crate::paging::pte::CONTIGUOUS;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Order, PageSize, Pfn, VirtAddr, Vpn};
use crate::workload::{Access, MapEvent};

const KIB64: u64 = 64 << 10;
const MIB32: u64 = 32 << 20;

fn elastic_config(extra: &[&str]) -> SimConfig {
    let mut all = vec![
        "machine.preset=\"ampere-altra\"",
        "machine.phys_mem=\"256MiB\"",
        "os.policy=\"elastic\"",
        "os.elastic.leshy=\"off\"",
        "run.check_translations=true",
    ];
    all.extend_from_slice(extra);
    config(&all)
}

fn page(i: u64) -> VirtAddr {
    BASE.add(i * 4096)
}

fn contiguous(sim: &Simulation, va: VirtAddr) -> bool {
    sim.kernel.proc(1).aspace.pt.lookup(va).is_some_and(|m| m.pte.raw() & CONTIGUOUS != 0)
}

/// A free, 64 KiB-aligned block of 16 frames (taken and given back).
fn free_block(sim: &mut Simulation) -> u64 {
    let owner = FrameOwner::Kernel;
    let block = sim.kernel.mem.alloc(Order::new(4), Migratetype::Movable, owner).unwrap();
    sim.kernel.mem.free(block, Order::new(4));
    block.raw()
}

/// Maps page `i` of the VMA at BASE to exactly frame `pfn`.
fn map_at(sim: &mut Simulation, i: u64, pfn: u64) {
    let owner = FrameOwner::User { asid: 1, vpn: page(i).vpn() };
    assert!(sim.kernel.mem.alloc_specific(Pfn::new(pfn), Order::BASE, owner));
    sim.kernel.map_user(1, page(i), Pfn::new(pfn), PageSize::Size4K, true).unwrap();
}

/// A simulation with a 64 KiB VMA at BASE and nothing mapped in it.
fn empty_range() -> Simulation {
    simulate(elastic_config(&[]), vec![batch(vec![mmap(BASE, KIB64)], vec![])]).unwrap()
}

#[test]
fn a_present_neighbour_with_matching_offset_fixes_the_frame() {
    let mut sim = empty_range();
    let block = free_block(&mut sim);
    map_at(&mut sim, 2, block + 2); // virtual offset 2, frame offset 2: a match
    assert_eq!(find_anchor(&sim.kernel, 1, BASE, PageSize::Size4K), Some(Pfn::new(block)));
    let placed = place(&mut sim.kernel, 1, page(5), PageSize::Size4K);
    assert_eq!(placed, Ok((Pfn::new(block + 5), Placement::Anchored)));
}

#[test]
fn a_mismatched_neighbour_does_not_fix_the_frame() {
    let mut sim = empty_range();
    let block = free_block(&mut sim);
    map_at(&mut sim, 2, block + 7); // virtual offset 2, frame offset 7
    assert_eq!(find_anchor(&sim.kernel, 1, BASE, PageSize::Size4K), None);
    let (frame, how) = place(&mut sim.kernel, 1, page(5), PageSize::Size4K).unwrap();
    assert_eq!(how, Placement::Carved, "no anchor: a block of 16 is carved");
    assert_eq!(frame.raw() % 16, 5, "the frame at the virtual offset of the carved block");
    assert_ne!(frame.raw(), block + 5, "not where the mismatched neighbour points");
    assert_eq!(sim.kernel.mem.owner(frame), FrameOwner::User { asid: 1, vpn: page(5).vpn() });
    // The carved block's other 15 frames went back, free for the range.
    assert!((0..16).filter(|&j| j != 5).all(|j| sim.kernel.mem.is_free(Pfn::new(frame.raw() - 5 + j))));
}

#[test]
fn a_taken_target_falls_back_to_the_normal_allocator() {
    let mut sim = empty_range();
    let block = free_block(&mut sim);
    map_at(&mut sim, 2, block + 2);
    assert!(sim.kernel.mem.alloc_specific(Pfn::new(block + 5), Order::BASE, FrameOwner::Kernel));
    assert_eq!(place(&mut sim.kernel, 1, page(5), PageSize::Size4K), Err(Fallback::TargetTaken));
}

#[test]
fn the_16th_fault_of_a_range_sets_the_bit_and_a_munmap_of_one_page_clears_it_with_a_shootdown() {
    // 15 pages: the range does not qualify yet.
    let sim = simulate(elastic_config(&[]), vec![batch(vec![mmap(BASE, KIB64)], stores(BASE, 15))]).unwrap();
    assert!(!contiguous(&sim, page(0)));
    assert_eq!(stat(&sim, "elastic.carved"), 1.0, "the first fault carves");
    assert_eq!(stat(&sim, "elastic.anchored"), 14.0, "the next 14 find the anchor");
    assert_eq!(stat(&sim, "mem.mapped.64k"), 0.0);

    // The 16th: all 16 entries qualify; the bit is set on live entries
    // (break-before-make: one shootdown of the range). Then a munmap of
    // page 7 clears it on all 16 and shoots down; the other 15 pages are
    // read again with every hit checked against the page table.
    let munmap = MapEvent::Munmap { start: page(7), len: 4096 };
    let others: Vec<Access> = (0..16).filter(|&i| i != 7).map(|i| Access::load(page(i), 8, 1)).collect();
    let batches = vec![
        batch(vec![mmap(BASE, KIB64)], stores(BASE, 16)),
        batch(vec![], others.clone()),
        batch(vec![(0, munmap)], others),
    ];
    let mut cfg = elastic_config(&[]);
    let mut sim = simulate(cfg.clone(), batches[..2].to_vec()).unwrap();
    assert!((0..16).all(|i| contiguous(&sim, page(i))));
    assert_eq!(stat(&sim, "elastic.contig_sets"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.64k"), KIB64 as f64);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 0.0, "the 16 pages count as one 64 KiB translation");
    let shootdowns = stat(&sim, "os.shootdowns");
    assert_eq!(shootdowns, 1.0, "break-before-make");
    assert!(stat(&sim, "dtlb.l2.share.64k") > 0.0, "the L2 held the coalesced entry");

    cfg.run.check_translations = true;
    sim = simulate(cfg, batches).unwrap();
    assert!((0..16).all(|i| !contiguous(&sim, page(i))));
    assert_eq!(stat(&sim, "elastic.contig_breaks"), 1.0);
    assert_eq!(stat(&sim, "os.shootdowns"), 2.0, "the munmap's shootdown drops the coalesced entry");
    assert_eq!(stat(&sim, "mem.mapped.64k"), 0.0);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 15.0 * 4096.0);
}

/// An MMU without page-walk caches over `sim`'s page tables, with the
/// TLBs of `cfg`'s machine.
fn fresh_mmu(sim: &Simulation, cfg: &SimConfig) -> Mmu {
    let mut m = cfg.machine.clone();
    m.pwc.enabled = false;
    Mmu {
        tlb: Tlb::with_extensions(&m.tlb, 1, crate::systems::tlb_extensions(sim.kernel.color_map(), false)),
        pwc: Pwc::new(&m.pwc, 4, 1),
        l2_tlb_latency: 3.0,
        walk_latency: 0.0,
        check: true,
    }
}

/// Translates `va` through `mmu`; the frame.
fn translate(mmu: &mut Mmu, sim: &mut Simulation, stats: &mut CoreStats, va: VirtAddr) -> Pfn {
    mmu.translate(&mut sim.kernel, req(va), &mut RefBuf::default(), stats).unwrap()
}

#[test]
fn one_64k_entry_serves_16_pages_and_one_32m_entry_16_pmds() {
    // 64 KiB: 16 pages after one walk; the L1 holds the 64 KiB piece.
    let cfg = elastic_config(&[]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, KIB64)], stores(BASE, 16))]).unwrap();
    let mut mmu = fresh_mmu(&sim, &cfg);
    let mut stats = CoreStats::default();
    for i in 0..16 {
        let frame = translate(&mut mmu, &mut sim, &mut stats, page(i).add(0x18));
        assert_eq!(frame, sim.kernel.proc(1).aspace.pt.lookup(page(i)).unwrap().frame);
    }
    assert_eq!(stats.walks, 1, "one walk for the 16 pages");
    let s = mmu.tlb.stats();
    assert_eq!((s.l2.fills, s.l1d_64k.fills, s.l1d_64k.hits, s.l1d_4k.fills), (1, 1, 15, 0));

    // 32 MiB: a 32 MiB VMA faults 2 MiB pages placed over 16 PMDs. The
    // N1's L1 has no 32 MiB array: each 2 MiB piece is filled from the one
    // L2 entry (an L1 miss and an L2 hit per PMD after the first).
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, MIB32)], stores_every(BASE, 2 << 20, 16))]).unwrap();
    assert_eq!(stat(&sim, "os.faults.elastic_2m"), 16.0);
    assert_eq!(stat(&sim, "mem.mapped.32m"), MIB32 as f64);
    let mut mmu = fresh_mmu(&sim, &cfg);
    let mut stats = CoreStats::default();
    for i in 0..16u64 {
        let va = BASE.add((i << 21) + 0x5000);
        let frame = translate(&mut mmu, &mut sim, &mut stats, va);
        assert_eq!(frame, sim.kernel.proc(1).aspace.pt.lookup(va).map(|m| m.frame.add(5)).unwrap());
    }
    assert_eq!(stats.walks, 1, "one walk for the 16 PMDs");
    let s = mmu.tlb.stats();
    assert_eq!((s.l2.fills, s.l2.hits, s.l1d_2m.fills), (1, 15, 16));
}

fn stores_every(start: VirtAddr, step: u64, n: u64) -> Vec<Access> {
    (0..n).map(|i| Access::store(start.add(i * step), 8, 1)).collect()
}

#[test]
fn a_coalesced_entry_is_dropped_by_a_shootdown_of_any_of_its_pages() {
    let cfg = elastic_config(&[]);
    let mut tlb: Tlb = Tlb::new(&cfg.machine.tlb, 1);
    let vbase = Vpn::new(0x7_f000_0000);
    tlb.fill_after_walk(TlbEntry::page(1, vbase, ReachSize::Size64K, Pfn::new(0x4b0), true, true), vbase.addr(), false);
    let last = vbase.addr().add(15 * 4096);
    assert!(matches!(tlb.lookup(1, last, false), TlbLookup::L1(t) if t.pfn == Pfn::new(0x4bf)));
    tlb.invalidate_range(1, Vpn::new(vbase.raw() + 9), Vpn::new(vbase.raw() + 10));
    assert_eq!(tlb.peek(1, last, false), TlbLookup::Miss);
}

#[test]
fn the_leshy_modes_parse_by_name_and_a_wrong_one_is_refused_naming_the_key() {
    let text = "[machine]\npreset = \"ampere-altra\"\n[os]\npolicy = \"elastic\"\n[workload]\nkind = \"gups\"\n";
    for mode in ["online", "access-bit", "off"] {
        let set = [format!("os.elastic.leshy=\"{mode}\"")];
        assert!(crate::config::parse_config(text, "t.toml", &set).is_ok(), "{mode}");
    }
    let wrong = ["os.elastic.leshy=\"sometimes\"".to_string()];
    let err = crate::config::parse_config(text, "t.toml", &wrong).unwrap_err().to_string();
    assert!(err.contains("os.elastic.leshy"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Whatever was touched and unmapped, a machine that honours the
    /// contiguous bit (ampere-altra) and one that ignores it (skylake's
    /// TLBs) translate every address as the page table maps it.
    #[test]
    fn with_the_bit_honoured_or_ignored_every_address_translates_the_same(
        touched in proptest::collection::vec(0u64..64, 1..64),
        unmapped in proptest::collection::vec(0u64..64, 0..4),
        probes in proptest::collection::vec(0u64..(64 * 4096), 1..128),
    ) {
        let mut batches = vec![batch(vec![mmap(BASE, 4 * KIB64)], touched.iter().map(|&i| Access::store(page(i), 8, 1)).collect())];
        let events = unmapped.iter().map(|&i| (0, MapEvent::Munmap { start: page(i), len: 4096 })).collect();
        batches.push(batch(events, vec![]));
        let cfg = elastic_config(&[]);
        let mut sim = simulate(cfg.clone(), batches).unwrap();
        let mut honouring = fresh_mmu(&sim, &cfg);
        let mut ignoring = fresh_mmu(&sim, &config(&[]));
        let mut stats = CoreStats::default();
        for &p in &probes {
            let va = BASE.add(p);
            let Some(m) = sim.kernel.proc(1).aspace.pt.lookup(va) else { continue };
            let want = m.frame;
            prop_assert_eq!(translate(&mut honouring, &mut sim, &mut stats, va), want);
            prop_assert_eq!(translate(&mut ignoring, &mut sim, &mut stats, va), want);
        }
    }
}

#[test]
fn the_arm_presets_coalesce_and_carve_32m_blocks_where_x86_machines_do_not() {
    for preset in ["ampere-altra", "grace"] {
        let cfg = config(&[&format!("machine.preset=\"{preset}\""), "machine.phys_mem=\"256MiB\""]);
        assert_eq!(cfg.machine.max_order, 13, "{preset}: 32 MiB buddy blocks");
        let sizes: Vec<ReachSize> = cfg.machine.tlb.l1_data_sizes().iter().map(|s| s.0).collect();
        assert_eq!(sizes, [ReachSize::Size4K, ReachSize::Size64K, ReachSize::Size2M], "{preset}: no 32 MiB in L1");
        let tlb: Tlb = Tlb::new(&cfg.machine.tlb, 1);
        assert!([ReachSize::Size64K, ReachSize::Size32M, ReachSize::Size1G].iter().all(|&r| tlb.holds_reach(r)));
    }
    let skylake = config(&[]);
    assert_eq!(skylake.machine.max_order, 10);
    let tlb: Tlb = Tlb::new(&skylake.machine.tlb, 1);
    assert!(!tlb.holds_reach(ReachSize::Size64K) && !tlb.holds_reach(ReachSize::Size32M));
    // An order-13 block feeds a 32 MiB range; a fourth L1 data array is refused.
    let mut sim = simulate(elastic_config(&[]), vec![]).unwrap();
    assert!(sim.kernel.mem.alloc(Order::new(13), Migratetype::Movable, FrameOwner::Kernel).is_some());
    let four = ["machine.preset=\"ampere-altra\"", "machine.tlb.l1_1g_entries=4", "machine.tlb.l1_1g_ways=4"];
    let text = "[workload]\nkind = \"gups\"\n";
    let overrides: Vec<String> = four.iter().map(|s| s.to_string()).collect();
    let err = crate::config::parse_config(text, "t.toml", &overrides).unwrap_err().to_string();
    assert!(err.contains("machine.tlb.l1_64k_entries"), "{err}");
}

#[test]
fn mthp_backs_2m_where_it_fits_else_an_aligned_64k_block_with_the_contiguous_bit_else_4k() {
    // A 2 MiB VMA: one THP fault. A 64 KiB VMA: one 64 KiB fault, 16 pages
    // contiguous. A 12 KiB VMA: 4 KiB pages.
    let small = BASE.add(8 << 20);
    let tiny = BASE.add(16 << 20);
    let events = vec![mmap(BASE, 2 << 20), mmap(small, KIB64), mmap(tiny, 3 * 4096)];
    let mut accesses = stores(BASE, 2);
    accesses.extend(stores(small, 16));
    accesses.extend(stores(tiny, 3));
    let cfg = elastic_config(&["os.policy=\"mthp\"", "os.thp.khugepaged=false"]);
    let sim = simulate(cfg, vec![batch(events, accesses)]).unwrap();
    assert_eq!(stat(&sim, "os.faults.thp"), 1.0);
    assert_eq!(stat(&sim, "os.faults.mthp_64k"), 1.0);
    assert_eq!(stat(&sim, "os.faults.base"), 3.0);
    assert!((0..16).all(|i| contiguous(&sim, small.add(i * 4096))));
    assert_eq!(stat(&sim, "mem.mapped.64k"), KIB64 as f64);
    assert_eq!(stat(&sim, "os.shootdowns"), 0.0, "written at once: no break-before-make");
}

#[test]
fn hugetlb_64k_and_32m_pages_are_contiguous_ranges_written_at_once_and_return_whole_to_the_pool() {
    // 64 KiB: a 128 KiB VMA takes two pages on their first touches.
    let cfg = elastic_config(&["os.policy=\"hugetlb\"", "os.hugetlb.size=\"64KiB\"", "os.hugetlb.pool=\"1MiB\""]);
    let munmap = MapEvent::Munmap { start: BASE, len: 2 * KIB64 };
    let batches = vec![batch(vec![mmap(BASE, 2 * KIB64)], stores(BASE, 32))];
    let sim = simulate(cfg.clone(), batches.clone()).unwrap();
    assert_eq!(stat(&sim, "os.faults.hugetlb_64k"), 2.0);
    assert!((0..32).all(|i| contiguous(&sim, page(i))));
    assert_eq!(stat(&sim, "mem.mapped.64k"), 2.0 * KIB64 as f64);
    assert_eq!(stat(&sim, "os.shootdowns"), 0.0, "no live entry: no break-before-make");
    let pt = &sim.kernel.proc(1).aspace.pt;
    assert!((0..32).all(|i| pt.lookup(page(i)).unwrap().pte.dirty()), "young and dirty as a writable range");
    // munmap gives each page back whole: its 16 frames are the pool's again.
    let frame = sim.kernel.proc(1).aspace.pt.lookup(page(17)).unwrap().frame;
    let mut all = batches;
    all.push(batch(vec![(0, munmap)], vec![]));
    let sim = simulate(cfg, all).unwrap();
    assert_eq!(sim.kernel.mem.owner(frame), FrameOwner::Reserved { pool: 1 });
    assert_eq!(stat(&sim, "mem.mapped.64k"), 0.0);

    // 32 MiB: one fault maps 16 PMDs over an order-13 block.
    let cfg = elastic_config(&["os.policy=\"hugetlb\"", "os.hugetlb.size=\"32MiB\""]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, MIB32)], stores_every(BASE, 2 << 20, 16))]).unwrap();
    assert_eq!(stat(&sim, "os.faults.hugetlb_32m"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.32m"), MIB32 as f64);
    let first = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().frame;
    assert_eq!(first.raw() % (MIB32 >> 12), 0, "a 32 MiB-aligned block");
    // On skylake (max_order 10) a 32 MiB pool cannot be reserved.
    let err = crate::config::parse_config(
        "[workload]\nkind = \"gups\"\n",
        "t.toml",
        &["os.policy=\"hugetlb\"".into(), "os.hugetlb.size=\"32MiB\"".into(), "os.hugetlb.pool=\"32MiB\"".into()],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("os.hugetlb.size") && err.contains("max_order >= 13"), "{err}");
}
