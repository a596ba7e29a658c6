//! Colored Huge Pages, end to end: the fault path's layout (colors, stride,
//! allocator cache), the walker's one-line fetch, the L2 TLB entry, munmap
//! and shootdowns, the fallback, and the SWAP and Scattered Superpages
//! schemes. 16 colors (bits 12-15), so a sub-mapping of 64 pages comes
//! from a 4 MiB block and its pages are 16 frames apart.

use crate::config::SimConfig;
use crate::engine::mmu::Mmu;
use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::{CoreStats, RefBuf, Simulation};
use crate::hw::pwc::Pwc;
use crate::hw::tlb::Tlb;
use crate::hw::tlb::TlbLookup;
use crate::phys::{FrameOwner, Migratetype};
use crate::systems::chp::pagetable::is_colored_huge;
use crate::systems::{ExtEntry, ExtKind};

/// The walks that ended at a colored huge page's PMD (`walk.chp`).
pub(super) fn chp_walks(s: &CoreStats) -> u64 {
    use crate::hw::tlb::Holds;
    use crate::systems::chp::tlb::{ChpTlb, ColoredHuge};
    s.leaf_ext_walks[<crate::systems::TlbExtensions as Holds<ColoredHuge, ChpTlb>>::OWNER]
}

fn is_colored_huge_entry(e: &ExtEntry) -> bool {
    matches!(e.kind, crate::hw::tlb::EntryKind::Ext(ExtKind::ColoredHuge(_)))
}
use crate::units::{Order, Pfn, VirtAddr};
use crate::workload::MapEvent;

const HUGE: u64 = 2 << 20;

fn chp_config(extra: &[&str], colors: &[u32]) -> SimConfig {
    let mut all = vec!["os.policy=\"chp\"", "machine.color_bits=[12,13,14,15]", "run.check_translations=true"];
    all.extend_from_slice(extra);
    let mut cfg = config(&all);
    cfg.workload.as_mut().unwrap().colors = colors.to_vec();
    cfg
}

/// The frame backing each of the 512 pages of the region at `base`.
fn frames(sim: &Simulation, base: VirtAddr) -> Vec<Pfn> {
    let pt = &sim.kernel.proc(1).aspace.pt;
    (0..512).map(|i| pt.lookup(base.add(i * 4096)).expect("mapped").frame).collect()
}

fn chp_mmu(sim: &Simulation, cfg: &SimConfig, pwc: bool) -> Mmu {
    let mut m = cfg.machine.clone();
    m.pwc.enabled = pwc;
    Mmu {
        tlb: Tlb::with_extensions(&m.tlb, 1, crate::systems::tlb_extensions(sim.kernel.color_map(), false)),
        pwc: Pwc::new(&m.pwc, 4, 1),
        l2_tlb_latency: 9.0,
        walk_latency: 1.0,
        check: true,
    }
}

#[test]
fn one_fault_backs_2m_with_8_strided_sub_mappings_of_allowed_colors_round_robin() {
    let colors = [1, 5, 9];
    let sim = simulate(chp_config(&[], &colors), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "faults"), 1.0);
    assert_eq!(stat(&sim, "os.faults.chp"), 1.0);
    assert_eq!(stat(&sim, "os.chp.success_ratio"), 1.0);
    assert!(is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    let f = frames(&sim, BASE);
    let map = sim.kernel.color_map();
    for s in 0..8 {
        let base = f[s * 64];
        assert_eq!(base.raw() & (63 << 4), 0, "sub-mapping {s} base {base} is not block-aligned");
        for i in 0..64 {
            let frame = f[s * 64 + i];
            assert_eq!(frame.raw(), base.raw() + 16 * i as u64, "page {i} of sub-mapping {s}");
            assert_eq!(map.color_of(frame), colors[s % 3], "sub-mapping {s} gets the colors round-robin");
            assert_eq!(
                sim.kernel.mem.owner(frame),
                FrameOwner::User { asid: 1, vpn: BASE.add((s * 64 + i) as u64 * 4096).vpn() }
            );
        }
    }
}

