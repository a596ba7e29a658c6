//! KSM, Kernel Samepage Merging, as the hypervisor runs it over its VMs'
//! memory (mm/ksm.c; Documentation/admin-guide/mm/ksm.rst): ksmd wakes
//! every `sleep_ms` of simulated time, scans `pages_to_scan` guest-backed
//! host 4 KiB pages in a fixed order (VM by VM, guest frame by guest
//! frame, from where it stopped) and merges pages of identical content
//! (`virt::contents`) into one write-protected host frame, across VMs and
//! within one. A guest store to a merged page is an EPT violation that
//! copies it (copy-on-write, [`Ksm::break_cow`]). It is a policy of the
//! hypervisor (`virt::HostPolicy`), registered by its `host` line in the
//! registry ([`POLICY`]); this folder is held at the hypervisor's layer.
//!
//! As Linux 6.x does:
//! - a page's content must be the same at two consecutive scans before it
//!   is compared with anything (`oldchecksum`): a page changing between
//!   scans is volatile, and a fresh page merges at its second scan at the
//!   earliest;
//! - the stable tree (the KSM pages, by content) is searched first, then
//!   the unstable tree (pages seen unchanged this full scan), which is
//!   emptied after each full scan; two unstable matches merge into the
//!   frame of the page found in the tree, which becomes the KSM page;
//! - one KSM page has at most `max_page_sharing` sharers; zero pages merge
//!   with each other like any content (`use_zero_pages = 0`, the default);
//! - a KSM page stays one (counted in `pages_shared`) while one sharer is
//!   left; a store to it still copies; the last sharer's copy frees it.
//!
//! Not modelled: the smart-scan skipping of Linux 6.7 (pages that failed
//! to merge are not skipped), the checksum's own cost beyond a per-page
//! charge, and NUMA (`merge_across_nodes`). KSM frames are owned by
//! [`KSM_POOL`]: compaction does not move them and a host munmap of
//! guest memory releases them through [`Ksm::unmerge`].

#[cfg(test)]
mod color_tests;
mod colors;
mod punch;
mod scan;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::{BTreeMap, HashMap};

use colors::ColorRule;

use super::{KsmColors, KsmConfig, KsmSplit};
use crate::error::{Error, Result};
use crate::os::Kernel;
use crate::paging::pte::WRITABLE;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::{Gfn, Order, Pfn, VirtAddr};
use crate::virt::contents::{ContentId, Contents};
use crate::virt::hypervisor::Vm;
use crate::virt::hypervisor::{HostBuild, HostCtx, HostPolicy, HostRegistration};

/// KSM as the registry knows it: built when `virt.host.ksm.enabled`.
pub const POLICY: HostRegistration<KsmConfig> = HostRegistration {
    name: "ksm",
    build: |cfg, b: &HostBuild| {
        cfg.enabled.then(|| Box::new(Ksm::new(cfg, b.pins_huge_pages, b.freq_ghz)) as Box<dyn HostPolicy>)
    },
    stats: STATS,
};

/// The host pool id of KSM pages (the host's other pools: hugetlb 1,
/// colors 2, CHP 3).
pub const KSM_POOL: u8 = 4;

