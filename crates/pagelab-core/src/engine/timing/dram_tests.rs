//! The DRAM's banks in the interval model's window, worked by hand.
//! Machine: base CPI 0.5, L1D 4 cycles, 10 fill buffers; the stage's part
//! (which bank, how long it is held, the latency) is given directly.

use super::window::{AccessTiming, Kind, Window};
use crate::config::MachineConfig;
use crate::hw::core_stats::CoreStats;

/// A window with the DRAM's banks (the generic mapping's 16).
fn window() -> Window {
    let mut m = MachineConfig::default();
    m.timing.base_cpi = 0.5;
    m.pwc.latency = 1;
    m.memory.dram.enabled = true;
    Window::new(&m)
}

/// A load whose data reference reached DRAM bank `bank`, holding it `busy`
/// cycles, `data` cycles beyond an L1D hit.
fn dram_load(w: &mut Window, s: &mut CoreStats, bank: u32, busy: f64, data: f64) {
    w.banks.as_mut().expect("banks").data_ref(bank, busy);
    let a = AccessTiming { instrs: 1, kind: Kind::Load, data, ..AccessTiming::default() };
    w.access_with_banks(&a, s);
}

#[test]
fn two_misses_to_different_banks_overlap() {
    // Dispatched at 0.5 and 1; each back 200 later: the core waits for the
    // second, at 201. Neither waited for a bank.
    let (mut w, mut s) = (window(), CoreStats::default());
    dram_load(&mut w, &mut s, 0, 30.0, 200.0);
    dram_load(&mut w, &mut s, 1, 30.0, 200.0);
    w.serialize(&mut s, 0.0);
    assert_eq!(w.now(), 201.0);
    assert_eq!((s.dram_queue_waits, s.dram_queue_cycles), (0, 0.0));
}

#[test]
fn two_misses_to_one_bank_serialise() {
    // The first holds bank 3 from 0.5 to 30.5; the second, issued at 1,
    // starts there (29.5 cycles of wait) and is back at 230.5.
    let (mut w, mut s) = (window(), CoreStats::default());
    dram_load(&mut w, &mut s, 3, 30.0, 200.0);
    dram_load(&mut w, &mut s, 3, 30.0, 200.0);
    w.serialize(&mut s, 0.0);
    assert_eq!(w.now(), 230.5);
    assert_eq!((s.dram_queue_waits, s.dram_queue_cycles), (1, 29.5));
    assert_eq!(s.dram_bank_queue_cycles[3], 29.5);
    assert_eq!(s.cycles_data, 230.5 - 1.0, "the wait is the data's");
}

#[test]
fn a_writeback_holds_its_bank_once_the_fill_that_evicted_it_arrives() {
    // The first load's fill (back at 200.5) writes a line back to bank 2,
    // which holds it 50 cycles: the next load to bank 2, dispatched at 1
    // but issued after a dependence on the first (at 200.5), waits until
    // 250.5 and is back at 350.5. The first load itself never waits.
    let (mut w, mut s) = (window(), CoreStats::default());
    w.banks.as_mut().unwrap().write(2, 50.0);
    dram_load(&mut w, &mut s, 0, 30.0, 200.0);
    w.banks.as_mut().unwrap().data_ref(2, 30.0);
    let chase = AccessTiming { instrs: 1, kind: Kind::Load, data: 100.0, dependent: true, ..Default::default() };
    w.access_with_banks(&chase, &mut s);
    w.serialize(&mut s, 0.0);
    assert_eq!(w.now(), 350.5);
    assert_eq!((s.dram_queue_waits, s.dram_queue_cycles), (1, 50.0));
}

#[test]
fn a_walks_references_wait_in_order_and_delay_its_end() {
    // A walk (a PWC lookup of 1 cycle) of two references of 100 cycles
    // each, both to bank 5, which a load held until 40.5: the first
    // reference could issue at 1 + 1 = 2, waits 38.5, and the second
    // follows it; the walk ends at 40.5 + 200 = 240.5, and its data
    // (an L1D hit) with it. The core waits for the load (to 100.5), then
    // for the walk: 140 cycles of walk.
    let (mut w, mut s) = (window(), CoreStats::default());
    dram_load(&mut w, &mut s, 5, 40.0, 100.0);
    let b = w.banks.as_mut().unwrap();
    b.walk_ref(5, 0.0, 10.0);
    b.walk_ref(5, 100.0, 10.0);
    let walk = AccessTiming { instrs: 1, kind: Kind::Load, walk: true, walk_refs: 200.0, ..Default::default() };
    w.access_with_banks(&walk, &mut s);
    w.serialize(&mut s, 0.0);
    assert_eq!(w.now(), 240.5);
    assert_eq!((s.dram_queue_waits, s.dram_queue_cycles), (1, 38.5), "the second found the bank free");
    assert_eq!((s.cycles_walk, s.cycles_data), (140.0, 99.5));
}
