//! Scenario tests of the functional fast-forward and of sampled
//! measurement, worked out by hand: the faults a fast-forward makes, its
//! clock, the sums over measure windows, the error estimate, the refusals.

use super::sampling::Estimate;
use super::testutil::*;
use super::*;
use crate::config::parse_config;
use crate::stat::student_t_975 as t_975;
use crate::units::PageSize;
use crate::workload::{Access, Workload};

/// A scripted workload whose every batch is a functional fast-forward.
struct FastForwardScript(Script);

impl Workload for FastForwardScript {
    fn name(&self) -> &str {
        "fast-forward"
    }
    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> bool {
        self.0.next_batch(batch, max)
    }
    fn footprint(&self) -> u64 {
        0
    }
    fn batch_is_fast_forward(&self) -> bool {
        true
    }
}

/// `pages` fresh pages of a region at BASE, each touched `per_page`
/// times (a store first, then loads), `instrs` instructions per access.
fn touches(pages: u64, per_page: u64, instrs: u32) -> Vec<Batch> {
    let mut accesses = Vec::new();
    for k in 0..per_page {
        for p in 0..pages {
            let a = BASE.add(p * 4096 + k * 64);
            accesses.push(if k == 0 { Access::store(a, 8, instrs) } else { Access::load(a, 8, instrs) });
        }
    }
    vec![batch(vec![mmap(BASE, 8 << 20)], accesses)]
}

fn run_scripted(cfg: SimConfig, batches: Vec<Batch>, functional: bool) -> Simulation {
    let w: Box<dyn Workload> =
        if functional { Box::new(FastForwardScript(Script { batches })) } else { Box::new(Script { batches }) };
    let mut sim = Simulation::with_workloads(cfg, vec![w]).unwrap();
    sim.run().unwrap();
    sim
}

/// Every 4 KiB page of the region, as the page table maps it now.
fn mappings(sim: &Simulation) -> Vec<Option<(u64, PageSize, bool, bool)>> {
    let pt = &sim.kernel.proc(1).aspace.pt;
    let map = |p: u64| pt.lookup(BASE.add(p * 4096)).map(|m| (m.frame.raw(), m.size, m.pte.accessed(), m.pte.dirty()));
    (0..2048).map(map).collect()
}

#[test]
fn a_functional_fast_forward_makes_the_timed_runs_faults_and_leaves_the_hardware_untouched() {
    // 1000 pages of an 8 MiB region, touched 3 times each: 1000 faults
    // under base; under THP one per aligned 2 MiB range touched (pages
    // 0..511 and 512..999), each a huge page.
    for (policy, faults, huge) in [("base", 1000.0, 0.0), ("thp", 2.0, 2.0)] {
        let cfg = config(&[&format!("os.policy=\"{policy}\""), "os.thp.khugepaged=false", "run.quantum=64"]);
        let timed = run_scripted(cfg.clone(), touches(1000, 3, 1), false);
        let ff = run_scripted(cfg, touches(1000, 3, 1), true);
        assert_eq!(stat(&timed, "faults"), faults, "{policy}");
        assert_eq!(stat(&timed, "faults.huge"), huge, "{policy}");
        assert_eq!(stat(&ff, "sample.fast_forward.faults"), faults, "{policy}");
        assert_eq!(stat(&ff, "sample.fast_forward.accesses"), 3000.0);
        for name in ["os.faults.base", "os.faults.thp", "mem.mapped.4k", "mem.mapped.2m", "mem.pagetables", "phys.free"]
        {
            assert_eq!(stat(&ff, name), stat(&timed, name), "{policy}: {name}");
        }
        // The same frames, page sizes and accessed/dirty bits, page by page.
        assert_eq!(mappings(&ff), mappings(&timed), "{policy}");
        // The core and the hardware saw nothing.
        for name in ["instructions", "accesses", "faults", "walks", "dtlb.l1.misses", "cache.l1d.accesses", "cycles"] {
            assert_eq!(stat(&ff, name), 0.0, "{policy}: {name}");
        }
        assert_eq!(stat(&ff, "core0.tlb.l1d_4k.lookups"), 0.0);
    }
}

