//! Helpers of the scenario tests (the engine's and the systems'): a small
//! machine, a scripted workload, mapping events and statistics by name.

use super::*;
use crate::config::parse_config;
use crate::units::VirtAddr;
use crate::workload::{Access, Workload};

/// A workload that replays a fixed list of batches.
pub(crate) struct Script {
    pub(crate) batches: Vec<Batch>,
}

impl Workload for Script {
    fn name(&self) -> &str {
        "script"
    }
    fn next_batch(&mut self, batch: &mut Batch, _max: usize) -> bool {
        if self.batches.is_empty() {
            return false;
        }
        *batch = self.batches.remove(0);
        !self.batches.is_empty()
    }
    fn footprint(&self) -> u64 {
        0
    }
}

pub(crate) const BASE: VirtAddr = VirtAddr::new(0x7f00_0000_0000);

pub(crate) fn config(extra: &[&str]) -> SimConfig {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n";
    let overrides: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    parse_config(text, "test.toml", &overrides).unwrap()
}

pub(crate) fn mmap(start: VirtAddr, len: u64) -> (u32, MapEvent) {
    (0, MapEvent::Mmap { start, len, writable: true, name: "heap".into() })
}

pub(crate) fn stores(start: VirtAddr, pages: u64) -> Vec<Access> {
    (0..pages).map(|i| Access::store(start.add(i * 4096), 8, 1)).collect()
}

pub(crate) fn batch(events: Vec<(u32, MapEvent)>, accesses: Vec<Access>) -> Batch {
    Batch { accesses, events, trailing_instrs: 0 }
}

pub(crate) fn simulate(cfg: SimConfig, batches: Vec<Batch>) -> Result<Simulation> {
    let mut sim = Simulation::with_workloads(cfg, vec![Box::new(Script { batches })])?;
    sim.run()?;
    Ok(sim)
}

/// Runs a whole configuration file's text (with `--set` overrides) to its end.
pub(crate) fn run_toml(text: &str, overrides: &[&str]) -> Simulation {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let mut sim = Simulation::new(parse_config(text, "test.toml", &overrides).unwrap()).unwrap();
    sim.run().unwrap();
    sim
}

pub(crate) fn stat(sim: &Simulation, name: &str) -> f64 {
    sim.stats().get(name).unwrap_or_else(|| panic!("no statistic {name}")).as_f64()
}

pub(crate) fn req(vaddr: VirtAddr) -> mmu::Request {
    mmu::Request { asid: 1, vaddr, write: false, instr: false }
}

pub(crate) fn fresh_mmu(cfg: &SimConfig) -> Mmu {
    Mmu {
        tlb: Tlb::new(&cfg.machine.tlb, 1),
        pwc: Pwc::new(&cfg.machine.pwc, 4, 1),
        l2_tlb_latency: 9.0,
        walk_latency: 1.0,
        check: true,
    }
}

/// A virtualized run's hypervisor side (tests of a system in a guest).
pub(crate) fn virt_run(sim: &Simulation) -> &walk2d::VirtRun {
    sim.virt.as_deref().expect("a virtualized run")
}

/// The same, to change.
pub(crate) fn virt_run_mut(sim: &mut Simulation) -> &mut walk2d::VirtRun {
    sim.virt.as_deref_mut().expect("a virtualized run")
}

/// The first guest's kernel and the hypervisor side, both to change (a
/// test that builds a `walk2d::Walker2d` by hand).
pub(crate) fn guest_and_virt(sim: &mut Simulation) -> (&mut Kernel, &mut walk2d::VirtRun) {
    (&mut sim.kernel, sim.virt.as_deref_mut().expect("a virtualized run"))
}
