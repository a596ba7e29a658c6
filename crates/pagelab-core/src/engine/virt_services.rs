//! The hypervisor's services to the VMs' memory as the engine offers them
//! to a policy or a test: each is the mechanism in `virt/` with the host
//! changes it makes delivered at once as INVEPTs to the VM's cores (each
//! paying `virt.costs.invept`), as `engine/tiering.rs` does for a
//! migration. A policy that runs as a host daemon calls the `Hypervisor`
//! methods itself; the round's end then delivers its changes.

use super::Simulation;
use crate::error::{Error, Result};
use crate::units::{Gfn, PageSize};
use crate::virt::balloon::Inflation;
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

    /// Inflates VM `vm`'s balloon by `bytes` (`Hypervisor::inflate_balloon`
    /// with that VM's guest kernel); the INVEPTs reach its cores now.
    pub fn inflate_balloon(&mut self, vm: usize, bytes: u64) -> Result<Inflation> {
        let Some(virt) = self.virt.as_deref_mut() else {
            return Err(Error::config("virt.enabled", "a balloon needs a virtualized run"));
        };
        let guest = if vm == 0 { &mut self.kernel } else { &mut virt.other_guests[vm - 1] };
        let inflation = virt.hv.inflate_balloon(vm, guest, bytes >> 12)?;
        self.deliver_ept_changes();
        Ok(inflation)
    }

    /// The balloon policy (`virt.host.balloon`): once the simulated time
    /// reaches `inflate_at_ms`, every VM's balloon inflates to its target.
    pub(super) fn inflate_balloons_due(&mut self, now: f64) -> Result<()> {
        if self.virt.as_deref().is_none_or(|v| v.hv.balloons.policy_done) {
            return Ok(());
        }
        let cfg = &self.config().virt.host.balloon;
        if !cfg.active() || now < cfg.inflate_at_ms * self.config().machine.freq_ghz * 1e6 {
            return Ok(());
        }
        let targets: Vec<u64> = cfg.targets.iter().map(|t| t.bytes()).collect();
        if let Some(v) = self.virt.as_deref_mut() {
            v.hv.balloons.policy_done = true;
        }
        for (vm, bytes) in targets.into_iter().enumerate().take(self.nr_guests()) {
            self.inflate_balloon(vm, bytes)?;
        }
        Ok(())
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
