//! The DRAM's row buffers in whole runs, worked by hand, and against one
//! memory of before.
//!
//! The hand-worked machine has no caches (every reference is memory's), a
//! 2 GHz core and DIMMs of a 1 ns clock with CL 10, tRCD 12, tRP 14 and a
//! burst of 4: 20, 24, 28 and 8 core cycles. Four banks at bits 13 and 14,
//! rows from bit 15. `machine.memory.latency` 200 is a row conflict's, so
//! a row miss costs 200 - 28 = 172 and a row hit 172 - 24 = 148.
//!
//! The workload maps one 2 MiB huge page (THP), stores to it once (a fault
//! and its walk), and then the banks are closed again, so that the
//! measured loads, which hit the TLB and walk no more, meet known banks.
//! Offsets within the page are the physical address's low bits: offset 0
//! and 64 are row r of bank 0, 0x8000 row r + 1 of bank 0, 0x2000 a bank
//! of its own (bit 13).

use super::testutil::*;
use super::*;
use crate::hw::dram::Dram;
use crate::workload::Access;

const HAND: &[&str] = &[
    "machine.cache.enabled=false",
    "machine.freq_ghz=2.0",
    "machine.memory.latency=200",
    "machine.memory.dram={enabled=true, tck_ns=1.0, cl=10, rcd=12, rp=14, burst=4, wr_ns=5.0, \
     bank=[[13],[14]], row_shift=15}",
    "os.policy=\"thp\"",
    "run.quantum=1",
    "run.check_translations=true",
];
const MISS: f64 = 172.0;
const HIT: f64 = 148.0;
const CONFLICT: f64 = 200.0;

fn load(offset: u64) -> Access {
    Access::load(BASE.add(offset), 8, 1)
}

/// Runs the touch of the page, closes every bank (and, under the interval
/// model, starts a fresh window: nothing in flight, no bank held), then
/// runs `measured`. Returns the run and the statistics before `measured`.
fn measure(model: &str, measured: Vec<Access>) -> (Simulation, Stats) {
    let mut set = HAND.to_vec();
    set.push(model);
    let cfg = config(&set);
    // A store, so that the page is dirty from its fault: a later store
    // needs no dirty assist (whose page-table read would open a row).
    let touch = batch(vec![mmap(BASE, 2 << 20)], vec![Access::store(BASE, 8, 1)]);
    let script = Script { batches: vec![touch, batch(vec![], measured)] };
    let mut sim = Simulation::with_workloads(cfg, vec![Box::new(script)]).unwrap();
    sim.step(1).unwrap();
    assert_eq!(stat(&sim, "faults.huge"), 1.0, "the page is one huge page");
    sim.dram = Some(Box::new(Dram::new(&sim.cfg.machine.memory.dram)));
    if let Some(w) = sim.cores[0].window.as_mut() {
        *w = Window::new(&sim.cfg.machine);
    }
    let before = sim.stats();
    sim.run().unwrap();
    (sim, before)
}

fn delta(sim: &Simulation, before: &Stats, name: &str) -> f64 {
    stat(sim, name) - before.get(name).map_or(0.0, |s| s.as_f64())
}

#[test]
fn row_hits_misses_and_conflicts_cost_their_latencies_under_the_fixed_model() {
    // Bank 0 closed: a miss; the same row: a hit; another row of bank 0: a
    // conflict; bank 2 (closed): a miss, then a hit; row r of bank 0 again,
    // now that row r + 1 is open: a conflict.
    let offsets = [0, 64, 0x8000, 0x2000, 0x2040, 0];
    let (sim, before) = measure("machine.timing.model=\"fixed\"", offsets.map(load).to_vec());
    let d = |name: &str| delta(&sim, &before, name);
    assert_eq!([d("dram.reads.row_misses"), d("dram.reads.row_hits"), d("dram.reads.row_conflicts")], [2.0; 3]);
    assert_eq!((d("dram.writes"), d("walks")), (0.0, 0.0), "loads only, and the TLB holds the page");
    // Each load: (latency - L1D latency 4) / mlp 2.
    let expected = [MISS, HIT, CONFLICT, MISS, HIT, CONFLICT].iter().map(|l| (l - 4.0) / 2.0).sum::<f64>();
    assert_eq!(d("cycles.data"), expected);
    assert!(stat(&sim, "dram.bank0.requests") >= 4.0, "four of the six, and the touch's");
}

#[test]
fn a_second_miss_to_the_same_bank_waits_and_to_another_bank_overlaps() {
    let interval = "machine.timing.model=\"interval\"";
    // Bank 0's row r (a miss: the bank is held tRCD + burst = 32 cycles),
    // then bank 2 at the next instruction: no wait.
    let (sim, before) = measure(interval, vec![load(0), load(0x2000)]);
    assert_eq!(delta(&sim, &before, "dram.queue.waits"), 0.0);
    // Bank 0's row r, then its row r + 1 half a cycle later: the conflict
    // waits until the miss frees the bank, 31.5 cycles.
    let (sim, before) = measure(interval, vec![load(0), load(0x8000)]);
    assert_eq!(delta(&sim, &before, "dram.queue.waits"), 1.0);
    assert_eq!(delta(&sim, &before, "dram.queue.cycles"), 31.5);
    assert_eq!(stat(&sim, "dram.bank0.queue_cycles"), 31.5);
}

