//! The pool of free 4 KiB frames by color (PALLOC's per-color lists),
//! owned by the kernel and lent to every system that colors pages. Order-0
//! requests are served from per-color lists; when no allowed color has a
//! page, a buddy block spanning every color is broken into order-0 pages
//! bucketed by color (PALLOC does the same), or on fragmented memory the
//! largest free block there is, down to a watermark (`refill`). Pages of colors a process may
//! not use stay in their lists for other processes.
//!
//! Another system may *offer* frames it carved but cannot use (colored huge
//! pages' leftovers of colors their process may not use,
//! `os.chp.share_leftovers`): they are served before a refill breaks a new
//! block, and their owner may take a set of them back while every one is
//! still here (`reclaim`).

use std::collections::BTreeSet;

use crate::hw::cache::ColorMap;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Order, Pfn};

const COLOR_POOL: u8 = 2;

#[derive(Debug)]
pub struct ColorPool {
    map: ColorMap,
    /// Free order-0 frames per color (owner `Reserved`), popped from the end.
    lists: Vec<Vec<Pfn>>,
    /// Offered frames per color (owner `Reserved`), lowest first. A set, not
    /// a list, because `reclaim` removes frames from the middle.
    offered: Vec<BTreeSet<Pfn>>,
    /// Order of the block that holds every color at least once.
    refill_order: Order,
    /// Buddy blocks broken into colored pages (`os.coloring.refills`).
    pub refills: u64,
}

impl ColorPool {
    pub fn new(map: &ColorMap) -> ColorPool {
        ColorPool {
            map: map.clone(),
            lists: vec![Vec::new(); map.nr_colors() as usize],
            offered: vec![BTreeSet::new(); map.nr_colors() as usize],
            refill_order: Order::new(map.span_order()),
            refills: 0,
        }
    }

    /// The colors it sorts frames by.
    pub fn map(&self) -> &ColorMap {
        &self.map
    }

    /// A frame of one of `allowed` colors (all colors when empty); `pick`
    /// chooses among the candidate colors (round-robin or bin hopping).
    pub fn alloc(&mut self, mem: &mut PhysMem, allowed: &[u32], mut pick: impl FnMut(&[u32]) -> u32) -> Option<Pfn> {
        let all: Vec<u32>;
        let allowed = if allowed.is_empty() {
            all = (0..self.map.nr_colors()).collect();
            &all[..]
        } else {
            allowed
        };
        loop {
            let candidates: Vec<u32> = allowed.iter().copied().filter(|&c| self.has(c)).collect();
            if !candidates.is_empty() {
                let color = pick(&candidates) as usize;
                // Offered frames first: they are already carved out, and
                // using them is what offering is for.
                return self.offered[color].pop_first().or_else(|| self.lists[color].pop());
            }
            if !self.refill(mem) {
                return None;
            }
            self.refills += 1;
        }
    }

    /// Breaks one buddy block into order-0 pages bucketed by color: one
    /// spanning every color, or, when memory is too fragmented to hold one,
    /// the largest free block there is (PALLOC moves whatever blocks the
    /// buddy allocator has into its color bins; without this step a
    /// fragmented machine's colored faults would all fall back to
    /// uncolored frames). Smaller blocks are taken only while the buddy
    /// allocator keeps as many free frames as a block spanning every color
    /// holds (pagelab's watermark, so that page tables and other kernel
    /// allocations still find frames when the wanted color is scarce).
    fn refill(&mut self, mem: &mut PhysMem) -> bool {
        let owner = FrameOwner::Reserved { pool: COLOR_POOL };
        let smallest = if mem.free_pages() > 2 * self.refill_order.nr_pages() { 0 } else { self.refill_order.get() };
        let Some((block, order)) = (smallest..=self.refill_order.get()).rev().find_map(|o| {
            let order = Order::new(o);
            mem.alloc(order, Migratetype::Movable, owner).map(|pfn| (pfn, order))
        }) else {
            return false;
        };
        // Pushed in reverse so that pops hand out the lowest frame first.
        for i in (0..order.nr_pages()).rev() {
            let pfn = block.add(i);
            self.lists[self.map.color_of(pfn) as usize].push(pfn);
        }
        true
    }

