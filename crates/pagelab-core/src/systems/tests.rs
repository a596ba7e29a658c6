//! The registry and the chain: configuration of `os.systems`, defaults
//! named by `os.policy`, and composition of systems that were never paired
//! before.

use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::Simulation;

fn chain_error(systems: &str) -> String {
    let text = "[workload]\nkind = \"gups\"\n";
    crate::config::parse_config(text, "test.toml", &[format!("os.systems={systems}")]).unwrap_err().to_string()
}

#[test]
fn each_policy_names_its_chain() {
    for (policy, chain) in [
        ("base", vec!["base"]),
        ("thp", vec!["thp", "base"]),
        ("hugetlb", vec!["hugetlb", "base"]),
        ("coloring", vec!["coloring"]),
        ("bin-hopping", vec!["bin-hopping"]),
    ] {
        let sim = Simulation::new(config(&[&format!("os.policy=\"{policy}\"")])).unwrap();
        assert_eq!(sim.kernel.chain(), chain, "{policy}");
    }
}

#[test]
fn os_systems_names_the_chain_and_overrides_the_policy() {
    let sim = Simulation::new(config(&["os.policy=\"base\"", "os.systems=[\"thp\", \"coloring\"]"])).unwrap();
    assert_eq!(sim.kernel.chain(), vec!["thp", "coloring"]);
}

#[test]
fn a_bad_chain_is_a_configuration_error_naming_the_key() {
    let unknown = chain_error("[\"thp\", \"mystery\", \"base\"]");
    assert!(unknown.contains("os.systems") && unknown.contains("unknown system `mystery`"), "{unknown}");
    assert!(unknown.contains("known: base, thp"), "{unknown}");
    let twice = chain_error("[\"base\", \"base\"]");
    assert!(twice.contains("twice"), "{twice}");
    let open_end = chain_error("[\"base\", \"thp\"]");
    assert!(
        open_end.contains("must end with a system that backs every fault") && open_end.contains("`thp`"),
        "{open_end}"
    );
}

#[test]
fn thp_declines_an_unaligned_range_and_coloring_backs_it() {
    // A pairing no policy names: huge pages where they fit, colored 4 KiB
    // pages elsewhere. 2 MiB + 8 KiB mapped at a 2 MiB boundary: one THP
    // fault, then two colored pages past its end.
    let sim = simulate(
        config(&["os.systems=[\"thp\", \"coloring\"]", "os.thp.khugepaged=false", "run.check_translations=true"]),
        vec![batch(vec![mmap(BASE, (2 << 20) + 8192)], stores(BASE, 514))],
    )
    .unwrap();
    assert_eq!(stat(&sim, "os.faults.thp"), 1.0);
    assert_eq!(stat(&sim, "os.faults.colored"), 2.0);
    assert_eq!(stat(&sim, "os.faults.base"), 0.0);
}

#[test]
fn every_registered_system_reports_its_statistics_when_absent() {
    let sim = simulate(config(&[]), vec![batch(vec![mmap(BASE, 8192)], stores(BASE, 2))]).unwrap();
    for name in
        ["os.faults.chp", "os.faults.hugetlb_1g", "os.chp.success_ratio", "os.thp.fault_fallback", "khugepaged.succeed"]
    {
        assert_eq!(stat(&sim, name), 0.0, "{name}");
    }
    assert_eq!(stat(&sim, "os.faults.base"), 2.0);
}
