//! Prints every statistic of a fixed set of small runs, and the outcome of
//! a fixed random sequence of TLB operations (colored huge pages included),
//! one line per item. A speed change must leave this output identical:
//!
//! ```text
//! cargo run --release -p pagelab-core --example stats_digest > before.txt
//! (change the code)
//! cargo run --release -p pagelab-core --example stats_digest > after.txt
//! cmp before.txt after.txt
//! ```
//!
//! `--only NAME` runs one configuration. Nothing here is timed.
//!
//! The runs of `RUNS` use the fixed timing model without prefetchers
//! (today's engine before the interval model), and print first exactly the
//! statistics that existed then: the output of before the interval model
//! is a prefix of this one. After the TLB sequences come the statistics
//! added since (`cycles.walk`, the prefetch counters) of those runs, then
//! every statistic of `INTERVAL_RUNS`, under the default interval model,
//! then of `SYSTEM_RUNS` (each registered system natively), `VM_SYSTEMS`
//! (each as a guest's, the hypervisor running KSM and a balloon) and
//! `COVERAGE_RUNS` (sampling, tiers, a page cache, several VMs): every
//! statistic pagelab declares is emitted by one of these runs
//! (`tests/stats_list.rs`).

use pagelab_core::config::parse_config;
use pagelab_core::engine::Simulation;
use pagelab_core::hw::set_assoc::Replacement;
use pagelab_core::hw::tlb::{Tlb, TlbConfig, TlbEntry, TlbLookup};
use pagelab_core::systems::{chp::tlb::colored_huge, extensions::wrap, ExtKind, TlbExtensions};
use pagelab_core::units::{PageSize, Pfn, VirtAddr, Vpn};

#[path = "digest/runs.rs"]
mod runs;
use runs::{COVERAGE_RUNS, INTERVAL_RUNS, RUNS, SYSTEM_RUNS, VM_BASE, VM_SYSTEMS};

/// Statistics added with the interval model (and CHP's leftovers, which
/// are zero here; and a core's requests, `coreN.requests` and
/// `coreN.request.*`): printed apart for `RUNS`, so that the lines of
/// before stay a prefix.
fn is_new_stat(name: &str) -> bool {
    name.ends_with("cycles.walk")
        || name.contains(".prefetch_")
        || name.starts_with("os.chp.leftovers_")
        || matches!(name.split('.').nth(1), Some("requests" | "request"))
}

