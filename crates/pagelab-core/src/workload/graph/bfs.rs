//! GAPBS `DOBFS`: direction-optimizing breadth-first search (Beamer et al.).
//!
//! Keeps: `InitParent` (`parent[n] = -degree`, or -1), the sliding frontier
//! queue, top-down steps (`TDStep`: for each frontier vertex, for each
//! neighbour, read parent, claim it if negative and enqueue), the switch to
//! bottom-up when `scout_count > edges_to_check / alpha` (alpha 15), bottom-up
//! steps (`BUStep`: reset `next`, every unvisited vertex scans its
//! neighbours for one in the `front` bitmap) while the frontier grows or
//! stays above `n / beta` (beta 18), `QueueToBitmap` / `BitmapToQueue`
//! conversions, the final pass that turns `parent < -1` into -1, and sources
//! picked at random among vertices with edges (`SourcePicker`). A natural
//! run is `sources` searches (GAPBS and Graph500 use 64).
//!
//! Simplifies: a compare-and-swap or atomic bit set is one store;
//! `BitmapToQueue` reads each bitmap word once (the compiled loop reloads
//! it per bit, hitting L1); memsets of the bitmaps store one word per line.

use super::{bit_word, elem4, Csr, CsrVa, Kernel, INSTRS};
use crate::units::VirtAddr;
use crate::workload::{below, rng_for, Access, Layout, Site};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    PickSource,
    InitParent(u32),
    Start,
    /// `curr.reset(); front.reset();`, one store per line of both.
    ResetBitmaps(u64),
    Decide,
    TdVertex(u64),
    TdEdge {
        qi: u64,
        u: u32,
        e: u64,
        end: u64,
    },
    QueueToBitmap(u64),
    /// `next.reset()` at the top of a bottom-up step.
    BuReset(u64),
    BuVertex(u32),
    BuEdge {
        u: u32,
        e: u64,
        end: u64,
    },
    BuEnd,
    BitmapToQueue(u64),
    Finalize(u32),
    SourceDone,
}

/// Accesses per vertex of `InitParent` (`index[v]`, `index[v + 1]`, then
/// `parent[v]`), the sweep before the first search: what
/// `workload.skip_kernel_init` fast-forwards.
pub(crate) const INIT_ACCESSES_PER_VERTEX: u64 = 3;

pub(crate) struct Bfs {
    parent_va: VirtAddr,
    queue_va: VirtAddr,
    front_va: VirtAddr,
    next_va: VirtAddr,
    parent: Vec<i32>,
    queue: Vec<u32>,
    front: Vec<u64>,
    next: Vec<u64>,
    /// SlidingQueue: pushes go to `q_in`; the window is `q_start..q_end`.
    q_in: u64,
    q_start: u64,
    q_end: u64,
    edges_to_check: i64,
    scout_count: i64,
    awake_count: i64,
    old_awake_count: i64,
    pub(crate) alpha: i64,
    pub(crate) beta: i64,
    source: u32,
    /// Tests pin the source; otherwise `SourcePicker` draws it.
    pub(crate) fixed_source: Option<u32>,
    sources_per_run: u32,
    sources_done: u32,
    rng: Xoshiro256PlusPlus,
    phase: Phase,
}

impl Bfs {
    pub(crate) fn new(g: &Csr, layout: &mut Layout, seed: u64, sources: u32) -> Self {
        let n = g.vertices() as u64;
        let words = n.div_ceil(64);
        Bfs {
            parent_va: layout.place("bfs-parent", 4 * n),
            queue_va: layout.place("bfs-queue", 4 * n),
            front_va: layout.place("bfs-front", 8 * words),
            next_va: layout.place("bfs-curr", 8 * words),
            parent: vec![0; n as usize],
            queue: vec![0; n as usize],
            front: vec![0; words as usize],
            next: vec![0; words as usize],
            q_in: 0,
            q_start: 0,
            q_end: 0,
            edges_to_check: 0,
            scout_count: 0,
            awake_count: 0,
            old_awake_count: 0,
            alpha: 15,
            beta: 18,
            source: 0,
            fixed_source: None,
            sources_per_run: sources,
            sources_done: 0,
            rng: rng_for(seed, 0x0062_6673),
            phase: Phase::PickSource,
        }
    }

    /// The parent array after the last search (tests).
    #[cfg(test)]
    pub(crate) fn parents(&self) -> &[i32] {
        &self.parent
    }

    #[cfg(test)]
    pub(crate) fn parent_va(&self) -> VirtAddr {
        self.parent_va
    }

    fn slide_window(&mut self) {
        self.q_start = self.q_end;
        self.q_end = self.q_in;
    }

    fn push_queue(&mut self, v: u32, out: &mut Vec<Access>) {
        self.queue[self.q_in as usize] = v;
        out.push(Access::store(elem4(self.queue_va, self.q_in as u32), 4, INSTRS));
        self.q_in += 1;
    }