#[test]
fn the_allocator_cache_serves_before_the_buddy_allocator_and_munmap_refills_it() {
    let colors = [1, 5, 9];
    let unmap = (0, MapEvent::Munmap { start: BASE, len: HUGE });
    let first = batch(vec![mmap(BASE, HUGE)], stores(BASE, 512));
    // Colors 1,5,9,1,5,9,1,5: a 4 MiB block for each new color 1 (3), the
    // 5s and 9s from the cache (5).
    let sim = simulate(chp_config(&[], &colors), vec![first.clone()]).unwrap();
    assert_eq!(stat(&sim, "os.chp.blocks"), 3.0);
    assert_eq!(stat(&sim, "os.chp.cache_hits"), 5.0);
    assert_eq!(stat(&sim, "os.chp.cached"), (3 * 15 - 5) as f64);
    let old = frames(&sim, BASE);

    let again = batch(vec![unmap, mmap(BASE, HUGE)], stores(BASE, 512));
    let sim = simulate(chp_config(&[], &colors), vec![first, again]).unwrap();
    assert_eq!(stat(&sim, "os.chp.returned"), 8.0);
    // The second region (colors 9,1,5,9,1,5,9,1) is served from the cache alone.
    assert_eq!(stat(&sim, "os.chp.blocks"), 3.0);
    assert_eq!(stat(&sim, "os.chp.cache_hits"), 13.0);
    let new = frames(&sim, BASE);
    // Every frame of the new region came from the old one or the cache's
    // leftovers, none from the buddy allocator.
    let map = sim.kernel.color_map();
    assert!(new.iter().all(|f| colors.contains(&map.color_of(*f))));
    assert_ne!(new, old, "LIFO cache hands sub-mappings to other slots");
}

#[test]
fn munmap_returns_frames_to_the_cache_not_the_buddy_allocator() {
    let unmap = (0, MapEvent::Munmap { start: BASE, len: HUGE });
    let first = batch(vec![mmap(BASE, HUGE)], stores(BASE, 512));
    let sim = simulate(chp_config(&[], &[2]), vec![first, batch(vec![unmap], vec![])]).unwrap();
    // One color: 8 blocks, each leaving 15 sub-mappings in the cache.
    assert_eq!(stat(&sim, "os.chp.blocks"), 8.0);
    assert_eq!(stat(&sim, "os.chp.cached"), (8 * 16) as f64);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 0.0);
}

#[test]
fn the_walker_fetches_a_colored_huge_page_with_one_line_and_the_l2_tlb_computes_frames() {
    let cfg = chp_config(&[], &[3, 4]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    let mut mmu = chp_mmu(&sim, &cfg, false);
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    let first = mmu.translate(&mut sim.kernel, crate::engine::testutil::req(BASE), &mut refs, &mut stats).unwrap();
    // PML4, PDPT, PMD, then one line of the page table.
    assert_eq!(refs.len(), 4);
    assert_eq!((stats.walks, chp_walks(&stats)), (1, 1));
    let pt = &sim.kernel.proc(1).aspace.pt;
    let table = pt.leaf_slot(BASE).unwrap().node;
    assert_eq!(refs.get(3).0, pt.node_frame(table).addr().raw());
    assert_eq!(first, pt.lookup(BASE).unwrap().frame);
    // Every other page of the region: an L1 miss, an L2 hit on the colored
    // entry, the frame the page table holds (check mode verifies it too).
    for i in 1..512u64 {
        let va = BASE.add(i * 4096 + 0x123);
        let pt_frame = sim.kernel.proc(1).aspace.pt.lookup(va).unwrap().frame;
        match mmu.tlb.peek(1, va, false) {
            TlbLookup::L2(t) => {
                assert!(is_colored_huge_entry(&mmu.tlb.peek_l2(1, va).unwrap()));
                assert_eq!(t.pfn, pt_frame, "page {i}");
            }
            other => panic!("page {i}: {other:?}"),
        }
        assert_eq!(
            mmu.translate(&mut sim.kernel, crate::engine::testutil::req(va), &mut refs, &mut stats).unwrap(),
            pt_frame
        );
    }
    assert_eq!(stats.walks, 1, "one walk covers the whole 2 MiB");
}

#[test]
fn a_pde_cache_hit_keeps_the_colored_huge_page_bit() {
    let cfg = chp_config(&[], &[]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    let mut mmu = chp_mmu(&sim, &cfg, true);
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    mmu.translate(&mut sim.kernel, crate::engine::testutil::req(BASE), &mut refs, &mut stats).unwrap();
    mmu.tlb.flush_all();
    refs = RefBuf::default();
    mmu.translate(&mut sim.kernel, crate::engine::testutil::req(BASE.add(0x40000)), &mut refs, &mut stats).unwrap();
    assert_eq!(refs.len(), 1, "the PDE cache skips to the page table's line");
    assert_eq!(chp_walks(&stats), 2);
}

#[test]
fn munmap_shoots_down_colored_huge_translations() {
    let cfg = chp_config(&[], &[0, 1]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    let mut mmu = chp_mmu(&sim, &cfg, true);
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    mmu.translate(&mut sim.kernel, crate::engine::testutil::req(BASE.add(0x1000)), &mut refs, &mut stats).unwrap();
    assert!(matches!(mmu.tlb.peek(1, BASE.add(0x100000), false), TlbLookup::L2(..)));
    sim.kernel.drain_shootdowns().for_each(drop);
    sim.kernel.munmap(1, BASE, HUGE).unwrap();
    let shots: Vec<_> = sim.kernel.drain_shootdowns().collect();
    assert!(!shots.is_empty());
    for s in &shots {
        mmu.shoot_down(s);
    }
    for va in [BASE, BASE.add(0x1000), BASE.add(0x100000), BASE.add(HUGE - 4096)] {
        assert_eq!(mmu.tlb.peek(1, va, false), TlbLookup::Miss, "{va}");
    }
}

/// Runs one 2 MiB region of stores under `cfg` on a machine where no free
/// block can hold a sub-mapping: every order-9 block taken, every other
/// one freed, so no 4 MiB block can form but plenty of memory stays free.
fn run_without_blocks(cfg: SimConfig) -> Simulation {
    let workload =
        Box::new(crate::engine::testutil::Script { batches: vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))] });
    let mut sim = Simulation::with_workloads(cfg, vec![workload]).unwrap();
    let mem = &mut sim.kernel.mem;
    let mut taken = Vec::new();
    while let Some(b) = mem.alloc(Order::PMD, Migratetype::Movable, FrameOwner::Kernel) {
        taken.push(b);
    }
    for b in taken.iter().filter(|b| b.raw() & 512 == 0) {
        mem.free(*b, Order::PMD);
    }
    sim.run().unwrap();
    sim
}

