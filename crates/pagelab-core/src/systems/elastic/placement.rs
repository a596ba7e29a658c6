//! Leshy's placement: from sampled TLB misses to a translation size per
//! region, under a budget of TLB entries (Elastic Translations, IV-D).
//!
//! Followed from the artifact's `leshy` tool (cslab-ntua/etutils-rs,
//! `src/leshy.rs`, the one `bin/epochs.sh` and `bin/hints/generate_hints.sh`
//! run), step by step:
//!
//! 1. **Roll-up.** Samples are counted per 4 KiB page (misses, the sum of
//!    their latencies); pages are summed into 64 KiB regions, those into
//!    2 MiB ones, those into 32 MiB ones. A region also counts the 4 KiB
//!    pages with misses in it (`pages`). Each size's regions are ranked by
//!    misses, then latency, then pages (the tool's `Ord`; ties here by
//!    address, where the tool's hash map left them in any order).
//! 2. **Starting size.** The target is `coverage` of all samples (the
//!    tool's 100000/100000: all). The smallest size whose `budget`
//!    best-ranked regions cover the target is the starting size; if none
//!    does, 32 MiB, with the budget raised to the 32 MiB regions needed.
//!    4 KiB as the start means no hints.
//! 3. **Fewest large translations.** At the starting size, take the `k`
//!    best regions that hold more than one page with misses, and fill the
//!    rest of the budget with the best regions one size down that do not
//!    overlap them (recursively down to 64 KiB, then with the size below
//!    that); `k` starts at the number of such regions among the starting
//!    coverage and falls one by one, and the smallest `k` that still meets
//!    the target wins. When no `k` meets it, the fill reaches one more
//!    size down (the tool's `cutoff`).
//!
//! Output: the chosen regions, best first, each a size hint (4 KiB ones
//! are dropped by whoever loads them, as the tool's `prctl` does).
//!
//! Differences from the tool: overlap is tested exactly (the tool compares
//! aligned addresses, which misses a smaller region at the start of a
//! larger one); a step that would wrap an unsigned count below zero in the
//! tool stops instead; and "no solution" gives no hints, where the tool
//! panics.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

/// The four translation sizes Leshy chooses between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Size {
    Size4K = 0,
    Size64K = 1,
    Size2M = 2,
    Size32M = 3,
}

pub const SIZES: [Size; 4] = [Size::Size4K, Size::Size64K, Size::Size2M, Size::Size32M];

impl Size {
    pub fn bytes(self) -> u64 {
        4096 << [0, 4, 9, 13][self as usize]
    }

    fn align(self, addr: u64) -> u64 {
        addr & !(self.bytes() - 1)
    }
}

/// A region of one size and what was sampled in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub size: Size,
    pub misses: u64,
    /// The sum of the samples' walk latencies.
    pub latency: u64,
    /// 4 KiB pages with at least one sample.
    pub pages: u32,
}

/// Best first: misses, then latency, then pages (then the lower address).
fn rank(a: &Region, b: &Region) -> Ordering {
    (b.misses, b.latency, b.pages).cmp(&(a.misses, a.latency, a.pages)).then(a.base.cmp(&b.base))
}

/// The regions of each size, ranked, from samples of (address, latency).
pub fn roll_up(samples: impl IntoIterator<Item = (u64, u64)>) -> [Vec<Region>; 4] {
    roll_up_counts(samples.into_iter().map(|(addr, latency)| (addr, 1, latency)))
}

/// The same from (address, count, latency sum) observations: a count of
/// samples, or of scans that found a page accessed (the tool's access
/// traces, `0xVPN -> hits`).
pub fn roll_up_counts(observed: impl IntoIterator<Item = (u64, u64, u64)>) -> [Vec<Region>; 4] {
    let mut pages: BTreeMap<u64, Region> = BTreeMap::new();
    for (addr, count, latency) in observed {
        let base = Size::Size4K.align(addr);
        let r = pages.entry(base).or_insert(Region { base, size: Size::Size4K, misses: 0, latency: 0, pages: 1 });
        r.misses += count;
        r.latency += latency;
    }
    let mut levels: [Vec<Region>; 4] = Default::default();
    levels[0] = pages.into_values().collect();
    for size in [Size::Size64K, Size::Size2M, Size::Size32M] {
        let mut up: BTreeMap<u64, Region> = BTreeMap::new();
        for r in &levels[size as usize - 1] {
            let base = size.align(r.base);
            let e = up.entry(base).or_insert(Region { base, size, misses: 0, latency: 0, pages: 0 });
            e.misses += r.misses;
            e.latency += r.latency;
            e.pages += r.pages;
        }
        levels[size as usize] = up.into_values().collect();
    }
    for level in &mut levels {
        level.sort_by(rank);
    }
    levels
}

/// The regions chosen so far, for exact overlap tests: `at[s]` holds the
/// bases of chosen regions of size `s`; `under[s]` the bases of size-`s`
/// regions that contain a chosen smaller one.
#[derive(Debug, Clone, Default)]
struct Chosen {
    at: [HashSet<u64>; 4],
    under: [HashSet<u64>; 4],
}

