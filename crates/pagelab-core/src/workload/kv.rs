//! A Redis-like key-value store under a YCSB-like request stream.
//!
//! Keeps (reference/workloads.md, "Key-value stores"): a bucket array of
//! pointers (`dict.ht_table`), chained dict entries (`dictEntry.next`, new
//! entries pushed at the chain head as `dictAddRaw` does), key objects and
//! value objects in a heap in insertion order, so the first-inserted keys
//! (YCSB hotspot's hot set) sit in the earliest memory. A GET is several
//! dependent loads: hash -> bucket -> for each chained entry, the entry and
//! its key (`dictFind` compares the key bytes) -> the value. Redis's
//! `lookupKey` refreshes the value object's LRU clock on every read (one
//! store to the object header); the reply copies the value (one load per
//! 64-byte line, or per line of a `value_prefix`). A SET looks the key up
//! the same way and stores the value's lines. Key popularity: YCSB
//! zipfian 0.99 scrambled, hotspot 20/80, or uniform; 95% GETs by default;
//! values of 1000 B (10 fields x 100 B). A natural run is `objects`
//! operations.
//!
//! Simplifies: the table is not being rehashed (Redis keeps two tables only
//! during incremental rehash); its size is the power of two >= objects that
//! Redis's expand policy ends at (load factor <= 1). The heap is one VMA
//! laid out as jemalloc would fill fresh slabs during the load phase: a
//! small-object area where each key has its 32-byte dictEntry and its
//! 32-byte key sds side by side, then the values, each `object_size`
//! rounded up to its jemalloc size class (4 classes per doubling). The
//! value's `robj` header is folded into the value object. A SET overwrites
//! the value in place (Redis allocates a new object and frees the old one,
//! which jemalloc would usually place at the same size-class slot).
//! With `workload.cache_oblivious` (jemalloc's `opt.cache_oblivious`, on by
//! default in jemalloc 5), a value of a large class (16 KiB and up) is an
//! extent of its class plus one page, and starts at a random cache line of
//! its first page: the extent's pages the value does not reach are never
//! touched (`Kv::untouched_pages`). A 16 KiB Redis value (an sds of 16,390
//! bytes: class 20 KiB, extent 24 KiB) leaves one page in six untouched.
//! Request parsing, networking and the reply buffer are not modelled as
//! accesses; their instructions are (see `REQUEST_INSTRS`).

use super::driver::Generator;
use super::zipf::KeyChooser;
use super::{mix64, prefetch, rng_for, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// User-space instructions per request before the bucket load: protocol
/// parsing, command lookup, siphash of the key. An order-of-magnitude
/// assumption, not a measurement; carried by the bucket load.
const REQUEST_INSTRS: u32 = 2000;
/// Instructions of one chain step: load the entry's key pointer.
const ENTRY_INSTRS: u32 = 3;
/// Instructions of one key comparison (`sdslen` + `memcmp` of ~24 bytes).
const KEY_COMPARE_INSTRS: u32 = 12;
/// Instructions per 64-byte line copied (two 32-byte loads and stores).
const COPY_LINE_INSTRS: u32 = 4;
/// Bytes of the small-object area per key: dictEntry (24 B, class 32) and
/// key sds ("user" + 19 digits + header, class 32).
const META_BYTES: u64 = 64;
const NONE: u32 = u32::MAX;
/// The bucket load's site: the first access of every GET and SET, so the
/// site where each request begins (`Generator::request_site`).
const BUCKET_SITE: Site = Site::pc(1);

/// jemalloc's smallest large size class (4 KiB pages): the classes that
/// take whole extents, and a pad page under `opt.cache_oblivious`.
const LARGE_MINCLASS: u64 = 16 << 10;

/// The bytes one value takes in the heap: its size class, and under
/// `cache_oblivious` one page more for a large class (jemalloc's
/// `sz_large_pad`).
pub(crate) fn value_stride(object_size: u64, cache_oblivious: bool) -> u64 {
    let class = size_class(object_size);
    class + if cache_oblivious && class >= LARGE_MINCLASS { 4096 } else { 0 }
}

/// The sizes of a store of `objects` values `value_stride` bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KvShape {
    pub objects: u64,
    pub value_stride: u64,
    pub buckets: u64,
}

