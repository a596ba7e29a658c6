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
//! Instructions per access: 2 (the load `mov rax, [rax]` and the loop
//! branch of an unrolled loop).

use super::driver::Generator;
use super::permute::Permutation;
use super::{Access, Array, Layout, WorkloadConfig};
use crate::units::VirtAddr;

pub(crate) struct PointerChase {
    arrays: Vec<Array>,
    base: VirtAddr,
    node_size: u64,
    order: Permutation,
    /// Position in the cycle of the next node to load.
    position: u64,
    loads_in_run: u64,
}

impl PointerChase {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let node_size = cfg.node_size.bytes();
        let nodes = cfg.footprint.bytes() / node_size;
        let mut layout = Layout::new();
        let base = layout.place("chase-nodes", nodes * node_size);
        PointerChase {
            arrays: layout.into_arrays(),
            base,
            node_size,
            order: Permutation::new(nodes, cfg.seed),
            position: 0,
            loads_in_run: 0,
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
        let nodes = self.order.len();
        while out.len() < target {
            if self.loads_in_run == nodes {
                return false;
            }
            let node = self.order.apply(self.position);
            out.push(Access::load(self.base.add(node * self.node_size), 8, 2));
            self.position += 1;
            if self.position == nodes {
                self.position = 0;
            }
            self.loads_in_run += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.loads_in_run = 0;
    }
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
}
