//! Perforated pages' L2 TLB entry kinds (IV-C, Figures 3-5): a perforated
//! page's 2 MiB entry, with the 8-bit filter, and a hole's 4 KiB entry.
//! (Cached hole-bitmap entries are the TLB's own `KIND_HOLE_BITMAP`: their
//! 32 bits fit in the entry.) [`PerforatedTlb`] counts what the
//! translation flow does, and samples the L2's contents by kind.
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
use crate::stat::{put_ints, Scope, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::{Pfn, PAGE_SHIFT};

/// Perforated pages' L2 entry kinds, by their number here (the registry
/// numbers the TLB's kinds): a perforated page, a hole's 4 KiB
/// translation.
pub const KINDS: &[&str] = &["perforated", "hole"];
/// A perforated page's kind.
pub const KIND_PERFORATED: u8 = 0;
/// A hole's kind.
pub const KIND_HOLE: u8 = 1;

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

/// What the hardware counts (`perforated.*`, `dtlb.l2.share.*`), per core
/// and summed.
pub const STATS: StatTable = StatTable {
    section: Section::Translation,
    stats: &[
        StatDecl::count(
            "perforated.filter_hits",
            "L2 TLB hits on a perforated page's entry that its 8-bit filter answered (the access's 256 KiB region \
             has no hole): a 4 KiB entry for the L1, no more work (the paper's Fig. 5, row 1)",
        )
        .contract()
        .scope(Scope::CoreAndHost),
        StatDecl::count(
            "perforated.bitmap_lookups",
            "L2 TLB hits on a perforated page's entry that consulted the hole bitmap: a second L2 TLB access each \
             (charged `l2_latency`); all of them without the filter (`naive`, `on-demand`)",
        )
        .contract()
        .scope(Scope::CoreAndHost),
        StatDecl::count(
            "perforated.bitmap_refs",
            "bitmap reads from memory (the bitmap entry was not in the L2 TLB): one walk reference each, to the \
             page's line in the reserved bitmap region (counted in `walk.mem_refs`)",
        )
        .contract()
        .scope(Scope::CoreAndHost),
        StatDecl::count(
            "perforated.hole_walks",
            "walks to a hole's PTE through the shadow PMD entry: two walk references each (shadow entry, PTE), \
             counted in `walk.mem_refs`, not in `walks`; in a guest each is a guest entry read after its table's \
             frame went through the EPT",
        )
        .contract()
        .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.4k", "the L2 TLB's mean share of 4 KiB pages (sampled: see the section)")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.64k", "its mean share of 64 KiB coalesced translations")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.2m", "its mean share of 2 MiB pages (colored huge pages included)")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.32m", "its mean share of 32 MiB coalesced translations")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.1g", "its mean share of 1 GiB pages")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.perforated", "its mean share of perforated pages")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.bitmap", "its mean share of cached hole-bitmap entries")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
        StatDecl::count("dtlb.l2.share.hole", "its mean share of holes' 4 KiB entries")
            .ratio()
            .contract()
            .scope(Scope::CoreAndHost),
    ],
};

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
    /// entry's kind (its number here if it is one of this system's),
    /// whether it is a cached hole bitmap, and its reach.
    pub fn sample(&mut self, kinds: &mut dyn Iterator<Item = (Option<u8>, bool, ReachSize)>) {
        let mut n = [0u64; OCCUPANCY_KINDS];
        for (kind, bitmap, reach) in kinds {
            let k = match (kind, bitmap) {
                (Some(KIND_PERFORATED), _) => 2,
                (_, true) => 3,
                (Some(KIND_HOLE), _) => 4,
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

/// `perforated.*` and `dtlb.l2.share.*` over the cores given (one core's,
/// or all of them): counters summed, occupancy shares the mean over all
/// samples.
pub fn report_flow(cores: &[&PerforatedTlb]) -> Stats {
    let mut c = FlowCounters::default();
    let mut occ = Occupancy::default();
    for t in cores {
        c.filter_hits += t.counters.filter_hits;
        c.bitmap_lookups += t.counters.bitmap_lookups;
        c.bitmap_refs += t.counters.bitmap_refs;
        c.hole_walks += t.counters.hole_walks;
        occ.samples += t.occupancy.samples;
        for (s, x) in occ.share_sums.iter_mut().zip(t.occupancy.share_sums) {
            *s += x;
        }
    }
    let mut out = Stats::new();
    put_ints(
        &mut out,
        "perforated.",
        &[
            ("bitmap_lookups", c.bitmap_lookups),
            ("filter_hits", c.filter_hits),
            ("bitmap_refs", c.bitmap_refs),
            ("hole_walks", c.hole_walks),
        ],
    );
    for (name, sum) in OCCUPANCY_NAMES.iter().zip(occ.share_sums) {
        let share = if occ.samples > 0 { sum / occ.samples as f64 } else { 0.0 };
        out.insert(format!("dtlb.l2.share.{name}"), Stat::Float(share));
    }
    out
}
