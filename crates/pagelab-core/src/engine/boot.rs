//! What the kernels boot with: the native (or first guest's) kernel, the
//! hypervisor's, and the footprint a VM's workloads declare (which
//! `os.fragmentation.fmfi` scales to).

use crate::config::SimConfig;
use crate::error::Result;
use crate::os::{Boot, HostView, Kernel};

/// Boots the OS side of `cfg`: memory, the chain of systems, fragmentation.
pub(super) fn boot_kernel(cfg: &SimConfig) -> Result<Kernel> {
    let m = &cfg.machine;
    // A guest kernel (the first VM's) runs over guest-physical memory.
    let guest = &cfg.guests()[0];
    let mem = if cfg.virt.enabled { guest.guest_mem } else { m.phys_mem };
    let boot = Boot {
        frames: mem.bytes() >> 12,
        max_order: m.max_order,
        paging_levels: m.paging_levels,
        colors: cfg.color_map_of(guest.os, &guest.os_key)?,
        costs: guest.os.fault_cost.clone(),
        footprint: vm_footprint(cfg, 0, &guest.os_key)?,
        // The tiers are the host's: a guest sees one node.
        tiers: if cfg.virt.enabled { Vec::new() } else { m.memory.tiers.clone() },
        memory_latency: m.memory.latency,
        host_view: None,
    };
    crate::systems::boot(guest.os, boot, m.freq_ghz, cfg.run.seed)
}

/// The bytes VM `vm`'s workloads declare (`workload.footprint`, summed;
/// the native run is VM 0), which `os.fragmentation.fmfi` scales to. A
/// trace declares none, so with an FMFI target it is an error.
pub(crate) fn vm_footprint(cfg: &SimConfig, vm: usize, os_key: &str) -> Result<u64> {
    let vm_of = cfg.vm_of_workloads();
    let mine = cfg.workload_list().into_iter().zip(vm_of).filter(|&(_, v)| v == vm).map(|(w, _)| w);
    let mut bytes = 0;
    for w in mine {
        if w.kind == crate::workload::WorkloadKind::Trace && cfg.os_of_vm(vm).fragmentation.fmfi > 0.0 {
            let msg = "is scaled to the workloads' footprint, which a trace does not declare";
            return Err(crate::Error::config(format!("{os_key}.fragmentation.fmfi"), msg));
        }
        bytes += w.footprint.bytes();
    }
    Ok(bytes)
}

/// What the hypervisor's kernel boots with: all of machine memory, the
/// EPT's levels, the host's fault costs and the host's own page colors
/// (`virt.host.coloring.bits`, never the guest's `os` table: COPLACE colors
/// guest and host separately).
pub(crate) fn host_boot(cfg: &SimConfig) -> Result<Boot> {
    let m = &cfg.machine;
    Ok(Boot {
        frames: m.phys_mem.bytes() >> 12,
        max_order: m.max_order,
        paging_levels: cfg.virt.ept_levels,
        colors: cfg.color_map_of(&cfg.virt.host, "virt.host")?,
        costs: cfg.virt.host.fault_cost.clone(),
        footprint: cfg.guests().iter().map(|g| g.guest_mem.bytes()).sum(),
        tiers: m.memory.tiers.clone(),
        memory_latency: m.memory.latency,
        host_view: Some(host_view(cfg)?),
    })
}

/// The real caches and each guest's color map, for a host placement that
/// keeps the guests' colors.
fn host_view(cfg: &SimConfig) -> Result<HostView> {
    let c = &cfg.machine.cache;
    let guest_colors = cfg.guests().iter().map(|g| cfg.color_map_of(g.os, &g.os_key)).collect::<Result<_>>()?;
    Ok(HostView { llc: c.llc.geometry(), l2: c.l2.geometry(), llc_inclusive: c.llc.inclusive, guest_colors })
}
