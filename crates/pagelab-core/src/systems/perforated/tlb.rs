//! Perforated pages' L2 TLB entry kinds (IV-C, Figures 3-5): a perforated
//! page's 2 MiB entry, with the 8-bit filter, and a hole's 4 KiB entry.
//! (Cached hole-bitmap entries are the TLB's own `KIND_HOLE_BITMAP`: their
//! 32 bits fit in the entry.) [`PerforatedTlb`] counts what the
//! translation flow does.
//!
//! A hit on a perforated entry whose filter says the access's 256 KiB
//! region has no hole generates a 4 KiB L1 entry at once (Figure 5, row
//! 1); otherwise the hit needs the bitmap, which the MMU consults
//! (`translate.rs`). L1 entries generated from a perforated page are
//! ordinary 4 KiB pages (their origin is 4 KiB): shooting one sub-page down
//! leaves the others.
//!
//! Layer: hardware (uses `hw` and `units` only).

use crate::hw::tlb::{ExtPayload, ReachSize};
use crate::units::{Pfn, PAGE_SHIFT};

/// The L2 kind tag of a perforated page.
pub const KIND_PERFORATED: u8 = 2;
/// The L2 kind tag of a hole's 4 KiB translation.
pub const KIND_HOLE: u8 = 3;

/// What a perforated page's L2 entry carries beyond a plain 2 MiB one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerforatedPage {
    /// The 2 MiB frame.
    pub frame: Pfn,
    /// Bit `r`: 256 KiB region `r` may hold a hole (all set when the
    /// hardware has no filter).
    pub filter: u8,
}

impl PerforatedPage {
    /// Whether the filter lets an access at byte `offset` through without
    /// the bitmap.
    #[inline]
    pub fn filtered(&self, offset: u64) -> bool {
        self.filter >> (offset >> 18) & 1 == 0
    }
}

/// A hole's 4 KiB translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HolePage {
    pub pfn: Pfn,
}

/// The two kinds' payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerforatedKind {
    Page(PerforatedPage),
    Hole(HolePage),
}

impl ExtPayload for PerforatedKind {
    fn kind(&self) -> u8 {
        match self {
            PerforatedKind::Page(_) => KIND_PERFORATED,
            PerforatedKind::Hole(_) => KIND_HOLE,
        }
    }

    /// A non-hole's frame (a perforated page), or the hole's.
    #[inline]
    fn frame_of(&self, offset: u64) -> Pfn {
        match self {
            PerforatedKind::Page(p) => p.frame.add(offset >> PAGE_SHIFT),
            PerforatedKind::Hole(h) => h.pfn,
        }
    }

    fn l1_piece(&self) -> ReachSize {
        ReachSize::Size4K
    }

    fn l1_origin(&self, _size: ReachSize) -> ReachSize {
        ReachSize::Size4K
    }
}

/// What the translation flow did, per core (`perforated.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// L2 hits on a perforated entry answered by the filter alone.
    pub filter_hits: u64,
    /// L2 hits on a perforated entry that consulted the bitmap (a second
    /// L2 access).
    pub bitmap_lookups: u64,
    /// Bitmap reads from memory (the bitmap entry was not in the L2).
    pub bitmap_refs: u64,
    /// Walks through the shadow PMD entry to a hole's PTE.
    pub hole_walks: u64,
}

/// How many kinds [`Occupancy`] tells apart.
pub const OCCUPANCY_KINDS: usize = 8;
/// Their names in `dtlb.l2.share.*`.
pub const OCCUPANCY_NAMES: [&str; OCCUPANCY_KINDS] = ["4k", "2m", "perforated", "bitmap", "hole", "64k", "32m", "1g"];

/// Samples of the L2 TLB's contents by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Occupancy {
    pub samples: u64,
    /// Sums over the samples of each kind's share of the valid entries:
    /// 4 KiB pages, 2 MiB pages, perforated pages, bitmaps, holes, and
    /// 64 KiB, 32 MiB (coalesced) and 1 GiB pages ([`OCCUPANCY_NAMES`]).
    pub share_sums: [f64; OCCUPANCY_KINDS],
}

/// What perforated pages' hardware counts on one core (their entries'
/// payloads are in `systems::TlbExtensions`'s side table).
#[derive(Debug, Clone, Default)]
pub struct PerforatedTlb {
    /// Sample the L2's contents (only when the system is in the chain).
    pub sampling: bool,
    pub counters: FlowCounters,
    pub occupancy: Occupancy,
}

impl PerforatedTlb {
    pub fn new(sampling: bool) -> Self {
        PerforatedTlb { sampling, ..PerforatedTlb::default() }
    }

    /// An L2 hit on `p` at byte `offset`: a perforated page whose filter
    /// does not answer needs the bitmap.
    pub fn needs_resolution(&mut self, p: &PerforatedKind, offset: u64) -> bool {
        match p {
            PerforatedKind::Page(page) if page.filtered(offset) => {
                self.counters.filter_hits += 1;
                false
            }
            PerforatedKind::Page(_) => true,
            PerforatedKind::Hole(_) => false,
        }
    }

    /// Adds one sample of the L2's contents: `kinds` gives each valid
    /// entry's kind tag and reach.
    pub fn sample(&mut self, kinds: impl Iterator<Item = (u8, ReachSize)>) {
        let mut n = [0u64; OCCUPANCY_KINDS];
        for (kind, reach) in kinds {
            let k = match kind {
                KIND_PERFORATED => 2,
                crate::hw::tlb::KIND_HOLE_BITMAP => 3,
                KIND_HOLE => 4,
                _ => match reach {
                    ReachSize::Size4K => 0,
                    ReachSize::Size2M => 1,
                    ReachSize::Size64K => 5,
                    ReachSize::Size32M => 6,
                    ReachSize::Size1G => 7,
                },
            };
            n[k] += 1;
        }
        let total: u64 = n.iter().sum();
        if total == 0 {
            return;
        }
        self.occupancy.samples += 1;
        for (sum, count) in self.occupancy.share_sums.iter_mut().zip(n) {
            *sum += count as f64 / total as f64;
        }
    }

    pub fn reset_stats(&mut self) {
        self.counters = FlowCounters::default();
        self.occupancy = Occupancy::default();
    }
}
