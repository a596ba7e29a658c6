//! The hypervisor's state and its services to the VMs' memory: the host
//! kernel, the VMs (one host process each, whose page table is the EPT),
//! EPT violations as host faults, backing, host changes as guest-frame
//! ranges, copy-on-write through the policy whose page a store met; and
//! the interface of its policies (below). Its boot is `boot.rs`, its
//! report `report.rs`. (The policies' interface is in this file because
//! the hypervisor holds its policies and a policy's run holds the
//! hypervisor.)
//!
//! **Policies of the hypervisor**: what a host runs beside its kernel's
//! daemons over its VMs' memory (KSM, the balloon's policy; COPLACE's eKSM
//! and eBal, HugeScope's trackers and page-size policies), each a
//! [`HostPolicy`] registered as the guest systems are (its
//! [`HostRegistration`], a `host` line of the registry in
//! `systems/mod.rs`), its code in its system's folder (`systems/NAME/host`,
//! held at this layer by `tests/layers.rs`).
//!
//! A policy runs on the simulated clock at the end of each round, after
//! the host kernel's daemons ([`HostPolicy::run_due`]), with the
//! hypervisor's services in its [`HostCtx`]: the VMs and their EPTs (the
//! host kernel's page tables of the VMs' processes), the EPT's accessed
//! and dirty bits with their scan and clear (`Hypervisor::scan_ept_bits`),
//! the EPT-only split and collapse (`ept_split`, `ept_collapse`), the
//! host kernel for Linux's own splits, collapses and page migration
//! between tiers (`Kernel::migrate_page`), the guests' page contents, the
//! guests' kernels (the balloon takes their free frames), the other
//! policies (KSM's trees, [`HostCtx::policy`]), and the clock. What it
//! changes in an EPT reaches the VM's cores as INVEPTs at the round's end;
//! the VM exits it causes it charges with [`HostCtx::charge_exits`].
//! The hypervisor calls a policy back where its pages need it: a guest
//! store to a page it write-protected ([`HostPolicy::write_fault`]), a
//! range of guest memory the host is about to drop
//! ([`HostPolicy::before_discard`]).

use std::any::Any;

