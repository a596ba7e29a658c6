//! What the hypervisor charges for its work (`virt.costs`) and when it
//! backs guest memory (`virt.backing`): apart from the rest of the `virt`
//! table (`config.rs`, which holds the host's OS table), so that the
//! hypervisor's state and its policies need only these.

use serde::{Deserialize, Serialize};

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
