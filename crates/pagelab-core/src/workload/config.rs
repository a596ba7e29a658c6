//! `workload.*` configuration: the keys are a contract with users' files.
//! Defaults live in `Default` (one place); [`WorkloadConfig::validate`]
//! rejects bad values naming the full key.

use crate::error::{Error, Result};
use crate::units::ByteSize;
use crate::virt::{PageData, SharedPages};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which generator (`workload.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    Gups,
    Stream,
    Stride,
    PointerChase,
    Kv,
    Graph,
    Sparse,
    /// SysBench fileio's sequential read of a file into an array
    /// (`workload/file_read.rs`).
    FileRead,
    /// The probe of the Elastic Translations artifact's hash join
    /// (`workload/hashjoin.rs`).
    #[serde(rename = "hashjoin")]
    HashJoin,
    /// liblinear's dual coordinate descent on a sparse data set
    /// (`workload/svm.rs`).
    Svm,
    /// XSBench's cross-section lookups (`workload/xsbench.rs`).
    #[serde(rename = "xsbench")]
    XsBench,
    /// TailBench's Xapian search engine, request-structured
    /// (`workload/xapian.rs`).
    Xapian,
    /// PARSEC's blackscholes (`workload/blackscholes.rs`).
    Blackscholes,
    /// PostgreSQL's hash join of a small and a large table
    /// (`workload/pgsql_join.rs`).
    PgsqlJoin,
    /// TailBench's Img-dnn handwriting recognition, request-structured
    /// (`workload/img_dnn.rs`).
    ImgDnn,
    /// SPLASH-2's water-spatial molecular dynamics
    /// (`workload/water_spatial.rs`).
    WaterSpatial,
    /// PARSEC's raytrace (rtview), a BVH over a triangle mesh
    /// (`workload/raytrace.rs`).
    Raytrace,
    /// A recorded trace (`workload.path`), see `crate::trace`.
    Trace,
}

impl WorkloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Gups => "gups",
            WorkloadKind::Stream => "stream",
            WorkloadKind::Stride => "stride",
            WorkloadKind::PointerChase => "pointer-chase",
            WorkloadKind::Kv => "kv",
            WorkloadKind::Graph => "graph",
            WorkloadKind::Sparse => "sparse",
            WorkloadKind::FileRead => "file-read",
            WorkloadKind::HashJoin => "hashjoin",
            WorkloadKind::Svm => "svm",
            WorkloadKind::XsBench => "xsbench",
            WorkloadKind::Xapian => "xapian",
            WorkloadKind::Blackscholes => "blackscholes",
            WorkloadKind::PgsqlJoin => "pgsql-join",
            WorkloadKind::ImgDnn => "img-dnn",
            WorkloadKind::WaterSpatial => "water-spatial",
            WorkloadKind::Raytrace => "raytrace",
            WorkloadKind::Trace => "trace",
        }
    }
}

/// The init pass before the measured accesses (`workload.init`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InitMode {
    /// One store per 4 KiB page of each array, in address order.
    Pages,
    /// One store per 64-byte line.
    Lines,
    /// No init pass: first touches fault inside the measured accesses.
    None,
}

/// What `workload.fast_forward` (and `skip_kernel_init`) does with the
/// accesses it skips (`workload.fast_forward_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FastForwardMode {
    /// Generated and dropped: nothing simulated (fast; no fault, no clock).
    #[default]
    Drop,
    /// Run through the OS only (faults, page tables, daemons on the
    /// clock), not the TLBs, caches or timing model (`engine::functional`).
    Functional,
}

/// Key popularity of the kv workload (`workload.distribution`), as YCSB's
/// `requestdistribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyDistribution {
    Zipf,
    Hotspot,
    Uniform,
}

/// Where a pointer chase's hot set lies among its nodes (`workload.hot_layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HotLayout {
    /// The first `hot_set` bytes of nodes (a prefix of the footprint).
    Front,
    /// Chunks of `hot_chunk` bytes chosen uniformly (seeded) among all the
    /// footprint's whole chunks, as a heap's hot objects lie in runs spread
    /// over it.
    Scattered,
}

/// The GAPBS kernel of the graph workload (`workload.kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphKernel {
    Bfs,
    Pr,
    Cc,
    Tc,
}

