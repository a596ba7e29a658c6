//! Fragmentation: metrics and injection.
//!
//! Three numbers, not to be confused:
//! - [`fragmentation_index`] (Linux `__fragmentation_index`, mm/vmstat.c):
//!   for an allocation of order k that would fail, whether it fails for lack
//!   of memory (towards 0) or because free memory is in pieces (towards 1);
//!   -1 when it would succeed.
//! - [`unusable_free_index`] (mm/vmstat.c): the share of *free* memory that
//!   is in blocks smaller than order k.
//! - [`fi`]: F_i as the Colored Huge Pages paper defines it, "the
//!   fraction of physical memory that cannot be backed by the currently
//!   available huge pages": 1 - (frames in free blocks of order >= 9) /
//!   (all frames). It is relative to *total* memory, so a fresh machine has
//!   F_i = 0 and a workload using a fraction f of memory starts to miss huge
//!   pages at F_i = 1 - f (the paper's critical threshold: 0.89 for mcf at
//!   11%). The unusable free space index at order 9 is the same count relative
//!   to free memory instead.
//!
//! [`inject`] fragments a machine to a target F_i by pinning unmovable frames
//! ("holes") in free pageblocks, dispersed or clustered as in the Perforated
//! Pages paper's two scenarios.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::buddy::PhysMem;
use super::frame::FrameOwner;
use super::migratetype::{Migratetype, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::error::{Error, Result};
use crate::units::{Order, Pfn};

/// `struct contig_page_info` of mm/vmstat.c, from free blocks per order.
#[derive(Debug, Default)]
struct ContigPageInfo {
    free_pages: u128,
    free_blocks_total: u128,
    /// Blocks of the requested order that the free blocks could supply.
    free_blocks_suitable: u128,
}

/// `fill_contig_page_info`: `free[o]` is the number of free blocks of order o.
fn contig_page_info(free: &[u64], order: u32) -> ContigPageInfo {
    let mut info = ContigPageInfo::default();
    for (o, &blocks) in free.iter().enumerate() {
        let (o, blocks) = (o as u32, blocks as u128);
        info.free_blocks_total += blocks;
        info.free_pages += blocks << o;
        if o >= order {
            info.free_blocks_suitable += blocks << (o - order);
        }
    }
    info
}

/// Linux `__fragmentation_index` for a request of `order`, given free blocks
/// per order, divided by 1000: 0 when nothing is free, -1 when a block of
/// `order` is free (the request would succeed), else
/// `1000 - (1000 + free_pages * 1000 / 2^order) / free_blocks_total` in
/// integer arithmetic. As in Linux, a few free blocks just below the request
/// give a negative value (one free order-2 block, order 3: -0.5). An order
/// past 63 gives 0 (Linux warns and returns 0 beyond its largest order).
pub fn fragmentation_index(free: &[u64], order: u8) -> f64 {
    let order = order as u32;
    if order >= 64 {
        return 0.0;
    }
    let info = contig_page_info(free, order);
    if info.free_blocks_total == 0 {
        return 0.0;
    }
    if info.free_blocks_suitable > 0 {
        return -1.0;
    }
    let requested = 1u128 << order;
    let spread = (1000 + info.free_pages * 1000 / requested) / info.free_blocks_total;
    (1000 - spread as i128) as f64 / 1000.0
}

/// Linux `unusable_free_index` for `order`, divided by 1000: the share of
/// free pages that are in blocks too small for the request,
/// `(free_pages - suitable * 2^order) * 1000 / free_pages` in integers; 1
/// when nothing is free.
pub fn unusable_free_index(free: &[u64], order: u8) -> f64 {
    let order = (order as u32).min(127);
    let info = contig_page_info(free, order);
    if info.free_pages == 0 {
        return 1.0;
    }
    let usable = info.free_blocks_suitable << order;
    ((info.free_pages - usable) * 1000 / info.free_pages) as f64 / 1000.0
}

/// The CHP paper's F_i from free blocks per order: 1 - (frames in free
/// blocks of order >= 9) / `nr_frames`. 0 when `nr_frames` is 0.
pub fn fi_from(free: &[u64], nr_frames: u64) -> f64 {
    if nr_frames == 0 {
        return 0.0;
    }
    let backed: u128 =
        free.iter().enumerate().skip(PAGEBLOCK_ORDER as usize).map(|(o, &blocks)| (blocks as u128) << o).sum();
    1.0 - backed as f64 / nr_frames as f64
}

/// The CHP paper's F_i of a machine: the fraction of all of physical memory
/// that free 2 MiB blocks cannot back (see the module documentation). A
/// machine whose size is not a multiple of 2 MiB starts above 0.
pub fn fi(mem: &PhysMem) -> f64 {
    1.0 - mem.free_pages_at_or_above(Order::new(PAGEBLOCK_ORDER)) as f64 / mem.nr_frames() as f64
}

/// Where the holes go inside a fragmented pageblock (Perforated Pages,
/// section VI-A).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Pattern {
    /// Spread over the pageblock: hole i at a random offset in the i-th of
    /// `holes` equal slices, so holes are distinct and evenly spread.
    #[default]
    Dispersed,
    /// One contiguous run of `holes` frames at a random offset.
    Clustered,
}

