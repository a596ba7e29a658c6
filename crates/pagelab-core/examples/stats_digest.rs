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

/// (name, overrides). Small footprints so the whole set runs in seconds,
/// but large enough that TLBs, page-walk caches and caches all miss.
const RUNS: &[(&str, &[&str])] = &[
    ("gups-base-nocache", &["workload.kind=\"gups\"", "os.policy=\"base\"", "machine.cache.enabled=false"]),
    ("gups-base-caches", &["workload.kind=\"gups\"", "os.policy=\"base\""]),
    ("gups-thp-caches", &["workload.kind=\"gups\"", "os.policy=\"thp\""]),
    ("stream-thp-caches", &["workload.kind=\"stream\"", "os.policy=\"thp\""]),
    ("stream-base-caches", &["workload.kind=\"stream\"", "os.policy=\"base\""]),
    (
        "chase-coloring",
        &[
            "workload.kind=\"pointer-chase\"",
            "os.policy=\"coloring\"",
            "workload.colors=[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]",
        ],
    ),
    ("chase-bin-hopping", &["workload.kind=\"pointer-chase\"", "os.policy=\"bin-hopping\""]),
    ("stride-hugetlb", &["workload.kind=\"stride\"", "os.policy=\"hugetlb\"", "workload.stride=4160"]),
    (
        "kv-thp-khugepaged",
        &[
            "workload.kind=\"kv\"",
            "os.policy=\"thp\"",
            "os.thp.fault=false",
            "os.thp.khugepaged=true",
            "os.thp.scan_sleep_ms=1",
        ],
    ),
    (
        "gups-random-repl",
        &[
            "workload.kind=\"gups\"",
            "machine.tlb.policy=\"random\"",
            "machine.cache.l2.policy=\"random\"",
            "machine.cache.llc.policy=\"srrip\"",
        ],
    ),
    (
        "gups-fifo-pwcsets",
        &[
            "workload.kind=\"gups\"",
            "machine.tlb.policy=\"fifo\"",
            "machine.pwc.ways=2",
            "machine.paging_levels=5",
            "machine.cache.l1d.policy=\"fifo\"",
        ],
    ),
    ("gups-5level-l2walk", &["workload.kind=\"gups\"", "machine.paging_levels=5", "machine.walker.cache_level=\"l2\""]),
    (
        "sparse-thp-llcwalk",
        &[
            "workload.kind=\"sparse\"",
            "os.policy=\"thp\"",
            "workload.touched_pages=3",
            "machine.walker.cache_level=\"llc\"",
        ],
    ),
    (
        "gups-frag-thp-warmup",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"thp\"",
            "os.fragmentation.target=0.5",
            "run.warmup=200000",
            "run.check_translations=true",
        ],
    ),
    (
        "graph-bfs-thp",
        &["workload.kind=\"graph\"", "workload.kernel=\"bfs\"", "workload.scale=14", "os.policy=\"thp\""],
    ),
    // Colored Huge Pages, its three schemes, and the fallbacks of the
    // policies that try a huge page first (the chains of systems).
    (
        "chase-chp",
        &[
            "workload.kind=\"pointer-chase\"",
            "os.policy=\"chp\"",
            "machine.color_bits=[12,13,14,15]",
            "workload.colors=[1,2,3,5,8]",
        ],
    ),
    (
        "gups-chp-scattered",
        &["workload.kind=\"gups\"", "os.policy=\"chp\"", "os.chp.scheme=\"scattered\"", "machine.color_bits=[12,13]"],
    ),
    (
        "gups-chp-swap",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"chp\"",
            "os.chp.scheme=\"swap\"",
            "machine.color_bits=[12,13,14]",
            "workload.colors=[0,2,4,6]",
        ],
    ),
    (
        "gups-chp-fallback",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"chp\"",
            "machine.color_bits=[12,13,14,15]",
            "os.fragmentation.target=0.85",
            "os.chp.submappings=4",
            "run.check_translations=true",
        ],
    ),
    (
        "stride-hugetlb-fallback",
        &["workload.kind=\"stride\"", "os.policy=\"hugetlb\"", "os.hugetlb.pool=\"64MiB\"", "workload.stride=8256"],
    ),
    (
        "gups-thp-fallback",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"thp\"",
            "os.fragmentation.target=0.9",
            "os.fragmentation.pattern=\"clustered\"",
        ],
    ),
];

