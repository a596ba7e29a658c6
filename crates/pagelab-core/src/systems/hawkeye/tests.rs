//! HawkEye's scenarios: promotion in access-coverage order under
//! khugepaged's budget, on hand-set access bits; regions with no (or one)
//! accessed page never promoted; the fault path; and the whole loop on the
//! simulated clock with every TLB hit checked.

use std::sync::{Arc, Mutex};

use super::khugepaged::HawkeyeKhugepaged;
use super::scan::Kbinmanager;
use super::{lock, CandidateTable, SharedCandidates};
use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::Simulation;
use crate::os::{Daemon, Kernel};
use crate::paging::pte::ACCESSED;
use crate::systems::thp::ThpConfig;
use crate::units::{PageSize, VirtAddr};
use crate::workload::Access;

const MIB2: u64 = 2 << 20;

fn region(i: u64) -> VirtAddr {
    BASE.add(i * MIB2)
}

fn is_huge(sim: &Simulation, va: VirtAddr) -> bool {
    sim.kernel.proc(1).aspace.pt.lookup(va).is_some_and(|m| m.size == PageSize::Size2M)
}

/// Leaves exactly the first `pages` 4 KiB pages of the region accessed.
fn set_coverage(k: &mut Kernel, base: VirtAddr, pages: u64) {
    let aspace = &mut k.proc_mut(1).aspace;
    aspace.accessed_leaves(base, base.add(MIB2), true);
    for i in 0..pages {
        let slot = aspace.pt.leaf_slot(base.add(i * 4096)).expect("every page faulted");
        aspace.pt.set_bits(slot, ACCESSED);
    }
}

#[test]
fn the_daemon_promotes_in_coverage_order_under_its_budget() {
    // Five 2 MiB regions mapped by 4 KiB pages (no huge page at fault).
    // One window's coverage, by hand: 100, 400, 0, 250 and 3 pages. The
    // weights (0 x 6 + 4 x n) / 10: 40, 160, 0, 100, 1, in bins 6, 8, 0,
    // 7, 0. With pages_to_scan = 1024 (two regions a wake-up): the first
    // wake-up promotes region 1 then 3, the second region 0, and regions
    // 2 (nothing accessed) and 4 (weight 1) are never promoted.
    let cfg = config(&["os.policy=\"hawkeye\"", "os.hawkeye.fault=false"]);
    let mut sim = simulate(cfg, vec![batch(vec![mmap(BASE, 5 * MIB2)], stores(BASE, 5 * 512))]).unwrap();
    assert_eq!(stat(&sim, "hawkeye.candidates"), 5.0, "each region's first fault makes it a candidate");
    assert_eq!(stat(&sim, "os.faults.thp"), 0.0);

    let table: SharedCandidates = Arc::new(Mutex::new(CandidateTable::default()));
    (0..5).for_each(|i| lock(&table).add(1, region(i)));
    // 1 GHz: a millisecond is 1e6 cycles.
    let mut scan = Kbinmanager::new(table.clone(), 1.0, 1.0, 1.0);
    let thp = ThpConfig { scan_sleep_ms: 1.0, pages_to_scan: 1024, ..ThpConfig::default() };
    let mut promoter = HawkeyeKhugepaged::new(table.clone(), &thp, 1.0);
    let k = &mut sim.kernel;
    scan.run_due(k, 0.0); // clears every candidate's bits
    for (i, pages) in [100, 400, 0, 250, 3].into_iter().enumerate() {
        set_coverage(k, region(i as u64), pages);
    }
    scan.run_due(k, 1e6); // counts them
    let weights: Vec<u32> =
        (0..12).rev().flat_map(|b| lock(&table).by_asid[&1].clone().pop(b)).map(|c| c.weight).collect();
    assert_eq!(weights, [160, 100, 40, 1], "the first of each bin, highest first (region 2's weight 0 after 4's)");

    promoter.run_due(k, 1e6);
    assert_eq!([1, 3].map(|i| is_huge(&sim, region(i))), [true, true]);
    assert_eq!([0, 2, 4].map(|i| is_huge(&sim, region(i))), [false, false, false], "the budget is spent");
    let k = &mut sim.kernel;
    promoter.run_due(k, 2e6);
    assert!(is_huge(&sim, region(0)));
    let k = &mut sim.kernel;
    promoter.run_due(k, 10e6);
    assert_eq!([2, 4].map(|i| is_huge(&sim, region(i))), [false, false], "bin 0 is never promoted");
    let mut out = crate::stat::Stats::new();
    promoter.report(&mut out);
    assert_eq!(out["hawkeye.promotions"].as_f64(), 3.0);
    assert_eq!(out["hawkeye.wakeups"].as_f64(), 10.0);
    assert_eq!(out["hawkeye.cpu_cycles"].as_f64(), 3.0 * 512.0 * sim.kernel.costs.copy_4k, "512 pages copied each");

    let k = &mut sim.kernel;
    // Promoted regions left the bins; counts every 2 ms (1 ms window, 1 ms
    // sleep) at 1, 3, ..., 11 ms: six. A region that is a huge page by
    // then (here region 1 made a candidate again) is dropped by the next.
    assert_eq!(lock(&table).by_asid[&1].len(), 2);
    scan.run_due(k, 11e6);
    lock(&table).add(1, region(1));
    scan.run_due(k, 13e6);
    let mut out = crate::stat::Stats::new();
    scan.report(&mut out);
    assert_eq!((out["hawkeye.scans"].as_f64(), out["hawkeye.dropped"].as_f64()), (7.0, 1.0));
    assert_eq!(lock(&table).by_asid[&1].len(), 2);
}

