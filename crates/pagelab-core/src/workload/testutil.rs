//! Helpers shared by the workload tests: small configurations of every kind,
//! running a workload to completion, checking its accesses against its maps.

use super::*;
use crate::units::ByteSize;

pub const ALL_KINDS: [WorkloadKind; 16] = [
    WorkloadKind::Gups,
    WorkloadKind::Stream,
    WorkloadKind::Stride,
    WorkloadKind::PointerChase,
    WorkloadKind::Kv,
    WorkloadKind::Graph,
    WorkloadKind::Sparse,
    WorkloadKind::HashJoin,
    WorkloadKind::Svm,
    WorkloadKind::XsBench,
    WorkloadKind::Xapian,
    WorkloadKind::Blackscholes,
    WorkloadKind::PgsqlJoin,
    WorkloadKind::ImgDnn,
    WorkloadKind::WaterSpatial,
    WorkloadKind::Raytrace,
];

/// A generator's configuration with its sizes and no init pass: the
/// generators' own tests read their accesses from the first one.
pub fn no_init_config(kind: WorkloadKind, footprint: u64, accesses: u64, seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        kind,
        footprint: ByteSize(footprint),
        accesses,
        seed,
        init: super::InitMode::None,
        ..WorkloadConfig::default()
    }
}

/// A configuration of `kind` small enough for a unit test.
pub fn small_config(kind: WorkloadKind, seed: u64) -> WorkloadConfig {
    let mut cfg =
        WorkloadConfig { kind, seed, footprint: ByteSize(6 << 20), accesses: 30_000, ..WorkloadConfig::default() };
    match kind {
        WorkloadKind::Kv => {
            cfg.objects = Some(3000);
            cfg.object_size = ByteSize(300);
        }
        WorkloadKind::Graph => cfg.scale = Some(9),
        WorkloadKind::Sparse => cfg.touched_pages = 17,
        WorkloadKind::Stride => {
            cfg.stride = ByteSize(4096 + 64);
            cfg.write_fraction = Some(0.5);
        }
        // The build writes the same table whatever the seed: start at the probes.
        WorkloadKind::HashJoin => cfg.skip_kernel_init = true,
        // A 64 KiB build relation: its 8 pages' build, then the probes.
        WorkloadKind::PgsqlJoin => cfg.build_relation = Some(ByteSize(64 << 10)),
        _ => {}
    }
    cfg
}

/// Everything a workload emitted, event indices made global.
#[derive(Debug, Default)]
pub struct Collected {
    pub accesses: Vec<Access>,
    pub events: Vec<(usize, MapEvent)>,
}

impl Collected {
    /// Accesses of one kind.
    pub fn count(&self, kind: AccessKind) -> usize {
        self.accesses.iter().filter(|a| a.kind == kind).count()
    }
}

/// Runs `cfg` until exhausted or at least `limit` accesses were emitted.
pub fn collect(cfg: &WorkloadConfig, limit: usize) -> Collected {
    let mut all = Collected::default();
    for batch in collect_batches_limit(cfg, 4096, limit) {
        let base = all.accesses.len();
        all.events.extend(batch.events.into_iter().map(|(i, e)| (base + i as usize, e)));
        all.accesses.extend(batch.accesses);
    }
    all
}

pub fn collect_batches(cfg: &WorkloadConfig, max: usize) -> Vec<Batch> {
    collect_batches_limit(cfg, max, usize::MAX)
}

fn collect_batches_limit(cfg: &WorkloadConfig, max: usize, limit: usize) -> Vec<Batch> {
    let mut w = super::build_generator(cfg, "workload").unwrap();
    let mut out = Vec::new();
    let mut total = 0;
    loop {
        let mut batch = Batch::default();
        let more = w.next_batch(&mut batch, max);
        assert!(batch.accesses.len() <= max);
        total += batch.accesses.len();
        out.push(batch);
        if !more || total >= limit {
            return out;
        }
    }
}

/// The arrays mapped by the Mmap events of `all`.
pub fn mapped_arrays(all: &Collected) -> Vec<Array> {
    all.events
        .iter()
        .filter_map(|(_, e)| match e {
            MapEvent::Mmap { start, len, .. } => Some(Array { name: "", start: *start, len: *len }),
            _ => None,
        })
        .collect()
}

/// Every access lies inside a range mapped by an earlier (or same-index)
/// event; mapped ranges are 2 MiB-aligned and do not overlap.
pub fn check_mapped(batches: &[Batch], what: &str) {
    let mut mapped: Vec<Array> = Vec::new();
    let mut n = 0usize;
    for batch in batches {
        let mut events = batch.events.iter().peekable();
        for (i, a) in batch.accesses.iter().enumerate() {
            while let Some((at, e)) = events.peek() {
                if *at as usize > i {
                    break;
                }
                apply(&mut mapped, e, what);
                events.next();
            }
            assert!(
                mapped.iter().any(|m| m.contains(a.vaddr, a.size as u64)),
                "{what}: access {n} {a:?} outside every mapping"
            );
            assert!(a.instrs >= 1 && a.size >= 1, "{what}: {a:?}");
            n += 1;
        }
        for (_, e) in events {
            apply(&mut mapped, e, what);
        }
    }
    assert!(n > 0, "{what}: no accesses");
}

fn apply(mapped: &mut Vec<Array>, e: &MapEvent, what: &str) {
    if let MapEvent::Munmap { start, len } = e {
        let before = mapped.len();
        mapped.retain(|m| !(m.start == *start && m.len == *len));
        assert_eq!(mapped.len() + 1, before, "{what}: munmap {start:?} of {len} bytes matches no one mapping");
    }
    if let MapEvent::Mmap { start, len, .. } = e {
        assert!(start.is_aligned(2 << 20), "{what}: {start:?} not 2 MiB-aligned");
        let new = Array { name: "", start: *start, len: *len };
        for m in mapped.iter() {
            let disjoint = new.start.raw() + new.len <= m.start.raw() || m.start.raw() + m.len <= new.start.raw();
            assert!(disjoint, "{what}: {new:?} overlaps {m:?}");
        }
        mapped.push(new);
    }
}