/// ksmd's statistics: Linux's /sys/kernel/mm/ksm counters, machine-wide.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Ksm,
    stats: &[
        StatDecl::count(
            "ksm.pages_shared",
            "KSM pages in use: host frames holding merged content, each mapped by at least one guest frame (end \
             state; Linux's `pages_shared`)",
        )
        .pages()
        .machine()
        .contract(),
        StatDecl::count(
            "ksm.pages_sharing",
            "guest frames mapped to a KSM page beyond the first of each: how many host frames merging saves (end \
             state; Linux's `pages_sharing`); memory saved = `pages_sharing` x 4 KiB",
        )
        .pages()
        .machine()
        .contract(),
        StatDecl::count(
            "ksm.cow_breaks",
            "guest stores (and guest zeroing of frames) that met a merged page and copied it into a frame of the \
             VM's own",
        )
        .machine()
        .contract(),
        StatDecl::count(
            "ksm.pages_scanned",
            "4 KiB pages ksmd examined (parts of host huge pages included under `split = \"any-duplicate\"`; none \
             of them under `never`)",
        )
        .machine(),
        StatDecl::count("ksm.full_scans", "passes over all VMs' memory completed (Linux's `full_scans`)").machine(),
        StatDecl::count("ksm.merges", "guest frames remapped to a KSM page (each freed its own host frame)").machine(),
        StatDecl::count("ksm.splits", "host 2 MiB pages split to merge a part (also in `host.os.splits`)").machine(),
        StatDecl::count(
            "ksm.perforated",
            "with `virt.host.ksm.split = \"punch\"` only: host 2 MiB pages made perforated pages to merge a part \
             (each merged part a hole)",
        )
        .machine(),
        StatDecl::count("ksm.wakeups", "ksmd's wake-ups").machine(),
        StatDecl::count(
            "ksm.merges_across_colors",
            "with `virt.host.ksm.colors` other than `ignore` only: merges into a KSM page of another color than \
             the merged page's host frame (the host placement's colors); `eksm` only, while identical pages are \
             scarce",
        )
        .machine(),
        StatDecl::count(
            "ksm.refused_for_color",
            "with `virt.host.ksm.colors` other than `ignore` only: pages scanned and left unmerged because their \
             only identical pages with room were of other colors",
        )
        .machine(),
        StatDecl::count(
            "ksm.scarce_scans",
            "with `virt.host.ksm.colors = \"eksm\"` only: full scans after which identical pages were scarce \
             (fewer than `virt.host.ksm.scarce` of the pages examined were merged or found an identical page), \
             so the next one could merge across colors",
        )
        .machine(),
        StatDecl::count(
            "ksm.cpu_cycles",
            "ksmd's own CPU time, on its own core (not in any workload's `cycles`): half a `copy_4k` per page \
             scanned (its checksum reads it), a `copy_4k` per comparison that merges (two pages read), a \
             `fault_cost.split` per split",
        )
        .cycles()
        .machine(),
    ],
}];

/// One KSM page: its content and how many guest frames map it.
#[derive(Debug, Clone, Copy)]
struct KsmPage {
    content: ContentId,
    sharers: u32,
    /// Its frame's color (0 under `colors = "ignore"`).
    color: u32,
}

/// ksmd's counters (`ksm.*`, docs/stats.md).
#[derive(Debug, Default, Clone)]
struct KsmCounters {
    wakeups: u64,
    pages_scanned: u64,
    full_scans: u64,
    merges: u64,
    cow_breaks: u64,
    /// Host huge pages split to merge a part.
    splits: u64,
    /// ksmd's own CPU time (its core, not the workloads'), cycles.
    cpu_cycles: f64,
}

/// The scanner's state and the KSM pages.
#[derive(Debug)]
pub struct Ksm {
    cfg: KsmConfig,
    clock: crate::os::WakeClock,
    /// Where the scan resumes: VM index and guest frame.
    cursor: (usize, u64),
    /// The content each scanned page had at its last scan (Linux's
    /// `rmap_item->oldchecksum`), by (VM, guest frame).
    last_seen: HashMap<(usize, Gfn), ContentId>,
    /// This full scan's unstable tree: a page seen unchanged, by content
    /// and its frame's color (0 under `colors = "ignore"`). Ordered, for
    /// eKSM's look-up of a content's other colors.
    unstable: BTreeMap<(ContentId, u32), (usize, Gfn)>,
    /// The stable tree: the KSM pages of each content, in creation order.
    stable: HashMap<ContentId, Vec<Pfn>>,
    /// Every KSM page by frame (ordered: reports and checks iterate it).
    pages: BTreeMap<Pfn, KsmPage>,
    /// Whether host huge leaves may be split at all (not hugetlb's pages:
    /// Linux never merges them).
    may_split: bool,
    counters: KsmCounters,
    /// What `split = "punch"` keeps to make perforated pages.
    punch_space: punch::PunchSpace,
    /// Whether merges keep colors, and eKSM's scarcity (`colors.rs`).
    colors: ColorRule,
}

impl Ksm {
    /// ksmd of a host whose chain pins its huge pages or not
    /// (`Caps::pins_huge_pages`), on a clock of `freq_ghz`.
    pub fn new(cfg: &KsmConfig, pins_huge_pages: bool, freq_ghz: f64) -> Ksm {
        Ksm {
            cfg: cfg.clone(),
            clock: crate::os::WakeClock::every_ms(cfg.sleep_ms, freq_ghz),
            cursor: (0, 0),
            last_seen: HashMap::new(),
            unstable: BTreeMap::new(),
            stable: HashMap::new(),
            pages: BTreeMap::new(),
            may_split: !pins_huge_pages && cfg.split != KsmSplit::Never,
            counters: KsmCounters::default(),
            punch_space: punch::PunchSpace::default(),
            colors: ColorRule::new(cfg.colors, cfg.scarce),
        }
    }

