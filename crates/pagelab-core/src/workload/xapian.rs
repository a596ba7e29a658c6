//! Xapian: TailBench's search engine serving queries over an inverted
//! index (`kind = "xapian"`), request-structured.
//!
//! Keeps: an index of `footprint` bytes (the COPLACE paper's section V puts
//! Xapian's working set at about 20 MB: `examples/coplace-xapian.toml` maps
//! 20 MiB against the 27.5 MiB LLC of the paper's machine), a query at a
//! time, each one request:
//!
//! 1. the query's text is read from the server's receive ring (one load:
//!    the request site, [`Generator::request_site`], so it is the query's
//!    first access and happens once per query);
//! 2. its scratch memory is allocated: glibc serves a malloc at or above
//!    its mmap threshold (128 KiB by default) with an anonymous mmap, so a
//!    `QUERY_BUFFER` of 256 KiB is a [`MapEvent::Mmap`] mid-run, at the
//!    same address every query, as Linux's top-down allocator gives back
//!    the range just freed. The match heap (top `TOP_K` documents) and the
//!    decoded posting chunks live in it;
//! 3. per term (one to `MAX_TERMS`, uniform; each term's rank drawn from a
//!    Zipf law of constant `zipf_theta`, rank 0 the most popular), a
//!    descent of the term dictionary, a B-tree of 8 KiB blocks (glass's
//!    default block size) of `DICT_ENTRY`-byte entries: per level a binary
//!    search in one block, each probe a load that waits for the one
//!    before. Terms lie in the dictionary in alphabetical order, not by
//!    popularity (a seeded permutation);
//! 4. then the term's posting list read in order, one 64-byte line at a
//!    time: the line's load, its decoded postings stored into the query
//!    buffer, the document length of its first document (a load that
//!    waits for the decode: the docid is in the posting) for BM25, and a
//!    load of the heap's minimum to decide whether the document enters
//!    the top k. A term of rank r has a list of `1 + p(r) x (L - T)` lines
//!    (p the same Zipf law: frequent query terms are frequent in
//!    documents; L the posting area's lines, T the terms), its documents
//!    spread evenly over the collection, so the length loads move forward
//!    through the document-length array;
//! 5. the result: the heap's `TOP_K` entries loaded, then the buffer freed
//!    (a [`MapEvent::Munmap`]: its frames go back to the guest's free
//!    lists and the next query's faults take frames again, which is why
//!    host placement does not persist for Xapian, the paper's section V).
//!
//! Of the footprint, after the receive ring (64 KiB) and the query buffer,
//! an eighth is the dictionary, three quarters the posting lists and an
//! eighth the document lengths (4 bytes per document): an estimate of an
//! inverted index's proportions, not measured on TailBench's index. A
//! natural run is `QUERIES_PER_RUN` queries (pagelab's choice; TailBench
//! sets the request count per run).
//!
//! Simplifies: glass keeps posting lists in the same B-tree as the
//! dictionary, in chunks under consecutive keys; here the descent finds the
//! term and its chunks are one contiguous run. Postings are one line per
//! step (sixteen 4-byte compressed postings, an estimate); only the first
//! document of a line has its length read; the heap is never reordered
//! (its stores would hit the L1D); queries are OR queries read to the end
//! (no max-weight skipping). glibc raises its mmap threshold to the size of
//! a freed mmapped chunk (`M_MMAP_THRESHOLD` is dynamic), after which a
//! real Xapian's buffers of that size would come from the heap; the
//! per-query mmap keeps the paper's observation that Xapian's memory is
//! freed and reallocated during the run, which is what matters to host
//! placement, and says so rather than model glibc's heap.
//!
//! Instructions per access (all estimates, not measured on Xapian): the
//! query's parse 2,000 (tokenising and the query parser); a dictionary
//! probe 12 (a compare of a key and the bisection's step); a posting line
//! 200 (sixteen postings at about 12 to decode), its store 4, the length
//! load 480 (BM25 of sixteen postings at about 30), the heap check 10; a
//! result entry 50 (the MSet's construction).

use super::driver::Generator;
use super::{below, mix64, rng_for, Access, Array, Layout, MapEvent, Permutation, Site, WorkloadConfig, Zipfian};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The server's receive ring the queries arrive in.
const RING: u64 = 64 << 10;
const RING_SLOT: u64 = 64;
/// Per-query scratch memory (above glibc's default 128 KiB mmap threshold).
pub(crate) const QUERY_BUFFER: u64 = 256 << 10;
/// glass's default block size, and a dictionary entry (an estimate).
const BLOCK: u64 = 8192;
const DICT_ENTRY: u64 = 32;
const ENTRIES_PER_BLOCK: u64 = BLOCK / DICT_ENTRY;
const LINE: u64 = 64;
/// Documents kept per query (an estimate of TailBench's result page).
const TOP_K: u64 = 10;
const HEAP_ENTRY: u64 = 16;
/// The heap's lines at the buffer's start; decoded chunks fill the rest.
const HEAP_AREA: u64 = (TOP_K * HEAP_ENTRY).next_multiple_of(LINE);
/// Terms per query: one to this many, uniform (an estimate).
const MAX_TERMS: u64 = 3;
pub(crate) const QUERIES_PER_RUN: u64 = 1000;
/// The least footprint: the ring, the buffer and a 1 MiB index.
pub(crate) const MIN_FOOTPRINT: u64 = RING + QUERY_BUFFER + (1 << 20);

