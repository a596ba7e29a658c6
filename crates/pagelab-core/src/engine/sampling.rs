//! Sampled measurement (`run.sampling`): periodic, systematic sampling in
//! the manner of SMARTS. After a lead-in (every workload's init pass and
//! own fast-forward), the run is `windows` periods of
//!
//! ```text
//! | warm-up (timed, discarded) | measure (timed, counted) | fast-forward (functional) |
//! ```
//!
//! in core 0's accesses, window k starting `k x period` accesses after the
//! lead-in; the run ends with the last measure window. Phases are
//! machine-wide: every core is in the same phase, so co-running cores
//! contend in the caches during each other's measure windows (all cores
//! run `run.quantum` accesses per round, so core 0's count is everyone's).
//! A phase changes at the end of the round in which core 0 reached its
//! boundary: with sizes that are multiples of `run.quantum`, exactly there.
//!
//! What is summed: the cores' and the caches' statistics
//! (`stats::hardware`, the systems' TLB counters) are reset at each measure
//! window's start and added up at its end; ratios are recomputed from the
//! sums, `dtlb.l2.share.*` is the mean over windows. The OS's statistics
//! (`os.*`, `khugepaged.*`, the systems' own) are never reset under
//! sampling: the OS sees every access, fast-forwarded or not, so they count
//! the whole run exactly; `mem.*` and `phys.*` describe its end.
//!
//! The error: each window gives a CPI (cycles / instructions, of all cores
//! and of each); their mean, sample standard deviation, standard error and
//! the half-width of a 95% confidence interval of the mean (Student's t with
//! windows - 1 degrees of freedom) are `sample.cpi.*`.

use super::functional::FastForward;
use super::{stats, Simulation};
use crate::config::{SamplingConfig, SimConfig};
use crate::stat::{accumulate, student_t_975, Scope, Section, Stat, StatDecl, StatTable, Stats};
use crate::workload::FastForwardMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The init passes and the workloads' own fast-forwards (functional).
    LeadIn,
    Warmup,
    Measure,
    FastForward,
    Done,
}

/// The schedule, and what the closed windows measured.
#[derive(Debug)]
pub(super) struct Sampling {
    cfg: SamplingConfig,
    phase: Phase,
    /// Core 0's accesses when the lead-in ended.
    origin: u64,
    /// The window being run (0-based).
    window: u64,
    /// Core 0's accesses, from `origin`, when the current measure began.
    measure_start: u64,
    /// The hardware statistics summed over the closed windows.
    sums: Stats,
    /// The cost of every fault of the closed windows.
    fault_cycles: Vec<f32>,
    /// Per closed window, per core: (instructions, cycles).
    windows: Vec<Vec<(u64, f64)>>,
}

/// The pace of a core's first functional fast-forward: the configured
/// `run.fast_forward_cpi`, else the base CPI (nothing is measured yet).
pub(super) fn initial_fast_forward_cpi(cfg: &SimConfig) -> f64 {
    if cfg.run.fast_forward_cpi > 0.0 {
        cfg.run.fast_forward_cpi
    } else {
        cfg.machine.timing.base_cpi
    }
}

impl Sampling {
    pub(super) fn new(cfg: &SamplingConfig) -> Sampling {
        Sampling {
            cfg: cfg.clone(),
            phase: Phase::LeadIn,
            origin: 0,
            window: 0,
            measure_start: 0,
            sums: Stats::new(),
            fault_cycles: Vec::new(),
            windows: Vec::new(),
        }
    }

    /// Whether the last window has closed (the run is over).
    pub(super) fn finished(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether the cores now run functionally.
    pub(super) fn fast_forwarding(&self) -> bool {
        matches!(self.phase, Phase::LeadIn | Phase::FastForward | Phase::Done)
    }

    /// Core 0's access count at which window `k` starts.
    fn window_start(&self, k: u64) -> u64 {
        self.origin.saturating_add(k.saturating_mul(self.cfg.period()))
    }

    fn warmup_end(&self) -> u64 {
        self.window_start(self.window).saturating_add(self.cfg.warmup)
    }

    fn measure_end(&self) -> u64 {
        self.warmup_end().saturating_add(self.cfg.measure)
    }
}

impl Simulation {
    /// At the end of a round: moves the schedule on (through every phase
    /// whose boundary core 0 has passed) and sets each core's mode.
    pub(super) fn check_sampling(&mut self) {
        let Some(mut s) = self.sampling.take() else { return };
        loop {
            let (ran, over) = (self.cores[0].ran, self.cores[0].done());
            s.phase = match s.phase {
                Phase::Done => break,
                _ if over && s.phase != Phase::Measure => Phase::Done,
                Phase::LeadIn if self.cores.iter().all(|c| c.done() || c.measuring) => {
                    s.origin = ran;
                    Phase::Warmup
                }
                Phase::Warmup if ran >= s.warmup_end() => {
                    self.reset_hardware_stats();
                    s.measure_start = ran - s.origin;
                    Phase::Measure
                }
                Phase::Measure if over || ran >= s.measure_end() => {
                    self.close_window(&mut s);
                    s.window += 1;
                    if over || s.window == s.cfg.windows as u64 {
                        Phase::Done
                    } else {
                        Phase::FastForward
                    }
                }
                Phase::FastForward if ran >= s.window_start(s.window) => Phase::Warmup,
                _ => break,
            };
        }
        let ff = s.fast_forwarding();
        for core in &mut self.cores {
            core.functional = core.functional_batch || ff;
        }
        self.sampling = Some(s);
    }

