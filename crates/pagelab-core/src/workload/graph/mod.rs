//! GAPBS graph kernels over a Kronecker graph in CSR.
//!
//! Keeps (reference/workloads.md, "Graph kernels"): the Kronecker (R-MAT)
//! generator with A=0.57, B=0.19, C=0.19, 2^scale vertices, 2^scale x
//! degree edges (16 by default), vertex ids randomly permuted, then
//! symmetrized with self-loops and duplicate edges removed as GAPBS's
//! builder does (`SquishGraph`). The graph is a real CSR in host memory
//! ([`Csr`]); the simulated program's virtual layout is the offsets array
//! (8-byte entries: GAPBS's index is an array of pointers), the neighbours
//! array (4-byte ids), then the kernel's per-vertex property arrays. Each
//! kernel ([`bfs`], [`pr`], [`cc`], [`tc`]) runs the real GAPBS algorithm on
//! that graph as a resumable state machine, emitting the loads and stores
//! it really makes, in its order: the random accesses to property arrays
//! indexed by neighbour ids are what the MMU feels.
//!
//! Simplifies: single-threaded (GAPBS's OpenMP loops run in order; atomic
//! updates and compare-and-swaps are one store; thread-local queue buffers
//! write straight to the shared queue); loop counters and locals live in
//! registers (no stack accesses); each access carries [`INSTRS`]
//! instructions (address arithmetic, compare, branch). The kernel's arrays
//! are allocated once, not per trial as GAPBS's benchmark harness does.
//!
//! Size: `scale` if set, else the largest scale whose estimate (offsets, the
//! symmetrized edges before deduplication, the kernel's arrays) fits the
//! footprint; the real footprint is smaller by the duplicate edges removed.

pub mod bfs;
pub mod cache;
pub mod cc;
mod kronecker;
pub mod pr;
pub mod tc;

pub use kronecker::kronecker;