    /// Whether `frame` is a KSM page.
    #[inline]
    pub fn is_ksm_page(&self, frame: Pfn) -> bool {
        self.pages.contains_key(&frame)
    }

    /// The sharers of KSM page `frame` (0 if it is none).
    pub fn sharers(&self, frame: Pfn) -> u32 {
        self.pages.get(&frame).map_or(0, |p| p.sharers)
    }

    /// KSM pages in use and the sites sharing them beyond the first: what
    /// Linux's `pages_shared` and `pages_sharing` say.
    pub fn shared_and_sharing(&self) -> (u64, u64) {
        let shared = self.pages.len() as u64;
        let sites: u64 = self.pages.values().map(|p| p.sharers as u64).sum();
        (shared, sites - shared)
    }

    /// A store to guest frame `gfn` of `vm`, mapped to KSM page `frame`:
    /// a fresh host frame gets a copy, the EPT leaf maps it writable, the
    /// KSM page loses a sharer (freed with its last), and the page's
    /// content becomes its own (the store changed it). Returns the cycles
    /// of the copy (the VM exit is the caller's).
    pub fn break_cow(
        &mut self,
        host: &mut Kernel,
        vm: &Vm,
        gfn: Gfn,
        frame: Pfn,
        contents: Option<&mut Contents>,
    ) -> Result<f64> {
        // A hole of a host perforated page (`split = "punch"`) goes home
        // when its frame in the 2 MiB block is free (the last sharer's
        // store frees the KSM page first, so it may be that frame).
        let perforated = punch::in_perforated_page(host, vm, gfn);
        if perforated {
            self.release(host, frame);
        }
        if !(perforated && punch::patch_back(host, vm, gfn)) {
            // The copy is placed as the guest frame's own fault would be
            // (a colored host placement keeps its color: COPLACE's).
            let owner = FrameOwner::User { asid: vm.host_asid, vpn: gfn.addr().as_host_virt().vpn() };
            let copy = host.alloc_page_for(vm.host_asid, owner).map_err(|e| match e {
                Error::OutOfMemory(_) => Error::OutOfMemory(format!(
                    "host memory exhausted copying KSM page {frame} for guest frame {gfn} of VM {} (there is no swap)",
                    vm.vpid
                )),
                other => other,
            })?;
            remap(host, vm, gfn, copy, true);
        }
        if !perforated {
            self.release(host, frame);
        }
        if let Some(c) = contents {
            c.rewritten(vm.vpid as usize - 1, gfn);
        }
        self.counters.cow_breaks += 1;
        Ok(host.costs.copy_4k)
    }

    /// Before the host unmaps guest frames [start, start + count) of `vm`
    /// (a balloon's discard): each merged one is given a private frame
    /// (not copied: the range is about to go), so the unmap frees that
    /// and the KSM page keeps its other sharers.
    pub fn unmerge(&mut self, host: &mut Kernel, vm: &Vm, start: Gfn, count: u64) -> Result<()> {
        let (first, end) = (start.addr().as_host_virt(), Gfn::new(start.raw() + count).addr().as_host_virt());
        let ept = &host.proc(vm.host_asid).aspace.pt;
        let merged: Vec<(VirtAddr, Pfn)> = ept
            .leaves_in(first, end)
            .into_iter()
            .filter(|(_, m)| self.is_ksm_page(m.frame))
            .map(|(va, m)| (va, m.frame))
            .collect();
        for (va, frame) in merged {
            let gfn = Gfn::new(va.vpn().raw());
            let owner = FrameOwner::User { asid: vm.host_asid, vpn: va.vpn() };
            let private = host.mem.alloc(Order::BASE, Migratetype::Movable, owner).ok_or_else(|| {
                Error::OutOfMemory(format!("host memory exhausted unmerging guest frame {gfn} of VM {}", vm.vpid))
            })?;
            remap(host, vm, gfn, private, true);
            self.release(host, frame);
        }
        Ok(())
    }