use super::contents::Contents;
use super::costs::{Backing, VirtCosts};
use crate::error::{Error, Result};
use crate::os::Kernel;
use crate::paging::PageTable;
use crate::phys::FrameOwner;
use crate::stat::{population_stddev, put_ints, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::{Asid, Gfn, Order, PageSize, Pfn};

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
    /// The host's policies (`HostPolicy`, below), in the registry's order: none
    /// costs nothing.
    pub(super) policies: Vec<Box<dyn HostPolicy>>,
    /// The VMs' balloons (`balloon.rs`), empty until one inflates.
    pub balloons: Balloons,
    /// Whether a policy maps guest memory read-only (KSM): stores check
    /// the EPT's permission only then.
    pub write_protects: bool,
    /// Whether an EPT leaf may be a leaf extension (a system of the host's
    /// chain with `Caps::ept_leaf_ext`, or KSM that punches): the 2D walker
    /// then looks for combined entries over 4 KiB EPT translations.
    pub host_perforated: bool,
    /// Host changes to one VM's EPT that a fault on another VM's core
    /// caused: they wait for the end of the round (as a native fault's
    /// shootdowns reach the other cores then).
    pub(super) deferred: Vec<EptChange>,
    /// VM exits the policies charged, not yet delivered: (VM, exits,
    /// cycles).
    pub(super) pending_exits: Vec<(usize, u64, f64)>,
    /// The simulated clock's frequency (the policies' periods).
    pub freq_ghz: f64,
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
    /// Inlined: every guest frame's first touch asks it twice
    /// (`back_range`), and LLVM stopped inlining it across this module.
    #[inline]
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
        self.write_protects && self.ept(vm).lookup(gfn.addr().as_host_virt()).is_some_and(|m| !m.pte.writable())
    }

    /// A guest store to `gfn` of VM `vm` met a write-protected EPT leaf: a
    /// VM exit, and the policy whose page it is gives the VM a writable
    /// one (KSM copies its page, copy-on-write). Returns the cycles it
    /// cost.
    pub fn break_cow(&mut self, vm: usize, gfn: Gfn, mut contents: Option<&mut Contents>) -> Result<f64> {
        let (frame, _) = self.backing_of(vm, gfn).expect("a write-protected frame is backed");
        let v = self.vms[vm];
        for p in self.policies.iter_mut() {
            if let Some(copy) = p.write_fault(&mut self.host, &v, gfn, frame, contents.as_deref_mut())? {
                self.counters.faults += 1;
                return Ok(self.costs.vm_exit + self.costs.ept_violation + copy);
            }
        }
        unreachable!("a write-protected EPT leaf whose page no policy owns ({gfn} of VM {vm})")
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
        if !self.write_protects {
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
}

// ---- the VMs' balloons: what they hold (the mechanism is `balloon.rs`)

/// The balloons' statistics.
pub const BALLOON_STATS: &[StatTable] = &[StatTable {
    section: Section::Virtualization,
    stats: &[
        StatDecl::count("balloon.pages", "guest pages held by the VMs' balloons (all VMs; end state)")
            .pages()
            .machine(),
        StatDecl::count(
            "host.balloon.freed",
            "host frames the balloons' inflations freed (the backed ones among the frames they took, and the EPT \
             page-table pages left empty)",
        )
        .pages()
        .machine(),
        StatDecl::count(
            "host.balloon.cycles",
            "VM exits of the balloon drivers' notifications (`virt.costs.vm_exit` each), on no vCPU's clock; \
             their INVEPTs are in `cycles.virt`",
        )
        .cycles()
        .machine(),
        StatDecl::count(
            "host.balloon.deflated",
            "with balloons that deflate or even colors (`virt.host.balloon`) only: guest pages the balloons gave \
             back to their guests, unbacked until touched",
        )
        .pages()
        .machine(),
        StatDecl::count(
            "host.balloon.taken_color_stddev",
            "with balloons that deflate or even colors only: the population standard deviation, over the guest's \
             colors (its color map; VMs counted together by color index), of the guest pages the inflations took \
             per color",
        )
        .pages()
        .machine(),
        StatDecl::count(
            "host.balloon.freed_color_stddev",
            "with balloons that deflate or even colors only: the population standard deviation, over the host \
             placement's colors (COPLACE's host colors, else `virt.host.coloring.bits`), of the host frames the \
             inflations freed (backed guest pages) per color",
        )
        .pages()
        .machine(),
    ],
}];

/// Every VM's balloon.
#[derive(Debug, Default)]
pub struct Balloons {
    /// By VM: the guest blocks each balloon holds.
    pub(super) blocks: Vec<Vec<(Pfn, Order)>>,
    pub(super) counters: BalloonCounters,
    /// Pages taken and host frames freed, by color (eBal's statistics).
    pub(super) colors: BalloonColors,
    /// Whether eBal's statistics are reported (a policy that evens colors
    /// or deflates sets it at boot).
    pub ebal: bool,
}

#[derive(Debug, Default, Clone)]
pub(super) struct BalloonCounters {
    /// Host frames freed by inflations.
    pub(super) freed: u64,
    pub(super) cycles: f64,
    /// Guest pages deflations gave back to their guests.
    pub(super) deflated: u64,
}

/// The inflations' pages by color: the guest pages taken, each by its
/// guest's color (VMs' colors counted together, by index), and the host
/// frames freed, by the host placement's colors.
#[derive(Debug, Default, Clone)]
pub(super) struct BalloonColors {
    taken: Vec<u64>,
    freed: Vec<u64>,
}

impl BalloonColors {
    /// A guest page of `color` (of `nr` colors) taken.
    pub(super) fn taken(&mut self, color: u32, nr: u32) {
        count_in(&mut self.taken, color, nr);
    }

    /// A host frame of `color` (of `nr` colors) freed.
    pub(super) fn freed(&mut self, color: u32, nr: u32) {
        count_in(&mut self.freed, color, nr);
    }
}

fn count_in(counts: &mut Vec<u64>, color: u32, nr: u32) {
    if counts.len() < nr as usize {
        counts.resize(nr as usize, 0);
    }
    counts[color as usize] += 1;
}

impl Balloons {
    /// Guest pages in VM `vm`'s balloon.
    pub fn pages(&self, vm: usize) -> u64 {
        self.blocks.get(vm).map_or(0, |b| b.iter().map(|(_, o)| o.nr_pages()).sum())
    }

    /// `balloon.pages` (all VMs' balloons), `host.balloon.freed` and
    /// `host.balloon.cycles`.
    pub fn report(&self, out: &mut Stats) {
        let pages = (0..self.blocks.len()).map(|vm| self.pages(vm)).sum();
        put_ints(out, "", &[("balloon.pages", pages), ("host.balloon.freed", self.counters.freed)]);
        out.insert("host.balloon.cycles".into(), Stat::Float(self.counters.cycles));
        if self.ebal {
            out.insert("host.balloon.deflated".into(), Stat::Int(self.counters.deflated));
            let (taken, freed) = (population_stddev(&self.colors.taken), population_stddev(&self.colors.freed));
            out.insert("host.balloon.taken_color_stddev".into(), Stat::Float(taken));
            out.insert("host.balloon.freed_color_stddev".into(), Stat::Float(freed));
        }
    }

    pub fn reset_stats(&mut self) {
        self.counters = BalloonCounters::default();
        self.colors = BalloonColors::default();
    }
}

impl Hypervisor {
    /// Whether guest frame `gfn` of VM `vm` is in its balloon.
    pub fn in_balloon(&self, vm: usize, gfn: Gfn) -> bool {
        let blocks = self.balloons.blocks.get(vm).map_or(&[][..], Vec::as_slice);
        blocks.iter().any(|&(pfn, order)| (pfn.raw()..pfn.raw() + order.nr_pages()).contains(&gfn.raw()))
    }
}

/// A policy of the host.
pub trait HostPolicy: std::fmt::Debug + Send {
    fn name(&self) -> &'static str;

    /// Runs what is due by `ctx.now` (cycles of the simulated clock).
    fn run_due(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()>;

    /// Once, when the VMs have booted and before any workload runs (a
    /// balloon held from boot).
    fn boot(&mut self, _ctx: &mut HostCtx<'_, '_>) -> Result<()> {
        Ok(())
    }

    /// Whether it maps guest memory read-only (KSM's pages): the walker
    /// then checks a store's EPT permission, and a store that meets one is
    /// this policy's [`HostPolicy::write_fault`]. Asked once, at boot.
    fn write_protects(&self) -> bool {
        false
    }

    /// Whether it may make EPT leaves leaf extensions (KSM's punched
    /// perforated pages). Asked once, at boot.
    fn makes_ept_leaf_ext(&self) -> bool {
        false
    }

    /// A guest store to `gfn` of `vm` met a write-protected EPT leaf mapping
    /// host `frame`: if the page is this policy's, it gives the VM a
    /// writable one and returns the host's cycles (the VM exit is the
    /// caller's); `None` when the page is not its.
    fn write_fault(
        &mut self,
        _host: &mut Kernel,
        _vm: &Vm,
        _gfn: Gfn,
        _frame: Pfn,
        _contents: Option<&mut Contents>,
    ) -> Result<Option<f64>> {
        Ok(None)
    }

    /// The host is about to drop its backing of guest frames [start,
    /// start + count) of `vm` (a balloon's discard, a munmap): what the
    /// policy holds there goes first.
    fn before_discard(&mut self, _host: &mut Kernel, _vm: &Vm, _start: Gfn, _count: u64) -> Result<()> {
        Ok(())
    }

    /// Its statistics (declared in its registration).
    fn report(&self, _out: &mut Stats) {}

    /// Zeroes its counters (the end of warm-up); its state stays.
    fn reset_stats(&mut self) {}

    /// Itself, for another policy that reads its state
    /// ([`HostCtx::policy`]).
    fn as_any(&self) -> &dyn Any;
}

/// A host policy as the registry knows it; `T` is its table (under
/// `virt.host`, keyed by its name: `virt.host.ksm`).
#[derive(Debug, Clone, Copy)]
pub struct HostRegistration<T: 'static> {
    pub name: &'static str,
    /// Builds it from its table for the host, or `None` when the table
    /// leaves it off.
    pub build: fn(&T, &HostBuild) -> Option<Box<dyn HostPolicy>>,
    /// Its statistics, declared beside its counters.
    pub stats: &'static [StatTable],
}

/// What a host policy's build reads beside its table.
#[derive(Debug, Clone, Copy)]
pub struct HostBuild {
    /// Whether a system of the host's chain keeps its huge pages from
    /// being split by anyone else (`Caps::pins_huge_pages`: hugetlb's).
    pub pins_huge_pages: bool,
    /// The clock, to turn periods in milliseconds into cycles.
    pub freq_ghz: f64,
}

/// Some of the host's policies, lent.
pub type Policies<'a> = &'a mut [Box<dyn HostPolicy>];

/// What a policy's run has: the hypervisor and its services, the guests,
/// the VMs' contents, the other policies, the clock.
#[derive(Debug)]
pub struct HostCtx<'a, 'g> {
    /// The hypervisor (its policies apart: the other ones are `others`).
    pub hv: &'a mut Hypervisor,
    /// Each VM's guest kernel, by VM.
    pub guests: &'a mut [&'g mut Kernel],
    /// The guest frames' content identities, when some workload declares
    /// them.
    pub contents: Option<&'a Contents>,
    /// The simulated clock (cycles) and its frequency.
    pub now: f64,
    pub freq_ghz: f64,
    /// The policies before and after this one.
    pub others: (Policies<'a>, Policies<'a>),
}