use super::driver::Generator;
use super::{Access, Array, GraphKernel, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;

/// Instructions carried by each graph access.
pub(crate) const INSTRS: u32 = 2;

/// An undirected graph in compressed sparse rows: `neigh[offsets[v] ..
/// offsets[v + 1]]` are v's neighbours, sorted, without v and duplicates.
#[derive(Clone, Debug, Default)]
pub struct Csr {
    offsets: Vec<u64>,
    neigh: Vec<u32>,
}

impl Csr {
    /// Builds from a generator of edges that can be called twice with the
    /// same result (counting pass, then filling pass); every edge is stored
    /// in both directions, self-loops dropped, duplicates merged.
    pub fn from_edges(vertices: u32, edges: impl Fn(&mut dyn FnMut(u32, u32))) -> Csr {
        Csr::from_relabelled_edges(vertices, |x| x, edges)
    }

    /// As [`Csr::from_edges`], vertex `x` of the generated edges becoming
    /// `relabel(x)` (a permutation). Degrees are counted before relabelling
    /// (a permutation changes no degree), which spares the counting pass
    /// the relabelling.
    pub fn from_relabelled_edges(
        vertices: u32,
        relabel: impl Fn(u32) -> u32,
        edges: impl Fn(&mut dyn FnMut(u32, u32)),
    ) -> Csr {
        let n = vertices as usize;
        let mut offsets = vec![0u64; n + 1];
        for (x, d) in count_degrees(n, &edges).into_iter().enumerate() {
            offsets[relabel(x as u32) as usize + 1] = d;
        }
        for i in 1..=n {
            offsets[i] += offsets[i - 1];
        }
        let mut scatter = Scatter::new(&offsets, vertices);
        edges(&mut |u, v| {
            if u != v {
                scatter.push(relabel(u), relabel(v));
            }
        });
        let mut neigh = scatter.finish();
        squish(&mut offsets, &mut neigh);
        Csr { offsets, neigh }
    }

    pub fn from_edge_list(vertices: u32, edges: &[(u32, u32)]) -> Csr {
        Csr::from_edges(vertices, |emit| edges.iter().for_each(|&(u, v)| emit(u, v)))
    }

    pub fn vertices(&self) -> u32 {
        (self.offsets.len() - 1) as u32
    }

    /// Edges counted in both directions (GAPBS's `num_edges_directed`).
    pub fn directed_edges(&self) -> u64 {
        self.neigh.len() as u64
    }

    #[inline]
    pub fn begin(&self, v: u32) -> u64 {
        self.offsets[v as usize]
    }

    #[inline]
    pub fn end(&self, v: u32) -> u64 {
        self.offsets[v as usize + 1]
    }

    #[inline]
    pub fn degree(&self, v: u32) -> u64 {
        self.end(v) - self.begin(v)
    }

    #[inline]
    pub fn neighbour(&self, e: u64) -> u32 {
        self.neigh[e as usize]
    }

    pub fn neighbours(&self, v: u32) -> &[u32] {
        &self.neigh[self.begin(v) as usize..self.end(v) as usize]
    }

    pub fn max_degree(&self) -> u64 {
        (0..self.vertices()).map(|v| self.degree(v)).max().unwrap_or(0)
    }
}

/// Edge ends per vertex (self-loops excluded). Random increments over a
/// large degree array miss the host cache once per edge end; buffering the
/// ends and radix-sorting each chunk turns them into a sweep in vertex
/// order, as the filling pass does.
fn count_degrees(n: usize, edges: &impl Fn(&mut dyn FnMut(u32, u32))) -> Vec<u64> {
    let mut degree = vec![0u64; n];
    let mut chunk: Vec<u64> = Vec::with_capacity(SCATTER_CHUNK);
    let mut scratch = Vec::new();
    let bits = 32 - (n.max(2) as u32 - 1).leading_zeros();
    let mut flush = |chunk: &mut Vec<u64>, degree: &mut Vec<u64>| {
        radix_sort_by_source(chunk, &mut scratch, bits);
        for &end in chunk.iter() {
            degree[(end >> 32) as usize] += 1;
        }
        chunk.clear();
    };
    edges(&mut |u, v| {
        if u != v {
            chunk.push((u as u64) << 32);
            chunk.push((v as u64) << 32);
            if chunk.len() >= SCATTER_CHUNK {
                flush(&mut chunk, &mut degree);
            }
        }
    });
    flush(&mut chunk, &mut degree);
    degree
}

/// The filling pass of the CSR build. Edges come in random order, so
/// writing each straight to its source's list would be one host cache miss
/// per edge end; instead they are buffered in chunks, radix-sorted by
/// source, and written in source order (a near-sequential sweep).
struct Scatter {
    chunk: Vec<u64>,
    scratch: Vec<u64>,
    cursor: Vec<u64>,
    neigh: Vec<u32>,
    source_bits: u32,
}

/// Edge ends buffered per chunk (32 MiB of host memory, twice).
const SCATTER_CHUNK: usize = 1 << 22;

impl Scatter {
    fn new(offsets: &[u64], vertices: u32) -> Self {
        let n = offsets.len() - 1;
        let ends = offsets[n] as usize;
        Scatter {
            chunk: Vec::with_capacity(SCATTER_CHUNK.min(ends)),
            scratch: Vec::new(),
            cursor: offsets[..n].to_vec(),
            neigh: vec![0u32; ends],
            source_bits: 32 - vertices.max(2).saturating_sub(1).leading_zeros(),
        }
    }

    /// Both ends of edge (u, v): `v` joins u's list, `u` joins v's.
    #[inline]
    fn push(&mut self, u: u32, v: u32) {
        self.chunk.push((u as u64) << 32 | v as u64);
        self.chunk.push((v as u64) << 32 | u as u64);
        if self.chunk.len() >= SCATTER_CHUNK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        radix_sort_by_source(&mut self.chunk, &mut self.scratch, self.source_bits);
        for &end in &self.chunk {
            let u = (end >> 32) as usize;
            self.neigh[self.cursor[u] as usize] = end as u32;
            self.cursor[u] += 1;
        }
        self.chunk.clear();
    }

    fn finish(mut self) -> Vec<u32> {
        self.flush();
        self.neigh
    }
}

/// Stable LSD radix sort of packed `(source << 32 | dest)` by source, 11
/// bits per pass.
fn radix_sort_by_source(data: &mut Vec<u64>, scratch: &mut Vec<u64>, source_bits: u32) {
    const DIGIT: u32 = 11;
    let mut shift = 32;
    while shift < 32 + source_bits {
        let mut counts = [0usize; 1 << DIGIT];
        for &x in data.iter() {
            counts[((x >> shift) & ((1 << DIGIT) - 1)) as usize] += 1;
        }
        let mut sum = 0;
        for c in counts.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        scratch.clear();
        scratch.resize(data.len(), 0);
        for &x in data.iter() {
            let d = ((x >> shift) & ((1 << DIGIT) - 1)) as usize;
            scratch[counts[d]] = x;
            counts[d] += 1;
        }
        std::mem::swap(data, scratch);
        shift += DIGIT;
    }
}

/// Sorts each neighbour list and drops duplicates, compacting in place.
fn squish(offsets: &mut [u64], neigh: &mut Vec<u32>) {
    let n = offsets.len() - 1;
    let mut write = 0usize;
    let mut start = 0usize;
    for u in 0..n {
        let end = offsets[u + 1] as usize;
        neigh[start..end].sort_unstable();
        offsets[u] = write as u64;
        for i in start..end {
            if i == start || neigh[i] != neigh[i - 1] {
                neigh[write] = neigh[i];
                write += 1;
            }
        }
        start = end;
    }
    offsets[n] = write as u64;
    neigh.truncate(write);
    neigh.shrink_to_fit();
}

/// Virtual addresses of the CSR arrays.
#[derive(Clone, Copy, Debug)]
pub struct CsrVa {
    offsets: VirtAddr,
    neigh: VirtAddr,
}

impl CsrVa {
    pub(crate) fn place(layout: &mut Layout, g: &Csr) -> Self {
        let offsets = layout.place("graph-offsets", 8 * (g.vertices() as u64 + 1));
        let neigh = layout.place("graph-neighbours", 4 * g.directed_edges());
        CsrVa { offsets, neigh }
    }

    /// `&index[v]`.
    #[inline]
    pub fn offset(&self, v: u32) -> VirtAddr {
        self.offsets.add(8 * v as u64)
    }

    /// `&neighbours[e]`.
    #[inline]
    pub fn neigh(&self, e: u64) -> VirtAddr {
        self.neigh.add(4 * e)
    }

    /// The loads of `g.out_neigh(v)`: `index[v]` and `index[v + 1]`.
    #[inline]
    pub(crate) fn load_range(&self, out: &mut Vec<Access>, v: u32) {
        // Mostly a vertex loop's own counter (independent).
        out.push(Access::load(self.offset(v), 8, INSTRS).at(Site::pc(1)));
        out.push(Access::load(self.offset(v + 1), 8, INSTRS).at(Site::pc(2)));
    }
}

/// `&array[i]` of a 4-byte property array.
#[inline]
pub(crate) fn elem4(base: VirtAddr, i: u32) -> VirtAddr {
    base.add(4 * i as u64)
}

/// `&bitmap.words[v / 64]`.
#[inline]
pub(crate) fn bit_word(base: VirtAddr, v: u32) -> VirtAddr {
    base.add(8 * (v as u64 / 64))
}

/// A GAPBS kernel as a resumable state machine.
pub(crate) trait Kernel {
    /// One step of the kernel's loop nest: appends the accesses it makes;
    /// false at the end of a natural run (bfs: all sources; pr: converged;
    /// cc, tc: done).
    fn step(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>) -> bool;

    /// Appends accesses until `out.len() >= target`; false at the end of a
    /// natural run.
    fn fill(&mut self, g: &Csr, va: &CsrVa, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if !self.step(g, va, out) {
                return false;
            }
        }
        true
    }

    fn restart(&mut self);
}

