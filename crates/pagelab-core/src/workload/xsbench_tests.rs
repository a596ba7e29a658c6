//! The XSBench generator's accesses worked by hand.

use super::super::testutil::*;
use super::super::{AccessKind, InitMode, WorkloadConfig, WorkloadKind};
use super::*;
use crate::units::ByteSize;

/// Nuclides per material (`load_num_nucs`, large problem, read from the
/// binary: the lists below must have these lengths).
const NUM_NUCS: [usize; 12] = [321, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];

/// G = `gridpoints` points per nuclide.
fn config(gridpoints: u64, seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        kind: WorkloadKind::XsBench,
        footprint: ByteSize(gridpoints * BYTES_PER_GRIDPOINT),
        seed,
        init: InitMode::None,
        ..WorkloadConfig::default()
    }
}

#[test]
fn the_materials_are_the_large_problems() {
    let m = materials();
    let sizes: Vec<usize> = m.iter().map(Vec::len).collect();
    assert_eq!(sizes, NUM_NUCS);
    assert_eq!((m[0][33], m[0][34], m[0][320]), (41, 68, 354), "fuel: the small fuel, then 68 to 354");
    assert!(m.iter().flatten().all(|&n| (n as u64) < ISOTOPES));
    for list in &m {
        let mut unique = list.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), list.len(), "a nuclide once per material");
    }
    // The benchmark's distribution sums to 1.001: pick_mat gives material
    // 0 what the others leave, 0.139.
    assert!((DIST.iter().sum::<f64>() - 1.001).abs() < 1e-12);
    // pick_mat's loop: material 1 after two tries of 8 and 4 + 4
    // instructions, 2 after 8 + 13 + 12 (worked from the binary).
    assert_eq!((pick_instrs(1), pick_instrs(2), pick_instrs(0)), (16, 33, 367));
}

#[test]
fn materials_are_picked_as_pick_mat_picks_them() {
    let x = XsBench::new(&config(2, 1));
    // dist[1..=i] summed: below 0.052 material 1, from 0.861 on material 0.
    assert_eq!((x.pick_material(0.0), x.pick_material(0.0519), x.pick_material(0.0521)), (1, 1, 2));
    assert_eq!((x.pick_material(0.8609), x.pick_material(0.8611), x.pick_material(0.9999)), (11, 0, 0));
    let mut rng = rng_for(4, 0);
    let mut counts = [0f64; 12];
    for _ in 0..100_000 {
        counts[x.pick_material(unit_f64(rng.next_u64()))] += 1.0;
    }
    let p = |m: usize| if m == 0 { 1.0 - x.running[11] } else { DIST[m] };
    let chi2: f64 = counts.iter().enumerate().map(|(m, c)| (c - 1e5 * p(m)).powi(2) / (1e5 * p(m))).sum();
    // 11 degrees of freedom: P(chi2 > 31.3) is about 1e-3.
    assert!(chi2 < 31.3, "chi2 = {chi2}, {counts:?}");
}

#[test]
fn the_arrays_are_the_grids_by_hand() {
    // G = 8: 2,840 points of 48 bytes (34 pages), 2,840 unionized points of
    // 16 bytes, 2,840 x 355 indices of 4 bytes.
    let x = XsBench::new(&config(8, 1));
    let lens: Vec<u64> = x.arrays.iter().map(|a| a.len).collect();
    assert_eq!(lens, [34 * 4096, 45_440_u64.div_ceil(4096) * 4096, (2840 * 355 * 4_u64).div_ceil(4096) * 4096]);
    assert_eq!((x.grids, x.union, x.index), (x.arrays[0].start, x.arrays[1].start, x.arrays[2].start));
    assert_eq!(gridpoints_in(BYTES_PER_GRIDPOINT * 2 - 1), 1, "a footprint under two points is refused");
}

#[test]
fn a_search_for_point_1000_by_hand() {
    // 2,840 points: the search starts with points 0 and 2,839.
    let x = XsBench::new(&config(8, 1));
    let mut out = Vec::new();
    assert_eq!(x.push_search(&mut out, 1000, 2), 1000);
    let mids = [1419, 709, 1064, 886, 975, 1019, 997, 1008, 1002, 999, 1000, 1001];
    assert_eq!(out.len(), mids.len() + 1);
    for (a, mid) in out.iter().zip(mids) {
        assert_eq!(a.vaddr, x.union.add(16 * mid));
        assert_eq!(a.kind, AccessKind::Load);
    }
    // Then the row pointer of point 1000, 8 bytes into it.
    assert_eq!(out[12].vaddr, x.union.add(16 * 1000 + 8));
    let dependent: Vec<bool> = out.iter().map(|a| a.site.is_dependent()).collect();
    assert!(!dependent[0] && dependent[1..].iter().all(|&d| d), "a chain from the grid's middle");
    let instrs: Vec<u32> = out.iter().map(|a| a.instrs).collect();
    assert_eq!(instrs[0], 114 + 33 + 10, "the lookup's head, pick_mat of material 2, a step");
    assert!(instrs[1..12].iter().all(|&i| i == 10) && instrs[12] == 29);
}

