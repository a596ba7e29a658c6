//! The simulated kernel: physical memory, processes, the policy, daemons.

use super::{fault::AUTO_VMA_NAME, hugetlb::HugetlbPool, khugepaged::Khugepaged, ChpState, ColorPool, OsStats, Policy};
use crate::config::{FaultCosts, OsConfig, PolicyKind, SimConfig};
use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::paging::{AddressSpace, Vma, VmaTree};
use crate::phys::{fragmentation, PhysMem};
use crate::units::{Asid, Order, Pfn, VirtAddr, Vpn};

/// A TLB shootdown the engine must apply before the next translation:
/// every TLB and page-walk-cache entry of `asid` overlapping [start, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shootdown {
    pub asid: Asid,
    pub start: Vpn,
    pub end: Vpn,
}

#[derive(Debug)]
pub struct Process {
    pub aspace: AddressSpace,
    /// Allowed colors (empty = all).
    pub colors: Vec<u32>,
    /// Round-robin cursor among allowed colors (PALLOC's per-CPU counter;
    /// bin hopping's next bin).
    pub color_cursor: usize,
    /// Whether VMAs are created around touched addresses.
    pub auto_vma: bool,
    /// Under the `chp` policy: whether faults try colored huge pages.
    pub chp: bool,
    /// Ranges a munmap emptied and nothing mapped since, kept while
    /// `auto_vma` is on: an automatic VMA there is counted
    /// (`os.auto_vmas_after_munmap`), since the program touched memory it
    /// had unmapped, or a mapping the trace did not record.
    pub unmapped: VmaTree,
}

#[derive(Debug)]
pub struct Kernel {
    pub mem: PhysMem,
    pub procs: Vec<Process>,
    pub policy: Policy,
    pub stats: OsStats,
    pub costs: FaultCosts,
    pub(super) cfg: OsConfig,
    pub(super) colors: ColorMap,
    pub(super) khugepaged: Option<Khugepaged>,
    levels: u8,
    shootdowns: Vec<Shootdown>,
}

impl Kernel {
    /// Boots the machine: memory, the hugetlb boot pool, then the injected
    /// fragmentation (so the pool, like hugepages= at boot, predates it).
    pub fn new(cfg: &SimConfig) -> Result<Kernel> {
        let m = &cfg.machine;
        let mut mem = PhysMem::new(m.phys_mem.bytes() >> 12, m.max_order)?;
        let colors = color_map(cfg)?;
        let policy = match cfg.os.policy {
            PolicyKind::Base => Policy::Base,
            PolicyKind::Thp => Policy::Thp,
            PolicyKind::Hugetlb => Policy::Hugetlb(HugetlbPool::boot(&cfg.os.hugetlb, &mut mem)?),
            PolicyKind::Coloring => Policy::Coloring(ColorPool::new(&colors)),
            PolicyKind::BinHopping => Policy::BinHopping(ColorPool::new(&colors)),
            PolicyKind::Chp => Policy::Chp(ChpState::new(&cfg.os.chp, &colors)?),
        };
        let f = &cfg.os.fragmentation;
        if let Some(path) = &f.snapshot {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            crate::phys::snapshot::Snapshot::parse(&text, path)?.apply(&mut mem, cfg.run.seed)?;
        }
        if f.target > 0.0 {
            let pattern = match f.pattern {
                crate::config::os::FragPattern::Dispersed => fragmentation::Pattern::Dispersed,
                crate::config::os::FragPattern::Clustered => fragmentation::Pattern::Clustered,
            };
            fragmentation::inject(&mut mem, f.target, pattern, f.holes, cfg.run.seed)?;
        }
        let khugepaged = (cfg.os.policy == PolicyKind::Thp && cfg.os.thp.khugepaged)
            .then(|| Khugepaged::new(&cfg.os.thp, m.freq_ghz));
        Ok(Kernel {
            mem,
            procs: Vec::new(),
            policy,
            stats: OsStats::default(),
            costs: cfg.os.fault_cost.clone(),
            cfg: cfg.os.clone(),
            colors,
            khugepaged,
            levels: m.paging_levels,
            shootdowns: Vec::new(),
        })
    }