enum AnyKernel {
    Bfs(bfs::Bfs),
    Pr(pr::Pr),
    Cc(cc::Cc),
    Tc(tc::Tc),
}

pub(crate) struct GraphWorkload {
    arrays: Vec<Array>,
    graph: Csr,
    va: CsrVa,
    kernel: AnyKernel,
}

/// Property bytes per vertex of each kernel, for deriving the scale.
fn kernel_bytes_per_vertex(kernel: GraphKernel) -> u64 {
    match kernel {
        GraphKernel::Bfs => 9, // parent, queue, two bitmaps
        GraphKernel::Pr => 8,  // scores, contributions
        GraphKernel::Cc => 4,  // comp
        GraphKernel::Tc => 0,
    }
}

/// The largest scale whose estimated footprint fits (at least 1).
pub(crate) fn derive_scale(footprint: u64, degree: u32, kernel: GraphKernel) -> u32 {
    let per_vertex = 8 + 8 * degree as u64 + kernel_bytes_per_vertex(kernel);
    let mut scale = 1;
    while scale < 30 && (1u64 << (scale + 1)) * per_vertex <= footprint {
        scale += 1;
    }
    scale
}

/// The scale `cfg` builds and the host bytes it takes: the CSR (8 B of
/// offsets a vertex, 4 B for each direction of each edge), the builder's
/// degree counts (8 B a vertex) and the kernel's per-vertex state.
pub(crate) fn host_bytes(cfg: &WorkloadConfig) -> (u32, u64) {
    let scale = cfg.scale.unwrap_or_else(|| derive_scale(cfg.footprint.bytes(), cfg.degree, cfg.kernel));
    let per_vertex = 8 * cfg.degree as u64 + 16 + kernel_bytes_per_vertex(cfg.kernel);
    (scale, (1u64 << scale).saturating_mul(per_vertex))
}