/// Runs one configuration and prints its statistics; with `legacy`, under
/// the fixed model without prefetchers, the statistics of before only (the
/// others are returned, to print later).
fn run(name: &str, text: &str, overrides: &[&str], legacy: bool) -> Vec<String> {
    // (A configuration of several workloads gives all of it in its text.)
    let mut all: Vec<String> = Vec::new();
    if text.is_empty() {
        all.extend(runs::BASE.iter().map(|s| s.to_string()));
    }
    if legacy {
        all.push("machine.timing.model=\"fixed\"".into());
        all.push("machine.prefetch.enabled=false".into());
        // The calibrated model's additions, off: the statistics of before.
        all.push("machine.walker.latency=0".into());
    }
    all.extend(overrides.iter().map(|s| s.to_string()));
    let cfg = parse_config(text, "<digest>", &all).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut sim = Simulation::new(cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
    sim.run().unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut later = Vec::new();
    for (k, v) in sim.stats() {
        let line = format!("{name} {k} {}", serde_json::to_string(&v).unwrap());
        if legacy && is_new_stat(&k) {
            later.push(line);
        } else {
            println!("{line}");
        }
    }
    for (i, snap) in sim.timeseries().iter().enumerate() {
        // (Sums of the statistics of before only, for legacy runs; an
        // epoch's own markers, `epoch.*`, are not statistics.)
        let stat = |k: &str| !k.starts_with("epoch.") && (!legacy || !is_new_stat(k));
        let sum: f64 = snap.iter().filter(|(k, _)| stat(k)).map(|(_, v)| v.as_f64()).sum();
        println!("{name} epoch{i} {sum}");
    }
    later
}

/// A fixed pseudo-random sequence of TLB operations over a small machine:
/// fills of 4 KiB, 2 MiB, 1 GiB and colored huge pages, lookups of data
/// and instructions, dirty marking, page and range shootdowns.
fn tlb_sequence(policy: Replacement) {
    let cfg = TlbConfig {
        l1_4k_entries: 8,
        l1_4k_ways: 2,
        l1_2m_entries: 4,
        l1_2m_ways: 2,
        l1_1g_entries: 2,
        l1_1g_ways: 2,
        l2_entries: 48,
        l2_ways: 12,
        l2_1g_entries: 4,
        l2_1g_ways: 2,
        l1i_4k_entries: 8,
        l1i_4k_ways: 4,
        l1i_2m_entries: 2,
        l1i_2m_ways: 2,
        policy,
        ..TlbConfig::default()
    };
    let mut tlb: Tlb<TlbExtensions> = Tlb::new(&cfg, 11);
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut digest: u64 = 0;
    let mut mix = |v: u64| digest = (digest ^ v).wrapping_mul(0x100_0000_01b3);
    for step in 0..200_000u64 {
        let r = next();
        let asid = 1 + (r & 1) as u16;
        // Mostly a 512 KiB window (so entries are found again), else 4 GiB.
        let window = if r >> 40 & 3 == 0 { 0xffff_ffff } else { 0x7_ffff };
        let vaddr = VirtAddr::new((next() & window) & !7);
        let instr = r >> 8 & 7 == 0;
        match r >> 4 & 15 {
            0..=7 => {
                let out = tlb.lookup(asid, vaddr, instr);
                // Which level answered (not the outcome's Debug text, so the
                // digest outlives a change of the outcome's type).
                mix(match out {
                    TlbLookup::L1(_) => 1,
                    TlbLookup::Miss => 3,
                    _ => 2,
                });
                if let Some(t) = out.translation() {
                    mix(t.pfn.raw() ^ (t.dirty as u64) << 40 ^ (t.writable as u64) << 41);
                }
            }
            8..=10 => {
                let entry = match r >> 12 & 7 {
                    0..=3 => TlbEntry::page(
                        asid,
                        vaddr.vpn(),
                        PageSize::Size4K,
                        Pfn::new(r >> 20 & 0xfffff),
                        r >> 16 & 1 == 1,
                        r >> 17 & 1 == 1,
                    ),
                    4 => TlbEntry::page(
                        asid,
                        vaddr.align_down(2 << 20).vpn(),
                        PageSize::Size2M,
                        Pfn::new((r >> 20 & 0xfff) << 9),
                        true,
                        false,
                    ),
                    5 => TlbEntry::page(
                        asid,
                        vaddr.align_down(1 << 30).vpn(),
                        PageSize::Size1G,
                        Pfn::new((r >> 20 & 0xf) << 18),
                        true,
                        r >> 17 & 1 == 1,
                    ),
                    _ => {
                        let shift = (r >> 24 & 3) as u8;
                        let sub =
                            std::array::from_fn(|s| Pfn::new(((r >> 30 & 0xff) << 12 | s as u64) & !(63 << shift)));
                        let e =
                            colored_huge(asid, vaddr.align_down(2 << 20).vpn(), sub, shift, r >> 16 & 1 == 1, false);
                        wrap(e, ExtKind::ColoredHuge)
                    }
                };
                let hit = entry.vbase.add(next() % entry.size.nr_pages());
                tlb.fill_after_walk(entry, VirtAddr::new(hit.raw() << 12), instr);
            }
            11 => mix(tlb.mark_dirty(asid, vaddr) as u64),
            12 => mix(tlb.invalidate_page(asid, vaddr) as u64),
            13 => {
                let start = vaddr.vpn();
                let len = [1u64, 3, 64, 65, 600][(r >> 12) as usize % 5];
                mix(tlb.invalidate_range(asid, start, Vpn::new(start.raw() + len)) as u64);
            }
            14 if step % 97 == 0 => mix(tlb.invalidate_asid(asid) as u64),
            _ => {
                let peek = tlb.peek(asid, vaddr, instr);
                mix(peek.translation().map_or(0, |t| t.pfn.raw()));
            }
        }
    }
    println!("tlb-{} digest {digest:#x}", policy.name());
    println!("tlb-{} occupancy {:?}", policy.name(), tlb.occupancy());
    for (name, value) in tlb.stats().named() {
        println!("tlb-{} {name} {value}", policy.name());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let selected = |r: &&(&str, &[&str])| only.as_deref().is_none_or(|o| o == r.0);
    let mut later = Vec::new();
    for (name, overrides) in RUNS.iter().filter(selected) {
        later.extend(run(name, "", overrides, true));
    }
    if only.is_none() {
        for policy in [Replacement::Lru, Replacement::Fifo, Replacement::Random] {
            tlb_sequence(policy);
        }
    }
    for line in later {
        println!("{line}");
    }
    for (name, overrides) in INTERVAL_RUNS.iter().chain(SYSTEM_RUNS).filter(selected) {
        run(name, "", overrides, false);
    }
    for (name, overrides) in VM_SYSTEMS.iter().filter(selected) {
        let all: Vec<&str> = VM_BASE.iter().chain(overrides.iter()).copied().collect();
        run(name, "", &all, false);
    }
    for (name, text, overrides) in COVERAGE_RUNS.iter().filter(|r| only.as_deref().is_none_or(|o| o == r.0)) {
        run(name, text, overrides, false);
    }
}
