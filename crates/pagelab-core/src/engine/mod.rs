//! The engine: layer 6. Cores run their workloads in a deterministic
//! round-robin of quanta over one shared kernel (physical memory) and one
//! cache hierarchy (shared LLC). Each quantum runs in two stages, so that
//! the host can fetch ahead in both of the simulator's large tables:
//!
//! 1. translation: every access of the quantum goes through the MMU (TLBs,
//!    walk, faults), prefetching the leaf page-table entries of the
//!    accesses ahead in bursts of 16; the walk references and the data
//!    reference of each access are appended, in program order, to the
//!    core's `RefBuf`;
//! 2. caches: the references run through the hierarchy in that order,
//!    prefetching the cache sets of references a few positions ahead, and
//!    each one's latency is charged to translation or data.
//!
//! The split changes no result: TLBs and page tables never depend on cache
//! contents, and the caches see exactly the sequential order.

pub mod bench;
mod boot;
mod conflict;
pub mod core;
#[cfg(test)]
mod dram_tests;
#[cfg(test)]
mod ept_split_tests;
mod export;
pub mod functional;
pub mod host_budget;
#[cfg(test)]
mod ksm_tests;
pub mod mmu;
#[cfg(test)]
mod page_cache_tests;
mod programs;
#[cfg(test)]
mod programs_tests;
mod requests;
#[cfg(test)]
mod requests_tests;
mod sampling;
#[cfg(test)]
mod sampling_tests;
mod stage_fixed;
mod stage_virt;
mod stats;
pub mod stats_list;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
mod tiering;
#[cfg(test)]
mod tiering_tests;
#[cfg(test)]
mod tiers_tests;
pub mod timing;
mod virt_services;
#[cfg(test)]
mod vms_tests;
pub mod walk2d;
mod walk2d_contig;

pub use self::core::{Core, CoreStats, RefBuf, RefKind};
pub use self::export::ExportFormat;
pub use stats::{Stat, Stats};

use boot::boot_kernel;
pub(crate) use boot::{host_boot, vm_footprint};

use std::path::Path;

use self::export::PhysExport;
use self::mmu::Mmu;
use self::timing::window::{Window, FAULT, L2_TLB, WALK};
use self::timing::Timing;
use crate::config::os::AutoVma;
use crate::config::{SimConfig, TimingModel};
use crate::error::Result;
use crate::hw::cache::CacheHierarchy;
use crate::hw::pwc::Pwc;
use crate::hw::tlb::Tlb;
use crate::os::Kernel;
use crate::systems;
use crate::workload::{self, AccessKind, Batch, MapEvent};

/// How far ahead the cache stage prefetches (references).
const PREFETCH_DISTANCE: usize = 8;
/// The translation stage prefetches in bursts: at every multiple of
/// `PREFETCH_BURST` accesses, it prefetches the leaf page-table entries
/// and L2 TLB sets for the whole following burst (the accesses
/// `PREFETCH_BURST` to `2 * PREFETCH_BURST - 1` positions ahead). One
/// prefetch per access, 8 ahead, was 4-11% slower on gups over 16 GiB:
/// there the host's TLB cannot map the 32 MiB PTE slab, and a prefetch
/// apparently holds the host up until its own host page walk is done.
/// Prefetches issued together walk in parallel.
const PREFETCH_BURST: usize = 16;
/// Prefetching pays when at least this share of the previous quantum's
/// accesses missed (the L1 TLB, or the L1 cache); below it, the prefetch
/// instructions cost more than the host misses they save (streams). A pure
/// hint: results never depend on it.
const PREFETCH_MISS_SHARE: u64 = 16;
/// The reference each [`AccessKind`] makes (by its discriminant).
const REF_KIND: [RefKind; 3] = [RefKind::Load, RefKind::Store, RefKind::IFetch];
const _: () = assert!(
    matches!(REF_KIND[AccessKind::Load as usize], RefKind::Load)
        && matches!(REF_KIND[AccessKind::Store as usize], RefKind::Store)
        && matches!(REF_KIND[AccessKind::IFetch as usize], RefKind::IFetch)
);
/// The flow class of each [`RefKind`] (by index): 0 = data (loads and
/// stores), 1 = walk, 2 = instruction fetch.
const FLOW_CLASS: [usize; 4] = [0, 0, 1, 2];

