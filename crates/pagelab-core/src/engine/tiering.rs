//! Migration between memory tiers from the engine's side: the kernel's
//! mechanism (`os::tiering`) with its shootdowns delivered at once, for a
//! native process's page or a VM's guest frame (the host's EPT mapping).
//! A policy that runs as a daemon calls `Kernel::migrate_page` itself; the
//! round's end then delivers its shootdowns as it does every daemon's.

use super::Simulation;
use crate::error::{Error, Result};
use crate::os::Migration;
use crate::units::{Asid, Gfn, VirtAddr};

impl Simulation {
    /// Moves the page mapping `vaddr` in native process `asid` to tier
    /// `node`; its shootdown reaches the process's cores now (each paying
    /// the IPI, as for a daemon's).
    pub fn migrate_page(&mut self, asid: Asid, vaddr: VirtAddr, node: usize) -> Result<Migration> {
        if self.virt.is_some() {
            return Err(Error::config("machine.memory.tiers", "a virtualized run migrates guest frames (the host's)"));
        }
        let outcome = self.kernel.migrate_page(asid, vaddr, node)?;
        self.deliver_shootdowns(true);
        Ok(outcome)
    }

    /// Moves the host page backing guest frame `gfn` of VM `vm` to tier
    /// `node` (the host's 4 KiB or 2 MiB EPT mapping of it); the change
    /// reaches the VM's cores now, as an INVEPT.
    pub fn migrate_guest_frame(&mut self, vm: usize, gfn: Gfn, node: usize) -> Result<Migration> {
        let Some(virt) = self.virt.as_deref_mut() else {
            return Err(Error::config("virt.enabled", "a native run migrates pages of processes"));
        };
        let host_asid = virt.hv.host_asid(vm);
        let outcome = virt.hv.host.migrate_page(host_asid, gfn.addr().as_host_virt(), node)?;
        self.deliver_ept_changes();
        Ok(outcome)
    }

    /// The host's changes to the VMs' EPTs as INVEPTs to each VM's cores.
    pub(super) fn deliver_ept_changes(&mut self) {
        let Some(virt) = self.virt.as_deref_mut() else { return };
        let changes = virt.hv.drain_ept_changes();
        for change in changes {
            let host_asid = virt.hv.host_asid(change.vm);
            let vm_cores = self.cores.iter_mut().zip(virt.cores.iter_mut()).filter(|(_, n)| n.vm == change.vm);
            for (core, nested) in vm_cores {
                nested.invept(&mut core.mmu, host_asid, &virt.guest_asids[change.vm], change);
                core.stats.cycles_virt += virt.hv.costs.invept;
                if let Some(w) = core.window.as_mut() {
                    // An INVEPT, like a shootdown, serialises the core.
                    w.serialize(&mut core.stats, virt.hv.costs.invept);
                }
            }
        }
    }
}
