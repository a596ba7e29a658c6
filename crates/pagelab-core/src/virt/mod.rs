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
mod config;
pub mod contents;
pub mod ept_bits;
mod ept_split;
pub mod ksm;
#[cfg(test)]
mod tests;

pub use config::{Backing, VirtConfig, VirtCosts};
pub use contents::{ContentId, Contents, PageData, SharedPages, Writes};
pub use ksm::Ksm;

use crate::error::{Error, Result};
use crate::os::{Boot, Kernel, ProcessSpec};
use crate::paging::PageTable;
use crate::phys::FrameOwner;
use crate::stat::{put_ints, Stat, Stats};
use crate::units::{Asid, Gfn, PageSize, Pfn, VirtAddr};

/// The name of the VM process's VMA in the host.
pub const GUEST_MEM_VMA: &str = "guest-mem";

/// Where a VM's VPID sits in the hardware's address-space tag: TLB and
/// page-walk-cache entries are tagged with `vpid << VPID_SHIFT | asid`, so
/// two VMs' processes numbered alike never share an entry (and a native
/// run, VPID 0, keeps its plain asids). Guests have fewer than 4096
/// processes; up to 15 VMs fit.
pub const VPID_SHIFT: u32 = 12;

/// The hardware tag of guest address space `asid` of VM `vpid`.
#[inline]
pub const fn hw_tag(vpid: u16, asid: Asid) -> Asid {
    (vpid << VPID_SHIFT) | asid
}

/// The hypervisor's counters (the per-core ones are in `CoreStats`).
#[derive(Debug, Default, Clone)]
pub struct HostCounters {
    /// Host page faults (each an EPT violation's).
    pub faults: u64,
    /// Host changes to the VM's EPT that invalidated its translations.
    pub invepts: u64,
    /// Scans of EPT accessed and dirty bits, and the leaves they cleared.
    pub ept_scans: u64,
    pub ept_cleared: u64,
    /// EPT-only splits and collapses (`virt::ept_split`), the collapses
    /// refused, and the host cycles of both.
    pub ept_splits: u64,
    pub ept_collapses: u64,
    pub ept_collapse_refused: u64,
    pub ept_remap_cycles: f64,
}

/// One VM's place in the host.
#[derive(Debug, Clone, Copy)]
pub struct Vm {
    /// Its hardware identity (VPID): 1 for the first VM, 2 for the second...
    pub vpid: u16,
    /// Its process in the host: the EPT is that process's page table.
    pub host_asid: Asid,
    /// Its guest-physical frames.
    pub guest_frames: u64,
}

/// The host kernel and the VMs it runs (indexed from 0: VM `i` has VPID
/// `i + 1`).
#[derive(Debug)]
pub struct Hypervisor {
    pub host: Kernel,
    pub vms: Vec<Vm>,
    pub costs: VirtCosts,
    pub backing: Backing,
    pub counters: HostCounters,
    /// KSM's scanner and pages (`virt.host.ksm.enabled`); None costs nothing.
    pub ksm: Option<Box<Ksm>>,
    /// The VMs' balloons (`virt::balloon`), empty until one inflates.
    pub balloons: balloon::Balloons,
    /// Whether an EPT leaf may be a perforated page (`perforated` in the
    /// host's chain, or KSM that punches): the 2D walker then looks for combined perforated
    /// entries over 4 KiB EPT translations (`systems/perforated/walk2d.rs`).
    pub host_perforated: bool,
    /// Host changes to one VM's EPT that a fault on another VM's core
    /// caused: they wait for the end of the round (as a native fault's
    /// shootdowns reach the other cores then).
    deferred: Vec<EptChange>,
}

/// A range of guest frames of VM `vm` whose EPT entries a host change
/// removed or replaced: what that VM's cores must drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EptChange {
    pub vm: usize,
    pub start: Gfn,
    pub end: Gfn,
}

impl Hypervisor {
    /// Boots the host (`virt.host` over `boot`'s memory, `boot.paging_levels`
    /// being the EPT's depth) and starts one process per VM, of
    /// `guest_mems[i]` bytes of guest memory each, mapped and nothing
    /// backed. Their sum may exceed host memory (overcommit): the run stops
    /// when a backing finds no free host frame.
    pub fn boot(cfg: &VirtConfig, guest_mems: &[u64], boot: Boot, freq_ghz: f64, seed: u64) -> Result<Hypervisor> {
        let mut host = crate::systems::boot(&cfg.host, boot, freq_ghz, seed)?;
        let ksm = cfg.host.ksm.enabled.then(|| Box::new(Ksm::new(&cfg.host.ksm, &host.chain(), freq_ghz)));
        let punch = cfg.host.ksm.enabled && cfg.host.ksm.split == ksm::KsmSplit::Punch;
        let host_perforated = host.chain().contains(&"perforated") || punch;
        let mut vms = Vec::new();
        for (i, &bytes) in guest_mems.iter().enumerate() {
            let host_asid = host.spawn(ProcessSpec::default())?;
            host.mmap(host_asid, VirtAddr::new(0), bytes, true, GUEST_MEM_VMA)?;
            vms.push(Vm { vpid: i as u16 + 1, host_asid, guest_frames: bytes >> 12 });
        }
        Ok(Hypervisor {
            host,
            vms,
            costs: cfg.costs.clone(),
            backing: cfg.backing,
            counters: HostCounters::default(),
            ksm,
            balloons: balloon::Balloons::default(),
            host_perforated,
            deferred: Vec::new(),
        })
    }