#[test]
fn a_fault_chp_declines_is_served_by_coloring_with_an_allowed_color() {
    // The chain `os.policy = "chp"` names, and the same chain given
    // explicitly: chp declines (no free block), coloring backs the pages.
    for extra in [&[][..], &["os.systems=[\"chp\", \"coloring\"]"][..]] {
        let sim = run_without_blocks(chp_config(extra, &[6]));
        assert_eq!(sim.kernel.chain(), vec!["chp", "coloring"]);
        assert_eq!(stat(&sim, "os.chp.attempts"), 1.0);
        assert_eq!(stat(&sim, "os.chp.fallback"), 1.0);
        assert_eq!(stat(&sim, "os.chp.success_ratio"), 0.0);
        assert_eq!(stat(&sim, "os.faults.colored"), 512.0);
        assert_eq!(stat(&sim, "os.faults.chp"), 0.0);
        assert!(!is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
        let map = sim.kernel.color_map();
        assert!(frames(&sim, BASE).iter().all(|f| map.color_of(*f) == 6));
    }
}

#[test]
fn a_chain_of_chp_then_bin_hopping_gives_declined_pages_consecutive_colors() {
    let sim = run_without_blocks(chp_config(&["os.systems=[\"chp\", \"bin-hopping\"]"], &[1, 2, 3]));
    assert_eq!(stat(&sim, "os.chp.fallback"), 1.0);
    assert_eq!(stat(&sim, "os.faults.colored"), 512.0);
    let map = sim.kernel.color_map();
    let colors: Vec<u32> = frames(&sim, BASE).iter().map(|f| map.color_of(*f)).collect();
    // CHP's attempt took 8 turns of the shared cursor (one per sub-mapping
    // color: 8 mod 3 = 2), so bin hopping starts at the third color.
    assert_eq!(colors[..6], [3, 1, 2, 3, 1, 2]);
}

#[test]
fn a_process_that_opts_out_of_chp_skips_it_in_the_chain() {
    let mut cfg = chp_config(&[], &[4]);
    cfg.workload.as_mut().unwrap().chp = false;
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "os.chp.attempts"), 0.0);
    assert_eq!(stat(&sim, "os.faults.colored"), 512.0);
}

#[test]
fn partial_munmap_demotes_a_colored_huge_page_to_4k() {
    let hole = (0, MapEvent::Munmap { start: BASE.add(0x5000), len: 4096 });
    let mut rest = stores(BASE, 512);
    rest.remove(5);
    let batches = vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512)), batch(vec![hole], rest)];
    let sim = simulate(chp_config(&[], &[1, 2]), batches).unwrap();
    assert_eq!(stat(&sim, "os.chp.demoted"), 1.0);
    assert_eq!(stat(&sim, "os.chp.returned"), 0.0);
    assert!(!is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    assert_eq!(stat(&sim, "mem.mapped.4k"), (HUGE - 4096) as f64);
}

#[test]
fn swap_gives_a_whole_huge_page_one_color() {
    let cfg = chp_config(&["os.chp.scheme=\"swap\""], &[2, 7, 11]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 3 * HUGE)], stores(BASE, 3 * 512))]).unwrap();
    let map = sim.kernel.color_map();
    for (r, color) in [2, 7, 11].into_iter().enumerate() {
        let f = frames(&sim, BASE.add(r as u64 * HUGE));
        assert!(f.iter().all(|&p| map.color_of(p) == color), "region {r}");
    }
}

