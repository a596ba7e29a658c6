//! GAPBS `PageRankPull`.
//!
//! Keeps: `scores` initialised to 1/n; each iteration first computes
//! `outgoing_contrib[n] = scores[n] / out_degree(n)` for every vertex, then
//! pulls: for every u, sum `outgoing_contrib[v]` over its (in-)neighbours
//! (the random reads), `scores[u] = base + 0.85 * sum`, accumulating the L1
//! error; stop when the error is below 1e-4 (GAPBS's tolerance, as the
//! reference's benchmark runs use) or after 20 iterations. Floats as GAPBS's
//! `ScoreT`. A natural run is one PageRank to convergence.
//!
//! Simplifies: vertices without edges get a contribution of 0 instead of
//! GAPBS's division by zero (never read: nobody pulls from them).

use super::{elem4, Csr, CsrVa, Kernel, INSTRS};
use crate::units::VirtAddr;
use crate::workload::{Access, Layout, Site};

const DAMPING: f32 = 0.85;
const EPSILON: f64 = 1e-4;
const MAX_ITERS: u32 = 20;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Init(u32),
    Contrib(u32),
    PullVertex(u32),
    PullEdge { u: u32, e: u64, end: u64, total: f32 },
    EndIteration,
}

/// Accesses per vertex of the `scores[v] = 1/n` loop before the iterations.
pub(crate) const INIT_ACCESSES_PER_VERTEX: u64 = 1;

pub(crate) struct Pr {
    scores_va: VirtAddr,
    contrib_va: VirtAddr,
    scores: Vec<f32>,
    contrib: Vec<f32>,
    iteration: u32,
    error: f64,
    phase: Phase,
    /// Iterations of the last finished run (tests).
    pub(crate) last_iterations: u32,
}

impl Pr {
    pub(crate) fn new(g: &Csr, layout: &mut Layout) -> Self {
        let n = g.vertices() as u64;
        Pr {
            scores_va: layout.place("pr-scores", 4 * n),
            contrib_va: layout.place("pr-contrib", 4 * n),
            scores: vec![0.0; n as usize],
            contrib: vec![0.0; n as usize],
            iteration: 0,
            error: 0.0,
            phase: Phase::Init(0),
            last_iterations: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn scores(&self) -> &[f32] {
        &self.scores
    }

    fn advance(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        let n = g.vertices();
        self.phase = match self.phase {
            Phase::Init(v) if v == n => Phase::Contrib(0),
            Phase::Init(v) => {
                self.scores[v as usize] = 1.0 / n as f32;
                out.push(Access::store(elem4(self.scores_va, v), 4, INSTRS));
                Phase::Init(v + 1)
            }
            Phase::Contrib(v) if v == n => Phase::PullVertex(0),
            Phase::Contrib(v) => {
                out.push(Access::load(elem4(self.scores_va, v), 4, INSTRS));
                va.load_range(out, v);
                let d = g.degree(v);
                self.contrib[v as usize] = if d == 0 { 0.0 } else { self.scores[v as usize] / d as f32 };
                out.push(Access::store(elem4(self.contrib_va, v), 4, INSTRS));
                Phase::Contrib(v + 1)
            }
            Phase::PullVertex(u) if u == n => Phase::EndIteration,
            Phase::PullVertex(u) => {
                va.load_range(out, u);
                Phase::PullEdge { u, e: g.begin(u), end: g.end(u), total: 0.0 }
            }
            Phase::PullEdge { u, e, end, total } if e == end => {
                let base = (1.0 - DAMPING) / n as f32;
                out.push(Access::load(elem4(self.scores_va, u), 4, INSTRS));
                let old = self.scores[u as usize];
                let new = base + DAMPING * total;
                self.scores[u as usize] = new;
                out.push(Access::store(elem4(self.scores_va, u), 4, INSTRS));
                self.error += (new - old).abs() as f64;
                Phase::PullVertex(u + 1)
            }
            Phase::PullEdge { u, e, end, total } => {
                out.push(Access::load(va.neigh(e), 4, INSTRS).at(Site::pc(20)));
                let v = g.neighbour(e);
                out.push(Access::load(elem4(self.contrib_va, v), 4, INSTRS).at(Site::pc(21).dependent()));
                Phase::PullEdge { u, e: e + 1, end, total: total + self.contrib[v as usize] }
            }
            Phase::EndIteration => {
                self.iteration += 1;
                if self.error < EPSILON || self.iteration == MAX_ITERS {
                    self.last_iterations = self.iteration;
                    self.phase = Phase::EndIteration;
                    return false;
                }
                self.error = 0.0;
                Phase::Contrib(0)
            }
        };
        true
    }
}

impl Kernel for Pr {
    fn step(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        Pr::advance(self, g, va, out)
    }

    fn restart(&mut self) {
        self.iteration = 0;
        self.error = 0.0;
        self.phase = Phase::Init(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::*;
    use super::*;

    #[test]
    fn a_star_converges_with_the_hub_on_top() {
        // Star: 0 joined to 1..=4, plus 4-5: 10 directed edges.
        let edges = [(0, 1), (0, 2), (0, 3), (0, 4), (4, 5)];
        let (g, va, mut layout) = placed(6, &edges);
        let mut pr = Pr::new(&g, &mut layout);
        let accesses = run_once(&mut pr, &g, &va);
        let iters = pr.last_iterations as usize;
        assert!((2..=20).contains(&iters), "{iters}");
        // Init: 6 stores. Per iteration: contributions 6 x (load score, two
        // offsets, store) = 24; pull 6 x (two offsets, load and store
        // score) + 10 edges x (neighbour, contribution) = 24 + 20.
        assert_eq!(accesses.len(), 6 + iters * (24 + 44));
        let s = pr.scores();
        assert!(s[0] > s[4] && s[4] > s[1] && s[1] > 0.0, "{s:?}");
        let sum: f32 = s.iter().sum();
        assert!((sum - 1.0).abs() < 0.01, "{sum}");
    }

    #[test]
    fn pull_reads_contributions_of_neighbours_in_order() {
        let (g, va, mut layout) = placed(3, &[(0, 1), (0, 2)]);
        let mut pr = Pr::new(&g, &mut layout);
        let accesses = run_once(&mut pr, &g, &va);
        let contrib = touches(&accesses, pr.contrib_va, 3);
        // First iteration: stores 0, 1, 2; then vertex 0 pulls 1, 2;
        // vertex 1 pulls 0; vertex 2 pulls 0.
        assert_eq!(contrib[..7], [(0, true), (1, true), (2, true), (1, false), (2, false), (0, false), (0, false)]);
    }
}
