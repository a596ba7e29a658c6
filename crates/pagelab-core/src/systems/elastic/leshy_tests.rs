//! Leshy and CoalaKhugepaged on the `ampere-altra` machine (256 MiB):
//! TLB-miss sampling on a hand-built miss sequence; the placement on
//! hand-made miss histograms; hints read from lines; offline hints
//! deciding faults; CoalaKhugepaged's 32 MiB, 64 KiB and fallback 2 MiB
//! promotions; online Leshy end to end with every TLB hit checked.

use std::sync::{Arc, Mutex};

use super::hints::{HintTable, Hints, SharedHints};
use super::khugepaged::{CoalaKhugepaged, Visit};
use super::placement::{place, roll_up, Region, Size};
use crate::config::SimConfig;
use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::Simulation;
use crate::paging::pte::CONTIGUOUS;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Order, PageSize, Pfn, VirtAddr};
use crate::workload::Access;

const KIB64: u64 = 64 << 10;
const MIB2: u64 = 2 << 20;
const MIB32: u64 = 32 << 20;

fn arm(extra: &[&str]) -> SimConfig {
    let mut all = vec!["machine.preset=\"ampere-altra\"", "machine.phys_mem=\"256MiB\"", "os.policy=\"elastic\""];
    all.extend_from_slice(extra);
    config(&all)
}

fn every(start: VirtAddr, step: u64, n: u64) -> Vec<Access> {
    (0..n).map(|i| Access::store(start.add(i * step), 8, 1)).collect()
}

fn contiguous(sim: &Simulation, va: VirtAddr) -> bool {
    sim.kernel.proc(1).aspace.pt.lookup(va).is_some_and(|m| m.pte.raw() & CONTIGUOUS != 0)
}

#[test]
fn one_l2_tlb_miss_in_each_period_is_sampled_with_its_address() {
    // 128 stores 64 KiB apart in an 8 MiB VMA (64 KiB contiguity, one page
    // touched per range): each is a first touch, so each misses the L2
    // TLB. With a period of 5, misses 5, 10, ..., 125 are sampled: 25 =
    // floor(128 / 5), the k-th at the (5k)-th store's address.
    let accesses = every(BASE, KIB64, 128);
    let batches = vec![batch(vec![mmap(BASE, 8 << 20)], accesses)];
    let sim = simulate(arm(&["os.elastic.leshy_sample_period=5"]), batches.clone()).unwrap();
    assert_eq!(stat(&sim, "dtlb.l2.misses"), 128.0);
    assert_eq!(stat(&sim, "leshy.samples"), 25.0);
    let samples = sim.kernel.miss_samples.pending();
    let want: Vec<VirtAddr> = (1..=25).map(|k| BASE.add((5 * k - 1) * KIB64)).collect();
    assert_eq!(samples.iter().map(|s| s.vaddr).collect::<Vec<_>>(), want);
    assert!(samples.iter().all(|s| s.asid == 1 && s.walk_refs >= 1), "a miss walks");

    // Sampling changes nothing else: the same run with Leshy off reports
    // the same statistics, samples aside.
    let off = simulate(arm(&["os.elastic.leshy=\"off\""]), batches).unwrap();
    let (mut a, mut b) = (sim.stats(), off.stats());
    a.remove("leshy.samples");
    b.remove("leshy.samples");
    assert_eq!(a, b);
    assert_eq!(stat(&off, "leshy.samples"), 0.0);
}

