//! The two-dimensional walker: the MMU path of one access in a VM.
//!
//! The guest's page tables map guest-virtual to guest-physical addresses;
//! the EPT (the hypervisor's page table of the VM process, `virt`) maps
//! guest-physical to host-physical ones. Every guest table the walk reads
//! is at a guest-physical address, so before reading it the walker
//! translates the table's guest frame through the EPT; and the data's
//! guest frame too. With no caching a guest walk of g levels over EPT
//! walks of h levels reads g (h + 1) + h = (g + 1)(h + 1) - 1 entries: 24
//! for 4 KiB on 4 KiB, 19 for 4 KiB on 2 MiB or 2 MiB on 4 KiB, 15 for
//! 2 MiB on 2 MiB. Every entry read is a host-physical reference through
//! the caches (`RefTag::GuestWalk`, `RefTag::EptWalk`).
//!
//! What each structure caches (each sized by configuration, each can be
//! switched off):
//! - the TLBs: the combined translation, guest-virtual to host-physical,
//!   at the smaller of the guest and host page sizes (a guest 2 MiB page
//!   on host 4 KiB pages splinters into 4 KiB entries), tagged with
//!   `virt::hw_tag(vpid, asid)`;
//! - the guest paging-structure caches (`machine.pwc`, the core's `Pwc`,
//!   same tag): keyed by guest-virtual address, they hold the
//!   *guest-physical* frame of the next guest table, so a hit still
//!   translates that table's frame through the EPT (the nested TLB, else
//!   an EPT walk). A host change therefore never makes them stale;
//! - the EPT paging-structure caches (`machine.ept_pwc`, keyed by
//!   guest-physical address): the host-physical frame of the next EPT
//!   table;
//! - the nested TLB (`machine.nested_tlb`): guest frame to host frame, as
//!   one EPT leaf says.
//!
//! An EPT violation (a guest frame the host has not backed) ends the walk;
//! the host backs the frame (a VM exit, `virt::Hypervisor`) and the walk
//! restarts. A guest page fault goes to the guest kernel, as natively;
//! with `virt.backing = "zeroing"` the frames it allocated are backed
//! right away (its zeroing touches them).
//!
//! Chosen once per run: the engine's translation stage for a virtualized
//! run is [`Simulation::translate_stage_virt`], and the native stage has
//! no test of "virtualized?".

