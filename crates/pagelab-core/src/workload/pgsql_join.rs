//! PgSql's join: PostgreSQL's Hash Join of a small and a large table
//! (`kind = "pgsql-join"`), a throughput workload: the COPLACE paper's
//! "join a small table (5MB) and a large table (500MB)" (section V).
//!
//! Keeps (PostgreSQL's storage layout and `nodeHash.c`/`nodeHashjoin.c`):
//! both relations are heap files of 8 KiB pages, each page a 24-byte
//! header, 4-byte line pointers from the front and tuples from the back; a
//! sequential scan reads a page's header, then per tuple its line pointer
//! and the tuple (its key, at an offset the line pointer gives). The
//! build scans the small relation (`build_relation` bytes, default 5 MiB)
//! and inserts every tuple into the hash table: `nbuckets` the power of two
//! at or above the tuple count (one tuple per bucket, `NTUP_PER_BUCKET`
//! since 9.5), an 8-byte bucket array, the tuples copied densely into 32
//! KiB chunks (`HASH_CHUNK_SIZE`), each insertion at its bucket's head. The
//! probe scans the large relation (`footprint` bytes) and, per tuple,
//! hashes its key, loads its bucket, and walks the whole chain comparing
//! each entry's stored hash value (`ExecScanHashBucket`). The inner keys
//! are the small relation's primary keys (0..n), the outer tuples carry
//! foreign keys drawn uniformly: every probe finds its one match. A
//! natural run is one execution of the query (build, then probe every
//! outer tuple); another run rebuilds the table in the same memory.
//!
//! Working set against the paper's 27.5 MiB LLC: the hash table (the 5 MiB
//! relation's tuples and buckets, about 6 MiB) fits and is reused by every
//! probe; the 500 MiB relation streams through once per run. All memory is
//! allocated at the start and kept (the relations as shared buffers, the
//! hash table as its memory context's chunks).
//!
//! Estimates (not from a measured PostgreSQL): 128-byte heap tuples (a
//! 24-byte header and about 100 bytes of attributes), so 61 to a page; a
//! hash-table tuple of 136 bytes (a 16-byte `HashJoinTuple` header and the
//! minimal tuple). Instructions per access: a page header 100, a line
//! pointer 20, the tuple 150 (the scan's visibility check and the key's
//! deforming), a bucket 40 (the hash function), a chain entry 15, a build
//! store 30.
//!
//! Simplifies: the relations are in memory from the start (shared buffers
//! warmed, no I/O, no buffer-manager lookups); the plan above the join
//! (the result's emission, an aggregate) is left in the instruction
//! counts; a batch never spills to disk (the table fits `work_mem`).

