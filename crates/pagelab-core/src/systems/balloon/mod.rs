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

/// `virt.host.balloon`: one simple policy, as a management layer that
/// resizes VMs' balloons at moments it chooses (e.g. `virsh setmem`): a
/// balloon per VM inflated from boot, a target per VM inflated once at a
/// simulated time, a deflation per VM at another (the order of a round:
/// inflations, then deflations, so a VM can receive what another freed).
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
    /// Bytes each VM's balloon holds from boot, by VM (a VM started with
    /// less memory than its maximum: its guest cannot use them until its
    /// balloon deflates). Multiples of 4 KiB.
    pub inflated_at_boot: Vec<ByteSize>,
    /// Bytes each VM's balloon gives back to its guest, by VM (at most what
    /// it holds then). Multiples of 4 KiB.
    pub deflate: Vec<ByteSize>,
    /// The simulated time (milliseconds) from which the balloons deflate.
    pub deflate_at_ms: f64,
    /// COPLACE's eBal: a balloon takes its guest's free frames evenly
    /// across the guest's colors, not the largest free blocks first.
    pub even_colors: bool,
}

impl Default for BalloonConfig {
    fn default() -> Self {
        BalloonConfig {
            targets: Vec::new(),
            inflate_at_ms: 0.0,
            inflated_at_boot: Vec::new(),
            deflate: Vec::new(),
            deflate_at_ms: 0.0,
            even_colors: false,
        }
    }
}

impl BalloonConfig {
    /// Whether it is all defaults (then the OS table does not show it).
    pub fn is_default(&self) -> bool {
        *self == BalloonConfig::default()
    }

    /// Whether some balloon has a target, holds memory from boot or
    /// deflates.
    pub fn active(&self) -> bool {
        [&self.targets, &self.inflated_at_boot, &self.deflate].iter().any(|l| l.iter().any(|t| t.bytes() > 0))
    }

    /// Whether eBal's statistics mean something: balloons even their
    /// colors, or deflate.
    pub fn reports_colors(&self) -> bool {
        self.active() && (self.even_colors || self.deflate.iter().any(|t| t.bytes() > 0))
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
        for (key, list) in
            [("targets", &self.targets), ("inflated_at_boot", &self.inflated_at_boot), ("deflate", &self.deflate)]
        {
            if let Some((i, t)) = list.iter().enumerate().find(|(_, t)| !t.bytes().is_multiple_of(4096)) {
                return Err(Error::config(
                    format!("{prefix}.balloon.{key}[{i}]"),
                    format!("{t} is not a multiple of 4KiB"),
                ));
            }
        }
        let held = |i: usize| {
            [&self.targets, &self.inflated_at_boot].iter().filter_map(|l| l.get(i)).map(|t| t.bytes()).sum::<u64>()
        };
        if let Some((i, t)) = self.deflate.iter().enumerate().find(|&(i, t)| t.bytes() > held(i)) {
            return Err(Error::config(
                format!("{prefix}.balloon.deflate[{i}]"),
                format!("{t} is more than the balloon ever holds (targets[{i}] + inflated_at_boot[{i}])"),
            ));
        }
        for (key, ms) in [("inflate_at_ms", self.inflate_at_ms), ("deflate_at_ms", self.deflate_at_ms)] {
            if !(ms >= 0.0 && ms.is_finite()) {
                return Err(Error::config(format!("{prefix}.balloon.{key}"), "must be a number of milliseconds >= 0"));
            }
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