/// Runs under the default model: the interval core model, with and without
/// caches and prefetchers, a dependent chase, daemons' shootdowns.
const INTERVAL_RUNS: &[(&str, &[&str])] = &[
    ("interval-gups-base-caches", &["workload.kind=\"gups\"", "os.policy=\"base\""]),
    ("interval-gups-base-nocache", &["workload.kind=\"gups\"", "os.policy=\"base\"", "machine.cache.enabled=false"]),
    ("interval-stream-thp-caches", &["workload.kind=\"stream\"", "os.policy=\"thp\""]),
    (
        "interval-stream-thp-noprefetch",
        &["workload.kind=\"stream\"", "os.policy=\"thp\"", "machine.prefetch.enabled=false"],
    ),
    ("interval-chase-base", &["workload.kind=\"pointer-chase\"", "os.policy=\"base\""]),
    (
        "interval-kv-thp-khugepaged",
        &[
            "workload.kind=\"kv\"",
            "os.policy=\"thp\"",
            "os.thp.fault=false",
            "os.thp.khugepaged=true",
            "os.thp.scan_sleep_ms=1",
        ],
    ),
    (
        "interval-graph-bfs-thp",
        &["workload.kind=\"graph\"", "workload.kernel=\"bfs\"", "workload.scale=14", "os.policy=\"thp\""],
    ),
    ("interval-stride-i7", &["workload.kind=\"stride\"", "machine.preset=\"i7-10700\"", "workload.stride=4160"]),
    // A VM: 2D walks and VM exits through the window.
    (
        "interval-gups-virt",
        &["workload.kind=\"gups\"", "virt.enabled=true", "virt.guest_mem=\"512MiB\"", "virt.host.thp.khugepaged=false"],
    ),
];

/// One run of each registered system natively and one in a VM (under the
/// default interval model), with the hypervisor's KSM and balloon on:
/// what a move of a system's code, configuration, statistics or hardware
/// extension could change. Each VM run shares its data (`contents`) so
/// that KSM merges, and inflates its balloon early.
const SYSTEM_RUNS: &[(&str, &[&str])] = &[
    (
        "sys-perforated",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"perforated\"",
            "os.holes.portion=0.5",
            "os.holes.degree=0.02",
            "run.check_translations=true",
        ],
    ),
    (
        "sys-holes",
        &[
            "workload.kind=\"gups\"",
            "os.systems=[\"holes\",\"base\"]",
            "os.holes.portion=0.5",
            "os.holes.degree=0.02",
            "run.check_translations=true",
        ],
    ),
    (
        "sys-gtsm",
        &["workload.kind=\"gups\"", "os.policy=\"gtsm\"", "os.faulty_frames=0.0005", "run.check_translations=true"],
    ),
    (
        "sys-elastic",
        &[
            "workload.kind=\"gups\"",
            "machine.preset=\"ampere-altra\"",
            "os.policy=\"elastic\"",
            "os.elastic.leshy_epoch_ms=0.2",
            "os.elastic.vma_threshold_32m=\"1GiB\"",
            "os.thp.scan_sleep_ms=1",
            "run.check_translations=true",
        ],
    ),
    (
        "sys-mthp",
        &[
            "workload.kind=\"gups\"",
            "machine.preset=\"ampere-altra\"",
            "os.policy=\"mthp\"",
            "os.fragmentation.target=0.9",
        ],
    ),
    (
        "sys-trident",
        &[
            "workload.kind=\"gups\"",
            "machine.phys_mem=\"2GiB\"",
            "machine.max_order=18",
            "workload.footprint=\"1GiB\"",
            "os.policy=\"trident\"",
        ],
    ),
    (
        "sys-hawkeye",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"hawkeye\"",
            "os.hawkeye.fault=false",
            "os.hawkeye.access_window_ms=0.2",
            "os.hawkeye.rescan_sleep_ms=0.1",
            "os.thp.scan_sleep_ms=1",
        ],
    ),
];