impl Chosen {
    fn overlaps(&self, r: &Region) -> bool {
        SIZES[r.size as usize..].iter().any(|&t| self.at[t as usize].contains(&t.align(r.base)))
            || self.under[r.size as usize].contains(&r.base)
    }

    fn add(&mut self, r: &Region) {
        self.at[r.size as usize].insert(r.base);
        for &u in &SIZES[r.size as usize + 1..] {
            self.under[u as usize].insert(u.align(r.base));
        }
    }
}

/// One step of the search (the tool's `State`).
#[derive(Debug, Clone)]
struct State {
    /// Entries taken at each level.
    dist: [usize; 4],
    level: usize,
    start: usize,
    /// At the starting level, how many to take (then fewer by `step`);
    /// below it `None`: as many as the budget allows.
    nr: Option<usize>,
    step: usize,
    misses: u64,
    chosen: Chosen,
    picked: Vec<Region>,
    cutoff: usize,
}

struct Search<'a> {
    levels: &'a [Vec<Region>; 4],
    budget: usize,
    target: u64,
}

impl Search<'_> {
    /// The regions of `level` that overlap nothing chosen (and, unless
    /// 4 KiB, hold more than one page with misses when `multi`).
    fn free<'b>(&'b self, level: usize, chosen: &'b Chosen, multi: bool) -> impl Iterator<Item = &'b Region> + 'b {
        self.levels[level].iter().filter(move |r| (!multi || level == 0 || r.pages > 1) && !chosen.overlaps(r))
    }

    fn solve(&self, st: &State) -> Option<Vec<Region>> {
        let level = st.level;
        let fill_level = level.checked_sub(st.cutoff + 1)?;
        let mut dist = st.dist;
        let mut rem = self.budget.saturating_sub(dist[level + 1..].iter().sum());
        let reachable: Vec<&Region> = self.free(level, &st.chosen, false).take(rem).collect();
        if st.misses + reachable.iter().map(|r| r.misses).sum::<u64>() < self.target {
            return None;
        }
        rem = rem.min(reachable.len());
        let n = st.nr.unwrap_or(rem);
        let entries: Vec<&Region> = self.free(level, &st.chosen, true).take(n).collect();
        dist[level] = entries.len();
        loop {
            let mut next = st.clone();
            for r in &entries[..dist[level]] {
                next.misses += r.misses;
                next.chosen.add(r);
                next.picked.push(**r);
            }
            if next.misses >= self.target {
                return Some(next.picked);
            }
            if level + 1 == st.start || level == Size::Size64K as usize {
                let fill: Vec<Region> =
                    self.free(fill_level, &next.chosen, false).take(rem.saturating_sub(dist[level])).copied().collect();
                if next.misses + fill.iter().map(|r| r.misses).sum::<u64>() >= self.target {
                    next.picked.extend(fill);
                    return Some(next.picked);
                }
            } else {
                let below =
                    State { dist, level: level - 1, nr: None, step: 8, cutoff: st.cutoff.saturating_sub(1), ..next };
                if let Some(found) = self.solve(&below) {
                    return Some(found);
                }
            }
            if st.nr.is_none() {
                dist[level] += st.step;
                if dist[level] > rem.min(entries.len()) {
                    return None;
                }
            } else {
                if dist[level] < st.step {
                    return None;
                }
                dist[level] -= st.step;
            }
        }
    }
}

/// The size hints for `levels` (from [`roll_up`]) under `budget` TLB
/// entries, covering `coverage` of the samples: the chosen regions, best
/// first. Empty when there are no samples or 4 KiB pages already cover
/// the target.
pub fn place(levels: &[Vec<Region>; 4], budget: usize, coverage: f64) -> Vec<Region> {
    let total: u64 = levels[0].iter().map(|r| r.misses).sum();
    let target = (total as f64 * coverage).floor() as u64;
    if total == 0 || target == 0 {
        return Vec::new();
    }
    let mut budget = budget;
    let covering = |level: usize, budget: usize| {
        let (mut misses, mut n) = (0, 0);
        for r in &levels[level] {
            misses += r.misses;
            n += 1;
            if n >= budget || misses >= target {
                break;
            }
        }
        (misses, n)
    };
    let start = match (0..4).find(|&l| covering(l, budget).0 >= target) {
        Some(level) => level,
        None => {
            // Unreachable within the budget: as many 32 MiB regions as the
            // target needs.
            budget = covering(3, usize::MAX).1;
            3
        }
    };
    if start == 0 {
        return Vec::new();
    }
    let top = covering(start, budget).1;
    let nr = levels[start].iter().take(top).filter(|r| r.pages > 1).count();
    let search = Search { levels, budget, target };
    for cutoff in 0..4 {
        let mut best = None;
        let mut n = nr;
        loop {
            let st = State {
                dist: [0; 4],
                level: start,
                start,
                nr: Some(n),
                step: 1,
                misses: 0,
                chosen: Chosen::default(),
                picked: Vec::new(),
                cutoff,
            };
            let Some(found) = search.solve(&st) else { break };
            let at_start = found.iter().filter(|r| r.size as usize == start).count();
            best = Some(found);
            if at_start == 0 {
                break;
            }
            n = at_start - 1;
        }
        if let Some(mut found) = best {
            found.sort_by(rank);
            return found;
        }
    }
    Vec::new()
}
