//! Migration between tiers, worked by hand: a 4 MiB `dram` tier (100
//! cycles) and a 252 MiB `nvm` one (300 to read, 700 to write), no caches,
//! the fixed model, every TLB hit checked against the page tables.

use super::testutil::*;
use super::*;
use crate::os::Migration;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Gfn, Order, PageSize, Pfn};
use crate::workload::Access;

const TIERS: &str = "machine.memory.tiers=[{name=\"dram\", size=\"4MiB\", read_latency=100, write_latency=100}, \
                     {name=\"nvm\", size=\"252MiB\", read_latency=300, write_latency=700}]";

fn loads(n: u64) -> Vec<Access> {
    (0..n).map(|i| Access::load(BASE.add(i * 8), 8, 1)).collect()
}

/// A run whose first batch (`first`, one quantum) places the page at BASE
/// in the slow tier (the fast one is taken whole before it), stopped after
/// that batch; `then` is the second batch.
fn placed_in_nvm(extra: &[&str], first: Vec<Access>, then: Vec<Access>) -> Simulation {
    let quantum = format!("run.quantum={}", first.len());
    let mut set = vec![TIERS, "machine.cache.enabled=false", "machine.timing.model=\"fixed\""];
    set.extend_from_slice(&["run.check_translations=true", &quantum]);
    set.extend_from_slice(extra);
    let n = first.len() as u64;
    let script = Script { batches: vec![batch(vec![mmap(BASE, 4 << 20)], first), batch(vec![], then)] };
    let mut sim = Simulation::with_workloads(config(&set), vec![Box::new(script)]).unwrap();
    let mem = &mut sim.kernel.mem;
    while mem.alloc(Order::new(0), Migratetype::Unmovable, FrameOwner::Kernel).is_some_and(|p| p.raw() < 1023) {}
    sim.step(n).unwrap();
    sim
}

#[test]
fn a_4k_page_promoted_to_the_fast_tier_is_read_at_its_latency() {
    let mut sim = placed_in_nvm(&[], loads(4), loads(4));
    let old = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().frame;
    assert_eq!(sim.kernel.mem.node_of(old), 1, "placed in nvm");
    let before = sim.stats();
    // One fast frame freed, then the page migrated there.
    sim.kernel.mem.free(Pfn::new(1000), Order::new(0));
    let moved = sim.migrate_page(1, BASE, 0).unwrap();
    let Migration::Moved { from, to, size, cycles } = moved else { panic!("{moved:?}") };
    assert_eq!((from, to, size), (old, Pfn::new(1000), PageSize::Size4K));
    // Copy: 1000 x (300 + 100) / (2 x 240) = 833.33..., plus a shootdown.
    let copy = 1000.0 * 400.0 / 480.0;
    assert!((cycles - (copy + 6000.0)).abs() < 1e-9, "{cycles}");
    assert_eq!(sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().frame, to, "the PTE points to the new frame");
    assert!(sim.kernel.mem.is_free(old), "the old frame is free");
    assert_eq!(sim.migrate_page(1, BASE, 0).unwrap(), Migration::AlreadyThere);
    sim.run().unwrap(); // with check_translations: no stale TLB entry
    let after = sim.stats();
    let delta = |k: &str| after[k].as_f64() - before[k].as_f64();
    // The 4 later loads read dram; the walk after the shootdown reads the
    // page tables, in nvm but for the top level.
    assert_eq!(delta("tier.dram.reads"), 4.0 + delta("walk.mem_refs") - delta("tier.nvm.reads"));
    assert!(delta("walks") >= 1.0 && delta("tier.nvm.reads") >= 1.0);
    let t = &sim.timing;
    assert!((delta("cycles.data") - 4.0 * (100.0 - t.latency[0]) / t.mlp).abs() < 1e-9);
    // The counters add up.
    assert_eq!(stat(&sim, "os.tier.migrations.4k"), 1.0);
    assert_eq!((stat(&sim, "os.tier.migrations.2m"), stat(&sim, "os.tier.no_memory")), (0.0, 0.0));
    assert!((stat(&sim, "os.tier.migration_cycles") - cycles).abs() < 1e-9);
    assert_eq!(delta("os.shootdowns"), 1.0);
    assert_eq!(delta("os.pages_copied"), 1.0);
    // Frame 1000 was in use before (the fill), freed, and in use again.
    assert_eq!(delta("mem.tier.dram.pages"), 0.0);
    assert_eq!(delta("mem.tier.nvm.pages"), -1.0);
}