    /// VM `vm`'s process in the host (whose page table is its EPT).
    #[inline]
    pub fn host_asid(&self, vm: usize) -> Asid {
        self.vms[vm].host_asid
    }

    /// VM `vm`'s EPT.
    #[inline]
    pub fn ept_mut(&mut self, vm: usize) -> &mut PageTable {
        self.host.page_table_mut(self.vms[vm].host_asid)
    }

    pub fn ept(&self, vm: usize) -> &PageTable {
        &self.host.proc(self.vms[vm].host_asid).aspace.pt
    }

    /// The host frame backing `gfn` of VM `vm` and the size of its EPT
    /// leaf, if it is backed (a software walk: no hardware reference).
    pub fn backing_of(&self, vm: usize, gfn: Gfn) -> Option<(Pfn, PageSize)> {
        let m = self.ept(vm).lookup(gfn.addr().as_host_virt())?;
        Some((m.frame.add(gfn.raw() & (m.size.nr_pages() - 1)), m.size))
    }

    /// An EPT violation at `gfn` of VM `vm`: the VM exits, the host faults
    /// the page in through its chain of systems. Returns the cycles it cost.
    pub fn handle_violation(&mut self, vm: usize, gfn: Gfn) -> Result<f64> {
        let Vm { vpid, host_asid, guest_frames } = self.vms[vm];
        if gfn.raw() >= guest_frames {
            return Err(Error::Workload(format!(
                "the guest referenced guest frame {gfn}, beyond its {guest_frames} frames of memory"
            )));
        }
        let outcome = self.host.handle_fault(host_asid, gfn.addr().as_host_virt(), true).map_err(|e| match e {
            // No swap: an overcommitted host stops here.
            Error::OutOfMemory(why) => Error::OutOfMemory(format!(
                "host memory exhausted backing guest frame {gfn} of VM {vpid} (vms[{vm}]; there is no swap, and \
                 no ballooning or deduplication freed memory): {why}"
            )),
            other => other,
        })?;
        self.counters.faults += 1;
        Ok(self.costs.vm_exit + self.costs.ept_violation + outcome.cycles)
    }

    /// Whether the EPT maps `gfn` of VM `vm` read-only: a KSM page, whose
    /// stores fault (false at once when KSM is off).
    pub fn write_protected(&self, vm: usize, gfn: Gfn) -> bool {
        self.ksm.is_some() && self.ept(vm).lookup(gfn.addr().as_host_virt()).is_some_and(|m| !m.pte.writable())
    }

    /// A guest store to `gfn` of VM `vm` met a write-protected EPT leaf: a
    /// VM exit, and the host copies the KSM page (copy-on-write) into a
    /// frame of the VM's own, whose content becomes the VM's own too.
    /// Returns the cycles it cost.
    pub fn break_cow(&mut self, vm: usize, gfn: Gfn, contents: Option<&mut Contents>) -> Result<f64> {
        let (frame, _) = self.backing_of(vm, gfn).expect("a write-protected frame is backed");
        let ksm = self.ksm.as_deref_mut().expect("only KSM write-protects guest memory");
        let copy = ksm.break_cow(&mut self.host, &self.vms[vm], gfn, frame, contents)?;
        self.counters.faults += 1;
        Ok(self.costs.vm_exit + self.costs.ept_violation + copy)
    }

    /// The guest's kernel zeroed [start, start + count) (a fault's new page
    /// and tables): those KSM shares are broken as a store breaks them.
    /// Returns the violations taken and their cycles.
    pub fn zeroed_by_guest(
        &mut self,
        vm: usize,
        start: Gfn,
        count: u64,
        mut contents: Option<&mut Contents>,
    ) -> Result<(u64, f64)> {
        let (mut violations, mut cycles) = (0, 0.0);
        if self.ksm.is_none() {
            return Ok((0, 0.0));
        }
        for gfn in (start.raw()..start.raw() + count).map(Gfn::new) {
            if self.write_protected(vm, gfn) {
                cycles += self.break_cow(vm, gfn, contents.as_deref_mut())?;
                violations += 1;
            }
        }
        Ok((violations, cycles))
    }

