//! The hypervisor's services to the VMs' memory as the engine offers them
//! to a policy or a test: each is the mechanism in `virt/` with the host
//! changes it makes delivered at once as INVEPTs to the VM's cores (each
//! paying `virt.costs.invept`), as `engine/tiering.rs` does for a
//! migration. A policy that runs as a host daemon calls the `Hypervisor`
//! methods itself; the round's end then delivers its changes.

use super::Simulation;
use crate::error::{Error, Result};
use crate::os::Kernel;
use crate::units::{Gfn, PageSize};
use crate::virt::balloon::{Inflation, Take};
use crate::virt::ept_bits::{EptClear, EptLeafBits};
use crate::virt::Hypervisor;

impl Simulation {
    /// The hypervisor of a virtualized run, or an error naming the key.
    fn hypervisor_mut(&mut self) -> Result<&mut Hypervisor> {
        match self.virt.as_deref_mut() {
            Some(v) => Ok(&mut v.hv),
            None => Err(Error::config("virt.enabled", "EPT services need a virtualized run")),
        }
    }

    /// Scans (and clears) the EPT accessed and dirty bits of VM `vm`'s
    /// guest frames [start, end) (`Hypervisor::scan_ept_bits`); with
    /// `flush` the INVEPT reaches the VM's cores now.
    pub fn scan_ept_bits(
        &mut self,
        vm: usize,
        start: Gfn,
        end: Gfn,
        clear: EptClear,
        flush: bool,
    ) -> Result<Vec<EptLeafBits>> {
        let leaves = self.hypervisor_mut()?.scan_ept_bits(vm, start, end, clear, flush);
        self.deliver_ept_changes();
        Ok(leaves)
    }

    /// Inflates VM `vm`'s balloon by `bytes` (`HostCtx::inflate_balloon`
    /// with the VMs' guest kernels); the INVEPTs reach its cores now.
    pub fn inflate_balloon(&mut self, vm: usize, bytes: u64) -> Result<Inflation> {
        self.inflate_balloon_by(vm, bytes, Take::Largest)
    }

    /// Inflates VM `vm`'s balloon by `bytes`, its frames chosen by `take`
    /// (`HostCtx::inflate_balloon_by`); the INVEPTs reach its cores now.
    pub fn inflate_balloon_by(&mut self, vm: usize, bytes: u64, take: Take) -> Result<Inflation> {
        self.with_host_ctx(|ctx| ctx.inflate_balloon_by(vm, bytes >> 12, take))
    }

    /// Deflates VM `vm`'s balloon by up to `bytes` (`HostCtx::deflate_balloon`):
    /// the pages given back.
    pub fn deflate_balloon(&mut self, vm: usize, bytes: u64) -> Result<u64> {
        self.with_host_ctx(|ctx| Ok(ctx.deflate_balloon(vm, bytes >> 12)))
    }

    /// Runs `f` with the hypervisor's services and the VMs' guest kernels,
    /// then delivers the INVEPTs it caused.
    fn with_host_ctx<R>(&mut self, f: impl FnOnce(&mut crate::virt::HostCtx) -> Result<R>) -> Result<R> {
        let Some(virt) = self.virt.as_deref_mut() else {
            return Err(Error::config("virt.enabled", "a balloon needs a virtualized run"));
        };
        let mut guests: Vec<&mut Kernel> =
            std::iter::once(&mut self.kernel).chain(virt.other_guests.iter_mut()).collect();
        let now = self.cores.iter().map(|c| c.clock(self.timing.base_cpi)).fold(0.0, f64::max);
        let r = virt.hv.with_ctx(&mut guests, now, f)?;
        self.deliver_ept_changes();
        Ok(r)
    }

    /// The VM exits the host's policies charged: each VM's first vCPU pays
    /// them (`virt.vm_exits`, `cycles.virt`), and serialises.
    pub(super) fn deliver_policy_exits(&mut self) {
        let Some(virt) = self.virt.as_deref_mut() else { return };
        for (vm, exits, cycles) in virt.hv.drain_exits() {
            let Some(core) = self.cores.iter_mut().find(|c| c.vm == vm) else { continue };
            core.stats.vm_exits += exits;
            core.stats.cycles_virt += cycles;
            if let Some(w) = core.window.as_mut() {
                w.serialize(&mut core.stats, cycles);
            }
        }
    }

    /// Splits the huge EPT leaf mapping `gfn` of VM `vm`, EPT only
    /// (`Hypervisor::ept_split`); its INVEPT reaches the VM's cores now.
    /// Returns the host cycles it cost.
    pub fn ept_split(&mut self, vm: usize, gfn: Gfn) -> Result<f64> {
        let cycles = self.hypervisor_mut()?.ept_split(vm, gfn)?;
        self.deliver_ept_changes();
        Ok(cycles)
    }

    /// Collapses the split `size` range holding `gfn` of VM `vm` back into
    /// its huge EPT leaf (`Hypervisor::ept_collapse`), its INVEPT delivered
    /// now; None when its frames no longer allow it.
    pub fn ept_collapse(&mut self, vm: usize, gfn: Gfn, size: PageSize) -> Result<Option<f64>> {
        let cycles = self.hypervisor_mut()?.ept_collapse(vm, gfn, size)?;
        self.deliver_ept_changes();
        Ok(cycles)
    }
}

#[cfg(test)]
#[path = "virt_services_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "balloon_tests.rs"]
mod balloon_tests;
#[cfg(test)]
#[path = "ebal_tests.rs"]
mod ebal_tests;