    /// Creates a process; its asid is its index + 1 (asid 0 is never used,
    /// so a zeroed TLB entry matches nothing).
    pub fn spawn(&mut self, colors: Vec<u32>, auto_vma: bool) -> Result<Asid> {
        let asid = (self.procs.len() + 1) as Asid;
        for &c in &colors {
            if c >= self.colors.nr_colors() {
                return Err(Error::config(
                    "workload.colors",
                    format!("color {c} does not exist: the machine has {} colors", self.colors.nr_colors()),
                ));
            }
        }
        let aspace = AddressSpace::new(asid, self.levels, &mut self.mem)?;
        self.procs.push(Process { aspace, colors, color_cursor: 0, auto_vma, chp: true, unmapped: VmaTree::default() });
        Ok(asid)
    }

    /// Whether a process's faults may take colored huge pages (`workload.chp`).
    pub fn set_chp(&mut self, asid: Asid, on: bool) {
        self.proc_mut(asid).chp = on;
    }

    pub fn proc(&self, asid: Asid) -> &Process {
        &self.procs[asid as usize - 1]
    }
    pub(super) fn proc_mut(&mut self, asid: Asid) -> &mut Process {
        &mut self.procs[asid as usize - 1]
    }

    /// Installs a leaf in a process's page table (page-table pages come
    /// from `mem`; borrowing the two fields apart).
    pub(super) fn map_user(&mut self, asid: Asid, vaddr: VirtAddr, frame: Pfn, size: crate::units::PageSize, writable: bool) -> Result<()> {
        self.procs[asid as usize - 1].aspace.map_leaf(vaddr, frame, size, writable, &mut self.mem)
    }

    /// The stride of colored huge pages (log2 of the system colors); 0
    /// when the policy is not `chp`.
    pub fn chp_stride_shift(&self) -> u8 {
        match &self.policy {
            Policy::Chp(state) => state.geometry.stride_shift,
            _ => 0,
        }
    }

    pub fn color_map(&self) -> &ColorMap {
        &self.colors
    }