#[test]
fn a_guest_samples_its_l2_tlb_misses_through_the_two_dimensional_walk() {
    // The same 128 first touches in a VM (guest `elastic` with online
    // Leshy over host 4 KiB pages): one data-side L2 miss in 5 sampled
    // into the guest kernel's buffer, with the guest-virtual address and
    // the walk's references of both dimensions (more than a native walk).
    let virt = [
        "virt.enabled=true",
        "virt.guest_mem=\"64MiB\"",
        "os.elastic.leshy_sample_period=5",
        "run.check_translations=true",
    ];
    let batches = vec![batch(vec![mmap(BASE, 8 << 20)], every(BASE, KIB64, 128))];
    let sim = simulate(arm(&virt), batches.clone()).unwrap();
    let misses = stat(&sim, "dtlb.l2.misses");
    assert!(misses >= 128.0, "{misses}");
    assert_eq!(stat(&sim, "leshy.samples"), (misses / 5.0).floor());
    let samples = sim.kernel.miss_samples.pending();
    assert_eq!(samples.len() as f64, (misses / 5.0).floor());
    assert!(samples.iter().all(|s| s.asid == 1 && (s.vaddr.raw() - BASE.raw()).is_multiple_of(KIB64)));
    let native = simulate(arm(&["os.elastic.leshy_sample_period=5"]), batches.clone()).unwrap();
    let most = |sim: &Simulation| sim.kernel.miss_samples.pending().iter().map(|s| s.walk_refs).max().unwrap();
    assert!(most(&sim) > most(&native), "a 2D walk reads guest and EPT entries");
    // Sampling changes nothing else in the VM either.
    let mut off = virt.to_vec();
    off.push("os.elastic.leshy=\"off\"");
    let off = simulate(arm(&off), batches).unwrap();
    let (mut a, mut b) = (sim.stats(), off.stats());
    a.remove("leshy.samples");
    b.remove("leshy.samples");
    assert_eq!(a, b);
}

/// Samples: `n` misses at each of the given addresses.
fn histogram(spots: &[(u64, u64)]) -> [Vec<Region>; 4] {
    roll_up(spots.iter().flat_map(|&(addr, n)| std::iter::repeat_n((addr, 1), n as usize)))
}

#[test]
fn the_roll_up_sums_misses_and_counts_pages_with_misses_per_region() {
    let r = histogram(&[(0x40_0000, 2), (0x40_0010, 1), (0x40_1000, 1), (0x41_0000, 3)]);
    let first = |l: usize| (r[l][0].base, r[l][0].misses, r[l][0].pages);
    assert_eq!(r[0].len(), 3, "three 4 KiB pages");
    assert_eq!(first(0), (0x40_0000, 3, 1), "0x400000 has 3 misses, 0x410000 3: the lower address first");
    assert_eq!(r[1].len(), 2);
    assert_eq!(first(1), (0x40_0000, 4, 2), "the 64 KiB region at 0x400000: two pages, four misses");
    assert_eq!((r[2].len(), first(2)), (1, (0x40_0000, 7, 3)));
    assert_eq!((r[3].len(), first(3)), (1, (0, 7, 3)));
}

#[test]
fn a_hot_32m_region_beats_16_separate_2m_ones_when_the_budget_is_tight() {
    // One 32 MiB region; 2 misses in each of its 16 PMDs, on two pages in
    // different 64 KiB ranges: 32 misses, 32 pages, 32 64 KiB ranges, 16
    // PMDs, one 32 MiB region.
    let spots: Vec<(u64, u64)> =
        (0..16u64).flat_map(|i| [(0x8000_0000 + i * MIB2, 1), (0x8000_0000 + i * MIB2 + 0x10000, 1)]).collect();
    let levels = histogram(&spots);
    // Budget 4: 4 pages, 4 ranges or 4 PMDs cover 8 of 32 misses; one
    // 32 MiB entry covers all.
    let hints = place(&levels, 4, 1.0);
    assert_eq!(hints.iter().map(|r| (r.base, r.size)).collect::<Vec<_>>(), [(0x8000_0000, Size::Size32M)]);
    // Budget 16: the 16 PMDs cover all, and 2 MiB is the smaller size.
    let hints = place(&levels, 16, 1.0);
    assert_eq!(hints.len(), 16);
    assert!(hints.iter().all(|r| r.size == Size::Size2M && r.misses == 2));
}