impl HostCtx<'_, '_> {
    /// Another policy of the host, by type (e.g. HugeScope reading KSM's
    /// trees).
    pub fn policy<T: HostPolicy + 'static>(&self) -> Option<&T> {
        self.others.0.iter().chain(self.others.1.iter()).find_map(|p| p.as_any().downcast_ref::<T>())
    }

    /// The host drops its backing of guest frames [start, start + count)
    /// of VM `vm` (the other policies give up what they hold there first),
    /// as `Hypervisor::discard` does outside a policy's run.
    pub fn discard(&mut self, vm: usize, start: Gfn, count: u64) -> Result<()> {
        let v = self.hv.vms[vm];
        for p in self.others.0.iter_mut().chain(self.others.1.iter_mut()) {
            p.before_discard(&mut self.hv.host, &v, start, count)?;
        }
        self.hv.drop_backing(vm, start, count)
    }

    /// The policy's work made VM `vm` exit `exits` times, costing its
    /// vCPUs `cycles` in all: charged at the round's end to the VM's first
    /// vCPU (`virt.vm_exits`, `cycles.virt`), which serialises there.
    pub fn charge_exits(&mut self, vm: usize, exits: u64, cycles: f64) {
        self.hv.pending_exits.push((vm, exits, cycles));
    }
}