#[test]
fn scattered_superpages_are_one_strided_run_over_contiguous_huge_pages() {
    // 512 pages x 16 colors: a 32 MiB block, beyond max_order 10.
    let cfg = chp_config(&["os.chp.scheme=\"scattered\""], &[9]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "os.chp.blocks"), 1.0);
    let f = frames(&sim, BASE);
    assert_eq!(f[0].raw() % 8192, 9);
    assert!(f.iter().enumerate().all(|(i, p)| p.raw() == f[0].raw() + 16 * i as u64));
}

#[test]
fn fewer_sub_mappings_are_longer_strided_runs() {
    let cfg = chp_config(&["os.chp.submappings=2"], &[4, 8]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    let f = frames(&sim, BASE);
    let map = sim.kernel.color_map();
    for (half, color) in [(0, 4), (1, 8)] {
        let run = &f[half * 256..(half + 1) * 256];
        assert!(run.iter().enumerate().all(|(i, p)| p.raw() == run[0].raw() + 16 * i as u64));
        assert_eq!(map.color_of(run[0]), color);
    }
}

#[test]
fn a_process_without_chp_gets_4k_coloring() {
    let mut cfg = chp_config(&[], &[3]);
    cfg.workload.as_mut().unwrap().chp = false;
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "os.chp.attempts"), 0.0);
    assert_eq!(stat(&sim, "os.faults.colored"), 512.0);
}

#[test]
fn color_bits_that_are_not_consecutive_from_12_are_refused() {
    let cfg = config(&["os.policy=\"chp\"", "os.coloring.bits=[13,14]"]);
    let Err(err) = Simulation::new(cfg) else { panic!("accepted") };
    let err = err.to_string();
    assert!(err.contains("os.coloring.bits"), "{err}");
}

#[test]
fn scattered_with_several_sub_mappings_is_refused() {
    let text = "[os]\npolicy = \"chp\"\nchp.scheme = \"scattered\"\nchp.submappings = 4\n[workload]\nkind = \"gups\"\n";
    let err = crate::config::parse_config(text, "t.toml", &[]).unwrap_err().to_string();
    assert!(err.contains("os.chp.submappings"), "{err}");
}

#[test]
fn munmap_of_several_regions_reclaims_exactly_those_wholly_inside() {
    // Regions 1 and 2 are unmapped whole; region 0 keeps its pages.
    let unmap = (0, MapEvent::Munmap { start: BASE.add(HUGE), len: 2 * HUGE });
    let batches = vec![batch(vec![mmap(BASE, 3 * HUGE)], stores(BASE, 3 * 512)), batch(vec![unmap], stores(BASE, 512))];
    let sim = simulate(chp_config(&[], &[0, 1, 2, 3]), batches).unwrap();
    assert_eq!(stat(&sim, "os.chp.returned"), 16.0);
    assert_eq!(stat(&sim, "os.chp.demoted"), 0.0);
    assert!(is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    assert_eq!(stat(&sim, "mem.mapped.4k"), HUGE as f64);
    // Every frame of the unmapped regions is back in the cache, none free.
    let owner_free = |f: Pfn| sim.kernel.mem.owner(f) == FrameOwner::Free;
    assert!(frames(&sim, BASE).iter().all(|&f| !owner_free(f)));
    assert_eq!(stat(&sim, "os.chp.cached"), (stat(&sim, "os.chp.blocks") * 16.0 - 24.0 + 16.0));
}

#[test]
fn mprotect_of_a_whole_colored_huge_page_keeps_it_and_its_entry_takes_the_permission() {
    let cfg = chp_config(&[], &[1, 2]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    sim.kernel.mprotect(1, BASE, HUGE, false).unwrap();
    assert!(is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    let mut mmu = chp_mmu(&sim, &cfg, true);
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    mmu.translate(&mut sim.kernel, crate::engine::testutil::req(BASE.add(0x7000)), &mut refs, &mut stats).unwrap();
    match mmu.tlb.peek(1, BASE.add(0x150000), false) {
        TlbLookup::L2(t) => {
            assert!(is_colored_huge_entry(&mmu.tlb.peek_l2(1, BASE.add(0x150000)).unwrap()) && !t.writable)
        }
        other => panic!("{other:?}"),
    }
    // Part of it: the page is demoted and keeps its mappings.
    sim.kernel.mprotect(1, BASE, 4096, true).unwrap();
    assert!(!is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    assert_eq!(stat(&sim, "os.chp.demoted"), 1.0);
}