impl KvShape {
    pub(crate) fn new(objects: u64, value_stride: u64) -> Self {
        KvShape { objects, value_stride, buckets: objects.next_power_of_two() }
    }

    /// The most objects whose store fits in `footprint`, if at least one
    /// and fewer than 2^32 - 1 do.
    pub(crate) fn from_footprint(footprint: u64, stride: u64) -> Option<Self> {
        let fits = |n: u64| KvShape::new(n, stride).footprint() <= footprint;
        // Each key costs more than META_BYTES + stride: `hi` never fits.
        // The largest n that does is one below the first that does not
        // (footprint grows with n).
        let hi = footprint / (META_BYTES + stride) + 1;
        let lo = super::first_true(0, hi, |n| !fits(n)) - 1;
        (lo > 0 && lo < u32::MAX as u64).then(|| KvShape::new(lo, stride))
    }

    fn values_offset(&self) -> u64 {
        round_page(self.objects * META_BYTES)
    }

    fn heap_bytes(&self) -> u64 {
        self.values_offset() + self.objects * self.value_stride
    }

    pub(crate) fn footprint(&self) -> u64 {
        round_page(self.buckets * 8) + round_page(self.heap_bytes())
    }
}

fn round_page(bytes: u64) -> u64 {
    bytes.div_ceil(4096) * 4096
}

/// jemalloc's size class of `size`: multiples of 16 up to 128, then four
/// classes per doubling (160, 192, 224, 256, 320, ...; 1000 -> 1024).
fn size_class(size: u64) -> u64 {
    if size <= 128 {
        return size.div_ceil(16) * 16;
    }
    let lg = 63 - (size - 1).leading_zeros();
    let step = 1u64 << (lg - 2);
    size.div_ceil(step) * step
}

pub(crate) struct Kv {
    arrays: Vec<Array>,
    shape: KvShape,
    buckets_va: VirtAddr,
    meta_va: VirtAddr,
    values_va: VirtAddr,
    /// The dict's chains, as links towards the head: `newer[k]` is the key
    /// inserted next into k's bucket, i.e. the entry in front of k (Redis
    /// pushes new entries at the head). A lookup of k walks `newer` from k
    /// and emits the walk reversed, needing one host-memory read per
    /// entry in front of k (usually none) instead of a walk from the head.
    newer: Vec<u32>,
    hash_seed: u64,
    /// Under `cache_oblivious` with a large class: the seed of each value's
    /// random cache-line offset in its first page.
    offset_seed: Option<u64>,
    /// Bytes from a value's start that its operations and its load touch
    /// (its size, in whole lines).
    value_span: u64,
    value_lines: u64,
    get_threshold: u64,
    all_gets: bool,
    chooser: KeyChooser,
    rng: Xoshiro256PlusPlus,
    /// The next operations, drawn ahead so their `newer` links are in the
    /// host cache when needed (a host speed matter; the stream is the same).
    ahead: [(u32, bool); LOOKAHEAD],
    ahead_pos: usize,
    ops_done: u64,
}

const LOOKAHEAD: usize = 16;

/// The store's shape as `cfg` gives it.
fn shape_of(cfg: &WorkloadConfig) -> KvShape {
    let stride = value_stride(cfg.object_size.bytes(), cfg.cache_oblivious);
    match cfg.objects {
        Some(n) => KvShape::new(n, stride),
        None => KvShape::from_footprint(cfg.footprint.bytes(), stride).expect("validated"),
    }
}

/// The objects of `cfg`'s store and the host bytes of its hash chains
/// while they are built (a `u32` per bucket and per object).
pub(crate) fn host_bytes(cfg: &WorkloadConfig) -> (u64, u64) {
    let shape = shape_of(cfg);
    (shape.objects, 4 * (shape.buckets + shape.objects))
}

