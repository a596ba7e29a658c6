//! Request latencies through the engine: worked by hand under the fixed
//! model, the sum identity under the interval model, kv's one request per
//! operation, VMs, programs in sequence, sampling, and that measuring
//! requests changes no other statistic.

use super::testutil::*;
use super::*;
use crate::workload::{Access, Site, Workload};

/// The request site of the scripts below.
const SITE: Site = Site::pc(9);

/// A scripted workload whose requests begin at `site` (None: a program
/// that serves no requests, for comparison).
struct Served {
    script: Script,
    site: Option<Site>,
}

impl Workload for Served {
    fn name(&self) -> &str {
        "served"
    }
    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> bool {
        self.script.next_batch(batch, max)
    }
    fn footprint(&self) -> u64 {
        0
    }
    fn request_site(&self) -> Option<Site> {
        self.site
    }
}

fn run_served(cfg: SimConfig, batches: Vec<Batch>, site: Option<Site>) -> Simulation {
    let served = Served { script: Script { batches }, site };
    let mut sim = Simulation::with_workloads(cfg, vec![Box::new(served)]).unwrap();
    sim.run().unwrap();
    sim
}

/// A request of `extra` loads after its site's: the site's load carries
/// 10 instructions, each other load 1; all within the first page.
fn request(extra: u64) -> Vec<Access> {
    let mut v = vec![Access::load(BASE, 8, 10).at(SITE)];
    v.extend((1..=extra).map(|k| Access::load(BASE.add(64 * k), 8, 1).at(Site::pc(2))));
    v
}

/// Fixed model, no caches (every reference is served by memory), no
/// prefetchers, base pages and no daemon: each data reference costs
/// (200 - 4) / 1 = 196 cycles, each instruction 1.
const BY_HAND: &[&str] = &[
    "machine.timing.model=\"fixed\"",
    "machine.prefetch.enabled=false",
    "machine.cache.enabled=false",
    "machine.cache.l1d.latency=4",
    "machine.memory.latency=200",
    "machine.timing.base_cpi=1.0",
    "machine.timing.mlp=1.0",
    "os.policy=\"base\"",
    "run.quantum=3",
];

#[test]
fn ten_requests_worked_by_hand_with_their_percentiles() {
    // A first batch maps and touches the page (its fault and walk come
    // before the first request: not measured). Then ten requests of k = 0..9
    // extra loads, in a shuffled order and cut across batches and quanta of
    // 3 accesses: request k has 10 + k instructions and k + 1 references,
    // 10 + k + 196 (k + 1) = 206 + 197 k cycles (L1 TLB hits: no
    // translation cycles).
    let order = [3u64, 9, 0, 5, 1, 8, 2, 7, 4, 6];
    let all: Vec<Access> = order.iter().flat_map(|&k| request(k)).collect();
    let (first, second) = all.split_at(17);
    let warm = batch(vec![mmap(BASE, 4 << 20)], vec![Access::store(BASE, 8, 1)]);
    let batches = vec![warm, batch(vec![], first.to_vec()), batch(vec![], second.to_vec())];
    let sim = run_served(config(BY_HAND), batches, Some(SITE));
    let k = |k: f64| 206.0 + 197.0 * k;
    assert_eq!(stat(&sim, "core0.requests"), 10.0);
    assert_eq!(stat(&sim, "core0.request.cycles_mean"), k(4.5), "the mean of k = 0..9");
    // Nearest rank over 10: p90 the 9th (k = 8), p95 and p99 the 10th.
    assert_eq!(stat(&sim, "core0.request.cycles_p90"), k(8.0));
    assert_eq!(stat(&sim, "core0.request.cycles_p95"), k(9.0));
    assert_eq!(stat(&sim, "core0.request.cycles_p99"), k(9.0));
    // The requests cover everything after the first batch.
    let covered = stat(&sim, "core0.request.cycles_mean") * 10.0;
    let warm_cycles = stat(&sim, "core0.cycles.faults") + stat(&sim, "core0.cycles.translation") + 1.0 + 196.0;
    assert_eq!(stat(&sim, "core0.cycles"), covered + warm_cycles);
}

/// Requests of random independent loads over 64 MiB (misses that overlap
/// across request boundaries, faults, walks), each request's first access
/// at the site.
fn random_requests(n: usize) -> Vec<Batch> {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut accesses = Vec::new();
    for r in 0..n {
        let len = 1 + (r * 7) % 13;
        for j in 0..len {
            let a = Access::load(BASE.add(rng.random_range(0..(64u64 << 20)) & !7), 8, 3);
            let site = if j == 0 { SITE } else { Site::pc(2) };
            accesses.push(a.at(site));
        }
    }
    let mut batches = vec![batch(vec![mmap(BASE, 64 << 20)], accesses[..1000].to_vec())];
    batches.extend(accesses[1000..].chunks(777).map(|c| batch(vec![], c.to_vec())));
    batches
}

#[test]
fn under_the_interval_model_the_requests_add_up_to_the_cores_cycles() {
    // The first access begins a request, so the requests span the run:
    // their cycles add up to the core's (to rounding: a sum of differences).
    for model in ["interval", "fixed"] {
        let set = [&format!("machine.timing.model=\"{model}\""), "os.policy=\"base\"", "run.quantum=100"];
        let sim = run_served(config(&set), random_requests(2000), Some(SITE));
        let (n, mean) = (stat(&sim, "core0.requests"), stat(&sim, "core0.request.cycles_mean"));
        let cycles = stat(&sim, "core0.cycles");
        assert_eq!(n, 2000.0, "{model}");
        assert!((n * mean - cycles).abs() <= 1e-9 * cycles, "{model}: {} vs {cycles}", n * mean);
        let p = |q: &str| stat(&sim, &format!("core0.request.cycles_{q}"));
        assert!(p("p90") <= p("p95") && p("p95") <= p("p99") && p("p99") > mean, "{model}");
    }
}

