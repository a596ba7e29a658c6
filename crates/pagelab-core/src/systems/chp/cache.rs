//! The allocator cache (the paper's III-C): a sub-mapping is carved from a
//! buddy block of p x n pages; the block's other n - 1 strided mappings,
//! one per color, wait here, and every later request tries the cache
//! first. munmap returns whole colored huge pages here too.

use super::geometry::ChpGeometry;
use super::ChpStats;
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
}

impl AllocatorCache {
    pub fn new(geometry: ChpGeometry) -> AllocatorCache {
        AllocatorCache { geometry, lists: vec![Vec::new(); geometry.nr_colors() as usize] }
    }

    /// Sub-mappings waiting in the allocator cache.
    pub fn cached(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum()
    }

    /// A sub-mapping of `color`: from the cache, else carved from a new
    /// block whose other colors go to the cache. `None` when no block.
    pub(super) fn take(&mut self, mem: &mut PhysMem, color: u32, stats: &mut ChpStats) -> Option<Pfn> {
        if let Some(base) = self.lists[color as usize].pop() {
            stats.cache_hits += 1;
            return Some(base);
        }
        let block = alloc_block(mem, self.geometry.block_order())?;
        stats.blocks += 1;
        for c in 0..self.geometry.nr_colors() {
            if c != color {
                self.lists[c as usize].push(block.add(c as u64));
            }
        }
        Some(block.add(color as u64))
    }

    /// Returns a whole sub-mapping to the cache; its frames become `Reserved`.
    pub(super) fn give_back(&mut self, mem: &mut PhysMem, base: Pfn) {
        for i in 0..self.geometry.pages_per_sub() {
            mem.set_owner(self.geometry.frame(base, i), FrameOwner::Reserved { pool: CHP_POOL });
        }
        self.lists[self.geometry.color_of(base) as usize].push(base);
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
