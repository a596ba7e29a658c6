//! The simulated kernel: physical memory, processes, VMAs and page tables,
//! the shootdown queue, costs and shared counters, and the chain of
//! systems it calls at each fault and mapping change.

use super::system::{Daemon, ProcessSpec, System};
use super::{fault::AUTO_VMA_NAME, ColorPool, FaultCosts, FragmentationConfig, OsStats};
use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::paging::{AddressSpace, Vma, VmaTree};
use crate::phys::{fragmentation, PhysMem};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr, Vpn};

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
    /// bin hopping's next bin). Shared by every system that picks colors
    /// for this process (a colored huge page's sub-mappings and 4 KiB
    /// coloring take turns on it), so the kernel keeps it.
    pub color_cursor: usize,
    /// Whether VMAs are created around touched addresses.
    pub auto_vma: bool,
    /// Systems whose faults this process skips (`ProcessSpec::opt_out`).
    pub opt_out: Vec<&'static str>,
    /// Ranges a munmap emptied and nothing mapped since, kept while
    /// `auto_vma` is on: an automatic VMA there is counted
    /// (`os.auto_vmas_after_munmap`), since the program touched memory it
    /// had unmapped, or a mapping the trace did not record.
    pub unmapped: VmaTree,
    /// Its file windows (`ProcessSpec::files`): start, end, file number
    /// in the page cache. Empty for a process that reads no file, so its
    /// faults never look.
    pub files: Vec<(VirtAddr, VirtAddr, u32)>,
    /// Whether it exited (`Kernel::exit`): its memory and tables are freed
    /// and its asid is never used again.
    pub exited: bool,
}

/// What the kernel boots with (the machine's side of the configuration).
#[derive(Debug, Clone)]
pub struct Boot {
    /// 4 KiB frames of physical memory.
    pub frames: u64,
    pub max_order: u8,
    pub paging_levels: u8,
    /// The page colors the OS uses.
    pub colors: ColorMap,
    pub costs: FaultCosts,
    /// Bytes the workloads on this kernel declare (`workload.footprint`,
    /// summed; a hypervisor's: its VMs' guest memory): what
    /// `os.fragmentation.fmfi` scales to.
    pub footprint: u64,
    /// The memory tiers, one node each, in order; empty: one node.
    pub tiers: Vec<crate::phys::TierConfig>,
    /// `machine.memory.latency`: a copy between two tiers costs
    /// `costs.copy_4k` scaled by their latencies against it (`tiering`).
    pub memory_latency: u32,
    /// A hypervisor's kernel only: the real caches and each guest's page
    /// colors, which a host placement that keeps the guests' colors reads
    /// (COPLACE's); `None` for a native or guest kernel.
    pub host_view: Option<HostView>,
}

/// What a hypervisor's kernel knows beyond its own memory: the real
/// caches' shapes (not the host's color map, which is a policy's choice)
/// and the page colors each VM's guest kernel uses, by VM.
#[derive(Debug, Clone)]
pub struct HostView {
    pub llc: crate::hw::cache::Geometry,
    pub l2: crate::hw::cache::Geometry,
    /// `machine.cache.llc.inclusive`.
    pub llc_inclusive: bool,
    /// Each VM's guest color map (its `os.coloring.bits`, else the
    /// machine's: the virtual LLC the VM is shown is the host CPU's).
    pub guest_colors: Vec<ColorMap>,
}

