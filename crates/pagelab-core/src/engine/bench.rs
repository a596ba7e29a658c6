//! The speed benchmark's cases, in one place for `benches/engine.rs` and
//! `pagelab bench`: the core issue's three targets. Each case runs the
//! workload's initialisation pass (one store per page: the faults)
//! untimed, then times `accesses` accesses. Wall-clock figures are noisy on
//! shared machines: compare ratios within one run, never put one in a test.

use std::time::Instant;

use super::Simulation;
use crate::config::parse_config;
use crate::error::Result;

/// (name, target accesses per second (0 = none), overrides). The last two
/// measure what colored huge pages cost the inner loop against THP: the
/// same gups over 2 MiB pages, translated by a colored L2 TLB entry (an L1
/// miss builds a 4 KiB entry) or a plain 2 MiB one.
pub const CASES: &[(&str, f64, &[&str])] = &[
    ("gups-4k-translation", 15e6, &["workload.kind=\"gups\"", "os.policy=\"base\"", "machine.cache.enabled=false"]),
    ("gups-4k-caches", 5e6, &["workload.kind=\"gups\"", "os.policy=\"base\""]),
    ("stream-thp-caches", 40e6, &["workload.kind=\"stream\"", "os.policy=\"thp\""]),
    (
        "gups-thp-translation",
        0.0,
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"thp\"",
            "machine.cache.enabled=false",
            "machine.color_bits=[12,13,14]",
        ],
    ),
    (
        "gups-chp-translation",
        0.0,
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"chp\"",
            "machine.cache.enabled=false",
            "machine.color_bits=[12,13,14]",
        ],
    ),
    (
        // The same gups in a VM: 4 KiB guest pages on 4 KiB host pages,
        // every TLB miss a two-dimensional walk. No target of its own: it
        // aims at half of gups-4k-translation's speed.
        "gups-virt-translation",
        0.0,
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"base\"",
            "machine.cache.enabled=false",
            "virt.enabled=true",
            "virt.guest_mem=\"20GiB\"",
            "virt.host.policy=\"base\"",
        ],
    ),
    // The stream without caches: its translation stage, generator and
    // memory stage alone, which the cache stage dwarfs in
    // stream-thp-caches. No target.
    ("stream-thp-translation", 0.0, &["workload.kind=\"stream\"", "os.policy=\"thp\"", "machine.cache.enabled=false"]),
];

/// Measured accesses per second of one case over `footprint` bytes.
pub fn run_case(overrides: &[&str], footprint: u64, accesses: u64) -> Result<f64> {
    let mut all: Vec<String> = vec![
        "machine.phys_mem=\"32GiB\"".into(),
        format!("workload.footprint={footprint}"),
        format!("workload.accesses={accesses}"),
        "os.thp.khugepaged=false".into(),
    ];
    all.extend(overrides.iter().map(|s| s.to_string()));
    let mut sim = Simulation::new(parse_config("", "<bench>", &all)?)?;
    sim.step(footprint / 4096)?;
    let before = sim.progress().0;
    let start = Instant::now();
    sim.step(accesses)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((sim.progress().0 - before) as f64 / seconds)
}