impl Hypervisor {
    /// Runs the host's policies due by `now`, in the registry's order,
    /// each with the others apart.
    pub fn run_policies(&mut self, now: f64, guests: &mut [&mut Kernel], contents: Option<&Contents>) -> Result<()> {
        self.each_policy(now, guests, contents, |p, ctx| p.run_due(ctx))
    }

    /// Runs each policy's [`HostPolicy::boot`], in the registry's order,
    /// at clock 0 (the VMs booted, no workload ran yet).
    pub fn boot_policies(&mut self, guests: &mut [&mut Kernel]) -> Result<()> {
        self.each_policy(0.0, guests, None, |p, ctx| p.boot(ctx))
    }

    /// Runs `f` on each policy in the registry's order, with the others
    /// apart; stops at the first error.
    fn each_policy(
        &mut self,
        now: f64,
        guests: &mut [&mut Kernel],
        contents: Option<&Contents>,
        mut f: impl FnMut(&mut Box<dyn HostPolicy>, &mut HostCtx) -> Result<()>,
    ) -> Result<()> {
        let mut policies = std::mem::take(&mut self.policies);
        let mut result = Ok(());
        for i in 0..policies.len() {
            let (before, rest) = policies.split_at_mut(i);
            let (me, after) = rest.split_first_mut().expect("i < len");
            let freq_ghz = self.freq_ghz;
            let mut ctx = HostCtx { hv: self, guests, contents, now, freq_ghz, others: (before, after) };
            result = f(me, &mut ctx);
            if result.is_err() {
                break;
            }
        }
        self.policies = policies;
        result
    }

