//! The `virt` table: whether the run is virtualized, the guest's memory,
//! the EPT's depth, when guest memory is backed, what a VM exit costs, and
//! the hypervisor's own OS table (`virt.host`, the same keys as `os`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::OsConfig;
use crate::units::ByteSize;

/// When the host backs a guest frame (each is an EPT violation: a VM exit
/// and a host page fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backing {
    /// When the guest's fault handler zeroes the frames it allocated (the
    /// new page and any new page-table pages): KVM's usual case, since the
    /// zeroing stores reach the host first. The walker still backs, at its
    /// first reference, anything the guest did not zero (a frame the
    /// guest's khugepaged copied into, a pre-existing one).
    Zeroing,
    /// Only at the first hardware reference: a walk of the guest's tables
    /// or a data access (a guest that does not zero, or pre-zeroed memory).
    FirstTouch,
}

/// `virt.costs`: cycles, charged to `cycles.virt` of the core that caused
/// them. Round numbers of the order reported for VMX round trips and
/// KVM's EPT-violation path, not measurements.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct VirtCosts {
    /// One VM exit and re-entry.
    pub vm_exit: f64,
    /// KVM's handling of an EPT violation beyond the exit (the memslot
    /// lookup, installing the EPT entry); the host's page fault is added at
    /// its own cost (`virt.host.fault_cost`).
    pub ept_violation: f64,
    /// An INVEPT of the VM's translations, on each of its cores (a host
    /// change to its memory).
    pub invept: f64,
    /// The host's EPT-only split of one huge EPT leaf (`virt::ept_split`),
    /// its INVEPT apart. HugeScope (Fig. 4, §3.3.1) measured KVM's split at
    /// 145 us and the page-table part of it at 6.0%: 8.7 us, 26,100 cycles
    /// at 3 GHz. (Written out only when changed, as the next, so that
    /// every other configuration's text and hash stay what they were.)
    #[serde(skip_serializing_if = "is_default_ept_split")]
    pub ept_split: f64,
    /// Its re-collapse: 6.5% of KVM's 240 us collapse, 15.6 us, 46,800
    /// cycles at 3 GHz.
    #[serde(skip_serializing_if = "is_default_ept_collapse")]
    pub ept_collapse: f64,
}

const EPT_SPLIT: f64 = 26_100.0;
const EPT_COLLAPSE: f64 = 46_800.0;

fn is_default_ept_split(c: &f64) -> bool {
    *c == EPT_SPLIT
}

fn is_default_ept_collapse(c: &f64) -> bool {
    *c == EPT_COLLAPSE
}

impl Default for VirtCosts {
    fn default() -> Self {
        VirtCosts {
            vm_exit: 1200.0,
            ept_violation: 1000.0,
            invept: 500.0,
            ept_split: EPT_SPLIT,
            ept_collapse: EPT_COLLAPSE,
        }
    }
}

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

/// Systems whose hardware side the two-dimensional walker does not have
/// yet, in the guest (none since colored huge pages' 2D walk step,
/// `systems/chp/walk2d.rs`).
const NOT_IN_A_GUEST: &[&str] = &[];

/// Systems that cannot back a guest, and why: the EPT walk is the base
/// walker, which knows no colored huge page. (A perforated EPT leaf is
/// the 2D walker's: `systems/perforated/walk2d.rs`.)
const NOT_IN_THE_HOST: &[(&str, &str)] = &[("chp", "the EPT walk is the base walker")];

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
        let chain = self.host.chain();
        if let Some((name, why)) = NOT_IN_THE_HOST.iter().find(|(n, _)| chain.contains(n)) {
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
        if let Some(name) = guest.chain().into_iter().find(|n| NOT_IN_A_GUEST.contains(n)) {
            let key = if guest.systems.is_none() { "policy" } else { "systems" };
            return Err(Error::config(
                format!("{os_key}.{key}"),
                format!("`{name}` cannot run in a guest yet (virt.enabled = true): its walk step is native-only"),
            ));
        }
        Ok(())
    }
}