    /// The end of a measure window: what is in flight finishes inside it;
    /// its statistics are added to the sums and recorded in the timeseries;
    /// its CPI paces the next fast-forwards (`run.fast_forward_cpi = 0`).
    fn close_window(&mut self, s: &mut Sampling) {
        let base_cpi = self.timing.base_cpi;
        for core in &mut self.cores {
            if let Some(w) = core.window.as_mut() {
                w.serialize(&mut core.stats, 0.0);
            }
            let clock = core.clock(base_cpi);
            if let Some(r) = core.requests.as_mut() {
                r.close_window(clock);
            }
        }
        let measured_pace = self.cfg.run.fast_forward_cpi == 0.0;
        let mut per_core = Vec::with_capacity(self.cores.len());
        for core in &mut self.cores {
            let st = &core.stats;
            let cycles = base_cpi * st.instructions as f64 + st.stall_cycles();
            per_core.push((st.instructions, cycles));
            if measured_pace && st.instructions > 0 {
                let busy = cycles - st.cycles_faults - st.cycles_daemon;
                core.ff.cpi = busy / st.instructions as f64;
            }
        }
        let mut faults = Vec::new();
        add_into(&mut s.sums, &stats::hardware(self, &mut faults));
        add_into(&mut s.sums, &stats::ext_stats(self));
        s.fault_cycles.extend(faults);
        // The window's own statistics (the OS's so far), as an epoch record.
        let mut record = stats::collect(self);
        record.insert("sample.window".into(), Stat::Int(s.window));
        record.insert("sample.window.start".into(), Stat::Int(s.measure_start));
        record.insert("sample.window.cpi".into(), Stat::Float(machine_cpi(&per_core)));
        for (id, &(instrs, cycles)) in per_core.iter().enumerate() {
            record.insert(format!("core{id}.sample.window.cpi"), Stat::Float(ratio(cycles, instrs)));
        }
        self.timeseries.push(record);
        s.windows.push(per_core);
    }
}

/// Adds `w`'s statistics into `sums`, name by name.
fn add_into(sums: &mut Stats, w: &Stats) {
    for (k, v) in w {
        accumulate(sums, k, *v);
    }
}

fn ratio(cycles: f64, instructions: u64) -> f64 {
    if instructions > 0 {
        cycles / instructions as f64
    } else {
        0.0
    }
}

/// One window's CPI over all cores.
fn machine_cpi(per_core: &[(u64, f64)]) -> f64 {
    let instrs: u64 = per_core.iter().map(|p| p.0).sum();
    let cycles: f64 = per_core.iter().map(|p| p.1).sum();
    ratio(cycles, instrs)
}

/// What sampled measurement and functional fast-forwards add (only in
/// such runs). The per-window ones are in `Result.timeseries` only.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Sampling,
    stats: &[
        StatDecl::count("sample.fast_forward.accesses", "accesses the functional fast-forwards ran (never reset)"),
        StatDecl::count("sample.fast_forward.instructions", "instructions they ran (never reset)"),
        StatDecl::count("sample.fast_forward.faults", "faults they took (never reset)"),
        StatDecl::count(
            "sample.fast_forward.cycles",
            "how far they moved the clocks: `run.fast_forward_cpi` (or the measured CPI) x instructions, plus \
             their faults' and daemon interrupts' cycles",
        )
        .cycles(),
        StatDecl::count("sample.windows", "measure windows run (sampling only)").machine(),
        StatDecl::count("sample.cpi.mean", "the per-window CPI (cycles / instructions in the window): its mean")
            .ratio()
            .scope(Scope::Core),
        StatDecl::count("sample.cpi.sd", "its sample standard deviation (0 with fewer than two windows)")
            .ratio()
            .scope(Scope::Core),
        StatDecl::count("sample.cpi.se", "the standard error of its mean").ratio().scope(Scope::Core),
        StatDecl::count(
            "sample.cpi.ci95",
            "the half-width of its 95% confidence interval (Student's t, windows - 1 degrees of freedom)",
        )
        .ratio()
        .scope(Scope::Core),
        StatDecl::count("sample.window", "in each record of `Result.timeseries` under sampling: the window's index")
            .machine(),
        StatDecl::count(
            "sample.window.start",
            "in each such record: core 0's accesses after the lead-in when the window began",
        )
        .machine(),
        StatDecl::count("sample.window.cpi", "in each such record: the window's CPI (all cores; `coreN.` each)")
            .ratio()
            .scope(Scope::Core),
    ],
}];