    fn has(&self, color: u32) -> bool {
        !self.lists[color as usize].is_empty() || !self.offered[color as usize].is_empty()
    }

    /// Frames the pool holds, free for any process of the right colors.
    pub fn pooled(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum::<u64>() + self.offered()
    }

    /// Offered frames still in the pool.
    pub fn offered(&self) -> u64 {
        self.offered.iter().map(|s| s.len() as u64).sum()
    }

    /// Takes free frames another system carved and cannot use; they become
    /// the pool's (owner `Reserved`) until a process or `reclaim` takes them.
    pub fn offer(&mut self, mem: &mut PhysMem, frames: impl Iterator<Item = Pfn>) {
        for pfn in frames {
            mem.set_owner(pfn, FrameOwner::Reserved { pool: COLOR_POOL });
            let fresh = self.offered[self.map.color_of(pfn) as usize].insert(pfn);
            debug_assert!(fresh, "frame {pfn} offered twice");
        }
    }

    /// Takes back offered frames, all of them or none: true when every one
    /// was still in the pool (they leave it; the caller sets their owner).
    pub fn reclaim(&mut self, frames: impl Iterator<Item = Pfn> + Clone) -> bool {
        let set = |pfn: Pfn| self.map.color_of(pfn) as usize;
        if !frames.clone().all(|pfn| self.offered[set(pfn)].contains(&pfn)) {
            return false;
        }
        for pfn in frames {
            self.offered[set(pfn)].remove(&pfn);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 frames, 4 colors on bits 12-13 (a block spanning every color is
    /// 4 frames), the first frame of every such block pinned: no order-2
    /// block is free, each block leaves an order-0 frame (4k + 1) and an
    /// order-1 block (4k + 2, 4k + 3).
    fn fragmented() -> (PhysMem, ColorPool, ColorMap) {
        let map = ColorMap::new(&[12, 13], "t").unwrap();
        let mut mem = PhysMem::new(64, 10).unwrap();
        for k in 0..16 {
            assert!(mem.alloc_specific(Pfn::new(4 * k), Order::BASE, FrameOwner::Kernel));
        }
        let pool = ColorPool::new(&map);
        (mem, pool, map)
    }

    #[test]
    fn a_fragmented_machine_refills_from_smaller_blocks() {
        let (mut mem, mut pool, map) = fragmented();
        // The largest free blocks come first: the order-1 block at 2 holds
        // colors 2 and 3.
        assert_eq!(pool.alloc(&mut mem, &[2], |_| 2), Some(Pfn::new(2)));
        assert_eq!(pool.refills, 1);
        // Color 1 lives only in the order-0 frames: the 15 other order-1
        // blocks are taken (colors 2 and 3) before frame 1.
        assert_eq!(pool.alloc(&mut mem, &[1], |_| 1), Some(Pfn::new(1)));
        assert_eq!(pool.refills, 17);
        assert_eq!(map.color_of(Pfn::new(1)), 1);
        assert_eq!(pool.pooled(), 31, "16 order-1 blocks (32 frames) and frame 1, two handed out");
    }

    #[test]
    fn smaller_blocks_stop_at_the_watermark() {
        let (mut mem, mut pool, _) = fragmented();
        // Leave 8 free frames (two blocks spanning every color): the
        // watermark, at and below which only whole blocks are taken.
        let mut taken = 0;
        while mem.free_pages() > 8 {
            mem.alloc(Order::BASE, Migratetype::Movable, FrameOwner::Kernel).unwrap();
            taken += 1;
        }
        assert_eq!(taken, 40);
        assert_eq!(pool.alloc(&mut mem, &[], |c| c[0]), None, "no whole block, and smaller ones are kept");
        assert_eq!(mem.free_pages(), 8);
    }
}
