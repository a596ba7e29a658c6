//! Memory tiers in whole runs: placement by node, each reference charged
//! its tier's latency, writebacks their tier's write cost, the statistics.
//! The machine: 256 MiB as a 4 MiB fast tier and a 252 MiB slow one.

use super::testutil::*;
use super::*;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::Order;
use crate::workload::Access;

/// `machine.memory.tiers` of a 4 MiB `dram` tier and a 252 MiB `nvm` one.
fn tiers(dram: (u32, u32), nvm: (u32, u32)) -> String {
    format!(
        "machine.memory.tiers=[{{name=\"dram\", size=\"4MiB\", read_latency={}, write_latency={}}}, \
         {{name=\"nvm\", size=\"252MiB\", read_latency={}, write_latency={}}}]",
        dram.0, dram.1, nvm.0, nvm.1
    )
}

/// A gups run over 8 MiB (both tiers) with `extra` settings; with
/// `untimed`, the tiers place memory but the run's stages are those of a
/// machine without tiers.
fn gups_with(extra: &[&str], untimed: bool) -> Simulation {
    let mut set = vec!["workload.footprint=\"8MiB\"", "workload.accesses=100000", "machine.cache.llc.size=\"1MiB\""];
    set.extend_from_slice(extra);
    let mut sim = Simulation::new(config(&set)).unwrap();
    if untimed {
        sim.timing.tiers = None;
    }
    sim.run().unwrap();
    sim
}

fn gups(extra: &[&str]) -> Simulation {
    gups_with(extra, false)
}

/// Every statistic but the tiers' own.
fn without_tiers(sim: &Simulation) -> Vec<(String, String)> {
    let tier = |k: &str| k.contains("tier.");
    sim.stats().into_iter().filter(|(k, _)| !tier(k)).map(|(k, v)| (k, format!("{v:?}"))).collect()
}

/// The first statistic two runs disagree on (not the whole list: a
/// failure stays readable).
fn first_difference(a: &Simulation, b: &Simulation) -> Option<(String, String, String)> {
    let (a, b) = (without_tiers(a), without_tiers(b));
    if a.len() != b.len() {
        return Some(("count".into(), a.len().to_string(), b.len().to_string()));
    }
    a.into_iter().zip(b).find(|(x, y)| x != y).map(|(x, y)| (x.0, x.1, y.1))
}

const MODELS: [&str; 2] = ["machine.timing.model=\"fixed\"", "machine.timing.model=\"interval\""];
const CACHES: [&str; 2] = ["machine.cache.enabled=true", "machine.cache.enabled=false"];

#[test]
fn one_tier_of_todays_latency_gives_todays_statistics_bit_for_bit() {
    let one = "machine.memory.tiers=[{name=\"dram\", size=\"256MiB\", read_latency=240, write_latency=240}]";
    for model in MODELS {
        for caches in CACHES {
            let (today, tiered) = (gups(&[model, caches]), gups(&[model, caches, one]));
            assert_eq!(first_difference(&today, &tiered), None, "{model} {caches}");
            let no_caches_writes = if caches.ends_with("false") { stat(&tiered, "tier.dram.writes") } else { 0.0 };
            assert_eq!(stat(&tiered, "tier.dram.reads"), stat(&tiered, "mem.accesses") - no_caches_writes);
        }
    }
}

#[test]
fn two_tiers_of_equal_latency_cost_what_one_memory_costs_bit_for_bit() {
    // Two nodes place pages otherwise than one (a node is used up, its
    // fallbacks included, before the next), so the comparison is with the
    // same placement run through the stages of a machine without tiers.
    let same = tiers((240, 240), (240, 240));
    for model in MODELS {
        for caches in CACHES {
            let (untimed, tiered) = (gups_with(&[model, caches, &same], true), gups(&[model, caches, &same]));
            assert_eq!(first_difference(&untimed, &tiered), None, "{model} {caches}");
            // Both tiers were used, and every memory reference was counted.
            let (dram, nvm) = (stat(&tiered, "mem.tier.dram.pages"), stat(&tiered, "mem.tier.nvm.pages"));
            assert!(dram == 1024.0 && nvm > 0.0, "dram {dram} nvm {nvm}");
            assert!(stat(&tiered, "tier.nvm.reads") > 0.0 && stat(&tiered, "tier.dram.reads") > 0.0);
            let reads = stat(&tiered, "tier.dram.reads") + stat(&tiered, "tier.nvm.reads");
            let writes = stat(&tiered, "tier.dram.writes") + stat(&tiered, "tier.nvm.writes");
            assert!(tiered.stats().contains_key("core0.tier.nvm.accesses"));
            if caches.ends_with("true") {
                assert_eq!(reads, stat(&tiered, "mem.accesses"), "gups fetches no instructions");
                assert_eq!(writes, stat(&tiered, "cache.llc.writebacks"));
            } else {
                assert_eq!(reads + writes, stat(&tiered, "mem.accesses"));
                assert_eq!(writes, stat(&tiered, "stores"));
            }
        }
    }
}