    /// Runs the host kernel's daemons due by `now`, then the host's
    /// policies (with the guests' kernels and the VMs' contents).
    pub fn tick(&mut self, now: f64, guests: &mut [&mut Kernel], contents: Option<&Contents>) -> Result<()> {
        self.host.tick(now);
        self.run_policies(now, guests, contents)
    }

    /// Runs `f` with the hypervisor's services as a policy has them, every
    /// policy among the others (a caller outside any policy's run: a test,
    /// the engine's services).
    pub fn with_ctx<R>(&mut self, guests: &mut [&mut Kernel], now: f64, f: impl FnOnce(&mut HostCtx) -> R) -> R {
        let mut policies = std::mem::take(&mut self.policies);
        let freq_ghz = self.freq_ghz;
        let r = {
            let others = (&mut policies[..], &mut [][..]);
            f(&mut HostCtx { hv: self, guests, contents: None, now, freq_ghz, others })
        };
        self.policies = policies;
        r
    }

    /// The host's policy of type `T`, if it runs.
    pub fn policy<T: HostPolicy + 'static>(&self) -> Option<&T> {
        self.policies.iter().find_map(|p| p.as_any().downcast_ref::<T>())
    }

    /// The host's policies, in the registry's order.
    pub fn policies(&self) -> &[Box<dyn HostPolicy>] {
        &self.policies
    }

    /// The VM exits the policies charged since the last call: (VM, exits,
    /// cycles).
    pub fn drain_exits(&mut self) -> Vec<(usize, u64, f64)> {
        std::mem::take(&mut self.pending_exits)
    }

    /// Guest frames [start, start + count) of VM `vm` go back to the host
    /// (the host frees them and removes their EPT entries, as a balloon's
    /// MADV_DONTNEED does; the policies give up what they hold there
    /// first); the next reference faults them in again.
    pub fn discard(&mut self, vm: usize, start: Gfn, count: u64) -> Result<()> {
        let v = self.vms[vm];
        for p in self.policies.iter_mut() {
            p.before_discard(&mut self.host, &v, start, count)?;
        }
        self.drop_backing(vm, start, count)
    }

    /// The host unmaps guest frames [start, start + count) of VM `vm` and
    /// maps the range again, unbacked.
    pub(super) fn drop_backing(&mut self, vm: usize, start: Gfn, count: u64) -> Result<()> {
        let (addr, len) = (start.addr().as_host_virt(), count << 12);
        let host_asid = self.vms[vm].host_asid;
        self.host.munmap(host_asid, addr, len)?;
        self.host.mmap(host_asid, addr, len, true, GUEST_MEM_VMA)
    }
}