#[test]
fn a_nuclides_index_then_its_two_points_by_hand() {
    let x = XsBench::new(&config(8, 1));
    // Water (24, 41, 4, 5) at point 1000, 65% into the grid, no spread:
    // each nuclide's index is 5 (of 0..8), so its two points start 48
    // bytes into a line and take three lines: 16, 64 and 16 bytes.
    let l = Lookup { point: 1000, share: 0.65, spread: 0, material: 2, next: 0 };
    let mut out = Vec::new();
    for j in 0..4 {
        x.push_nuclide(&mut out, &l, j);
    }
    assert_eq!(out.len(), 4 * 4);
    for (j, nuclide) in [24u64, 41, 4, 5].into_iter().enumerate() {
        let n = &out[4 * j..4 * j + 4];
        assert_eq!(n[0].vaddr, x.index.add((1000 * 355 + nuclide) * 4));
        assert_eq!(n[0].size, 4);
        let first = x.grids.add((nuclide * 8 + 5) * 48);
        assert_eq!((n[1].vaddr, n[2].vaddr, n[3].vaddr), (first, first.add(16), first.add(80)));
        assert_eq!((n[1].size, n[2].size, n[3].size), (16, 64, 16));
        // The first nuclide's index follows the row pointer; every first
        // line follows its index.
        let dependent: Vec<bool> = n.iter().map(|a| a.site.is_dependent()).collect();
        assert_eq!(dependent, [j == 0, true, false, false]);
        let instrs: u32 = n.iter().map(|a| a.instrs).sum();
        assert_eq!(instrs, if j == 0 { 32 } else { 39 }, "39 a nuclide, 7 of the first's on the row pointer");
    }
    // At the grid's last point the program takes the one before it.
    let end = Lookup { share: 0.999, ..l };
    assert_eq!(x.nuclide_index(&end, 24), 6);
}

#[test]
fn a_nuclides_index_spreads_as_a_binomial_count() {
    // G = 10,000 at share 0.3: mean 3,000, standard deviation sqrt(2,100)
    // = 45.8 (a binomial count of 10,000 uniform energies under 0.3).
    let x = XsBench::new(&config(10_000, 3));
    let spread = (3.0f64 * 10_000.0 * 0.3 * 0.7).sqrt() as u64;
    let l = Lookup { point: 0, share: 0.3, spread, material: 0, next: 0 };
    let ks: Vec<f64> = (0..20_000).map(|p| x.nuclide_index(&Lookup { point: p, ..l }, p % 355) as f64).collect();
    let mean = ks.iter().sum::<f64>() / ks.len() as f64;
    let sd = (ks.iter().map(|k| (k - mean).powi(2)).sum::<f64>() / ks.len() as f64).sqrt();
    assert!((mean - 3000.0).abs() < 2.0, "{mean}");
    assert!((sd - 45.8).abs() < 2.0, "{sd}");
}

#[test]
fn lookups_run_whole_and_repeat_per_seed() {
    let cfg = WorkloadConfig { accesses: 200_000, ..config(40, 5) };
    let all = collect(&cfg, usize::MAX).accesses;
    assert_eq!(all, collect(&cfg, usize::MAX).accesses);
    assert_ne!(all, collect(&config(40, 6), 200_000).accesses);
    // Each lookup: its search from the grid's middle, the row pointer, then
    // per nuclide its index and two or three lines.
    let middle = XsBench::new(&cfg).union.add((355 * 40 - 1) / 2 * 16);
    let starts: Vec<usize> = (0..all.len()).filter(|&i| all[i].vaddr == middle).collect();
    assert!(starts.len() > 500, "{} lookups", starts.len());
    let mut fuel = 0;
    for w in starts.windows(2) {
        let lookup = &all[w[0]..w[1]];
        let indices = lookup.iter().filter(|a| a.site.pc_tag() == INDEX_PC as u16).count();
        assert!(NUM_NUCS.contains(&indices), "{indices}");
        fuel += (indices == 321) as usize;
        let searched = lookup.iter().take_while(|a| a.site.pc_tag() == SEARCH_PC as u16).count();
        // log2(14,199 points) = 13.8: 13 or 14 steps.
        assert!((13..=14).contains(&searched), "{searched}");
    }
    // The fuel is 14% of lookups.
    let share = fuel as f64 / (starts.len() - 1) as f64;
    assert!((0.09..0.19).contains(&share), "{share}");
}
