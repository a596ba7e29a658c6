//! Workload generators: synthetic stand-ins for the papers' benchmarks
//! (GUPS, STREAM, strided and pointer-chasing microbenchmarks, a Redis-like
//! key-value store under YCSB, GAPBS graph kernels, a sparse "hot bloat"
//! toucher, and the Elastic Translations artifact's hash join probe,
//! liblinear SVM training and XSBench lookups). Each file says at its top which facts of
//! `reference/workloads.md` it keeps and what it simplifies.
//!
//! # Contract with the engine
//!
//! The engine calls [`Workload::next_batch`] once per batch (dynamic dispatch
//! per batch, never per access). A batch holds accesses and the mapping
//! events that apply before them. Every generator:
//!
//! 1. first emits one [`MapEvent::Mmap`] per array it allocates (the real
//!    program's allocations), before any access to it;
//! 2. then runs the *init pass* ([`InitMode`]): one store per 4 KiB page
//!    (`"pages"`, the default) or per 64-byte line (`"lines"`) of each array,
//!    arrays in allocation order, pages in address order, like a program
//!    initialising its memory, so the page faults happen there and not in
//!    the measured loop (`"none"` skips it). The init pass counts as
//!    accesses but not against `workload.accesses`; `run.warmup` is how a
//!    user excludes it from statistics;
//! 3. then streams `workload.accesses` data accesses, never materialised:
//!    host memory holds only what the real program's data structure needs
//!    (a graph's CSR, a hash table's chains).
//!
//! `workload.accesses = 0` means "the benchmark's own run length" (GAPBS bfs
//! over `sources` sources, pr to tolerance, one cc, one tc; HPCC's 4 updates
//! per table word; ten STREAM passes...); each generator states its own.
//! Otherwise a generator whose natural run ends before the budget starts
//! another run (next bfs sources, PageRank again from scratch...).
//!
//! # Virtual layout
//!
//! Arrays are placed top-down from `0x7f00_0000_0000`, as Linux's top-down
//! mmap allocator does, each start 2 MiB-aligned and a 2 MiB gap between
//! arrays. Linux >= 6.7 aligns large anonymous mappings to PMD size ("mm:
//! align larger anonymous mappings on THP boundaries"), which is what lets
//! THP back them with huge pages from the first byte; 6.12 narrowed it to
//! lengths that are multiples of 2 MiB ("mm, mmap: limit THP alignment of
//! anonymous mappings to PMD-aligned sizes"), a distinction not modelled:
//! every array here starts aligned. The gap keeps a huge page of one array
//! from ever covering another.
//!
//! Determinism: every random choice comes from `Xoshiro256PlusPlus` seeded
//! from `workload.seed`, so two builds with the same configuration emit the
//! same batches.

mod blackscholes;
mod config;
mod driver;
mod file_read;
mod graph;
mod gups;
mod hashjoin;
mod host;
mod img_dnn;
mod kv;
mod permute;
mod pgsql_join;
mod pointer_chase;
mod raytrace;
mod sparse;
mod stream;
mod stride;
mod svm;
mod water_spatial;
mod xapian;
mod xsbench;
mod zipf;

pub use config::{
    After, FastForwardMode, GraphKernel, HotLayout, InitMode, KeyDistribution, TraceFormat, WorkloadConfig,
    WorkloadKind,
};
pub use graph::Csr;
pub use host::{host_need, HostNeed};
pub use permute::Permutation;
pub use zipf::{Hotspot, KeyChooser, Zipfian};

use crate::error::Result;
use crate::units::VirtAddr;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// What an access does. `#[repr(u8)]` keeps [`Access`] at 16 bytes.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load = 0,
    Store = 1,
    IFetch = 2,
}

/// One memory access of the simulated program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub vaddr: VirtAddr,
    pub kind: AccessKind,
    /// Bytes accessed (1..=64); an access never crosses a cache line here.
    pub size: u8,
    /// The instruction that makes the access and whether its address waits
    /// for a load's data: what the interval core model and the stride
    /// prefetcher read. It sits in what were the struct's two padding
    /// bytes, so an access stays 16 bytes.
    pub site: Site,
    /// Instructions retired since the previous access, including the one
    /// making this access (>= 1).
    pub instrs: u32,
}