#[test]
fn a_write_opens_its_row_and_holds_its_bank_through_write_recovery() {
    // Without caches a store is a DRAM write. A store to row r + 1 of bank
    // 0 (a miss), then a load of row r: under the fixed model the load
    // finds the write's row open, a conflict (200, not the 172 of a miss).
    let fixed = "machine.timing.model=\"fixed\"";
    let (sim, before) = measure(fixed, vec![Access::store(BASE.add(0x8000), 8, 1), load(0)]);
    assert_eq!(delta(&sim, &before, "dram.writes.row_misses"), 1.0);
    assert_eq!(delta(&sim, &before, "dram.reads.row_conflicts"), 1.0);
    // The store's own data cycles are its read latency's, as for one memory.
    assert_eq!(delta(&sim, &before, "cycles.data"), (MISS - 4.0) / 2.0 + (CONFLICT - 4.0) / 2.0);
    // Under the interval model the write holds bank 0 for tRCD + burst +
    // write recovery (24 + 8 + 10): the load, half a cycle later, waits 41.5.
    let (sim, before) =
        measure("machine.timing.model=\"interval\"", vec![Access::store(BASE.add(0x8000), 8, 1), load(0)]);
    assert_eq!(delta(&sim, &before, "dram.queue.cycles"), 41.5);
}

/// A gups run with caches (a 1 MiB LLC, so that lines are written back).
fn gups(extra: &[&str]) -> Simulation {
    let mut set = vec!["workload.footprint=\"8MiB\"", "workload.accesses=60000", "machine.cache.llc.size=\"1MiB\""];
    set.extend_from_slice(extra);
    let mut sim = Simulation::new(config(&set)).unwrap();
    sim.run().unwrap();
    sim
}

/// Every statistic but the DRAM's own, as text.
fn without_dram(sim: &Simulation) -> Vec<(String, String)> {
    sim.stats().into_iter().filter(|(k, _)| !k.contains("dram.")).map(|(k, v)| (k, format!("{v:?}"))).collect()
}

#[test]
fn a_dram_whose_outcomes_all_cost_the_memory_latency_is_one_memory_bit_for_bit() {
    // tRP = tRCD = burst = write recovery = 0: every outcome costs
    // `machine.memory.latency` and holds no bank. Every statistic of before
    // must come out, to the last bit, under both models, with and without
    // caches and prefetchers.
    let flat = "machine.memory.dram={enabled=true, cl=1, rcd=0, rp=0, burst=0, wr_ns=0.0}";
    for model in ["machine.timing.model=\"fixed\"", "machine.timing.model=\"interval\""] {
        for caches in ["machine.cache.enabled=true", "machine.cache.enabled=false"] {
            for prefetch in ["machine.prefetch.enabled=false", "machine.prefetch.enabled=true"] {
                let (one, dram) = (gups(&[model, caches, prefetch]), gups(&[model, caches, prefetch, flat]));
                let (a, b) = (without_dram(&one), without_dram(&dram));
                let diff = a.iter().zip(&b).find(|(x, y)| x != y);
                assert_eq!((a.len(), diff), (b.len(), None), "{model} {caches} {prefetch}");
                assert!(stat(&dram, "dram.reads") > 0.0);
            }
        }
    }
}

#[test]
fn every_writeback_and_every_memory_read_is_a_dram_request() {
    let sim = gups(&["machine.memory.dram.enabled=true", "workload.write_fraction=1.0"]);
    assert!(stat(&sim, "cache.llc.writebacks") > 0.0);
    assert_eq!(stat(&sim, "dram.writes"), stat(&sim, "cache.llc.writebacks"));
    assert_eq!(stat(&sim, "dram.reads"), stat(&sim, "mem.accesses"));
    let rate = stat(&sim, "dram.row_hit_rate");
    assert!(rate > 0.0 && rate < 1.0, "{rate}");
    let banks: f64 = (0..16).map(|b| stat(&sim, &format!("dram.bank{b}.requests"))).sum();
    assert_eq!(banks, stat(&sim, "dram.reads") + stat(&sim, "dram.writes"));
}

#[test]
fn a_bad_dram_table_is_a_configuration_error_naming_the_key() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let err = |set: &str| crate::config::parse_config(text, "t.toml", &[set.to_string()]).unwrap_err().to_string();
    let e = err("machine.memory.dram={enabled=true, bank=[[13, 99]]}");
    assert!(e.contains("machine.memory.dram.bank[0]"), "{e}");
    let e = err("machine.memory.dram={enabled=true, cl=200}");
    assert!(e.contains("machine.memory.latency") && e.contains("tRP + tRCD + tCL"), "{e}");
    let tiers = "machine.memory={dram={enabled=true}, tiers=[{name=\"a\", size=\"256MiB\", read_latency=240, \
                 write_latency=240}]}";
    assert!(err(tiers).contains("machine.memory.dram.enabled"));
}
