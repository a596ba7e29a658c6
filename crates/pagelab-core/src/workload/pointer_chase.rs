//! Pointer chasing: `p = p->next` around a random cyclic list.
//!
//! Keeps: every load's address depends on the previous load (mcf's tree
//! links and canneal's netlist pointers in reference/workloads.md, reduced
//! to their essence), the list visits every node exactly once per cycle, in
//! an order with no spatial locality, so each load is a likely TLB and
//! cache miss. Reads only.
//!
//! Simplifies: the order is not a stored permutation (that would be as
//! large as the footprint) but a computed bijection of node indices
//! ([`Permutation`]): position i of the cycle is node `perm(i)`, so node k's
//! successor is `perm(rank(k) + 1)`. The dependence is implied, not
//! marked: the timing model sees one load after the other. Nodes are
//! `node_size` bytes, the next pointer in their first 8. A natural run is one
//! full cycle.
//!
//! With `hot_set` > 0, the first `hot_set` bytes of nodes form a second,
//! separate cycle, and each load continues the hot cycle with probability
//! `hot_ops` (else the cold one): a working set a cache can hold beside a
//! large cold one, as mcf's node array beside its arcs. The run is still
//! `nodes` loads.
//!
//! Where the hot nodes lie is `hot_layout`. `front` (the default): the
//! first `hot_set` bytes, so a hot set of 8 MiB is four aligned 2 MiB pages.
//! `scattered`: the nodes are cut into chunks of `hot_chunk` bytes, and a
//! seeded bijection of the whole chunks picks `hot_set / hot_chunk` of them
//! uniformly; the hot cycle runs over those chunks, the cold one over the
//! rest (and the partial chunk at the end, always cold). A chunk stands for
//! the objects a program allocates together (a run of same-sized heap
//! objects carved one after the other), so a hot chunk of 4 KiB keeps as
//! many hot 4 KiB pages as `front` while spreading them over every huge
//! page of the footprint, as a real heap's hot objects are.
//!
//! Instructions per access: 2 (the load `mov rax, [rax]` and the loop
//! branch of an unrolled loop).

