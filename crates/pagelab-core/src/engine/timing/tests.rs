//! The interval model worked out by hand. Machine: base CPI 0.5, L1D 4
//! cycles, memory 240 (a miss costs 236 beyond the L1 hit), L2 TLB 9,
//! page-walk cache 1; the window's sizes per test.

use super::window::{AccessTiming, Kind, Window};
use super::{Timing, MEMORY};
use crate::config::MachineConfig;
use crate::hw::core_stats::CoreStats;

const MISS: f64 = 236.0;

fn window(rob: u32, mshrs: u32, walkers: u32, stores: u32) -> Window {
    let mut m = MachineConfig::default();
    m.timing.base_cpi = 0.5;
    m.tlb.l2_latency = 9;
    m.pwc.latency = 1;
    m.ooo.rob = rob;
    m.ooo.mshrs = mshrs;
    m.ooo.page_walkers = walkers;
    m.ooo.store_buffer = stores;
    Window::new(&m)
}

fn load(data: f64) -> AccessTiming {
    AccessTiming { instrs: 1, kind: Kind::Load, data, ..AccessTiming::default() }
}

/// Runs `accesses`, then the end of the run; returns the stats and the clock.
fn run(w: &mut Window, accesses: &[AccessTiming]) -> (CoreStats, f64) {
    let mut s = CoreStats::default();
    for a in accesses {
        w.access(a, &mut s);
    }
    w.serialize(&mut s, 0.0);
    (s, w.now())
}

#[test]
fn independent_misses_inside_the_window_cost_about_one_latency() {
    // Dispatched at 0.5, 1, 1.5, 2; back at 236.5 .. 238. The core waits
    // from 2 to 238: one miss latency, not four.
    let (s, now) = run(&mut window(224, 10, 2, 56), &[load(MISS); 4]);
    assert_eq!(now, 238.0);
    assert_eq!(s.cycles_data, MISS);
    assert_eq!(s.cycles_translation, 0.0);
}

#[test]
fn dependent_misses_cost_one_latency_each() {
    // Each load's address is the previous one's data: issued at 0.5,
    // 236.5, 472.5, 708.5, back at 944.5 = 0.5 + 4 x 236.
    let chase = AccessTiming { dependent: true, ..load(MISS) };
    let (s, now) = run(&mut window(224, 10, 2, 56), &[load(MISS), chase, chase, chase]);
    assert_eq!(now, 0.5 + 4.0 * MISS);
    assert_eq!(s.cycles_data, now - 2.0, "all but the 4 x 0.5 base cycles");
}

#[test]
fn a_full_reorder_buffer_stalls() {
    // One miss at instruction 1, then 20 hits. With 8 entries instruction
    // 9 cannot dispatch (at 4.5) before the miss is back at 236.5: 232
    // cycles of stall, then 12 more instructions.
    let mut accesses = vec![load(MISS)];
    accesses.extend([load(0.0); 20]);
    let (s, now) = run(&mut window(8, 10, 2, 56), &accesses);
    assert_eq!(s.cycles_data, 232.0);
    assert_eq!(now, 232.0 + 21.0 * 0.5);
    // With 224 entries the 20 hits run under the miss; only the end waits.
    let (s, now) = run(&mut window(224, 10, 2, 56), &accesses);
    assert_eq!(now, 236.5);
    assert_eq!(s.cycles_data, 236.5 - 10.5);
}

#[test]
fn misses_beyond_the_fill_buffers_wait_for_one_to_free() {
    // Two fill buffers, four misses: the third issues when the first is
    // back (236.5), the fourth when the second is (237): two rounds.
    let (s, now) = run(&mut window(224, 2, 2, 56), &[load(MISS); 4]);
    assert_eq!(now, 237.0 + MISS);
    assert_eq!(s.cycles_data, now - 2.0);
}