#[test]
fn multi_page_ranges_take_the_large_entries_and_the_rest_of_the_budget_takes_smaller_ones() {
    // Three 64 KiB ranges: A (4 misses on 2 pages), B (the same), C (3
    // misses on one page). Budget 4. Five pages: the best 4 cover 9 of 11
    // misses, so 4 KiB does not do; the three ranges cover all, so 64 KiB
    // starts. C holds one page with misses: not a 64 KiB candidate. The
    // budget is capped, as the tool caps it, at the 3 ranges with misses.
    // With A and B as 64 KiB the rest (1 entry) takes C's page: 11 of 11.
    // With A alone the rest (2 entries) takes C's page and one of B's:
    // 4 + 3 + 2 = 9, not met; with none, 3 pages cover 7. So A and B.
    let (a, b, c) = (0x10_0000, 0x20_0000, 0x30_0000);
    let levels = histogram(&[(a, 2), (a + 0x1000, 2), (b, 2), (b + 0x1000, 2), (c, 3)]);
    let hints = place(&levels, 4, 1.0);
    let got: Vec<(u64, Size)> = hints.iter().map(|r| (r.base, r.size)).collect();
    assert_eq!(got, [(a, Size::Size64K), (b, Size::Size64K), (c, Size::Size4K)]);
    // As hints: 4 KiB regions are dropped.
    let loaded = Hints::from_regions(&hints);
    assert_eq!(loaded.regions().collect::<Vec<_>>(), [(a, Size::Size64K), (b, Size::Size64K)]);
    // A coverage of half needs nothing larger than the best 4 pages.
    assert!(place(&levels, 4, 0.5).is_empty(), "4 KiB pages cover half: no hints");
}

#[test]
fn hint_lines_give_aligned_ranges_of_the_three_sizes_and_name_a_bad_line() {
    let lines = [
        "0x7f0000000000-0x7f0002000000",
        "# comment",
        "0x7f0002000000-0x7f0002200000",
        "0x7f0002200000-0x7f0002201000",
    ];
    let hints = Hints::parse(lines, "hints.txt").unwrap();
    assert_eq!(hints.len(), 2, "the 4 KiB range is skipped");
    assert_eq!(hints.at(VirtAddr::new(0x7f00_0123_4567)), Some(Size::Size32M));
    assert_eq!(hints.at(VirtAddr::new(0x7f00_0210_0000)), Some(Size::Size2M));
    assert_eq!(hints.at(VirtAddr::new(0x7f00_0220_0000)), None);
    let overlapping = Hints::parse(["0x0-0x2000000", "0x200000-0x400000"], "h").unwrap();
    assert_eq!(overlapping.len(), 1, "an overlapping range is skipped, as prctl does");
    let err = Hints::parse(["0x0-0x2000000", "0x1000-0x11000"], "hints.txt").unwrap_err().to_string();
    assert!(err.contains("hints.txt") && err.contains("line 2") && err.contains("aligned"), "{err}");
    let err = Hints::parse(["0x0-0x3000"], "h").unwrap_err().to_string();
    assert!(err.contains("line 1"), "{err}");
}

fn hint_list(ranges: &[(u64, u64)]) -> String {
    let items: Vec<String> = ranges.iter().map(|&(s, len)| format!("\"{:#x}-{:#x}\"", s, s + len)).collect();
    format!("os.elastic.hints=[{}]", items.join(","))
}