use super::core::Core;
use super::mmu::{Mmu, Request};
use super::walk2d_contig::{self, GuestLeaf};
use super::Simulation;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::hw::core_stats::CoreStats;
use crate::hw::nested_tlb::{NestedHit, NestedTlb, NestedTlbConfig};
use crate::hw::pwc::{Pwc, PwcConfig};
use crate::hw::refs::{RefBuf, RefTag};
use crate::hw::tlb::{TlbEntry, TlbLookup};
use crate::os::{Boot, Kernel, Shootdown};
use crate::paging::nested_walk::{push_ept_ref, EptMiss};
use crate::paging::pagetable::{level_size, table_index};
use crate::paging::pte::{ACCESSED, DIRTY, HUGE};
use crate::paging::{LeafSlot, NodeId, PageTable};
use crate::systems::{self, EPT_LEAF_STEPS, GUEST_LEAF_STEPS};
use crate::units::{Asid, Gfn, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::virt::{hw_tag, Backing, Contents, EptChange, Hypervisor, Writes};

/// The second dimension's hardware of one core.
#[derive(Debug)]
pub struct NestedHw {
    pub ept_pwc: Pwc,
    pub ntlb: NestedTlb,
    pub ept_pwc_latency: f64,
    pub ntlb_latency: f64,
    /// The VM this core is a vCPU of (its VPID less 1: the hypervisor's
    /// index of the VM).
    pub vm: usize,
    pub vpid: u16,
    /// The VM's process in the host (`Hypervisor::host_asid(vm)`, kept
    /// here for the EPT walk).
    pub host_asid: Asid,
}

impl NestedHw {
    /// `machine.pwc.enabled = false` switches off the paging-structure
    /// caches of both dimensions; `ept_pwc.enabled` the EPT's alone.
    pub fn new(
        ept_pwc: &PwcConfig,
        guest_pwc: &PwcConfig,
        ntlb: &NestedTlbConfig,
        ept_levels: u8,
        vpid: u16,
        seed: u64,
    ) -> Self {
        let mut cfg = ept_pwc.clone();
        cfg.enabled &= guest_pwc.enabled;
        NestedHw {
            ept_pwc: Pwc::new(&cfg, ept_levels, seed ^ 0xe97),
            ntlb: NestedTlb::new(ntlb, seed ^ 0x7e57),
            // A switched-off structure is not looked up: it costs nothing.
            ept_pwc_latency: cfg.lookup_latency() as f64,
            ntlb_latency: if ntlb.entries > 0 { ntlb.latency as f64 } else { 0.0 },
            vm: vpid as usize - 1,
            vpid,
            // (The host's numbering of the VMs' processes; `boot_virt` sets it.)
            host_asid: vpid,
        }
    }

    /// INVEPT for a host change: the VM's combined TLB entries (they are
    /// keyed by guest-virtual address, so all of them: an all-context
    /// flush of the VPID), and by guest-physical range the nested TLB and
    /// the EPT paging-structure caches. The guest's paging-structure caches
    /// hold guest-physical frames: a host change leaves them right.
    pub fn invept(&mut self, mmu: &mut Mmu, host_asid: Asid, guest_asids: &[Asid], change: EptChange) {
        for &asid in guest_asids {
            mmu.tlb.invalidate_asid(hw_tag(self.vpid, asid));
        }
        self.ntlb.invalidate_range(self.vpid, change.start, change.end);
        let (start, end) = (change.start.addr().as_host_virt().vpn(), change.end.addr().as_host_virt().vpn());
        self.ept_pwc.invalidate_range(host_asid, start, end);
    }
}

/// What a virtualized run adds to the engine: the hypervisor, each core's
/// second-dimension hardware, and the guest kernels of the VMs after the
/// first (the first VM's is the engine's `kernel`, so that one VM runs
/// exactly as before).
#[derive(Debug)]
pub struct VirtRun {
    pub hv: Hypervisor,
    pub cores: Vec<NestedHw>,
    /// Each VM's guest address spaces (one per vCPU's process).
    pub guest_asids: Vec<Vec<Asid>>,
    /// The guest kernels of VMs 1, 2... (index 0 is VM 1).
    pub other_guests: Vec<Kernel>,
    /// The guest frames' content identities, when some workload declares
    /// what it writes (`workload.contents`); None costs nothing.
    pub contents: Option<Box<Contents>>,
    /// What each core's process writes.
    pub page_data: Vec<Writes>,
}

impl VirtRun {
    /// The number of VMs.
    pub fn nr_vms(&self) -> usize {
        self.hv.vms.len()
    }

    /// The end of warm-up.
    pub fn reset_stats(&mut self) {
        self.hv.reset_stats();
        for guest in &mut self.other_guests {
            guest.reset_stats();
        }
        for n in &mut self.cores {
            n.ept_pwc.reset_stats();
            n.ntlb.reset_stats();
        }
    }
}

/// The guest kernels of the VMs after the first (none without
/// `[[vms]]`), each over its own guest memory and with its own seed.
pub(super) fn boot_other_guests(cfg: &SimConfig) -> Result<Vec<Kernel>> {
    let m = &cfg.machine;
    cfg.guests()
        .iter()
        .enumerate()
        .skip(1)
        .map(|(vm, g)| {
            let boot = Boot {
                frames: g.guest_mem.bytes() >> 12,
                max_order: m.max_order,
                paging_levels: m.paging_levels,
                colors: cfg.color_map_of(g.os, &g.os_key)?,
                costs: g.os.fault_cost.clone(),
                footprint: super::vm_footprint(cfg, vm, &g.os_key)?,
                // The tiers are the host's: a guest sees one node.
                tiers: Vec::new(),
                memory_latency: m.memory.latency,
                host_view: None,
            };
            crate::systems::boot(g.os, boot, m.freq_ghz, cfg.run.seed.wrapping_add(vm as u64 * 0x9e37_79b9))
        })
        .collect()
}

/// The hypervisor of a virtualized run (None for a native one): the host
/// over `machine.phys_mem` with one process per VM, each core's
/// second-dimension hardware; with zeroing backing, the guests' root
/// tables backed (each guest zeroed them as it created its processes).
/// `guest` is the first VM's kernel, `other_guests` the rest's.
pub(super) fn boot_virt(
    cfg: &SimConfig,
    guest: &mut Kernel,
    other_guests: Vec<Kernel>,
    cores: &[Core],
) -> Result<Option<Box<VirtRun>>> {
    let v = &cfg.virt;
    if !v.enabled {
        return Ok(None);
    }
    let m = &cfg.machine;
    // The host's own seed, so that its fragmentation is not the guest's.
    let guest_mems: Vec<u64> = cfg.guests().iter().map(|g| g.guest_mem.bytes()).collect();
    let hv = Hypervisor::boot(v, &guest_mems, super::host_boot(cfg)?, m.freq_ghz, cfg.run.seed ^ 0x4057)?;
    let nested = cores
        .iter()
        .map(|c| {
            let vpid = hv.vms[c.vm].vpid;
            let n = NestedHw::new(
                &m.ept_pwc,
                &m.pwc,
                &m.nested_tlb,
                v.ept_levels,
                vpid,
                cfg.run.seed.wrapping_add(c.id as u64),
            );
            NestedHw { host_asid: hv.host_asid(c.vm), ..n }
        })
        .collect();
    let mut guest_asids = vec![Vec::new(); guest_mems.len()];
    for c in cores {
        guest_asids[c.vm].push(c.asid);
    }
    // Per core: its first program's (validation keeps contents away from
    // programs in sequence).
    let firsts = cfg.workload_list().into_iter().filter(|w| w.after.is_none());
    let page_data: Vec<Writes> = firsts.map(|w| Writes::of(w.contents, w.shared.as_ref())).collect();
    let contents = page_data.iter().any(|d| !d.is_none()).then(Box::<Contents>::default);
    let mut run = VirtRun { hv, cores: nested, guest_asids, other_guests, contents, page_data };
    if v.backing == Backing::Zeroing {
        for c in cores {
            let kernel = if c.vm == 0 { &mut *guest } else { &mut run.other_guests[c.vm - 1] };
            let root = Gfn::of_guest_kernel(kernel.page_table_mut(c.asid).root_frame());
            run.hv.back_range(c.vm, root, 1)?;
        }
    }
    let mut guests: Vec<&mut Kernel> = std::iter::once(guest).chain(run.other_guests.iter_mut()).collect();
    run.hv.boot_policies(&mut guests)?;
    Ok(Some(Box::new(run)))
}

/// Why a 2D walk ended without a translation.
enum Walk2d {
    Leaf(crate::systems::ExtEntry),
    /// A combined entry its kind's owner caches, and may have to resolve
    /// the access through (a perforated page's: `walk2d_ext.rs`).
    Resolve(crate::systems::ExtEntry),
    /// The guest's page table has no translation: a guest page fault.
    GuestFault,
    /// The EPT has no translation for this guest frame.
    EptViolation(Gfn),
    /// A store to a guest frame whose EPT leaf is read-only (a KSM page):
    /// an EPT violation the host serves by copying.
    WriteProtected(Gfn),
    /// The check mode found a cached entry that no longer matches the
    /// tables (what it says).
    Stale(String),
}

impl From<EptMiss> for Walk2d {
    fn from(miss: EptMiss) -> Walk2d {
        match miss {
            EptMiss::Violation(gfn) => Walk2d::EptViolation(gfn),
            EptMiss::Stale(what) => Walk2d::Stale(what),
        }
    }
}

/// One core's view of both dimensions for one access.
#[derive(Debug)]
pub struct Walker2d<'a> {
    pub mmu: &'a mut Mmu,
    pub nested: &'a mut NestedHw,
    pub guest: &'a mut Kernel,
    pub hv: &'a mut Hypervisor,
    pub refs: &'a mut RefBuf,
    pub stats: &'a mut CoreStats,
    /// The VM's guest address spaces (an INVEPT drops all their entries).
    pub guest_asids: &'a [Asid],
    /// The content identities and what this core's process writes, when
    /// it declares it.
    pub contents: Option<(&'a mut Contents, Writes)>,
}

impl Walker2d<'_> {
    /// Translates a guest-virtual address to the host frame of its 4 KiB
    /// page, through the combined TLBs, else a 2D walk (handling guest
    /// faults and EPT violations on the way).
    pub fn translate(&mut self, req: Request) -> Result<Pfn> {
        let Request { asid, vaddr, write, instr } = req;
        let tag = hw_tag(self.nested.vpid, asid);
        let hit = match self.mmu.tlb.lookup(tag, vaddr, instr) {
            TlbLookup::L1(t) => Some(t),
            TlbLookup::L2(t) => {
                self.stats.tlb_l1_misses(instr);
                self.stats.cycles_translation += self.mmu.l2_tlb_latency;
                Some(t)
            }
            TlbLookup::Miss => {
                self.stats.tlb_l1_misses(instr);
                self.stats.tlb_l2_misses(instr);
                self.stats.cycles_translation += self.mmu.l2_tlb_latency;
                None
            }
            // A combined perforated entry whose filter does not answer: the
            // bitmap, then maybe a hole walk (or walk again).
            TlbLookup::Resolve => {
                self.stats.tlb_l1_misses(instr);
                self.stats.cycles_translation += self.mmu.l2_tlb_latency;
                if let Some(frame) = self.resolve_ext(req, tag, None)? {
                    return Ok(frame);
                }
                None
            }
        };
        if let Some(t) = hit {
            // A combined entry of a write-protected EPT leaf is never dirty:
            // a store through it takes this (existing) cold path.
            let copied = write && !t.dirty && self.store_through_clean(asid, tag, vaddr, t.writable)?;
            if !copied {
                if self.mmu.check {
                    check_combined(self.guest, self.hv, self.nested.vm, asid, vaddr, t.pfn)?;
                    check_write_protection(self.guest, self.hv, self.nested.vm, asid, vaddr, t.dirty)?;
                }
                return Ok(t.pfn);
            }
        }
        loop {
            match self.walk(asid, tag, vaddr, write) {
                Walk2d::Leaf(entry) => {
                    self.mmu.tlb.fill_after_walk(entry, vaddr, instr);
                    return Ok(entry.frame_of(vaddr));
                }
                Walk2d::Resolve(entry) => {
                    if let Some(frame) = self.ext_leaf(req, tag, entry)? {
                        return Ok(frame);
                    }
                }
                miss => self.settle_miss(miss, asid, tag, vaddr, write)?,
            }
        }
    }

    /// A walk that gave no translation: the guest fault or EPT violation is
    /// handled (the caller walks again), or the check mode's finding ends
    /// the run.
    fn settle_miss(&mut self, miss: Walk2d, asid: Asid, tag: Asid, vaddr: VirtAddr, write: bool) -> Result<()> {
        match miss {
            Walk2d::GuestFault => self.guest_fault(asid, tag, vaddr, write),
            Walk2d::EptViolation(gfn) => {
                self.violation(gfn)?;
                self.stats.ept_violations_walk += 1;
                Ok(())
            }
            Walk2d::WriteProtected(gfn) => self.copy_on_write(gfn),
            Walk2d::Stale(what) => Err(Error::Workload(format!("stale translation: {what}"))),
            Walk2d::Leaf(_) | Walk2d::Resolve(_) => unreachable!("a translation is not a miss"),
        }
    }

    /// The guest walk; each guest table's frame goes through the EPT first.
    fn walk(&mut self, asid: Asid, tag: Asid, vaddr: VirtAddr, write: bool) -> Walk2d {
        let Walker2d { mmu, nested, guest, hv, refs, stats, .. } = self;
        stats.walks += 1;
        let pt = guest.page_table_mut(asid);
        let hit = mmu.pwc.lookup(tag, vaddr);
        stats.cycles_translation += mmu.walk_latency;
        let mut node = if hit.skip_to_level < pt.levels() {
            stats.pwc_hits += 1;
            let node = pt.node_from_handle(hit.skip_to_level, hit.handle);
            if mmu.check && hit.table != pt.node_frame(node) {
                return Walk2d::Stale(format!("a guest paging-structure-cache entry for {vaddr} names a freed table"));
            }
            node
        } else {
            pt.root()
        };
        let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
        let check = mmu.check;
        let mut ept = Ept { nested, hv, refs, stats, check };
        let GuestLeaf { frame, size, writable, dirty, newly_dirty, contig } = loop {
            if pt.table_leaf_ext(node) & GUEST_LEAF_STEPS != 0 {
                return ext::leaf_ext_step(mmu, &mut ept, pt, node, tag, vaddr, write, self.contents.as_mut());
            }
            // With EPT A/D on, reads of guest tables count as stores (SDM 28.2.4).
            let table = match ept.translate(Gfn::of_guest_kernel(pt.node_frame(node)), true) {
                Ok((table, ..)) => table,
                Err(miss) => return miss.into(),
            };
            let level = pt.node_level(node);
            if level == 1 {
                let (pte, at) = pt.read_leaf_and_set(node, vaddr, bits);
                ept.push_guest(table, at);
                if !pte.present() {
                    return Walk2d::GuestFault;
                }
                break GuestLeaf::of(pte, PageSize::Size4K, write);
            }
            let (pte, at, child) = pt.read_upper(node, vaddr);
            ept.push_guest(table, at);
            if !pte.present() {
                return Walk2d::GuestFault;
            }
            if pte.is_huge() {
                pt.set_bits(LeafSlot { node, index: table_index(vaddr, level), level }, bits);
                break GuestLeaf::of(pte, level_size(level), write);
            }
            let child = child.expect("a present non-leaf entry has a child table");
            mmu.pwc.fill(tag, vaddr, level, pte.pfn(), child.handle());
            node = child;
        };
        if newly_dirty {
            if let Some((contents, data)) = self.contents.as_mut() {
                let vbase = vaddr.align_down(size.bytes()).vpn();
                contents.written(ept.nested.vm, Gfn::of_guest_kernel(frame), size.nr_pages(), vbase, *data);
            }
        }
        // The data's guest frame, then the combined entry at the smaller
        // of the two reaches (pages or contiguous ranges: both map that
        // range contiguously, `walk2d_contig`).
        let data_gfn = Gfn::of_guest_kernel(frame.add((vaddr.raw() & (size.bytes() - 1)) >> 12));
        let (host_frame, host_size, host_writable, mut host_dirty) = match ept.translate(data_gfn, write) {
            Ok(t) => t,
            Err(miss) => return miss.into(),
        };
        if dirty && host_writable && !host_dirty {
            // A nested-TLB entry filled clean: the EPT leaf may be dirty since.
            host_dirty =
                ept.hv.refresh_ntlb_dirty(ept.nested.vm, &mut ept.nested.ntlb, data_gfn, host_frame, host_size);
        }
        if write && !host_writable {
            return Walk2d::WriteProtected(data_gfn);
        }
        if host_size == PageSize::Size4K && size != PageSize::Size4K && ept.hv.host_perforated {
            let perms = (writable && host_writable, dirty && host_writable && host_dirty);
            if let Some(entry) = ext::combined_over_host(&mut ept, tag, vaddr, data_gfn, perms) {
                return Walk2d::Resolve(entry);
            }
        }
        let guest_reach = if contig { walk2d_contig::guest_contiguous_reach(mmu, size) } else { size.into() };
        let combined = walk2d_contig::combined_reach(mmu, ept.hv, ept.nested.vm, guest_reach, data_gfn, host_size);
        let vbase = vaddr.align_down(combined.bytes()).vpn();
        let base = Pfn::new(host_frame.raw() - vaddr.vpn().offset_from(vbase));
        if check {
            if let Some(what) = walk2d_contig::check_range(guest, ept.hv, ept.nested.vm, asid, vaddr, combined, base) {
                return Walk2d::Stale(what);
            }
        }
        // Permissions combine: a read-only EPT leaf makes a clean,
        // read-only entry, so the next store through it faults; a clean EPT
        // leaf a clean one, so the next store sets its dirty bit.
        let entry =
            TlbEntry::page(tag, vbase, combined, base, writable && host_writable, dirty && host_writable && host_dirty);
        Walk2d::Leaf(entry)
    }

    /// An EPT violation: the host backs the frame; the VM's translations a
    /// host change removed are dropped on this core (the others get them
    /// at the end of the round).
    fn violation(&mut self, gfn: Gfn) -> Result<()> {
        let cycles = self.hv.handle_violation(self.nested.vm, gfn)?;
        self.count_violations(1, cycles);
        self.apply_ept_changes();
        Ok(())
    }

    /// A store to a KSM page: the host copies it (a VM exit, the copy);
    /// the INVEPT of the change is applied to this core now, to the VM's
    /// others at the end of the round.
    #[cold]
    #[inline(never)]
    fn copy_on_write(&mut self, gfn: Gfn) -> Result<()> {
        let contents = self.contents.as_mut().map(|(c, _)| &mut **c);
        let cycles = self.hv.break_cow(self.nested.vm, gfn, contents)?;
        self.count_violations(1, cycles);
        self.apply_ept_changes();
        Ok(())
    }

    /// A store through a TLB entry that is not dirty: a KSM page's
    /// (`writable` false and the EPT leaf read-only) is copied, and the
    /// caller walks again (true); otherwise the dirty-bit assist.
    #[cold]
    #[inline(never)]
    fn store_through_clean(&mut self, asid: Asid, tag: Asid, vaddr: VirtAddr, writable: bool) -> Result<bool> {
        if !writable {
            let gfn = guest_frame_of(self.guest, asid, vaddr);
            if let Some(gfn) = gfn.filter(|&g| self.hv.write_protected(self.nested.vm, g)) {
                self.copy_on_write(gfn)?;
                return Ok(true);
            }
        }
        self.dirty_assist(asid, tag, vaddr);
        Ok(false)
    }

    fn count_violations(&mut self, n: u64, cycles: f64) {
        self.stats.ept_violations += n;
        self.stats.vm_exits += n;
        self.stats.cycles_virt += cycles;
    }

    /// Host changes queued by the host's fault handling, applied to this
    /// core (INVEPT, charged) when they are its VM's; another VM's are
    /// kept for the end of the round.
    fn apply_ept_changes(&mut self) {
        let vm = self.nested.vm;
        let host_asid = self.hv.host_asid(vm);
        for change in self.hv.drain_ept_changes() {
            if change.vm != vm {
                self.hv.defer_ept_change(change);
                continue;
            }
            self.nested.invept(self.mmu, host_asid, self.guest_asids, change);
            self.stats.cycles_virt += self.hv.costs.invept;
        }
    }

    /// A guest page fault: the guest kernel handles it (its cost, as
    /// natively, in `cycles.faults`); with zeroing backing, what it
    /// allocated is backed now.
    fn guest_fault(&mut self, asid: Asid, tag: Asid, vaddr: VirtAddr, write: bool) -> Result<()> {
        let outcome = self.guest.handle_fault(asid, vaddr, write)?;
        self.stats.record_fault(outcome.size, outcome.cycles);
        // The frames the guest's fault handler zeroed (its new tables and
        // leaf), once, for KSM and for zeroing backing.
        let zeroing = self.hv.backing == Backing::Zeroing;
        let zeroed = if zeroing || self.hv.write_protects {
            zeroed_by_fault(self.guest.page_table_mut(asid), vaddr)
        } else {
            Vec::new()
        };
        if self.hv.write_protects {
            // The zeroing stores break KSM pages among the frames.
            for &(start, count) in &zeroed {
                let contents = self.contents.as_mut().map(|(c, _)| &mut **c);
                let (n, cycles) = self.hv.zeroed_by_guest(self.nested.vm, start, count, contents)?;
                self.count_violations(n, cycles);
            }
        }
        if let Some((contents, _)) = self.contents.as_mut().filter(|(_, data)| !data.is_none()) {
            // The guest's fault handler zeroed the new leaf's frames.
            if let Some(m) = self.guest.proc(asid).aspace.pt.lookup(vaddr) {
                contents.zeroed(self.nested.vm, Gfn::of_guest_kernel(m.frame), m.size.nr_pages());
            }
        }
        for s in self.guest.drain_shootdowns_for(asid) {
            self.mmu.shoot_down(&Shootdown { asid: tag, ..s });
        }
        if zeroing {
            for (start, count) in zeroed {
                let (n, cycles) = self.hv.back_range(self.nested.vm, start, count)?;
                self.count_violations(n, cycles);
            }
            self.apply_ept_changes();
        }
        Ok(())
    }

    /// A store through a clean TLB entry: the walker sets the guest PTE's
    /// dirty bit with a locked update (one more reference, at the entry's
    /// host-physical address; the entry's table is backed: it was walked).
    fn dirty_assist(&mut self, asid: Asid, tag: Asid, vaddr: VirtAddr) {
        let pt = self.guest.page_table_mut(asid);
        if let Some(slot) = pt.leaf_slot(vaddr) {
            let pte = pt.entry(slot);
            if let (Some((contents, data)), false) = (self.contents.as_mut(), pte.dirty()) {
                let size = level_size(slot.level);
                let vbase = vaddr.align_down(size.bytes()).vpn();
                contents.written(self.nested.vm, Gfn::of_guest_kernel(pte.pfn()), size.nr_pages(), vbase, *data);
            }
            pt.set_bits(slot, DIRTY | ACCESSED);
            let bits = if slot.level == 1 { pt.table_leaf_ext(slot.node) } else { 0 };
            if bits != 0 {
                self.leaf_ext_dirty_assist(bits, asid, tag, slot.node, vaddr);
            }
            let pt = self.guest.page_table_mut(asid);
            let data = pte.pfn().add((vaddr.raw() & (level_size(slot.level).bytes() - 1)) >> 12);
            // The store sets the EPT leaf's dirty bit too (the re-walk that
            // sets it is not charged: see virt::ept_bits).
            self.hv.set_ept_dirty(self.nested.vm, Gfn::of_guest_kernel(data));
            let gfn = Gfn::of_guest_kernel(pt.node_frame(slot.node));
            if let Some((table, _)) = self.hv.backing_of(self.nested.vm, gfn) {
                self.refs.push_tagged(table.addr().add(slot.index as u64 * 8), RefTag::GuestWalk);
                self.stats.walk_mem_refs += 1;
                self.stats.walk_guest_refs += 1;
            }
            self.stats.dirty_assists += 1;
        }
        self.mmu.tlb.mark_dirty(tag, vaddr);
    }
}