#[test]
fn walks_use_the_walkers_in_parallel_and_their_references_in_series() {
    // Three loads whose walks read references worth 200 cycles after the
    // L2 TLB (9) and the page-walk cache (1); two walkers. Walks run from
    // 9.5 and 10 to 210.5 and 211; the third waits for a walker (210.5 ->
    // 411.5). The core waits from 1.5 to 411.5, all of it translation; the
    // walk part leaves out the first load's L2 TLB lookup (1.5 to 9.5).
    let walk = AccessTiming { l2_tlb: true, walk: true, walk_refs: 200.0, ..load(0.0) };
    let (s, now) = run(&mut window(224, 10, 2, 56), &[walk; 3]);
    assert_eq!(now, 411.5);
    assert_eq!(s.cycles_translation, 410.0);
    assert_eq!(s.cycles_walk, 410.0 - 8.0);
    assert_eq!(s.cycles_data, 0.0);
    // One walker: the walks go one after another.
    let (_, now) = run(&mut window(224, 10, 1, 56), &[walk; 3]);
    assert_eq!(now, 9.5 + 3.0 * 201.0);
}

#[test]
fn a_walk_and_its_data_miss_are_serial_but_overlap_other_misses() {
    // A load that walks (10 cycles of walk refs after 9 + 1) then misses
    // (236), beside an independent miss: the core waits for the first.
    let walked = AccessTiming { l2_tlb: true, walk: true, walk_refs: 10.0, ..load(MISS) };
    let (s, now) = run(&mut window(224, 10, 2, 56), &[walked, load(MISS)]);
    assert_eq!(now, 0.5 + 9.0 + 1.0 + 10.0 + MISS);
    // The core waits from 1 to 256.5 for the first load, whose latency
    // (0.5 to 256.5) is 20 of translation (11 of them the walk) and 236 of
    // data: the 0.5 cycle dispatching hid comes out of its data.
    assert_eq!(s.cycles_translation, 20.0);
    assert_eq!(s.cycles_walk, 11.0);
    assert_eq!(s.cycles_data, MISS - 0.5);
}

#[test]
fn a_stall_after_the_walk_ended_still_charges_the_walk_its_share() {
    // A load walks (1 + 100 cycles, from 0.5 to 101.5) then misses (100,
    // back at 201.5); 300 hits follow in a window of 256. Instruction 257
    // would dispatch at 128.5, after the walk ended. Had the load
    // translated at once, it would have been back at 100.5 and the core
    // would not have stalled: the 73 cycles are its walk's. (Charging what
    // the load did during the stall would have put them in data.)
    let walked = AccessTiming { walk: true, walk_refs: 100.0, ..load(100.0) };
    let mut accesses = vec![walked];
    accesses.extend([load(0.0); 300]);
    let (s, now) = run(&mut window(256, 10, 2, 56), &accesses);
    assert_eq!(now, 201.5 + 44.0 * 0.5);
    assert_eq!((s.cycles_translation, s.cycles_walk, s.cycles_data), (73.0, 73.0, 0.0));
    // With a longer miss (300, back at 401.5) the stall is 273 cycles;
    // translating at once would bring the load back at 300.5, still after
    // 128.5: only the walk's 101 would vanish, and 172 are data.
    let mut accesses = vec![AccessTiming { data: 300.0, ..walked }];
    accesses.extend([load(0.0); 300]);
    let (s, _) = run(&mut window(256, 10, 2, 56), &accesses);
    assert_eq!((s.cycles_translation, s.cycles_walk, s.cycles_data), (101.0, 101.0, 172.0));
}

