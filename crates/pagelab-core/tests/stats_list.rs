//! The statistics runs emit are the declared ones (`engine::stats_list`):
//! every run of the digest (`examples/digest/runs.rs`: each registered
//! system natively and in a VM, sampling, tiers, a page cache, several
//! VMs), shortened, emits only declared names, in its statistics and its
//! time series; and every declared name is emitted by one of them.

#[path = "../examples/digest/runs.rs"]
mod runs;

use std::collections::BTreeSet;

use pagelab_core::config::parse_config;
use pagelab_core::engine::stats_list::declared;
use pagelab_core::engine::Simulation;

/// Every name the run emits, its time series' included. Runs without a
/// text of their own are shortened (their names do not depend on it).
fn emitted(name: &str, text: &str, set: &[&str]) -> BTreeSet<String> {
    let mut all: Vec<String> = Vec::new();
    if text.is_empty() {
        all.extend(runs::BASE.iter().map(|s| s.to_string()));
        all.extend(set.iter().map(|s| s.to_string()));
        all.extend(["workload.accesses=40000".into(), "workload.footprint=\"32MiB\"".into()]);
    } else {
        all.extend(set.iter().map(|s| s.to_string()));
    }
    let cfg = parse_config(text, name, &all).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut sim = Simulation::new(cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
    sim.run().unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut names: BTreeSet<String> = sim.stats().into_keys().collect();
    names.extend(sim.timeseries().iter().flat_map(|s| s.keys().cloned()));
    names
}

#[test]
fn runs_emit_exactly_the_declared_statistics() {
    let decls = declared();
    let mut unused: BTreeSet<&str> = decls.iter().map(|(_, d)| d.name).collect();
    let mut undeclared = BTreeSet::new();
    for (name, text, set) in runs::all() {
        for stat in emitted(name, text, &set) {
            match decls.iter().find(|(_, d)| d.matches(&stat)) {
                Some((_, d)) => {
                    unused.remove(d.name);
                }
                None => {
                    undeclared.insert(format!("{stat} (run {name})"));
                }
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "emitted but not declared:\n{}",
        undeclared.into_iter().collect::<Vec<_>>().join("\n")
    );
    assert!(
        unused.is_empty(),
        "declared but no run emits them:\n{}",
        unused.into_iter().collect::<Vec<_>>().join("\n")
    );
}
