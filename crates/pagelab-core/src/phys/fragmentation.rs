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
//!
//! [`memfrag`] fragments it to a target FMFI (the Elastic Translations
//! artifact's "free memory fragmentation index", which is
//! [`unusable_free_index`] at order 9: its `memfrag` reads Linux's
//! `extfrag/unusable_index`, its `fmfi.py` computes the same from
//! buddyinfo) the way the artifact's `bin/frag.sh` and `memfrag` do: fill
//! memory, then free fixed-size chunks of it.

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

// ---- FMFI, as the Elastic Translations artifact's memfrag makes it --------

/// The order FMFI is measured at (frag.sh's `FRAG_ORDER`).
pub const FMFI_ORDER: u8 = 9;
/// memfrag frees chunks of this order, every other one, to raise FMFI
/// (frag.sh's `FRAG_PRESS_ORDER`: 512 KiB, which no 2 MiB page can use).
const PRESS_ORDER: u8 = 7;
/// ... and whole chunks of this order to lower it (`FRAG_RELAX_ORDER`: 32 MiB).
const RELAX_ORDER: u8 = 13;
/// frag.sh scales every target to the footprint except its 99 (and 999).
const UNSCALED_TARGET: f64 = 0.99;

/// The FMFI of free blocks per order: [`unusable_free_index`] at order 9.
pub fn fmfi(free: &[u64]) -> f64 {
    unusable_free_index(free, FMFI_ORDER)
}

/// The FMFI that frag.sh hands memfrag for a `target` over a workload of
/// `footprint` bytes with `slack` bytes left free: `1 - footprint x (1 -
/// target) / (footprint + slack)`, so that (1 - target) of the footprint,
/// not of all free memory, can be backed by 2 MiB pages. 0.99 and above are
/// handed on unscaled, as frag.sh does its 99. (frag.sh works in whole
/// percents and truncates; this is the exact value.)
pub fn frag_sh_target(target: f64, footprint: u64, slack: u64) -> f64 {
    if target >= UNSCALED_TARGET {
        return target;
    }
    1.0 - footprint as f64 * (1.0 - target) / (footprint + slack) as f64
}

/// What [`memfrag`] did.
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct MemfragReport {
    /// The target memfrag ran to ([`frag_sh_target`]).
    pub target: f64,
    /// FMFI after the release.
    pub fmfi_reached: f64,
    /// Frames memfrag freed back; it holds the rest of what it filled.
    pub frames_released: u64,
    pub frames_held: u64,
}

/// memfrag's buffer: the frames it filled, in the order it touched them
/// (the i-th 4 KiB page of the buffer is `frames[i]`), `RELEASED` once freed.
struct Buffer {
    frames: Vec<u64>,
}

const RELEASED: u64 = u64::MAX;

impl Buffer {
    /// Takes `pages` single frames, as memfrag's populated mmap does: the
    /// allocator hands them out lowest first, so a fresh machine's buffer
    /// is physically contiguous and a chunk aligned in the buffer is a
    /// buddy block. (On Linux the buffer's virtual alignment and the
    /// frames' need not agree; memfrag assumes they do.)
    fn fill(mem: &mut PhysMem, pages: u64) -> Buffer {
        let frames = (0..pages)
            .map(|_| {
                let pfn = mem.alloc(Order::BASE, Migratetype::Movable, FrameOwner::Kernel);
                pfn.expect("the fill takes fewer frames than are free").raw()
            })
            .collect();
        Buffer { frames }
    }

    fn len(&self) -> usize {
        self.frames.len()
    }

    /// `MADV_DONTNEED` on pages `first..first + len`: frees those still
    /// held; returns how many it freed.
    fn release(&mut self, mem: &mut PhysMem, first: usize, len: usize) -> u64 {
        let mut freed = 0;
        for frame in &mut self.frames[first..first + len] {
            if *frame != RELEASED {
                mem.free(Pfn::new(*frame), Order::BASE);
                *frame = RELEASED;
                freed += 1;
            }
        }
        freed
    }
}