/// Which pageblocks get the unmovable frames (the timing issue's part 5):
/// at random over memory, or one contiguous run of them at a random place,
/// as a long-running machine's kernel allocations tend to gather.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Placement {
    #[default]
    Random,
    Clustered,
}

/// What [`inject`] did.
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct InjectReport {
    /// F_i after injection (at most one pageblock's share above the target).
    pub fi_reached: f64,
    /// Pageblocks that received holes.
    pub blocks_fragmented: u64,
    /// Frames pinned (owned by `FrameOwner::Kernel`).
    pub frames_pinned: u64,
}

const CONFIG_PREFIX: &str = "os.fragmentation";

/// Range checks of [`inject`]'s arguments, named by their configuration keys.
fn validate(target_fi: f64, holes_per_block: u32) -> Result<()> {
    if !(0.0..=1.0).contains(&target_fi) {
        let msg = format!("{target_fi} is not a fraction in 0..=1");
        return Err(Error::config(format!("{CONFIG_PREFIX}.target"), msg));
    }
    if !(1..=PAGEBLOCK_NR_PAGES as u32).contains(&holes_per_block) {
        let msg = format!("{holes_per_block} is not in 1..={PAGEBLOCK_NR_PAGES}");
        return Err(Error::config(format!("{CONFIG_PREFIX}.holes"), msg));
    }
    Ok(())
}

/// Fragments `mem` until F_i ([`fi`]) reaches `target_fi`: fully free
/// pageblocks, drawn at random from `seed`, each get `holes_per_block`
/// unmovable kernel frames placed by `pattern`, and are marked UNMOVABLE (as
/// the stealing of an unmovable allocation would). Each pageblock raises F_i
/// by exactly 512 / nr_frames (it leaves the free blocks of order >= 9, and
/// nothing else does), so the number of pageblocks is known in advance: the
/// fewest that reach the target. They are then pinned in address order,
/// which keeps a 1 TiB machine at F_i = 0.9 to a few seconds. A target of 0,
/// or one already reached, changes nothing. Out-of-range arguments are
/// configuration errors under `os.fragmentation`.
pub fn inject(
    mem: &mut PhysMem,
    target_fi: f64,
    pattern: Pattern,
    holes_per_block: u32,
    seed: u64,
) -> Result<InjectReport> {
    inject_placed(mem, target_fi, pattern, Placement::Random, holes_per_block, seed)
}

