//! `os.chp.share_leftovers`: a carved block's strided mappings of colors
//! the process may not use go to the kernel's color pool, where 4 KiB
//! coloring takes them, and come back whole to a CHP process of those
//! colors. Worked by hand on 8 colors (bits 12-14): a sub-mapping of 64
//! pages comes from a 2 MiB block (order 9), its pages 8 frames apart.

use std::collections::BTreeSet;

use crate::config::parse_config;
use crate::os::{Boot, Kernel, ProcessSpec};
use crate::phys::FrameOwner;
use crate::stat::Stats;
use crate::units::{Asid, Pfn, VirtAddr};

const HUGE: u64 = 2 << 20;
const A: VirtAddr = VirtAddr::new(0x7f00_0000_0000);
const B: VirtAddr = VirtAddr::new(0x7e00_0000_0000);
const COLOR_POOL: FrameOwner = FrameOwner::Reserved { pool: 2 };
const CHP_CACHE: FrameOwner = FrameOwner::Reserved { pool: 3 };

/// A 64 MiB machine with the chain [chp, coloring] and 8 colors.
fn kernel(share: bool) -> Kernel {
    let sets = vec![
        "machine.phys_mem=\"64MiB\"".to_string(),
        "os.policy=\"chp\"".to_string(),
        "machine.color_bits=[12,13,14]".to_string(),
        format!("os.chp.share_leftovers={share}"),
    ];
    let cfg = parse_config("[workload]\nkind = \"gups\"\n", "t.toml", &sets).unwrap();
    let boot = Boot {
        frames: cfg.machine.phys_mem.bytes() >> 12,
        max_order: cfg.machine.max_order,
        paging_levels: 4,
        colors: cfg.color_map().unwrap(),
        costs: cfg.os.fault_cost.clone(),
        footprint: 0,
        tiers: Vec::new(),
        memory_latency: 240,
        host_view: None,
    };
    crate::systems::boot(&cfg.os, boot, 3.0, 1).unwrap()
}

fn spawn(k: &mut Kernel, colors: &[u32], chp: bool) -> Asid {
    let opt_out = if chp { vec![] } else { vec!["chp"] };
    k.spawn(ProcessSpec { colors: colors.to_vec(), opt_out, ..Default::default() }).unwrap()
}

/// Maps `len` bytes at `start` and faults every page in.
fn touch(k: &mut Kernel, asid: Asid, start: VirtAddr, len: u64) {
    k.mmap(asid, start, len, true, "heap").unwrap();
    for i in 0..len / 4096 {
        let va = start.add(i * 4096);
        if k.proc(asid).aspace.pt.lookup(va).is_none() {
            k.handle_fault(asid, va, true).unwrap();
        }
    }
}

fn chp_stat(k: &Kernel, name: &str) -> f64 {
    let mut out = Stats::new();
    k.system("chp").unwrap().report(k, &mut out);
    out[&format!("os.chp.{name}")].as_f64()
}

fn frames_owned(k: &Kernel, owner: FrameOwner) -> Vec<Pfn> {
    (0..k.mem.nr_frames()).map(Pfn::new).filter(|&p| k.mem.owner(p) == owner).collect()
}

/// Every frame is counted once: each mapped page's frame is owned by that
/// page and mapped nowhere else; the pool's and the cache's frames are
/// exactly what they say they hold; the buddy allocator is consistent.
fn check_accounting(k: &Kernel, procs: &[(Asid, VirtAddr, u64)]) {
    let mut mapped = BTreeSet::new();
    for &(asid, start, len) in procs {
        for i in 0..len / 4096 {
            let va = start.add(i * 4096);
            let Some(m) = k.proc(asid).aspace.pt.lookup(va) else { continue };
            assert!(mapped.insert(m.frame), "frame {} is mapped twice", m.frame);
            assert_eq!(k.mem.owner(m.frame), FrameOwner::User { asid, vpn: va.vpn() });
        }
    }
    let users = (0..k.mem.nr_frames()).filter(|&p| matches!(k.mem.owner(Pfn::new(p)), FrameOwner::User { .. }));
    assert_eq!(users.count(), mapped.len(), "a user frame is not mapped");
    assert_eq!(frames_owned(k, COLOR_POOL).len() as u64, k.color_pool.pooled());
    assert_eq!(frames_owned(k, CHP_CACHE).len() as f64, chp_stat(k, "cached") * 64.0);
    k.mem.check_invariants().unwrap();
}

#[test]
fn a_block_carved_for_5_of_8_colors_offers_exactly_its_other_3_colors_to_the_pool() {
    let mut k = kernel(true);
    let a = spawn(&mut k, &[0, 1, 2, 3, 4], true);
    touch(&mut k, a, A, HUGE);
    // Sub-mapping colors 0,1,2,3,4,0,1,2: a block for each color 0 (2
    // blocks); colors 1-4 of the first come from its cache, 1-2 of the
    // second too; each block's colors 5, 6, 7 are offered.
    assert_eq!(chp_stat(&k, "blocks"), 2.0);
    assert_eq!(chp_stat(&k, "success"), 1.0);
    assert_eq!(chp_stat(&k, "leftovers_offered"), 6.0);
    assert_eq!(chp_stat(&k, "cached"), 2.0, "colors 3 and 4 of the second block");
    let pooled = frames_owned(&k, COLOR_POOL);
    assert_eq!(pooled.len(), 2 * 512 * 3 / 8, "3/8 of each block");
    assert_eq!(k.color_pool.offered(), 384);
    let blocks: BTreeSet<u64> = pooled.iter().map(|p| p.raw() >> 9).collect();
    assert_eq!(blocks.len(), 2, "all from the two carved blocks");
    let map = k.color_map().clone();
    for &b in &blocks {
        let in_block: Vec<_> = pooled.iter().filter(|p| p.raw() >> 9 == b).collect();
        assert_eq!(in_block.len(), 192);
        assert!(in_block.iter().all(|&&p| [5, 6, 7].contains(&map.color_of(p))));
    }
    check_accounting(&k, &[(a, A, HUGE)]);
}

