//! The runs of `stats_digest` (and of `tests/stats_list.rs`, which checks
//! that the statistics they emit are the declared ones): every registered
//! system natively and in a VM, and the runs that make the statistics only
//! some runs have. Each is (name, overrides), or (name, the
//! configuration's text, overrides).

#![allow(dead_code)] // each user takes what it needs

/// The keys every run without a text of its own starts from (its
/// overrides come after).
pub const BASE: &[&str] = &[
    "machine.phys_mem=\"1GiB\"",
    "workload.footprint=\"192MiB\"",
    "workload.accesses=1000000",
    "os.thp.khugepaged=false",
];

/// Every run: (name, text, overrides), the VM runs with `VM_BASE` first.
pub fn all() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let mut out = Vec::new();
    for (name, set) in RUNS.iter().chain(INTERVAL_RUNS).chain(SYSTEM_RUNS) {
        out.push((*name, "", set.to_vec()));
    }
    for (name, set) in VM_SYSTEMS {
        out.push((*name, "", VM_BASE.iter().chain(set.iter()).copied().collect()));
    }
    for (name, text, set) in COVERAGE_RUNS {
        out.push((*name, *text, set.to_vec()));
    }
    out
}

/// (name, overrides). Small footprints so the whole set runs in seconds,
/// but large enough that TLBs, page-walk caches and caches all miss.
pub const RUNS: &[(&str, &[&str])] = &[
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
pub const INTERVAL_RUNS: &[(&str, &[&str])] = &[
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
pub const SYSTEM_RUNS: &[(&str, &[&str])] = &[
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
pub const VM_BASE: &[&str] = &[
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
pub const VM_SYSTEMS: &[(&str, &[&str])] = &[
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
pub const COVERAGE_RUNS: &[(&str, &str, &[&str])] = &[
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
    // COPLACE's eKSM and eBal: the first VM boots with 16 MiB ballooned
    // and gets them back after the second VM's balloon took 16 MiB.
    (
        "cov-coplace-eksm-ebal",
        "[machine]\nphys_mem = \"1GiB\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"coplace\"\n\
         [virt.host.ksm]\nenabled = true\nsleep_ms = 0.05\npages_to_scan = 8192\ncolors = \"eksm\"\n\
         [virt.host.balloon]\ninflated_at_boot = [\"16MiB\"]\ntargets = [\"0MiB\", \"16MiB\"]\n\
         inflate_at_ms = 0.1\ndeflate = [\"16MiB\"]\ndeflate_at_ms = 0.2\neven_colors = true\n\
         [[vms]]\nguest_mem = \"128MiB\"\n[vms.os]\npolicy = \"coloring\"\n\
         [vms.workload]\nkind = \"gups\"\nfootprint = \"32MiB\"\naccesses = 200000\ncontents = \"shared\"\n\
         [[vms]]\nguest_mem = \"128MiB\"\n[vms.os]\npolicy = \"base\"\n\
         [vms.workload]\nkind = \"gups\"\nfootprint = \"32MiB\"\naccesses = 200000\ncontents = \"shared\"\n",
        &[],
    ),
];