/// What the graph of `cfg` is built from (and cached by): its scale, degree
/// and `graph_seed` (or `seed`); never the kernel's own seed.
pub(crate) fn graph_key(cfg: &WorkloadConfig) -> cache::GraphKey {
    let scale = cfg.scale.unwrap_or_else(|| derive_scale(cfg.footprint.bytes(), cfg.degree, cfg.kernel));
    cache::GraphKey { scale, degree: cfg.degree, seed: cfg.graph_generator_seed() }
}

impl GraphWorkload {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let key = graph_key(cfg);
        let graph = cache::kronecker_cached(key, cache::cache_dir().as_deref());
        let mut layout = Layout::of(cfg);
        let va = CsrVa::place(&mut layout, &graph);
        let kernel = match cfg.kernel {
            GraphKernel::Bfs => AnyKernel::Bfs(bfs::Bfs::new(&graph, &mut layout, cfg.seed, cfg.sources)),
            GraphKernel::Pr => AnyKernel::Pr(pr::Pr::new(&graph, &mut layout)),
            GraphKernel::Cc => AnyKernel::Cc(cc::Cc::new(&graph, &mut layout, cfg.seed)),
            GraphKernel::Tc => AnyKernel::Tc(tc::Tc::new()),
        };
        GraphWorkload { arrays: layout.into_arrays(), graph, va, kernel }
    }
}

