//! The SVM generator's accesses worked by hand.

use super::super::testutil::*;
use super::super::{AccessKind, InitMode, WorkloadConfig, WorkloadKind};
use super::*;
use crate::units::ByteSize;

/// `instances` instances of 2 nonzeros over 8 features (blocks of 4).
fn config(instances: u64, seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        kind: WorkloadKind::Svm,
        footprint: ByteSize(8 * 8 + instances * (16 * 3 + 65)),
        nonzeros: Some(2),
        features: Some(8),
        seed,
        init: InitMode::None,
        accesses: 0,
        ..WorkloadConfig::default()
    }
}

fn addrs(accesses: &[Access]) -> Vec<u64> {
    accesses.iter().map(|a| a.vaddr.raw()).collect()
}

#[test]
fn the_artifacts_footprint_holds_kdd12_at_eleven_nonzeros() {
    // 38,000 MiB (bin/frag.sh) at 11 nonzeros and kdd12's ratio of
    // features to instances: 153 M instances, 2.5% more than kdd12's (at
    // 12 nonzeros 3.5% fewer).
    let cfg = WorkloadConfig { kind: WorkloadKind::Svm, footprint: ByteSize(38_000 << 20), ..Default::default() };
    let shape = SvmShape::of(&cfg).unwrap();
    assert_eq!(shape.nonzeros, 11);
    let off = shape.instances as f64 / KDD12_INSTANCES as f64 - 1.0;
    assert!((0.02..0.03).contains(&off), "{shape:?}");
    let ratio = shape.features as f64 / shape.instances as f64;
    assert!((ratio - KDD12_FEATURES as f64 / KDD12_INSTANCES as f64).abs() < 1e-6);
    // Given features: what is left after w, per instance (16 x 3 + 65 bytes).
    let shape = SvmShape::of(&config(100, 1)).unwrap();
    assert_eq!((shape.instances, shape.nonzeros, shape.features), (100, 2, 8));
    assert_eq!(
        SvmShape::of(&WorkloadConfig { features: Some(1), ..config(100, 1) }),
        None,
        "fewer features than nonzeros"
    );
}

#[test]
fn the_first_sweep_reads_instance_0_in_order_by_hand() {
    let svm = Svm::new(&config(100, 1));
    let a = &svm.at;
    assert_eq!(svm.arrays.len(), 12);
    // x_space: 2 nodes and a terminator per instance, in whole pages.
    assert_eq!(svm.arrays[2].len, (100 * 3 * 16_u64).div_ceil(4096) * 4096);
    let mut out = Vec::new();
    svm.push_sweep(&mut out, 0);
    let (w0, w1) = (svm.weight(0, 0), svm.weight(0, 1));
    let x_space = a.x_space.raw();
    assert_eq!(
        addrs(&out),
        [
            a.y.raw(),
            a.x.raw(),
            x_space,
            x_space + 16,
            x_space + 32,
            a.alpha.raw(),
            a.qd.raw(),
            w0.raw(),
            w0.raw(),
            w1.raw(),
            w1.raw(),
            a.index.raw()
        ]
    );
    let dependent: Vec<bool> = out.iter().map(|a| a.site.is_dependent()).collect();
    assert_eq!(dependent, [false, false, true, false, false, false, false, false, false, false, false, false]);
    let stores: Vec<usize> = (0..out.len()).filter(|&k| out[k].kind == AccessKind::Store).collect();
    assert_eq!(stores, [6, 8, 10, 11], "QD[0], w twice, index[0]");
    assert_eq!(out.iter().map(|a| a.instrs).sum::<u32>(), 19 + 13 * 2, "the binary's first loop");
    // Feature k lies in block k (ids 4k..4k+4 of 8), so they ascend.
    assert!((a.w.raw()..a.w.raw() + 32).contains(&w0.raw()));
    assert!((a.w.raw() + 32..a.w.raw() + 64).contains(&w1.raw()));
}