    fn bitmap_lines(&self) -> u64 {
        (self.front.len() as u64 * 8).div_ceil(64)
    }

    fn pick_source(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) {
        let n = g.vertices() as u64;
        self.source = loop {
            let v = self.fixed_source.unwrap_or_else(|| below(self.rng.next_u64(), n) as u32);
            va.load_range(out, v);
            if g.degree(v) > 0 || g.directed_edges() == 0 || self.fixed_source.is_some() {
                break v;
            }
        };
    }

    /// Starts the next bottom-up step: `old = awake; awake = BUStep(...)`.
    fn begin_bottom_up_step(&mut self) -> Phase {
        self.old_awake_count = self.awake_count;
        self.awake_count = 0;
        self.next.fill(0);
        Phase::BuReset(0)
    }

    /// One step of the state machine; false when the run's last search ends.
    fn advance(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        let n = g.vertices();
        self.phase = match self.phase {
            Phase::PickSource => {
                self.pick_source(g, va, out);
                Phase::InitParent(0)
            }
            Phase::InitParent(v) if v == n => Phase::Start,
            Phase::InitParent(v) => {
                va.load_range(out, v);
                let d = g.degree(v);
                self.parent[v as usize] = if d != 0 { -(d.min(i32::MAX as u64) as i32) } else { -1 };
                out.push(Access::store(elem4(self.parent_va, v), 4, INSTRS));
                Phase::InitParent(v + 1)
            }
            Phase::Start => {
                self.parent[self.source as usize] = self.source as i32;
                out.push(Access::store(elem4(self.parent_va, self.source), 4, INSTRS));
                (self.q_in, self.q_start, self.q_end) = (0, 0, 0);
                self.push_queue(self.source, out);
                self.slide_window();
                self.front.fill(0);
                self.next.fill(0);
                Phase::ResetBitmaps(0)
            }
            Phase::ResetBitmaps(line) if line == 2 * self.bitmap_lines() => {
                self.edges_to_check = g.directed_edges() as i64;
                va.load_range(out, self.source);
                self.scout_count = g.degree(self.source) as i64;
                Phase::Decide
            }
            Phase::ResetBitmaps(line) => {
                let lines = self.bitmap_lines();
                let (base, l) = if line < lines { (self.next_va, line) } else { (self.front_va, line - lines) };
                out.push(Access::store(base.add(64 * l), 8, INSTRS));
                Phase::ResetBitmaps(line + 1)
            }
            Phase::Decide => self.decide(),
            Phase::TdVertex(qi) if qi == self.q_end => {
                self.slide_window();
                Phase::Decide
            }
            Phase::TdVertex(qi) => {
                out.push(Access::load(elem4(self.queue_va, qi as u32), 4, INSTRS));
                let u = self.queue[qi as usize];
                va.load_range(out, u);
                Phase::TdEdge { qi, u, e: g.begin(u), end: g.end(u) }
            }
            Phase::TdEdge { qi, e, end, .. } if e == end => Phase::TdVertex(qi + 1),
            Phase::TdEdge { qi, u, e, end } => {
                self.top_down_edge(g, va, u, e, out);
                Phase::TdEdge { qi, u, e: e + 1, end }
            }
            Phase::QueueToBitmap(qi) if qi == self.q_end => {
                self.awake_count = (self.q_end - self.q_start) as i64;
                self.slide_window();
                self.begin_bottom_up_step()
            }
            Phase::QueueToBitmap(qi) => {
                out.push(Access::load(elem4(self.queue_va, qi as u32), 4, INSTRS));
                let u = self.queue[qi as usize];
                self.front[u as usize / 64] |= 1 << (u % 64);
                out.push(Access::store(bit_word(self.front_va, u), 8, INSTRS));
                Phase::QueueToBitmap(qi + 1)
            }
            Phase::BuReset(line) if line == self.bitmap_lines() => Phase::BuVertex(0),
            Phase::BuReset(line) => {
                out.push(Access::store(self.next_va.add(64 * line), 8, INSTRS));
                Phase::BuReset(line + 1)
            }
            Phase::BuVertex(u) if u == n => Phase::BuEnd,
            Phase::BuVertex(u) => {
                out.push(Access::load(elem4(self.parent_va, u), 4, INSTRS));
                if self.parent[u as usize] < 0 {
                    va.load_range(out, u);
                    Phase::BuEdge { u, e: g.begin(u), end: g.end(u) }
                } else {
                    Phase::BuVertex(u + 1)
                }
            }
            Phase::BuEdge { u, e, end } if e == end => Phase::BuVertex(u + 1),
            Phase::BuEdge { u, e, end } => {
                if self.bottom_up_edge(g, va, u, e, out) {
                    Phase::BuVertex(u + 1)
                } else {
                    Phase::BuEdge { u, e: e + 1, end }
                }
            }
            Phase::BuEnd => {
                std::mem::swap(&mut self.front, &mut self.next);
                std::mem::swap(&mut self.front_va, &mut self.next_va);
                let keep_going = self.awake_count >= self.old_awake_count || self.awake_count > n as i64 / self.beta;
                if keep_going {
                    self.begin_bottom_up_step()
                } else {
                    Phase::BitmapToQueue(0)
                }
            }
            Phase::BitmapToQueue(w) if w == self.front.len() as u64 => {
                self.slide_window();
                self.scout_count = 1;
                Phase::Decide
            }
            Phase::BitmapToQueue(w) => {
                out.push(Access::load(self.front_va.add(8 * w), 8, INSTRS));
                let mut bits = self.front[w as usize];
                while bits != 0 {
                    let v = (w * 64) as u32 + bits.trailing_zeros();
                    self.push_queue(v, out);
                    bits &= bits - 1;
                }
                Phase::BitmapToQueue(w + 1)
            }
            Phase::Finalize(v) if v == n => Phase::SourceDone,
            Phase::Finalize(v) => {
                out.push(Access::load(elem4(self.parent_va, v), 4, INSTRS));
                if self.parent[v as usize] < -1 {
                    self.parent[v as usize] = -1;
                    out.push(Access::store(elem4(self.parent_va, v), 4, INSTRS));
                }
                Phase::Finalize(v + 1)
            }
            Phase::SourceDone => {
                self.sources_done += 1;
                self.phase = Phase::PickSource;
                return self.sources_done < self.sources_per_run;
            }
        };
        true
    }