impl Kv {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let size = cfg.object_size.bytes();
        let shape = shape_of(cfg);
        let mut layout = Layout::of(cfg);
        let heap = layout.place("kv-heap", shape.heap_bytes());
        let buckets_va = layout.place("kv-buckets", shape.buckets * 8);
        let hash_seed = mix64(cfg.seed ^ 0x6b76_6861_7368);
        let newer = build_chains(&shape, hash_seed);
        let prefix = match cfg.value_prefix.bytes() {
            0 => size,
            p => p,
        };
        let mut kv = Kv {
            arrays: layout.into_arrays(),
            shape,
            buckets_va,
            meta_va: heap,
            values_va: heap.add(shape.values_offset()),
            newer,
            hash_seed,
            offset_seed: (shape.value_stride > size_class(size)).then(|| mix64(cfg.seed ^ 0x6a65_6d61_6c6c_6f63)),
            value_span: size.div_ceil(64) * 64,
            value_lines: prefix.div_ceil(64),
            get_threshold: (cfg.get_ratio * 18_446_744_073_709_551_616.0) as u64,
            all_gets: cfg.get_ratio >= 1.0,
            chooser: KeyChooser::new(cfg.distribution, shape.objects, cfg, mix64(cfg.seed ^ 0x7363)),
            rng: rng_for(cfg.seed, 0x6b76),
            ahead: [(0, false); LOOKAHEAD],
            ahead_pos: 0,
            ops_done: 0,
        };
        for i in 0..LOOKAHEAD {
            kv.ahead[i] = kv.draw_operation();
        }
        kv
    }

    /// The key of the next operation and whether it is a GET.
    fn draw_operation(&mut self) -> (u32, bool) {
        let key = self.chooser.next(&mut self.rng) as u32;
        let is_get = self.all_gets || self.rng.next_u64() < self.get_threshold;
        prefetch(&self.newer, key as usize);
        (key, is_get)
    }

    #[inline]
    fn bucket_of(&self, key: u64) -> u64 {
        mix64(key ^ self.hash_seed) & (self.shape.buckets - 1)
    }

    fn entry_va(&self, key: u64) -> VirtAddr {
        self.meta_va.add(key * META_BYTES)
    }

    fn value_va(&self, key: u64) -> VirtAddr {
        self.values_va.add(key * self.shape.value_stride + self.value_offset(key))
    }

    /// Where a value starts in its extent: jemalloc's random cache line of
    /// the first page (`prng_lg_range_zu(.., LG_PAGE - LG_CACHELINE)`).
    fn value_offset(&self, key: u64) -> u64 {
        self.offset_seed.map_or(0, |seed| (mix64(key ^ seed) & 63) * 64)
    }

    /// Whether the value's extent has a byte at `at` (an offset in the
    /// extent) on a page the value reaches.
    fn reaches_page(&self, key: u64, at: u64) -> bool {
        let (page, start) = (at & !4095, self.value_offset(key));
        page < start + self.value_span && page + 4096 > start
    }

    /// The pages of the heap no operation and no load touch (the extents'
    /// pad pages under `cache_oblivious`), as 512-bit masks by 2 MiB
    /// region (the address shifted right by 21), regions in order.
    pub(crate) fn untouched_pages(&self) -> Vec<(u64, [u64; 8])> {
        let mut masks: Vec<(u64, [u64; 8])> = Vec::new();
        if self.offset_seed.is_none() {
            return masks;
        }
        let stride = self.shape.value_stride;
        for key in 0..self.shape.objects {
            let extent = self.values_va.raw() + key * stride;
            for at in (0..stride).step_by(4096).filter(|&at| !self.reaches_page(key, at)) {
                let page = (extent + at) >> 12;
                let region = page >> 9;
                if masks.last().is_none_or(|m| m.0 != region) {
                    masks.push((region, [0; 8]));
                }
                let m = &mut masks.last_mut().expect("pushed").1;
                m[(page as usize & 511) / 64] |= 1 << (page & 63);
            }
        }
        masks
    }

    /// One GET or SET: the lookup's dependent loads, then the value.
    fn operation(&mut self, out: &mut Vec<Access>) {
        let (key, is_get) = self.ahead[self.ahead_pos];
        self.ahead[self.ahead_pos] = self.draw_operation();
        self.ahead_pos = (self.ahead_pos + 1) % LOOKAHEAD;
        let key = key as u64;
        let bucket = self.bucket_of(key);
        // The bucket comes from the key's hash (independent); every later
        // load follows a pointer the previous one read.
        out.push(Access::load(self.buckets_va.add(bucket * 8), 8, REQUEST_INSTRS).at(BUCKET_SITE));
        // From k towards the head, key compare before entry, then reversed:
        // head first, each entry's load before its key's.
        let walk_start = out.len();
        let mut e = key as u32;
        while e != NONE {
            let entry = self.entry_va(e as u64);
            out.push(Access::load(entry.add(32), 8, KEY_COMPARE_INSTRS).at(Site::pc(2).dependent()));
            out.push(Access::load(entry, 8, ENTRY_INSTRS).at(Site::pc(3).dependent()));
            e = self.newer[e as usize];
        }
        out[walk_start..].reverse();
        let value = self.value_va(key);
        if is_get {
            out.push(Access::store(value, 8, 2).at(Site::pc(4).dependent()));
            for line in 0..self.value_lines {
                out.push(Access::load(value.add(line * 64), 8, COPY_LINE_INSTRS).at(Site::pc(5)));
            }
        } else {
            for line in 0..self.value_lines {
                out.push(Access::store(value.add(line * 64), 8, COPY_LINE_INSTRS).at(Site::pc(6)));
            }
        }
    }
}

