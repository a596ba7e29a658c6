//! Tests of the PgSql join analogue (pgsql_join.rs): the heap page layout,
//! the build's and the probe's access sequences, the chains, the run's
//! length and the paper's sizes.

use super::*;
use crate::units::ByteSize;
use crate::workload::testutil::{collect, no_init_config};
use crate::workload::{AccessKind, WorkloadKind};

fn config(build: u64, footprint: u64, accesses: u64, seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        build_relation: Some(ByteSize(build)),
        ..no_init_config(WorkloadKind::PgsqlJoin, footprint, accesses, seed)
    }
}

#[test]
fn a_heap_page_holds_61_tuples_from_its_end_and_their_line_pointers_from_its_start() {
    assert_eq!(TUPLES_PER_PAGE, 61);
    let r = Relation { start: VirtAddr::new(1 << 30), tuples: 122 };
    let (header, lp, tuple) = r.addresses(0);
    assert_eq!((lp.raw() - header.raw(), tuple.raw() - header.raw()), (24, 8192 - 128));
    let (header, lp, tuple) = r.addresses(62);
    assert_eq!(header.raw(), (1 << 30) + 8192);
    assert_eq!((lp.raw() - header.raw(), tuple.raw() - header.raw()), (28, 8192 - 256));
}

#[test]
fn the_build_scans_and_inserts_then_the_probe_walks_each_chain() {
    // One page each: 61 inner tuples (64 buckets), 61 outer tuples.
    let cfg = config(8192, 8192, 0, 1);
    let j = PgsqlJoin::new(&cfg);
    let all = collect(&cfg, usize::MAX);
    // The build: a page header, then per tuple a line pointer, the tuple,
    // two copy stores, the bucket's load and store: 1 + 61 x 6.
    let build = 1 + 61 * 6;
    let a = &all.accesses;
    assert_eq!(a[0].vaddr, j.inner.start);
    assert_eq!(a[1].vaddr, j.inner.start.add(24));
    assert_eq!(a[2].vaddr, j.inner.start.add(8192 - 128));
    assert_eq!((a[3].vaddr, a[3].kind), (j.hash_tuples.add(24), AccessKind::Store));
    assert_eq!(a[5].vaddr, j.buckets.add(j.bucket_of(0) * 8));
    assert_eq!((a[6].vaddr, a[6].kind), (a[5].vaddr, AccessKind::Store));
    // The probe: per outer tuple a line pointer, the tuple, its bucket and
    // one load per chain entry; the chains hold the 61 inner tuples once each.
    let chain_len = |b: u64| {
        let (mut n, mut e) = (0, j.head[b as usize]);
        while e != 0 {
            n += 1;
            e = j.next[e as usize - 1];
        }
        n
    };
    assert_eq!((0..64).map(chain_len).sum::<u64>(), 61);
    let mut expect = build + 1;
    for t in 0..61 {
        let key = below(mix64(t ^ j.key_seed), 61);
        expect += 3 + chain_len(j.bucket_of(key)) as usize;
    }
    assert_eq!(a.len(), expect);
    assert_eq!(a[build].vaddr, j.outer.start);
    // Every probe finds its key's inner tuple in its chain: the chain's
    // loads include that tuple's copy.
    let chains = a[build..].iter().filter(|x| x.site == Site::pc(CHAIN_PC).dependent()).count();
    assert_eq!(chains, expect - build - 1 - 3 * 61);
    assert!(chains >= 61, "a probe that found no match");
}

#[test]
fn the_paper_sizes_make_a_5mib_table_and_a_500mib_stream() {
    let j = PgsqlJoin::new(&config(DEFAULT_BUILD, 500 << 20, 1, 1));
    assert_eq!(j.inner.tuples, 640 * 61);
    assert_eq!(j.outer.tuples, 64_000 * 61);
    // 39,040 tuples: 65,536 buckets (512 KiB) and 163 chunks of 32 KiB.
    assert_eq!(j.bucket_mask + 1, 65_536);
    let len = |name: &str| j.arrays.iter().find(|a| a.name == name).unwrap().len;
    assert_eq!(len("pgsql-buckets"), 512 << 10);
    assert_eq!(len("pgsql-hash-chunks"), 163 * CHUNK);
    assert_eq!(len("pgsql-large"), 500 << 20);
}

#[test]
fn a_run_restarts_with_the_build_and_seeds_change_the_probes_only() {
    let cfg = config(8192, 16384, 0, 1);
    let natural = collect(&cfg, usize::MAX).accesses;
    let mut twice = cfg.clone();
    twice.accesses = 2 * natural.len() as u64;
    let both = collect(&twice, usize::MAX).accesses;
    assert_eq!(both[..natural.len()], natural[..]);
    assert_eq!(both[natural.len()..], natural[..], "the second run is the same query again");
    let other = collect(&config(8192, 16384, 0, 2), usize::MAX).accesses;
    assert_ne!(natural, other);
}