/// `workload.*`. Per-kind keys are ignored by the other kinds, except
/// `write_fraction`, which is refused where it means nothing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    pub kind: WorkloadKind,
    /// Label in results; defaults to the kind.
    pub name: Option<String>,
    /// Virtual memory the workload maps (kv and graph derive their sizes from
    /// it unless `objects` / `scale` are set).
    pub footprint: ByteSize,
    /// Data accesses after the init pass; 0 = the benchmark's own run length.
    pub accesses: u64,
    /// Accesses generated and dropped (not simulated) between the init
    /// pass and the measured accesses, to start measuring inside a
    /// program's steady phase (gem5's fast-forward). Generators only.
    pub fast_forward: u64,
    /// Also fast-forward the program's own initialization loop (graph
    /// kernels: bfs's `InitParent`, cc's and pr's per-vertex init), so the
    /// measured accesses start at the kernel proper. Generators only.
    pub skip_kernel_init: bool,
    /// `drop` (default) or `functional`: whether the fast-forwarded
    /// accesses reach the OS (faults, khugepaged on the clock).
    pub fast_forward_mode: FastForwardMode,
    pub seed: u64,
    /// graph: the Kronecker generator's seed, apart from `seed` (which then
    /// drives only the kernel's choices: bfs's sources, cc's samples), so
    /// that runs varying `seed` share one graph (one cache entry) and differ
    /// in their access streams only. Unset = `seed`, as before the key.
    pub graph_seed: Option<u64>,
    /// Share of data accesses that store: gups (default 1.0: every update
    /// is a load then a store of the same word, as HPCC), stride and sparse
    /// (default 0.0). Refused for stream, pointer-chase, kv (see
    /// `get_ratio`) and graph, whose writes are the program's own.
    pub write_fraction: Option<f64>,
    /// What the workload's stores write, for the host's page comparisons
    /// (virtualized runs; `virt::contents`): `none` (default), `unique`,
    /// `zero`, `shared`, `partly-shared` (with `shared`). Carried for the
    /// hypervisor; generators do not read it.
    #[serde(skip_serializing_if = "PageData::is_none")]
    pub contents: PageData,
    /// `contents = "partly-shared"`: which pages hold the shared data
    /// (`workload.shared.portion`, `.degree`, `.distribution`, `.seed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedPages>,
    /// Page colors the OS may give this workload (empty = all). Carried for
    /// the OS; generators do not read it.
    pub colors: Vec<u32>,
    /// Under `os.policy = "chp"`: whether this process's faults try colored
    /// huge pages (the paper enables CHP per process); false = 4 KiB
    /// PALLOC coloring, as the paper's cache stressors get.
    pub chp: bool,
    pub init: InitMode,
    /// stride: distance between consecutive accesses.
    pub stride: ByteSize,
    /// pointer-chase: bytes per list node (the next pointer is its first word).
    pub node_size: ByteSize,
    /// kv: number of keys; derived from `footprint` when unset.
    pub objects: Option<u64>,
    /// kv: bytes per value object (YCSB's record is 10 fields x 100 B).
    pub object_size: ByteSize,
    /// kv: bytes of the value a GET reads / a SET writes; 0 = all of it.
    pub value_prefix: ByteSize,
    /// kv: jemalloc's `opt.cache_oblivious`: a value of 16 KiB or more
    /// takes one page more than its class and starts at a random cache line
    /// of its first page, leaving pages it never touches (`kv.rs`).
    pub cache_oblivious: bool,
    pub distribution: KeyDistribution,
    /// kv zipf: YCSB's zipfian constant, in [0, 1).
    pub zipf_theta: f64,
    /// kv hotspot: share of keys that are hot (the lowest-numbered).
    pub hot_fraction: f64,
    /// kv hotspot: share of operations that go to the hot keys.
    pub hot_ops: f64,
    /// pointer-chase: bytes at the start of the nodes that form a hot set
    /// with its own cycle, taking `hot_ops` of the loads (a working set
    /// that caches can hold, as mcf's node array); 0 = one cycle.
    pub hot_set: ByteSize,
    /// pointer-chase: where the hot set lies: `front` (the first nodes) or
    /// `scattered` (whole `hot_chunk`s spread over the footprint).
    pub hot_layout: HotLayout,
    /// pointer-chase, `hot_layout = "scattered"`: bytes of consecutive nodes
    /// that are hot or cold together (a multiple of `node_size`); the hot set
    /// is rounded down to whole chunks.
    pub hot_chunk: ByteSize,
    /// kv: share of operations that are GETs (the rest are SETs).
    pub get_ratio: f64,
    /// graph: log2 of the vertex count; derived from `footprint` when unset.
    /// The CSR is built in host memory: about 2^scale x (8 x degree + 25)
    /// bytes (scale 22: 0.7 GiB, scale 26: 10 GiB).
    pub scale: Option<u32>,
    /// graph: edges per vertex generated (GAPBS/Graph500 edgefactor).
    pub degree: u32,
    pub kernel: GraphKernel,
    /// graph bfs: sources per run (GAPBS and Graph500 use 64).
    pub sources: u32,
    /// sparse: pages touched in each 2 MiB region (1..=512).
    pub touched_pages: u32,
    /// trace: the trace file (any format `crate::trace` reads).
    pub path: Option<PathBuf>,
    /// trace: stop after this many instructions; 0 = the whole trace.
    pub instructions: u64,
    /// trace: the format, when detection from the content cannot tell
    /// (ChampSim's 64- and 96-byte records); unset = detect.
    pub format: Option<TraceFormat>,
    /// trace: simulate instruction fetches (lackey `I` lines, ChampSim
    /// ips); when false they count only as instructions.
    pub ifetch: bool,
    /// Generators: the instructions each measured access carries (its own
    /// and those before it since the previous access), in place of the
    /// generator's count: the instruction density of the program's loop as
    /// compiled for the machine studied, which bounds how many of its
    /// misses fit in the reorder buffer. Unset: the generator's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_per_access: Option<u32>,
    /// Where the arrays lie: unset, 2 MiB-aligned starts and lengths in
    /// whole 4 KiB pages (a THP heap); set, starts aligned to it and
    /// lengths rounded up to it, as a hugetlbfs mapping of pages of that
    /// size is (libhugetlbfs's heap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align: Option<ByteSize>,
    /// Run this program on the core of the workload before it (in file
    /// order), starting when that one exits: `"previous"`. Unset: a core of
    /// its own from the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
    /// file-read: the file's name; programs that read the same name share
    /// its page-cache pages. Default `"file"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// file-read: bytes per read() call (a multiple of 4 KiB). Default 4 KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ByteSize>,
    /// svm: nonzero features per instance. Default 11 (`workload/svm.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonzeros: Option<u32>,
    /// svm: the weight vector's length. Default: kdd12's features per
    /// instance times the instances the footprint holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<u64>,
    /// pgsql-join: bytes of the small (build) relation. Default 5 MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_relation: Option<ByteSize>,
}