/// A simulation in progress.
pub struct Simulation {
    cfg: SimConfig,
    pub kernel: Kernel,
    caches: Option<CacheHierarchy>,
    pub cores: Vec<Core>,
    timing: Timing,
    export: Option<PhysExport>,
    timeseries: Vec<Stats>,
    next_epoch: u64,
    warm: bool,
    /// The accesses every workload will make, when known (progress only).
    expected_accesses: Option<u64>,
    /// The hypervisor and the second dimension's hardware, in a
    /// virtualized run (`virt.enabled`): `kernel` is then the guest's.
    virt: Option<Box<walk2d::VirtRun>>,
    /// Sampled measurement's schedule and sums (`run.sampling`).
    sampling: Option<Box<sampling::Sampling>>,
    /// The DRAM's row buffers (`machine.memory.dram`), shared by the cores.
    dram: Option<Box<crate::hw::dram::Dram>>,
    /// Whether stage 1 samples L2 TLB misses (Leshy online): chosen once
    /// per run, so a run without it runs the stage it always ran.
    sample_misses: bool,
    /// Each core's accessed pages for the paper's conflict levels
    /// (`run.conflict_level`), read once per stage, never per access.
    conflict: Option<Vec<conflict::AccessedPages>>,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation").field("cores", &self.cores).finish()
    }
}

impl Simulation {
    /// A simulation of `cfg`, its workloads built from the configuration.
    pub fn new(cfg: SimConfig) -> Result<Simulation> {
        cfg.validate()?;
        host_budget::check(&cfg)?;
        let mut workloads = Vec::new();
        for (w, prefix) in cfg.workload_list().iter().zip(cfg.workload_keys()) {
            workloads.push(build_workload(w, &prefix)?);
        }
        Simulation::with_workloads(cfg, workloads)
    }

