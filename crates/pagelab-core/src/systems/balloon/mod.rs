//! The virtio balloon's policy: a policy of the hypervisor. This file holds
//! its table (`virt.host.balloon`), at the systems' layer with the OS
//! table that carries it; the policy is [`host`], at the hypervisor's
//! layer; the mechanism is the hypervisor's (`virt::balloon`). Only the
//! hypervisor's OS may set it.

pub mod host;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};
use crate::units::ByteSize;

/// `virt.host.balloon`: one simple policy, a target per VM inflated once
/// at a simulated time (as a management layer that resizes a VM's balloon
/// at a moment it chooses, e.g. `virsh setmem`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BalloonConfig {
    /// Bytes each VM's balloon takes from its guest and gives back to the
    /// host, by VM (`[[vms]]` order; the one VM of a top-level `os` is the
    /// first); a VM past the list's end keeps none. Multiples of 4 KiB.
    pub targets: Vec<ByteSize>,
    /// The simulated time (milliseconds) from which the balloons inflate,
    /// at the end of the first round that reaches it.
    pub inflate_at_ms: f64,
}

impl Default for BalloonConfig {
    fn default() -> Self {
        BalloonConfig { targets: Vec::new(), inflate_at_ms: 0.0 }
    }
}

impl BalloonConfig {
    /// Whether it is all defaults (then the OS table does not show it).
    pub fn is_default(&self) -> bool {
        *self == BalloonConfig::default()
    }

    /// Whether some balloon has a target.
    pub fn active(&self) -> bool {
        self.targets.iter().any(|t| t.bytes() > 0)
    }

    /// `host`: whether this is the hypervisor's OS table (the only one
    /// that may have balloons).
    fn check_keys(&self, prefix: &str, host: bool) -> Result<()> {
        if self.active() && !host {
            return Err(Error::config(
                format!("{prefix}.balloon.targets"),
                "a balloon gives a VM's memory back to the hypervisor: set virt.host.balloon in a virtualized run",
            ));
        }
        if let Some((i, t)) = self.targets.iter().enumerate().find(|(_, t)| !t.bytes().is_multiple_of(4096)) {
            return Err(Error::config(
                format!("{prefix}.balloon.targets[{i}]"),
                format!("{t} is not a multiple of 4KiB"),
            ));
        }
        if !(self.inflate_at_ms >= 0.0 && self.inflate_at_ms.is_finite()) {
            return Err(Error::config(
                format!("{prefix}.balloon.inflate_at_ms"),
                "must be a number of milliseconds >= 0",
            ));
        }
        Ok(())
    }
}

impl SystemTable for BalloonConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix, check.host)
    }

    fn hidden(&self) -> bool {
        self.is_default()
    }
}
