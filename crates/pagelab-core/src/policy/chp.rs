//! `chp`: Colored Huge Pages (Kostas, Gizopoulos and Karakostas), with the
//! two prior designs the paper compares against as configurations of the
//! same machinery (`os.chp.scheme`).
//!
//! A faulting 2 MiB region of a large anonymous VMA is backed by
//! `submappings` strided sub-mappings (8 by default, 64 pages each). With n
//! system colors, a frame's color is its low log2(n) pfn bits, so the pages
//! of one color in an aligned block are n frames apart: page i of a
//! sub-mapping whose first frame is `base` is `base | (i << log2(n))`. A
//! sub-mapping of p pages is carved from a buddy block of p x n pages (256
//! KiB x n for 8 sub-mappings); the block's other n - 1 strided mappings,
//! one per color, go to the *allocator cache*, which every later request
//! tries first and to which munmap returns whole colored huge pages.
//! Colors go to sub-mappings round-robin from the process's allowed set;
//! when a sub-mapping cannot be had, the region falls back to PALLOC's 4
//! KiB coloring (the paper's best effort), and what was taken for it goes
//! back to the cache.
//!
//! The page table holds all 512 PTEs, as the paper's prototype installs
//! them, plus the colored-huge-page bit in the PMD entry; the modified
//! walker (`engine::mmu`) reads the 8 sub-mapping entries with one
//! cache-line reference and fills the L2 TLB with one entry.

use super::{fault::FaultOutcome, ColorPool, FaultKind, Kernel, Policy};
use crate::config::{ChpConfig, ChpScheme};
use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr};

const CHP_POOL: u8 = 3;
const HUGE: u64 = 2 << 20;
const PAGES_PER_HUGE: u64 = 512;

/// The shape of colored huge pages on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChpGeometry {
    /// log2 of the number of system colors: the stride, in frames, between
    /// consecutive pages of a sub-mapping.
    pub stride_shift: u8,
    /// Sub-mappings per 2 MiB page (1, 2, 4 or 8).
    pub submappings: u32,
}

impl ChpGeometry {
    /// The geometry for a color map whose bits are consecutive from bit 12
    /// (the color must be the low bits of the pfn for a stride to exist).
    pub fn new(colors: &ColorMap, submappings: u32) -> Result<ChpGeometry> {
        let bits = colors.bits();
        if bits.iter().enumerate().any(|(i, &b)| b != 12 + i as u32) {
            return Err(Error::config(
                "os.coloring.bits",
                format!("colored huge pages need color bits consecutive from bit 12, not {bits:?}"),
            ));
        }
        Ok(ChpGeometry { stride_shift: bits.len() as u8, submappings })
    }

    pub fn nr_colors(&self) -> u32 {
        1 << self.stride_shift
    }
    /// Pages of one sub-mapping.
    pub fn pages_per_sub(&self) -> u64 {
        PAGES_PER_HUGE / self.submappings as u64
    }
    /// Order of the buddy block one sub-mapping is carved from.
    pub fn block_order(&self) -> Order {
        Order::new(self.pages_per_sub().trailing_zeros() as u8 + self.stride_shift)
    }
    /// Frame of page `i` of the sub-mapping that starts at `base`.
    #[inline]
    pub fn frame(&self, base: Pfn, i: u64) -> Pfn {
        Pfn::new(base.raw() | (i << self.stride_shift))
    }
    fn color_of(&self, base: Pfn) -> u32 {
        (base.raw() & (self.nr_colors() as u64 - 1)) as u32
    }
}

/// CHP's state: the allocator cache and PALLOC's pool for the fallback.
#[derive(Debug)]
pub struct ChpState {
    pub geometry: ChpGeometry,
    scheme: ChpScheme,
    min_vma: u64,
    /// The allocator cache: free strided sub-mappings (their first frames)
    /// per color; their frames are owned `Reserved`.
    cache: Vec<Vec<Pfn>>,
    /// 4 KiB coloring for fallbacks and processes without CHP.
    pub pool: ColorPool,
}