const PARSE_INSTRS: u32 = 2000;
const PROBE_INSTRS: u32 = 12;
const POSTING_INSTRS: u32 = 200;
const DECODE_STORE_INSTRS: u32 = 4;
const SCORE_INSTRS: u32 = 480;
const HEAP_INSTRS: u32 = 10;
const RESULT_INSTRS: u32 = 50;

/// Program-counter tags of the access sites.
const REQUEST_PC: u64 = 1;
const PROBE_PC: u64 = 2;
const POSTING_PC: u64 = 3;
const DECODE_PC: u64 = 4;
const DOCLEN_PC: u64 = 5;
const HEAP_PC: u64 = 6;
const RESULT_PC: u64 = 7;

/// Where the current query is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Between queries: the next step reads a query.
    Idle,
    /// Looking up term `k` of the query.
    Lookup(usize),
    /// Reading line `line` of term `k`'s posting list.
    Postings { k: usize, line: u64 },
    /// Building the result, then freeing the buffer.
    Result,
}

pub(crate) struct Xapian {
    arrays: Vec<Array>,
    ring: VirtAddr,
    dict: VirtAddr,
    postings: VirtAddr,
    doclens: VirtAddr,
    buffer: Array,
    documents: u64,
    /// Blocks per dictionary level, root first.
    levels: Vec<u64>,
    /// Posting lines of the lists of ranks < r, for r in 0..=terms.
    list_start: Vec<u64>,
    alphabetical: Permutation,
    popularity: Zipfian,
    rng: Xoshiro256PlusPlus,
    spread_seed: u64,
    query_terms: Vec<u64>,
    phase: Phase,
    queries: u64,
    buffer_mapped: bool,
    events: Vec<(usize, MapEvent)>,
}