use super::driver::Generator;
use super::permute::Permutation;
use super::{rng_for, Access, Array, HotLayout, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

pub(crate) struct PointerChase {
    arrays: Vec<Array>,
    base: VirtAddr,
    node_size: u64,
    order: Permutation,
    /// Position in the cycle of the next node to load.
    position: u64,
    loads_in_run: u64,
    hot: Option<HotSet>,
    placement: Placement,
}

/// The hot cycle over its own `order.len()` nodes (which ones: `Placement`);
/// the cold cycle covers the rest.
struct HotSet {
    order: Permutation,
    position: u64,
    ops: f64,
    rng: Xoshiro256PlusPlus,
}

/// Which node the i-th node of the hot or of the cold cycle is.
enum Placement {
    /// Hot nodes first: hot i is node i, cold i is node `hot_nodes + i`.
    Front {
        hot_nodes: u64,
    },
    Scattered(Scatter),
}

/// Hot and cold nodes by whole chunks: the chunks at positions
/// `0..hot_chunks` of `chunks` are hot, the others cold; the nodes past the
/// last whole chunk are cold and come last in the cold cycle.
struct Scatter {
    chunks: Permutation,
    chunk_nodes: u64,
    hot_chunks: u64,
}

impl Placement {
    fn new(cfg: &WorkloadConfig, nodes: u64) -> Self {
        let node_size = cfg.node_size.bytes();
        let hot_nodes = cfg.hot_set.bytes() / node_size;
        match cfg.hot_layout {
            HotLayout::Scattered if hot_nodes > 0 => {
                let chunk_nodes = cfg.hot_chunk.bytes() / node_size;
                Placement::Scattered(Scatter {
                    chunks: Permutation::new(nodes / chunk_nodes, cfg.seed ^ 0x6368_756e_6b73),
                    chunk_nodes,
                    hot_chunks: hot_nodes / chunk_nodes,
                })
            }
            _ => Placement::Front { hot_nodes },
        }
    }

    /// Nodes on the hot cycle.
    fn hot_nodes(&self) -> u64 {
        match self {
            Placement::Front { hot_nodes } => *hot_nodes,
            Placement::Scattered(s) => s.hot_chunks * s.chunk_nodes,
        }
    }

    #[inline]
    fn hot_node(&self, i: u64) -> u64 {
        match self {
            Placement::Front { .. } => i,
            Placement::Scattered(s) => s.node_of_chunk_position(i),
        }
    }

    #[inline]
    fn cold_node(&self, i: u64) -> u64 {
        match self {
            Placement::Front { hot_nodes } => hot_nodes + i,
            Placement::Scattered(s) => {
                let i = i + s.hot_chunks * s.chunk_nodes;
                let whole = s.chunks.len() * s.chunk_nodes;
                // The partial chunk at the end is never hot: its nodes are themselves.
                if i < whole {
                    s.node_of_chunk_position(i)
                } else {
                    i
                }
            }
        }
    }
}

impl Scatter {
    /// Node `i` of the chunks taken in the bijection's order: the
    /// `i % chunk_nodes`-th node of the chunk at position `i / chunk_nodes`.
    #[inline]
    fn node_of_chunk_position(&self, i: u64) -> u64 {
        self.chunks.apply(i / self.chunk_nodes) * self.chunk_nodes + i % self.chunk_nodes
    }
}

impl PointerChase {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let node_size = cfg.node_size.bytes();
        let nodes = cfg.footprint.bytes() / node_size;
        let mut layout = Layout::of(cfg);
        let base = layout.place("chase-nodes", nodes * node_size);
        let placement = Placement::new(cfg, nodes);
        let hot_nodes = placement.hot_nodes();
        let hot = (hot_nodes > 0).then(|| HotSet {
            order: Permutation::new(hot_nodes, cfg.seed ^ 0x0068_6f74),
            position: 0,
            ops: cfg.hot_ops,
            rng: rng_for(cfg.seed, 0x6368_6173),
        });
        PointerChase {
            arrays: layout.into_arrays(),
            base,
            node_size,
            order: Permutation::new(nodes - hot_nodes, cfg.seed),
            position: 0,
            loads_in_run: 0,
            hot,
            placement,
        }
    }

    /// Node visited at cycle position `i`.
    #[cfg(test)]
    pub(crate) fn node_at(&self, i: u64) -> u64 {
        self.order.apply(i)
    }
}

impl Generator for PointerChase {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        let hot_nodes = self.hot.as_ref().map_or(0, |h| h.order.len());
        let nodes = self.order.len() + hot_nodes;
        while out.len() < target {
            if self.loads_in_run == nodes {
                return false;
            }
            let to_hot = self.hot.as_mut().is_some_and(|h| h.rng.random::<f64>() < h.ops);
            let node = match &mut self.hot {
                Some(h) if to_hot => self.placement.hot_node(step(&h.order, &mut h.position)),
                _ => self.placement.cold_node(step(&self.order, &mut self.position)),
            };
            // Each node's address is the previous node's data.
            out.push(Access::load(self.base.add(node * self.node_size), 8, 2).at(Site::pc(1).dependent()));
            self.loads_in_run += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.loads_in_run = 0;
    }
}

