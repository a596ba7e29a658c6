//! GAPBS `Afforest` connected components (Sutton et al.), the CC the
//! reference's GAPBS runs use.
//!
//! Keeps: `comp[n] = n`; two neighbour-sampling rounds, each linking every
//! vertex with its r-th neighbour (`Link`: follow both labels towards their
//! roots, hook the higher root under the lower with a compare-and-swap)
//! then `Compress` (pointer jumping until `comp[n] == comp[comp[n]]`);
//! `SampleFrequentElement` (1024 random reads of `comp`, the most frequent
//! label is the largest intermediate component); the finish phase links the
//! remaining neighbours (from offset 2 on) of every vertex outside that
//! component; a final `Compress`. A natural run is one Afforest.
//!
//! Simplifies: the compare-and-swap is one store (single thread: it always
//! succeeds when the value matches); the sample counts live in registers
//! (GAPBS uses a small `unordered_map`, a few cache lines).

use super::{elem4, Csr, CsrVa, Kernel, INSTRS};
use crate::units::VirtAddr;
use crate::workload::{below, rng_for, Access, Layout, Site};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

const NEIGHBOR_ROUNDS: u32 = 2;
const SAMPLES: u32 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Init(u32),
    Round {
        r: u32,
        u: u32,
    },
    /// `Compress`; `last` is the final one.
    Compress {
        v: u32,
        after_round: u32,
        last: bool,
    },
    Sample(u32),
    Finish(u32),
    FinishEdge {
        u: u32,
        e: u64,
        end: u64,
    },
    Done,
}

/// Accesses per vertex of the `comp[v] = v` loop before the linking rounds.
pub(crate) const INIT_ACCESSES_PER_VERTEX: u64 = 1;

pub(crate) struct Cc {
    comp_va: VirtAddr,
    comp: Vec<u32>,
    samples: Vec<u32>,
    largest: u32,
    rng: Xoshiro256PlusPlus,
    phase: Phase,
}

impl Cc {
    pub(crate) fn new(g: &Csr, layout: &mut Layout, seed: u64) -> Self {
        let n = g.vertices() as u64;
        Cc {
            comp_va: layout.place("cc-comp", 4 * n),
            comp: vec![0; n as usize],
            samples: Vec::with_capacity(SAMPLES as usize),
            largest: 0,
            rng: rng_for(seed, 0x6363),
            phase: Phase::Init(0),
        }
    }

    #[cfg(test)]
    pub(crate) fn labels(&self) -> &[u32] {
        &self.comp
    }

    #[inline]
    fn load_comp(&self, v: u32, out: &mut Vec<Access>) -> u32 {
        // comp[v] of a neighbour, or comp[comp[..]]: the index is loaded data.
        out.push(Access::load(elem4(self.comp_va, v), 4, INSTRS).at(Site::pc(10).dependent()));
        self.comp[v as usize]
    }

    /// GAPBS `Link(u, v, comp)`.
    fn link(&mut self, u: u32, v: u32, out: &mut Vec<Access>) {
        let mut p1 = self.load_comp(u, out);
        let mut p2 = self.load_comp(v, out);
        while p1 != p2 {
            let (high, low) = if p1 > p2 { (p1, p2) } else { (p2, p1) };
            let p_high = self.load_comp(high, out);
            if p_high == low {
                break;
            }
            if p_high == high {
                self.comp[high as usize] = low;
                out.push(Access::store(elem4(self.comp_va, high), 4, INSTRS).at(Site::pc(11).dependent()));
                break;
            }
            let c = self.load_comp(high, out);
            p1 = self.load_comp(c, out);
            p2 = self.load_comp(low, out);
        }
    }

    /// `while (comp[n] != comp[comp[n]]) comp[n] = comp[comp[n]];`
    fn compress(&mut self, v: u32, out: &mut Vec<Access>) {
        loop {
            let a = self.load_comp(v, out);
            let b = self.load_comp(a, out);
            if a == b {
                return;
            }
            self.comp[v as usize] = b;
            out.push(Access::store(elem4(self.comp_va, v), 4, INSTRS));
        }
    }

    fn most_frequent_sample(&mut self) -> u32 {
        self.samples.sort_unstable();
        let mut best = (0, self.samples[0]);
        let mut run = 0;
        for i in 0..self.samples.len() {
            run = if i > 0 && self.samples[i] == self.samples[i - 1] { run + 1 } else { 1 };
            if run > best.0 {
                best = (run, self.samples[i]);
            }
        }
        best.1
    }