impl Generator for GraphWorkload {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        let (g, va) = (&self.graph, &self.va);
        match &mut self.kernel {
            AnyKernel::Bfs(k) => k.fill(g, va, out, target),
            AnyKernel::Pr(k) => k.fill(g, va, out, target),
            AnyKernel::Cc(k) => k.fill(g, va, out, target),
            AnyKernel::Tc(k) => k.fill(g, va, out, target),
        }
    }

    fn init_loop_accesses(&self) -> u64 {
        let per_vertex = match &self.kernel {
            AnyKernel::Bfs(_) => bfs::INIT_ACCESSES_PER_VERTEX,
            AnyKernel::Pr(_) => pr::INIT_ACCESSES_PER_VERTEX,
            AnyKernel::Cc(_) => cc::INIT_ACCESSES_PER_VERTEX,
            AnyKernel::Tc(_) => 0, // counting starts at once
        };
        per_vertex * self.graph.vertices() as u64
    }

    fn restart(&mut self) {
        match &mut self.kernel {
            AnyKernel::Bfs(k) => k.restart(),
            AnyKernel::Pr(k) => k.restart(),
            AnyKernel::Cc(k) => k.restart(),
            AnyKernel::Tc(k) => k.restart(),
        }
    }
}

#[cfg(test)]
pub(crate) mod testgraph {
    use super::*;

    /// The CSR of `edges` with its arrays placed as the workload does.
    pub fn placed(vertices: u32, edges: &[(u32, u32)]) -> (Csr, CsrVa, Layout) {
        let g = Csr::from_edge_list(vertices, edges);
        let mut layout = Layout::new();
        let va = CsrVa::place(&mut layout, &g);
        (g, va, layout)
    }

    /// Runs one natural run of `k` to its end.
    pub fn run_once(k: &mut impl Kernel, g: &Csr, va: &CsrVa) -> Vec<Access> {
        let mut out = Vec::new();
        loop {
            let target = out.len() + 1000;
            if !k.fill(g, va, &mut out, target) {
                return out;
            }
        }
    }