#[test]
fn a_walk_that_leaves_the_l1d_takes_a_fill_buffer_when_asked() {
    // One fill buffer. A data miss holds it from 0.5 to 236.5; then a
    // load whose walk (9 + 1 + 20) read a reference from below the L1D.
    let miss = load(MISS);
    let walked = AccessTiming { l2_tlb: true, walk: true, walk_refs: 20.0, walk_left_l1d: true, ..load(0.0) };
    // Off (the default): the walk ignores the fill buffer (1 + 9 + 1 + 20
    // = 31, inside the miss): the core waits for the miss alone.
    let (_, now) = run(&mut window(224, 1, 2, 56), &[miss, walked]);
    assert_eq!(now, 236.5);
    // On: the walk starts when the miss frees the buffer, at 236.5, and
    // ends 21 later; those 21 cycles are its walk, the rest the miss's data.
    let mut w = window(224, 1, 2, 56);
    w.walk_fill_buffers = true;
    let (s, now) = run(&mut w, &[miss, walked]);
    assert_eq!(now, 236.5 + 21.0);
    assert_eq!((s.cycles_translation, s.cycles_walk, s.cycles_data), (21.0, 21.0, 235.5));
    // A walk served by the L1D takes none.
    let mut w = window(224, 1, 2, 56);
    w.walk_fill_buffers = true;
    let (_, now) = run(&mut w, &[miss, AccessTiming { walk_left_l1d: false, ..walked }]);
    assert_eq!(now, 236.5);
    // And a data miss behind such a walk waits for it: the walk holds the
    // buffer from 9.5 to 30.5, the miss then takes 236.
    let mut w = window(224, 1, 2, 56);
    w.walk_fill_buffers = true;
    let (_, now) = run(&mut w, &[walked, miss]);
    assert_eq!(now, 30.5 + MISS);
}

#[test]
fn stores_retire_through_the_store_buffer() {
    let store = AccessTiming { kind: Kind::Store, ..load(MISS) };
    // Three store misses fit in 56 entries: only the end waits for them
    // to drain (the last line is back at 237.5).
    let (s, now) = run(&mut window(224, 10, 2, 56), &[store; 3]);
    assert_eq!(now, 237.5);
    assert_eq!(s.cycles_data, 236.0);
    // Two entries: the third store waits at 1.5 for the first to drain
    // (236.5), then its own line takes 236 more.
    let (s, now) = run(&mut window(224, 10, 2, 2), &[store; 3]);
    assert_eq!(now, 236.5 + MISS);
    assert_eq!(s.cycles_data, now - 1.5);
}

#[test]
fn an_instruction_fetch_miss_stalls_the_front_end() {
    let fetch = AccessTiming { kind: Kind::IFetch, ..load(MISS) };
    // A data miss, then a fetch miss: nothing dispatches behind the fetch,
    // and the data miss overlaps it.
    let (s, now) = run(&mut window(224, 10, 2, 56), &[load(MISS), fetch, load(0.0)]);
    assert_eq!(now, 1.0 + MISS + 0.5);
    assert_eq!(s.cycles_data, MISS);
}

#[test]
fn a_fault_serialises_and_adds_its_cycles() {
    let mut w = window(224, 10, 2, 56);
    let mut s = CoreStats::default();
    w.access(&load(MISS), &mut s);
    w.serialize(&mut s, 1000.0);
    assert_eq!(w.now(), 236.5 + 1000.0);
    assert_eq!(s.cycles_data, MISS);
    w.access(&load(0.0), &mut s);
    assert_eq!(w.now(), 1237.0);
}

#[test]
fn latencies_follow_the_model() {
    let mut m = MachineConfig::default();
    m.timing.mlp = 2.0;
    let t = Timing::new(&m);
    let l = t.latency;
    assert_eq!(t.data_cycles(0), 0.0);
    assert_eq!(t.data_cycles(MEMORY), (l[3] - l[0]) / 2.0);
    assert_eq!(t.walk_cycles(1), l[1]);
    assert_eq!(t.walk_entry, 0);
}