/// Where an access comes from, in 16 bits: a 15-bit tag of the program
/// counter of the instruction that makes it (0 = unknown), and one bit that
/// says its address is computed from the data of the most recent earlier
/// load (a pointer chase's next node, a graph's `parent[v]` after
/// `v = neigh[e]`). Only the most recent load is named: a load that depends
/// on an older one is marked as depending on the latest, which in the
/// generators' kernels is the same load or one on the same line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Site(u16);

impl Site {
    /// No program counter known, address independent of earlier loads.
    pub const NONE: Site = Site(0);
    const DEPENDENT: u16 = 1 << 15;
    const PC_MASK: u16 = Self::DEPENDENT - 1;

    /// The site of the instruction at `pc`: generators number their own
    /// access sites 1, 2, ...; traces give the instruction's address, folded
    /// into 15 bits (two addresses may share a tag, as two instructions may
    /// share a prefetcher's table entry in hardware).
    #[inline]
    pub const fn pc(pc: u64) -> Site {
        Site(((pc ^ pc >> 15 ^ pc >> 30 ^ pc >> 45) as u16) & Self::PC_MASK)
    }

    /// The same site, its address waiting for the previous load's data.
    #[inline]
    pub const fn dependent(self) -> Site {
        Site(self.0 | Self::DEPENDENT)
    }

    /// Whether the address waits for the previous load's data.
    #[inline]
    pub const fn is_dependent(self) -> bool {
        self.0 & Self::DEPENDENT != 0
    }

    /// This site's dependence with `other`'s program-counter tag.
    #[inline]
    pub const fn with_pc_of(self, other: Site) -> Site {
        Site(self.0 & Self::DEPENDENT | other.0 & Self::PC_MASK)
    }

    /// The program-counter tag (0 = unknown).
    #[inline]
    pub const fn pc_tag(self) -> u16 {
        self.0 & Self::PC_MASK
    }
}

impl Access {
    #[inline]
    pub const fn load(vaddr: VirtAddr, size: u8, instrs: u32) -> Self {
        Access { vaddr, kind: AccessKind::Load, size, site: Site::NONE, instrs }
    }
    #[inline]
    pub const fn store(vaddr: VirtAddr, size: u8, instrs: u32) -> Self {
        Access { vaddr, kind: AccessKind::Store, size, site: Site::NONE, instrs }
    }
    /// The same access made at `site`.
    #[inline]
    pub const fn at(self, site: Site) -> Self {
        Access { site, ..self }
    }
}

/// A change to the address space, as the program's mmap/munmap/mprotect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapEvent {
    Mmap { start: VirtAddr, len: u64, writable: bool, name: String },
    Munmap { start: VirtAddr, len: u64 },
    Mprotect { start: VirtAddr, len: u64, writable: bool },
}

/// What one [`Workload::next_batch`] call appends to. The engine clears it
/// between calls ([`Batch::clear`]); generators only push.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    pub accesses: Vec<Access>,
    /// `(i, event)`: the event applies before `accesses[i]` (`i ==
    /// accesses.len()` means after the last access of the batch).
    pub events: Vec<(u32, MapEvent)>,
    /// Instructions after the last access (compute with no memory access).
    /// Generators attribute compute to the next access's `instrs`, so this
    /// is non-zero only for trailing compute at the very end of a run.
    pub trailing_instrs: u64,
}

impl Batch {
    pub fn with_capacity(accesses: usize) -> Self {
        Batch { accesses: Vec::with_capacity(accesses), ..Batch::default() }
    }
    pub fn clear(&mut self) {
        self.accesses.clear();
        self.events.clear();
        self.trailing_instrs = 0;
    }
}