    /// A simulation of `cfg` running the given workloads, one per core (a
    /// trace reader, a scripted test). Each core takes its allowed colors
    /// from the matching workload table of `cfg`.
    pub fn with_workloads(cfg: SimConfig, workloads: Vec<Box<dyn crate::workload::Workload>>) -> Result<Simulation> {
        cfg.validate()?;
        let m = &cfg.machine;
        let mut kernel = boot_kernel(&cfg)?;
        // Several VMs: the guest kernels after the first one's.
        let mut other_guests = walk2d::boot_other_guests(&cfg)?;
        let vm_of_cores = cfg.vm_of_cores();
        let mut caches =
            m.cache.enabled.then(|| CacheHierarchy::with_seed(&m.cache, cfg.nr_cores(), cfg.run.seed)).transpose()?;
        if let Some(c) = caches.as_mut() {
            c.set_prefetchers(&m.prefetch);
            if !m.memory.tiers.is_empty() || timing::dram::DramTiming::active(m) {
                // Memory tiers charge each writeback by its tier; the DRAM's
                // row buffers see each writeback's row.
                c.log_writebacks();
            }
        }
        // Under the interval model the window charges the L2 TLB and
        // page-walk-cache latencies, so the MMU adds none.
        let interval = m.timing.model == TimingModel::Interval;
        let mmu_latency = |cycles: u32| if interval { 0.0 } else { cycles as f64 };
        let mut cores: Vec<Core> = Vec::new();
        // L2 TLB misses are sampled (for Leshy) or not, once for the run:
        // each kernel (a native run's, or a guest's) whose OS runs Leshy
        // online gets its samplers.
        let mut sample_misses = false;
        for (vm, g) in cfg.guests().iter().enumerate() {
            if let Some(period) = systems::miss_sample_period(g.os) {
                let guest = if vm == 0 { &mut kernel } else { &mut other_guests[vm - 1] };
                guest.miss_samples = crate::hw::tlb::MissSamples::new(period, cfg.nr_cores());
                sample_misses = true;
            }
        }
        let mut expected_accesses = Some(0u64);
        let configs = cfg.workload_list();
        if configs.len() != workloads.len() {
            return Err(crate::Error::config("workloads", "one workload table per workload"));
        }
        for (w, mut workload) in configs.iter().zip(workloads) {
            expected_accesses = expected_accesses.zip(workload.total_accesses()).map(|(a, b)| a + b);
            if w.after.is_some() {
                // (Validation refuses `after` on a core's first program.)
                let core = cores.last_mut().expect("validated: a program before it");
                core.queued.push_back(programs::Program { workload, config: w.clone() });
                continue;
            }
            let id = cores.len();
            let vm = vm_of_cores[id];
            let kernel = if vm == 0 { &mut kernel } else { &mut other_guests[vm - 1] };
            let asid = programs::spawn_program(&cfg, vm, kernel, w, &mut workload)?;
            let mmu = Mmu {
                tlb: Tlb::with_extensions(
                    &m.tlb,
                    cfg.run.seed.wrapping_add(id as u64),
                    systems::tlb_extensions(
                        kernel.color_map(),
                        systems::chain_has(&kernel.chain(), |c| c.samples_l2_occupancy),
                    ),
                ),
                pwc: Pwc::new(&m.pwc, m.paging_levels, cfg.run.seed.wrapping_add(id as u64)),
                l2_tlb_latency: mmu_latency(m.tlb.l2_latency),
                walk_latency: mmu_latency(m.walk_latency()),
                check: cfg.run.check_translations,
            };
            cores.push(Core {
                id,
                vm,
                asid,
                mmu,
                workload,
                batch: Batch::default(),
                pos: 0,
                next_event: 0,
                exhausted: false,
                stats: CoreStats::default(),
                retired: 0,
                ran: 0,
                stall_offset: 0.0,
                refs: RefBuf::default(),
                measuring: false,
                prefetch_translation: true,
                prefetch_caches: true,
                window: interval.then(|| Window::new(m)),
                functional_batch: false,
                // Sampling fast-forwards its lead-in (the init passes).
                functional: cfg.run.sampling.enabled(),
                ff: functional::FastForward { cpi: sampling::initial_fast_forward_cpi(&cfg), ..Default::default() },
                queued: Default::default(),
                requests: None,
            });
        }
        for core in &mut cores {
            let later = core.queued.iter().map(|p| &*p.workload);
            core.requests = requests::Requests::for_programs(&*core.workload, later);
        }
        let virt = walk2d::boot_virt(&cfg, &mut kernel, other_guests, &cores)?;
        let timing = Timing::new(m);
        let next_epoch = cfg.run.epoch;
        let sampling = cfg.run.sampling.enabled().then(|| Box::new(sampling::Sampling::new(&cfg.run.sampling)));
        let dram = timing::dram::DramTiming::active(m).then(|| Box::new(crate::hw::dram::Dram::new(&m.memory.dram)));
        let conflict = conflict::AccessedPages::for_run(&cfg, cores.len())?;
        Ok(Simulation {
            conflict,
            dram,
            sample_misses,
            // Sampling resets the statistics itself, window by window.
            warm: (cfg.run.warmup == 0 && !cfg.run.skip_init) || sampling.is_some(),
            sampling,
            cfg,
            kernel,
            caches,
            cores,
            timing,
            export: None,
            timeseries: Vec::new(),
            next_epoch,
            expected_accesses,
            virt,
        })
    }

    /// Writes every physical reference the caches see to `path`
    /// (`R`/`W`/`P` lines; zstd-compressed when the name ends in `.zst`).
    pub fn export_phys(&mut self, path: &Path) -> Result<()> {
        self.export_phys_as(path, ExportFormat::Pagelab, false)
    }

