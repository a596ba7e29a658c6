//! GTSM end to end: a chunk's layout around faulty frames, worked by hand;
//! a run whose every TLB hit is checked against the page table; faulty
//! frames that no system allocates and compaction does not move.

use super::pagetable::gtsm_record;
use super::{first_32, usable_sub_blocks, CHUNK_PAGES};
use crate::engine::testutil::{config, stat};
use crate::engine::Simulation;
use crate::phys::{inject_faulty, FaultyGranularity, FrameOwner, Migratetype, PhysMem};
use crate::units::{Order, Pfn};

#[test]
fn a_chunk_uses_its_first_32_sub_blocks_free_of_faulty_frames() {
    // Chunk 1 (frames 1024..2048): frame 5 of sub-block 0 faulty, frame 2
    // of sub-block 3, all of sub-block 10, and sub-block 7 allocated.
    let mut mem = PhysMem::new(4096, 10).unwrap();
    for pfn in [1024 + 5, 1024 + 3 * 16 + 2] {
        assert!(mem.alloc_specific(Pfn::new(pfn), Order::BASE, FrameOwner::Faulty));
    }
    assert!(mem.alloc_specific(Pfn::new(1024 + 10 * 16), Order::new(4), FrameOwner::Faulty));
    assert!(mem.alloc_specific(Pfn::new(1024 + 7 * 16), Order::new(4), FrameOwner::Kernel));
    let usable = usable_sub_blocks(&mem, Pfn::new(1024));
    assert_eq!(usable, !(1 | 1 << 3 | 1 << 7 | 1 << 10));
    // The first 32 of the 60 usable: 1, 2, 4, 5, 6, 8, 9, 11..=35.
    let used = first_32(usable).unwrap();
    let by_hand = [1, 2, 4, 5, 6, 8, 9].into_iter().chain(11..=35).fold(0u64, |v, j| v | 1 << j);
    assert_eq!(used, by_hand);
    // A chunk with 33 unusable sub-blocks gives no page.
    assert_eq!(first_32(u64::MAX >> 33), None);
    assert_eq!(first_32(u64::MAX >> 32), Some(u64::MAX >> 32));
}

fn gtsm_run(extra: &[&str]) -> Simulation {
    let mut all = vec![
        "os.policy=\"gtsm\"",
        "workload.footprint=\"8MiB\"",
        "workload.init=\"pages\"",
        "workload.accesses=20000",
        "run.check_translations=true",
    ];
    all.extend_from_slice(extra);
    let mut sim = Simulation::new(config(&all)).unwrap();
    sim.run().unwrap();
    sim
}

fn faulty_count(mem: &PhysMem) -> u64 {
    (0..mem.nr_frames()).filter(|&p| mem.owner(Pfn::new(p)) == FrameOwner::Faulty).count() as u64
}

/// The faulty frames a run of `cfg`'s machine starts with.
fn injected(sim: &Simulation, rate: f64, granularity: FaultyGranularity) -> u64 {
    let mut mem = PhysMem::new(sim.kernel.mem.nr_frames(), 10).unwrap();
    inject_faulty(&mut mem, rate, granularity, sim_seed())
}

fn sim_seed() -> u64 {
    config(&[]).run.seed
}

#[test]
fn gtsm_pages_translate_as_their_4k_mappings_around_faulty_frames() {
    // 64 KiB faults at 5%: nearly every chunk has 32 usable sub-blocks,
    // so the 4 regions of the 8 MiB table are GTSM pages; every TLB hit is
    // checked against the page table (check_translations).
    let sim = gtsm_run(&["os.faulty_frames=0.05", "os.faulty_granularity=\"64k\""]);
    assert_eq!(stat(&sim, "os.gtsm.pages"), 4.0);
    assert_eq!(stat(&sim, "os.faults.gtsm"), 4.0);
    assert_eq!(stat(&sim, "faults"), 4.0);
    assert_eq!(stat(&sim, "mem.mapped.gtsm"), 4.0 * (2 << 20) as f64);
    // Four 2 MiB entries hold the whole table: the L2 TLB misses only at
    // the first touch of each page's entry (and after the 4 faults).
    assert!(stat(&sim, "dtlb.l2.misses") < 20.0, "{}", stat(&sim, "dtlb.l2.misses"));
    // Each page's 32 sub-blocks hold no faulty frame.
    let pt = &sim.kernel.proc(1).aspace.pt;
    let vma = sim.kernel.proc(1).aspace.vmas.iter().next().unwrap();
    let (start, regions) = (vma.start, vma.len() >> 21);
    for r in 0..regions {
        let (table, _) = pt.pmd_table_of(start.add(r << 21)).unwrap();
        let g = gtsm_record(pt, table);
        assert_eq!(g.used.count_ones(), 32);
        for j in (0..64).filter(|j| g.used >> j & 1 != 0) {
            let first = g.chunk.raw() + j * 16;
            assert!((first..first + 16).all(|p| sim.kernel.mem.owner(Pfn::new(p)) != FrameOwner::Faulty));
        }
        assert_eq!(g.chunk.raw() % CHUNK_PAGES, 0);
    }
    let rate = injected(&sim, 0.05, FaultyGranularity::Block64K);
    assert_eq!(faulty_count(&sim.kernel.mem), rate);
}