    /// `(index, is_store)` of the accesses to the 4-byte array at `base`.
    pub fn touches(accesses: &[Access], base: VirtAddr, len: u32) -> Vec<(u32, bool)> {
        accesses
            .iter()
            .filter(|a| a.vaddr >= base && a.vaddr.raw() < base.raw() + 4 * len as u64)
            .map(|a| (((a.vaddr.raw() - base.raw()) / 4) as u32, a.kind == super::super::AccessKind::Store))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_symmetrizes_and_squishes() {
        // Duplicates (0,1)/(1,0), a self loop (2,2).
        let g = Csr::from_edge_list(4, &[(0, 1), (1, 0), (2, 2), (3, 1), (0, 3), (0, 1)]);
        assert_eq!(g.neighbours(0), [1, 3]);
        assert_eq!(g.neighbours(1), [0, 3]);
        assert_eq!(g.neighbours(2), [] as [u32; 0]);
        assert_eq!(g.neighbours(3), [0, 1]);
        assert_eq!(g.directed_edges(), 6);
    }

    #[test]
    fn radix_sort_orders_by_source_stably() {
        let mut data: Vec<u64> =
            [(5u64, 1u64), (3, 9), (5000, 2), (3, 4), (0, 7), (5, 0)].iter().map(|&(s, d)| s << 32 | d).collect();
        radix_sort_by_source(&mut data, &mut Vec::new(), 13);
        let pairs: Vec<(u64, u64)> = data.iter().map(|&x| (x >> 32, x & 0xffff_ffff)).collect();
        assert_eq!(pairs, [(0, 7), (3, 9), (3, 4), (5, 1), (5, 0), (5000, 2)]);
    }

    /// What `workload.skip_kernel_init` skips of cc and pr is their
    /// per-vertex init loop exactly: n stores in order, then the kernel.
    /// (bfs's `InitParent`: `bfs::tests::init_parent_is_three_accesses_per_vertex`.)
    #[test]
    fn init_loop_accesses_are_the_init_sweep() {
        for (kernel, next_is_store) in [(GraphKernel::Cc, false), (GraphKernel::Pr, false)] {
            let cfg = WorkloadConfig {
                kind: super::super::WorkloadKind::Graph,
                kernel,
                scale: Some(8),
                ..WorkloadConfig::default()
            };
            let mut w = GraphWorkload::new(&cfg);
            let n = w.init_loop_accesses() as usize;
            assert_eq!(n, 256, "{kernel:?}");
            let mut out = Vec::new();
            w.fill(&mut out, n + 1);
            let base = out[0].vaddr;
            for (v, a) in out[..n].iter().enumerate() {
                assert_eq!(
                    (a.vaddr, a.kind),
                    (base.add(4 * v as u64), super::super::AccessKind::Store),
                    "{kernel:?} {v}"
                );
            }
            assert_eq!(out[n].kind == super::super::AccessKind::Store, next_is_store, "{kernel:?}");
        }
        let cfg = WorkloadConfig {
            kind: super::super::WorkloadKind::Graph,
            kernel: GraphKernel::Tc,
            scale: Some(8),
            ..WorkloadConfig::default()
        };
        assert_eq!(GraphWorkload::new(&cfg).init_loop_accesses(), 0);
    }

    #[test]
    fn derived_scale_fits_the_footprint() {
        // bfs, degree 16: 8 + 128 + 9 = 145 B per vertex; 1 GiB / 145 =
        // 7.4M vertices, so scale 22 (4M).
        assert_eq!(derive_scale(1 << 30, 16, GraphKernel::Bfs), 22);
        assert_eq!(derive_scale(4096, 16, GraphKernel::Bfs), 4);
        assert_eq!(derive_scale(100, 16, GraphKernel::Tc), 1);
    }

    #[test]
    fn footprint_derives_scale_and_stays_below_it() {
        let cfg = WorkloadConfig {
            kind: super::super::WorkloadKind::Graph,
            footprint: crate::units::ByteSize(64 << 20),
            ..WorkloadConfig::default()
        };
        let w = GraphWorkload::new(&cfg);
        assert_eq!(w.graph.vertices(), 1 << derive_scale(64 << 20, 16, GraphKernel::Bfs));
        let mapped: u64 = w.arrays.iter().map(|a| a.len).sum();
        assert!(mapped <= 64 << 20, "{mapped}");
    }

    /// `workload.graph_seed` keeps the graph apart from the access stream:
    /// two configurations differing only in `seed` build one graph (one
    /// cache key) and run different bfs sources; unset, the graph follows
    /// `seed` as it did before the key existed.
    #[test]
    fn graph_seed_fixes_the_graph_while_seed_varies_the_stream() {
        let cfg = |seed, graph_seed| WorkloadConfig {
            kind: super::super::WorkloadKind::Graph,
            scale: Some(10),
            seed,
            graph_seed,
            accesses: 20_000,
            ..WorkloadConfig::default()
        };
        let (a, b) = (cfg(1, Some(7)), cfg(2, Some(7)));
        assert_eq!(graph_key(&a), graph_key(&b));
        assert_eq!(graph_key(&a).seed, 7);
        let (wa, wb) = (GraphWorkload::new(&a), GraphWorkload::new(&b));
        assert_eq!((&wa.graph.offsets, &wa.graph.neigh), (&wb.graph.offsets, &wb.graph.neigh));
        let stream = |w: GraphWorkload| {
            let mut w = w;
            let mut out = Vec::new();
            // Past bfs's InitParent (the same for any source) into the search.
            let n = w.init_loop_accesses() as usize + 5_000;
            while out.len() < n && w.fill(&mut out, n) {}
            out.into_iter().skip(n - 5_000).map(|x| x.vaddr).collect::<Vec<_>>()
        };
        assert_ne!(stream(wa), stream(wb), "the seed must still choose bfs's sources");

        // Unset: the graph's seed is `seed`, so different seeds, different graphs.
        assert_eq!(graph_key(&cfg(2, None)), graph_key(&cfg(7, Some(2))));
        let (g1, g2) = (GraphWorkload::new(&cfg(1, None)).graph, GraphWorkload::new(&cfg(2, None)).graph);
        assert_ne!(g1.neigh, g2.neigh);
    }
}