impl ChpState {
    pub fn new(cfg: &ChpConfig, colors: &ColorMap) -> Result<ChpState> {
        let geometry = ChpGeometry::new(colors, cfg.nr_submappings())?;
        Ok(ChpState {
            geometry,
            scheme: cfg.scheme,
            min_vma: cfg.min_vma.bytes(),
            cache: vec![Vec::new(); geometry.nr_colors() as usize],
            pool: ColorPool::new(colors),
        })
    }

    /// Sub-mappings waiting in the allocator cache.
    pub fn cached(&self) -> u64 {
        self.cache.iter().map(|l| l.len() as u64).sum()
    }

    /// A sub-mapping of `color`: from the cache, else carved from a new
    /// block whose other colors go to the cache. `None` when no block.
    fn take(&mut self, mem: &mut PhysMem, color: u32, stats: &mut super::OsStats) -> Option<Pfn> {
        if let Some(base) = self.cache[color as usize].pop() {
            stats.chp_cache_hits += 1;
            return Some(base);
        }
        let block = alloc_block(mem, self.geometry.block_order())?;
        stats.chp_blocks += 1;
        for c in 0..self.geometry.nr_colors() {
            if c != color {
                self.cache[c as usize].push(block.add(c as u64));
            }
        }
        Some(block.add(color as u64))
    }

    /// Returns a whole sub-mapping to the cache; its frames become `Reserved`.
    fn give_back(&mut self, mem: &mut PhysMem, base: Pfn) {
        for i in 0..self.geometry.pages_per_sub() {
            mem.set_owner(self.geometry.frame(base, i), FrameOwner::Reserved { pool: CHP_POOL });
        }
        self.cache[self.geometry.color_of(base) as usize].push(base);
    }
}

/// A free aligned block of `order` owned by the CHP pool. Beyond the buddy
/// allocator's largest order (Scattered Superpages with many colors), a run
/// of free max-order blocks is taken whole, as alloc_contig_range would.
fn alloc_block(mem: &mut PhysMem, order: Order) -> Option<Pfn> {
    let owner = FrameOwner::Reserved { pool: CHP_POOL };
    let max = Order::new(mem.max_order());
    if order <= max {
        return mem.alloc(order, Migratetype::Movable, owner);
    }
    let (run, step) = (order.nr_pages(), max.nr_pages());
    let start = mem.free_blocks(max).into_iter().find(|head| {
        head.raw().is_multiple_of(run)
            && head.raw() + run <= mem.nr_frames()
            && (0..run / step).all(|j| mem.free_block_containing(head.add(j * step)).is_some_and(|(_, o)| o >= max))
    })?;
    for j in 0..run / step {
        let ok = mem.alloc_specific(start.add(j * step), max, owner);
        debug_assert!(ok, "a free max-order block could not be taken");
    }
    Some(start)
}

impl Kernel {
    /// A colored-huge-page fault: the whole 2 MiB region around `vaddr`, or
    /// `None` to fall back to 4 KiB coloring.
    pub(super) fn fault_chp(&mut self, asid: Asid, vaddr: VirtAddr, vma: &Vma) -> Result<Option<FaultOutcome>> {
        let Policy::Chp(state) = &self.policy else { unreachable!("fault_chp under another policy") };
        let base = vaddr.align_down(HUGE);
        if !self.proc(asid).chp
            || vma.len() < state.min_vma
            || !vma.covers(base, HUGE)
            || !self.range_is_empty(asid, base, PageSize::Size2M)
        {
            return Ok(None);
        }
        self.stats.chp_attempts += 1;
        let colors = self.chp_colors(asid);
        let Some(subs) = self.take_submappings(&colors) else {
            self.stats.chp_fallback += 1;
            return Ok(None);
        };
        self.install_chp(asid, base, &subs, vma.writable)?;
        self.stats.chp_success += 1;
        Ok(Some(FaultOutcome { kind: FaultKind::Chp, size: PageSize::Size2M, cycles: self.costs.chp }))
    }

    /// The colors of the next region's sub-mappings: round-robin over the
    /// allowed set, per sub-mapping (chp, scattered) or per region (swap).
    fn chp_colors(&mut self, asid: Asid) -> Vec<u32> {
        let Policy::Chp(state) = &self.policy else { unreachable!() };
        let (n, scheme, nr_colors) = (state.geometry.submappings as usize, state.scheme, state.geometry.nr_colors());
        let p = self.proc_mut(asid);
        let allowed: Vec<u32> = if p.colors.is_empty() { (0..nr_colors).collect() } else { p.colors.clone() };
        let mut next = || {
            let c = allowed[p.color_cursor % allowed.len()];
            p.color_cursor = p.color_cursor.wrapping_add(1);
            c
        };
        match scheme {
            ChpScheme::Swap => vec![next(); n],
            ChpScheme::Chp | ChpScheme::Scattered => (0..n).map(|_| next()).collect(),
        }
    }

