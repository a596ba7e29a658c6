//! HawkEye's access-coverage bins (`mm/hawkeye/ohp.c`: `struct ohp_addr`,
//! `mm->ohp.priority[]`). Each candidate 2 MiB region of a process has a
//! weight, its access coverage: the number of its 4 KiB pages whose
//! accessed bit was set in a sampling window, averaged over windows as
//! `update_kaddr_weight` does, weight = (6 x weight + 4 x accessed) / 10
//! in integers (an exponential moving average giving the newest window
//! 0.4), at most 512. A region sits in bin `order_base_2(weight)` (0 for
//! weights 0 and 1, 1 for 2, 2 for 3-4, ..., 9 for 257-512). Promotion
//! takes the first region of the highest non-empty bin above 0: a region
//! whose weight is 0 or 1 (no page, or one, seen accessed) is never
//! promoted.
//!
//! The order within a bin is the kernel's: a new or put-back region goes
//! to the tail (`list_add_tail`), a re-binned one to the head
//! (`list_move`), re-binning visiting the bins from the highest down.

use std::collections::VecDeque;

use crate::units::VirtAddr;

/// `MAX_BINS`.
pub const BINS: usize = 12;

/// Pages in a 2 MiB region (`HPAGE_PMD_NR`).
const REGION_PAGES: u32 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub base: VirtAddr,
    pub weight: u32,
}

/// What the count of one region found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// This many 4 KiB pages of the region were accessed.
    Accessed(u32),
    /// The region can no longer be promoted (a huge page already, no page
    /// table, not inside one VMA): dropped (`ohp_nr_accessed` < 0).
    Invalid,
}

/// One process's candidate regions, by bin.
#[derive(Debug, Clone, Default)]
pub struct Bins {
    bins: [VecDeque<Candidate>; BINS],
}

/// `order_base_2`: the bin of a weight.
pub fn bin_of(weight: u32) -> usize {
    if weight <= 1 {
        0
    } else {
        (32 - (weight - 1).leading_zeros()) as usize
    }
}

/// `update_kaddr_weight`.
pub fn averaged(weight: u32, accessed: u32) -> u32 {
    ((weight * 6 + accessed * 4) / 10).min(REGION_PAGES)
}

impl Bins {
    /// A new candidate (`add_ohp_bin`): weight 0, bin 0's tail.
    pub fn add(&mut self, base: VirtAddr) {
        self.bins[0].push_back(Candidate { base, weight: 0 });
    }

    /// A region promotion did not take (`ohp_putback_kaddr`): bin 0's
    /// tail, its weight kept (the next count re-bins it).
    pub fn put_back(&mut self, c: Candidate) {
        self.bins[0].push_back(c);
    }

    pub fn len(&self) -> usize {
        self.bins.iter().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every candidate's region, in bin order (highest bin first).
    pub fn regions(&self) -> impl Iterator<Item = VirtAddr> + '_ {
        self.bins.iter().rev().flatten().map(|c| c.base)
    }

    /// Takes the first candidate of bin `bin`.
    pub fn pop(&mut self, bin: usize) -> Option<Candidate> {
        self.bins[bin].pop_front()
    }

    /// One count of every candidate (`ohp_adjust_mm_bins`): each region's
    /// coverage by `count`, its weight averaged, moved to its bin's head;
    /// invalid ones dropped. Returns how many were dropped.
    pub fn adjust(&mut self, mut count: impl FnMut(VirtAddr) -> Coverage) -> u64 {
        let visiting: Vec<Candidate> = self.bins.iter_mut().rev().flat_map(std::mem::take).collect();
        let mut dropped = 0;
        for c in visiting {
            match count(c.base) {
                Coverage::Invalid => dropped += 1,
                Coverage::Accessed(n) => {
                    let weight = averaged(c.weight, n);
                    self.bins[bin_of(weight)].push_front(Candidate { base: c.base, weight });
                }
            }
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_order_base_2_of_the_weight() {
        let cases = [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4), (256, 8), (257, 9), (512, 9)];
        for (weight, bin) in cases {
            assert_eq!(bin_of(weight), bin, "weight {weight}");
        }
    }

    #[test]
    fn the_weight_is_hawkeyes_integer_moving_average() {
        // 512 accessed from 0: (0 + 2048) / 10 = 204; again: (1224 + 2048) / 10 = 327.
        assert_eq!(averaged(0, 512), 204);
        assert_eq!(averaged(204, 512), 327);
        // 3 pages: 12 / 10 = 1, still bin 0: never promoted on one window.
        assert_eq!(averaged(0, 3), 1);
        // Decays: nothing accessed after 100 -> 60 -> 36.
        assert_eq!(averaged(100, 0), 60);
        assert_eq!(averaged(60, 0), 36);
    }

    #[test]
    fn a_count_rebins_to_the_head_and_drops_invalid_regions() {
        let va = |i: u64| VirtAddr::new(i << 21);
        let mut b = Bins::default();
        for i in 0..4 {
            b.add(va(i));
        }
        // Regions 0 and 2 equally covered, 1 invalid, 3 untouched.
        let dropped = b.adjust(|a| match a.raw() >> 21 {
            1 => Coverage::Invalid,
            3 => Coverage::Accessed(0),
            _ => Coverage::Accessed(100),
        });
        assert_eq!(dropped, 1);
        assert_eq!(b.len(), 3);
        // Weight 40 -> bin 6; visited 0 then 2, each moved to the head: 2 first.
        assert_eq!(bin_of(40), 6);
        assert_eq!(b.pop(6).map(|c| (c.base, c.weight)), Some((va(2), 40)));
        assert_eq!(b.pop(6).map(|c| c.base), Some(va(0)));
        assert_eq!(b.pop(0).map(|c| c.base), Some(va(3)));
    }
}