    /// DOBFS's loop head: done, switch to bottom-up, or one more top-down step.
    fn decide(&mut self) -> Phase {
        if self.q_start == self.q_end {
            Phase::Finalize(0)
        } else if self.scout_count > self.edges_to_check / self.alpha {
            Phase::QueueToBitmap(self.q_start)
        } else {
            self.edges_to_check -= self.scout_count;
            self.scout_count = 0;
            Phase::TdVertex(self.q_start)
        }
    }

    /// `TDStep`'s inner body for edge `e` of frontier vertex `u`.
    fn top_down_edge(&mut self, g: &Csr, va: &CsrVa, u: u32, e: u64, out: &mut Vec<Access>) {
        out.push(Access::load(va.neigh(e), 4, INSTRS).at(Site::pc(30)));
        let v = g.neighbour(e);
        out.push(Access::load(elem4(self.parent_va, v), 4, INSTRS).at(Site::pc(31).dependent()));
        let curr = self.parent[v as usize];
        if curr < 0 {
            self.parent[v as usize] = u as i32;
            out.push(Access::store(elem4(self.parent_va, v), 4, INSTRS).at(Site::pc(32).dependent()));
            self.push_queue(v, out);
            self.scout_count += -(curr as i64);
        }
    }

    /// `BUStep`'s inner body: true when `u` found its parent.
    fn bottom_up_edge(&mut self, g: &Csr, va: &CsrVa, u: u32, e: u64, out: &mut Vec<Access>) -> bool {
        out.push(Access::load(va.neigh(e), 4, INSTRS).at(Site::pc(33)));
        let v = g.neighbour(e);
        out.push(Access::load(bit_word(self.front_va, v), 8, INSTRS).at(Site::pc(34).dependent()));
        if self.front[v as usize / 64] & (1 << (v % 64)) == 0 {
            return false;
        }
        self.parent[u as usize] = v as i32;
        out.push(Access::store(elem4(self.parent_va, u), 4, INSTRS));
        self.awake_count += 1;
        self.next[u as usize / 64] |= 1 << (u % 64);
        out.push(Access::store(bit_word(self.next_va, u), 8, INSTRS));
        true
    }
}

impl Kernel for Bfs {
    fn step(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        Bfs::advance(self, g, va, out)
    }