    /// One sub-mapping per color, or none at all (what was taken goes back).
    fn take_submappings(&mut self, colors: &[u32]) -> Option<Vec<Pfn>> {
        let Policy::Chp(state) = &mut self.policy else { unreachable!() };
        let mut subs = Vec::with_capacity(colors.len());
        for &c in colors {
            match state.take(&mut self.mem, c, &mut self.stats) {
                Some(b) => subs.push(b),
                None => {
                    for b in subs {
                        state.give_back(&mut self.mem, b);
                    }
                    return None;
                }
            }
        }
        Some(subs)
    }

    /// Installs the 512 PTEs of a colored huge page and sets its PMD bit.
    fn install_chp(&mut self, asid: Asid, base: VirtAddr, subs: &[Pfn], writable: bool) -> Result<()> {
        let Policy::Chp(state) = &self.policy else { unreachable!() };
        let geo = state.geometry;
        let per = geo.pages_per_sub();
        for (j, &sub) in subs.iter().enumerate() {
            for i in 0..per {
                let page = base.add((j as u64 * per + i) * 4096);
                let frame = geo.frame(sub, i);
                self.mem.set_owner(frame, FrameOwner::User { asid, vpn: page.vpn() });
                self.map_user(asid, page, frame, PageSize::Size4K, writable)?;
            }
        }
        crate::systems::chp::pagetable::set_colored_huge(self.page_table_mut(asid), base, true);
        Ok(())
    }

    /// Before [start, end) is unmapped or reprotected: colored huge pages
    /// wholly inside it are listed (munmap returns their sub-mappings to
    /// the cache); those it cuts lose their PMD bit and become ordinary 4
    /// KiB mappings, since a TLB entry's permission covers all of it.
    pub(super) fn chp_regions_in(&mut self, asid: Asid, start: VirtAddr, end: VirtAddr) -> Vec<(VirtAddr, Vec<Pfn>)> {
        let Policy::Chp(state) = &self.policy else { return Vec::new() };
        let geo = state.geometry;
        let mut whole = Vec::new();
        let mut region = start.align_down(HUGE);
        while region < end {
            let pt = &mut self.procs[asid as usize - 1].aspace.pt;
            if crate::systems::chp::pagetable::is_colored_huge(pt, region) {
                if region >= start && region.add(HUGE) <= end {
                    let per = geo.pages_per_sub();
                    let subs = (0..geo.submappings as u64)
                        .map(|j| pt.lookup(region.add(j * per * 4096)).expect("a colored huge page is fully mapped").frame)
                        .collect();
                    whole.push((region, subs));
                } else {
                    crate::systems::chp::pagetable::set_colored_huge(pt, region, false);
                    self.stats.chp_demoted += 1;
                }
            }
            region = region.add(HUGE);
        }
        whole
    }

    /// munmap's end for colored huge pages: their sub-mappings go back to
    /// the allocator cache instead of the buddy allocator.
    pub(super) fn chp_reclaim(&mut self, regions: Vec<(VirtAddr, Vec<Pfn>)>) {
        let Policy::Chp(state) = &mut self.policy else { return };
        for (_, subs) in regions {
            for b in subs {
                state.give_back(&mut self.mem, b);
                self.stats.chp_returned += 1;
            }
        }
    }

    /// Whether a 4 KiB frame freed by munmap belongs to a colored huge page
    /// being reclaimed (so it must not go to the buddy allocator).
    /// `regions` are in address order, as `chp_regions_in` lists them.
    pub(super) fn chp_frame_reclaimed(regions: &[(VirtAddr, Vec<Pfn>)], vaddr: VirtAddr) -> bool {
        let after = regions.partition_point(|(r, _)| *r <= vaddr);
        after > 0 && vaddr < regions[after - 1].0.add(HUGE)
    }
}
