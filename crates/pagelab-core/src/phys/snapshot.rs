//! Fragmentation snapshots of real machines: `/proc/buddyinfo` and
//! `/proc/pagetypeinfo` as `pagelab frag capture` saves them, and a
//! simulated machine started in that state, scaled to its size.
//!
//! The file holds the two `/proc` files verbatim, each after a line
//! `== /proc/buddyinfo` or `== /proc/pagetypeinfo`. Zones are summed.
//! `pagetypeinfo` is required: it alone gives the machine's size (its
//! pageblock counts) and the split of free blocks by migratetype.
//!
//! Applying a snapshot: the simulated machine gets the same share of
//! pageblocks of each migratetype (chosen at random from the seed), every
//! frame starts allocated, and then, for each migratetype and order, the
//! captured number of free blocks scaled to the machine's size (rounded at
//! random, so small counts survive on average) is freed at random places
//! inside pageblocks of that type, never beside a free buddy of the same
//! order (which would merge with it). The memory that stays allocated
//! stands for what the real machine was using; it is pinned (owner
//! `Kernel`): no compaction moves it. Frames that a system reserved at
//! boot, before the snapshot (a hugetlb pool, the hole bitmaps), stay
//! reserved: no free block is placed over them.
//!
//! The used frames of Movable pageblocks stand for the page cache (and
//! anonymous memory) the real machine held: when a 4 KiB request finds no
//! free frame, reclaim frees them, in a random order (an LRU's order has
//! nothing to do with where a page sits), 32 at a time
//! ([`PhysMem::reclaim`]). Unmovable and Reclaimable pageblocks' used
//! frames (kernel memory, slab) are never reclaimed.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::fragmentation::Placement;
use super::{FrameOwner, Migratetype, PhysMem};
use crate::error::{Error, Result};
use crate::units::{Order, Pfn};

/// The migratetypes pagelab models, in `/proc/pagetypeinfo`'s names.
const TYPES: [(&str, Migratetype); 3] = [
    ("Unmovable", Migratetype::Unmovable),
    ("Movable", Migratetype::Movable),
    ("Reclaimable", Migratetype::Reclaimable),
];
const PAGEBLOCK_PAGES: u64 = 512;
const PAGEBLOCK_ORDER: u32 = 9;
/// Most orders of free counts a line may give (Linux's largest buddy order
/// is below 16 on every architecture).
const MAX_ORDERS: usize = 32;
/// Most frames a captured machine may have (2^52 bytes of 4 KiB pages, the
/// x86-64 physical address space).
const MAX_FRAMES: u64 = 1 << 40;

/// A parsed snapshot, zones summed.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Free blocks per order (index), summed over migratetypes.
    pub free: Vec<u64>,
    /// Free blocks per modelled migratetype (Unmovable, Movable,
    /// Reclaimable) and order. Other types (HighAtomic, CMA, Isolate) are
    /// counted in `free` only.
    pub free_by_type: [Vec<u64>; 3],
    /// Pageblocks of each modelled migratetype.
    pub pageblocks: [u64; 3],
    /// Pageblocks of every type: the machine's size is this x 2^order
    /// frames.
    pub total_pageblocks: u64,
    /// The captured kernel's pageblock order (`Page block order:`; 9 on
    /// x86 with 4 KiB pages). It sizes the captured machine only: the
    /// simulated machine's pageblocks are 2 MiB.
    pub pageblock_order: u32,
}

impl Snapshot {
    /// The captured machine's frames: its pageblocks of the order the
    /// file states.
    pub fn frames(&self) -> u64 {
        self.total_pageblocks << self.pageblock_order
    }

