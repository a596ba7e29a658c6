//! Faulty frames: memory that failed and that the OS retired (the
//! Perforated Pages paper's comparison with GTSM, VII-D: "5.5% randomly
//! placed faults"). A faulty frame is taken out of the buddy allocator at
//! boot with owner [`FrameOwner::Faulty`] and never comes back: no
//! allocation returns it (it is not free), compaction neither moves it
//! (it is not movable) nor uses it as a target (it is not free), and
//! nothing frees it.
//!
//! Faults strike at a granularity (`os.faulty_granularity`): each 4 KiB
//! frame on its own, or each aligned 64 KiB block (16 frames) as a whole;
//! the rate (`os.faulty_frames`) is the probability of each unit, so it is
//! the expected share of memory faulty either way.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::buddy::PhysMem;
use super::frame::FrameOwner;
use crate::units::{Order, Pfn};

/// What one fault takes out (`os.faulty_granularity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum FaultyGranularity {
    /// One 4 KiB frame.
    #[default]
    #[serde(rename = "4k")]
    Frame,
    /// One aligned 64 KiB block (16 frames).
    #[serde(rename = "64k")]
    Block64K,
}

impl FaultyGranularity {
    pub fn order(self) -> Order {
        match self {
            FaultyGranularity::Frame => Order::BASE,
            FaultyGranularity::Block64K => Order::new(4),
        }
    }
}

/// Makes each unit of `granularity` faulty with probability `rate`, from a
/// generator seeded by `seed`, in address order. Only free units can fail
/// (at boot, all of them). Returns the frames made faulty.
pub fn inject_faulty(mem: &mut PhysMem, rate: f64, granularity: FaultyGranularity, seed: u64) -> u64 {
    if rate <= 0.0 {
        return 0;
    }
    let order = granularity.order();
    let unit = order.nr_pages();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6661_756c_7479);
    let mut faulty = 0;
    for first in (0..mem.nr_frames() / unit).map(|u| u * unit) {
        if rng.random::<f64>() < rate && mem.alloc_specific(Pfn::new(first), order, FrameOwner::Faulty) {
            faulty += unit;
        }
    }
    faulty
}

/// Whether frame `pfn` is faulty.
pub fn is_faulty(mem: &PhysMem, pfn: Pfn) -> bool {
    mem.owner(pfn) == FrameOwner::Faulty
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::Migratetype;

    fn faulty_frames(mem: &PhysMem) -> Vec<u64> {
        (0..mem.nr_frames()).filter(|&p| is_faulty(mem, Pfn::new(p))).collect()
    }

    #[test]
    fn the_rate_is_the_share_of_memory_at_either_granularity() {
        // 64 MiB = 16,384 frames = 1,024 blocks of 64 KiB; 5.5%: 901 frames
        // expected (sd 29) a frame at a time, 56 blocks (sd 7.3) by blocks.
        let mut mem = PhysMem::new(16_384, 10).unwrap();
        let n = inject_faulty(&mut mem, 0.055, FaultyGranularity::Frame, 1);
        assert!((800..1000).contains(&n), "{n}");
        assert_eq!(faulty_frames(&mem).len() as u64, n);
        assert_eq!(mem.free_pages(), 16_384 - n);
        let mut mem = PhysMem::new(16_384, 10).unwrap();
        let n = inject_faulty(&mut mem, 0.055, FaultyGranularity::Block64K, 1);
        assert_eq!(n % 16, 0);
        assert!((16 * 30..16 * 85).contains(&n), "{n}");
        // Whole aligned blocks of 16.
        let frames = faulty_frames(&mem);
        assert!(frames.chunks(16).all(|c| c[0] % 16 == 0 && c[15] == c[0] + 15));
        assert!(mem.check_invariants().is_ok());
    }

    #[test]
    fn no_allocation_ever_returns_a_faulty_frame() {
        // Allocate every free frame, in blocks of every order down to 0:
        // the faulty ones are never among them, and are all that is left.
        let mut mem = PhysMem::new(4096, 10).unwrap();
        let n = inject_faulty(&mut mem, 0.1, FaultyGranularity::Frame, 7);
        let faulty = faulty_frames(&mem);
        let mut got = 0u64;
        for order in (0..=10u8).rev() {
            while let Some(pfn) = mem.alloc(Order::new(order), Migratetype::Movable, FrameOwner::Kernel) {
                let len = 1u64 << order;
                assert!(faulty.iter().all(|&f| f < pfn.raw() || f >= pfn.raw() + len), "{pfn:?} order {order}");
                got += len;
            }
        }
        assert_eq!(got + n, 4096);
        assert_eq!(faulty_frames(&mem), faulty);
        assert_eq!(mem.free_pages(), 0);
    }
}