/// The EPT side of a walk: the nested TLB, else an EPT walk.
struct Ept<'b> {
    nested: &'b mut NestedHw,
    hv: &'b mut Hypervisor,
    refs: &'b mut RefBuf,
    stats: &'b mut CoreStats,
    /// `run.check_translations`: cached entries are checked against the EPT.
    check: bool,
}

impl Ept<'_> {
    /// A guest table entry read at offset `at` (its guest-physical address:
    /// only the offset in the page counts) of the table in host frame
    /// `table`.
    #[inline]
    fn push_guest(&mut self, table: Pfn, at: PhysAddr) {
        self.refs.push_tagged(table.addr().add(at.raw() & 4095), RefTag::GuestWalk);
        self.stats.walk_mem_refs += 1;
        self.stats.walk_guest_refs += 1;
    }

    /// The host frame of `gfn`, the size of its EPT leaf, whether the leaf
    /// allows stores and whether it is dirty (after this access: a `write`
    /// sets its dirty bit, every translation its accessed bit), or why not.
    fn translate(&mut self, gfn: Gfn, write: bool) -> std::result::Result<NestedHit, EptMiss> {
        self.stats.cycles_translation += self.nested.ntlb_latency;
        if let Some(hit) = self.nested.ntlb.lookup(self.nested.vpid, gfn) {
            if self.check && self.stale_nested(gfn, hit) {
                return Err(EptMiss::Stale(format!("the nested TLB maps guest frame {gfn} to {hit:?}")));
            }
            if write && !hit.3 && hit.2 {
                return Ok(self.hv.store_through_clean_ntlb(self.nested.vm, &mut self.nested.ntlb, gfn, hit));
            }
            return Ok(hit);
        }
        let host_asid = self.nested.host_asid;
        let va = gfn.addr().as_host_virt();
        let ept = self.hv.host.page_table_mut(host_asid);
        let hit = self.nested.ept_pwc.lookup(host_asid, va);
        self.stats.cycles_translation += self.nested.ept_pwc_latency;
        let mut node = ept.root();
        let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
        if hit.skip_to_level < ept.levels() {
            node = ept.node_from_handle(hit.skip_to_level, hit.handle);
            if self.check && hit.table != ept.node_frame(node) {
                return Err(EptMiss::Stale(format!(
                    "an EPT paging-structure-cache entry for {gfn} names a freed table"
                )));
            }
        }
        let (frame, size, writable, dirty) = loop {
            let level = ept.node_level(node);
            if level == 1 {
                let (pte, at) = ept.read_leaf_and_set(node, va, bits);
                push_ept_ref(self.refs, self.stats, at);
                if !pte.present() {
                    return Err(EptMiss::Violation(gfn));
                }
                break (pte.pfn(), PageSize::Size4K, pte.writable(), write || pte.dirty());
            }
            let (pte, at, child) = ept.read_upper(node, va);
            push_ept_ref(self.refs, self.stats, at);
            if !pte.present() {
                return Err(EptMiss::Violation(gfn));
            }
            if pte.raw() & (HUGE | EPT_LEAF_STEPS) != 0 {
                if !pte.is_huge() {
                    let table = child.expect("a leaf extension's table");
                    let bits = pte.raw() & EPT_LEAF_STEPS;
                    let leaf = systems::ept_leaf_ext(bits, ept, table, gfn, write, self.refs, self.stats);
                    break leaf.ok_or(EptMiss::Violation(gfn))?;
                }
                ept.set_bits(LeafSlot { node, index: table_index(va, level), level }, bits);
                break (pte.pfn(), level_size(level), pte.writable(), write || pte.dirty());
            }
            let child: NodeId = child.expect("a present non-leaf entry has a child table");
            self.nested.ept_pwc.fill(host_asid, va, level, pte.pfn(), child.handle());
            node = child;
        };
        let host_frame = frame.add(gfn.raw() & (size.nr_pages() - 1));
        self.nested.ntlb.fill_after_miss(self.nested.vpid, gfn, host_frame, size, writable, dirty);
        Ok((host_frame, size, writable, dirty))
    }

    /// The check mode: whether a nested-TLB hit differs from the EPT now
    /// (frame, leaf size or store permission).
    #[cold]
    #[inline(never)]
    fn stale_nested(&self, gfn: Gfn, hit: NestedHit) -> bool {
        let now = self.hv.backing_of(self.nested.vm, gfn);
        now != Some((hit.0, hit.1)) || self.hv.write_protected(self.nested.vm, gfn) == hit.2
    }
}