#[test]
fn a_coloring_process_of_the_other_colors_is_served_from_the_leftovers_without_a_new_block() {
    let mut k = kernel(true);
    let a = spawn(&mut k, &[0, 1, 2, 3, 4], true);
    touch(&mut k, a, A, HUGE);
    let offered: BTreeSet<Pfn> = frames_owned(&k, COLOR_POOL).into_iter().collect();
    let c = spawn(&mut k, &[5, 6, 7], false);
    touch(&mut k, c, B, 384 * 4096);
    assert_eq!(k.color_pool.refills, 0, "no buddy block was broken");
    assert_eq!(k.color_pool.pooled(), 0);
    let pt = &k.proc(c).aspace.pt;
    let used: BTreeSet<Pfn> = (0..384).map(|i| pt.lookup(B.add(i * 4096)).unwrap().frame).collect();
    assert_eq!(used, offered, "exactly the leftovers");
    check_accounting(&k, &[(a, A, HUGE), (c, B, 384 * 4096)]);
    // One page more breaks a block of every color (32 KiB) into the pool.
    touch(&mut k, c, B.add(384 * 4096), 4096);
    assert_eq!(k.color_pool.refills, 1);
    // munmap: C's frames go to the buddy allocator, A's sub-mappings to
    // the allocator cache; nothing is lost or kept twice.
    let pt = &k.proc(c).aspace.pt;
    let c_frames: Vec<Pfn> = (0..385).map(|i| pt.lookup(B.add(i * 4096)).unwrap().frame).collect();
    k.munmap(c, B, 385 * 4096).unwrap();
    assert!(c_frames.iter().all(|&p| k.mem.owner(p) == FrameOwner::Free));
    k.munmap(a, A, HUGE).unwrap();
    assert_eq!(chp_stat(&k, "cached"), 2.0 + 8.0);
    check_accounting(&k, &[(a, A, HUGE), (c, B, 385 * 4096)]);
}

#[test]
fn a_chp_process_of_the_other_colors_takes_whole_leftovers_back_before_carving() {
    let mut k = kernel(true);
    let a = spawn(&mut k, &[0, 1, 2, 3, 4], true);
    touch(&mut k, a, A, HUGE);
    let b = spawn(&mut k, &[5, 6, 7], true);
    touch(&mut k, b, B, HUGE);
    // B's colors 5,6,7,5,6,7,5,6: two of each color were offered (6
    // reclaimed); the third 5 carves block 3, whose 6 and 7 are cached
    // (B's colors) and 0-4 offered; the third 6 comes from that cache.
    assert_eq!(chp_stat(&k, "leftovers_reclaimed"), 6.0);
    assert_eq!(chp_stat(&k, "blocks"), 3.0);
    assert_eq!(chp_stat(&k, "leftovers_offered"), 6.0 + 5.0);
    assert_eq!(k.color_pool.offered(), 5 * 64);
    check_accounting(&k, &[(a, A, HUGE), (b, B, HUGE)]);
}

#[test]
fn a_leftover_that_lost_a_frame_to_coloring_is_not_taken_back() {
    let mut k = kernel(true);
    let a = spawn(&mut k, &[0, 1, 2, 3, 4], true);
    touch(&mut k, a, A, HUGE);
    // A coloring process of color 7 takes one frame: the lowest, from the
    // first block's color-7 sub-mapping.
    let c = spawn(&mut k, &[7], false);
    touch(&mut k, c, B.add(HUGE * 8), 4096);
    let b = spawn(&mut k, &[7], true);
    touch(&mut k, b, B, HUGE);
    // Eight color-7 sub-mappings: one of the two offered is whole, the
    // other lost a frame; the rest are carved (a block each).
    assert_eq!(chp_stat(&k, "leftovers_reclaimed"), 1.0);
    assert_eq!(chp_stat(&k, "blocks"), 2.0 + 7.0);
    check_accounting(&k, &[(a, A, HUGE), (b, B, HUGE), (c, B.add(HUGE * 8), 4096)]);
}

#[test]
fn without_sharing_the_leftovers_stay_in_the_allocator_cache() {
    let mut k = kernel(false);
    let a = spawn(&mut k, &[0, 1, 2, 3, 4], true);
    touch(&mut k, a, A, HUGE);
    assert_eq!(chp_stat(&k, "leftovers_offered"), 0.0);
    assert_eq!(k.color_pool.pooled(), 0);
    assert_eq!(chp_stat(&k, "cached"), 2.0 * 7.0 - 6.0);
    check_accounting(&k, &[(a, A, HUGE)]);
}