/// The node at `position` of a cycle, then advances around it.
#[inline]
fn step(order: &Permutation, position: &mut u64) -> u64 {
    let node = order.apply(*position);
    *position += 1;
    if *position == order.len() {
        *position = 0;
    }
    node
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{InitMode, MapEvent, WorkloadKind};
    use super::*;
    use crate::units::ByteSize;

    #[test]
    fn one_cycle_visits_every_node_once() {
        for nodes in 1..=1000u64 {
            let mut cfg = small_config(WorkloadKind::PointerChase, nodes);
            cfg.init = InitMode::None;
            // Footprints are at least a page: small lists get bigger nodes.
            let node_size = 8 * (4096u64.div_ceil(8 * nodes)).max(8);
            cfg.node_size = ByteSize(node_size);
            cfg.footprint = ByteSize(nodes * node_size);
            cfg.accesses = 2 * nodes;
            let all = collect(&cfg, usize::MAX);
            let base = all.events.iter().find_map(|(_, e)| match e {
                MapEvent::Mmap { start, .. } => Some(start.raw()),
                _ => None,
            });
            let base = base.unwrap();
            let mut seen = vec![0u32; nodes as usize];
            for a in &all.accesses[..nodes as usize] {
                assert_eq!((a.vaddr.raw() - base) % node_size, 0);
                seen[((a.vaddr.raw() - base) / node_size) as usize] += 1;
            }
            assert!(seen.iter().all(|&s| s == 1), "n={nodes}: {seen:?}");
            // The second cycle repeats the first.
            let (first, second) = all.accesses.split_at(nodes as usize);
            assert_eq!(first, second, "n={nodes}");
        }
    }

    #[test]
    fn successor_follows_the_permutation() {
        let cfg = WorkloadConfig {
            footprint: ByteSize(37 * 128),
            node_size: ByteSize(128),
            seed: 5,
            ..WorkloadConfig::default()
        };
        let chase = PointerChase::new(&cfg);
        let mut out = Vec::new();
        let mut chase2 = PointerChase::new(&cfg);
        chase2.fill(&mut out, 37);
        for (i, a) in out.iter().enumerate() {
            let node = chase.node_at(i as u64);
            assert_eq!(a.vaddr.raw(), chase.base.raw() + node * 128);
        }
    }

    #[test]
    fn a_hot_set_takes_hot_ops_of_the_loads_on_its_own_cycle() {
        let cfg = WorkloadConfig {
            footprint: ByteSize(1000 * 64),
            node_size: ByteSize(64),
            hot_set: ByteSize(100 * 64),
            hot_ops: 0.75,
            seed: 3,
            ..WorkloadConfig::default()
        };
        let mut chase = PointerChase::new(&cfg);
        let mut out = Vec::new();
        assert!(!chase.fill(&mut out, usize::MAX), "a run is one load per node");
        assert_eq!(out.len(), 1000);
        let nodes: Vec<u64> = out.iter().map(|a| (a.vaddr.raw() - chase.base.raw()) / 64).collect();
        let hot: Vec<u64> = nodes.iter().copied().filter(|&n| n < 100).collect();
        // 750 expected; a binomial(1000, 0.75) is within 60 of it.
        assert!((690..=810).contains(&hot.len()), "{} hot loads", hot.len());
        // The hot cycle visits each hot node once per lap.
        let mut seen = [0u32; 100];
        for &n in &hot[..100] {
            seen[n as usize] += 1;
        }
        assert!(seen.iter().all(|&s| s == 1));
        // Cold loads never touch the hot set and never repeat within a lap.
        let cold: Vec<u64> = nodes.iter().copied().filter(|&n| n >= 100).collect();
        let mut unique = cold.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), cold.len());
    }

    fn scattered(footprint: u64, node: u64, hot: u64, chunk: u64, seed: u64) -> WorkloadConfig {
        WorkloadConfig {
            footprint: ByteSize(footprint),
            node_size: ByteSize(node),
            hot_set: ByteSize(hot),
            hot_layout: HotLayout::Scattered,
            hot_chunk: ByteSize(chunk),
            hot_ops: 0.9,
            seed,
            ..WorkloadConfig::default()
        }
    }

    /// The nodes of the hot cycle, sorted.
    fn hot_nodes(chase: &PointerChase) -> Vec<u64> {
        let n = chase.placement.hot_nodes();
        let mut hot: Vec<u64> = (0..n).map(|i| chase.placement.hot_node(i)).collect();
        hot.sort_unstable();
        hot
    }

    /// Distinct 2 MiB regions (the node array starts on a 2 MiB boundary).
    fn regions(nodes: &[u64], node_size: u64) -> usize {
        let mut r: Vec<u64> = nodes.iter().map(|n| (n * node_size) >> 21).collect();
        r.dedup();
        r.len()
    }

    #[test]
    fn scattered_hot_and_cold_cycles_split_the_nodes_by_whole_chunks() {
        // 9 nodes of 8 B in chunks of 2: chunks {0,1} {2,3} {4,5} {6,7}, node 8
        // is a partial chunk and stays cold; a hot set of 4 nodes is 2 chunks.
        let cfg = scattered(9 * 8, 8, 4 * 8, 2 * 8, 7);
        let chase = PointerChase::new(&cfg);
        let hot = hot_nodes(&chase);
        assert_eq!(hot.len(), 4);
        for &n in &hot {
            assert!(n < 8 && hot.contains(&(n ^ 1)), "{hot:?}: a chunk is hot whole");
        }
        let mut all: Vec<u64> = hot.clone();
        all.extend((0..5).map(|i| chase.placement.cold_node(i)));
        all.sort_unstable();
        assert_eq!(all, (0..9).collect::<Vec<_>>(), "hot and cold cover every node once");
        assert_eq!(chase.placement.cold_node(4), 8, "the partial chunk comes last in the cold cycle");
    }

    #[test]
    fn a_scattered_hot_set_spreads_over_the_footprints_huge_pages() {
        // 16 regions of 2 MiB; a hot set of 4 chunks of 2 MiB each is exactly
        // 4 regions, chosen by the seed; `front` would be regions 0-3.
        let cfg = scattered(32 << 20, 4096, 8 << 20, 2 << 20, 11);
        let hot = hot_nodes(&PointerChase::new(&cfg));
        assert_eq!(regions(&hot, 4096), 4);
        let front = PointerChase::new(&WorkloadConfig { hot_layout: HotLayout::Front, ..cfg.clone() });
        assert_eq!(hot_nodes(&front), (0..2048).collect::<Vec<_>>());
        assert_ne!(hot, hot_nodes(&front));
        // 8 regions of 512 chunks of 4 KiB; 64 hot chunks drawn uniformly
        // miss a given region with probability C(3584, 64) / C(4096, 64) <
        // (7/8)^64 = 2e-4, so all 8 are expected (`front`: 1 region).
        let cfg = scattered(16 << 20, 128, 256 << 10, 4096, 3);
        let hot = hot_nodes(&PointerChase::new(&cfg));
        assert_eq!(hot.len(), 64 * 32);
        assert_eq!(regions(&hot, 128), 8);
        let front = PointerChase::new(&WorkloadConfig { hot_layout: HotLayout::Front, ..cfg });
        assert_eq!(regions(&hot_nodes(&front), 128), 1);
    }

    #[test]
    fn scattered_runs_repeat_per_seed_and_differ_between_seeds() {
        let run = |seed| {
            let mut chase = PointerChase::new(&scattered(8 << 20, 128, 1 << 20, 4096, seed));
            let mut out = Vec::new();
            chase.fill(&mut out, 20_000);
            out
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        let hot = |seed| hot_nodes(&PointerChase::new(&scattered(8 << 20, 128, 1 << 20, 4096, seed)));
        assert_ne!(hot(5), hot(6), "the seed picks which chunks are hot");
    }

    #[test]
    fn a_scattered_hot_set_takes_hot_ops_of_the_loads() {
        let cfg = scattered(8 << 20, 128, 1 << 20, 4096, 9);
        let mut chase = PointerChase::new(&cfg);
        let hot = hot_nodes(&chase);
        let mut out = Vec::new();
        assert!(!chase.fill(&mut out, usize::MAX));
        assert_eq!(out.len(), 65_536, "a run is still one load per node");
        let on_hot =
            out.iter().filter(|a| hot.binary_search(&((a.vaddr.raw() - chase.base.raw()) / 128)).is_ok()).count();
        // hot_ops 0.9 of 65,536: 58,982 expected, binomial sd 77.
        assert!((58_600..=59_400).contains(&on_hot), "{on_hot} hot loads");
    }
}