/// When a program starts (`workload.after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum After {
    /// When the program before it on the same core exits.
    Previous,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Gups,
            name: None,
            footprint: ByteSize(1 << 30),
            accesses: 10_000_000,
            fast_forward: 0,
            skip_kernel_init: false,
            fast_forward_mode: FastForwardMode::Drop,
            seed: 1,
            graph_seed: None,
            write_fraction: None,
            contents: PageData::None,
            shared: None,
            colors: Vec::new(),
            chp: true,
            init: InitMode::Pages,
            stride: ByteSize(64),
            node_size: ByteSize(64),
            objects: None,
            object_size: ByteSize(1000),
            value_prefix: ByteSize(0),
            cache_oblivious: false,
            distribution: KeyDistribution::Zipf,
            zipf_theta: 0.99,
            hot_fraction: 0.2,
            hot_ops: 0.8,
            hot_set: ByteSize(0),
            hot_layout: HotLayout::Front,
            hot_chunk: ByteSize(4096),
            get_ratio: 0.95,
            scale: None,
            degree: 16,
            kernel: GraphKernel::Bfs,
            sources: 64,
            touched_pages: 64,
            path: None,
            instructions: 0,
            format: None,
            ifetch: false,
            instructions_per_access: None,
            align: None,
            after: None,
            file: None,
            chunk: None,
            nonzeros: None,
            features: None,
            build_relation: None,
        }
    }
}

