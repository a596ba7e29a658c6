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
//! Instructions per access: 2 (the load `mov rax, [rax]` and the loop
//! branch of an unrolled loop).

use super::driver::Generator;
use super::permute::Permutation;
use super::{rng_for, Access, Array, Layout, Site, WorkloadConfig};
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
}

/// The hot cycle: nodes `0..nodes` (the cold cycle then covers the rest).
struct HotSet {
    order: Permutation,
    position: u64,
    ops: f64,
    rng: Xoshiro256PlusPlus,
}

impl PointerChase {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let node_size = cfg.node_size.bytes();
        let nodes = cfg.footprint.bytes() / node_size;
        let mut layout = Layout::new();
        let base = layout.place("chase-nodes", nodes * node_size);
        let hot_nodes = cfg.hot_set.bytes() / node_size;
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
                Some(h) if to_hot => step(&h.order, &mut h.position),
                _ => hot_nodes + step(&self.order, &mut self.position),
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
}