#[test]
fn offline_hints_decide_each_fault_size_and_placement() {
    // A 64 MiB VMA: a 32 MiB hint over its first half, a 2 MiB hint, a
    // 64 KiB hint, the rest unhinted.
    let hints = hint_list(&[(BASE.raw(), MIB32), (BASE.raw() + MIB32, MIB2), (BASE.raw() + 34 * MIB2 / 2, KIB64)]);
    let cfg =
        arm(&["os.elastic.leshy=\"offline\"", &hints, "os.elastic.khugepaged=false", "run.check_translations=true"]);
    let mut accesses = vec![Access::store(BASE, 8, 1), Access::store(BASE.add(MIB32), 8, 1)];
    accesses.extend(stores(BASE.add(34 * MIB2 / 2), 16));
    accesses.push(Access::store(BASE.add(40 * MIB2 / 2), 8, 1));
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 2 * MIB32)], accesses)]).unwrap();
    // 32 MiB hint: a 2 MiB page carved from an order-13 block; 2 MiB hint:
    // a 2 MiB page; the 64 KiB hint: 16 pages placed by CoalaPaging, then
    // contiguous; unhinted: the normal allocator's 4 KiB page.
    assert_eq!(stat(&sim, "os.faults.elastic_2m"), 2.0);
    assert_eq!(stat(&sim, "elastic.carved"), 2.0, "one order-13 block, one order-4 block");
    assert_eq!(stat(&sim, "os.faults.elastic"), 16.0);
    assert_eq!(stat(&sim, "os.faults.base"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.64k"), KIB64 as f64);
    assert_eq!(stat(&sim, "mem.mapped.2m"), 2.0 * MIB2 as f64);
    let first = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().frame;
    assert_eq!(first.raw() % (MIB32 >> 12), 0, "the 32 MiB hint's first PMD at its offset in an order-13 block");
    assert!(contiguous(&sim, BASE.add(34 * MIB2 / 2 + 0x5000)));
    // Without a file the mode is refused, the key named.
    let text = "[workload]\nkind = \"gups\"\n";
    let over = ["os.policy=\"elastic\"".to_string(), "os.elastic.leshy=\"offline\"".to_string()];
    let err = crate::config::parse_config(text, "t.toml", &over).unwrap_err().to_string();
    assert!(err.contains("os.elastic.hints"), "{err}");
}

/// A simulation with a 32 MiB VMA at BASE whose 16 PMDs each hold one
/// 4 KiB page (faults without 32 MiB contiguity), and a CoalaKhugepaged
/// over a hint table with `base` hinted `size`.
fn scattered(base: u64, size: Size) -> (Simulation, CoalaKhugepaged) {
    let cfg = arm(&["os.elastic.leshy=\"off\"", "os.elastic.vma_threshold_32m=\"1GiB\""]);
    let sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, MIB32)], every(BASE, MIB2, 16))]).unwrap();
    let mut hints = Hints::default();
    hints.insert(base, size);
    let table = HintTable { by_asid: [(1, hints)].into(), ..Default::default() };
    let shared: SharedHints = Arc::new(Mutex::new(table));
    let daemon = CoalaKhugepaged::new(shared, &cfg.os.thp, cfg.machine.freq_ghz);
    (sim, daemon)
}

#[test]
fn a_hinted_32m_region_is_promoted_to_one_32m_translation() {
    let (mut sim, mut daemon) = scattered(BASE.raw(), Size::Size32M);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 16.0 * 4096.0);
    let copied_before = sim.kernel.stats.pages_copied;
    assert_eq!(daemon.visit(&mut sim.kernel, 1, BASE, Size::Size32M), Visit::Promoted);
    assert_eq!(daemon.promotions(), [0, 0, 1]);
    assert_eq!(sim.kernel.stats.pages_copied - copied_before, 16, "one 4 KiB page per PMD copied");
    let pt = &sim.kernel.proc(1).aspace.pt;
    let first = pt.lookup(BASE).unwrap().frame.raw();
    assert_eq!(first % (MIB32 >> 12), 0, "an order-13 block");
    for i in 0..16 {
        let m = pt.lookup(BASE.add(i * MIB2)).unwrap();
        assert_eq!((m.size, m.frame.raw()), (PageSize::Size2M, first + i * 512));
    }
    assert!(contiguous(&sim, BASE) && contiguous(&sim, BASE.add(MIB32 - 4096)));
    let s = sim.stats();
    assert_eq!(s["mem.mapped.32m"].as_f64(), MIB32 as f64);
    assert_eq!(s["mem.mapped.4k"].as_f64(), 0.0);
    assert_eq!(daemon.visit(&mut sim.kernel, 1, BASE, Size::Size32M), Visit::Already);
}