/// The keys of every VM run of `VM_SYSTEMS`: a 128 MiB guest on a host
/// with THP and khugepaged, KSM waking every simulated 0.1 ms (a full
/// scan of the guest in 4 wake-ups), a 16 MiB balloon inflated after
/// 1 ms. Most guests' data is zeros, which KSM merges (and stores then
/// copy); data of their own (`unique`) would leave KSM nothing to merge.
const VM_BASE: &[&str] = &[
    "virt.enabled=true",
    "virt.guest_mem=\"128MiB\"",
    "workload.footprint=\"48MiB\"",
    "workload.accesses=400000",
    "virt.host.policy=\"thp\"",
    "virt.host.thp.khugepaged=true",
    "virt.host.thp.scan_sleep_ms=1",
    "virt.host.ksm.enabled=true",
    "virt.host.ksm.sleep_ms=0.1",
    "virt.host.ksm.pages_to_scan=8192",
    "virt.host.balloon.targets=[\"16MiB\"]",
    "virt.host.balloon.inflate_at_ms=1",
];

/// Each registered system as the guest's (the keys after `VM_BASE`), and
/// the hosts with leaf extensions on EPT leaves (perforated pages, KSM's
/// punched ones).
const VM_SYSTEMS: &[(&str, &[&str])] = &[
    ("vm-base", &["workload.kind=\"gups\"", "os.policy=\"base\"", "workload.contents=\"zero\""]),
    ("vm-thp", &["workload.kind=\"gups\"", "os.policy=\"thp\"", "workload.contents=\"zero\""]),
    (
        "vm-hugetlb",
        &["workload.kind=\"stride\"", "os.policy=\"hugetlb\"", "workload.stride=4160", "workload.contents=\"zero\""],
    ),
    ("vm-coloring", &["workload.kind=\"pointer-chase\"", "os.policy=\"coloring\"", "workload.contents=\"zero\""]),
    (
        "vm-bin-hopping",
        &["workload.kind=\"pointer-chase\"", "os.policy=\"bin-hopping\"", "workload.contents=\"unique\""],
    ),
    (
        "vm-chp",
        &["workload.kind=\"gups\"", "os.policy=\"chp\"", "machine.color_bits=[12,13,14]", "workload.contents=\"zero\""],
    ),
    (
        "vm-perforated",
        &["workload.kind=\"gups\"", "os.policy=\"perforated\"", "os.holes.portion=0.5", "os.holes.degree=0.02"],
    ),
    ("vm-holes", &["workload.kind=\"gups\"", "os.systems=[\"holes\",\"base\"]", "os.holes.portion=0.5"]),
    (
        "vm-gtsm",
        &["workload.kind=\"gups\"", "os.policy=\"gtsm\"", "os.faulty_frames=0.0005", "workload.contents=\"zero\""],
    ),
    (
        "vm-elastic",
        &[
            "workload.kind=\"gups\"",
            "machine.preset=\"ampere-altra\"",
            "os.policy=\"elastic\"",
            "os.elastic.leshy=\"off\"",
            "os.elastic.vma_threshold_32m=\"1GiB\"",
            "os.thp.scan_sleep_ms=1",
            "workload.contents=\"zero\"",
        ],
    ),
    (
        "vm-mthp",
        &[
            "workload.kind=\"gups\"",
            "machine.preset=\"ampere-altra\"",
            "os.policy=\"mthp\"",
            "os.fragmentation.target=0.9",
            "workload.contents=\"zero\"",
        ],
    ),
    (
        "vm-trident",
        &["workload.kind=\"gups\"", "machine.max_order=18", "os.policy=\"trident\"", "workload.contents=\"zero\""],
    ),
    (
        "vm-hawkeye",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"hawkeye\"",
            "os.fragmentation.target=0.5",
            "os.hawkeye.access_window_ms=0.2",
            "os.hawkeye.rescan_sleep_ms=0.1",
            "os.thp.scan_sleep_ms=1",
            "workload.contents=\"zero\"",
        ],
    ),
    (
        "vm-host-perforated",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"thp\"",
            "virt.host.policy=\"perforated\"",
            "virt.host.holes.portion=1.0",
            "virt.host.holes.degree=0.01",
            "virt.host.thp.khugepaged=false",
            "workload.contents=\"zero\"",
            "run.check_translations=true",
        ],
    ),
    (
        "vm-host-punch",
        &[
            "workload.kind=\"gups\"",
            "os.policy=\"thp\"",
            "virt.host.ksm.split=\"punch\"",
            "workload.contents=\"zero\"",
            "run.check_translations=true",
        ],
    ),
];

