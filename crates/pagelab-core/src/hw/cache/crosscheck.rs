//! Cross-checks against a deliberately simple reference model, and a timing
//! probe.
//!
//! The reference is an LRU set-associative cache kept as one `Vec` per set,
//! most recent first: obviously correct, slow. Its hierarchy is pycachesim's
//! (non-inclusive, fill every level on a miss, evictions touch no other
//! level). [`Cache`] and [`CacheHierarchy`] must agree with it reference by
//! reference on random streams.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::config::{CacheConfig, CacheHierarchyConfig, Geometry, LlcConfig};
use super::hierarchy::{CacheHierarchy, HitLevel};
use super::level::{Cache, Evicted};
use super::replacement::ReplacementKind;
use super::slice::SliceHash;
use super::stats::{Level, RefKind};
use crate::units::{ByteSize, PhysAddr};

type SetFn = Box<dyn Fn(u64) -> usize>;

/// The reference: `sets[set]` lists `(line, dirty)`, most recent first.
struct RefCache {
    sets: Vec<Vec<(u64, bool)>>,
    ways: usize,
    set_of: SetFn,
}

impl RefCache {
    fn new(nr_sets: usize, ways: usize) -> RefCache {
        RefCache::with_sets(nr_sets, ways, Box::new(move |line| (line % nr_sets as u64) as usize))
    }

    fn with_sets(nr_sets: usize, ways: usize, set_of: SetFn) -> RefCache {
        RefCache { sets: vec![Vec::new(); nr_sets], ways, set_of }
    }

    fn access(&mut self, line: u64, write: bool) -> (bool, Option<Evicted>) {
        let set = &mut self.sets[(self.set_of)(line)];
        if let Some(pos) = set.iter().position(|&(l, _)| l == line) {
            let (_, dirty) = set.remove(pos);
            set.insert(0, (line, dirty || write));
            return (true, None);
        }
        set.insert(0, (line, write));
        let evicted = if set.len() > self.ways { set.pop() } else { None };
        (false, evicted.map(|(line, dirty)| Evicted { line, dirty }))
    }
}

/// Lines with some reuse at every level: half from a hot range, half from a
/// range `spread` lines wide.
fn stream(seed: u64, len: usize, hot: u64, spread: u64) -> Vec<(u64, bool)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let line = if rng.random_bool(0.5) { rng.random_range(0..hot) } else { rng.random_range(0..spread) };
            (line, rng.random_bool(0.3))
        })
        .collect()
}

#[test]
fn lru_cache_matches_the_reference() {
    for (sets, ways) in [(1, 1), (4, 2), (16, 8), (8, 16), (2, 64), (64, 4)] {
        let capacity = (sets * ways) as u64;
        let mut cache = Cache::new(Geometry::sets(sets as u32, ways as u32, 64), ReplacementKind::Lru, 0);
        let mut reference = RefCache::new(sets, ways);
        let mask = cache.full_mask();
        for (i, &(line, write)) in stream(sets as u64, 20_000, capacity / 2 + 1, capacity * 3).iter().enumerate() {
            let got = cache.access(line, write, mask);
            assert_eq!(got, reference.access(line, write), "{sets} sets x {ways} ways, reference {i}: line {line}");
        }
    }
}

#[test]
fn sliced_lru_cache_matches_the_reference() {
    // 16 sets in 4 slices of 4. Reference set functions written out anew.
    let (slices, per_slice, ways) = (4u64, 4u64, 2usize);
    let modulo = move |line: u64| (line % slices * per_slice + line / slices % per_slice) as usize;
    let intel = move |line: u64| {
        let addr = line << 6;
        let parity = |mask: u64| (0..64).filter(|b| addr >> b & mask >> b & 1 == 1).count() as u64 % 2;
        let slice = parity(0x1b_5f57_5440) | parity(0x2e_b5fa_a880) << 1;
        (slice * per_slice + line % per_slice) as usize
    };
    let cases: [(SliceHash, SetFn); 2] = [(SliceHash::Modulo, Box::new(modulo)), (SliceHash::Intel, Box::new(intel))];
    for (hash, set_of) in cases {
        let geometry = Geometry::sets(16, ways as u32, 64).with_slices(slices as u32, hash);
        let mut cache = Cache::new(geometry, ReplacementKind::Lru, 0);
        let mut reference = RefCache::with_sets(16, ways, set_of);
        for &(line, write) in &stream(9, 20_000, 20, 1 << 20) {
            assert_eq!(cache.access(line, write, 0b11), reference.access(line, write), "{hash:?} line {line:#x}");
        }
    }
}

/// pycachesim's hierarchy over the reference caches, loads only.
struct RefHierarchy {
    l1: Vec<RefCache>,
    l2: Vec<RefCache>,
    llc: RefCache,
    misses: [u64; 3],
}