use super::driver::Generator;
use super::{below, mix64, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;

pub(crate) const PAGE: u64 = 8192;
const PAGE_HEADER: u64 = 24;
const LINE_POINTER: u64 = 4;
const TUPLE: u64 = 128;
pub(crate) const TUPLES_PER_PAGE: u64 = (PAGE - PAGE_HEADER) / (TUPLE + LINE_POINTER);
const HASH_TUPLE: u64 = 136;
const CHUNK: u64 = 32 << 10;
const CHUNK_HEADER: u64 = 24;
const TUPLES_PER_CHUNK: u64 = (CHUNK - CHUNK_HEADER) / HASH_TUPLE;
/// The build relation's size unless `build_relation` says (the paper's 5 MB).
pub(crate) const DEFAULT_BUILD: u64 = 5 << 20;

const HEADER_INSTRS: u32 = 100;
const LINE_POINTER_INSTRS: u32 = 20;
const TUPLE_INSTRS: u32 = 150;
const BUCKET_INSTRS: u32 = 40;
const CHAIN_INSTRS: u32 = 15;
const STORE_INSTRS: u32 = 30;

/// Program-counter tags.
const HEADER_PC: u64 = 1;
const LINE_POINTER_PC: u64 = 2;
const TUPLE_PC: u64 = 3;
const BUCKET_PC: u64 = 4;
const CHAIN_PC: u64 = 5;
const COPY_PC: u64 = 6;
const BUCKET_STORE_PC: u64 = 7;

/// A heap relation of `tuples` tuples in 8 KiB pages.
#[derive(Clone, Copy, Debug)]
struct Relation {
    start: VirtAddr,
    tuples: u64,
}

impl Relation {
    fn pages(tuples: u64) -> u64 {
        tuples.div_ceil(TUPLES_PER_PAGE)
    }

    /// The page header, line pointer and tuple of tuple `t`.
    fn addresses(&self, t: u64) -> (VirtAddr, VirtAddr, VirtAddr) {
        let (page, slot) = (t / TUPLES_PER_PAGE, t % TUPLES_PER_PAGE);
        let base = self.start.add(page * PAGE);
        (base, base.add(PAGE_HEADER + slot * LINE_POINTER), base.add(PAGE - (slot + 1) * TUPLE))
    }

    /// The scan's accesses of tuple `t`: its page's header first.
    fn scan(&self, out: &mut Vec<Access>, t: u64) {
        let (header, line_pointer, tuple) = self.addresses(t);
        if t.is_multiple_of(TUPLES_PER_PAGE) {
            out.push(Access::load(header, 8, HEADER_INSTRS).at(Site::pc(HEADER_PC)));
        }
        out.push(Access::load(line_pointer, 4, LINE_POINTER_INSTRS).at(Site::pc(LINE_POINTER_PC)));
        out.push(Access::load(tuple, 8, TUPLE_INSTRS).at(Site::pc(TUPLE_PC).dependent()));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Build(u64),
    Probe(u64),
    Done,
}

pub(crate) struct PgsqlJoin {
    arrays: Vec<Array>,
    inner: Relation,
    outer: Relation,
    buckets: VirtAddr,
    hash_tuples: VirtAddr,
    bucket_mask: u64,
    /// Per bucket the first inner tuple of its chain plus one (0: empty),
    /// and per inner tuple the next one's plus one: the chains as the
    /// whole build leaves them.
    head: Vec<u32>,
    next: Vec<u32>,
    hash_seed: u64,
    key_seed: u64,
    phase: Phase,
}

impl PgsqlJoin {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let build = cfg.build_relation.map_or(DEFAULT_BUILD, |b| b.bytes());
        let inner_tuples = tuples_in(build);
        let outer_tuples = tuples_in(cfg.footprint.bytes());
        let nbuckets = inner_tuples.next_power_of_two();
        let mut layout = Layout::of(cfg);
        let inner =
            Relation { start: layout.place("pgsql-small", Relation::pages(inner_tuples) * PAGE), tuples: inner_tuples };
        let outer =
            Relation { start: layout.place("pgsql-large", Relation::pages(outer_tuples) * PAGE), tuples: outer_tuples };
        let buckets = layout.place("pgsql-buckets", nbuckets * 8);
        let hash_tuples = layout.place("pgsql-hash-chunks", inner_tuples.div_ceil(TUPLES_PER_CHUNK) * CHUNK);
        let hash_seed = mix64(cfg.seed ^ 0x7067_6861_7368);
        let mut join = PgsqlJoin {
            arrays: layout.into_arrays(),
            inner,
            outer,
            buckets,
            hash_tuples,
            bucket_mask: nbuckets - 1,
            head: vec![0; nbuckets as usize],
            next: vec![0; inner_tuples as usize],
            hash_seed,
            key_seed: mix64(cfg.seed ^ 0x6b65_7973),
            phase: Phase::Build(0),
        };
        for t in 0..inner_tuples {
            let b = join.bucket_of(t) as usize;
            join.next[t as usize] = join.head[b];
            join.head[b] = t as u32 + 1;
        }
        join
    }

    fn bucket_of(&self, key: u64) -> u64 {
        mix64(key ^ self.hash_seed) & self.bucket_mask
    }

    /// Where inner tuple `t`'s copy lies in the chunks.
    fn hash_tuple(&self, t: u64) -> VirtAddr {
        self.hash_tuples.add(t / TUPLES_PER_CHUNK * CHUNK + CHUNK_HEADER + t % TUPLES_PER_CHUNK * HASH_TUPLE)
    }

    /// Inner tuple `t` scanned and inserted: copied into its chunk (its
    /// header and data, two stores), its bucket's head read and replaced.
    fn build(&self, out: &mut Vec<Access>, t: u64) {
        self.inner.scan(out, t);
        let copy = self.hash_tuple(t);
        out.push(Access::store(copy, 16, STORE_INSTRS).at(Site::pc(COPY_PC)));
        out.push(Access::store(copy.add(64), 64, STORE_INSTRS).at(Site::pc(COPY_PC)));
        let bucket = self.buckets.add(self.bucket_of(t) * 8);
        out.push(Access::load(bucket, 8, BUCKET_INSTRS).at(Site::pc(BUCKET_PC)));
        out.push(Access::store(bucket, 8, STORE_INSTRS).at(Site::pc(BUCKET_STORE_PC)));
    }

    /// Outer tuple `t` scanned, hashed, and its bucket's chain walked.
    fn probe(&self, out: &mut Vec<Access>, t: u64) {
        self.outer.scan(out, t);
        let key = below(mix64(t ^ self.key_seed), self.inner.tuples);
        let b = self.bucket_of(key);
        out.push(Access::load(self.buckets.add(b * 8), 8, BUCKET_INSTRS).at(Site::pc(BUCKET_PC).dependent()));
        let mut entry = self.head[b as usize];
        while entry != 0 {
            let inner = entry as u64 - 1;
            out.push(Access::load(self.hash_tuple(inner), 16, CHAIN_INSTRS).at(Site::pc(CHAIN_PC).dependent()));
            entry = self.next[inner as usize];
        }
    }
}

/// Tuples a relation of `bytes` holds (at least one page's worth).
pub(crate) fn tuples_in(bytes: u64) -> u64 {
    (bytes / PAGE).max(1) * TUPLES_PER_PAGE
}

impl Generator for PgsqlJoin {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            match self.phase {
                Phase::Build(t) if t == self.inner.tuples => self.phase = Phase::Probe(0),
                Phase::Build(t) => {
                    self.build(out, t);
                    self.phase = Phase::Build(t + 1);
                }
                Phase::Probe(t) if t == self.outer.tuples => self.phase = Phase::Done,
                Phase::Probe(t) => {
                    self.probe(out, t);
                    self.phase = Phase::Probe(t + 1);
                }
                Phase::Done => return false,
            }
        }
        true
    }

    fn restart(&mut self) {
        self.phase = Phase::Build(0);
    }
}

#[cfg(test)]
#[path = "pgsql_join_tests.rs"]
mod tests;