#[test]
fn a_coordinate_step_reads_its_instance_and_gathers_by_hand() {
    let svm = Svm::new(&config(100, 1));
    let a = &svm.at;
    let i = svm.order.apply(7);
    let mut out = Vec::new();
    svm.push_step(&mut out, 7);
    let node = |k: u64| a.x_space.raw() + (3 * i + k) * 16;
    let (w0, w1) = (svm.weight(i, 0).raw(), svm.weight(i, 1).raw());
    assert_eq!(
        addrs(&out),
        [
            a.index.raw() + 28,
            a.y.raw() + i,
            a.x.raw() + 8 * i,
            node(0),
            w0,
            node(1),
            w1,
            node(2),
            a.alpha.raw() + 8 * i,
            a.qd.raw() + 8 * i,
            a.alpha.raw() + 8 * i,
            w0,
            w0,
            w1,
            w1
        ]
    );
    // The label after index[s], the first node after the pointer, each
    // gather after its node.
    let dependent: Vec<usize> = (0..out.len()).filter(|&k| out[k].site.is_dependent()).collect();
    assert_eq!(dependent, [1, 3, 4, 6]);
    let stores: Vec<usize> = (0..out.len()).filter(|&k| out[k].kind == AccessKind::Store).collect();
    assert_eq!(stores, [10, 12, 14], "alpha[i], then w at each feature");
    assert_eq!(out.iter().map(|a| a.instrs).sum::<u32>(), 51 + 15 * 2, "the binary's step");
    // The same instance gathers the same features as in the first sweep.
    let mut sweep = Vec::new();
    svm.push_sweep(&mut sweep, i);
    assert_eq!((sweep[7].vaddr.raw(), sweep[9].vaddr.raw()), (w0, w1));
}

#[test]
fn a_shuffle_swaps_each_position_with_a_later_one() {
    let mut svm = Svm::new(&config(100, 3));
    let index = svm.at.index.raw();
    let mut out = Vec::new();
    for s in 0..100 {
        out.clear();
        svm.push_swap(&mut out, s);
        let j = (out[1].vaddr.raw() - index) / 4;
        assert!((s..100).contains(&j), "{s} -> {j}");
        assert_eq!(addrs(&out), [index + 4 * s, index + 4 * j, index + 4 * s, index + 4 * j]);
        let kinds: Vec<AccessKind> = out.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, [AccessKind::Load, AccessKind::Load, AccessKind::Store, AccessKind::Store]);
        assert_eq!(out.iter().map(|a| a.instrs).sum::<u32>(), 13 + RAND_INSTRS);
    }
}

#[test]
fn a_run_is_the_sweep_a_shuffle_and_a_step_per_instance_in_a_new_order_each_time() {
    let cfg = config(100, 5);
    let all = collect(&cfg, usize::MAX).accesses;
    let (sweep, shuffle, steps) = (100 * 12, 100 * 4, 100 * 15);
    assert_eq!(all.len(), sweep + shuffle + steps);
    let svm = Svm::new(&cfg);
    assert_eq!(svm.init_loop_accesses(), (sweep + shuffle) as u64);
    // Each instance is stepped once, in the order's sequence.
    let y = svm.at.y.raw();
    let visited: Vec<u64> = all[sweep + shuffle..].chunks(15).map(|c| c[1].vaddr.raw() - y).collect();
    let mut sorted = visited.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    assert_ne!(visited, sorted, "a shuffled order");
    // With a budget the next iteration follows: a shuffle, then another order.
    let budget = WorkloadConfig { accesses: (sweep + 2 * (shuffle + steps)) as u64, ..cfg.clone() };
    let twice = collect(&budget, usize::MAX).accesses;
    assert_eq!(&twice[..all.len()], &all[..]);
    let again: Vec<u64> = twice[all.len() + shuffle..].chunks(15).map(|c| c[1].vaddr.raw() - y).collect();
    assert_ne!(again, visited);
    // skip_kernel_init starts at the first step.
    let skipping = WorkloadConfig { skip_kernel_init: true, ..cfg };
    assert_eq!(collect(&skipping, usize::MAX).accesses, &all[sweep + shuffle..]);
}

#[test]
fn features_spread_uniformly_over_their_blocks() {
    // 4096 features in 2 blocks; 20,000 instances' first features over
    // block 0's 2048 ids, counted by the 4 pages of w they span.
    let cfg = WorkloadConfig { features: Some(4096), footprint: ByteSize(8 * 4096 + 20_000 * 113), ..config(1, 9) };
    let svm = Svm::new(&cfg);
    assert_eq!(svm.shape.instances, 20_000);
    let mut pages = [0f64; 4];
    for i in 0..20_000 {
        pages[((svm.weight(i, 0).raw() - svm.at.w.raw()) >> 12) as usize] += 1.0;
    }
    let expected = 5_000.0;
    let chi2: f64 = pages.iter().map(|c| (c - expected).powi(2) / expected).sum();
    // 3 degrees of freedom: P(chi2 > 16.3) is about 1e-3.
    assert!(chi2 < 16.3, "chi2 = {chi2}, {pages:?}");
}
