//! The allocator cache (the paper's III-C): a sub-mapping is carved from a
//! buddy block of p x n pages; the block's other n - 1 strided mappings,
//! one per color, wait here, and every later request tries the cache
//! first. munmap returns whole colored huge pages here too.
//!
//! With `os.chp.share_leftovers`, the strided mappings of colors the
//! faulting process may not use go instead to the kernel's color pool as
//! 4 KiB frames, for other processes' coloring (the paper's prototype
//! shares memory with PALLOC). They are remembered here by first frame: a
//! later request for such a color takes one back if all its frames are
//! still in the pool, else carves a new block.

use super::geometry::ChpGeometry;
use super::ChpStats;
use crate::os::ColorPool;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Order, Pfn};

/// The owner of the cache's frames.
const CHP_POOL: u8 = 3;

/// The allocator cache: free strided sub-mappings (their first frames)
/// per color; their frames are owned `Reserved`.
#[derive(Debug)]
pub struct AllocatorCache {
    geometry: ChpGeometry,
    lists: Vec<Vec<Pfn>>,
    /// Whether leftovers of colors the process may not use go to the pool.
    share: bool,
    /// Sub-mappings offered to the color pool, per color, by first frame;
    /// some may have lost frames to coloring since (checked on reclaim).
    offered: Vec<Vec<Pfn>>,
}

/// Where the memory of one request may go and come from: the pool, and
/// the colors the faulting process may use (empty = all).
pub(super) struct Sharing<'a> {
    pub pool: &'a mut ColorPool,
    pub allowed: &'a [u32],
}

impl AllocatorCache {
    pub fn new(geometry: ChpGeometry, share: bool) -> AllocatorCache {
        let lists = vec![Vec::new(); geometry.nr_colors() as usize];
        AllocatorCache { geometry, offered: lists.clone(), lists, share }
    }

    /// Sub-mappings waiting in the allocator cache.
    pub fn cached(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum()
    }

    /// A sub-mapping of `color`: from the cache, else taken back whole from
    /// the pool (when sharing), else carved from a new block whose other
    /// colors go to the cache (or the pool). `None` when no block.
    pub(super) fn take(
        &mut self,
        mem: &mut PhysMem,
        sharing: Sharing,
        color: u32,
        stats: &mut ChpStats,
    ) -> Option<Pfn> {
        if let Some(base) = self.lists[color as usize].pop() {
            stats.cache_hits += 1;
            return Some(base);
        }
        if let Some(base) = self.reclaim(mem, sharing.pool, color) {
            stats.leftovers_reclaimed += 1;
            return Some(base);
        }
        let block = alloc_block(mem, self.geometry.block_order())?;
        stats.blocks += 1;
        for c in (0..self.geometry.nr_colors()).filter(|&c| c != color) {
            let base = block.add(c as u64);
            if self.share && !sharing.allowed.is_empty() && !sharing.allowed.contains(&c) {
                sharing.pool.offer(mem, self.frames(base));
                self.offered[c as usize].push(base);
                stats.leftovers_offered += 1;
            } else {
                self.lists[c as usize].push(base);
            }
        }
        Some(block.add(color as u64))
    }

    /// The most recently offered sub-mapping of `color` whose frames are
    /// all still in the pool, taken back. Those that lost a frame are
    /// forgotten: a frame coloring hands out goes to the buddy allocator
    /// when freed, never back to the pool as a leftover.
    fn reclaim(&mut self, mem: &mut PhysMem, pool: &mut ColorPool, color: u32) -> Option<Pfn> {
        while let Some(base) = self.offered[color as usize].pop() {
            if pool.reclaim(self.frames(base)) {
                self.frames(base).for_each(|pfn| mem.set_owner(pfn, FrameOwner::Reserved { pool: CHP_POOL }));
                return Some(base);
            }
        }
        None
    }

    /// Returns a whole sub-mapping to the cache; its frames become `Reserved`.
    pub(super) fn give_back(&mut self, mem: &mut PhysMem, base: Pfn) {
        self.frames(base).for_each(|pfn| mem.set_owner(pfn, FrameOwner::Reserved { pool: CHP_POOL }));
        self.lists[self.geometry.color_of(base) as usize].push(base);
    }

    /// The frames of the sub-mapping that starts at `base`.
    fn frames(&self, base: Pfn) -> impl Iterator<Item = Pfn> + Clone {
        let geo = self.geometry;
        (0..geo.pages_per_sub()).map(move |i| geo.frame(base, i))
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