/// A stream of accesses with the mapping events it needs.
pub trait Workload: Send {
    fn name(&self) -> &str;
    /// Appends up to `max_accesses` accesses (and their events) to `batch`.
    /// Returns false when the workload is exhausted; the batch may still hold
    /// its last records then.
    fn next_batch(&mut self, batch: &mut Batch, max_accesses: usize) -> bool;
    /// Bytes of virtual memory the workload maps.
    fn footprint(&self) -> u64;
    /// Whether the batch `next_batch` last returned belongs to the
    /// initialisation pass. A generator ends its last init batch at the
    /// boundary, so a batch is either all init or all measured accesses
    /// (`run.skip_init` relies on it). Workloads without an init pass
    /// (traces) keep the default.
    fn batch_is_init(&self) -> bool {
        false
    }
    /// Whether the batch last handed out is fast-forwarded functionally
    /// (`workload.fast_forward_mode = "functional"`): the engine runs it
    /// through the OS only. Such batches come between the init pass and
    /// the measured accesses, and never mix with either.
    fn batch_is_fast_forward(&self) -> bool {
        false
    }
    /// Whether the workload's mapping events describe only some of the
    /// memory it touches: a program captured under Valgrind records its
    /// mmap/munmap/brk calls, but not what exec mapped before it ran (the
    /// binary, the dynamic loader, the stack, the initial heap). Under
    /// `os.auto_vma = "auto"` such a workload keeps automatic VMAs for
    /// touches outside every mapping, beside its events; a workload with
    /// complete events (a generator, the default) switches them off with
    /// its first event.
    fn partial_mappings(&self) -> bool {
        false
    }
    /// The accesses the workload will hand out in all, when it knows
    /// before running: an uncompressed native trace reads its end record;
    /// a generator with `workload.accesses` set adds its init stores.
    /// None: unknown (other traces, a generator's natural run length).
    /// Only progress reports use it.
    fn total_accesses(&self) -> Option<u64> {
        None
    }
    /// Why the workload ended early, if it did: a trace reader that met a
    /// corrupt or truncated file returns false from `next_batch`, then the
    /// `Error::Trace` here. Generators never fail.
    fn take_error(&mut self) -> Option<crate::error::Error> {
        None
    }
    /// Leaves the pages `untouched` names alone: the program never touches
    /// them (a fragmentation scenario's unallocated holes, which the
    /// program freed or never used). Called once, before the first batch.
    /// Returns whether the workload honours it; the default does not (it
    /// touches what it touches, and a touched hole is backed then).
    fn leave_untouched(&mut self, _untouched: &UntouchedPages<'_>) -> bool {
        false
    }
    /// The pages of its arrays the program itself never touches (an
    /// allocator's pad pages), by 2 MiB region as in [`UntouchedPages`],
    /// regions in order; empty when it touches them all. The kernel keeps
    /// them as the process's declared untouched pages.
    fn untouched_pages(&self) -> Vec<(u64, [u64; 8])> {
        Vec::new()
    }
    /// The files the program reads, each through a read-only window of
    /// its address space (`os::page_cache`); empty for most programs.
    fn file_windows(&self) -> Vec<crate::os::FileWindow> {
        Vec::new()
    }
    /// The site whose every access begins one request, for a program that
    /// serves requests (a key-value store's bucket load, a search engine's
    /// query parse): the engine measures each request's cycles from one
    /// such access to the next. None: the program is not request-structured.
    /// A site and not a mark on the access, so requests survive any cut of
    /// the stream into batches and a trace needs no new field.
    fn request_site(&self) -> Option<Site> {
        None
    }
}

/// The pages a program never touches, by 2 MiB region (the virtual
/// address shifted right by 21): a 512-bit mask of the region's untouched
/// pages (page i is bit i % 64 of word i / 64), or `None` when it may
/// touch them all.
pub type UntouchedPages<'a> = dyn Fn(u64) -> Option<[u64; 8]> + 'a;