/// [`inject`] with the pageblocks chosen by `placement`: at random (as
/// `inject`), or the `needed` fully free pageblocks that follow a random
/// one in address order (one run, contiguous where the free pageblocks
/// are).
pub fn inject_placed(
    mem: &mut PhysMem,
    target_fi: f64,
    pattern: Pattern,
    placement: Placement,
    holes_per_block: u32,
    seed: u64,
) -> Result<InjectReport> {
    validate(target_fi, holes_per_block)?;
    let fi_now = fi(mem);
    if target_fi <= 0.0 || fi_now >= target_fi {
        return Ok(InjectReport { fi_reached: fi_now, ..InjectReport::default() });
    }
    let mut candidates = fully_free_pageblocks(mem);
    let (backed, nr_frames) = (mem.free_pages_at_or_above(Order::new(PAGEBLOCK_ORDER)), mem.nr_frames());
    // The same formula as fi, after `blocks` more pageblocks are spoilt.
    let fi_after = |blocks: u64| 1.0 - (backed - blocks * PAGEBLOCK_NR_PAGES) as f64 / nr_frames as f64;
    let Some(needed) = (1..=candidates.len() as u64).find(|&blocks| fi_after(blocks) >= target_fi) else {
        let msg = format!("F_i {target_fi} cannot be reached: at most {}", fi_after(candidates.len() as u64));
        return Err(Error::config(format!("{CONFIG_PREFIX}.target"), msg));
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let chosen = match placement {
        Placement::Random => {
            choose_first(&mut candidates, needed as usize, &mut rng);
            let chosen = &mut candidates[..needed as usize];
            chosen.sort_unstable();
            chosen
        }
        Placement::Clustered => {
            let start = rng.random_range(0..=candidates.len() - needed as usize);
            &mut candidates[start..start + needed as usize]
        }
    };
    let mut offsets = Vec::with_capacity(holes_per_block as usize);
    for &pb in chosen.iter() {
        hole_offsets(pattern, holes_per_block, &mut rng, &mut offsets);
        pin_holes(mem, pb, &offsets);
    }
    let report =
        InjectReport { fi_reached: fi(mem), blocks_fragmented: needed, frames_pinned: needed * holes_per_block as u64 };
    debug_assert_eq!(report.fi_reached, fi_after(needed));
    mem.debug_check_invariants();
    Ok(report)
}

/// A partial Fisher-Yates shuffle: the first `n` items become a uniform
/// random choice of `n` of them.
fn choose_first(items: &mut [u64], n: usize, rng: &mut Xoshiro256PlusPlus) {
    for i in 0..n {
        let pick = rng.random_range(i..items.len());
        items.swap(i, pick);
    }
}

/// Pageblocks lying wholly in free blocks (of pageblock order or more),
/// lowest first.
fn fully_free_pageblocks(mem: &PhysMem) -> Vec<u64> {
    let mut pageblocks = Vec::new();
    for order in PAGEBLOCK_ORDER..=mem.max_order() {
        for head in mem.free_blocks(Order::new(order)) {
            let first = head.raw() >> PAGEBLOCK_ORDER;
            pageblocks.extend(first..first + (1 << (order - PAGEBLOCK_ORDER)));
        }
    }
    pageblocks.sort_unstable();
    pageblocks
}

/// Offsets of the holes of one pageblock, into `out`.
fn hole_offsets(pattern: Pattern, holes: u32, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<u64>) {
    let holes = holes as u64;
    out.clear();
    match pattern {
        Pattern::Dispersed => {
            for i in 0..holes {
                let (lo, hi) = (i * PAGEBLOCK_NR_PAGES / holes, (i + 1) * PAGEBLOCK_NR_PAGES / holes);
                out.push(rng.random_range(lo..hi));
            }
        }
        Pattern::Clustered => {
            let start = rng.random_range(0..=PAGEBLOCK_NR_PAGES - holes);
            out.extend(start..start + holes);
        }
    }
}

/// Pins the holes of pageblock `pb` as unmovable kernel frames and marks the
/// pageblock UNMOVABLE (after pinning, so a neighbouring free pageblock of
/// the same buddy block keeps its type).
fn pin_holes(mem: &mut PhysMem, pb: u64, offsets: &[u64]) {
    let base = pb << PAGEBLOCK_ORDER;
    for &offset in offsets {
        let pinned = mem.alloc_specific(Pfn::new(base + offset), Order::BASE, FrameOwner::Kernel);
        debug_assert!(pinned, "hole {offset} of free pageblock {pb} was taken");
    }
    mem.set_pageblock_migratetype(Pfn::new(base), Migratetype::Unmovable);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(order: u8) -> Order {
        Order::new(order)
    }

    #[test]
    fn fragmentation_index_follows_the_linux_formula() {
        // 10 free order-0 and 5 order-1 blocks: 20 pages in 15 blocks. For
        // order 2: 1000 - (1000 + 20*1000/4) / 15 = 1000 - 6000/15 = 600.
        assert_eq!(fragmentation_index(&[10, 5, 0], 2), 0.6);
        // 3 single pages, order 3: 1000 - (1000 + 3000/8)/3 = 1000 - 1375/3
        // = 1000 - 458 = 542.
        assert_eq!(fragmentation_index(&[3, 0, 0, 0], 3), 0.542);
        // A free order-1 block satisfies an order-1 request: -1.
        assert_eq!(fragmentation_index(&[4, 2, 1], 1), -1.0);
        // Nothing free: 0.
        assert_eq!(fragmentation_index(&[0, 0, 0], 1), 0.0);
        assert_eq!(fragmentation_index(&[], 1), 0.0);
        // One order-2 block, order 3: 1000 - (1000 + 4000/8) / 1 = -500.
        assert_eq!(fragmentation_index(&[0, 0, 1], 3), -0.5);
    }

    #[test]
    fn unusable_free_index_follows_the_linux_formula() {
        // 12 free pages (4 + 2*2 + 1*4); order 1 can use 4*2 = 8 of them:
        // (12 - 8) * 1000 / 12 = 333.
        assert_eq!(unusable_free_index(&[4, 2, 1], 1), 0.333);
        // Order 2: only the order-2 block is usable: (12 - 4)*1000/12 = 666.
        assert_eq!(unusable_free_index(&[4, 2, 1], 2), 0.666);
        assert_eq!(unusable_free_index(&[4, 2, 1], 0), 0.0);
        assert_eq!(unusable_free_index(&[10, 5, 0], 2), 1.0);
        assert_eq!(unusable_free_index(&[0, 0], 0), 1.0);
    }

    #[test]
    fn fi_counts_frames_in_free_huge_blocks_against_all_memory() {
        // 4096 frames; free: 100 single pages, one order-9 and one order-10
        // block: 1536 frames could back huge pages, 1 - 1536/4096 = 0.625.
        let mut free = vec![0u64; 11];
        free[0] = 100;
        free[9] = 1;
        free[10] = 1;
        assert_eq!(fi_from(&free, 4096), 0.625);
        // A fresh 8 MiB machine: 0. Take 1 frame: its order-10 block splits,
        // leaving order-9 blocks worth 1536 of 2048 frames: 0.25.
        let mut mem = PhysMem::new(2048, 10).unwrap();
        assert_eq!(fi(&mem), 0.0);
        mem.alloc(o(0), Migratetype::Movable, FrameOwner::Kernel).unwrap();
        assert_eq!(fi(&mem), 0.25);
        assert_eq!(fi_from(&mem.free_blocks_per_order(), 2048), 0.25);
        // 1000 frames: only the first 512 can ever be a huge page.
        assert!((fi(&PhysMem::new(1000, 9).unwrap()) - 0.488).abs() < 1e-12);
    }

    /// Pfns of the kernel frames, lowest first.
    fn pinned(mem: &PhysMem) -> Vec<u64> {
        (0..mem.nr_frames()).filter(|&p| mem.owner(Pfn::new(p)) == FrameOwner::Kernel).collect()
    }

    #[test]
    fn injection_is_reproducible_from_the_seed() {
        let run = |seed| {
            let mut mem = PhysMem::new(16384, 10).unwrap();
            inject(&mut mem, 0.5, Pattern::Dispersed, 4, seed).unwrap();
            pinned(&mem)
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    /// The unmovable pageblocks of a machine (by pageblock number).
    fn unmovable_pageblocks(mem: &PhysMem) -> Vec<u64> {
        let pageblocks = mem.nr_frames() / 512;
        (0..pageblocks).filter(|pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == Migratetype::Unmovable).collect()
    }

    #[test]
    fn clustered_placement_fragments_one_run_of_pageblocks_and_random_does_not() {
        // 256 MiB = 128 pageblocks, half of them fragmented: as one run of 64
        // consecutive pageblocks, and the same F_i as at random.
        let run = |placement| {
            let mut mem = PhysMem::new(65536, 10).unwrap();
            let report = inject_placed(&mut mem, 0.5, Pattern::Dispersed, placement, 4, 3).unwrap();
            mem.check_invariants().unwrap();
            (report, unmovable_pageblocks(&mem))
        };
        let (clustered, blocks) = run(Placement::Clustered);
        assert_eq!((clustered.blocks_fragmented, clustered.fi_reached), (64, 0.5));
        assert_eq!(blocks.len(), 64);
        assert_eq!(blocks[63] - blocks[0], 63, "not one run: {blocks:?}");
        let (random, blocks) = run(Placement::Random);
        assert_eq!(random, clustered);
        assert!(blocks.len() == 64 && blocks[63] - blocks[0] > 63, "random placement made one run");
        // Random placement is `inject`'s, draw for draw.
        let mut mem = PhysMem::new(65536, 10).unwrap();
        inject(&mut mem, 0.5, Pattern::Dispersed, 4, 3).unwrap();
        assert_eq!(unmovable_pageblocks(&mem), blocks);
    }

    #[test]
    fn injection_reaches_the_target_within_one_pageblock() {
        // 64 MiB = 32 pageblocks; each fragmented block adds 1/32 to F_i.
        let mut mem = PhysMem::new(16384, 10).unwrap();
        let report = inject(&mut mem, 0.51, Pattern::Clustered, 25, 7).unwrap();
        assert_eq!(report.blocks_fragmented, 17);
        assert_eq!(report.frames_pinned, 17 * 25);
        assert_eq!(report.fi_reached, 17.0 / 32.0);
        assert_eq!(fi(&mem), report.fi_reached);
        assert_eq!(mem.free_pages(), 16384 - 17 * 25);
        mem.check_invariants().unwrap();
        // Fragmented pageblocks are unmovable, the others still movable.
        let unmovable =
            (0..32).filter(|pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == Migratetype::Unmovable).count();
        assert_eq!(unmovable, 17);
        // Asking for less than is already there does nothing.
        let again = inject(&mut mem, 0.3, Pattern::Clustered, 25, 7).unwrap();
        assert_eq!((again.blocks_fragmented, again.fi_reached), (0, 17.0 / 32.0));
        let zero = inject(&mut PhysMem::new(16384, 10).unwrap(), 0.0, Pattern::Dispersed, 1, 0).unwrap();
        assert_eq!(zero, InjectReport::default());
    }

    #[test]
    fn full_fragmentation_and_bad_targets() {
        let mut mem = PhysMem::new(4096, 10).unwrap();
        let report = inject(&mut mem, 1.0, Pattern::Dispersed, 1, 3).unwrap();
        assert_eq!((report.blocks_fragmented, report.fi_reached), (8, 1.0));
        let key = |r: Result<InjectReport>| match r {
            Err(Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {other:?}"),
        };
        assert_eq!(key(inject(&mut mem, 1.5, Pattern::Dispersed, 1, 0)), "os.fragmentation.target");
        assert_eq!(key(inject(&mut mem, f64::NAN, Pattern::Dispersed, 1, 0)), "os.fragmentation.target");
        assert_eq!(key(inject(&mut mem, 0.5, Pattern::Dispersed, 0, 0)), "os.fragmentation.holes");
        assert_eq!(key(inject(&mut mem, 0.5, Pattern::Dispersed, 513, 0)), "os.fragmentation.holes");
    }

    #[test]
    fn clustered_holes_form_one_run_and_dispersed_holes_spread() {
        let mut mem = PhysMem::new(8192, 10).unwrap();
        inject(&mut mem, 0.5, Pattern::Clustered, 25, 11).unwrap();
        let holes = pinned(&mem);
        let by_block = |holes: &[u64]| {
            let mut blocks = std::collections::BTreeMap::<u64, Vec<u64>>::new();
            for &h in holes {
                blocks.entry(h / 512).or_default().push(h % 512);
            }
            blocks
        };
        let clustered = by_block(&holes);
        assert_eq!(clustered.len(), 8);
        for offsets in clustered.values() {
            assert_eq!(offsets.len(), 25);
            assert_eq!(offsets[24] - offsets[0], 24, "one contiguous run: {offsets:?}");
        }
        let mut mem = PhysMem::new(8192, 10).unwrap();
        inject(&mut mem, 0.5, Pattern::Dispersed, 8, 11).unwrap();
        for offsets in by_block(&pinned(&mem)).values() {
            // One hole in each 64-frame eighth of the pageblock.
            let eighths: Vec<u64> = offsets.iter().map(|o| o / 64).collect();
            assert_eq!(eighths, (0..8).collect::<Vec<_>>());
        }
        mem.check_invariants().unwrap();
    }

    /// A 1 TiB machine fragmented to F_i = 0.9; run with
    /// `cargo test --release -- --ignored one_tib` to time it.
    #[test]
    #[ignore]
    fn one_tib_injection_timing() {
        for (pattern, holes) in [(Pattern::Dispersed, 1), (Pattern::Clustered, 25), (Pattern::Dispersed, 25)] {
            let start = std::time::Instant::now();
            let mut mem = PhysMem::new(1 << 28, 10).unwrap();
            let report = inject(&mut mem, 0.9, pattern, holes, 1).unwrap();
            eprintln!("{pattern:?} x{holes}: {report:?} in {:?}", start.elapsed());
        }
    }
}