    /// Parses a capture file; `path` names it in errors. Every number is
    /// checked: counts are whole and not negative (Linux's `>100000`, a
    /// count it capped, reads as 100000), a zone's line has a count for
    /// every order the header names and for every pageblock type, sums fit,
    /// the pageblock order the file states is the one used, and the free
    /// blocks fit in the machine the pageblocks make.
    pub fn parse(text: &str, path: &str) -> Result<Snapshot> {
        // Line 0: the file as a whole.
        let err = |line: usize, msg: String| Error::Trace {
            path: path.into(),
            offset: line as u64,
            msg: if line == 0 { msg } else { format!("line {line}: {msg}") },
        };
        let mut section = "";
        let mut snap = Snapshot {
            free: Vec::new(),
            free_by_type: Default::default(),
            pageblocks: [0; 3],
            total_pageblocks: 0,
            pageblock_order: PAGEBLOCK_ORDER,
        };
        let mut block_types: Vec<String> = Vec::new();
        let mut orders: Option<usize> = None;
        let mut saw_pagetypeinfo = false;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let Some(name) = line.strip_prefix("== ") {
                section = if name.contains("pagetypeinfo") { "pagetypeinfo" } else { "buddyinfo" };
                saw_pagetypeinfo |= section == "pagetypeinfo";
                continue;
            }
            if section != "pagetypeinfo" {
                continue;
            }
            if let Some(rest) = line.strip_prefix("Page block order:") {
                snap.pageblock_order = pageblock_order(rest).map_err(|m| err(n, m))?;
            } else if let Some(rest) = line.strip_prefix("Pages per block:") {
                check_pages_per_block(rest, snap.pageblock_order).map_err(|m| err(n, m))?;
            } else if let Some(rest) = line.strip_prefix("Free pages count per migrate type at order") {
                orders = Some(order_columns(rest).map_err(|m| err(n, m))?);
            } else if let Some(rest) = line.strip_prefix("Number of blocks type") {
                block_types = rest.split_whitespace().map(str::to_string).collect();
            } else if line.starts_with("Node") {
                snap.add_zone_line(line, orders, &block_types).map_err(|m| err(n, m))?;
            }
        }
        if !saw_pagetypeinfo || snap.total_pageblocks == 0 {
            return Err(err(
                0,
                "no /proc/pagetypeinfo section with pageblock counts (capture as root with `pagelab frag capture`)"
                    .into(),
            ));
        }
        snap.check_free_fits().map_err(|m| err(0, m))?;
        Ok(snap)
    }

    /// Adds one `Node N, zone Z, ...` line: free blocks of one type by
    /// order, or the zone's pageblocks by type.
    fn add_zone_line(
        &mut self,
        line: &str,
        orders: Option<usize>,
        block_types: &[String],
    ) -> std::result::Result<(), String> {
        let (head, counts) = split_counts(line)?;
        if let Some(t) = head.split("type").nth(1).map(str::trim) {
            // "Node 0, zone Normal, type Movable  c0 c1 ... c10"
            if let Some(orders) = orders.filter(|&o| o != counts.len()) {
                return Err(format!("{} free counts for the header's {orders} orders", counts.len()));
            }
            if counts.len() > MAX_ORDERS {
                return Err(format!("{} orders of free counts; at most {MAX_ORDERS}", counts.len()));
            }
            add(&mut self.free, &counts)?;
            if let Some(k) = TYPES.iter().position(|(name, _)| *name == t) {
                add(&mut self.free_by_type[k], &counts)?;
            }
        } else if !block_types.is_empty() {
            // "Node 0, zone Normal  n_unmovable n_movable ..."
            if counts.len() != block_types.len() {
                return Err(format!("{} pageblock counts for {} types", counts.len(), block_types.len()));
            }
            for (t, &c) in block_types.iter().zip(&counts) {
                self.total_pageblocks = checked_sum(self.total_pageblocks, c)?;
                if let Some(k) = TYPES.iter().position(|(name, _)| name == t) {
                    self.pageblocks[k] = checked_sum(self.pageblocks[k], c)?;
                }
            }
            if self.total_pageblocks > MAX_FRAMES >> self.pageblock_order {
                return Err(format!(
                    "{} pageblocks of 2^{} pages make more than 2^{} frames",
                    self.total_pageblocks,
                    self.pageblock_order,
                    MAX_FRAMES.trailing_zeros()
                ));
            }
        }
        Ok(())
    }

    /// The free blocks cannot hold more frames than the machine has.
    fn check_free_fits(&self) -> std::result::Result<(), String> {
        let free: u128 = self.free.iter().enumerate().map(|(o, &c)| (c as u128) << o).sum();
        if free > self.frames() as u128 {
            return Err(format!(
                "the free blocks add up to {free} frames, more than the {} the pageblocks make",
                self.frames()
            ));
        }
        Ok(())
    }

    /// The factor from this capture's frames to `mem`'s.
    pub fn scale_to(&self, mem: &PhysMem) -> f64 {
        mem.nr_frames() as f64 / self.frames() as f64
    }

    /// Puts `mem` (fresh, all free) in the state of this snapshot scaled to
    /// its size. Returns the number of free blocks that could not be placed
    /// (0 unless memory is too small for the captured pattern), and records
    /// it in `mem` ([`PhysMem::snapshot_unplaced`]), so that the run reports
    /// it as `phys.snapshot_unplaced` whoever applied the snapshot.
    pub fn apply(&self, mem: &mut PhysMem, seed: u64) -> Result<u64> {
        self.apply_placed(mem, seed, Placement::Random)
    }

    /// [`apply`](Self::apply) with the Unmovable and the Reclaimable
    /// pageblocks placed by `placement`: at random, or each type as one run
    /// of consecutive pageblocks at a random place. (`/proc/pagetypeinfo`
    /// counts pageblocks by type; where they sit is not captured.)
    pub fn apply_placed(&self, mem: &mut PhysMem, seed: u64, placement: Placement) -> Result<u64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let scale = self.scale_to(mem);
        let pageblocks = (mem.nr_frames() / PAGEBLOCK_PAGES) as usize;
        let types = assign_pageblock_types(&self.pageblocks, pageblocks, placement, &mut rng);
        let reserved: Vec<bool> = (0..mem.nr_frames()).map(|f| !mem.is_free(Pfn::new(f))).collect();
        allocate_everything(mem)?;
        for (pb, &k) in types.iter().enumerate() {
            mem.set_pageblock_migratetype(Pfn::new(pb as u64 * PAGEBLOCK_PAGES), TYPES[k].1);
        }
        let mut unplaced = 0;
        for k in 0..3 {
            let candidates: Vec<usize> = (0..pageblocks).filter(|&pb| types[pb] == k).collect();
            for order in (0..self.free_by_type[k].len()).rev() {
                let order = Order::new(order as u8);
                if order.get() > mem.max_order() {
                    continue;
                }
                let want = random_round(self.free_by_type[k][order.get() as usize] as f64 * scale, &mut rng);
                for placed in 0..want {
                    // A block that found no place leaves memory as it was,
                    // so none of the rest of this order and type would find
                    // one (a fuzzed snapshot asking for 33 million blocks
                    // took seconds scanning for each).
                    if !place_free_block(mem, &reserved, &candidates, order, &mut rng) {
                        unplaced += want - placed;
                        break;
                    }
                }
            }
        }
        mem.set_snapshot_unplaced(unplaced);
        mem.set_page_cache(page_cache(mem, &reserved, &mut rng));
        Ok(unplaced)
    }
}