    /// The same in another format, or only the references served by
    /// memory (see `engine::export`).
    pub fn export_phys_as(&mut self, path: &Path, format: ExportFormat, memory_only: bool) -> Result<()> {
        let inputs = self.cfg.input_files();
        crate::outfile::check_not_input(path, &inputs.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
        self.export = Some(PhysExport::create(path, format, memory_only)?);
        Ok(())
    }

    /// Drops an unfinished export (a failed run): its temporary file is
    /// removed and the target left as it was.
    pub fn discard_export(&mut self) {
        self.export = None;
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Accesses run so far and the total expected: exact for an
    /// uncompressed native trace and a generator with `workload.accesses`
    /// set, None when some workload cannot tell (other traces, a
    /// generator's own run length: `workload.accesses = 0`).
    pub fn progress(&self) -> (u64, Option<u64>) {
        let done = self.cores.iter().map(|c| c.ran).sum();
        (done, self.expected_accesses)
    }

    pub fn done(&self) -> bool {
        self.cores.iter().all(Core::done) || self.sampling.as_ref().is_some_and(|s| s.finished())
    }

    /// Runs rounds of quanta until at least `budget` more accesses ran or
    /// every workload finished. Returns whether the run is finished.
    pub fn step(&mut self, budget: u64) -> Result<bool> {
        let start = self.progress().0;
        while !self.done() && self.progress().0 - start < budget {
            self.round()?;
        }
        Ok(self.done())
    }

    /// Runs to the end.
    pub fn run(&mut self) -> Result<()> {
        while !self.step(u64::MAX)? {}
        Ok(())
    }

    /// One quantum on every core that has work, then the daemons.
    fn round(&mut self) -> Result<()> {
        for i in 0..self.cores.len() {
            if !self.cores[i].done() {
                self.run_quantum(i)?;
            }
        }
        let now = self.cores.iter().map(|c| c.clock(self.timing.base_cpi)).fold(0.0, f64::max);
        for vm in 0..self.nr_guests() {
            self.guest_mut(vm).tick(now);
        }
        self.deliver_shootdowns(true);
        self.virt_round_end(now)?;
        self.check_warmup();
        self.check_epoch();
        if self.sampling.is_some() {
            self.check_sampling();
        }
        Ok(())
    }

    /// Applies every queued shootdown to the cores of its address space;
    /// a daemon's shootdowns cost the interrupted core its IPI.
    fn deliver_shootdowns(&mut self, from_daemon: bool) {
        for vm in 0..self.nr_guests() {
            self.deliver_guest_shootdowns(vm, from_daemon);
        }
    }

    /// The same for the shootdowns of guest `vm`'s kernel (the kernel of
    /// a native run is guest 0), to the cores of that VM.
    fn deliver_guest_shootdowns(&mut self, vm: usize, from_daemon: bool) {
        let guest = self.guest_mut(vm);
        let cost = guest.costs.shootdown;
        for s in guest.drain_shootdowns().collect::<Vec<_>>() {
            let hw = self.hw_shootdown(vm, s);
            for core in self.cores.iter_mut().filter(|c| c.asid == s.asid && c.vm == vm) {
                core.mmu.shoot_down(&hw);
                let cycles = if from_daemon { cost } else { 0.0 };
                if core.functional {
                    // A fast-forwarding core's interrupt moves its clock only.
                    core.ff.add_cycles(&mut core.stall_offset, cycles);
                } else {
                    core.stats.cycles_daemon += cycles;
                }
                if let Some(w) = core.window.as_mut() {
                    // The interrupt (or the system call that changed the
                    // mapping) serialises the core.
                    w.serialize(&mut core.stats, cycles);
                }
            }
        }
    }

    fn run_quantum(&mut self, i: usize) -> Result<()> {
        let mut budget = self.cfg.run.quantum as usize;
        while budget > 0 {
            let core = &mut self.cores[i];
            if core.pos == core.batch.accesses.len() && core.next_event == core.batch.events.len() {
                // The instructions after a batch's last access count once,
                // also after the workload's last batch.
                core.stats.instructions += core.batch.trailing_instrs;
                core.retired += core.batch.trailing_instrs;
                core.batch.trailing_instrs = 0;
                if core.exhausted {
                    if core.queued.is_empty() {
                        break;
                    }
                    self.start_next_program(i)?;
                    continue;
                }
                core.batch.clear();
                core.pos = 0;
                core.next_event = 0;
                core.exhausted = !core.workload.next_batch(&mut core.batch, self.cfg.run.quantum as usize);
                if let Some(e) = core.workload.take_error() {
                    // A trace found corrupt mid-way fails the run: never a
                    // silently shorter trace.
                    return Err(e);
                }
                core.functional_batch = core.workload.batch_is_fast_forward();
                core.functional = core.functional_batch || self.sampling.as_ref().is_some_and(|s| s.fast_forwarding());
                if !core.workload.batch_is_init() && !core.functional_batch && !core.measuring {
                    core.measuring = true;
                    if self.cfg.run.skip_init || self.sampling.is_some() {
                        // Stop before the first measured access, so that a
                        // reset (or sampling's first window) at the end of
                        // this round comes exactly here.
                        break;
                    }
                }
                continue;
            }
            self.apply_due_events(i)?;
            let core = &mut self.cores[i];
            let next_event_at = core.batch.events.get(core.next_event).map_or(usize::MAX, |e| e.0 as usize);
            let mut end = core.batch.accesses.len().min(core.pos + budget).min(next_event_at);
            if end > core.pos {
                if core.functional {
                    self.functional_stage(i, end)?;
                } else {
                    let quantum_end = end;
                    end = core.cut_for_requests(end, self.timing.base_cpi);
                    self.run_stages(i, end)?;
                    if end == quantum_end && self.virt.is_none() {
                        // Once per quantum (also when requests cut it into stage calls).
                        systems::sample_tlb(&mut self.cores[i].mmu.tlb);
                    }
                    if let Some(pages) = self.conflict.as_mut() {
                        let core = &self.cores[i];
                        if !core.workload.batch_is_init() {
                            pages[i].sample(&core.refs);
                        }
                    }
                }
                budget -= end - self.cores[i].pos;
                self.cores[i].pos = end;
            }
        }
        let core = &mut self.cores[i];
        if let (true, Some(w)) = (core.done(), core.window.as_mut()) {
            // The run's end waits for what is in flight (again harmless).
            w.serialize(&mut core.stats, 0.0);
        }
        Ok(())
    }

    fn apply_due_events(&mut self, i: usize) -> Result<()> {
        loop {
            let core = &mut self.cores[i];
            let Some((at, ev)) = core.batch.events.get(core.next_event) else { break };
            if *at as usize > core.pos {
                break;
            }
            let (asid, vm, ev) = (core.asid, core.vm, ev.clone());
            core.next_event += 1;
            let partial = core.workload.partial_mappings();
            let auto = self.cfg.os_of_vm(vm).auto_vma == AutoVma::Auto;
            let kernel = self.guest_mut(vm);
            if auto && !partial {
                // A workload that describes its mappings gets no invented
                // ones; one whose events are partial keeps them.
                kernel.procs[asid as usize - 1].auto_vma = false;
            }
            match ev {
                MapEvent::Mmap { start, len, writable, name } => kernel.mmap(asid, start, len, writable, &name)?,
                MapEvent::Munmap { start, len } => kernel.munmap(asid, start, len)?,
                MapEvent::Mprotect { start, len, writable } => kernel.mprotect(asid, start, len, writable)?,
            }
            self.deliver_guest_shootdowns(vm, false);
        }
        Ok(())
    }

    /// Both stages over accesses [pos, end) of core `i`, each in the
    /// variant the timing model and the prefetchers need (the fixed model
    /// without prefetchers runs today's stages, bit for bit).
    fn run_stages(&mut self, i: usize, end: usize) -> Result<()> {
        if self.timing.tiers.is_some() {
            return self.timed_stages::<true, false>(i, end);
        }
        if self.dram.is_some() {
            return self.timed_stages::<false, true>(i, end);
        }
        let prefetch = self.caches.as_ref().is_some_and(CacheHierarchy::prefetching);
        if self.timing.model == TimingModel::Fixed && !prefetch {
            self.translate::<false>(i, end)?;
            if self.caches.is_none() && self.export.is_none() {
                self.memory_stage(i);
            } else {
                self.cache_stage(i);
            }
            return Ok(());
        }
        self.timed_stages::<false, false>(i, end)
    }

    /// Stage 1 through the run's walker: chosen here once per quantum,
    /// never per access.
    #[inline(always)]
    fn translate<const RECORD: bool>(&mut self, i: usize, end: usize) -> Result<()> {
        if self.virt.is_none() {
            if self.sample_misses {
                self.translate_stage::<RECORD, true>(i, end)
            } else {
                self.translate_stage::<RECORD, false>(i, end)
            }
        } else if self.sample_misses {
            self.translate_stage_virt::<RECORD, true>(i, end)
        } else {
            self.translate_stage_virt::<RECORD, false>(i, end)
        }
    }

    /// Stage 1: translate accesses [pos, end) of core `i` into references;
    /// with `RECORD` (the interval model), also what each translation did,
    /// for the window; with `SAMPLE` (Leshy online), one data-side L2 TLB
    /// miss in `os.elastic.leshy_sample_period` goes to the kernel's sample
    /// buffer. (Out of line, called once per quantum: inlined into `step`
    /// beside the cache stage, each loop's register allocation depended on
    /// the other's code.)
    #[inline(never)]
    fn translate_stage<const RECORD: bool, const SAMPLE: bool>(&mut self, i: usize, end: usize) -> Result<()> {
        let core = &mut self.cores[i];
        let kernel = &mut self.kernel;
        core.refs.clear();
        let asid = core.asid;
        let misses_before = core.stats.dtlb_l1_misses + core.stats.itlb_l1_misses;
        let prefetch = core.prefetch_translation;
        // The page last prefetched for: an access to the same page right
        // after it (gups' store after its load) needs no second prefetch.
        let mut prefetched_vpn = u64::MAX;
        // The access at which the next burst of prefetches is issued.
        let mut next_burst = core.pos;
        for j in core.pos..end {
            if prefetch && j == next_burst {
                // The accesses of the next burst. The stage's first burst
                // also covers the rest of the current one, which no
                // earlier burst of this stage prefetched.
                let from = if j == core.pos { j } else { j + PREFETCH_BURST };
                next_burst = j - j % PREFETCH_BURST + PREFETCH_BURST;
                let to = (next_burst + PREFETCH_BURST).min(core.batch.accesses.len());
                let pt = &kernel.proc(asid).aspace.pt;
                for ahead in core.batch.accesses.get(from..to).unwrap_or_default() {
                    let vpn = ahead.vaddr.raw() >> crate::units::PAGE_SHIFT;
                    if vpn != prefetched_vpn {
                        prefetched_vpn = vpn;
                        pt.prefetch_leaf(ahead.vaddr);
                        core.mmu.tlb.prefetch(ahead.vaddr);
                    }
                }
            }
            let a = core.batch.accesses[j];
            core.ran += 1;
            core.stats.instructions += a.instrs as u64;
            core.retired += a.instrs as u64;
            let (write, instr, kind) = request_of(a.kind);
            count_kind(&mut core.stats, a.kind);
            let req = mmu::Request { asid, vaddr: a.vaddr, write, instr };
            let before = RECORD.then(|| translation_marks::<false>(&core.stats));
            let miss_marks = SAMPLE.then_some((core.stats.dtlb_l2_misses, core.stats.walk_mem_refs));
            let frame = core.mmu.translate(kernel, req, &mut core.refs, &mut core.stats)?;
            if let Some((misses, walk_refs)) = miss_marks {
                if core.stats.dtlb_l2_misses != misses && kernel.miss_samples.on_miss(i) {
                    let walk_refs = (core.stats.walk_mem_refs - walk_refs) as u32;
                    kernel.miss_samples.push(crate::hw::tlb::MissSample { asid, vaddr: a.vaddr, walk_refs });
                }
            }
            core.refs.push(frame.addr().add(a.vaddr.page_offset()), kind);
            if RECORD {
                record_translation::<false>(core.window.as_mut(), before, &core.stats);
            }
        }
        let misses = core.stats.dtlb_l1_misses + core.stats.itlb_l1_misses - misses_before;
        core.prefetch_translation = misses * PREFETCH_MISS_SHARE >= (end - core.pos) as u64;
        Ok(())
    }

    /// Warm-up ends for the whole machine at once, when every core has
    /// retired `run.warmup` instructions and, with `run.skip_init`, ended
    /// its initialisation pass (or finished): then every statistic is
    /// reset, and nothing else (caches, TLBs, page tables and the clock
    /// keep their state).
    fn check_warmup(&mut self) {
        let (warmup, skip_init) = (self.cfg.run.warmup, self.cfg.run.skip_init);
        let ready = |c: &Core| c.done() || (c.retired >= warmup && (!skip_init || c.measuring));
        if self.warm || !self.cores.iter().all(ready) {
            return;
        }
        self.warm = true;
        self.reset_hardware_stats();
        self.kernel.reset_stats();
        if let Some(v) = &mut self.virt {
            v.reset_stats();
        }
    }

    /// Zeroes the cores' and the caches' statistics (warm-up's end, a
    /// sampled measure window's start); the state and the clock stay.
    fn reset_hardware_stats(&mut self) {
        for core in &mut self.cores {
            core.stall_offset += core.stats.stall_cycles();
            core.stats = CoreStats::default();
            if let Some(r) = core.requests.as_mut() {
                r.reset();
            }
            core.mmu.tlb.reset_stats();
            core.mmu.pwc.reset_stats();
        }
        if let Some(c) = &mut self.caches {
            c.reset_stats();
        }
    }

    fn check_epoch(&mut self) {
        let epoch = self.cfg.run.epoch;
        if epoch == 0 || self.cores[0].retired < self.next_epoch {
            return;
        }
        while self.next_epoch <= self.cores[0].retired {
            self.next_epoch += epoch;
        }
        let mut snapshot = self.stats();
        // Where the snapshot sits, for a reader of the timeseries: core 0's
        // instructions since the start (statistics restart from 0 at a
        // reset; this does not), whether core 0 was still in its
        // first-touch pass, and whether the statistics had been reset yet
        // (`run.warmup`, `run.skip_init`): rows before the reset are not
        // in the final statistics.
        snapshot.insert("epoch.instructions".into(), Stat::Int(self.cores[0].retired));
        snapshot.insert("epoch.init".into(), Stat::Int(u64::from(!self.cores[0].measuring)));
        snapshot.insert("epoch.counted".into(), Stat::Int(u64::from(self.warm)));
        self.timeseries.push(snapshot);
    }

    /// Statistics now: one flat map (see `docs/stats.md`).
    pub fn stats(&self) -> Stats {
        let mut out = stats::collect(self);
        sampling::report(self, &mut out);
        out
    }

    /// The epoch snapshots taken so far.
    pub fn timeseries(&self) -> &[Stats] {
        &self.timeseries
    }

    /// Ends the run: flushes and closes the physical-reference export;
    /// each kernel's daemons finish (Leshy writes a profile's hints).
    pub fn finish(&mut self) -> Result<()> {
        if let Some(e) = self.export.take() {
            e.finish()?;
        }
        for vm in 0..self.nr_guests() {
            self.guest_mut(vm).finish()?;
        }
        Ok(())
    }
}

/// What the translation of an access of `kind` is asked (a write, an
/// instruction fetch) and the reference it makes. Without branches: gups
/// alternates loads and stores, and a branch on the kind was mispredicted
/// on about 4 accesses of 10.
#[inline(always)]
fn request_of(kind: AccessKind) -> (bool, bool, RefKind) {
    (kind == AccessKind::Store, kind == AccessKind::IFetch, REF_KIND[kind as usize])
}

/// Counts one access as a load, store or fetch, straight into the core's
/// counters. (Summing the kinds in a local array indexed by the kind and
/// adding it after the loop took fewer instructions and cost the stream
/// 1-3% of its speed: the host reloaded the array from memory.)
#[inline(always)]
fn count_kind(stats: &mut CoreStats, kind: AccessKind) {
    match kind {
        AccessKind::Load => stats.loads += 1,
        AccessKind::Store => stats.stores += 1,
        AccessKind::IFetch => stats.ifetches += 1,
    }
}

/// What stage 1 tells the window of one access, read from the counters
/// around its translation: L1 TLB misses, walks, the events that serialise
/// (faults; with `VIRT`, a virtualized run's stage, also VM exits) and
/// their cycles. (A native stage never counts VM exits: it reads fewer.)
#[inline]
pub(super) fn translation_marks<const VIRT: bool>(s: &CoreStats) -> (u64, u64, u64, f64) {
    let (exits, virt_cycles) = if VIRT { (s.vm_exits, s.cycles_virt) } else { (0, 0.0) };
    (s.dtlb_l1_misses + s.itlb_l1_misses, s.walks, s.faults + exits, s.cycles_faults + virt_cycles)
}

/// The window's flags of one translation, from the marks before and after.
#[inline]
fn translation_flags(before: (u64, u64, u64, f64), after: (u64, u64, u64, f64)) -> u8 {
    let mut flags = 0;
    if after.0 != before.0 {
        flags |= L2_TLB;
    }
    if after.1 != before.1 {
        flags |= WALK;
    }
    // (Cycles without a new event: the INVEPTs after an EPT violation.)
    if after.2 != before.2 || after.3 != before.3 {
        flags |= FAULT;
    }
    flags
}

/// Under the interval model, stage 1's record for the window of the
/// access just translated, from the marks taken before it.
#[inline(always)]
pub(super) fn record_translation<const VIRT: bool>(
    window: Option<&mut Window>,
    before: Option<(u64, u64, u64, f64)>,
    stats: &CoreStats,
) {
    if let (Some(before), Some(w)) = (before, window) {
        let after = translation_marks::<VIRT>(stats);
        w.record(translation_flags(before, after), after.3 - before.3);
    }
}

/// The workload a workload table describes: a trace reader, else a
/// generator (validated; errors name keys under `key_prefix`).
pub fn build_workload(
    cfg: &crate::workload::WorkloadConfig,
    key_prefix: &str,
) -> Result<Box<dyn crate::workload::Workload>> {
    if cfg.kind == crate::workload::WorkloadKind::Trace {
        cfg.validate(key_prefix)?;
        return Ok(Box::new(crate::trace::TraceWorkload::new(cfg, key_prefix)?));
    }
    workload::build_generator(cfg, key_prefix)
}
