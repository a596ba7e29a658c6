//! The hypervisor's boot: the host kernel with its chain of systems, the
//! VMs' processes, the host's policies (the registry's `host` lines).

use super::config::VirtConfig;
use super::hypervisor::{HostBuild, HostCounters, Hypervisor, Vm, GUEST_MEM_VMA};
use crate::error::Result;
use crate::os::{Boot, ProcessSpec};
use crate::units::VirtAddr;

impl Hypervisor {
    /// Boots the host (`virt.host` over `boot`'s memory, `boot.paging_levels`
    /// being the EPT's depth) and starts one process per VM, of
    /// `guest_mems[i]` bytes of guest memory each, mapped and nothing
    /// backed. Their sum may exceed host memory (overcommit): the run stops
    /// when a backing finds no free host frame.
    pub fn boot(cfg: &VirtConfig, guest_mems: &[u64], boot: Boot, freq_ghz: f64, seed: u64) -> Result<Hypervisor> {
        let mut host = crate::systems::boot(&cfg.host, boot, freq_ghz, seed)?;
        let chain = host.chain();
        let pins_huge_pages = crate::systems::chain_has(&chain, |c| c.pins_huge_pages);
        let policies = crate::systems::host_policies(&cfg.host, &HostBuild { pins_huge_pages, freq_ghz });
        let host_perforated =
            crate::systems::chain_has(&chain, |c| c.ept_leaf_ext) || policies.iter().any(|p| p.makes_ept_leaf_ext());
        let mut vms = Vec::new();
        for (i, &bytes) in guest_mems.iter().enumerate() {
            let host_asid = host.spawn(ProcessSpec::default())?;
            host.mmap(host_asid, VirtAddr::new(0), bytes, true, GUEST_MEM_VMA)?;
            vms.push(Vm { vpid: i as u16 + 1, host_asid, guest_frames: bytes >> 12 });
        }
        Ok(Hypervisor {
            host,
            vms,
            costs: cfg.costs.clone(),
            backing: cfg.backing,
            counters: HostCounters::default(),
            write_protects: policies.iter().any(|p| p.write_protects()),
            policies,
            balloons: Default::default(),
            host_perforated,
            deferred: Vec::new(),
            pending_exits: Vec::new(),
            freq_ghz,
        })
    }
}