/// The frames the snapshot left in use in Movable pageblocks (not a
/// boot-time reservation), in the random order reclaim takes them.
fn page_cache(mem: &PhysMem, reserved: &[bool], rng: &mut Xoshiro256PlusPlus) -> Vec<u64> {
    let mut frames: Vec<u64> = (0..mem.nr_frames())
        .filter(|&f| {
            !reserved[f as usize]
                && !mem.is_free(Pfn::new(f))
                && mem.pageblock_migratetype(Pfn::new(f)) == Migratetype::Movable
        })
        .collect();
    // Fisher-Yates.
    for i in (1..frames.len()).rev() {
        frames.swap(i, rng.random_range(0..=i));
    }
    frames
}

/// Splits "Node 0, zone Normal, type Movable  1 2 3" into the text before
/// the counts and the counts: the words after the last one that is not a
/// number. A count that is negative, fractional or too large is an error
/// (not a word of the text, which would shift the columns).
fn split_counts(line: &str) -> std::result::Result<(String, Vec<u64>), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let first_count = words.iter().rposition(|w| !looks_numeric(w)).map_or(0, |i| i + 1);
    let counts = words[first_count..].iter().map(|w| parse_count(w)).collect::<std::result::Result<Vec<_>, _>>()?;
    if counts.is_empty() {
        return Err("a line with no counts".into());
    }
    Ok((words[..first_count].join(" "), counts))
}

