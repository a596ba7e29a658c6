//! `coloring`: PALLOC-style page coloring. A page's color is the
//! concatenation of chosen physical-address bits (`hw::cache::ColorMap`).
//! Order-0 requests are served from per-color lists; when no allowed color
//! has a page, a buddy block spanning every color is broken into order-0
//! pages bucketed by color (PALLOC does the same). Among the allowed colors
//! that have pages, one is picked round-robin (PALLOC's per-CPU counter
//! modulo the number found). Pages of colors the process may not use stay
//! in their lists for other processes.

use super::{fault::FaultOutcome, FaultKind, Kernel, Policy};
use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr};

const COLOR_POOL: u8 = 2;

#[derive(Debug)]
pub struct ColorPool {
    map: ColorMap,
    /// Free order-0 frames per color (owner `Reserved`), popped from the end.
    lists: Vec<Vec<Pfn>>,
    /// Order of the block that holds every color at least once.
    refill_order: Order,
}

impl ColorPool {
    pub fn new(map: &ColorMap) -> ColorPool {
        ColorPool {
            map: map.clone(),
            lists: vec![Vec::new(); map.nr_colors() as usize],
            refill_order: Order::new(map.span_order()),
        }
    }

    /// A frame of one of `allowed` colors (all colors when empty); `pick`
    /// chooses among the candidate colors (round-robin or bin hopping).
    pub fn alloc(
        &mut self,
        mem: &mut PhysMem,
        allowed: &[u32],
        mut pick: impl FnMut(&[u32]) -> u32,
        refills: &mut u64,
    ) -> Option<Pfn> {
        let all: Vec<u32>;
        let allowed = if allowed.is_empty() {
            all = (0..self.map.nr_colors()).collect();
            &all[..]
        } else {
            allowed
        };
        loop {
            let candidates: Vec<u32> = allowed.iter().copied().filter(|&c| !self.lists[c as usize].is_empty()).collect();
            if !candidates.is_empty() {
                let color = pick(&candidates);
                return self.lists[color as usize].pop();
            }
            if !self.refill(mem) {
                return None;
            }
            *refills += 1;
        }
    }

    /// Breaks one buddy block into order-0 pages bucketed by color.
    fn refill(&mut self, mem: &mut PhysMem) -> bool {
        let Some(block) = mem.alloc(self.refill_order, Migratetype::Movable, FrameOwner::Reserved { pool: COLOR_POOL }) else {
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

impl Kernel {
    /// A colored 4 KiB fault: round-robin among the allowed colors
    /// (`coloring`), or the color after the previous fault's (`bin-hopping`).
    pub(super) fn fault_colored(&mut self, asid: Asid, vaddr: VirtAddr, vma: &Vma, hop: bool) -> Result<FaultOutcome> {
        let page = vaddr.align_down(4096);
        let allowed = self.proc(asid).colors.clone();
        let mut cursor = self.proc(asid).color_cursor;
        let nr_colors = self.colors.nr_colors();
        let pool = match &mut self.policy {
            Policy::Coloring(pool) | Policy::BinHopping(pool) => pool,
            Policy::Chp(state) => &mut state.pool,
            _ => unreachable!("fault_colored is only called under a coloring policy"),
        };
        let mut refills = 0;
        let frame = pool.alloc(
            &mut self.mem,
            &allowed,
            |candidates| {
                if hop {
                    super::bin_hopping::next_bin(candidates, &allowed, nr_colors, &mut cursor)
                } else {
                    let c = candidates[cursor % candidates.len()];
                    cursor = cursor.wrapping_add(1);
                    c
                }
            },
            &mut refills,
        );
        self.stats.coloring_refills += refills;
        self.proc_mut(asid).color_cursor = cursor;
        let frame = frame.ok_or_else(|| {
            let share = if allowed.is_empty() { String::new() } else { format!(" ({} of {nr_colors} colors allowed by workload.colors)", allowed.len()) };
            Error::OutOfMemory(format!("no frame of an allowed color for {vaddr}{share}"))
        })?;
        self.mem.set_owner(frame, FrameOwner::User { asid, vpn: page.vpn() });
        self.map_user(asid, page, frame, PageSize::Size4K, vma.writable)?;
        Ok(FaultOutcome { kind: FaultKind::Colored, size: PageSize::Size4K, cycles: self.costs.colored })
    }
}