/// The guest frames a fault at `vaddr` zeroed, as (first, count) ranges:
/// the new leaf's frames and the tables on its path (a table the fault did
/// not create is backed already; backing skips it).
fn zeroed_by_fault(pt: &PageTable, vaddr: VirtAddr) -> Vec<(Gfn, u64)> {
    let mut out = Vec::new();
    let mut node = pt.root();
    loop {
        out.push((Gfn::of_guest_kernel(pt.node_frame(node)), 1));
        if pt.node_level(node) == 1 {
            break;
        }
        match pt.read_upper(node, vaddr) {
            (_, _, Some(child)) => node = child,
            _ => break,
        }
    }
    crate::systems::push_zeroed_leaf(pt, node, vaddr, &mut out);
    out
}

/// The guest frame the guest's table maps `vaddr` of `asid` to (a
/// software walk, for the cold paths).
fn guest_frame_of(guest: &Kernel, asid: Asid, vaddr: VirtAddr) -> Option<Gfn> {
    let m = guest.proc(asid).aspace.pt.lookup(vaddr)?;
    Some(Gfn::of_guest_kernel(m.frame_of(vaddr)))
}

impl Simulation {
    /// A guest's shootdown as the hardware sees it: its address space
    /// tagged with VM `vm`'s VPID (a native run's, unchanged).
    pub(super) fn hw_shootdown(&self, vm: usize, s: Shootdown) -> Shootdown {
        match &self.virt {
            Some(v) => Shootdown { asid: hw_tag(v.hv.vms[vm].vpid, s.asid), ..s },
            None => s,
        }
    }