/// A word meant as a count: digits, with a sign, a `>` or a fraction.
fn looks_numeric(word: &str) -> bool {
    let body = word.trim_start_matches(['>', '-', '+']);
    !body.is_empty() && body.chars().all(|c| c.is_ascii_digit() || c == '.') && body.chars().any(|c| c.is_ascii_digit())
}

/// One count: a whole number from 0 to 2^64-1; `>N` (a count Linux capped)
/// is N.
fn parse_count(word: &str) -> std::result::Result<u64, String> {
    let digits = word.strip_prefix('>').unwrap_or(word);
    if digits.starts_with('-') {
        return Err(format!("`{word}`: a count cannot be negative"));
    }
    digits.parse::<u64>().map_err(|e| format!("`{word}`: not a count from 0 to {} ({e})", u64::MAX))
}

fn pageblock_order(text: &str) -> std::result::Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(order) if (1..=20).contains(&order) => Ok(order),
        _ => Err(format!("page block order `{}`: expected a whole number from 1 to 20", text.trim())),
    }
}

fn check_pages_per_block(text: &str, order: u32) -> std::result::Result<(), String> {
    match text.trim().parse::<u64>() {
        Ok(pages) if pages == 1 << order => Ok(()),
        _ => Err(format!(
            "pages per block `{}`: expected 2^{order} = {} (the page block order)",
            text.trim(),
            1u64 << order
        )),
    }
}

/// The header's orders ("... at order 0 1 2 ... 10"): consecutive from 0.
fn order_columns(text: &str) -> std::result::Result<usize, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let consecutive = words.iter().enumerate().all(|(i, w)| w.parse::<usize>() == Ok(i));
    if words.is_empty() || !consecutive || words.len() > MAX_ORDERS {
        return Err(format!("orders `{}`: expected 0 1 2 ... (at most {MAX_ORDERS})", text.trim()));
    }
    Ok(words.len())
}

fn checked_sum(a: u64, b: u64) -> std::result::Result<u64, String> {
    a.checked_add(b).ok_or_else(|| format!("counts add up past {}", u64::MAX))
}

fn add(into: &mut Vec<u64>, counts: &[u64]) -> std::result::Result<(), String> {
    if into.len() < counts.len() {
        into.resize(counts.len(), 0);
    }
    for (a, &c) in into.iter_mut().zip(counts) {
        *a = checked_sum(*a, c)?;
    }
    Ok(())
}

/// Rounds `x` down or up at random, so that its expectation is `x`.
fn random_round(x: f64, rng: &mut Xoshiro256PlusPlus) -> u64 {
    let floor = x.floor();
    floor as u64 + (rng.random::<f64>() < x - floor) as u64
}