/// Builds the generator `cfg.kind` after validating `cfg`; errors name keys
/// as `{key_prefix}.<key>` (key_prefix is normally `"workload"`). A trace
/// is not a generator: `engine::build_workload` builds either (the trace
/// readers sit in the layer above this one).
pub fn build_generator(cfg: &WorkloadConfig, key_prefix: &str) -> Result<Box<dyn Workload>> {
    cfg.validate(key_prefix)?;
    if cfg.kind == WorkloadKind::Trace {
        return Err(crate::error::Error::config(format!("{key_prefix}.kind"), "a trace is read, not generated"));
    }
    let name = cfg.name.clone().unwrap_or_else(|| cfg.kind.as_str().to_string());
    let run = driver::RunPlan {
        name,
        // A file read is its array's first touch (`file_read.rs`).
        init: if cfg.kind == WorkloadKind::FileRead { InitMode::None } else { cfg.init },
        accesses: cfg.accesses,
        fast_forward: cfg.fast_forward,
        skip_kernel_init: cfg.skip_kernel_init,
        functional: cfg.fast_forward_mode == FastForwardMode::Functional,
        instructions_per_access: cfg.instructions_per_access,
    };
    Ok(match cfg.kind {
        WorkloadKind::Gups => driver::Driven::boxed(run, gups::Gups::new(cfg)),
        WorkloadKind::Stream => driver::Driven::boxed(run, stream::Stream::new(cfg)),
        WorkloadKind::Stride => driver::Driven::boxed(run, stride::Stride::new(cfg)),
        WorkloadKind::PointerChase => driver::Driven::boxed(run, pointer_chase::PointerChase::new(cfg)),
        WorkloadKind::Kv => driver::Driven::boxed(run, kv::Kv::new(cfg)),
        WorkloadKind::Graph => driver::Driven::boxed(run, graph::GraphWorkload::new(cfg)),
        WorkloadKind::Sparse => driver::Driven::boxed(run, sparse::Sparse::new(cfg)),
        WorkloadKind::FileRead => driver::Driven::boxed(run, file_read::FileRead::new(cfg)),
        WorkloadKind::HashJoin => driver::Driven::boxed(run, hashjoin::HashJoin::new(cfg)),
        WorkloadKind::Svm => driver::Driven::boxed(run, svm::Svm::new(cfg)),
        WorkloadKind::XsBench => driver::Driven::boxed(run, xsbench::XsBench::new(cfg)),
        WorkloadKind::Xapian => driver::Driven::boxed(run, xapian::Xapian::new(cfg)),
        WorkloadKind::Blackscholes => driver::Driven::boxed(run, blackscholes::Blackscholes::new(cfg)),
        WorkloadKind::PgsqlJoin => driver::Driven::boxed(run, pgsql_join::PgsqlJoin::new(cfg)),
        WorkloadKind::ImgDnn => driver::Driven::boxed(run, img_dnn::ImgDnn::new(cfg)),
        WorkloadKind::WaterSpatial => driver::Driven::boxed(run, water_spatial::WaterSpatial::new(cfg)),
        WorkloadKind::Raytrace => driver::Driven::boxed(run, raytrace::Raytrace::new(cfg)),
        WorkloadKind::Trace => unreachable!("traces are refused above"),
    })
}

/// One allocation of the simulated program: a VMA of `len` bytes (a whole
/// number of pages) at a 2 MiB-aligned `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    pub name: &'static str,
    pub start: VirtAddr,
    pub len: u64,
}

impl Array {
    pub fn contains(&self, addr: VirtAddr, size: u64) -> bool {
        addr >= self.start && addr.raw() + size <= self.start.raw() + self.len
    }
}

/// Top of the area arrays are placed under (see the module comment).
pub const LAYOUT_TOP: u64 = 0x7f00_0000_0000;
const HUGE: u64 = 2 << 20;
const PAGE: u64 = 4096;

/// Places arrays top-down from [`LAYOUT_TOP`], 2 MiB-aligned, 2 MiB apart;
/// or, with an alignment (`workload.align`), aligned to it, that far apart
/// and with lengths rounded up to it.
#[derive(Debug)]
pub(crate) struct Layout {
    cursor: u64,
    arrays: Vec<Array>,
    align: Option<u64>,
}

impl Layout {
    pub(crate) fn new() -> Self {
        Layout { cursor: LAYOUT_TOP, arrays: Vec::new(), align: None }
    }

    /// The layout `cfg.align` asks for.
    pub(crate) fn of(cfg: &WorkloadConfig) -> Self {
        Layout { align: cfg.align.map(|a| a.bytes()), ..Layout::new() }
    }