    /// Shootdowns queued since the last drain.
    pub fn drain_shootdowns(&mut self) -> std::vec::Drain<'_, Shootdown> {
        self.shootdowns.drain(..)
    }

    /// The queued shootdowns of one address space (the others stay queued).
    pub fn drain_shootdowns_for(&mut self, asid: Asid) -> Vec<Shootdown> {
        if self.shootdowns.is_empty() {
            // Called after every fault; most queue nothing.
            return Vec::new();
        }
        let (mine, rest) = self.shootdowns.drain(..).partition(|s| s.asid == asid);
        self.shootdowns = rest;
        mine
    }

    /// The page table of a process (the walker reads and updates A/D bits).
    #[inline]
    pub fn page_table_mut(&mut self, asid: Asid) -> &mut crate::paging::PageTable {
        &mut self.procs[asid as usize - 1].aspace.pt
    }

    pub(super) fn queue_shootdown(&mut self, s: Shootdown) {
        self.shootdowns.push(s);
    }

    pub(super) fn shoot(&mut self, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.stats.shootdowns += 1;
        let end_vpn = Vpn::new((end.raw() + 4095) >> 12);
        self.shootdowns.push(Shootdown { asid, start: start.vpn(), end: end_vpn });
    }

    /// mmap: a new anonymous VMA (merging with an adjacent one: growth).
    /// Automatic VMAs in the way are guesses, not mappings: their overlap
    /// is unmapped first (as MAP_FIXED would), so a trace whose mapping
    /// events are partial (a captured program) can map where first touches
    /// already made automatic VMAs. Overlapping a VMA the workload mapped
    /// is the workload's error.
    pub fn mmap(&mut self, asid: Asid, start: VirtAddr, len: u64, writable: bool, name: &str) -> Result<()> {
        let end = page_end(start, len)?;
        let p = self.proc_mut(asid);
        if p.aspace.vmas.overlaps(start, end) {
            let in_the_way: Vec<Vma> = p.aspace.vmas.overlapping(start, end).cloned().collect();
            if let Some(v) = in_the_way.iter().find(|v| v.name != AUTO_VMA_NAME) {
                return Err(Error::Workload(format!(
                    "mmap [{start}, {end}) overlaps the mapping `{}` [{}, {})",
                    v.name, v.start, v.end
                )));
            }
            for v in in_the_way {
                self.unmap(asid, v.start.max(start), v.end.min(end), false)?;
            }
        }
        let p = self.proc_mut(asid);
        p.unmapped.remove(start, end);
        p.aspace.vmas.insert(Vma { start, end, writable, name: name.to_string() });
        if let Policy::Hugetlb(pool) = &mut self.policy {
            pool.reserve_for(start, end, name, &mut self.mem);
        }
        Ok(())
    }

    /// munmap: unmaps, frees the frames, shoots down the range.
    pub fn munmap(&mut self, asid: Asid, start: VirtAddr, len: u64) -> Result<()> {
        let end = page_end(start, len)?;
        self.unmap(asid, start, end, true)?;
        let p = self.proc_mut(asid);
        if p.auto_vma {
            p.unmapped.remove(start, end);
            p.unmapped.insert(Vma { start, end, writable: false, name: String::new() });
        }
        Ok(())
    }

    /// Removes [start, end) from the VMAs and the page table, freeing the
    /// frames; shoots the range down always (`always`: munmap) or only
    /// when a page was mapped in it (an automatic VMA's unused overlap).
    fn unmap(&mut self, asid: Asid, start: VirtAddr, end: VirtAddr, always: bool) -> Result<()> {
        let chp = self.chp_regions_in(asid, start, end);
        let (leaves, splits) = self.procs[asid as usize - 1].aspace.unmap_range(start, end, &mut self.mem)?;
        self.stats.splits += splits as u64;
        let shoot = always || !leaves.is_empty() || splits > 0;
        for (va, m) in leaves {
            if !Self::chp_frame_reclaimed(&chp, va) {
                self.free_user_frames(m.frame, m.size);
            }
        }
        self.chp_reclaim(chp);
        if shoot {
            self.shoot(asid, start, end);
        }
        Ok(())
    }

    /// mprotect: changes permissions (splitting huge pages at the edges).
    pub fn mprotect(&mut self, asid: Asid, start: VirtAddr, len: u64, writable: bool) -> Result<()> {
        let end = page_end(start, len)?;
        // Colored huge pages the range cuts lose their bit; whole ones keep it.
        self.chp_regions_in(asid, start, end);
        let splits = self.procs[asid as usize - 1].aspace.protect_range(start, end, writable, &mut self.mem)?;
        self.stats.splits += splits as u64;
        self.shoot(asid, start, end);
        Ok(())
    }

    /// Returns a user page's frames to where they came from.
    fn free_user_frames(&mut self, frame: Pfn, size: crate::units::PageSize) {
        if let Policy::Hugetlb(pool) = &mut self.policy {
            if pool.owns(frame, size) {
                pool.give_back(frame, &mut self.mem);
                return;
            }
        }
        self.mem.free(frame, size.order());
    }

    /// Runs the daemons due by simulated time `now` (cycles). What they
    /// cost the workloads are their shootdowns, queued like any other.
    pub fn tick(&mut self, now: f64) {
        let Some(mut k) = self.khugepaged.take() else { return };
        k.run_due(self, now);
        self.khugepaged = Some(k);
    }

    /// Explicit compaction towards a free block of `order` (Linux's
    /// compact_zone). Returns the cycles it cost.
    pub fn compact(&mut self, order: Order) -> f64 {
        super::compaction::compact(self, order)
    }
}

fn page_end(start: VirtAddr, len: u64) -> Result<VirtAddr> {
    if !start.is_aligned(4096) || len == 0 {
        return Err(Error::Workload(format!("mapping at {start} of {len} bytes is not page-aligned or empty")));
    }
    let end = start.checked_add((len + 4095) & !4095).ok_or_else(|| Error::Workload("mapping wraps".into()))?;
    Ok(end)
}

/// The page colors the OS uses: `os.coloring.bits`, else the machine's
/// `color_bits`, else the LLC's set-index bits at or above bit 12.
fn color_map(cfg: &SimConfig) -> Result<ColorMap> {
    if !cfg.os.coloring.bits.is_empty() {
        ColorMap::new(&cfg.os.coloring.bits, "os.coloring.bits")
    } else if !cfg.machine.color_bits.is_empty() {
        ColorMap::new(&cfg.machine.color_bits, "machine.color_bits")
    } else {
        Ok(ColorMap::from_llc(&cfg.machine.cache.llc.geometry()))
    }
}