#[test]
fn at_5_5_percent_of_4k_frames_few_chunks_can_make_a_page() {
    // P(64 KiB sub-block fault-free) = 0.945^16 = 0.405; P(>= 32 of 64) is
    // about 0.08: of the 64 chunks of 256 MiB, about 5 (the issue's
    // arithmetic). 16 MiB of table = 8 regions: a few GTSM pages, then 4 KiB.
    let sim = gtsm_run(&["os.faulty_frames=0.055", "workload.footprint=\"16MiB\""]);
    let pages = stat(&sim, "os.gtsm.pages");
    assert!((1.0..=8.0).contains(&pages), "{pages}");
    let skipped = stat(&sim, "os.gtsm.chunks_skipped");
    assert!(skipped > 20.0, "{skipped} chunks skipped");
    assert!(pages / (pages + skipped) < 0.2);
}

#[test]
fn no_system_allocates_a_faulty_frame() {
    // Every policy, with 5% of 4 KiB frames faulty: after the run, the
    // faulty frames are exactly the ones injected (an allocation of one
    // would have changed its owner).
    for policy in ["base", "thp", "coloring", "bin-hopping", "chp", "perforated", "gtsm"] {
        let p = format!("os.policy=\"{policy}\"");
        let open_rule = "os.perforated.max_filter_bits=8";
        let sim = gtsm_run(&[&p, "os.faulty_frames=0.05", "workload.footprint=\"32MiB\"", open_rule]);
        let expected = injected(&sim, 0.05, FaultyGranularity::Frame);
        assert!(expected > 500, "{expected}");
        assert_eq!(faulty_count(&sim.kernel.mem), expected, "{policy}");
        if policy == "perforated" {
            // No 2 MiB region is free of faults: every region of the table
            // is a perforated page over faulty frames (translations checked).
            assert_eq!(stat(&sim, "perforated.pages"), 16.0);
            assert!(stat(&sim, "perforated.holes") > 16.0 * 10.0);
        }
    }
}

#[test]
fn compaction_neither_moves_nor_fills_faulty_frames() {
    // Fragment memory with movable frames, some faulty frames beside them;
    // compact: the faulty frames stay, and none became a target.
    let mut mem = PhysMem::new(2048, 10).unwrap();
    let faulty = inject_faulty(&mut mem, 0.05, FaultyGranularity::Frame, 3);
    let mut user = Vec::new();
    while let Some(p) = mem.alloc(Order::BASE, Migratetype::Movable, FrameOwner::Kernel) {
        user.push(p);
    }
    for (i, p) in user.iter().enumerate() {
        if i % 3 == 0 {
            mem.set_owner(*p, FrameOwner::User { asid: 1, vpn: crate::units::Vpn::new(i as u64) });
        } else {
            mem.free(*p, Order::BASE);
        }
    }
    let before: Vec<u64> = (0..2048).filter(|&p| mem.owner(Pfn::new(p)) == FrameOwner::Faulty).collect();
    crate::phys::compact(&mut mem, Order::PMD, |_, _, _| true);
    let after: Vec<u64> = (0..2048).filter(|&p| mem.owner(Pfn::new(p)) == FrameOwner::Faulty).collect();
    assert_eq!(before, after);
    assert_eq!(after.len() as u64, faulty);
}