    /// One sharer of KSM page `frame` is gone; the last one frees it.
    fn release(&mut self, host: &mut Kernel, frame: Pfn) {
        let page = self.pages.get_mut(&frame).expect("a KSM page");
        page.sharers -= 1;
        if page.sharers > 0 {
            return;
        }
        let content = page.content;
        self.pages.remove(&frame);
        if let Some(frames) = self.stable.get_mut(&content) {
            frames.retain(|&f| f != frame);
            if frames.is_empty() {
                self.stable.remove(&content);
            }
        }
        host.mem.free(frame, Order::BASE);
    }

    /// `ksm.*` (docs/stats.md).
    fn report_counters(&self, out: &mut Stats) {
        let (shared, sharing) = self.shared_and_sharing();
        let c = &self.counters;
        put_ints(
            out,
            "ksm.",
            &[
                ("pages_shared", shared),
                ("pages_sharing", sharing),
                ("cow_breaks", c.cow_breaks),
                ("pages_scanned", c.pages_scanned),
                ("full_scans", c.full_scans),
                ("merges", c.merges),
                ("splits", c.splits),
                ("wakeups", c.wakeups),
            ],
        );
        out.insert("ksm.cpu_cycles".into(), Stat::Float(c.cpu_cycles));
        if self.cfg.split == KsmSplit::Punch {
            out.insert("ksm.perforated".into(), Stat::Int(self.punch_space.perforated));
        }
        if self.colors.on() {
            let k = &self.colors.counters;
            put_ints(out, "ksm.", &[("merges_across_colors", k.across), ("refused_for_color", k.refused)]);
        }
        if self.cfg.colors == KsmColors::Eksm {
            out.insert("ksm.scarce_scans".into(), Stat::Int(self.colors.counters.scarce_scans));
        }
    }
}

impl HostPolicy for Ksm {
    fn name(&self) -> &'static str {
        "ksm"
    }

    /// Runs every wake-up due by `ctx.now`: each scans `pages_to_scan`
    /// pages. Its host changes are queued as the host's shootdowns
    /// (INVEPTs).
    fn run_due(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()> {
        while self.clock.due(ctx.now) {
            self.counters.wakeups += 1;
            if let Some(contents) = ctx.contents {
                self.scan(&mut ctx.hv.host, &ctx.hv.vms, contents);
            }
        }
        Ok(())
    }

    fn write_protects(&self) -> bool {
        true
    }

    fn makes_ept_leaf_ext(&self) -> bool {
        self.cfg.split == KsmSplit::Punch
    }

    fn write_fault(
        &mut self,
        host: &mut Kernel,
        vm: &Vm,
        gfn: Gfn,
        frame: Pfn,
        contents: Option<&mut Contents>,
    ) -> Result<Option<f64>> {
        if !self.is_ksm_page(frame) {
            return Ok(None);
        }
        self.break_cow(host, vm, gfn, frame, contents).map(Some)
    }

    fn before_discard(&mut self, host: &mut Kernel, vm: &Vm, start: Gfn, count: u64) -> Result<()> {
        self.unmerge(host, vm, start, count)
    }

    fn report(&self, out: &mut Stats) {
        self.report_counters(out);
    }

    /// The end of warm-up: counters restart; the KSM pages stay.
    fn reset_stats(&mut self) {
        self.counters = KsmCounters::default();
        self.punch_space.perforated = 0;
        self.colors.counters = Default::default();
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Points the EPT leaf of `gfn` (a 4 KiB one) at `frame`, writable or
/// write-protected, keeping its accessed and dirty bits, and queues the
/// INVEPT of that frame.
fn remap(host: &mut Kernel, vm: &Vm, gfn: Gfn, frame: Pfn, writable: bool) {
    // In a host perforated page the part becomes (or stays) a hole.
    punch::mark_hole(host, vm, gfn);
    let va = gfn.addr().as_host_virt();
    let pt = host.page_table_mut(vm.host_asid);
    let slot = pt.leaf_slot(va).expect("a backed guest frame");
    debug_assert_eq!(slot.level, 1, "KSM maps 4 KiB leaves only");
    let pte = pt.entry(slot).with_pfn(frame);
    pt.replace(slot, if writable { pte.with(WRITABLE) } else { pte.without(WRITABLE) });
    host.shoot(vm.host_asid, va, va.add(4096));
}