/// The statistics of a run with sampling or a functional fast-forward:
/// the hardware part replaced by the sums over the measure windows, and
/// `sample.*` (docs/stats.md). Other runs are left as they are.
pub(super) fn report(sim: &Simulation, out: &mut Stats) {
    // Configured, or fed by a workload of the caller's (a scripted one).
    let functional_ff = sim.cfg.workload_list().iter().any(|w| w.fast_forward_mode == FastForwardMode::Functional)
        || sim.cores.iter().any(|c| c.ff.accesses > 0);
    if sim.sampling.is_none() && !functional_ff {
        return;
    }
    fast_forward_stats(out, sim.cores.iter().map(|c| (c.id, &c.ff)));
    if let Some(s) = &sim.sampling {
        s.replace_hardware(sim, out);
        s.estimates(out, sim.cores.len());
    }
}

/// `sample.fast_forward.*`, per core and summed.
fn fast_forward_stats<'a>(out: &mut Stats, cores: impl Iterator<Item = (usize, &'a FastForward)>) {
    let mut total = FastForward::default();
    for (id, ff) in cores {
        put_fast_forward(out, &format!("core{id}."), ff);
        total.accesses += ff.accesses;
        total.instructions += ff.instructions;
        total.faults += ff.faults;
        total.cycles += ff.cycles;
    }
    put_fast_forward(out, "", &total);
}

fn put_fast_forward(out: &mut Stats, prefix: &str, ff: &FastForward) {
    let p = format!("{prefix}sample.fast_forward");
    out.insert(format!("{p}.accesses"), Stat::Int(ff.accesses));
    out.insert(format!("{p}.instructions"), Stat::Int(ff.instructions));
    out.insert(format!("{p}.faults"), Stat::Int(ff.faults));
    out.insert(format!("{p}.cycles"), Stat::Float(ff.cycles));
}

impl Sampling {
    /// Every hardware statistic becomes its sum over the closed windows
    /// (zero before the first); the ratios and `runtime.cycles` are
    /// recomputed from the sums, `dtlb.l2.share.*` averaged over windows.
    fn replace_hardware(&self, sim: &Simulation, out: &mut Stats) {
        let mut scratch = Vec::new();
        let names = stats::hardware(sim, &mut scratch).into_iter().chain(stats::ext_stats(sim));
        let n = self.windows.len() as f64;
        for (k, v) in names {
            let mut sum = self.sums.get(&k).copied().unwrap_or(v.zero_like());
            if k.contains("dtlb.l2.share.") && n > 0.0 {
                sum = Stat::Float(sum.as_f64() / n);
            }
            out.insert(k, sum);
        }
        stats::derived(out, &self.fault_cycles);
        let cycles = (0..sim.cores.len()).map(|id| out.get(&format!("core{id}.cycles")).map_or(0.0, |c| c.as_f64()));
        let cycles: Vec<f64> = cycles.collect();
        stats::runtime(out, cycles.into_iter());
    }

    /// `sample.windows` and the per-window CPI's estimates: over all cores
    /// (`sample.cpi.*`) and per core (`coreN.sample.cpi.*`).
    fn estimates(&self, out: &mut Stats, cores: usize) {
        out.insert("sample.windows".into(), Stat::Int(self.windows.len() as u64));
        let all: Vec<f64> = self.windows.iter().map(|w| machine_cpi(w)).collect();
        put_estimate(out, "sample.cpi", &Estimate::of(&all));
        for id in 0..cores {
            let mine: Vec<f64> = self.windows.iter().map(|w| ratio(w[id].1, w[id].0)).collect();
            put_estimate(out, &format!("core{id}.sample.cpi"), &Estimate::of(&mine));
        }
    }
}

fn put_estimate(out: &mut Stats, prefix: &str, e: &Estimate) {
    for (name, v) in [("mean", e.mean), ("sd", e.sd), ("se", e.se), ("ci95", e.ci95)] {
        out.insert(format!("{prefix}.{name}"), Stat::Float(v));
    }
}

/// The mean of per-window values and its error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Estimate {
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator).
    pub sd: f64,
    /// Standard error of the mean: sd / sqrt(n).
    pub se: f64,
    /// Half-width of the 95% confidence interval of the mean: t x se.
    pub ci95: f64,
}

impl Estimate {
    /// From the values of `xs`; with fewer than two values the error is
    /// unknown and reported as 0 (`sample.windows` says how many).
    /// Deviations are taken from the first value, so equal values give a
    /// mean equal to them and a deviation of exactly 0.
    pub(super) fn of(xs: &[f64]) -> Estimate {
        let Some(&first) = xs.first() else { return Estimate { mean: 0.0, sd: 0.0, se: 0.0, ci95: 0.0 } };
        let n = xs.len() as f64;
        let (sum, sum_sq) = xs.iter().fold((0.0, 0.0), |(s, q), &x| (s + (x - first), q + (x - first) * (x - first)));
        let mean = first + sum / n;
        if xs.len() < 2 {
            return Estimate { mean, sd: 0.0, se: 0.0, ci95: 0.0 };
        }
        let var = ((sum_sq - sum * sum / n) / (n - 1.0)).max(0.0);
        let sd = var.sqrt();
        let se = sd / n.sqrt();
        Estimate { mean, sd, se, ci95: student_t_975(xs.len() as u64 - 1) * se }
    }
}
