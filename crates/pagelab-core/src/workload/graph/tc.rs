//! GAPBS `OrderedCount` triangle counting on the symmetrized graph.
//!
//! Keeps GAPBS's loop exactly: for every u, for every neighbour v < u
//! (breaking at the first v > u, the lists being sorted), walk u's list
//! again for w < v and advance a cursor `it` over v's list while `*it < w`;
//! `w == *it` is a triangle w < v < u, counted once. The reads of v's list
//! at a random place are the accesses that matter. The count is kept
//! ([`Tc::last_count`]) and a natural run is one full count.
//!
//! Simplifies: GAPBS first relabels vertices by degree when the graph is
//! skewed (`WorthRelabelling`), which shortens the hub lists walked; that
//! preprocessing is not done, so the count walks the Kronecker ids as
//! generated.

use super::{Csr, CsrVa, Kernel, INSTRS};
use crate::workload::{Access, Site};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Next u.
    Vertex,
    /// Next v in u's list (index `ev`).
    Outer,
    /// Next w in u's list (index `ew`).
    Inner,
    /// `while (*it < w) it++; if (w == *it) total++;`
    Advance,
}

pub(crate) struct Tc {
    stage: Stage,
    u: u32,
    end_u: u64,
    ev: u64,
    v: u32,
    ew: u64,
    w: u32,
    it: u64,
    it_loaded: bool,
    total: u64,
    /// Triangles found by the last complete run.
    pub(crate) last_count: Option<u64>,
}

impl Tc {
    pub(crate) fn new() -> Self {
        Tc {
            stage: Stage::Vertex,
            u: 0,
            end_u: 0,
            ev: 0,
            v: 0,
            ew: 0,
            w: 0,
            it: 0,
            it_loaded: false,
            total: 0,
            last_count: None,
        }
    }

    fn next_vertex(&mut self) {
        self.u += 1;
        self.stage = Stage::Vertex;
    }

    fn advance(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        match self.stage {
            Stage::Vertex => {
                if self.u == g.vertices() {
                    self.last_count = Some(self.total);
                    return false;
                }
                va.load_range(out, self.u);
                self.ev = g.begin(self.u);
                self.end_u = g.end(self.u);
                self.stage = Stage::Outer;
            }
            Stage::Outer => {
                if self.ev == self.end_u {
                    self.next_vertex();
                    return true;
                }
                out.push(Access::load(va.neigh(self.ev), 4, INSTRS).at(Site::pc(40)));
                self.v = g.neighbour(self.ev);
                if self.v > self.u {
                    self.next_vertex();
                    return true;
                }
                // `auto it = g.out_neigh(v).begin();`
                out.push(Access::load(va.offset(self.v), 8, INSTRS).at(Site::pc(41).dependent()));
                self.it = g.begin(self.v);
                self.it_loaded = false;
                self.ew = g.begin(self.u);
                self.stage = Stage::Inner;
            }
            Stage::Inner => {
                if self.ew == self.end_u {
                    self.ev += 1;
                    self.stage = Stage::Outer;
                    return true;
                }
                out.push(Access::load(va.neigh(self.ew), 4, INSTRS).at(Site::pc(42)));
                self.w = g.neighbour(self.ew);
                if self.w > self.v {
                    self.ev += 1;
                    self.stage = Stage::Outer;
                } else {
                    self.stage = Stage::Advance;
                }
            }
            Stage::Advance => {
                // u is in v's list and u > v >= w, so `it` stops inside it.
                debug_assert!(self.it < g.end(self.v));
                if !self.it_loaded {
                    out.push(Access::load(va.neigh(self.it), 4, INSTRS).at(Site::pc(43).dependent()));
                    self.it_loaded = true;
                }
                let x = g.neighbour(self.it);
                if x < self.w {
                    self.it += 1;
                    self.it_loaded = false;
                } else {
                    self.total += (x == self.w) as u64;
                    self.ew += 1;
                    self.stage = Stage::Inner;
                }
            }
        }
        true
    }
}

impl Kernel for Tc {
    fn step(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool {
        Tc::advance(self, g, va, out)
    }

    fn restart(&mut self) {
        self.u = 0;
        self.total = 0;
        self.stage = Stage::Vertex;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::*;
    use super::super::{kronecker, Layout};
    use super::*;

    fn count(g: &Csr, va: &CsrVa) -> (u64, Vec<Access>) {
        let mut tc = Tc::new();
        let accesses = run_once(&mut tc, g, va);
        (tc.last_count.unwrap(), accesses)
    }

    #[test]
    fn k4_plus_a_triangle_has_five() {
        // K4 on {0,1,2,3} has 4 triangles; {3,4,5} one more; 5-6 none.
        let edges = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (3, 4), (4, 5), (3, 5), (5, 6)];
        let (g, va, _) = placed(7, &edges);
        assert_eq!(count(&g, &va).0, 5);
    }

    #[test]
    fn a_square_has_none_and_reads_by_hand() {
        // Square 0-1-2-3-0 (no triangle). neigh(0)=[1,3], neigh(1)=[0,2],
        // neigh(2)=[1,3], neigh(3)=[0,2].
        let (g, va, _) = placed(4, &[(0, 1), (1, 2), (2, 3), (3, 0)]);
        let (n, accesses) = count(&g, &va);
        assert_eq!(n, 0);
        let neigh: Vec<u64> =
            accesses.iter().filter(|a| a.size == 4).map(|a| (a.vaddr.raw() - va.neigh(0).raw()) / 4).collect();
        // u=0: v=1 > 0 stops (read e0).
        // u=1: v=0 (e2): w=0 (e2), it at neigh(0)[0]=1 (e0) >= 0, no match;
        //      w=2 (e3) > 0 stops; v=2 (e3) > 1 stops.
        // u=2: v=1 (e4): w=1 (e4), it e2=0 < 1, e3=2 >= 1, no; w=3 (e5) > 1
        //      stops; v=3 (e5) > 2 stops.
        // u=3: v=0 (e6): w=0 (e6), it e0=1 >= 0, no; w=2 (e7) > 0 stops;
        //      v=2 (e7): w=0 (e6), it e4=1 >= 0 no; w=2 (e7): it still at
        //      e4 (not re-read) 1 < 2, e5=3 >= 2, no; end of u's list.
        assert_eq!(neigh, [0, 2, 2, 0, 3, 3, 4, 4, 2, 3, 5, 5, 6, 6, 0, 7, 7, 6, 4, 7, 5]);
    }

    #[test]
    fn kronecker_count_matches_brute_force() {
        let g = kronecker(8, 8, 6);
        let mut layout = Layout::new();
        let va = CsrVa::place(&mut layout, &g);
        let mut brute = 0u64;
        for u in 0..g.vertices() {
            for &v in g.neighbours(u).iter().filter(|&&v| v > u) {
                for &w in g.neighbours(v).iter().filter(|&&w| w > v) {
                    brute += g.neighbours(u).binary_search(&w).is_ok() as u64;
                }
            }
        }
        assert!(brute > 10, "{brute}");
        assert_eq!(count(&g, &va).0, brute);
    }
}
