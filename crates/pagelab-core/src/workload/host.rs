//! What a workload builds in the host's memory before it runs, estimated
//! from its configuration alone, so that a run too large for the host is
//! refused with a message naming the key instead of being killed by the
//! host's out-of-memory killer halfway through building it.
//!
//! Only structures that grow with the configuration count: a graph's CSR
//! and its kernel's per-vertex state, a kv store's hash chains. Generators
//! that compute their accesses (gups, stream, stride, sparse, the pointer
//! chase's permutation) and traces (read in blocks) hold a few MiB at most.

use super::config::{WorkloadConfig, WorkloadKind};
use super::{graph, kv};

/// One structure a workload will build on the host.
#[derive(Debug, Clone, PartialEq)]
pub struct HostNeed {
    /// The key (below the workload's table) that sets its size.
    pub key: &'static str,
    pub bytes: u64,
    /// What it is, for the message.
    pub what: String,
}

/// The host memory `cfg`'s workload builds before it runs, if it builds
/// anything that grows with its configuration.
pub fn host_need(cfg: &WorkloadConfig) -> Option<HostNeed> {
    match cfg.kind {
        WorkloadKind::Graph => {
            let (scale, bytes) = graph::host_bytes(cfg);
            let key = if cfg.scale.is_some() { "scale" } else { "footprint" };
            Some(HostNeed { key, bytes, what: format!("a graph of scale {scale} (2^{scale} vertices)") })
        }
        WorkloadKind::Kv => {
            let (objects, bytes) = kv::host_bytes(cfg);
            let key = if cfg.objects.is_some() { "objects" } else { "footprint" };
            Some(HostNeed { key, bytes, what: format!("the hash chains of {objects} objects") })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(scale: u32, degree: u32) -> WorkloadConfig {
        let mut c = WorkloadConfig { kind: WorkloadKind::Graph, ..WorkloadConfig::default() };
        c.scale = Some(scale);
        c.degree = degree;
        c
    }

    #[test]
    fn a_graph_needs_its_csr_and_state_per_vertex() {
        // bfs: 8 x degree (both directions of each edge, 4 B a neighbour),
        // 8 (offsets) + 8 (the builder's degree counts) + 9 (bfs's state).
        let need = host_need(&graph(20, 16)).unwrap();
        assert_eq!(need.bytes, (1 << 20) * (8 * 16 + 25));
        assert_eq!(need.key, "scale");
        // The case: scale 30 is about 150 GiB.
        let big = host_need(&graph(30, 16)).unwrap().bytes;
        assert!(big > 140 << 30 && big < 160 << 30, "{big}");
    }

    #[test]
    fn generators_that_compute_their_accesses_need_nothing() {
        let c = WorkloadConfig { kind: WorkloadKind::Gups, ..WorkloadConfig::default() };
        assert_eq!(host_need(&c), None);
    }
}