#[test]
fn the_fast_forwards_clock_is_its_cpi_times_instructions_plus_its_faults() {
    // 100 pages, 4 accesses each of 3 instructions, at a CPI of 2: the
    // clock moves 2 x 1200 = 2400 cycles plus 100 faults of
    // os.fault_cost.base (1537 cycles each, the default): 156,100.
    let cfg = config(&["run.fast_forward_cpi=2.0", "run.quantum=64"]);
    let sim = run_scripted(cfg, touches(100, 4, 3), true);
    let expected = 2.0 * 1200.0 + 100.0 * 1537.0;
    assert_eq!(stat(&sim, "sample.fast_forward.instructions"), 1200.0);
    assert_eq!(stat(&sim, "sample.fast_forward.cycles"), expected);
    assert_eq!(sim.cores[0].clock(sim.timing.base_cpi), expected);
    // Without a CPI of its own it runs at the base CPI (0.5).
    let sim = run_scripted(config(&["run.quantum=64"]), touches(100, 4, 3), true);
    assert_eq!(stat(&sim, "sample.fast_forward.cycles"), 0.5 * 1200.0 + 100.0 * 1537.0);
}

#[test]
fn khugepaged_runs_on_the_fast_forwards_clock() {
    // thp without fault-time huge pages: only khugepaged makes them, on the
    // simulated clock, which a fast-forward of 512 faults moves by 512 x
    // 1537 cycles: far past a wake-up period of 0.001 ms (3,000 cycles).
    let cfg = config(&["os.policy=\"thp\"", "os.thp.fault=false", "os.thp.scan_sleep_ms=0.001", "run.quantum=64"]);
    let sim = run_scripted(cfg, vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 512))], true);
    // As in the timed run of `khugepaged_collapses_as_soon_as_max_ptes_none_allows`:
    // the first quantum's 64 pages fault, then the range is collapsed.
    assert_eq!(stat(&sim, "khugepaged.succeed"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.2m"), (2 << 20) as f64);
    assert_eq!(stat(&sim, "sample.fast_forward.faults"), 64.0);
    assert!(stat(&sim, "khugepaged.wakeups") >= 1.0);
}

#[test]
fn a_generators_functional_fast_forward_reaches_the_os_and_a_dropped_one_does_not() {
    let run = |mode: &str| {
        let cfg = config(&[
            "workload.kind=\"stride\"",
            "workload.footprint=\"4MiB\"",
            "workload.stride=4096",
            "workload.accesses=100",
            "workload.fast_forward=1000",
            &format!("workload.fast_forward_mode=\"{mode}\""),
        ]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        sim
    };
    let dropped = run("drop");
    let functional = run("functional");
    // 1024 pages of 4 KiB: the dropped 1000 accesses fault nowhere, so the
    // 100 measured ones fault on pages 1000..1023 and then 0..75.
    assert_eq!(stat(&dropped, "faults"), 100.0);
    assert!(!dropped.stats().contains_key("sample.fast_forward.accesses"), "a default run's names are unchanged");
    assert_eq!(stat(&functional, "sample.fast_forward.faults"), 1000.0);
    assert_eq!(stat(&functional, "faults"), 24.0);
    assert_eq!(stat(&functional, "accesses"), 100.0);
    assert_eq!(stat(&functional, "os.faults.base"), 1024.0);
}

fn sampled(extra: &[&str]) -> Simulation {
    let mut all = vec![
        "workload.kind=\"stride\"",
        "workload.footprint=\"2MiB\"",
        "workload.stride=256",
        "workload.init=\"pages\"",
        "workload.accesses=200000",
        "run.quantum=64",
    ];
    all.extend_from_slice(extra);
    let mut sim = Simulation::new(config(&all)).unwrap();
    sim.run().unwrap();
    sim
}

/// The integer counters of the cores and the hardware.
const COUNTERS: [&str; 10] = [
    "instructions",
    "accesses",
    "dtlb.l1.misses",
    "dtlb.l2.misses",
    "walks",
    "walk.mem_refs",
    "cache.l1d.misses",
    "cache.l2.misses",
    "cache.llc.accesses",
    "core0.tlb.l1d_4k.hits",
];

#[test]
fn sampling_sums_exactly_the_measure_windows_of_a_timed_run() {
    // No fast-forward: windows of 128 warm-up and 256 measured accesses,
    // back to back, all timed. A plain run with a snapshot every round
    // (64 accesses of 3 instructions) gives every window's counts as
    // differences of snapshots; the sampled run's sums must be theirs.
    // (No init pass, which sampling would fast-forward and the plain run
    // time.)
    let (fixed, no_init) = ("machine.timing.model=\"fixed\"", "workload.init=\"none\"");
    let s = sampled(&[fixed, no_init, "run.sampling.windows=3", "run.sampling.warmup=128", "run.sampling.measure=256"]);
    let plain = sampled(&[fixed, no_init, "run.epoch=192", "workload.accesses=1152"]);
    let ts = plain.timeseries();
    let at = |accesses: u64| {
        let round = ts.iter().find(|r| r["accesses"].as_f64() as u64 == accesses).expect("a snapshot there");
        move |name: &str| round[name].as_f64()
    };
    for name in COUNTERS {
        let expected: f64 = (0..3).map(|k| at(k * 384 + 384)(name) - at(k * 384 + 128)(name)).sum();
        assert_eq!(stat(&s, name), expected, "{name}");
    }
    assert_eq!(stat(&s, "accesses"), 768.0);
    assert_eq!(stat(&s, "sample.windows"), 3.0);
    assert_eq!(s.timeseries().len(), 3, "one record per window");
    assert_eq!(s.timeseries()[2]["sample.window.start"].as_f64(), 2.0 * 384.0 + 128.0);
    // Page p is first touched by access 16p. The OS counts the whole
    // run's faults (pages 0..71); the windows hold pages 8..23, 32..47
    // and 56..71.
    assert_eq!(stat(&s, "os.faults.base"), 72.0);
    assert_eq!(stat(&s, "faults"), 48.0);
}

#[test]
fn a_periodic_workload_gives_k_equal_windows_and_no_error() {
    // The stride sweeps its 2 MiB in 8192 accesses; windows every 3 sweeps
    // (2 timed, 1 fast-forwarded) see the same addresses, and a full sweep
    // of warm-up leaves every LRU structure in the same state. (The fixed
    // model: under the interval model the first window measured 1.1% more
    // cycles than the later ones, which equal each other; see below.)
    let window = ["run.sampling.warmup=8192", "run.sampling.measure=8192", "run.sampling.fast_forward=8192"];
    let fixed = "machine.timing.model=\"fixed\"";
    let one = sampled(&[&["run.sampling.windows=1", fixed][..], &window].concat());
    let four = sampled(&[&["run.sampling.windows=4", fixed][..], &window].concat());
    for name in COUNTERS {
        assert_eq!(stat(&four, name), 4.0 * stat(&one, name), "{name}");
    }
    assert_eq!(stat(&four, "cycles"), 4.0 * stat(&one, "cycles"));
    assert_eq!(stat(&four, "sample.windows"), 4.0);
    assert_eq!(stat(&four, "sample.cpi.sd"), 0.0);
    assert_eq!(stat(&four, "sample.cpi.ci95"), 0.0);
    assert_eq!(stat(&four, "sample.cpi.mean"), stat(&one, "cycles") / stat(&one, "instructions"));
    // Three fast-forwards of 8192 accesses (none after the last window),
    // plus the init pass (512 stores) in the lead-in.
    assert_eq!(stat(&four, "sample.fast_forward.accesses"), 3.0 * 8192.0 + 512.0);
    // The interval model: the same counts in every window; the cycles of
    // the windows after the first equal each other. The first window's
    // warm-up is the first timed sweep, so its prefetches fill from memory
    // (the later ones' from the LLC), and those still in flight when the
    // measurement begins delay demand hits (counted as hits): 138 more data
    // cycles, +1.1%.
    let interval = sampled(&[&["run.sampling.windows=4"][..], &window].concat());
    let cycles: Vec<f64> = interval.timeseries().iter().map(|r| r["cycles"].as_f64()).collect();
    assert!(cycles[1] == cycles[2] && cycles[2] == cycles[3] && cycles[0] > cycles[1], "{cycles:?}");
    for name in COUNTERS {
        assert_eq!(stat(&interval, name), 4.0 * stat(&one, name), "{name}");
    }
    // A warm-up of a sweep and a half lets those fills land: four equal windows.
    let longer = ["run.sampling.warmup=12288", "run.sampling.measure=8192", "run.sampling.fast_forward=4096"];
    let interval = sampled(&[&["run.sampling.windows=4"][..], &longer].concat());
    let cycles: Vec<f64> = interval.timeseries().iter().map(|r| r["cycles"].as_f64()).collect();
    assert!(cycles.iter().all(|&c| c == cycles[0]), "{cycles:?}");
    assert_eq!(stat(&interval, "sample.cpi.sd"), 0.0);
}

/// Loads that hit one 4 KiB page for `n` accesses, then `n` loads a page
/// apart over 64 MiB (a TLB miss and a cache miss each).
fn two_phases(n: u64) -> Vec<Batch> {
    let hot = (0..n).map(|i| Access::load(BASE.add((i % 64) * 64), 8, 1));
    let cold = (0..n).map(|i| Access::load(BASE.add(4096 + (i % 16383) * 4096), 8, 1));
    vec![batch(vec![mmap(BASE, 64 << 20)], hot.chain(cold).collect())]
}

#[test]
fn a_phase_change_gives_a_positive_error() {
    let cfg = config(&[
        "run.quantum=64",
        "run.sampling.windows=4",
        "run.sampling.warmup=1024",
        "run.sampling.measure=1024",
        "run.sampling.fast_forward=14336",
    ]);
    let sim = run_scripted(cfg, two_phases(32768), false);
    assert_eq!(stat(&sim, "sample.windows"), 4.0);
    let cpi: Vec<f64> = sim.timeseries().iter().map(|r| r["sample.window.cpi"].as_f64()).collect();
    assert!(cpi[0] == cpi[1] && cpi[1] < cpi[2], "{cpi:?}");
    let e = Estimate::of(&cpi);
    assert!(stat(&sim, "sample.cpi.sd") > 0.0);
    assert_eq!(stat(&sim, "sample.cpi.sd"), e.sd);
    assert_eq!(stat(&sim, "sample.cpi.ci95"), e.ci95);
    assert!((e.ci95 - t_975(3) * e.sd / 2.0).abs() <= 1e-12 * e.ci95);
    assert_eq!(stat(&sim, "core0.sample.cpi.mean"), stat(&sim, "sample.cpi.mean"));
}

#[test]
fn the_estimate_is_worked_out_by_hand() {
    // 1, 2, 3: mean 2, sd 1, se 1/sqrt(3), t(2) = 4.303.
    let e = Estimate::of(&[1.0, 2.0, 3.0]);
    assert_eq!((e.mean, e.sd), (2.0, 1.0));
    assert!((e.se - 1.0 / 3f64.sqrt()).abs() < 1e-15);
    assert!((e.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    assert_eq!(Estimate::of(&[0.7; 5]).sd, 0.0);
    assert_eq!(Estimate::of(&[5.0]).ci95, 0.0);
    // The expansion beyond the table meets it at 30 and the normal far out.
    assert!((t_975(31) - 2.040).abs() < 1e-3 && (t_975(60) - 2.000).abs() < 1e-3);
    assert!((t_975(100_000) - 1.960).abs() < 1e-3);
}

#[test]
fn co_running_cores_measure_the_same_windows() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n\
        [[workloads]]\nkind = \"stride\"\nfootprint = \"2MiB\"\nstride = 256\naccesses = 100000\n\
        [[workloads]]\nkind = \"gups\"\nfootprint = \"4MiB\"\naccesses = 100000\n\
        [run]\nquantum = 64\nsampling = { windows = 3, warmup = 512, measure = 1024, fast_forward = 4096 }\n";
    let mut sim = Simulation::new(parse_config(text, "t.toml", &[]).unwrap()).unwrap();
    sim.run().unwrap();
    for core in ["core0", "core1"] {
        assert_eq!(stat(&sim, &format!("{core}.accesses")), 3.0 * 1024.0, "{core}");
        assert!(stat(&sim, &format!("{core}.sample.cpi.mean")) > 0.0);
    }
    assert_eq!(stat(&sim, "runtime.cycles"), stat(&sim, "core0.cycles").max(stat(&sim, "core1.cycles")));
}

#[test]
fn sampling_is_deterministic() {
    let run = || {
        let s = sampled(&["run.sampling.windows=3", "run.sampling.warmup=1000", "run.sampling.measure=3000"]);
        serde_json::to_string(&(s.stats(), s.timeseries().to_vec())).unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn combinations_that_make_no_sense_are_refused_naming_the_key() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let key = |extra: &[&str]| {
        let overrides: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        match parse_config(text, "t.toml", &overrides).and_then(Simulation::new) {
            Err(crate::Error::Config { key, .. }) => key,
            other => panic!("{extra:?}: {:?}", other.map(|_| ())),
        }
    };
    let on = "run.sampling.windows=2";
    assert_eq!(key(&[on, "run.sampling.measure=10", "run.warmup=100"]), "run.warmup");
    assert_eq!(key(&[on, "run.sampling.measure=10", "run.epoch=100"]), "run.epoch");
    assert_eq!(key(&[on]), "run.sampling.measure");
    assert_eq!(key(&["run.sampling.warmup=10"]), "run.sampling.warmup");
    assert_eq!(key(&["run.fast_forward_cpi=-1"]), "run.fast_forward_cpi");
    let virt = ["virt.enabled=true", "virt.guest_mem=\"64MiB\""];
    assert_eq!(key(&[&virt[..], &[on, "run.sampling.measure=10"]].concat()), "run.sampling.windows");
    assert_eq!(
        key(&[&virt[..], &["workload.fast_forward_mode=\"functional\""]].concat()),
        "workload.fast_forward_mode"
    );
}