#[test]
fn through_the_engine_walks_hold_fill_buffers_only_when_asked_and_only_from_the_l1d() {
    use crate::engine::testutil::{run_toml, stat};
    // GUPS over 4 KiB pages with two fill buffers: every walk reads its
    // leaf from below the L1D, so a walk holding a buffer delays the data
    // misses behind it.
    let text = "[machine]\npreset = \"ampere-altra\"\nphys_mem = \"1GiB\"\n[machine.ooo]\nmshrs = 2\n\
                [workload]\nkind = \"gups\"\nfootprint = \"256MiB\"\naccesses = 20000\nwrite_fraction = 0.0\n\
                [run]\nskip_init = true\n";
    let run = |extra: &[&str]| run_toml(text, extra);
    let (off, on) = (run(&["machine.ooo.walk_fill_buffers=false"]), run(&["machine.ooo.walk_fill_buffers=true"]));
    assert!(stat(&on, "cycles") > stat(&off, "cycles"));
    for same in ["dtlb.l2.misses", "walk.mem_refs", "cache.l1d.misses", "instructions"] {
        assert_eq!(stat(&on, same), stat(&off, same), "{same}: the option changes time only");
    }
    // Walks that enter at the L2 take none of the L1D's buffers.
    let l2 = |on: &str| stat(&run(&[on, "machine.walker.cache_level=\"l2\""]), "cycles");
    assert_eq!(l2("machine.ooo.walk_fill_buffers=true"), l2("machine.ooo.walk_fill_buffers=false"));
}

#[test]
fn through_the_engine_the_cycles_thp_saves_on_gups_are_found_in_translation() {
    use crate::engine::testutil::{run_toml, stat};
    // GUPS over 512 MiB on the Colored Huge Pages paper's machine: on 4 KiB
    // pages every update walks (131,072 pages, 1,536 L2 TLB entries) and
    // its leaf comes from below the L2; on 2 MiB pages the 256 huge pages
    // fit the L2 TLB. Whatever THP saves, it saves in walks: at least half
    // of the change in cycles must show up in `cycles.translation`.
    let text = "[machine]\npreset = \"i7-10700\"\nphys_mem = \"2GiB\"\n\
                [workload]\nkind = \"gups\"\nfootprint = \"512MiB\"\naccesses = 40000\n\
                [run]\nskip_init = true\n";
    let base = run_toml(text, &["os.policy=\"base\""]);
    let thp = run_toml(text, &["os.policy=\"thp\""]);
    let saved = stat(&base, "cycles") - stat(&thp, "cycles");
    let saved_translation = stat(&base, "cycles.translation") - stat(&thp, "cycles.translation");
    assert!(saved > 0.0, "THP is faster on gups");
    assert!(saved_translation >= 0.5 * saved, "translation {saved_translation} of the {saved} cycles THP saved");
    // And the walk part moves with it: walks are what THP removed.
    assert!(stat(&base, "cycles.walk") - stat(&thp, "cycles.walk") >= 0.5 * saved_translation);
}

#[test]
fn the_walkers_own_latency_adds_to_every_walk_and_only_to_walks() {
    // The walk of `walks_use_the_walkers_in_parallel...` with a walker
    // latency of 30: the walk's fixed part is 1 (PWC) + 30, so a lone
    // walk runs 0.5 + 9 -> 9.5 + 31 + 200 = 240.5 and the core, which
    // dispatched it at 0.5, waits 240 cycles: 9 of L2 TLB, 231 of walk.
    let mut m = MachineConfig::default();
    m.timing.base_cpi = 0.5;
    m.tlb.l2_latency = 9;
    m.pwc.latency = 1;
    m.walker.latency = 30;
    let walk = AccessTiming { l2_tlb: true, walk: true, walk_refs: 200.0, ..load(0.0) };
    let (s, now) = run(&mut Window::new(&m), &[walk]);
    assert_eq!(now, 240.5);
    assert_eq!((s.cycles_translation, s.cycles_walk), (240.0, 231.0));
    // An L2 TLB hit does not walk: no walker latency.
    let (s, now) = run(&mut Window::new(&m), &[AccessTiming { walk: false, walk_refs: 0.0, ..walk }]);
    assert_eq!((now, s.cycles_translation, s.cycles_walk), (9.5, 9.0, 0.0));
    // The fixed model charges it once per walk, undivided, as the PWC
    // lookup: `walk_cycles_of` counts it in `cycles.walk`.
    m.timing.model = crate::config::TimingModel::Fixed;
    let t = Timing::new(&m);
    let stats = CoreStats { walks: 3, ..CoreStats::default() };
    assert_eq!(t.walk_cycles_of(&stats), 3.0 * 31.0);
}