    /// Backs every frame of [start, start + count) not backed yet (the
    /// guest zeroed them). Returns the violations taken and their cycles.
    pub fn back_range(&mut self, vm: usize, start: Gfn, count: u64) -> Result<(u64, f64)> {
        let (mut violations, mut cycles) = (0, 0.0);
        let mut gfn = start.raw();
        while gfn < start.raw() + count {
            let size = match self.backing_of(vm, Gfn::new(gfn)) {
                Some((_, size)) => size,
                None => {
                    cycles += self.handle_violation(vm, Gfn::new(gfn))?;
                    violations += 1;
                    self.backing_of(vm, Gfn::new(gfn)).expect("a handled violation backs its frame").1
                }
            };
            // Skip the rest of the leaf that backs this frame.
            gfn = (gfn | (size.nr_pages() - 1)) + 1;
        }
        Ok((violations, cycles))
    }

    /// The host changes to the VMs' EPTs since the last call (the host
    /// kernel's shootdowns of the VMs' processes), as guest-frame ranges.
    pub fn drain_ept_changes(&mut self) -> Vec<EptChange> {
        let vms = &self.vms;
        let changes: Vec<EptChange> = self
            .host
            .drain_shootdowns()
            .filter_map(|s| {
                let vm = vms.iter().position(|v| v.host_asid == s.asid)?;
                Some(EptChange { vm, start: Gfn::new(s.start.raw()), end: Gfn::new(s.end.raw()) })
            })
            .collect();
        self.counters.invepts += changes.len() as u64;
        if self.deferred.is_empty() {
            return changes;
        }
        let mut all = std::mem::take(&mut self.deferred);
        all.extend(changes);
        all
    }

    /// Keeps a change that `drain_ept_changes` gave for the next call.
    pub fn defer_ept_change(&mut self, change: EptChange) {
        self.deferred.push(change);
    }

    /// Gives guest frames [start, start + count) back to the host (the
    /// host frees them and removes their EPT entries, as a balloon's
    /// MADV_DONTNEED does); the next reference faults them in again.
    pub fn discard(&mut self, vm: usize, start: Gfn, count: u64) -> Result<()> {
        let (addr, len) = (start.addr().as_host_virt(), count << 12);
        let host_asid = self.vms[vm].host_asid;
        if let Some(ksm) = self.ksm.as_deref_mut() {
            ksm.unmerge(&mut self.host, &self.vms[vm], start, count)?;
        }
        self.host.munmap(host_asid, addr, len)?;
        self.host.mmap(host_asid, addr, len, true, GUEST_MEM_VMA)
    }

    /// Guest frames in use by the guest (user pages and page tables) that
    /// the host has not backed: frames the guest allocated and nothing has
    /// touched yet (with first-touch backing, or a frame the guest's
    /// khugepaged copied into). A scan of guest memory: for reports.
    pub fn untouched_guest_frames(&self, vm: usize, guest: &Kernel) -> u64 {
        (0..guest.mem.nr_frames())
            .filter(|&f| {
                let owner = guest.mem.owner(Pfn::new(f));
                matches!(owner, FrameOwner::User { .. } | FrameOwner::PageTable { .. })
                    && self.backing_of(vm, Gfn::of_guest_kernel(Pfn::new(f))).is_none()
            })
            .count() as u64
    }

    /// Runs the host's daemons due by `now`, then ksmd (it compares the
    /// pages by `contents`, the VMs' declared data).
    pub fn tick(&mut self, now: f64, contents: Option<&Contents>) {
        self.host.tick(now);
        if let Some(ksm) = self.ksm.as_deref_mut() {
            ksm.run_due(&mut self.host, &self.vms, contents, now);
        }
    }

    /// The host's statistics, each under `host.` (`host.mem.mapped.4k`,
    /// `host.os.faults.thp`...), and `host.faults`.
    pub fn report(&self, out: &mut Stats) {
        let mut host = Stats::new();
        self.host.report(&crate::systems::idle_stats(), &mut host);
        out.extend(host.into_iter().map(|(k, v)| (format!("host.{k}"), v)));
        out.insert("host.faults".into(), Stat::Int(self.counters.faults));
        let c = &self.counters;
        put_ints(
            out,
            "host.",
            &[
                ("ept_scans", c.ept_scans),
                ("ept_cleared", c.ept_cleared),
                ("ept_splits", c.ept_splits),
                ("ept_collapses", c.ept_collapses),
                ("ept_collapse_refused", c.ept_collapse_refused),
            ],
        );
        out.insert("host.ept_remap_cycles".into(), Stat::Float(c.ept_remap_cycles));
        put_ints(out, "virt.", &[("invepts", self.counters.invepts)]);
        self.balloons.report(out);
        if let Some(ksm) = &self.ksm {
            ksm.report(out);
        }
    }

    pub fn reset_stats(&mut self) {
        self.host.reset_stats();
        self.counters = HostCounters::default();
        self.balloons.reset_stats();
        if let Some(ksm) = self.ksm.as_deref_mut() {
            ksm.reset_stats();
        }
    }
}