/// The migratetype (index into TYPES) of each simulated pageblock, in the
/// captured proportions, placed at random. Rounding may ask for more
/// Unmovable and Reclaimable pageblocks than there are (captured [1, 0, 1]
/// on 129 pageblocks rounds to 65 + 65): the last type gets what is left.
fn assign_pageblock_types(
    captured: &[u64; 3],
    pageblocks: usize,
    placement: Placement,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<usize> {
    let total: u64 = captured.iter().sum::<u64>().max(1);
    let mut types = vec![1usize; pageblocks]; // Movable unless chosen otherwise
    let mut movable = pageblocks;
    for k in [0, 2] {
        let n = ((captured[k] as f64 * pageblocks as f64 / total as f64).round() as usize).min(movable);
        movable -= n;
        if placement == Placement::Clustered {
            // n consecutive pageblocks among those still Movable.
            let free: Vec<usize> = (0..pageblocks).filter(|&pb| types[pb] == 1).collect();
            let start = rng.random_range(0..=free.len() - n);
            free[start..start + n].iter().for_each(|&pb| types[pb] = k);
            continue;
        }
        let mut placed = 0;
        while placed < n {
            let pb = rng.random_range(0..pageblocks);
            if types[pb] == 1 {
                types[pb] = k;
                placed += 1;
            }
        }
    }
    types
}

fn allocate_everything(mem: &mut PhysMem) -> Result<()> {
    for order in (0..=mem.max_order()).rev() {
        while mem.alloc(Order::new(order), Migratetype::Unmovable, FrameOwner::Kernel).is_some() {}
    }
    if mem.free_pages() != 0 {
        return Err(Error::OutOfMemory("could not take every frame to lay out a snapshot".into()));
    }
    Ok(())
}

/// Frees one block of `order` at a random place inside the pageblocks
/// `candidates` (all of one migratetype), where every frame is still
/// allocated, none `reserved` before the snapshot, and the buddy is not a
/// free block of the same order. After 64
/// random tries, scans every place in order, so a block goes unplaced only
/// when no valid place is left.
fn place_free_block(
    mem: &mut PhysMem,
    reserved: &[bool],
    candidates: &[usize],
    order: Order,
    rng: &mut Xoshiro256PlusPlus,
) -> bool {
    if candidates.is_empty() {
        return false;
    }
    let span = order.nr_pages();
    let slots_per_pb = (PAGEBLOCK_PAGES / span).max(1);
    let slot_start = |pb: u64, slot: u64| {
        if span >= PAGEBLOCK_PAGES {
            (pb * PAGEBLOCK_PAGES) & !(span - 1)
        } else {
            pb * PAGEBLOCK_PAGES + slot * span
        }
    };
    for _ in 0..64 {
        let pb = candidates[rng.random_range(0..candidates.len())] as u64;
        let start = slot_start(pb, rng.random_range(0..slots_per_pb));
        if can_free_at(mem, reserved, start, order) {
            mem.free(Pfn::new(start), order);
            return true;
        }
    }
    for &pb in candidates {
        for slot in 0..slots_per_pb {
            let start = slot_start(pb as u64, slot);
            if can_free_at(mem, reserved, start, order) {
                mem.free(Pfn::new(start), order);
                return true;
            }
        }
    }
    false
}

fn can_free_at(mem: &PhysMem, reserved: &[bool], start: u64, order: Order) -> bool {
    let span = order.nr_pages();
    if start + span > mem.nr_frames() {
        return false;
    }
    let mt = mem.pageblock_migratetype(Pfn::new(start));
    let same_type = (0..span.div_ceil(PAGEBLOCK_PAGES))
        .all(|b| mem.pageblock_migratetype(Pfn::new(start + b * PAGEBLOCK_PAGES)) == mt);
    // Blocks of the largest order never merge; smaller ones merge with a
    // free buddy of their order, which would change the counts.
    let buddy = Pfn::new(start ^ span);
    let buddy_free = order.get() < mem.max_order() && mem.free_block_containing(buddy) == Some((buddy, order));
    same_type && !buddy_free && (start..start + span).all(|f| !mem.is_free(Pfn::new(f)) && !reserved[f as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "== /proc/buddyinfo
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 0, zone   Normal    842   1511    705    184     97     22    623    448    148    227   1118
== /proc/pagetypeinfo
Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      0      0      0      1      0      0
Node    0, zone      DMA, type      Movable      0      0      0      0      0      0      0      0      0      1      3
Node    0, zone   Normal, type    Unmovable    472    343    290      0     44     11      3      2      4      0      0
Node    0, zone   Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118
Node    0, zone   Normal, type  Reclaimable    370   1168    415    183     52     11      4      2      3      1      0
Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate
Node 0, zone      DMA            1            7            0            0            0
Node 0, zone   Normal           44         2992          100            0            0
";

    #[test]
    fn zones_are_summed_by_type_and_order() {
        let s = Snapshot::parse(SAMPLE, "snap.txt").unwrap();
        assert_eq!(s.total_pageblocks, 1 + 7 + 44 + 2992 + 100);
        assert_eq!(s.pageblocks, [45, 2999, 100]);
        assert_eq!(s.free_by_type[1][10], 3 + 1118);
        assert_eq!(s.free_by_type[0][8], 1 + 4);
        assert_eq!(s.free[0], 472 + 370);
        assert_eq!(s.free.len(), 11);
    }

    #[test]
    fn a_file_without_pagetypeinfo_is_refused_naming_it() {
        let err = Snapshot::parse("== /proc/buddyinfo\nNode 0, zone DMA 1 2 3\n", "b.txt").unwrap_err().to_string();
        assert!(err.contains("b.txt") && err.contains("pagetypeinfo"), "{err}");
        let bad = SAMPLE.replace("226   1118", "226   x1118");
        assert!(Snapshot::parse(&bad, "c.txt").unwrap_err().to_string().contains("c.txt"));
    }

    #[test]
    fn clustered_placement_puts_each_type_in_one_run_of_pageblocks() {
        let s = Snapshot::parse(SAMPLE, "snap.txt").unwrap();
        let type_runs = |placement| {
            let mut mem = PhysMem::new(786 * 512, 10).unwrap();
            s.apply_placed(&mut mem, 7, placement).unwrap();
            mem.check_invariants().unwrap();
            [Migratetype::Unmovable, Migratetype::Reclaimable].map(|t| {
                let pbs: Vec<u64> = (0..786).filter(|&pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == t).collect();
                (pbs.len() as u64, pbs.last().unwrap() - pbs[0] + 1)
            })
        };
        // Unmovable first, in one run of consecutive pageblocks; the
        // Reclaimable ones in one run of the pageblocks left Movable around it.
        let clustered = type_runs(Placement::Clustered);
        assert!(clustered[0].0 > 1 && clustered[0].0 == clustered[0].1, "{clustered:?}");
        assert!(clustered[1].0 > 1 && clustered[1].1 <= clustered[1].0 + clustered[0].0, "{clustered:?}");
        let random = type_runs(Placement::Random);
        assert_eq!((random[0].0, random[1].0), (clustered[0].0, clustered[1].0));
        assert!(random[0].1 > random[0].0, "random placement made one run: {random:?}");
    }

    #[test]
    fn applying_reproduces_the_captured_shape_at_scale() {
        let s = Snapshot::parse(SAMPLE, "snap.txt").unwrap();
        // The sample machine is 3144 pageblocks; simulate a quarter of it.
        let mut mem = PhysMem::new(786 * 512, 10).unwrap();
        let unplaced = s.apply(&mut mem, 7).unwrap();
        assert_eq!(unplaced, 0);
        mem.check_invariants().unwrap();
        let got = mem.free_blocks_per_order();
        // Order 10 movable blocks: (3 + 1118) / 4 = 280.25 -> 280 or 281.
        assert!((280..=281).contains(&got[10]), "{got:?}");
        // Every order keeps about a quarter of its blocks (no merges).
        for (o, (&have, &captured)) in got.iter().zip(&s.free).enumerate() {
            let want = captured as f64 / 4.0;
            assert!((have as f64 - want).abs() <= want.sqrt() * 3.0 + 2.0, "order {o}: {have} vs {want}");
        }
        // Reproducible from the seed.
        let mut again = PhysMem::new(786 * 512, 10).unwrap();
        s.apply(&mut again, 7).unwrap();
        assert_eq!(again.free_blocks_per_order(), got);
    }

    /// A snapshot of one Unmovable and one Reclaimable pageblock, no
    /// Movable, with one free order-9 block of each type.
    fn no_movable() -> Snapshot {
        let text = SAMPLE
            .lines()
            .filter(|l| !l.starts_with("Node 0, zone ") && !l.contains("DMA"))
            .chain(["Node 0, zone   Normal            1            0            1            0            0"])
            .collect::<Vec<_>>()
            .join("\n")
            .replace("Normal, type    Unmovable    472    343    290      0     44     11      3      2      4      0      0",
                     "Normal, type    Unmovable      0      0      0      0      0      0      0      0      0      1      0")
            .replace("Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118",
                     "Normal, type      Movable      0      0      0      0      0      0      0      0      0      0      0")
            .replace("Normal, type  Reclaimable    370   1168    415    183     52     11      4      2      3      1      0",
                     "Normal, type  Reclaimable      0      0      0      0      0      0      0      0      0      1      0");
        Snapshot::parse(&text, "odd.txt").unwrap()
    }

    #[test]
    fn rounding_past_the_pageblocks_ends_on_an_odd_machine() {
        // 258 MiB = 129 pageblocks: 1:1 rounds to 65 + 65 > 129 (this hung).
        let s = no_movable();
        assert_eq!(s.pageblocks, [1, 0, 1]);
        let mut mem = PhysMem::new(129 * 512, 9).unwrap();
        let unplaced = s.apply(&mut mem, 3).unwrap();
        mem.check_invariants().unwrap();
        let unmovable =
            (0..129).filter(|&pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == Migratetype::Unmovable).count();
        let reclaimable =
            (0..129).filter(|&pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == Migratetype::Reclaimable).count();
        assert_eq!((unmovable, reclaimable), (65, 64));
        // 64.5 free order-9 blocks of each type wanted, rounded at random:
        // 65 Reclaimable ones leave one without a pageblock.
        assert!(unplaced <= 1, "{unplaced}");
        assert_eq!(unplaced, mem.snapshot_unplaced());
    }

    #[test]
    fn blocks_that_find_no_place_are_counted_in_memory() {
        // A capture claiming 3 free order-9 Reclaimable blocks in its one
        // Reclaimable pageblock, scaled x 64.5 onto 64 Reclaimable
        // pageblocks (max order 9: free pageblocks never merge).
        let mut s = no_movable();
        s.free_by_type[2][9] = 3;
        let mut mem = PhysMem::new(129 * 512, 9).unwrap();
        let unplaced = s.apply(&mut mem, 3).unwrap();
        // 3 x 64.5 = 193 or 194 wanted in 64 Reclaimable pageblocks.
        assert!((129..=130).contains(&unplaced), "{unplaced}");
        assert_eq!(mem.snapshot_unplaced(), unplaced);
        assert_eq!(PhysMem::new(512, 9).unwrap().snapshot_unplaced(), 0);
    }

    #[test]
    fn reserved_frames_stay_reserved_and_reclaim_frees_only_movable_pageblocks_used_frames() {
        let s = Snapshot::parse(SAMPLE, "snap.txt").unwrap();
        let mut mem = PhysMem::new(786 * 512, 10).unwrap();
        // A boot-time reservation (a hugetlb pool's page) predates the snapshot.
        let pool = mem.alloc(Order::PMD, Migratetype::Movable, FrameOwner::Reserved { pool: 1 }).unwrap();
        s.apply(&mut mem, 7).unwrap();
        mem.check_invariants().unwrap();
        assert!((0..512).all(|i| mem.owner(pool.add(i)) == FrameOwner::Reserved { pool: 1 }));
        // Take every free frame, then as many more as the Movable
        // pageblocks' used frames: reclaim serves each, 32 at a time.
        let free = mem.free_pages();
        let cache = mem.page_cache_left();
        let movable_used: u64 = (0..786u64)
            .filter(|&pb| mem.pageblock_migratetype(Pfn::new(pb * 512)) == Migratetype::Movable)
            .map(|pb| (0..512).filter(|&i| !mem.is_free(Pfn::new(pb * 512 + i))).count() as u64)
            .sum();
        assert_eq!(cache, movable_used - 512 * (mem.pageblock_migratetype(pool) == Migratetype::Movable) as u64);
        for _ in 0..free + cache {
            assert!(mem.alloc(Order::BASE, Migratetype::Movable, FrameOwner::Kernel).is_some());
        }
        assert_eq!(mem.reclaimed(), cache);
        assert!(mem.alloc(Order::BASE, Migratetype::Movable, FrameOwner::Kernel).is_none(), "nothing left");
        // Unmovable and Reclaimable pageblocks' used frames, and the pool, were never freed.
        assert!((0..512).all(|i| mem.owner(pool.add(i)) == FrameOwner::Reserved { pool: 1 }));
        mem.check_invariants().unwrap();
    }

    #[test]
    fn millions_of_blocks_that_cannot_fit_are_counted_at_once() {
        // Found by `make fuzz`: a count of 33,333,333 free order-0 blocks
        // scanned every place once per block (seconds, minutes under the
        // fuzzer). The first that finds no place ends its order and type.
        let mut s = no_movable();
        s.free_by_type[0][0] = 33_333_333;
        let mut mem = PhysMem::new(129 * 512, 9).unwrap();
        let unplaced = s.apply(&mut mem, 3).unwrap();
        // At most every frame of the Unmovable pageblocks takes a block.
        let wanted = (33_333_333.0 * s.scale_to(&mem)).floor() as u64;
        assert!(unplaced >= wanted - 129 * 512 && unplaced <= wanted + 1, "{unplaced} of {wanted}");
    }
}