/// Runs that make the statistics only some runs have: sampled
/// measurement and functional fast-forwards, epochs, memory tiers, a page
/// cache and programs in sequence with the conflict level, several VMs.
/// (A name, the configuration's text, overrides.)
const COVERAGE_RUNS: &[(&str, &str, &[&str])] = &[
    (
        "cov-sampling",
        "",
        &[
            "workload.kind=\"gups\"",
            "run.sampling.windows=3",
            "run.sampling.warmup=8192",
            "run.sampling.measure=8192",
            "run.sampling.fast_forward=65536",
        ],
    ),
    (
        "cov-fast-forward-epochs",
        "",
        &[
            "workload.kind=\"stream\"",
            "workload.fast_forward=200000",
            "workload.fast_forward_mode=\"functional\"",
            "run.epoch=300000",
        ],
    ),
    (
        "cov-tiers",
        "",
        &[
            "workload.kind=\"gups\"",
            "machine.memory.tiers=[{name=\"dram\", size=\"64MiB\", read_latency=200, write_latency=200}, \
             {name=\"nvm\", size=\"960MiB\", read_latency=600, write_latency=900}]",
        ],
    ),
    (
        "cov-pagecache-conflict",
        "[machine]\nphys_mem = \"1GiB\"\n[run]\nconflict_level = true\n\
         [[workloads]]\nkind = \"file-read\"\nfootprint = \"32MiB\"\naccesses = 0\n\
         [[workloads]]\nkind = \"stream\"\nfootprint = \"16MiB\"\naccesses = 300000\nafter = \"previous\"\n",
        &[],
    ),
    (
        "cov-two-vms",
        "[machine]\nphys_mem = \"1GiB\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"thp\"\n\
         [virt.host.ksm]\nenabled = true\nsleep_ms = 0.1\npages_to_scan = 8192\n\
         [[vms]]\nguest_mem = \"128MiB\"\n[vms.os]\npolicy = \"thp\"\n\
         [vms.workload]\nkind = \"gups\"\nfootprint = \"32MiB\"\naccesses = 200000\ncontents = \"shared\"\n\
         [[vms]]\nguest_mem = \"128MiB\"\n[vms.os]\npolicy = \"base\"\n\
         [vms.workload]\nkind = \"gups\"\nfootprint = \"32MiB\"\naccesses = 200000\ncontents = \"shared\"\n",
        &[],
    ),
];

/// Statistics added with the interval model (and CHP's leftovers, which
/// are zero here): printed apart for `RUNS`, so that the lines of before
/// stay a prefix.
fn is_new_stat(name: &str) -> bool {
    name.ends_with("cycles.walk") || name.contains(".prefetch_") || name.starts_with("os.chp.leftovers_")
}

/// Runs one configuration and prints its statistics; with `legacy`, under
/// the fixed model without prefetchers, the statistics of before only (the
/// others are returned, to print later).
fn run(name: &str, text: &str, overrides: &[&str], legacy: bool) -> Vec<String> {
    // (A configuration of several workloads gives all of it in its text.)
    let mut all: Vec<String> = Vec::new();
    if text.is_empty() {
        all.extend(
            ["machine.phys_mem=\"1GiB\"", "workload.footprint=\"192MiB\"", "workload.accesses=1000000"]
                .map(String::from),
        );
        all.push("os.thp.khugepaged=false".into());
    }
    if legacy {
        all.push("machine.timing.model=\"fixed\"".into());
        all.push("machine.prefetch.enabled=false".into());
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
        // (Sums of the statistics of before only, for legacy runs.)
        let sum: f64 = snap.iter().filter(|(k, _)| !legacy || !is_new_stat(k)).map(|(_, v)| v.as_f64()).sum();
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
