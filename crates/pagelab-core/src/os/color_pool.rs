//! The pool of free 4 KiB frames by color (PALLOC's per-color lists),
//! owned by the kernel and lent to every system that colors pages. Order-0
//! requests are served from per-color lists; when no allowed color has a
//! page, a buddy block spanning every color is broken into order-0 pages
//! bucketed by color (PALLOC does the same). Pages of colors a process may
//! not use stay in their lists for other processes.

use crate::hw::cache::ColorMap;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Order, Pfn};

const COLOR_POOL: u8 = 2;

#[derive(Debug)]
pub struct ColorPool {
    map: ColorMap,
    /// Free order-0 frames per color (owner `Reserved`), popped from the end.
    lists: Vec<Vec<Pfn>>,
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
            refill_order: Order::new(map.span_order()),
            refills: 0,
        }
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
            let candidates: Vec<u32> =
                allowed.iter().copied().filter(|&c| !self.lists[c as usize].is_empty()).collect();
            if !candidates.is_empty() {
                let color = pick(&candidates);
                return self.lists[color as usize].pop();
            }
            if !self.refill(mem) {
                return None;
            }
            self.refills += 1;
        }
    }

    /// Breaks one buddy block into order-0 pages bucketed by color.
    fn refill(&mut self, mem: &mut PhysMem) -> bool {
        let Some(block) = mem.alloc(self.refill_order, Migratetype::Movable, FrameOwner::Reserved { pool: COLOR_POOL })
        else {
            return false;
        };
        // Pushed in reverse so that pops hand out the lowest frame first.
        for i in (0..self.refill_order.nr_pages()).rev() {
            let pfn = block.add(i);
            self.lists[self.map.color_of(pfn) as usize].push(pfn);
        }
        true
    }

    /// Frames the pool holds, free for any process of the right colors.
    pub fn pooled(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum()
    }
}