#[derive(Debug)]
pub struct Kernel {
    pub mem: PhysMem,
    pub procs: Vec<Process>,
    pub stats: OsStats,
    pub costs: FaultCosts,
    colors: ColorMap,
    /// Free 4 KiB frames by color, lent to every system that colors pages
    /// (coloring, bin hopping, colored huge pages' fallback): one pool, so
    /// a frame one system leaves is there for the other.
    pub color_pool: ColorPool,
    /// The chain: a fault goes to each in order until one backs it.
    pub(super) systems: Vec<Box<dyn System>>,
    pub(super) daemons: Vec<Box<dyn Daemon>>,
    levels: u8,
    shootdowns: Vec<Shootdown>,
    /// L2 TLB misses the cores sampled (Arm's SPE buffer), for the daemon
    /// that reads them (Leshy); empty unless a run samples.
    pub miss_samples: crate::hw::tlb::MissSamples,
    /// The memory nodes' latencies, for the cost of a migration between
    /// them (`tiering`).
    pub(super) tiers: super::tiering::NodeLatencies,
    /// Migrations between the nodes (`os.tier.*`).
    pub tier_stats: super::tiering::TierStats,
    /// The page cache, made when the first process with a file window
    /// starts (`pagecache.*` is reported from then on).
    pub page_cache: Option<super::PageCache>,
}

impl Kernel {
    /// Boots the machine: memory and the color map, no systems yet
    /// ([`Kernel::plug`] adds them; fragmentation comes after them, so
    /// that reservations at boot, like hugepages=, predate it).
    pub fn new(boot: Boot) -> Result<Kernel> {
        let mem = if boot.tiers.is_empty() {
            PhysMem::new(boot.frames, boot.max_order)?
        } else {
            let nodes = crate::phys::tiers::node_frames(&boot.tiers);
            debug_assert_eq!(nodes.iter().sum::<u64>(), boot.frames);
            PhysMem::with_nodes(&nodes, boot.max_order)?
        };
        Ok(Kernel {
            mem,
            procs: Vec::new(),
            stats: OsStats::default(),
            costs: boot.costs,
            color_pool: ColorPool::new(&boot.colors),
            colors: boot.colors,
            systems: Vec::new(),
            daemons: Vec::new(),
            levels: boot.paging_levels,
            shootdowns: Vec::new(),
            miss_samples: Default::default(),
            tiers: super::tiering::NodeLatencies::new(&boot.tiers, boot.memory_latency),
            tier_stats: Default::default(),
            page_cache: None,
        })
    }

    /// Appends a system to the chain.
    pub fn plug(&mut self, system: Box<dyn System>) {
        self.systems.push(system);
    }

    /// Adds a daemon (they run in the order added).
    pub fn add_daemon(&mut self, daemon: Box<dyn Daemon>) {
        self.daemons.push(daemon);
    }