    /// The guest kernel of VM `vm` (the native kernel in a native run).
    pub(super) fn guest_mut(&mut self, vm: usize) -> &mut Kernel {
        match self.virt.as_deref_mut() {
            Some(v) if vm > 0 => &mut v.other_guests[vm - 1],
            _ => &mut self.kernel,
        }
    }

    /// The guest kernel of VM `vm`, to read.
    pub fn guest(&self, vm: usize) -> &Kernel {
        match self.virt.as_deref() {
            Some(v) if vm > 0 => &v.other_guests[vm - 1],
            _ => &self.kernel,
        }
    }

    /// The number of guest kernels (1 in a native run).
    pub(super) fn nr_guests(&self) -> usize {
        self.virt.as_deref().map_or(1, VirtRun::nr_vms)
    }

    /// Host work after a round: the host's daemons, then the host changes
    /// (from them or from faults) applied to every core of the VM they
    /// belong to, each paying an INVEPT.
    pub(crate) fn virt_round_end(&mut self, now: f64) -> Result<()> {
        let Some(virt) = self.virt.as_deref_mut() else { return Ok(()) };
        let mut guests: Vec<&mut Kernel> =
            std::iter::once(&mut self.kernel).chain(virt.other_guests.iter_mut()).collect();
        virt.hv.tick(now, &mut guests, virt.contents.as_deref())?;
        self.deliver_ept_changes();
        self.deliver_policy_exits();
        Ok(())
    }
}

#[path = "walk2d_check.rs"]
pub(super) mod check;
pub use check::check_combined;
use check::check_write_protection;

#[path = "walk2d_ext.rs"]
mod ext;

#[cfg(test)]
#[path = "walk2d_tests.rs"]
pub(crate) mod tests;