    /// Maps `bytes` (rounded up to pages, at least one page, or to the
    /// alignment) and returns the start. E.g. the first 2 MiB array lands
    /// at 0x7eff_ffe0_0000 and the next one ends 2 MiB below that.
    pub(crate) fn place(&mut self, name: &'static str, bytes: u64) -> VirtAddr {
        let (unit, align) = self.align.map_or((PAGE, HUGE), |a| (a, a));
        let len = bytes.max(1).div_ceil(unit) * unit;
        let start = (self.cursor - len) & !(align - 1);
        self.cursor = start - align;
        self.arrays.push(Array { name, start: VirtAddr::new(start), len });
        VirtAddr::new(start)
    }

    pub(crate) fn into_arrays(self) -> Vec<Array> {
        self.arrays
    }
}

/// The generator of one purpose (`stream` distinguishes key hashing from
/// operation choice...) for a workload seed.
pub(crate) fn rng_for(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// Uniform in `[0, n)` from one 64-bit draw (Lemire's multiply-shift; the
/// bias is below 2^-32 for every n a workload uses).
#[inline]
pub(crate) fn below(random: u64, n: u64) -> u64 {
    ((random as u128 * n as u128) >> 64) as u64
}

/// Uniform in `[0, 1)` with 53 bits.
#[inline]
pub(crate) fn unit_f64(random: u64) -> f64 {
    (random >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// splitmix64's finaliser: a cheap, well-mixing 64-bit hash.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Hints the host CPU to fetch `slice[index]` into its cache. Generators
/// whose host data structure is as large and randomly read as the simulated
/// program's (kv chains) issue it a few operations ahead.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = slice.get(index) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint: it never faults, never changes
        // memory, and the pointer is to a live element anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(item as *const T as *const i8) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}

/// Whether a data access that may write does: `write_fraction` as a
/// threshold on one random draw, with no draw at 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteMix {
    Never,
    Always,
    Sometimes(u64),
}

impl WriteMix {
    pub(crate) fn new(fraction: f64) -> Self {
        if fraction <= 0.0 {
            WriteMix::Never
        } else if fraction >= 1.0 {
            WriteMix::Always
        } else {
            WriteMix::Sometimes((fraction * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    #[inline]
    pub(crate) fn is_store(self, rng: &mut Xoshiro256PlusPlus) -> bool {
        match self {
            WriteMix::Never => false,
            WriteMix::Always => true,
            WriteMix::Sometimes(threshold) => rng.next_u64() < threshold,
        }
    }

    #[inline]
    pub(crate) fn kind(self, rng: &mut Xoshiro256PlusPlus) -> AccessKind {
        if self.is_store(rng) {
            AccessKind::Store
        } else {
            AccessKind::Load
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil;

/// The least `n` in `(lo, hi]` for which `holds(n)`, by bisection: `holds`
/// must be monotone (false up to some point, true from there on), false at
/// `lo` (not evaluated) and true at `hi`. Workload shapes use it to find
/// the largest shape a footprint holds, or the least footprint a shape needs.
pub(crate) fn first_true(mut lo: u64, mut hi: u64, holds: impl Fn(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn access_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Access>(), 16);
    }

    #[test]
    fn a_site_keeps_its_pc_tag_and_dependence_apart() {
        let s = Site::pc(3);
        assert_eq!((s.pc_tag(), s.is_dependent()), (3, false));
        let d = s.dependent();
        assert_eq!((d.pc_tag(), d.is_dependent()), (3, true));
        // A trace's instruction address folds into 15 bits.
        assert!(Site::pc(0x7fff_1234_5678).pc_tag() < 1 << 15);
        assert_eq!(Access::load(VirtAddr::new(64), 8, 1).site, Site::NONE);
    }

    #[test]
    fn an_aligned_layout_places_hugetlbfs_like_mappings() {
        // 32 MiB pages: 40 MiB rounds up to 64 MiB, starting on a 32 MiB
        // boundary below the top; the next array (1 byte: one 32 MiB page)
        // starts a 32 MiB gap below.
        let cfg = WorkloadConfig { align: Some(crate::units::ByteSize(32 << 20)), ..Default::default() };
        let mut layout = Layout::of(&cfg);
        let a = layout.place("a", 40 << 20);
        let b = layout.place("b", 1);
        assert_eq!(a.raw(), 0x7eff_fc00_0000);
        assert_eq!(b.raw(), 0x7eff_f800_0000);
        let arrays = layout.into_arrays();
        assert_eq!((arrays[0].len, arrays[1].len), (64 << 20, 32 << 20));
        // Unset, the layout is the 2 MiB one.
        let mut plain = Layout::of(&WorkloadConfig::default());
        assert_eq!(plain.place("a", 40 << 20).raw(), 0x7f00_0000_0000 - (40 << 20));
    }

    #[test]
    fn layout_places_top_down_aligned_with_gaps() {
        let mut layout = Layout::new();
        let a = layout.place("a", 2 << 20);
        let b = layout.place("b", 5000);
        let c = layout.place("c", 3 << 20);
        assert_eq!(a.raw(), 0x7eff_ffe0_0000);
        // b: 8 KiB ending at most 2 MiB below a, aligned down to 2 MiB.
        assert_eq!(b.raw(), 0x7eff_ffa0_0000);
        // c: 3 MiB below b's 2 MiB gap, aligned down: 0x7eff_ff80_0000 - 3 MiB
        // = 0x7eff_ff50_0000, aligned to 0x7eff_ff40_0000.
        assert_eq!(c.raw(), 0x7eff_ff40_0000);
        let arrays = layout.into_arrays();
        assert_eq!(arrays[1].len, 8192);
        for w in arrays.windows(2) {
            assert!(w[1].start.raw() + w[1].len + (2 << 20) <= w[0].start.raw());
        }
    }

    #[test]
    fn write_mix_respects_fraction() {
        let mut rng = rng_for(1, 0);
        let mix = WriteMix::new(0.25);
        let stores = (0..100_000).filter(|_| mix.is_store(&mut rng)).count();
        assert!((24_000..26_000).contains(&stores), "{stores}");
        assert!(!WriteMix::new(0.0).is_store(&mut rng));
        assert!(WriteMix::new(1.0).is_store(&mut rng));
    }

    #[test]
    fn every_kind_is_deterministic_per_seed() {
        for kind in ALL_KINDS {
            let cfg = small_config(kind, 1);
            let a = collect(&cfg, 20_000);
            let b = collect(&cfg, 20_000);
            assert_eq!(a.accesses, b.accesses, "{kind:?}");
            assert_eq!(a.events, b.events, "{kind:?}");
            let other = collect(&small_config(kind, 2), 20_000);
            let unseeded =
                [WorkloadKind::Stream, WorkloadKind::Blackscholes, WorkloadKind::ImgDnn, WorkloadKind::WaterSpatial];
            if !unseeded.contains(&kind) {
                // stream, blackscholes and img-dnn have no randomness at all;
                // water-spatial's first 20,000 accesses are its predictor's.
                assert_ne!(a.accesses, other.accesses, "{kind:?} ignores its seed");
            }
        }
    }

    #[test]
    fn every_kind_maps_before_touching_and_stays_inside() {
        for kind in ALL_KINDS {
            for init in [InitMode::Pages, InitMode::Lines, InitMode::None] {
                let mut cfg = small_config(kind, 7);
                cfg.init = init;
                let batches = collect_batches(&cfg, 7_777);
                check_mapped(&batches, &format!("{kind:?} {init:?}"));
            }
        }
    }

    #[test]
    fn budget_counts_measured_accesses_only() {
        for kind in ALL_KINDS {
            let mut cfg = small_config(kind, 3);
            cfg.init = InitMode::None;
            cfg.accesses = 12_345;
            let all = collect(&cfg, usize::MAX);
            assert_eq!(all.accesses.len(), 12_345, "{kind:?}");
            let mut with_init = cfg.clone();
            with_init.init = InitMode::Pages;
            let w = build_generator(&with_init, "workload").unwrap();
            let pages: u64 = w.footprint() / 4096;
            let all = collect(&with_init, usize::MAX);
            if kind != WorkloadKind::Sparse {
                assert_eq!(all.accesses.len() as u64, 12_345 + pages, "{kind:?}");
            }
        }
    }

    #[test]
    fn batches_never_exceed_max_and_split_anywhere() {
        for kind in ALL_KINDS {
            let cfg = small_config(kind, 5);
            let whole = collect(&cfg, usize::MAX);
            let mut w = build_generator(&cfg, "workload").unwrap();
            let mut joined = Vec::new();
            let mut batch = Batch::default();
            let mut max = 1;
            loop {
                batch.clear();
                let more = w.next_batch(&mut batch, max);
                assert!(batch.accesses.len() <= max);
                joined.extend_from_slice(&batch.accesses);
                if !more {
                    break;
                }
                max = max % 97 + 1;
            }
            assert_eq!(joined, whole.accesses, "{kind:?}");
        }
    }

    #[test]
    fn init_pass_stores_every_page_in_address_order() {
        let mut cfg = small_config(WorkloadKind::Stream, 1);
        cfg.accesses = 1;
        let all = collect(&cfg, usize::MAX);
        let arrays = mapped_arrays(&all);
        let mut i = 0;
        for a in &arrays {
            for page in 0..a.len / 4096 {
                let acc = all.accesses[i];
                assert_eq!(acc.vaddr.raw(), a.start.raw() + page * 4096);
                assert_eq!(acc.kind, AccessKind::Store);
                i += 1;
            }
        }
        assert_eq!(i + 1, all.accesses.len());
    }

    #[test]
    #[ignore]
    fn print_generation_speed() {
        use std::time::Instant;
        let mut cases: Vec<(String, WorkloadConfig)> = Vec::new();
        for kind in ALL_KINDS {
            let mut cfg = WorkloadConfig { kind, init: InitMode::None, ..Default::default() };
            cfg.accesses = 50_000_000;
            cfg.footprint = crate::units::ByteSize(1 << 30);
            if kind == WorkloadKind::Graph {
                for kernel in [GraphKernel::Bfs, GraphKernel::Pr, GraphKernel::Cc, GraphKernel::Tc] {
                    let mut g = cfg.clone();
                    g.scale = Some(20);
                    g.kernel = kernel;
                    cases.push((format!("graph-{kernel:?}"), g));
                }
                // Scale derived from the default 1 GiB footprint (22).
                cases.push(("graph-default-bfs".to_string(), cfg.clone()));
                continue;
            }
            if kind == WorkloadKind::Kv {
                for distribution in [KeyDistribution::Zipf, KeyDistribution::Hotspot, KeyDistribution::Uniform] {
                    let mut k = cfg.clone();
                    k.distribution = distribution;
                    cases.push((format!("kv-{distribution:?}"), k));
                }
                continue;
            }
            cases.push((format!("{kind:?}"), cfg));
        }
        // PAGELAB_SPEED=kv runs only the cases whose label contains "kv".
        let only = std::env::var("PAGELAB_SPEED").unwrap_or_default();
        for (label, cfg) in cases.into_iter().filter(|(l, _)| l.contains(only.as_str())) {
            let t0 = Instant::now();
            let mut w = build_generator(&cfg, "workload").unwrap();
            let mut batch = Batch::with_capacity(65536);
            w.next_batch(&mut batch, 0);
            let built = t0.elapsed();
            let t1 = Instant::now();
            let mut n = 0u64;
            let mut sink = 0u64;
            loop {
                batch.clear();
                let more = w.next_batch(&mut batch, 65536);
                n += batch.accesses.len() as u64;
                sink ^= batch.accesses.last().map_or(0, |a| a.vaddr.raw());
                if !more {
                    break;
                }
            }
            let secs = t1.elapsed().as_secs_f64();
            println!(
                "{label:>16}: build {:>7.2} s, {:>7.1} M accesses/s ({n} accesses, {} MiB mapped) [{sink:x}]",
                built.as_secs_f64(),
                n as f64 / secs / 1e6,
                w.footprint() >> 20
            );
        }
    }
}
