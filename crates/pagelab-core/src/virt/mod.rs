//! The hypervisor: a second kernel, over host-physical memory, that backs
//! the VM's guest-physical memory.
//!
//! The model follows KVM with QEMU: the VM is one host process whose one
//! VMA (`guest-mem`, at host "virtual" address 0) covers guest memory, so
//! the host kernel's page table of that process *is* the EPT (radix,
//! `virt.ept_levels` deep; leaves 4 KiB, 2 MiB, 1 GiB), its "virtual"
//! addresses are guest-physical ones (`GuestPhysAddr::as_host_virt`), and
//! an EPT violation is a host page fault in that VMA, which the host's
//! chain of systems (`virt.host.policy` / `virt.host.systems`) backs as it
//! backs any fault: the host's systems see guest-physical frame numbers.
//! Guest memory is backed lazily ([`Backing`]).
//!
//! The guest is an ordinary `Kernel` over `virt.guest_mem`, booted by the
//! engine from the `os` table: inside it every `Pfn` is a guest frame
//! (`Gfn::of_guest_kernel` says so where the walker crosses over).
//!
//! Layer: after the systems (it boots a kernel with a chain of them),
//! before the workloads; the engine's two-dimensional walker
//! (`engine::walk2d`) drives it.

pub mod balloon;
mod boot;
mod config;
pub mod contents;
pub mod costs;
pub mod ept_bits;
mod ept_split;
pub mod hypervisor;
mod report;
#[cfg(test)]
mod tests;

pub use config::VirtConfig;
pub use contents::{ContentId, Contents, PageData, SharedPages, Writes};
pub use costs::{Backing, VirtCosts};
pub use hypervisor::{
    hw_tag, EptChange, HostBuild, HostCounters, HostCtx, HostPolicy, HostRegistration, Hypervisor, Vm, GUEST_MEM_VMA,
    VPID_SHIFT,
};

use crate::stat::{Section, StatDecl, StatTable};

/// The hypervisor's own statistics (its kernel's are the native names
/// under `host.`: `host.mem.mapped.4k`, `host.os.faults.thp`...).
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Virtualization,
    stats: &[
        StatDecl::count(
            "host.faults",
            "host page faults (the EPT violations' host side, including the guest's root tables backed at boot)",
        )
        .machine()
        .contract(),
        StatDecl::count(
            "virt.invepts",
            "host changes to a VM's EPT (a host munmap, split or migration of guest memory) that invalidated its \
             translations (machine-wide, over all VMs)",
        )
        .machine(),
        StatDecl::count(
            "host.ept_scans",
            "scans of EPT accessed and dirty bits (`Hypervisor::scan_ept_bits`, by a host daemon or a caller)",
        )
        .machine(),
        StatDecl::count("host.ept_cleared", "EPT leaves whose bits those scans cleared").machine(),
        StatDecl::count(
            "host.ept_splits",
            "EPT-only splits of a huge EPT leaf into 512 leaves of the next size over the same host frames (no \
             copy, no host metadata change; `virt/ept_split.rs`)",
        )
        .machine()
        .contract(),
        StatDecl::count("host.ept_collapses", "EPT-only re-collapses of such a split range back into its huge leaf")
            .machine()
            .contract(),
        StatDecl::count(
            "host.ept_collapse_refused",
            "collapses refused: the range was not an EPT-only split, or its entries no longer map the contiguous, aligned \
             frames of one huge page with one permission",
        )
        .machine(),
        StatDecl::count(
            "host.ept_restores",
            "EPT-only splits put back into their huge leaf because the host's own work reached the range \
             (munmap, mprotect, a balloon's discard, a migration, a split by the host): HugeScope's coalesce on \
             a hypervisor touch (its section 3.3.4)",
        )
        .machine(),
        StatDecl::count(
            "host.ept_remap_cycles",
            "host CPU cycles of those splits, collapses and restores (`virt.costs.ept_split`, `.ept_collapse` \
             each), on no vCPU's clock; their INVEPTs are in `cycles.virt` of the VM's cores",
        )
        .cycles()
        .machine(),
    ],
}];