#[test]
fn faults_take_huge_pages_as_thp_and_every_eligible_range_is_a_candidate() {
    // A 4 MiB VMA and a 1 MiB one: two THP-eligible faults, two
    // candidates; the small VMA's pages are 4 KiB, no candidate.
    let small = BASE.add(64 << 20);
    let mut accesses = stores(BASE, 2);
    accesses.push(Access::store(BASE.add(MIB2), 8, 1));
    accesses.extend(stores(small, 2));
    let events = vec![mmap(BASE, 2 * MIB2), mmap(small, 1 << 20)];
    let sim = simulate(config(&["os.policy=\"hawkeye\""]), vec![batch(events, accesses)]).unwrap();
    assert_eq!(stat(&sim, "os.faults.thp"), 2.0);
    assert_eq!(stat(&sim, "os.faults.base"), 2.0);
    assert_eq!(stat(&sim, "hawkeye.candidates"), 2.0);
    assert_eq!(stat(&sim, "mem.mapped.2m"), (2 * MIB2) as f64);
}

#[test]
fn hot_regions_are_promoted_on_the_clock_and_a_cold_one_is_not() {
    // Regions 0-5 swept page by page 12 times (3,072 pages: far more than
    // the TLBs hold, 64 L2 entries here, so each sweep's walks set the
    // accessed bits again: a translation a TLB holds sets none);
    // region 6 has one page touched, region 7 none. The 0.2 ms window is
    // long enough to see whole sweeps: one count puts each hot region at
    // (4 x 512) / 10 = 204 (bin 8) or near, and a wake-up (8 regions of
    // budget) promotes all six; region 6's weight stays (4 x 1) / 10 = 0,
    // bin 0.
    let mut accesses = Vec::new();
    for _ in 0..12 {
        accesses.extend(stores(BASE, 6 * 512));
        accesses.push(Access::store(region(6), 8, 1));
    }
    let cfg = config(&[
        "os.policy=\"hawkeye\"",
        "os.hawkeye.fault=false",
        "os.hawkeye.access_window_ms=0.2",
        "os.hawkeye.rescan_sleep_ms=0.01",
        "os.thp.scan_sleep_ms=0.01",
        "run.check_translations=true",
        "machine.tlb.l2_entries=64",
        "machine.tlb.l2_ways=4",
    ]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 8 * MIB2)], accesses)]).unwrap();
    assert!(stat(&sim, "hawkeye.scans") >= 1.0);
    assert_eq!(stat(&sim, "hawkeye.promotions"), 6.0);
    assert!((0..6).all(|i| is_huge(&sim, region(i))));
    assert!(!is_huge(&sim, region(6)));
    assert_eq!(stat(&sim, "hawkeye.candidates"), 7.0, "region 7 never faulted");
}

#[test]
fn bad_hawkeye_keys_are_named() {
    for (key, value) in [("access_window_ms", "0"), ("rescan_sleep_ms", "-1")] {
        let text = "[workload]\nkind = \"gups\"\n";
        let set = [format!("os.hawkeye.{key}={value}")];
        let err = crate::config::parse_config(text, "t.toml", &set).unwrap_err().to_string();
        assert!(err.contains(&format!("os.hawkeye.{key}")), "{err}");
    }
    let err = crate::config::parse_config("[os.hawkeye]\nsleep = 1\n", "t.toml", &[]).unwrap_err().to_string();
    assert!(err.contains("os.hawkeye") && err.contains("sleep"), "{err}");
}