    fn restart(&mut self) {
        self.sources_done = 0;
        self.phase = Phase::PickSource;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::*;
    use super::*;

    /// 0-1, 0-2, 1-3, 2-3, 3-4: neigh(0)=[1,2], neigh(1)=[0,3],
    /// neigh(2)=[0,3], neigh(3)=[1,2,4], neigh(4)=[3]; 10 directed edges.
    const EDGES: [(u32, u32); 5] = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)];

    fn one_search(alpha: i64) -> (Vec<(u32, bool)>, Vec<i32>) {
        let (g, va, mut layout) = placed(5, &EDGES);
        let mut bfs = Bfs::new(&g, &mut layout, 1, 1);
        bfs.alpha = alpha;
        bfs.fixed_source = Some(0);
        let accesses = run_once(&mut bfs, &g, &va);
        (touches(&accesses, bfs.parent_va(), 5), bfs.parents().to_vec())
    }

    const L: bool = false;
    const S: bool = true;

    #[test]
    fn top_down_parent_accesses_by_hand() {
        // alpha = 1 keeps every step top-down: scout (2, 4, 3, 1) never
        // exceeds edges_to_check (10, 8, 4, 1).
        let (got, parents) = one_search(1);
        #[rustfmt::skip]
        let want = [
            // InitParent: -2, -2, -2, -3, -1.
            (0, S), (1, S), (2, S), (3, S), (4, S),
            // parent[source] = source.
            (0, S),
            // Frontier {0}: claim 1 and 2.
            (1, L), (1, S), (2, L), (2, S),
            // Frontier {1, 2}: 1 sees 0 (taken) and claims 3; 2 sees 0, 3 taken.
            (0, L), (3, L), (3, S), (0, L), (3, L),
            // Frontier {3}: 1 and 2 taken, claims 4.
            (1, L), (2, L), (4, L), (4, S),
            // Frontier {4}: 3 taken.
            (3, L),
            // Final pass: nothing below -1 is left.
            (0, L), (1, L), (2, L), (3, L), (4, L),
        ];
        assert_eq!(got, want);
        assert_eq!(parents, [0, 0, 0, 1, 3]);
    }

    #[test]
    fn bottom_up_parent_accesses_by_hand() {
        // alpha = 15: scout 2 > 10 / 15 = 0, so bottom-up from the start.
        // Steps awaken {1,2}, {3}, {4}, {} and stop when the count drops
        // to 0 (not >= 1 and not > 5 / 18 = 0).
        let (got, parents) = one_search(15);
        #[rustfmt::skip]
        let want = [
            (0, S), (1, S), (2, S), (3, S), (4, S),
            (0, S),
            // Step 1, front {0}: 1 and 2 find 0; 3 and 4 find nothing.
            (0, L), (1, L), (1, S), (2, L), (2, S), (3, L), (4, L),
            // Step 2, front {1, 2}: 3 finds 1 (its first neighbour).
            (0, L), (1, L), (2, L), (3, L), (3, S), (4, L),
            // Step 3, front {3}: 4 finds 3.
            (0, L), (1, L), (2, L), (3, L), (4, L), (4, S),
            // Step 4, front {4}: nobody left.
            (0, L), (1, L), (2, L), (3, L), (4, L),
            // Final pass.
            (0, L), (1, L), (2, L), (3, L), (4, L),
        ];
        assert_eq!(got, want);
        assert_eq!(parents, [0, 0, 0, 1, 3]);
    }

    /// `workload.skip_kernel_init` fast-forwards `INIT_ACCESSES_PER_VERTEX`
    /// accesses per vertex to skip `InitParent`.
    #[test]
    fn init_parent_is_three_accesses_per_vertex() {
        assert_eq!(INIT_ACCESSES_PER_VERTEX, 3);
        let g = super::super::kronecker(8, 8, 4);
        let mut layout = Layout::new();
        let va = CsrVa::place(&mut layout, &g);
        let mut bfs = Bfs::new(&g, &mut layout, 3, 1);
        bfs.fixed_source = Some(7);
        let n = g.vertices() as usize;
        let mut out = Vec::new();
        bfs.fill(&g, &va, &mut out, 2 + 3 * n + 1);
        // The source pick's two index loads, the sweep, then `parent[source] = source`.
        let sweep = &out[2..2 + 3 * n];
        assert!(sweep.chunks(3).enumerate().all(|(v, a)| a[2].vaddr == elem4(bfs.parent_va, v as u32)));
        let start = out[2 + 3 * n];
        assert_eq!((start.vaddr, start.kind), (elem4(bfs.parent_va, 7), crate::workload::AccessKind::Store));
    }

    #[test]
    fn kronecker_bfs_builds_a_valid_tree() {
        let g = super::super::kronecker(10, 8, 4);
        let mut layout = Layout::new();
        let va = CsrVa::place(&mut layout, &g);
        let mut bfs = Bfs::new(&g, &mut layout, 3, 3);
        let accesses = run_once(&mut bfs, &g, &va);
        assert!(accesses.len() > 3 * 1024 * 3);
        // Every reached vertex's parent is a neighbour, and the source's
        // component is reached entirely.
        let p = bfs.parents();
        let reached: Vec<u32> = (0..g.vertices()).filter(|&v| p[v as usize] >= 0).collect();
        assert!(reached.len() > 500, "{}", reached.len());
        for &v in &reached {
            let parent = p[v as usize] as u32;
            assert!(parent == v || g.neighbours(v).contains(&parent));
            for &w in g.neighbours(v) {
                assert!(p[w as usize] >= 0, "neighbour {w} of reached {v} unreached");
            }
        }
    }
}