/// memfrag's `over_target`: FMFI at or above the target.
fn over_target(mem: &PhysMem, target: f64) -> bool {
    fmfi(&mem.free_blocks_per_order()) >= target
}

/// Rounds `n` up to a multiple of the power of two `size` (memfrag's `align`).
fn align_up(n: usize, size: usize) -> usize {
    n.next_multiple_of(size)
}

/// Fragments `mem` as the artifact's frag.sh and memfrag do for a workload
/// of `footprint` bytes: memfrag fills all free memory but `slack` bytes
/// with single frames (`FrameOwner::Kernel`: memfrag holds them through the
/// run and, with kcompactd off as in the artifact's runs, nothing moves
/// them), then walks its buffer releasing, while FMFI is under the target
/// ([`frag_sh_target`]), one 512 KiB chunk of every two (free, but in
/// blocks of order 7), and while it is at or over it whole 32 MiB chunks
/// (blocks of order 13, or of the largest order), until it has released
/// the footprint. If the buffer ends first it releases the chunks it
/// skipped, last first, until as much memory is free as the footprint.
/// Deterministic: memfrag makes no random choice (it seeds a generator it
/// never uses). Errors name `os.fragmentation.fmfi` and `.fmfi_slack`.
pub fn memfrag(mem: &mut PhysMem, target: f64, footprint: u64, slack: u64) -> Result<MemfragReport> {
    if !(0.0..1.0).contains(&target) {
        return Err(Error::config(format!("{CONFIG_PREFIX}.fmfi"), format!("{target} is not a fraction in [0, 1)")));
    }
    if target == 0.0 {
        return Ok(MemfragReport::default());
    }
    let free = mem.free_pages();
    let slack_pages = slack.div_ceil(4096);
    if slack_pages >= free {
        let msg = format!("{slack} bytes is not less than the {} bytes free at boot", free << 12);
        return Err(Error::config(format!("{CONFIG_PREFIX}.fmfi_slack"), msg));
    }
    let target = frag_sh_target(target, footprint, slack);
    let release = footprint.div_ceil(4096);
    let mut buf = Buffer::fill(mem, free - slack_pages);
    let (press, relax) = (1usize << PRESS_ORDER, 1usize << RELAX_ORDER);
    let mut pressed = vec![false; buf.len() / press];
    let mut relaxed = vec![false; buf.len() / relax];
    let mut released = 0u64;
    let (mut addr, mut relax_end) = (0usize, false);
    while released < release {
        if relax_end || !over_target(mem, target) {
            addr = align_up(addr, press);
            if addr + press > buf.len() {
                break;
            }
            pressed[addr / press] = true;
            released += buf.release(mem, addr, press);
            addr += 2 * press;
        } else {
            addr = align_up(addr, relax);
            if addr + relax > buf.len() {
                relax_end = true;
                continue;
            }
            relaxed[addr / relax] = true;
            released += buf.release(mem, addr, relax);
            addr += relax;
        }
    }
    release_skipped_chunks(mem, &mut buf, target, release, [(&pressed, press), (&relaxed, relax)]);
    let held = buf.frames.iter().filter(|&&f| f != RELEASED).count() as u64;
    let fmfi_reached = fmfi(&mem.free_blocks_per_order());
    mem.debug_check_invariants();
    Ok(MemfragReport { target, fmfi_reached, frames_released: buf.len() as u64 - held, frames_held: held })
}