/// Inserts keys 0..n in order, each at the head of its bucket's chain, and
/// returns the `newer` links (see `Kv::newer`).
fn build_chains(shape: &KvShape, hash_seed: u64) -> Vec<u32> {
    let mut head = vec![NONE; shape.buckets as usize];
    let mut newer = vec![NONE; shape.objects as usize];
    for key in 0..shape.objects {
        let b = (mix64(key ^ hash_seed) & (shape.buckets - 1)) as usize;
        if head[b] != NONE {
            newer[head[b] as usize] = key as u32;
        }
        head[b] = key as u32;
    }
    newer
}

impl Generator for Kv {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    /// The load writes every page but the extents' pad pages.
    fn init_touches(&mut self, addr: VirtAddr) -> bool {
        let Some(rel) = addr.raw().checked_sub(self.values_va.raw()) else {
            return true;
        };
        let key = rel / self.shape.value_stride;
        self.offset_seed.is_none() || key >= self.shape.objects || self.reaches_page(key, rel % self.shape.value_stride)
    }

    fn untouched_pages(&self) -> Vec<(u64, [u64; 8])> {
        Kv::untouched_pages(self)
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.ops_done == self.shape.objects {
                return false;
            }
            self.operation(out);
            self.ops_done += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.ops_done = 0;
    }