impl Xapian {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let index = cfg.footprint.bytes().max(MIN_FOOTPRINT) - RING - QUERY_BUFFER;
        let terms = (index / 8 / DICT_ENTRY).max(1);
        let lines = (index * 3 / 4 / LINE).max(terms + 1);
        let documents = (index / 8 / 4).max(1);
        let popularity = Zipfian::new(terms, cfg.zipf_theta);
        let mut list_start = Vec::with_capacity(terms as usize + 1);
        let mut start = 0;
        for rank in 0..terms {
            list_start.push(start);
            start += 1 + (popularity.probability(rank) * (lines - terms) as f64) as u64;
        }
        list_start.push(start);
        let mut layout = Layout::of(cfg);
        let ring = layout.place("xapian-ring", RING);
        let dict = layout.place("xapian-dictionary", dictionary_blocks(terms).iter().sum::<u64>() * BLOCK);
        let postings = layout.place("xapian-postings", start * LINE);
        let doclens = layout.place("xapian-doclens", documents * 4);
        let buffer_start = layout.place("xapian-query", QUERY_BUFFER);
        let arrays = layout.into_arrays();
        Xapian {
            buffer: Array { name: "xapian-query", start: buffer_start, len: QUERY_BUFFER },
            arrays,
            ring,
            dict,
            postings,
            doclens,
            documents,
            levels: dictionary_blocks(terms),
            list_start,
            alphabetical: Permutation::new(terms, mix64(cfg.seed ^ 0x7861_7069_616e)),
            popularity,
            rng: rng_for(cfg.seed, 0x7861_7069_616e),
            spread_seed: mix64(cfg.seed ^ 0x646f_6373),
            query_terms: Vec::with_capacity(MAX_TERMS as usize),
            phase: Phase::Idle,
            queries: 0,
            buffer_mapped: true,
            events: Vec::new(),
        }
    }

    /// Reads the next query and maps its buffer.
    fn start_query(&mut self, out: &mut Vec<Access>) {
        let slot = self.queries % (RING / RING_SLOT);
        out.push(Access::load(self.ring.add(slot * RING_SLOT), 64, PARSE_INSTRS).at(Site::pc(REQUEST_PC)));
        if !self.buffer_mapped {
            let b = self.buffer;
            self.events
                .push((out.len(), MapEvent::Mmap { start: b.start, len: b.len, writable: true, name: b.name.into() }));
            self.buffer_mapped = true;
        }
        let n = 1 + below(self.rng.next_u64(), MAX_TERMS);
        self.query_terms.clear();
        for _ in 0..n {
            self.query_terms.push(self.popularity.rank(self.rng.next_u64()));
        }
        self.phase = Phase::Lookup(0);
    }

    /// The dictionary descent for the term of popularity `rank`: a binary
    /// search of one block per level, root first.
    fn lookup(&self, out: &mut Vec<Access>, rank: u64) {
        let position = self.alphabetical.apply(rank);
        let mut level_base = 0;
        for (depth, &blocks) in self.levels.iter().enumerate() {
            let below = ENTRIES_PER_BLOCK.pow((self.levels.len() - 1 - depth) as u32);
            let block = level_base + (position / below / ENTRIES_PER_BLOCK).min(blocks - 1);
            let slot = position / below % ENTRIES_PER_BLOCK;
            let (mut lo, mut hi) = (0, ENTRIES_PER_BLOCK);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                let addr = self.dict.add(block * BLOCK + mid * DICT_ENTRY);
                out.push(Access::load(addr, 8, PROBE_INSTRS).at(Site::pc(PROBE_PC).dependent()));
                if slot >= mid {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            level_base += blocks;
        }
    }

    /// Line `line` of the posting list of rank `rank`: its load, the
    /// decode's store, its first document's length and the heap check.
    fn posting_line(&self, out: &mut Vec<Access>, rank: u64, line: u64) {
        let first = self.list_start[rank as usize];
        let lines = self.list_start[rank as usize + 1] - first;
        out.push(Access::load(self.postings.add((first + line) * LINE), 8, POSTING_INSTRS).at(Site::pc(POSTING_PC)));
        let scratch = self.buffer.start.add(HEAP_AREA + line * LINE % (QUERY_BUFFER - HEAP_AREA));
        out.push(Access::store(scratch, 8, DECODE_STORE_INSTRS).at(Site::pc(DECODE_PC)));
        // The list's documents spread evenly over the collection, from an
        // offset of the term's own.
        let gap = (self.documents / lines).max(1);
        let doc = (line * gap + mix64(rank ^ self.spread_seed) % gap) % self.documents;
        out.push(Access::load(self.doclens.add(doc * 4), 4, SCORE_INSTRS).at(Site::pc(DOCLEN_PC).dependent()));
        out.push(Access::load(self.buffer.start, 8, HEAP_INSTRS).at(Site::pc(HEAP_PC)));
    }

    /// The result's entries, then the buffer's free.
    fn finish_query(&mut self, out: &mut Vec<Access>) {
        for i in 0..TOP_K {
            out.push(Access::load(self.buffer.start.add(i * HEAP_ENTRY), 8, RESULT_INSTRS).at(Site::pc(RESULT_PC)));
        }
        self.events.push((out.len(), MapEvent::Munmap { start: self.buffer.start, len: self.buffer.len }));
        self.buffer_mapped = false;
        self.queries += 1;
        self.phase = Phase::Idle;
    }

    /// One step of the current query.
    fn step(&mut self, out: &mut Vec<Access>) {
        match self.phase {
            Phase::Idle => self.start_query(out),
            Phase::Lookup(k) => {
                self.lookup(out, self.query_terms[k]);
                self.phase = Phase::Postings { k, line: 0 };
            }
            Phase::Postings { k, line } => {
                let rank = self.query_terms[k];
                self.posting_line(out, rank, line);
                let lines = self.list_start[rank as usize + 1] - self.list_start[rank as usize];
                self.phase = match (line + 1 < lines, k + 1 < self.query_terms.len()) {
                    (true, _) => Phase::Postings { k, line: line + 1 },
                    (false, true) => Phase::Lookup(k + 1),
                    (false, false) => Phase::Result,
                };
            }
            Phase::Result => self.finish_query(out),
        }
    }
}

/// Blocks of each dictionary level, root first, for `terms` entries.
fn dictionary_blocks(terms: u64) -> Vec<u64> {
    let mut levels = vec![terms.div_ceil(ENTRIES_PER_BLOCK)];
    while levels[0] > 1 {
        levels.insert(0, levels[0].div_ceil(ENTRIES_PER_BLOCK));
    }
    levels
}

impl Generator for Xapian {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.phase == Phase::Idle && self.queries == QUERIES_PER_RUN {
                return false;
            }
            self.step(out);
        }
        true
    }

    fn restart(&mut self) {
        self.queries = 0;
    }

    fn take_events(&mut self, into: &mut Vec<(usize, MapEvent)>) {
        into.append(&mut self.events);
    }

    fn request_site(&self) -> Option<Site> {
        Some(Site::pc(REQUEST_PC))
    }
}

#[cfg(test)]
#[path = "xapian_tests.rs"]
mod tests;