/// The most a workload may map: arrays go top-down from 0x7f00_0000_0000,
/// so 64 TiB leaves room above address 0.
const MAX_FOOTPRINT: u64 = 64 << 40;

impl WorkloadConfig {
    /// The systems of the chain this process does not use
    /// (`os::ProcessSpec::opt_out`).
    pub fn opted_out_systems(&self) -> Vec<&'static str> {
        if self.chp {
            Vec::new()
        } else {
            vec!["chp"]
        }
    }

    /// The seed the graph generator is given: `graph_seed`, else `seed`.
    pub fn graph_generator_seed(&self) -> u64 {
        self.graph_seed.unwrap_or(self.seed)
    }

    /// `write_fraction` with the kind's default.
    pub fn effective_write_fraction(&self) -> f64 {
        let default = if self.kind == WorkloadKind::Gups { 1.0 } else { 0.0 };
        self.write_fraction.unwrap_or(default)
    }

    pub fn validate(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        let fp = self.footprint.bytes();
        if !(4096..=MAX_FOOTPRINT).contains(&fp) {
            // From one 4 KiB page to what fits under the layout's top.
            let msg = format!("{}: must be from 4KiB to {}", self.footprint, ByteSize(MAX_FOOTPRINT));
            return Err(Error::config(key("footprint"), msg));
        }
        self.validate_write_fraction(&key("write_fraction"))?;
        if self.instructions_per_access == Some(0) {
            return Err(Error::config(key("instructions_per_access"), "at least 1 (each access is an instruction)"));
        }
        SharedPages::validate(self.shared.as_ref(), self.contents, prefix)?;
        self.validate_align(&key("align"))?;
        self.validate_trace_keys(prefix)?;
        self.validate_file_keys(prefix)?;
        self.validate_svm_keys(prefix)?;
        if self.build_relation.is_some() && self.kind != WorkloadKind::PgsqlJoin {
            let msg = format!("only for kind = \"pgsql-join\" (this workload is {})", self.kind.as_str());
            return Err(Error::config(key("build_relation"), msg));
        }
        if self.graph_seed.is_some() && self.kind != WorkloadKind::Graph {
            // Silently ignoring it would let a sweep believe it fixed a graph.
            return Err(Error::config(
                key("graph_seed"),
                format!("only for kind = \"graph\" (this workload is {})", self.kind.as_str()),
            ));
        }
        if self.cache_oblivious && self.kind != WorkloadKind::Kv {
            return Err(Error::config(
                key("cache_oblivious"),
                format!("only for kind = \"kv\" (this workload is {})", self.kind.as_str()),
            ));
        }
        match self.kind {
            WorkloadKind::Stride => self.validate_stride(prefix),
            WorkloadKind::PointerChase => self.validate_node_size(prefix),
            WorkloadKind::Kv => self.validate_kv(prefix),
            WorkloadKind::Graph => self.validate_graph(prefix),
            WorkloadKind::Sparse => self.validate_sparse(prefix),
            WorkloadKind::FileRead => self.validate_file_read(prefix),
            WorkloadKind::XsBench => self.validate_xsbench(prefix),
            WorkloadKind::Xapian => self.validate_xapian(prefix),
            WorkloadKind::PgsqlJoin => self.validate_pgsql_join(prefix),
            WorkloadKind::ImgDnn => {
                let least = super::img_dnn::least_footprint();
                if self.footprint.bytes() < least {
                    let msg = format!("{}: img-dnn needs {least} bytes at least (hidden width 16)", self.footprint);
                    return Err(Error::config(format!("{prefix}.footprint"), msg));
                }
                Ok(())
            }
            // The smallest footprint holds 56 keys (hashjoin.rs); svm's
            // keys are checked with the other kinds' (`validate_svm_keys`).
            WorkloadKind::HashJoin | WorkloadKind::Svm => Ok(()),
            // A page holds a gups word and a stream element of each array.
            // A page holds 146 options; water-spatial takes two molecules
            // at least, raytrace one leaf.
            WorkloadKind::Gups
            | WorkloadKind::Stream
            | WorkloadKind::Blackscholes
            | WorkloadKind::WaterSpatial
            | WorkloadKind::Raytrace
            | WorkloadKind::Trace => Ok(()),
        }
    }

    /// `path` is required by traces and refused elsewhere, like the other
    /// trace-only keys.
    fn validate_trace_keys(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        if self.kind == WorkloadKind::Trace {
            // Skipping a trace's records would also skip its mapping events.
            let functional = self.fast_forward_mode == FastForwardMode::Functional;
            for (k, on) in [
                ("fast_forward", self.fast_forward != 0),
                ("skip_kernel_init", self.skip_kernel_init),
                ("fast_forward_mode", functional),
                ("align", self.align.is_some()),
                ("instructions_per_access", self.instructions_per_access.is_some()),
            ] {
                if on {
                    return Err(Error::config(key(k), "generators only; a trace can start later with another capture"));
                }
            }
            return match &self.path {
                None => Err(Error::config(key("path"), "kind = \"trace\" needs the trace file's path")),
                Some(p) if p.as_os_str().is_empty() => Err(Error::config(key("path"), "empty path")),
                Some(_) => Ok(()),
            };
        }
        let only_trace = |k: &str| {
            Err(Error::config(key(k), format!("only for kind = \"trace\" (this workload is {})", self.kind.as_str())))
        };
        if self.path.is_some() {
            return only_trace("path");
        }
        if self.instructions != 0 {
            return only_trace("instructions");
        }
        if self.format.is_some() {
            return only_trace("format");
        }
        if self.ifetch {
            return only_trace("ifetch");
        }
        Ok(())
    }

    fn validate_file_read(&self, prefix: &str) -> Result<()> {
        if self.file.as_deref() == Some("") {
            return Err(Error::config(format!("{prefix}.file"), "a file needs a name"));
        }
        let chunk = self.chunk.map_or(4096, |c| c.bytes());
        if chunk == 0 || !chunk.is_multiple_of(4096) {
            return Err(Error::config(format!("{prefix}.chunk"), format!("{chunk} bytes is not a multiple of 4KiB")));
        }
        Ok(())
    }

    /// `file` and `chunk` belong to file-read only.
    fn validate_file_keys(&self, prefix: &str) -> Result<()> {
        if self.kind == WorkloadKind::FileRead {
            return Ok(());
        }
        for (k, set) in [("file", self.file.is_some()), ("chunk", self.chunk.is_some())] {
            if set {
                let msg = format!("only for kind = \"file-read\" (this workload is {})", self.kind.as_str());
                return Err(Error::config(format!("{prefix}.{k}"), msg));
            }
        }
        Ok(())
    }

    /// `nonzeros` and `features` belong to svm, and its footprint must
    /// hold an instance and as many features as nonzeros.
    fn validate_svm_keys(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        if self.kind != WorkloadKind::Svm {
            for (k, set) in [("nonzeros", self.nonzeros.is_some()), ("features", self.features.is_some())] {
                if set {
                    let msg = format!("only for kind = \"svm\" (this workload is {})", self.kind.as_str());
                    return Err(Error::config(key(k), msg));
                }
            }
            return Ok(());
        }
        if let Some(n) = self.nonzeros {
            if !(1..=1 << 16).contains(&n) {
                return Err(Error::config(key("nonzeros"), format!("{n} is outside 1..=65536")));
            }
        }
        let nonzeros = self.nonzeros.unwrap_or(super::svm::DEFAULT_NONZEROS) as u64;
        if self.features.is_some_and(|n| n < nonzeros) {
            return Err(Error::config(
                key("features"),
                format!("must be at least the {nonzeros} nonzeros of an instance"),
            ));
        }
        if super::svm::SvmShape::of(self).is_none() {
            let least =
                super::svm::SvmShape::least_footprint(self).map_or("more than 64TiB".into(), |b| format!("{b} bytes"));
            let msg = format!(
                "{}: too small for one instance and its weight vector; at least {least} for these nonzeros and features",
                self.footprint
            );
            return Err(Error::config(key("footprint"), msg));
        }
        Ok(())
    }

    /// Two points per nuclide grid at least (`xsbench.rs`).
    fn validate_xsbench(&self, prefix: &str) -> Result<()> {
        if super::xsbench::gridpoints_in(self.footprint.bytes()) < 2 {
            let need = 2 * super::xsbench::BYTES_PER_GRIDPOINT;
            return Err(Error::config(format!("{prefix}.footprint"), format!("xsbench needs {need} bytes at least")));
        }
        Ok(())
    }

    /// The index needs its least footprint; term popularity is a Zipf law.
    fn validate_xapian(&self, prefix: &str) -> Result<()> {
        let least = super::xapian::MIN_FOOTPRINT;
        if self.footprint.bytes() < least {
            let msg =
                format!("{}: xapian needs {least} bytes at least (its ring, query buffer and index)", self.footprint);
            return Err(Error::config(format!("{prefix}.footprint"), msg));
        }
        if !(0.0..1.0).contains(&self.zipf_theta) {
            return Err(Error::config(
                format!("{prefix}.zipf_theta"),
                format!("{} is outside [0, 1)", self.zipf_theta),
            ));
        }
        Ok(())
    }

    /// Each relation holds one 8 KiB heap page at least; the build side's
    /// chains live in host memory (8 bytes a tuple), so it is capped.
    fn validate_pgsql_join(&self, prefix: &str) -> Result<()> {
        let page = super::pgsql_join::PAGE;
        if self.footprint.bytes() < page {
            return Err(Error::config(format!("{prefix}.footprint"), "pgsql-join needs one 8KiB heap page at least"));
        }
        let build = self.build_relation.map_or(super::pgsql_join::DEFAULT_BUILD, |b| b.bytes());
        if !(page..=16 << 30).contains(&build) {
            let msg = format!("{build} bytes: must be from one 8KiB heap page to 16GiB");
            return Err(Error::config(format!("{prefix}.build_relation"), msg));
        }
        Ok(())
    }

    fn validate_write_fraction(&self, key: &str) -> Result<()> {
        let Some(f) = self.write_fraction else {
            return Ok(());
        };
        if !(0.0..=1.0).contains(&f) {
            return Err(Error::config(key, format!("{f} is outside [0, 1]")));
        }
        match self.kind {
            WorkloadKind::Gups | WorkloadKind::Stride | WorkloadKind::Sparse => Ok(()),
            WorkloadKind::Kv => Err(Error::config(key, "kv writes are SETs: use get_ratio")),
            other => Err(Error::config(
                key,
                format!("{} makes its own writes; write_fraction means nothing for it", other.as_str()),
            )),
        }
    }

    fn validate_stride(&self, prefix: &str) -> Result<()> {
        let s = self.stride.bytes();
        if s < 8 || !s.is_multiple_of(8) {
            return Err(Error::config(format!("{prefix}.stride"), "must be a positive multiple of 8 bytes"));
        }
        Ok(())
    }

    /// A hugetlbfs page size: a power of two from 2 MiB to 1 GiB.
    fn validate_align(&self, key: &str) -> Result<()> {
        match self.align.map(|a| a.bytes()) {
            Some(a) if !a.is_power_of_two() || !(2 << 20..=1 << 30).contains(&a) => {
                Err(Error::config(key, format!("{a} bytes: must be a power of two from 2MiB to 1GiB")))
            }
            _ => Ok(()),
        }
    }

    fn validate_node_size(&self, prefix: &str) -> Result<()> {
        let s = self.node_size.bytes();
        if s < 8 || !s.is_multiple_of(8) {
            return Err(Error::config(format!("{prefix}.node_size"), "must be a positive multiple of 8 bytes"));
        }
        if s > self.footprint.bytes() {
            let msg = format!("{}: must be at most workload.footprint ({})", self.node_size, self.footprint);
            return Err(Error::config(format!("{prefix}.node_size"), msg));
        }
        if self.footprint.bytes() / s > u32::MAX as u64 {
            // Nodes are numbered in 32 bits: the smallest node, in 8s, that
            // keeps the footprint's count under 2^32.
            let least = (self.footprint.bytes() / (1 << 32) + 1).next_multiple_of(8);
            let msg =
                format!("{}: more than 2^32 - 1 nodes; at least {least} bytes for this footprint", self.node_size);
            return Err(Error::config(format!("{prefix}.node_size"), msg));
        }
        let fp = self.footprint.bytes();
        if self.hot_set.bytes() > 0 && self.hot_set.bytes() + s > fp {
            let msg =
                format!("{}: at most footprint - node_size ({} bytes), to leave one cold node", self.hot_set, fp - s);
            return Err(Error::config(format!("{prefix}.hot_set"), msg));
        }
        if !(0.0..=1.0).contains(&self.hot_ops) {
            return Err(Error::config(format!("{prefix}.hot_ops"), format!("{} is outside [0, 1]", self.hot_ops)));
        }
        if self.hot_layout == HotLayout::Scattered {
            self.validate_hot_chunk(prefix)?;
        }
        Ok(())
    }

    /// A scattered hot set needs whole chunks of whole nodes, and at least
    /// one chunk of them.
    fn validate_hot_chunk(&self, prefix: &str) -> Result<()> {
        let (chunk, node) = (self.hot_chunk.bytes(), self.node_size.bytes());
        if self.hot_set.bytes() == 0 {
            return Err(Error::config(format!("{prefix}.hot_layout"), "\"scattered\" needs a hot_set"));
        }
        if chunk < node || !chunk.is_multiple_of(node) {
            return Err(Error::config(
                format!("{prefix}.hot_chunk"),
                format!("{}: must be a positive multiple of node_size ({})", self.hot_chunk, self.node_size),
            ));
        }
        if self.hot_set.bytes() < chunk {
            let msg = format!("{}: must be at least one hot_chunk ({})", self.hot_set, self.hot_chunk);
            return Err(Error::config(format!("{prefix}.hot_set"), msg));
        }
        Ok(())
    }

    fn validate_kv(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        let size = self.object_size.bytes();
        if !(16..=1 << 30).contains(&size) {
            return Err(Error::config(key("object_size"), "must be between 16 B and 1 GiB"));
        }
        if self.value_prefix.bytes() > size {
            let msg = format!("{}: must be at most object_size ({})", self.value_prefix, self.object_size);
            return Err(Error::config(key("value_prefix"), msg));
        }
        let stride = super::kv::value_stride(size, self.cache_oblivious);
        if let Some(n) = self.objects {
            if n == 0 || n >= u32::MAX as u64 {
                return Err(Error::config(key("objects"), "must be in 1..2^32-1"));
            }
            if super::kv::KvShape::new(n, stride).footprint() > MAX_FOOTPRINT {
                return Err(Error::config(key("objects"), "objects x object_size exceeds 64TiB"));
            }
        } else if super::kv::KvShape::from_footprint(self.footprint.bytes(), stride).is_none() {
            return Err(Error::config(
                key("footprint"),
                "must hold from 1 to 2^32 - 2 objects of object_size (with their hash chains)",
            ));
        }
        if !(0.0..1.0).contains(&self.zipf_theta) {
            return Err(Error::config(key("zipf_theta"), format!("{} is outside [0, 1)", self.zipf_theta)));
        }
        for (k, v) in [("hot_fraction", self.hot_fraction), ("hot_ops", self.hot_ops), ("get_ratio", self.get_ratio)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(key(k), format!("{v} is outside [0, 1]")));
            }
        }
        Ok(())
    }

    fn validate_graph(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        if let Some(s) = self.scale {
            if !(1..=30).contains(&s) {
                return Err(Error::config(key("scale"), format!("{s} is outside 1..=30")));
            }
        }
        if !(1..=1024).contains(&self.degree) {
            return Err(Error::config(key("degree"), "must be in 1..=1024"));
        }
        if self.sources == 0 {
            return Err(Error::config(key("sources"), "bfs needs at least one source"));
        }
        Ok(())
    }

    fn validate_sparse(&self, prefix: &str) -> Result<()> {
        if !(1..=512).contains(&self.touched_pages) {
            return Err(Error::config(format!("{prefix}.touched_pages"), "must be in 1..=512"));
        }
        if self.footprint.bytes() < 2 << 20 {
            return Err(Error::config(format!("{prefix}.footprint"), "sparse needs at least one 2MiB region"));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

/// A trace's format (`workload.format`; detected from the content when
/// unset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    Native,
    /// ChampSim's 64-byte `input_instr` records.
    Champsim,
    /// ChampSim's 96-byte `cloudsuite_instr` records.
    ChampsimCloudsuite,
    Lackey,
}

impl TraceFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Native => "native",
            TraceFormat::Champsim => "champsim",
            TraceFormat::ChampsimCloudsuite => "champsim-cloudsuite",
            TraceFormat::Lackey => "lackey",
        }
    }
}