/// A machine without caches whose fast tier is taken whole before the
/// run: the process's pages and page tables land in the slow tier, but for
/// its top-level table, allocated when it was spawned.
fn all_in_nvm(extra: &[&str], accesses: Vec<Access>) -> Simulation {
    let mut set = vec!["machine.cache.enabled=false", "machine.timing.model=\"fixed\"", "run.check_translations=true"];
    set.extend_from_slice(extra);
    let cfg = config(&set);
    let script = Script { batches: vec![batch(vec![mmap(BASE, 1 << 20)], accesses)] };
    let mut sim = Simulation::with_workloads(cfg, vec![Box::new(script)]).unwrap();
    let mem = &mut sim.kernel.mem;
    while mem.alloc(Order::new(0), Migratetype::Unmovable, FrameOwner::Kernel).is_some_and(|p| p.raw() < 1023) {}
    sim.run().unwrap();
    sim
}

#[test]
fn a_slow_tier_charges_its_read_and_write_latency_by_hand() {
    // Without caches every reference is memory's. 4 loads and 2 stores
    // to 2 pages: each page's first access walks the 4 levels; the
    // second page's walk finds the upper levels in the PWC.
    let mut accesses: Vec<Access> = (0..4).map(|i| Access::load(BASE.add(i * 8), 8, 1)).collect();
    accesses.extend(stores(BASE.add(4096), 2));
    let nvm = tiers((100, 100), (300, 700));
    let sim = all_in_nvm(&[&nvm], accesses);
    let walk_refs = stat(&sim, "walk.mem_refs");
    // Only walk references read the fast tier: the top-level table's.
    let pgd_refs = stat(&sim, "tier.dram.reads");
    assert!(pgd_refs >= 1.0 && pgd_refs < walk_refs, "{pgd_refs} of {walk_refs}");
    assert_eq!(stat(&sim, "tier.dram.writes"), 0.0);
    assert_eq!(stat(&sim, "tier.nvm.reads"), 4.0 + walk_refs - pgd_refs);
    assert_eq!(stat(&sim, "tier.nvm.writes"), 2.0);
    // Data: (latency - L1D latency) / mlp each; walks: latency / walk_mlp.
    let t = &sim.timing;
    let (l1, mlp, walk_mlp) = (t.latency[0], t.mlp, t.walk_mlp);
    let data = 4.0 * (300.0 - l1) / mlp + 2.0 * (700.0 - l1) / mlp;
    assert!((stat(&sim, "cycles.data") - data).abs() < 1e-9, "{} vs {data}", stat(&sim, "cycles.data"));
    let walks = stat(&sim, "walks");
    let walk = walks * t.walk_latency + pgd_refs * 100.0 / walk_mlp + (walk_refs - pgd_refs) * 300.0 / walk_mlp;
    assert!((stat(&sim, "cycles.walk") - walk).abs() < 1e-9, "{} vs {walk}", stat(&sim, "cycles.walk"));
    assert_eq!(stat(&sim, "mem.tier.dram.pages"), 1024.0, "taken before the run");
}

#[test]
fn slow_writebacks_cost_the_write_latency_beyond_a_read() {
    // Under the fixed model a writeback to the slow tier costs
    // (write - read) / mlp; reads cost the same in both runs.
    let fixed = "machine.timing.model=\"fixed\"";
    let even = gups(&[fixed, &tiers((240, 240), (240, 240))]);
    let slow_writes = gups(&[fixed, &tiers((240, 240), (240, 740))]);
    let writebacks = stat(&slow_writes, "tier.nvm.writes");
    assert!(writebacks > 0.0);
    assert_eq!(writebacks, stat(&even, "tier.nvm.writes"));
    let extra = writebacks * 500.0 / slow_writes.timing.mlp;
    let delta = stat(&slow_writes, "cycles.data") - stat(&even, "cycles.data");
    assert!((delta - extra).abs() < 1e-6 * extra, "{delta} vs {extra}");
    // The interval model charges them too.
    let interval = "machine.timing.model=\"interval\"";
    let even = gups(&[interval, &tiers((240, 240), (240, 240))]);
    let slow_writes = gups(&[interval, &tiers((240, 240), (240, 740))]);
    assert!(stat(&slow_writes, "cycles") > stat(&even, "cycles"));
}

#[test]
fn a_bad_tier_list_is_a_configuration_error_naming_the_key() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let bad = tiers((240, 240), (240, 240)).replace("252MiB", "100MiB");
    let e = crate::config::parse_config(text, "t.toml", &[bad]).unwrap_err().to_string();
    assert!(e.contains("machine.memory.tiers") && e.contains("256MiB"), "{e}");
}