impl RefHierarchy {
    fn access(&mut self, core: usize, line: u64) -> HitLevel {
        if self.l1[core].access(line, false).0 {
            return HitLevel::L1;
        }
        self.misses[0] += 1;
        if self.l2[core].access(line, false).0 {
            return HitLevel::L2;
        }
        self.misses[1] += 1;
        if self.llc.access(line, false).0 {
            return HitLevel::Llc;
        }
        self.misses[2] += 1;
        HitLevel::Memory
    }
}

fn small_hierarchy(cores: usize) -> (CacheHierarchyConfig, RefHierarchy) {
    // L1: 8 sets x 2 ways, L2: 16 sets x 4 ways, LLC: 64 sets x 8 ways.
    let level =
        |sets: u64, ways: u32| CacheConfig { size: ByteSize(sets * u64::from(ways) * 64), ways, ..CacheConfig::l1d() };
    let cfg = CacheHierarchyConfig {
        l1d: level(8, 2),
        l2: level(16, 4),
        llc: LlcConfig { size: ByteSize(64 * 8 * 64), ways: 8, ..LlcConfig::default() },
        ..CacheHierarchyConfig::default()
    };
    let reference = RefHierarchy {
        l1: (0..cores).map(|_| RefCache::new(8, 2)).collect(),
        l2: (0..cores).map(|_| RefCache::new(16, 4)).collect(),
        llc: RefCache::new(64, 8),
        misses: [0; 3],
    };
    (cfg, reference)
}

#[test]
fn three_level_hierarchy_matches_pycachesim_model() {
    for cores in [1, 2] {
        let (cfg, mut reference) = small_hierarchy(cores);
        let mut h = CacheHierarchy::new(&cfg, cores).unwrap();
        for (i, &(line, _)) in stream(cores as u64, 50_000, 300, 2000).iter().enumerate() {
            let core = i % cores;
            let got = h.access(core, PhysAddr::new(line << 6), RefKind::Load);
            assert_eq!(got, reference.access(core, line), "{cores} cores, reference {i}, line {line}");
        }
        let s = h.stats();
        let misses = [Level::L1d, Level::L2, Level::Llc].map(|l| s.total(l).total_misses());
        assert_eq!(misses, reference.misses);
        assert!(misses[2] > 0 && misses[2] < misses[1] && misses[1] < misses[0], "every level filters: {misses:?}");
    }
}

#[test]
fn inclusive_hierarchy_keeps_inclusion() {
    let (mut cfg, _) = small_hierarchy(2);
    cfg.llc.inclusive = true;
    cfg.llc.way_masks = vec![0x0f, 0xfc];
    let mut h = CacheHierarchy::new(&cfg, 2).unwrap();
    let kinds = [RefKind::Load, RefKind::Store, RefKind::Walk];
    for (i, &(line, write)) in stream(5, 30_000, 300, 3000).iter().enumerate() {
        let kind = if write { RefKind::Store } else { kinds[i % 3] };
        h.access(i % 2, PhysAddr::new(line << 6), kind);
        if i % 1000 == 0 {
            for core in 0..2 {
                for line in h.l1d(core).lines().chain(h.l2(core).lines()) {
                    assert!(h.llc().probe(line), "line {line} above the LLC but not in it");
                }
            }
        }
    }
    assert!(h.stats().total(Level::Llc).writebacks > 0);
}

/// Prints simulated references per second (never asserts a time). Run with
/// `cargo test --release -- --ignored --nocapture hierarchy_speed`.
#[test]
#[ignore]
fn hierarchy_speed() {
    use std::time::Instant;
    const N: usize = 4_000_000;
    const AHEAD: usize = 16;
    let cfg = CacheHierarchyConfig::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let random: Vec<PhysAddr> = (0..N).map(|_| PhysAddr::new(rng.random_range(0..16u64 << 30) & !63)).collect();
    let sequential: Vec<PhysAddr> = (0..N as u64).map(|i| PhysAddr::new(i * 8)).collect();
    for (name, addrs, prefetch) in [
        ("random, no prefetch", &random, false),
        ("random, prefetch", &random, true),
        ("sequential 8 B", &sequential, false),
    ] {
        let mut h = CacheHierarchy::new(&cfg, 1).unwrap();
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let mut memory = 0u64;
        for i in 0..N {
            if prefetch && i + AHEAD < N {
                h.prefetch(0, addrs[i + AHEAD]);
            }
            memory += u64::from(h.access(0, addrs[i], RefKind::Load) == HitLevel::Memory);
        }
        let secs = start.elapsed().as_secs_f64();
        let cpu_secs = thread_cpu_ns().map(|end| (end - cpu_start.unwrap_or(end)) as f64 / 1e9);
        let per_cpu = cpu_secs.map_or(String::new(), |c| format!(", {:.1} M/s of CPU time", N as f64 / c / 1e6));
        println!("{name}: {:.1} M accesses/s wall{per_cpu} ({memory} from memory)", N as f64 / secs / 1e6);
    }
}

/// Time this thread has run on a CPU (Linux schedstat), so that a loaded
/// machine does not distort the probe.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}