    fn advance(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        let n = g.vertices();
        self.phase = match self.phase {
            Phase::Init(v) if v == n => Phase::Round { r: 0, u: 0 },
            Phase::Init(v) => {
                self.comp[v as usize] = v;
                out.push(Access::store(elem4(self.comp_va, v), 4, INSTRS));
                Phase::Init(v + 1)
            }
            Phase::Round { r, u } if u == n => Phase::Compress { v: 0, after_round: r, last: false },
            Phase::Round { r, u } => {
                va.load_range(out, u);
                if g.degree(u) > r as u64 {
                    let e = g.begin(u) + r as u64;
                    out.push(Access::load(va.neigh(e), 4, INSTRS).at(Site::pc(12)));
                    self.link(u, g.neighbour(e), out);
                }
                Phase::Round { r, u: u + 1 }
            }
            Phase::Compress { v, last: true, .. } if v == n => Phase::Done,
            Phase::Compress { v, after_round, .. } if v == n => {
                if after_round + 1 < NEIGHBOR_ROUNDS {
                    Phase::Round { r: after_round + 1, u: 0 }
                } else {
                    self.samples.clear();
                    Phase::Sample(0)
                }
            }
            Phase::Compress { v, after_round, last } => {
                self.compress(v, out);
                Phase::Compress { v: v + 1, after_round, last }
            }
            Phase::Sample(i) if i == SAMPLES => {
                self.largest = self.most_frequent_sample();
                Phase::Finish(0)
            }
            Phase::Sample(i) => {
                let v = below(self.rng.next_u64(), n as u64) as u32;
                let label = self.load_comp(v, out);
                self.samples.push(label);
                Phase::Sample(i + 1)
            }
            Phase::Finish(u) if u == n => Phase::Compress { v: 0, after_round: NEIGHBOR_ROUNDS, last: true },
            Phase::Finish(u) => {
                if self.load_comp(u, out) == self.largest {
                    Phase::Finish(u + 1)
                } else {
                    va.load_range(out, u);
                    let skip = g.degree(u).min(NEIGHBOR_ROUNDS as u64);
                    Phase::FinishEdge { u, e: g.begin(u) + skip, end: g.end(u) }
                }
            }
            Phase::FinishEdge { u, e, end } if e == end => Phase::Finish(u + 1),
            Phase::FinishEdge { u, e, end } => {
                out.push(Access::load(va.neigh(e), 4, INSTRS).at(Site::pc(12)));
                self.link(u, g.neighbour(e), out);
                Phase::FinishEdge { u, e: e + 1, end }
            }
            Phase::Done => return false,
        };
        true
    }
}

impl Kernel for Cc {
    fn step(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        Cc::advance(self, g, va, out)
    }

    fn restart(&mut self) {
        self.phase = Phase::Init(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::*;
    use super::*;

    /// Labels agree exactly when vertices are connected (checked by a
    /// plain union-find).
    fn assert_components(g: &Csr, labels: &[u32]) {
        let n = g.vertices() as usize;
        let mut root: Vec<usize> = (0..n).collect();
        fn find(root: &mut [usize], mut x: usize) -> usize {
            while root[x] != x {
                root[x] = root[root[x]];
                x = root[x];
            }
            x
        }
        for u in 0..n {
            for &v in g.neighbours(u as u32) {
                let (a, b) = (find(&mut root, u), find(&mut root, v as usize));
                root[a] = b;
            }
        }
        for u in 0..n {
            assert_eq!(labels[labels[u] as usize], labels[u], "label of {u} is not a root");
            for v in 0..n {
                let same = find(&mut root, u) == find(&mut root, v);
                assert_eq!(labels[u] == labels[v], same, "{u} {v}");
            }
        }
    }

    #[test]
    fn small_graph_components_by_hand() {
        // {0,1,2} a path, {3,4} an edge, 5 alone.
        let (g, va, mut layout) = placed(6, &[(0, 1), (1, 2), (3, 4)]);
        let mut cc = Cc::new(&g, &mut layout, 1);
        run_once(&mut cc, &g, &va);
        assert_eq!(cc.labels(), [0, 0, 0, 3, 3, 5]);
    }

    #[test]
    fn first_round_links_by_hand() {
        // Path 0-1-2: Init stores 0,1,2. Round 0: u=0 links 0 with 1:
        // load comp[0]=0, comp[1]=1, load comp[1] (high root) then store
        // comp[1]=0. u=1 links with 0: loads comp[1]=0, comp[0]=0, equal.
        // u=2 links with 1: loads comp[2]=2, comp[1]=0, load comp[2], store 0.
        let (g, va, mut layout) = placed(3, &[(0, 1), (1, 2)]);
        let mut cc = Cc::new(&g, &mut layout, 1);
        let accesses = run_once(&mut cc, &g, &va);
        let got = touches(&accesses, cc.comp_va, 3);
        #[rustfmt::skip]
        let want = [
            (0, true), (1, true), (2, true),
            (0, false), (1, false), (1, false), (1, true),
            (1, false), (0, false),
            (2, false), (1, false), (2, false), (2, true),
        ];
        assert_eq!(got[..want.len()], want);
    }

    #[test]
    fn kronecker_components_are_right() {
        let g = super::super::kronecker(9, 4, 2);
        let mut layout = Layout::new();
        let va = CsrVa::place(&mut layout, &g);
        let mut cc = Cc::new(&g, &mut layout, 5);
        run_once(&mut cc, &g, &va);
        assert_components(&g, cc.labels());
    }
}
