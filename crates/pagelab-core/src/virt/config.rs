//! The `virt` table: whether the run is virtualized, the guest's memory,
//! the EPT's depth, when guest memory is backed, what a VM exit costs, and
//! the hypervisor's own OS table (`virt.host`, the same keys as `os`).

use serde::{Deserialize, Serialize};

use super::costs::{Backing, VirtCosts};
use crate::error::{Error, Result};
use crate::systems::OsConfig;
use crate::units::ByteSize;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct VirtConfig {
    /// The run is virtualized: `os` is then the guest's OS, `virt.host` the
    /// hypervisor's.
    pub enabled: bool,
    /// The guest-physical memory of the VM.
    pub guest_mem: ByteSize,
    /// EPT depth: 4, or 3 as ARM stage-2 tables for guests of at most
    /// 512 GiB.
    pub ept_levels: u8,
    pub backing: Backing,
    pub costs: VirtCosts,
    /// The hypervisor's OS (`policy`, `systems`, `fragmentation`, each
    /// system's table, `fault_cost`), over host-physical memory
    /// (`machine.phys_mem`).
    pub host: OsConfig,
}

impl Default for VirtConfig {
    fn default() -> Self {
        VirtConfig {
            enabled: false,
            guest_mem: ByteSize(4 << 30),
            ept_levels: 4,
            backing: Backing::Zeroing,
            costs: VirtCosts::default(),
            host: OsConfig::default(),
        }
    }
}

impl VirtConfig {
    /// Checks the host's keys; `phys_mem` and `max_order` are the
    /// machine's (the host's memory).
    pub fn validate(&self, phys_mem: u64, max_order: u8) -> Result<()> {
        for (key, v) in [
            ("vm_exit", self.costs.vm_exit),
            ("ept_violation", self.costs.ept_violation),
            ("invept", self.costs.invept),
            ("ept_split", self.costs.ept_split),
            ("ept_collapse", self.costs.ept_collapse),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::config(format!("virt.costs.{key}"), "must be a number of cycles >= 0"));
            }
        }
        if !matches!(self.ept_levels, 3 | 4) {
            return Err(Error::config("virt.ept_levels", "must be 4 or 3"));
        }
        // (A system's registration says whether it can back a guest.)
        if let Some((name, why)) = crate::systems::chain_find(&self.host.chain(), |c| c.not_in_host) {
            let key = if self.host.systems.is_none() { "virt.host.policy" } else { "virt.host.systems" };
            return Err(Error::config(key, format!("`{name}` cannot back a guest yet: {why}")));
        }
        self.host.validate("virt.host", phys_mem, max_order)
    }

    /// Checks one guest: its memory (`guest_mem`, under `mem_key`) against
    /// the EPT's depth, and its OS (`guest`, under `os_key`) for systems
    /// that cannot run in a guest.
    pub fn validate_guest(&self, os_key: &str, guest: &OsConfig, mem_key: &str, guest_mem: ByteSize) -> Result<()> {
        let g = guest_mem.bytes();
        if !g.is_multiple_of(2 << 20) || !(4 << 20..=1 << 40).contains(&g) {
            return Err(Error::config(mem_key, format!("{guest_mem} is not a multiple of 2MiB between 4MiB and 1TiB")));
        }
        if self.ept_levels == 3 && g > 512 << 30 {
            return Err(Error::config("virt.ept_levels", "3 levels map at most 512GiB of guest memory"));
        }
        if let Some((name, why)) = crate::systems::chain_find(&guest.chain(), |c| c.not_in_guest) {
            let key = if guest.systems.is_none() { "policy" } else { "systems" };
            return Err(Error::config(
                format!("{os_key}.{key}"),
                format!("`{name}` cannot run in a guest yet (virt.enabled = true): {why}"),
            ));
        }
        Ok(())
    }
}