    /// The names of the chain's systems, in order.
    pub fn chain(&self) -> Vec<&'static str> {
        self.systems.iter().map(|s| s.name()).collect()
    }

    /// The system of the chain named `name`, to read its state.
    pub fn system(&self, name: &str) -> Option<&dyn System> {
        self.systems.iter().find(|s| s.name() == name).map(|s| s.as_ref())
    }

    pub fn daemons(&self) -> impl Iterator<Item = &dyn Daemon> {
        self.daemons.iter().map(|d| d.as_ref())
    }

    /// Places the machine's starting fragmentation: a real machine's
    /// snapshot, unmovable frames up to a target F_i, or memfrag's held
    /// memory up to a target FMFI over `footprint` bytes of workload.
    pub fn fragment(&mut self, f: &FragmentationConfig, footprint: u64, seed: u64) -> Result<()> {
        let placement = match f.placement {
            super::FragPlacement::Random => fragmentation::Placement::Random,
            super::FragPlacement::Clustered => fragmentation::Placement::Clustered,
        };
        if let Some(path) = &f.snapshot {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            crate::phys::snapshot::Snapshot::parse(&text, path)?.apply_placed(&mut self.mem, seed, placement)?;
        }
        if f.target > 0.0 {
            let pattern = match f.pattern {
                super::FragPattern::Dispersed => fragmentation::Pattern::Dispersed,
                super::FragPattern::Clustered => fragmentation::Pattern::Clustered,
            };
            fragmentation::inject_placed(&mut self.mem, f.target, pattern, placement, f.holes, seed)?;
        }
        if f.fmfi > 0.0 {
            fragmentation::memfrag(&mut self.mem, f.fmfi, footprint, f.fmfi_slack.bytes())?;
        }
        Ok(())
    }

    /// Runs `f` with the chain lent out of the kernel, so that hooks can
    /// take the kernel mutably.
    pub(super) fn with_systems<R>(&mut self, f: impl FnOnce(&mut [Box<dyn System>], &mut Kernel) -> R) -> R {
        let mut systems = std::mem::take(&mut self.systems);
        let r = f(&mut systems, self);
        debug_assert!(self.systems.is_empty(), "a hook plugged a system");
        self.systems = systems;
        r
    }

    /// Creates a process; its asid is its index + 1 (asid 0 is never used,
    /// so a zeroed TLB entry matches nothing).
    pub fn spawn(&mut self, spec: ProcessSpec) -> Result<Asid> {
        let asid = (self.procs.len() + 1) as Asid;
        for &c in &spec.colors {
            if c >= self.colors.nr_colors() {
                return Err(Error::config(
                    "workload.colors",
                    format!("color {c} does not exist: colors are 0 to {}", self.colors.nr_colors().saturating_sub(1)),
                ));
            }
        }
        let aspace = AddressSpace::new(asid, self.levels, &mut self.mem)?;
        self.procs.push(Process {
            aspace,
            colors: spec.colors.clone(),
            color_cursor: 0,
            auto_vma: spec.auto_vma,
            opt_out: spec.opt_out.clone(),
            unmapped: VmaTree::default(),
            files: Vec::new(),
            exited: false,
        });
        self.map_files(asid, &spec.files)?;
        self.with_systems(|systems, k| systems.iter_mut().for_each(|s| s.spawn(k, asid, &spec)));
        Ok(asid)
    }

    pub fn proc(&self, asid: Asid) -> &Process {
        &self.procs[asid as usize - 1]
    }
    pub fn proc_mut(&mut self, asid: Asid) -> &mut Process {
        &mut self.procs[asid as usize - 1]
    }

    /// Installs a leaf in a process's page table (page-table pages come
    /// from `mem`; borrowing the two fields apart).
    pub fn map_user(&mut self, asid: Asid, vaddr: VirtAddr, frame: Pfn, size: PageSize, writable: bool) -> Result<()> {
        self.procs[asid as usize - 1].aspace.map_leaf(vaddr, frame, size, writable, &mut self.mem)
    }

    pub fn color_map(&self) -> &ColorMap {
        &self.colors
    }

    /// The colors the chain places 4 KiB frames by: the first system's own
    /// (`System::placement_colors`: COPLACE's host colors), else the
    /// kernel's map (`os.coloring.bits`; `virt.host.coloring.bits` in the
    /// host). What a frame's color means to a policy that keeps placement.
    pub fn placement_colors(&self) -> &ColorMap {
        self.systems.iter().find_map(|s| s.placement_colors()).unwrap_or(&self.colors)
    }

    /// Shootdowns queued since the last drain.
    pub fn drain_shootdowns(&mut self) -> std::vec::Drain<'_, Shootdown> {
        self.shootdowns.drain(..)
    }

    /// The queued shootdowns of one address space (the others stay queued).
    #[inline]
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

    /// Queues a shootdown of [start, end) and counts it.
    pub fn shoot(&mut self, asid: Asid, start: VirtAddr, end: VirtAddr) {
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
            if let Some(v) = in_the_way.iter().find(|v| &*v.name != AUTO_VMA_NAME) {
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
        p.aspace.vmas.insert(Vma { start, end, writable, name: name.into() });
        self.with_systems(|systems, k| systems.iter_mut().for_each(|s| s.mmap(k, asid, start, end, name)));
        Ok(())
    }

    /// munmap: unmaps, frees the frames, shoots down the range.
    pub fn munmap(&mut self, asid: Asid, start: VirtAddr, len: u64) -> Result<()> {
        let end = page_end(start, len)?;
        self.unmap(asid, start, end, true)?;
        let p = self.proc_mut(asid);
        if p.auto_vma {
            p.unmapped.remove(start, end);
            p.unmapped.insert(Vma { start, end, writable: false, name: "".into() });
        }
        Ok(())
    }

    /// Removes [start, end) from the VMAs and the page table, freeing the
    /// frames (to the system that claims them, else the buddy allocator);
    /// shoots the range down always (`always`: munmap) or only when a page
    /// was mapped in it (an automatic VMA's unused overlap).
    pub(super) fn unmap(&mut self, asid: Asid, start: VirtAddr, end: VirtAddr, always: bool) -> Result<()> {
        self.with_systems(|systems, k| {
            systems.iter_mut().for_each(|s| s.before_unmap(k, asid, start, end));
            let (leaves, splits) = k.procs[asid as usize - 1].aspace.unmap_range(start, end, &mut k.mem)?;
            k.stats.splits += splits as u64;
            let shoot = always || !leaves.is_empty() || splits > 0;
            for (va, m) in leaves {
                if k.release_cached(m.frame) {
                    continue;
                }
                if !systems.iter_mut().any(|s| s.frame_freed(k, va, m.frame, m.size)) {
                    k.mem.free(m.frame, m.size.order());
                }
            }
            systems.iter_mut().for_each(|s| s.after_unmap(k, asid, start, end));
            if shoot {
                k.shoot(asid, start, end);
            }
            Ok(())
        })
    }

    /// mprotect: changes permissions (splitting huge pages at the edges).
    pub fn mprotect(&mut self, asid: Asid, start: VirtAddr, len: u64, writable: bool) -> Result<()> {
        let end = page_end(start, len)?;
        self.with_systems(|systems, k| systems.iter_mut().for_each(|s| s.protect(k, asid, start, end)));
        let splits = self.procs[asid as usize - 1].aspace.protect_range(start, end, writable, &mut self.mem)?;
        self.stats.splits += splits as u64;
        self.shoot(asid, start, end);
        Ok(())
    }

    /// Runs the daemons due by simulated time `now` (cycles), in order.
    pub fn tick(&mut self, now: f64) {
        if self.daemons.is_empty() {
            return;
        }
        let mut daemons = std::mem::take(&mut self.daemons);
        for d in &mut daemons {
            d.run_due(self, now);
        }
        self.daemons = daemons;
    }

    /// The run ended: each daemon's `finish`, in order (the first error
    /// stops it).
    pub fn finish(&mut self) -> Result<()> {
        let mut daemons = std::mem::take(&mut self.daemons);
        let result = daemons.iter_mut().try_for_each(|d| d.finish(self));
        self.daemons = daemons;
        result
    }

    /// Explicit compaction towards a free block of `order` (Linux's
    /// compact_zone). Returns the cycles it cost.
    pub fn compact(&mut self, order: Order) -> f64 {
        self.with_systems(|systems, k| super::compaction::compact(k, systems, order))
    }

    /// Zeroes every counter of the OS side (the end of warm-up).
    pub fn reset_stats(&mut self) {
        self.stats.reset();
        self.tier_stats = Default::default();
        if let Some(cache) = &mut self.page_cache {
            cache.stats = Default::default();
        }
        self.color_pool.refills = 0;
        self.procs.iter_mut().for_each(|p| p.aspace.pt.reset_contig_breaks());
        self.systems.iter_mut().for_each(|s| s.reset_stats());
        self.daemons.iter_mut().for_each(|d| d.reset_stats());
        self.miss_samples.reset_taken();
    }
}

fn page_end(start: VirtAddr, len: u64) -> Result<VirtAddr> {
    if !start.is_aligned(4096) || len == 0 {
        return Err(Error::Workload(format!("mapping at {start} of {len} bytes is not page-aligned or empty")));
    }
    let end = start.checked_add((len + 4095) & !4095).ok_or_else(|| Error::Workload("mapping wraps".into()))?;
    Ok(end)
}