/// memfrag's second pass, when its walk reached the buffer's end first:
/// while less memory is free than the footprint, release a chunk it has
/// not released yet, a 512 KiB one under the target and a 32 MiB one over
/// it, each taken from the end of its list (memfrag's lists hold the even
/// chunks, then the odd ones, and it pops the last).
fn release_skipped_chunks(
    mem: &mut PhysMem,
    buf: &mut Buffer,
    target: f64,
    release: u64,
    [(pressed, press), (relaxed, relax)]: [(&[bool], usize); 2],
) {
    let left = |done: &[bool]| {
        let n = done.len();
        let evens_then_odds: Vec<usize> = (0..n).step_by(2).chain((1..n).step_by(2)).filter(|&i| !done[i]).collect();
        evens_then_odds
    };
    let (mut press_left, mut relax_left) = (left(pressed), left(relaxed));
    while mem.free_pages() < release {
        let (chunks, size) = if over_target(mem, target) { (&mut relax_left, relax) } else { (&mut press_left, press) };
        let Some(chunk) = chunks.pop() else { break };
        buf.release(mem, chunk * size, size);
    }
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

    /// A 128 MiB machine with 32 MiB buddy blocks, as the N1's order 13.
    fn n1_machine() -> PhysMem {
        PhysMem::new(32768, 13).unwrap()
    }

    #[test]
    fn memfrag_presses_to_the_scaled_target_then_relaxes_with_32_mib_chunks() {
        // Footprint 48 MiB (12288 pages), slack 4 MiB (1024 frames), target
        // 0.5: frag.sh's target is 1 - 48 x 0.5 / 52 = 0.5385. The fill takes
        // pfns 0..31744; the slack is one free order-10 block at 31744.
        let mut mem = n1_machine();
        let report = memfrag(&mut mem, 0.5, 48 << 20, 4 << 20).unwrap();
        assert!((report.target - (1.0 - 24.0 / 52.0)).abs() < 1e-12);
        // Presses of 128 frames at 0, 256, 512...: after 9, FMFI is
        // 1152 / 2176 = 0.529, after 10 it is 1280 / 2304 = 0.555 >= 0.5385.
        // Then one 32 MiB chunk, aligned up from 2560 to 8192, frees an
        // order-13 block and FMFI falls to 1280 / 10496 = 0.122; 22 more
        // presses from 16384 reach the 12288 pages of the footprint with
        // FMFI 4096 / 13312 = 0.3077 (Linux's index: 0.307): the 32 MiB
        // step overshoots on a footprint this small.
        let mut free = vec![0u64; 14];
        free[7] = 32;
        free[10] = 1;
        free[13] = 1;
        assert_eq!(mem.free_blocks_per_order(), free);
        assert_eq!(report.fmfi_reached, 0.307);
        assert_eq!(fmfi(&free), unusable_free_index(&free, 9));
        assert_eq!((report.frames_released, report.frames_held), (12288, 31744 - 12288));
        assert_eq!(mem.free_pages(), 12288 + 1024);
        assert!(mem.is_free(Pfn::new(8192)) && mem.is_free(Pfn::new(16383)) && !mem.is_free(Pfn::new(2560)));
        // The tenth press is at 2304, the first after the relax at 16384.
        for pfn in [2304, 2431, 16384, 16384 + 21 * 256] {
            assert!(mem.is_free(Pfn::new(pfn)), "{pfn}");
        }
        assert!(!mem.is_free(Pfn::new(16384 + 22 * 256)));
        assert_eq!(mem.owner(Pfn::new(128)), FrameOwner::Kernel);
        mem.check_invariants().unwrap();
    }

    #[test]
    fn memfrag_at_99_percent_presses_only_and_the_slack_bounds_the_fmfi() {
        // 0.99 is not scaled; 16 MiB released as 32 order-7 blocks beside the
        // 1024-frame slack never reach it (99 x 1024 frames would), so every
        // chunk is a press: FMFI 4096 / 5120 = 0.8.
        let mut mem = PhysMem::new(16384, 13).unwrap();
        let report = memfrag(&mut mem, 0.99, 16 << 20, 4 << 20).unwrap();
        assert_eq!(report.target, 0.99);
        assert_eq!(report.fmfi_reached, 0.8);
        let mut free = vec![0u64; 14];
        free[7] = 32;
        free[10] = 1;
        assert_eq!(mem.free_blocks_per_order(), free);
        // Linux's other index agrees that no 2 MiB request can fail here
        // (an order-10 block is free) ...
        assert_eq!(fragmentation_index(&free, 9), -1.0);
        // ... and F_i counts the same usable frames against all memory.
        assert_eq!(fi(&mem), 1.0 - 1024.0 / 16384.0);
    }

    #[test]
    fn memfrag_runs_out_of_buffer_then_releases_the_skipped_chunks_last_first() {
        // 16 MiB (4096 frames), slack 2 MiB (an order-9 block at 3584): a
        // 3584-page buffer of 28 press chunks. Releasing 12 MiB at 0.99
        // presses chunks 0, 2, ... 26 (7 MiB, FMFI 1792 / 2304 = 0.78) and
        // reaches the buffer's end; then, still under target, it pops the
        // odd chunks from the highest: 27, 25 (chunks 24-27 and the slack
        // merge into an order-10 block), 23, 21, 19, 17, until 12 MiB is free.
        let mut mem = PhysMem::new(4096, 10).unwrap();
        let report = memfrag(&mut mem, 0.99, 12 << 20, 2 << 20).unwrap();
        assert_eq!(mem.free_pages(), 3072);
        assert_eq!(report.frames_released, 20 * 128);
        let freed: Vec<u64> = (0..28).filter(|&c| mem.is_free(Pfn::new(c * 128))).collect();
        let mut expected: Vec<u64> = (0..28).step_by(2).collect();
        expected.extend([17, 19, 21, 23, 25, 27]);
        expected.sort_unstable();
        assert_eq!(freed, expected);
        // Chunks 0..14 even stay order-7 blocks; 16-23 and 24-27 with the
        // slack are two order-10 blocks: FMFI 1024 / 3072.
        let mut free = vec![0u64; 11];
        free[7] = 8;
        free[10] = 2;
        assert_eq!(mem.free_blocks_per_order(), free);
        assert_eq!(report.fmfi_reached, 0.333);
        mem.check_invariants().unwrap();
    }

    #[test]
    fn memfrag_is_deterministic_and_zero_leaves_memory_alone() {
        let run = |target| {
            let mut mem = n1_machine();
            memfrag(&mut mem, target, 64 << 20, 2 << 20).unwrap();
            (mem.free_blocks_per_order(), pinned(&mem))
        };
        assert_eq!(run(0.7), run(0.7));
        assert_ne!(run(0.7), run(0.3));
        let mut mem = n1_machine();
        assert_eq!(memfrag(&mut mem, 0.0, 64 << 20, 2 << 20).unwrap(), MemfragReport::default());
        assert_eq!(mem.free_pages(), 32768);
    }

    #[test]
    fn memfrag_bad_targets_and_slack_name_their_keys() {
        let key = |r: Result<MemfragReport>| match r {
            Err(Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {other:?}"),
        };
        let mut mem = PhysMem::new(4096, 10).unwrap();
        assert_eq!(key(memfrag(&mut mem, 1.0, 1 << 20, 0)), "os.fragmentation.fmfi");
        assert_eq!(key(memfrag(&mut mem, -0.1, 1 << 20, 0)), "os.fragmentation.fmfi");
        assert_eq!(key(memfrag(&mut mem, f64::NAN, 1 << 20, 0)), "os.fragmentation.fmfi");
        assert_eq!(key(memfrag(&mut mem, 0.5, 1 << 20, 16 << 20)), "os.fragmentation.fmfi_slack");
    }

    #[test]
    fn frag_sh_scales_the_target_to_the_footprint() {
        // GUPS in frag.sh: 33 GiB footprint, 1 GiB slack, target 50: 100 -
        // 33 x 50 / 34 = 51.47 (frag.sh's integers: 52); 99 stays 99.
        let gib = 1u64 << 30;
        assert!((frag_sh_target(0.5, 33 * gib, gib) - (1.0 - 16.5 / 34.0)).abs() < 1e-12);
        assert_eq!(frag_sh_target(0.99, 33 * gib, gib), 0.99);
        assert_eq!(frag_sh_target(0.5, gib, 0), 0.5);
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