#[test]
fn measuring_requests_changes_no_other_statistic() {
    for set in [&["run.quantum=50"][..], &["run.quantum=50", "machine.timing.model=\"fixed\""], BY_HAND] {
        let with = run_served(config(set), random_requests(500), Some(SITE)).stats();
        let without = run_served(config(set), random_requests(500), None).stats();
        let others: Stats = with.iter().filter(|(k, _)| !k.contains("request")).map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(others, without, "{set:?}");
        assert!(!without.keys().any(|k| k.contains("request")), "no request site: no request statistics");
        assert_eq!(with["core0.requests"].as_f64(), 500.0);
    }
}

/// A small kv store: 20,000 keys of 256 B, 60,000 accesses after its load.
const KV_KEYS: &str = "kind = \"kv\"\nobjects = 20000\nobject_size = \"256B\"\naccesses = 60000\n";
const KV: &str = "[machine]\nphys_mem = \"1GiB\"\n[workload]\nkind = \"kv\"\nobjects = 20000\n\
                  object_size = \"256B\"\naccesses = 60000\n";

/// The operations kv hands out after its init pass (its bucket loads).
fn kv_operations(text: &str) -> u64 {
    let cfg = crate::config::parse_config(text, "kv.toml", &[]).unwrap();
    let mut w = crate::workload::build_generator(&cfg.workload_list()[0], "workload").unwrap();
    let site = w.request_site().unwrap();
    let (mut ops, mut b, mut more) = (0, Batch::default(), true);
    while more {
        b.clear();
        more = w.next_batch(&mut b, 4096);
        if !w.batch_is_init() {
            ops += b.accesses.iter().filter(|a| a.site == site).count() as u64;
        }
    }
    ops
}

#[test]
fn kv_measures_one_request_per_operation_and_runs_alike_twice() {
    let ops = kv_operations(KV);
    assert!(ops > 2000, "{ops}");
    let sim = run_toml(KV, &[]);
    assert_eq!(stat(&sim, "core0.requests"), ops as f64);
    let mean = stat(&sim, "core0.request.cycles_mean");
    assert!(mean >= 2000.0 * 0.5, "at least the request's instructions at base_cpi: {mean}");
    assert_eq!(sim.stats(), run_toml(KV, &[]).stats(), "same seed, same statistics");
}

#[test]
fn requests_before_warm_up_ends_are_not_measured() {
    let ops = kv_operations(KV) as f64;
    let warm = stat(&run_toml(KV, &["run.skip_init=true", "run.warmup=300000"]), "core0.requests");
    // 300,000 instructions are ~150 requests of 2,000 and more.
    assert!(warm < ops - 100.0 && warm > ops - 160.0, "{warm} of {ops}");
}

#[test]
fn sampling_measures_the_requests_of_its_windows_only() {
    let ops = kv_operations(KV) as f64;
    let window = ["run.sampling.windows=3", "run.sampling.warmup=1000", "run.sampling.measure=4000"];
    let sim = run_toml(KV, &[&window[..], &["run.sampling.fast_forward=4000"]].concat());
    let measured = stat(&sim, "core0.requests");
    // The windows' accesses (three of about 4,000) hold about as many
    // requests as kv's share of operations per access says.
    let expected = stat(&sim, "core0.accesses") * ops / 60_000.0;
    assert!(expected > 1000.0 && expected < ops / 2.0, "{expected} of {ops}");
    assert!((measured - expected).abs() < 0.05 * expected, "{measured}, expected {expected}");
}

#[test]
fn each_vm_reports_its_vcpus_requests() {
    let vm = "[[vms]]\nguest_mem = \"512MiB\"\n[vms.os]\npolicy = \"base\"\n[vms.workload]\n";
    let text = format!(
        "[machine]\nphys_mem = \"2GiB\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"base\"\n\
         {vm}kind = \"kv\"\nobjects = 5000\nobject_size = \"256B\"\naccesses = 20000\n\
         {vm}kind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\naccesses = 20000\n"
    );
    let s = run_toml(&text, &[]).stats();
    assert!(s["vm0.core0.requests"].as_f64() > 500.0);
    assert!(s["vm0.core0.request.cycles_p99"].as_f64() >= s["vm0.core0.request.cycles_mean"].as_f64());
    assert!(!s.keys().any(|k| k.starts_with("vm1.") && k.contains("request")), "gups serves no requests");
    assert!(!s.keys().any(|k| k.starts_with("core") && k.contains("request")), "all moved under vmN.");
}

#[test]
fn programs_in_sequence_measure_the_ones_that_serve_requests() {
    let ops = kv_operations(KV) as f64;
    let gups = "kind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\naccesses = 20000\n";
    let two = |first: &str, second: &str| {
        format!("[machine]\nphys_mem = \"1GiB\"\n[[workloads]]\n{first}[[workloads]]\n{second}after = \"previous\"\n")
    };
    // gups first: its accesses are in no request; kv's requests all are.
    assert_eq!(stat(&run_toml(&two(gups, KV_KEYS), &[]), "core0.requests"), ops);
    // kv first: its last request ends where it exits, not after gups.
    let sim = run_toml(&two(KV_KEYS, gups), &[]);
    let (n, mean) = (stat(&sim, "core0.requests"), stat(&sim, "core0.request.cycles_mean"));
    assert_eq!(n, ops);
    assert!(n * mean < stat(&sim, "core0.cycles") * 0.99, "gups' cycles are in no request");
}