#[test]
fn without_a_free_order_13_block_a_32m_hint_falls_back_to_2m_collapses() {
    let (mut sim, mut daemon) = scattered(BASE.raw(), Size::Size32M);
    let mem = &mut sim.kernel.mem;
    let mut taken = Vec::new();
    while let Some(block) = mem.alloc(Order::new(13), Migratetype::Movable, FrameOwner::Kernel) {
        taken.push(block);
    }
    // Half of two taken blocks back, as 2 MiB pieces: 16 order-9 blocks
    // free, no order-13 one (each block's other half stays taken).
    for block in &taken[..2] {
        (0..8).for_each(|i| mem.free(Pfn::new(block.raw() + i * 512), Order::PMD));
    }
    assert!(mem.alloc(Order::new(13), Migratetype::Movable, FrameOwner::Kernel).is_none());
    assert_eq!(daemon.visit(&mut sim.kernel, 1, BASE, Size::Size32M), Visit::Fallback(16));
    assert_eq!(daemon.promotions(), [0, 16, 0]);
    let pt = &sim.kernel.proc(1).aspace.pt;
    assert!((0..16).all(|i| pt.lookup(BASE.add(i * MIB2)).unwrap().size == PageSize::Size2M));
    assert!(!contiguous(&sim, BASE), "2 MiB pages from scattered blocks: no 32 MiB range");
    assert_eq!(sim.stats()["mem.mapped.2m"].as_f64(), MIB32 as f64);
}

#[test]
fn a_hinted_64k_range_is_promoted_to_one_contiguous_block() {
    // Pages 0 and 5 of a 64 KiB range at frames that cannot coalesce.
    let cfg = arm(&["os.elastic.leshy=\"off\"", "os.elastic.vma_threshold_32m=\"1GiB\"", "os.thp.max_ptes_none=511"]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, MIB2)], vec![])]).unwrap();
    for (i, pfn) in [(0u64, 0x8003u64), (5, 0x8107)] {
        let owner = FrameOwner::User { asid: 1, vpn: BASE.add(i * 4096).vpn() };
        assert!(sim.kernel.mem.alloc_specific(Pfn::new(pfn), Order::BASE, owner));
        sim.kernel.map_user(1, BASE.add(i * 4096), Pfn::new(pfn), PageSize::Size4K, true).unwrap();
    }
    let shared: SharedHints = Arc::new(Mutex::new(HintTable::default()));
    let mut daemon = CoalaKhugepaged::new(shared, &cfg.os.thp, cfg.machine.freq_ghz);
    let shootdowns = sim.kernel.stats.shootdowns;
    assert_eq!(daemon.visit(&mut sim.kernel, 1, BASE, Size::Size64K), Visit::Promoted);
    assert_eq!(daemon.promotions(), [1, 0, 0]);
    let pt = &sim.kernel.proc(1).aspace.pt;
    let first = pt.lookup(BASE).unwrap().frame.raw();
    assert_eq!(first % 16, 0);
    assert!((0..16).all(|i| pt.lookup(BASE.add(i * 4096)).unwrap().frame.raw() == first + i));
    assert!(contiguous(&sim, BASE.add(15 * 4096)));
    assert!(sim.kernel.mem.is_free(Pfn::new(0x8003)) && sim.kernel.mem.is_free(Pfn::new(0x8107)));
    assert_eq!(sim.kernel.stats.shootdowns, shootdowns + 1);
    assert_eq!(sim.stats()["mem.mapped.64k"].as_f64(), KIB64 as f64);
    // 14 empty PTEs of 16 were within 511 / 32 = 15. With max_ptes_none
    // 64 (2 per 64 KiB), 13 pages present (3 empty) are not enough.
    let strict = arm(&["os.elastic.leshy=\"off\"", "os.thp.max_ptes_none=64"]);
    let mut sim = simulate(strict.clone(), vec![batch(vec![mmap(BASE, MIB2)], stores(BASE, 13))]).unwrap();
    let mut daemon = CoalaKhugepaged::new(Arc::new(Mutex::new(HintTable::default())), &strict.os.thp, 3.0);
    assert_eq!(daemon.visit(&mut sim.kernel, 1, BASE, Size::Size64K), Visit::Failed, "3 empty of 16 > 2");
}

