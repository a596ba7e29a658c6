//! COPLACE's host placement (Chen et al., "COPLACE: Effectively Mitigating
//! Cache Conflicts in Modern Clouds", its section IV) and the host page
//! coloring the paper compares it with (its section III and footnote 1),
//! two systems of the hypervisor's chain (`virt.host.policy`):
//!
//! - `vmm-coloring`: FreeBSD's page coloring as the paper ported it to the
//!   host: colors go "in a round-robin manner when allocating host physical
//!   pages to contiguous guest physical pages", so the color follows the
//!   guest-physical page. In the host a VM's guest-physical memory is one
//!   host-virtual range (its `guest-mem` VMA), so a page's color is its
//!   page offset within that range modulo the host's colors (its color map:
//!   `virt.host.coloring.bits`, default the LLC's set bits).
//! - `coplace`: the host backs a guest-physical page with a frame whose
//!   host color is a function of the guest's own color of that page (the
//!   guest's color bits: the VM's `os.coloring.bits`, else the machine's
//!   LLC, the virtual LLC the VM is shown), so pages the guest put in
//!   different colors sit in different host colors; host colors (section
//!   IV) are the LLC's color inside a slice, the lowest
//!   `virt.host.coplace.slice_bits` page bits that select the slice, and,
//!   with a non-inclusive LLC, the L2's color (`colors.rs`).
//!
//! Both keep a page's color whatever order the guest touches or reuses its
//! frames in: the color is a function of the guest frame, not of the fault
//! order (PALLOC's `coloring` in the host is). With no free frame of the
//! wanted color, both take the nearest color that has one and count it
//! (pagelab's choice: the paper does not say). Neither means anything
//! outside the hypervisor (`Caps::only_in_host`). Under host THP (a chain
//! `["thp", "coplace"]`) a 2 MiB host page is not placed by COPLACE: its
//! frames' bits 12-20 are the guest frames' own (section VI, "Huge
//! pages"), so guest colors on those bits carry through.

mod colors;
mod place;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use super::{Build, Caps, Hooks, Policy, Registration, SystemTable, TableCheck};
use crate::error::{Error, Result};
use crate::os::Kernel;
use crate::stat::{put_ints, Section, StatDecl, StatTable};
pub use colors::{host_color_bits, host_color_of_guest};
use place::{HostColoring, Target};

/// Why these two systems are the host's only.
const ONLY_IN_HOST: &str =
    "places a VM's guest-physical memory in host frames: it is a policy of the hypervisor (virt.host.policy)";

/// Their statistics; their faults count as `os.faults.colored`.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Systems,
    stats: &[
        StatDecl::count(
            "coplace.color_fallbacks",
            "host faults COPLACE backed with a frame of another host color than the guest's color asks for (the \
             nearest color with a free frame, else any free frame): no free frame of that color was left",
        )
        .os(),
        StatDecl::count(
            "vmm_coloring.color_fallbacks",
            "host faults `vmm-coloring` backed with a frame of another color than the guest frame's (the nearest \
             color with a free frame, else any free frame): no free frame of that color was left",
        )
        .os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "coplace",
    policies: &[Policy {
        name: "coplace",
        chain: &["coplace"],
        doc: "Host only: a guest page's host color follows the guest's color of it (COPLACE).",
    }],
    fault_kinds: &["colored"],
    terminal: true,
    caps: Caps { only_in_host: Some(ONLY_IN_HOST), ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| put_ints(out, "coplace.", &[("color_fallbacks", 0)]),
    build: build_coplace,
};

pub const VMM_COLORING_REGISTRATION: Registration = Registration {
    name: "vmm-coloring",
    policies: &[Policy {
        name: "vmm-coloring",
        chain: &["vmm-coloring"],
        doc: "Host only: FreeBSD-style coloring, a page's color follows its guest-physical page.",
    }],
    fault_kinds: &["colored"],
    terminal: true,
    caps: Caps { only_in_host: Some(ONLY_IN_HOST), ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| put_ints(out, "vmm_coloring.", &[("color_fallbacks", 0)]),
    build: build_vmm_coloring,
};

/// `virt.host.coplace`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoplaceConfig {
    /// How many of the page-level address bits that select the LLC's slice
    /// (beyond its set bits) join the host color, lowest first. Unset: as
    /// many as tell the slices apart (log2 of the slice count, rounded up),
    /// or all there are. With the `modulo` hash no page bit selects a
    /// slice, so none joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_bits: Option<u32>,
}

impl SystemTable for CoplaceConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        match self.slice_bits {
            Some(n) if n > 16 => Err(Error::config(
                format!("{}.coplace.slice_bits", check.prefix),
                format!("{n}: a host color holds at most 16 bits"),
            )),
            _ => Ok(()),
        }
    }

    fn hidden(&self) -> bool {
        *self == CoplaceConfig::default()
    }
}

fn build_coplace(b: &Build, k: &mut Kernel) -> Result<()> {
    let view = b.host_view.ok_or_else(|| Error::config("virt.host.policy", format!("`coplace` {ONLY_IN_HOST}")))?;
    let bits = host_color_bits(view, b.os.coplace.slice_bits);
    let map = crate::hw::cache::ColorMap::new(&bits, "virt.host.coplace.slice_bits")?;
    let target = Target::GuestColors { guests: view.guest_colors.clone() };
    k.plug(Box::new(HostColoring::new("coplace", "coplace.", Some(map), target)));
    Ok(())
}

fn build_vmm_coloring(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(HostColoring::new("vmm-coloring", "vmm_coloring.", None, Target::GuestFrame)));
    Ok(())
}