    /// A request (a GET or a SET) begins at its bucket load, which
    /// carries the request's parsing and hashing (`REQUEST_INSTRS`).
    fn request_site(&self) -> Option<Site> {
        Some(BUCKET_SITE)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{AccessKind, InitMode, KeyDistribution, WorkloadKind};
    use super::*;
    use crate::units::ByteSize;

    fn kv_config(objects: u64, size: u64) -> WorkloadConfig {
        let mut cfg = small_config(WorkloadKind::Kv, 1);
        cfg.init = InitMode::None;
        cfg.objects = Some(objects);
        cfg.object_size = ByteSize(size);
        cfg
    }

    #[test]
    fn size_classes_like_jemalloc() {
        assert_eq!(size_class(24), 32);
        assert_eq!(size_class(100), 112);
        assert_eq!(size_class(129), 160);
        assert_eq!(size_class(300), 320);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(size_class(16384), 16384);
        assert_eq!(size_class(16385), 20480);
    }

    #[test]
    fn shape_from_footprint_fits() {
        let s = KvShape::from_footprint(1 << 30, size_class(1000)).unwrap();
        assert!(s.footprint() <= 1 << 30);
        assert!(KvShape::new(s.objects + 1, size_class(1000)).footprint() > 1 << 30);
        // 1 GiB / (64 + 1024 + 8 MiB of buckets spread) ~ 979k keys.
        assert!((975_000..985_000).contains(&s.objects), "{}", s.objects);
        assert_eq!(KvShape::from_footprint(4096, size_class(1 << 20)), None);
    }

    #[test]
    fn a_get_of_a_single_key_by_hand() {
        // One key of 256 B: bucket array of one pointer, heap = one page of
        // metadata, then the value.
        let mut cfg = kv_config(1, 256);
        cfg.get_ratio = 1.0;
        cfg.accesses = 8;
        let all = collect(&cfg, usize::MAX);
        let arrays = mapped_arrays(&all);
        let (heap, buckets) = (arrays[0].start.raw(), arrays[1].start.raw());
        assert_eq!(arrays[0].len, 4096 + 4096);
        let got: Vec<(u64, AccessKind, u32)> = all.accesses.iter().map(|a| (a.vaddr.raw(), a.kind, a.instrs)).collect();
        let value = heap + 4096;
        assert_eq!(
            got,
            [
                (buckets, AccessKind::Load, REQUEST_INSTRS),
                (heap, AccessKind::Load, ENTRY_INSTRS),
                (heap + 32, AccessKind::Load, KEY_COMPARE_INSTRS),
                (value, AccessKind::Store, 2),
                (value, AccessKind::Load, 4),
                (value + 64, AccessKind::Load, 4),
                (value + 128, AccessKind::Load, 4),
                (value + 192, AccessKind::Load, 4),
            ]
        );
    }

    #[test]
    fn cache_oblivious_extents_leave_a_redis_value_one_untouched_page_in_six() {
        // A 16 KiB Redis value is an sds of 16,390 bytes: class 20 KiB, and
        // the pad page makes its extent 24 KiB. Starting at a random line
        // of the first page (offset <= 4032), its 257 lines end by 20,480:
        // pages 0-4 of the extent are touched, page 5 never.
        assert_eq!((value_stride(16390, false), value_stride(16390, true)), (20480, 24576));
        assert_eq!(value_stride(1000, true), 1024, "small classes take no pad page");
        let mut cfg = kv_config(24, 16390);
        (cfg.cache_oblivious, cfg.init, cfg.get_ratio, cfg.accesses) = (true, InitMode::Pages, 0.5, 20_000);
        let all = collect(&cfg, usize::MAX);
        let heap = mapped_arrays(&all)[0];
        let values = heap.start.raw() + 4096;
        let pad: Vec<u64> = (0..24).map(|k| (values + k * 24576 + 20480) >> 12).collect();
        let touched: std::collections::BTreeSet<u64> = all.accesses.iter().map(|a| a.vaddr.raw() >> 12).collect();
        let heap_pages = (heap.start.raw() >> 12)..((heap.start.raw() + heap.len) >> 12);
        assert_eq!(heap.len, 4096 + 24 * 24576);
        for p in heap_pages.clone() {
            assert_eq!(touched.contains(&p), !pad.contains(&p), "page {p:#x}");
        }
        // The declared masks name exactly the pad pages.
        let declared: Vec<u64> = Kv::new(&cfg)
            .untouched_pages()
            .iter()
            .flat_map(|&(r, m)| {
                (0..512u64).filter(move |&i| m[i as usize / 64] >> (i % 64) & 1 == 1).map(move |i| r << 9 | i)
            })
            .collect();
        assert_eq!(declared, pad);
        // The values start at lines of their first page, not all at 0.
        let starts: std::collections::BTreeSet<u64> = (0..24).map(|k| Kv::new(&cfg).value_offset(k)).collect();
        assert!(starts.len() > 1 && starts.iter().all(|&o| o % 64 == 0 && o < 4096));
        cfg.cache_oblivious = false;
        assert!(Kv::new(&cfg).untouched_pages().is_empty());
    }

    /// Splits a run into operations (each starts with a bucket load) and
    /// checks each walks a chain ending at the key whose value it touches.
    #[test]
    fn every_lookup_ends_at_the_key_it_reads() {
        let mut cfg = kv_config(5000, 300);
        cfg.distribution = KeyDistribution::Uniform;
        cfg.get_ratio = 0.5;
        cfg.accesses = 50_000;
        let all = collect(&cfg, usize::MAX);
        let arrays = mapped_arrays(&all);
        let (heap, buckets) = (arrays[0], arrays[1]);
        let values = heap.start.raw() + round_page(5000 * 64);
        let mut ops = 0;
        let mut chain_loads = 0;
        let accesses = &all.accesses;
        let mut i = 0;
        while i < accesses.len() {
            assert!(buckets.contains(accesses[i].vaddr, 8), "op {ops} does not start at a bucket");
            let mut j = i + 1;
            while j < accesses.len() && accesses[j].vaddr.raw() < values {
                j += 2;
            }
            if j + 6 > accesses.len() {
                break; // the budget cut the last operation
            }
            let key = (accesses[j - 1].vaddr.raw() - 32 - heap.start.raw()) / 64;
            assert_eq!(accesses[j].vaddr.raw(), values + key * 320, "op {ops}");
            chain_loads += (j - i - 1) / 2;
            let lines = if accesses[j].kind == AccessKind::Store && accesses[j + 1].vaddr == accesses[j].vaddr {
                6 // GET: the LRU store then 5 line loads
            } else {
                5
            };
            i = j + lines;
            ops += 1;
        }
        // 5000 keys in 8192 buckets: a found key has ~1.3 entries to walk.
        let mean = chain_loads as f64 / ops as f64;
        assert!((1.1..1.5).contains(&mean), "mean chain walk {mean}");
    }

    /// Each operation has exactly one access at the request site, its
    /// first: the bucket load, and no other access of kv uses the site.
    #[test]
    fn each_operation_begins_with_its_one_request_site_access() {
        let mut cfg = kv_config(2000, 300);
        (cfg.get_ratio, cfg.accesses) = (0.5, 30_000);
        let all = collect(&cfg, usize::MAX);
        let site = Kv::new(&cfg).request_site().expect("kv serves requests");
        let buckets = mapped_arrays(&all)[1];
        let starts: Vec<usize> = (0..all.accesses.len()).filter(|&j| all.accesses[j].site == site).collect();
        assert_eq!(starts[0], 0, "the first access begins a request");
        for &j in &starts {
            let a = &all.accesses[j];
            assert!(buckets.contains(a.vaddr, 8) && a.instrs == REQUEST_INSTRS, "access {j}");
        }
        // Between two starts: one operation's chain, value store and lines,
        // none of them at the site.
        for w in starts.windows(2) {
            let op = &all.accesses[w[0] + 1..w[1]];
            assert!(op.len() >= 3 && op.iter().all(|a| !buckets.contains(a.vaddr, 8)), "op at {}", w[0]);
        }
        let ops = all.accesses.iter().filter(|a| a.instrs == REQUEST_INSTRS).count();
        assert_eq!(starts.len(), ops);
    }

    #[test]
    fn hotspot_keys_cluster_in_the_earliest_values() {
        let mut cfg = kv_config(10_000, 1000);
        cfg.distribution = KeyDistribution::Hotspot;
        cfg.get_ratio = 1.0;
        cfg.value_prefix = ByteSize(64);
        cfg.accesses = 200_000;
        let all = collect(&cfg, usize::MAX);
        let heap = mapped_arrays(&all)[0].start.raw();
        let values = heap + round_page(10_000 * 64);
        let hot_end = values + 2000 * 1024;
        let reads: Vec<u64> = all
            .accesses
            .iter()
            .filter(|a| a.kind == AccessKind::Load && a.vaddr.raw() >= values)
            .map(|a| a.vaddr.raw())
            .collect();
        let hot = reads.iter().filter(|&&v| v < hot_end).count() as f64 / reads.len() as f64;
        assert!((hot - 0.8).abs() < 0.01, "{hot}");
    }

    #[test]
    fn set_ratio_follows_get_ratio() {
        let mut cfg = kv_config(1000, 64);
        cfg.get_ratio = 0.75;
        cfg.accesses = 0;
        let all = collect(&cfg, usize::MAX);
        // A natural run is `objects` operations, each with one LRU store
        // (GET) or one value store (SET): 1000 stores in all.
        let stores = all.count(AccessKind::Store);
        assert_eq!(stores, 1000);
        let buckets = all.accesses.iter().filter(|a| a.instrs == REQUEST_INSTRS).count();
        assert_eq!(buckets, 1000);
        let loads_after_store = all
            .accesses
            .windows(2)
            .filter(|w| w[0].kind == AccessKind::Store && w[1].kind == AccessKind::Load && w[1].vaddr == w[0].vaddr);
        let gets = loads_after_store.count() as f64;
        assert!((gets / 1000.0 - 0.75).abs() < 0.05, "{gets}");
    }
}