/// Stores over a 32 MiB VMA with 4 KiB faults (threshold above the VMA),
/// one every 20 KiB, repeated, under Leshy `mode` with a tight budget of 4
/// TLB entries, short epochs and khugepaged wake-ups, every hit checked.
/// (One page of each PMD is touched first, so that every PMD has its
/// table by the first epoch: a PMD with none would send the promotion to
/// its 2 MiB fallback.)
fn hot_32m_run(mode: &str) -> Simulation {
    hot_32m_run_with(mode, &[])
}

fn hot_32m_run_with(mode: &str, extra: &[&str]) -> Simulation {
    let mut keys = vec![
        format!("os.elastic.leshy=\"{mode}\""),
        "os.elastic.vma_threshold_32m=\"1GiB\"".into(),
        "os.elastic.leshy_sample_period=16".into(),
        "os.elastic.leshy_budget=4".into(),
        "os.elastic.leshy_epoch_ms=0.05".into(),
        "os.thp.scan_sleep_ms=0.05".into(),
        "os.thp.pages_to_scan=8192".into(),
        "run.check_translations=true".into(),
    ];
    keys.extend(extra.iter().map(|k| k.to_string()));
    let cfg = arm(&keys.iter().map(String::as_str).collect::<Vec<_>>());
    let pass = every(BASE, 20 << 10, MIB32 / (20 << 10));
    let mut batches = vec![batch(vec![mmap(BASE, MIB32)], every(BASE.add(0x3000), MIB2, 16))];
    batches.extend((0..7).map(|_| batch(vec![], pass.clone())));
    simulate(cfg, batches).unwrap()
}