#[test]
fn a_2m_page_moves_whole_and_a_full_tier_refuses() {
    let thp = ["os.policy=\"thp\"", "os.thp.khugepaged=false"];
    let mut sim = placed_in_nvm(&thp, loads(1), loads(2));
    let m = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap();
    assert_eq!((m.size, sim.kernel.mem.node_of(m.frame)), (PageSize::Size2M, 1));
    assert_eq!(sim.migrate_page(1, BASE, 0).unwrap(), Migration::NoMemory, "dram is full");
    for pfn in 512..1024 {
        sim.kernel.mem.free(Pfn::new(pfn), Order::new(0));
    }
    let moved = sim.migrate_page(1, BASE.add(5 * 4096), 0).unwrap();
    let Migration::Moved { from, to, size, cycles } = moved else { panic!("{moved:?}") };
    assert_eq!((from, to, size), (m.frame, Pfn::new(512), PageSize::Size2M));
    assert!((cycles - (512.0 * 1000.0 * 400.0 / 480.0 + 6000.0)).abs() < 1e-6);
    assert!(sim.kernel.mem.free_block_containing(from).is_some(), "the old 2 MiB block is free");
    assert_eq!(sim.kernel.mem.owner(Pfn::new(512 + 5)), FrameOwner::User { asid: 1, vpn: BASE.add(5 * 4096).vpn() });
    sim.run().unwrap();
    assert_eq!(stat(&sim, "os.tier.migrations.2m"), 1.0);
    assert_eq!(stat(&sim, "os.tier.no_memory"), 1.0);
    // 3 loads in all, besides the walks' references.
    assert_eq!(stat(&sim, "tier.dram.reads") + stat(&sim, "tier.nvm.reads") - stat(&sim, "walk.mem_refs"), 3.0);
    assert!(sim.migrate_page(1, BASE, 2).unwrap_err().to_string().contains("machine.memory.tiers"));
    assert_eq!(sim.migrate_page(1, BASE.add(8 << 20), 1).unwrap(), Migration::Refused, "not mapped");
}

#[test]
fn a_guest_frame_demoted_by_the_host_is_read_at_the_slow_latency_after_an_invept() {
    let mut set = vec![TIERS, "machine.cache.enabled=false", "machine.timing.model=\"fixed\""];
    set.extend_from_slice(&["virt.enabled=true", "virt.guest_mem=\"64MiB\"", "run.check_translations=true"]);
    set.extend_from_slice(&["run.quantum=4", "os.thp.khugepaged=false", "virt.host.thp.khugepaged=false"]);
    let script = Script { batches: vec![batch(vec![mmap(BASE, 4 << 20)], loads(4)), batch(vec![], loads(4))] };
    let mut sim = Simulation::with_workloads(config(&set), vec![Box::new(script)]).unwrap();
    sim.step(4).unwrap();
    let m = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap();
    let gfn = Gfn::of_guest_kernel(m.frame);
    let virt = sim.virt.as_deref().unwrap();
    let (host, size) = virt.hv.backing_of(0, gfn).unwrap();
    assert_eq!((virt.hv.host.mem.node_of(host), size), (0, PageSize::Size4K), "backed in dram first");
    let (before, invepts) = (sim.stats(), stat(&sim, "virt.invepts"));
    let moved = sim.migrate_guest_frame(0, gfn, 1).unwrap();
    let Migration::Moved { to, .. } = moved else { panic!("{moved:?}") };
    let virt = sim.virt.as_deref().unwrap();
    assert_eq!(virt.hv.backing_of(0, gfn), Some((to, PageSize::Size4K)), "the EPT points to the new frame");
    assert_eq!(virt.hv.host.mem.node_of(to), 1);
    assert!(virt.hv.host.mem.is_free(host));
    assert_eq!(stat(&sim, "virt.invepts"), invepts + 1.0);
    sim.run().unwrap(); // with check_translations: no stale combined entry
    let after = sim.stats();
    let delta = |k: &str| after[k].as_f64() - before[k].as_f64();
    // The 4 loads now read nvm: (300 - L1) / mlp each, beyond today's dram.
    let t = &sim.timing;
    assert!((delta("cycles.data") - 4.0 * (300.0 - t.latency[0]) / t.mlp).abs() < 1e-9, "{}", delta("cycles.data"));
    assert_eq!(stat(&sim, "host.os.tier.migrations.4k"), 1.0);
}