#[test]
fn online_leshy_hints_a_hot_32m_region_and_coala_khugepaged_promotes_it_with_every_hit_checked() {
    // The stores miss; Leshy's hint is the 32 MiB region (4 pages, 4
    // ranges or 4 PMDs cover few samples); CoalaKhugepaged promotes it.
    let sim = hot_32m_run("online");
    assert!(stat(&sim, "leshy.samples") > 0.0);
    assert_eq!(stat(&sim, "elastic.promotions.32m"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.32m"), MIB32 as f64);
    assert!(contiguous(&sim, BASE.add(MIB32 / 2)));
}

#[test]
fn an_access_bit_scan_counts_each_accessed_4k_page_once_and_clears_the_bits() {
    // Three 4 KiB pages in a small VMA and one 2 MiB page (THP-sized VMA
    // over the threshold): 3 + 512 pages accessed; a second scan right
    // after finds every bit clear.
    let small = BASE.add(64 << 20);
    let mut accesses = stores(small, 3);
    accesses.push(Access::store(BASE, 8, 1));
    let events = vec![mmap(BASE, MIB32), mmap(small, KIB64)];
    let mut sim = simulate(arm(&["os.elastic.leshy=\"off\""]), vec![batch(events, accesses)]).unwrap();
    let hits = super::leshy::scan_access_bits(&mut sim.kernel, 1);
    assert_eq!(hits.len(), 3 + 512);
    assert!(hits.iter().all(|&(asid, _, count, _)| asid == 1 && count == 1));
    assert_eq!(hits.iter().filter(|h| h.1 >= small.raw()).count(), 3);
    assert!(super::leshy::scan_access_bits(&mut sim.kernel, 1).is_empty());
}

#[test]
fn access_bit_hints_also_find_the_hot_32m_region_without_a_tlb_miss_sample() {
    let sim = hot_32m_run("access-bit");
    assert_eq!(stat(&sim, "leshy.samples"), 0.0, "no TLB-miss sampling");
    assert_eq!(stat(&sim, "elastic.promotions.32m"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.32m"), MIB32 as f64);
}

#[test]
fn hints_written_as_text_read_back_the_same_in_the_same_order() {
    let mut hints = Hints::default();
    for (base, size) in [(0x7f00_0200_0000, Size::Size32M), (0x10_0000, Size::Size64K), (0x40_0000, Size::Size2M)] {
        hints.insert(base, size);
    }
    let text = hints.to_text();
    assert_eq!(text, "0x7f0002000000-0x7f0004000000\n0x100000-0x110000\n0x400000-0x600000\n");
    assert_eq!(Hints::parse(text.lines(), "h").unwrap(), hints);
}

/// A fresh path under the system's temporary directory.
fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-leshy-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_profiling_run_writes_its_hints_and_an_offline_run_maps_the_hinted_region_with_its_size() {
    // The hot 32 MiB run of the online test, profiled: over the whole
    // run, with a budget of 4 entries, the one 32 MiB region covers every
    // sample where 4 pages, ranges or PMDs do not: one 32 MiB hint.
    let path = temp_path("hot32m.hints");
    let out = format!("os.elastic.leshy_hints_out={:?}", path.to_str().unwrap());
    let mut sim = hot_32m_run_with("online", &[&out]);
    assert!(!path.exists(), "written when the run ends, not before");
    sim.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, format!("{:#x}-{:#x}\n", BASE.raw(), BASE.raw() + MIB32));
    // Deterministic: the same run writes the same bytes.
    let mut again = hot_32m_run_with("online", &[&out]);
    again.finish().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let dir_entries = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(dir_entries, 1, "no temporary file left beside it");

    // Offline from the file, without CoalaKhugepaged: the faults alone map
    // the hinted region as one 32 MiB translation (16 PMDs of an order-13
    // block, each 2 MiB page placed at its offset, the bit set).
    let hints = format!("os.elastic.hints={:?}", path.to_str().unwrap());
    let cfg =
        arm(&["os.elastic.leshy=\"offline\"", &hints, "os.elastic.khugepaged=false", "run.check_translations=true"]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, MIB32)], every(BASE.add(0x3000), MIB2, 16))]).unwrap();
    assert_eq!(stat(&sim, "os.faults.elastic_2m"), 16.0);
    assert_eq!(stat(&sim, "mem.mapped.32m"), MIB32 as f64);
    assert!(contiguous(&sim, BASE) && contiguous(&sim, BASE.add(MIB32 - 4096)));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn writing_hints_is_refused_without_a_profile_and_a_bad_path_is_named() {
    let text = "[workload]\nkind = \"gups\"\n";
    let over = |mode: &str| {
        vec![
            "os.policy=\"elastic\"".to_string(),
            format!("os.elastic.leshy=\"{mode}\""),
            "os.elastic.leshy_hints_out=\"h.txt\"".to_string(),
        ]
    };
    let err = crate::config::parse_config(text, "t.toml", &over("off")).unwrap_err().to_string();
    assert!(err.contains("os.elastic.leshy_hints_out") && err.contains("online"), "{err}");
    assert!(crate::config::parse_config(text, "t.toml", &over("online")).is_ok());
    // A directory that does not exist: the run's end fails, naming the
    // key and the file, and leaves nothing behind.
    let path = temp_path("missing-dir").join("h.hints");
    let out = format!("os.elastic.leshy_hints_out={:?}", path.to_str().unwrap());
    let mut sim = hot_32m_run_with("online", &[&out]);
    let err = sim.finish().unwrap_err().to_string();
    assert!(err.contains("os.elastic.leshy_hints_out") && err.contains("missing-dir"), "{err}");
    assert!(!path.parent().unwrap().exists());
}
