//! Statistics as one flat map: `name -> number`, summed over cores, with
//! per-core copies prefixed `core0.`, `core1.`... Every name is documented
//! in `docs/stats.md`; the names listed in the core-engine issue are a
//! contract other tools rely on.

use std::collections::BTreeMap;

use super::core::CoreStats;
use super::timing::MEMORY;
use super::Simulation;

use crate::stat::{accumulate, Scope, Section, StatDecl, StatTable, Unit};
pub use crate::stat::{Stat, Stats};

/// What this file works out itself (ratios, the run's time, the second
/// dimension's arrays by core, the guests' and contents' census), by
/// heading of docs/stats.md.
pub const STATS: &[StatTable] = &[
    StatTable {
        section: Section::Translation,
        stats: &[
            StatDecl::count("walk.refs_per_walk", "`walk.mem_refs / walks`").ratio().scope(Scope::Run),
            StatDecl::count("dtlb.l2.mpki", "`dtlb.l2.misses` per 1000 instructions")
                .unit(Unit::PerKilo)
                .scope(Scope::Run),
        ],
    },
    StatTable {
        section: Section::Faults,
        stats: &[
            StatDecl::count(
                "faults.cycles_avg",
                "the mean cost of one fault, in cycles (costs are set per kind by `os.fault_cost.*`)",
            )
            .cycles()
            .scope(Scope::Run),
            StatDecl::count("faults.cycles_p99", "the 99th percentile of the cost of one fault, in cycles")
                .cycles()
                .scope(Scope::Run),
        ],
    },
    StatTable {
        section: Section::Caches,
        stats: &[StatDecl::count("cache.llc.mpki", "`cache.llc.misses` per 1000 instructions")
            .unit(Unit::PerKilo)
            .scope(Scope::Run)],
    },
    StatTable {
        section: Section::Time,
        stats: &[
            StatDecl::count("runtime.cycles", "the longest core's cycles: the run's duration on a parallel machine")
                .cycles()
                .scope(Scope::Run),
            StatDecl::count("ipc", "`instructions / cycles`").ratio().scope(Scope::Run),
            StatDecl::count(
                "epoch.instructions",
                "in a `timeseries` record only: core 0's instructions since the start (no reset touches it)",
            )
            .machine(),
            StatDecl::count("epoch.init", "in a `timeseries` record only: 1 while core 0 was in its first-touch pass")
                .machine(),
            StatDecl::count(
                "epoch.counted",
                "in a `timeseries` record only: 1 once the statistics had been reset, or when nothing resets them \
                 (the final statistics include the record's counts)",
            )
            .machine(),
        ],
    },
    StatTable {
        section: Section::Memory,
        stats: &[
            StatDecl::count(
                "phys.snapshot_unplaced",
                "free blocks of the fragmentation snapshot (`os.fragmentation.snapshot`) that found no place on \
                 the simulated machine when it was applied at boot (0 without a snapshot); more than 0 means the \
                 machine is too small for the captured pattern",
            )
            .os(),
            StatDecl::count(
                "phys.reclaimed",
                "frames of the snapshot's page cache (the frames it left in use in Movable pageblocks) that \
                 reclaim freed because a 4 KiB request found no free frame (`phys::snapshot`); 0 without a \
                 snapshot",
            )
            .pages()
            .os(),
        ],
    },
    StatTable {
        section: Section::Tiers,
        stats: &[StatDecl::count(
            "mem.tier.NAME.pages",
            "4 KiB frames of tier NAME in use at the end (the host's in a virtualized run; page tables and kernel \
             frames included)",
        )
        .pages()
        .machine()
        .contract()],
    },
    StatTable {
        section: Section::Virtualization,
        stats: &[
            StatDecl::count("nested_tlb.hits", "the nested TLB's hits").scope(Scope::PerCore),
            StatDecl::count("nested_tlb.misses", "the nested TLB's misses (each an EPT walk)").scope(Scope::PerCore),
            StatDecl::count("nested_tlb.invalidations", "nested-TLB entries INVEPTs dropped").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.lookups", "the EPT paging-structure caches' lookups").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.pde_hits", "EPT lookups that skipped to the EPT's PTE page").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.pdpte_hits", "EPT lookups that skipped to its PMD page").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.pml4e_hits", "EPT lookups that skipped to its PUD page").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.pml5e_hits", "EPT lookups that skipped to its P4D page").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.misses", "EPT lookups that hit no level").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.fills", "EPT paging-structure-cache entries placed").scope(Scope::PerCore),
            StatDecl::count("ept_pwc.invalidations", "EPT paging-structure-cache entries INVEPTs dropped")
                .scope(Scope::PerCore),
            StatDecl::count(
                "virt.guest_frames_untouched",
                "guest frames in use by the guest (user pages and page tables) that the host has not backed: \
                 allocated but never touched (with `virt.backing = \"first-touch\"`, the untouched 4 KiB pieces of \
                 a guest huge page); 0 with zeroing backing unless the guest's own daemons copied into fresh \
                 frames (end state)",
            )
            .pages()
            .scope(Scope::Run),
        ],
    },
    StatTable {
        section: Section::Contents,
        stats: &[
            StatDecl::count(
                "virt.contents.pages",
                "guest frames (of every VM) with a content identity: those a declaring process faulted in or \
                 dirtied (end state)",
            )
            .pages()
            .machine(),
            StatDecl::count("virt.contents.zero", "of those, zero pages (end state)").pages().machine(),
            StatDecl::count(
                "virt.contents.duplicates",
                "of those, the frames whose content an earlier frame has: what merging every identical 4 KiB page \
                 would free, in pages (end state)",
            )
            .pages()
            .machine(),
        ],
    },
];

pub(super) fn collect(sim: &Simulation) -> Stats {
    let mut all_faults: Vec<f32> = Vec::new();
    let mut out = hardware(sim, &mut all_faults);
    // Ratios are recomputed from the sums, not summed.
    derived(&mut out, &all_faults);
    runtime(
        &mut out,
        sim.cores.iter().map(|c| c.stats.stall_cycles() + sim.timing.base_cpi * c.stats.instructions as f64),
    );
    let several_vms = sim.nr_guests() > 1;
    if !several_vms {
        kernel_stats(&mut out, sim, 0);
    }
    if let Some(v) = &sim.virt {
        v.hv.report(&mut out);
        if let Some(c) = &v.contents {
            // Only runs whose workloads declare contents name them.
            let (pages, zero, duplicates) = c.census();
            let named = [("pages", pages), ("zero", zero), ("duplicates", duplicates)];
            crate::stat::put_ints(&mut out, "virt.contents.", &named);
        }
        if !several_vms {
            out.insert("virt.guest_frames_untouched".into(), Stat::Int(v.hv.untouched_guest_frames(0, &sim.kernel)));
        }
    }
    tier_pages(&mut out, sim);
    // The systems' hardware counters (`perforated.*`, `dtlb.l2.share.*`),
    // after the registry's zeros.
    out.extend(ext_stats(sim));
    if sim.cfg.run.conflict_level {
        super::conflict::report(&mut out, sim);
    }
    for core in &sim.cores {
        // Only a core with requests names them (engine::requests).
        if let Some(r) = &core.requests {
            r.report(core.clock(sim.timing.base_cpi), &format!("core{}.", core.id), &mut out);
        }
    }
    if several_vms {
        vm_stats(&mut out, sim);
    }
    out
}

/// Several VMs: each VM's statistics under `vmN.` (N from 0, as
/// `[[vms]]` is indexed): its guest kernel's report, its vCPUs' sums and
/// ratios, and each vCPU's own counters, moved from `coreK.` to
/// `vmN.coreM.` (M the vCPU's index in its VM). What stays at the top
/// level is machine-wide: the sums over every core, the caches, `host.`.
fn vm_stats(out: &mut Stats, sim: &Simulation) {
    let Some(v) = &sim.virt else { return };
    let base_cpi = sim.timing.base_cpi;
    let mut vcpu_index = vec![0usize; sim.nr_guests()];
    let mut renames = Vec::new();
    let mut per_vm: Vec<(Stats, Vec<f32>, Vec<f64>)> = vec![Default::default(); sim.nr_guests()];
    for core in &sim.cores {
        let vm = core.vm;
        renames.push((format!("core{}.", core.id), format!("vm{vm}.core{}.", vcpu_index[vm])));
        vcpu_index[vm] += 1;
        let (sums, faults, cycles) = &mut per_vm[vm];
        let s = &core.stats;
        for (k, x) in core_stats(s, base_cpi, sim.timing.walk_cycles_of(s)).into_iter().chain(virt_core_stats(s)) {
            accumulate(sums, &k, x);
        }
        faults.extend_from_slice(&s.fault_cycles);
        cycles.push(s.stall_cycles() + base_cpi * s.instructions as f64);
    }
    let keys: Vec<String> = out.keys().filter(|k| k.starts_with("core")).cloned().collect();
    for key in keys {
        if let Some((from, to)) = renames.iter().find(|(from, _)| key.starts_with(from.as_str())) {
            let value = out.remove(&key).expect("a listed key");
            out.insert(format!("{to}{}", &key[from.len()..]), value);
        }
    }
    for (vm, (mut sums, faults, cycles)) in per_vm.into_iter().enumerate() {
        derived(&mut sums, &faults);
        runtime(&mut sums, cycles.into_iter());
        let prefix = format!("vm{vm}.");
        kernel_stats(&mut sums, sim, vm);
        sums.insert("virt.guest_frames_untouched".into(), Stat::Int(v.hv.untouched_guest_frames(vm, sim.guest(vm))));
        out.extend(sums.into_iter().map(|(k, x)| (format!("{prefix}{k}"), x)));
    }
}

/// What the cores and the caches counted since the last reset (per core
/// and summed; without the ratios, `runtime.cycles` and the systems' TLB
/// counters): the part of the statistics a sampled run sums over its
/// measure windows. `all_faults` gets every fault's cost.
pub(super) fn hardware(sim: &Simulation, all_faults: &mut Vec<f32>) -> Stats {
    let mut out = Stats::new();
    let base_cpi = sim.timing.base_cpi;
    let mut sums: BTreeMap<String, Stat> = BTreeMap::new();
    for core in &sim.cores {
        let mut s = core_stats(&core.stats, base_cpi, sim.timing.walk_cycles_of(&core.stats));
        if sim.virt.is_some() {
            // Only a virtualized run names them: a native run's statistics
            // stay exactly what they were.
            s.extend(virt_core_stats(&core.stats));
        }
        if let Some(tiers) = &sim.timing.tiers {
            s.extend(tier_core_stats(&core.stats, &tiers.names));
        }
        if sim.dram.is_some() {
            s.extend(dram_core_stats(&core.stats));
        }
        for (k, v) in &s {
            accumulate(&mut sums, k, *v);
            out.insert(format!("core{}.{k}", core.id), *v);
        }
        all_faults.extend_from_slice(&core.stats.fault_cycles);
        tlb_arrays(&mut out, core);
        if let Some(v) = &sim.virt {
            nested_arrays(&mut out, core.id, &v.cores[core.id]);
        }
        cache_counters(&mut out, sim, Some(core.id));
    }
    cache_counters(&mut out, sim, None);
    if let Some(d) = &sim.dram {
        dram_banks(&mut out, sim, d.nr_banks());
    }
    out.extend(sums);
    out
}

/// A core's DRAM requests (`docs/stats.md`, "DRAM"): reads and writes by
/// row outcome, and the interval model's waits for a bank.
fn dram_core_stats(s: &CoreStats) -> Vec<(String, Stat)> {
    let mut v = Vec::new();
    for (kind, counts) in ["reads", "writes"].iter().zip(&s.dram_requests) {
        v.push((format!("dram.{kind}"), Stat::Int(counts.iter().sum())));
        for o in crate::hw::dram::RowOutcome::ALL {
            v.push((format!("dram.{kind}.{}", o.name()), Stat::Int(counts[o.index()])));
        }
    }
    v.push(("dram.queue.waits".into(), Stat::Int(s.dram_queue_waits)));
    v.push(("dram.queue.cycles".into(), Stat::Float(s.dram_queue_cycles)));
    v
}

/// Each bank's requests and the cycles reads waited for it, summed over
/// the cores: `dram.bankN.requests`, `dram.bankN.queue_cycles`.
fn dram_banks(out: &mut Stats, sim: &Simulation, nr_banks: usize) {
    for bank in 0..nr_banks {
        let requests = sim.cores.iter().map(|c| c.stats.dram_bank_requests.get(bank).copied().unwrap_or(0)).sum();
        let waited = sim.cores.iter().map(|c| c.stats.dram_bank_queue_cycles.get(bank).copied().unwrap_or(0.0)).sum();
        out.insert(format!("dram.bank{bank}.requests"), Stat::Int(requests));
        out.insert(format!("dram.bank{bank}.queue_cycles"), Stat::Float(waited));
    }
}

/// `runtime.cycles`: the longest core's cycles.
pub(super) fn runtime(out: &mut Stats, cycles: impl Iterator<Item = f64>) {
    out.insert("runtime.cycles".into(), Stat::Float(cycles.fold(0.0, f64::max)));
}

/// The systems' TLB counters, per core and summed.
pub(super) fn ext_stats(sim: &Simulation) -> Stats {
    let mut out = Stats::new();
    for core in &sim.cores {
        for (k, v) in crate::systems::tlb_ext_stats(std::iter::once(core.mmu.tlb.extensions())) {
            out.insert(format!("core{}.{k}", core.id), v);
        }
    }
    out.extend(crate::systems::tlb_ext_stats(sim.cores.iter().map(|c| c.mmu.tlb.extensions())));
    out
}

/// A virtualized core's counters (`docs/stats.md`, "Virtualization").
fn virt_core_stats(s: &CoreStats) -> Vec<(String, Stat)> {
    vec![
        ("walk.guest_refs".into(), Stat::Int(s.walk_guest_refs)),
        ("walk.host_refs".into(), Stat::Int(s.walk_host_refs)),
        ("virt.ept_violations".into(), Stat::Int(s.ept_violations)),
        ("virt.ept_violations.walk".into(), Stat::Int(s.ept_violations_walk)),
        ("virt.vm_exits".into(), Stat::Int(s.vm_exits)),
        ("cycles.virt".into(), Stat::Float(s.cycles_virt)),
    ]
}

/// A core's references to each memory tier (`docs/stats.md`, "Memory
/// tiers"): reads, writes (writebacks; stores without caches), accesses.
fn tier_core_stats(s: &CoreStats, names: &[String]) -> Vec<(String, Stat)> {
    let mut v = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (reads, writes) = (s.tier_reads[i], s.tier_writes[i]);
        v.push((format!("tier.{name}.reads"), Stat::Int(reads)));
        v.push((format!("tier.{name}.writes"), Stat::Int(writes)));
        v.push((format!("tier.{name}.accesses"), Stat::Int(reads + writes)));
    }
    v
}

/// `mem.tier.NAME.pages`: the frames in use in each tier at the end, in the
/// memory the tiers are (the host's in a virtualized run).
fn tier_pages(out: &mut Stats, sim: &Simulation) {
    let Some(tiers) = &sim.timing.tiers else { return };
    let mem = match &sim.virt {
        Some(v) => &v.hv.host.mem,
        None => &sim.kernel.mem,
    };
    for (node, name) in tiers.names.iter().enumerate() {
        out.insert(format!("mem.tier.{name}.pages"), Stat::Int(mem.used_pages_in_node(node)));
    }
}

/// The second dimension's structures of one core: `coreN.nested_tlb.*`,
/// `coreN.ept_pwc.*`.
fn nested_arrays(out: &mut Stats, id: usize, n: &super::walk2d::NestedHw) {
    let t = n.ntlb.stats();
    for (name, value) in [("hits", t.hits), ("misses", t.misses), ("invalidations", t.invalidations)] {
        out.insert(format!("core{id}.nested_tlb.{name}"), Stat::Int(value));
    }
    for (name, value) in n.ept_pwc.stats().named() {
        let name = name.strip_prefix("pwc.").unwrap_or(name.as_str());
        out.insert(format!("core{id}.ept_pwc.{name}"), Stat::Int(value));
    }
}

/// The hierarchy's own counters (`cache.l1d.misses`...), per core or summed;
/// zeros when the caches are disabled, so the names always exist.
fn cache_counters(out: &mut Stats, sim: &Simulation, core: Option<usize>) {
    let prefix = core.map_or(String::new(), |c| format!("core{c}."));
    match &sim.caches {
        Some(c) => {
            for (k, v) in c.stats().counters(core) {
                out.insert(format!("{prefix}{k}"), Stat::Int(v));
            }
        }
        None => {
            for level in ["l1d", "l2", "llc"] {
                for what in ["accesses", "misses", "prefetch_issued", "prefetch_useful", "prefetch_useless"] {
                    out.insert(format!("{prefix}cache.{level}.{what}"), Stat::Int(0));
                }
            }
        }
    }
}

fn core_stats(s: &CoreStats, base_cpi: f64, walk_cycles: f64) -> Vec<(String, Stat)> {
    let mut v: Vec<(String, Stat)> = Vec::new();
    let mut int = |k: &str, x: u64| v.push((k.to_string(), Stat::Int(x)));
    int("instructions", s.instructions);
    int("accesses", s.loads + s.stores);
    int("loads", s.loads);
    int("stores", s.stores);
    int("ifetches", s.ifetches);
    int("dtlb.l1.misses", s.dtlb_l1_misses);
    int("dtlb.l2.misses", s.dtlb_l2_misses);
    int("itlb.l1.misses", s.itlb_l1_misses);
    int("itlb.l2.misses", s.itlb_l2_misses);
    int("walks", s.walks);
    int("walk.mem_refs", s.walk_mem_refs);
    for &(owner, name) in crate::systems::LEAF_WALK_STATS {
        if let Some(name) = name {
            int(name, s.leaf_ext_walks[owner]);
        }
    }
    int("walk.dirty_assists", s.dirty_assists);
    int("pwc.hits", s.pwc_hits);
    int("faults", s.faults);
    int("faults.huge", s.faults_huge);
    for (i, name) in ["l1d", "l2", "llc", "mem"].iter().enumerate() {
        let walk_served: u64 = (0..4).map(|e| s.flow[e][i][1]).sum();
        int(&format!("walk.refs.{name}"), walk_served);
    }
    let mem: u64 = (0..4).map(|e| s.flow[e][MEMORY][0] + s.flow[e][MEMORY][1]).sum();
    int("mem.accesses", mem);
    let mut float = |k: &str, x: f64| v.push((k.to_string(), Stat::Float(x)));
    let base = base_cpi * s.instructions as f64;
    float("cycles", base + s.stall_cycles());
    float("cycles.base", base);
    float("cycles.translation", s.cycles_translation);
    float("cycles.walk", walk_cycles);
    float("cycles.data", s.cycles_data);
    float("cycles.faults", s.cycles_faults);
    float("cycles.daemon", s.cycles_daemon);
    v
}

/// Ratios of summed counters, plus fault-latency summaries.
pub(super) fn derived(out: &mut Stats, faults: &[f32]) {
    let get = |out: &Stats, k: &str| out.get(k).map_or(0.0, |s| s.as_f64());
    let instr = get(out, "instructions");
    let kilo = instr / 1000.0;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let pairs = [
        ("ipc", ratio(instr, get(out, "cycles"))),
        ("dtlb.l2.mpki", ratio(get(out, "dtlb.l2.misses"), kilo)),
        ("cache.llc.mpki", ratio(get(out, "cache.llc.misses"), kilo)),
        ("walk.refs_per_walk", ratio(get(out, "walk.mem_refs"), get(out, "walks"))),
        ("faults.cycles_avg", ratio(get(out, "cycles.faults"), get(out, "faults"))),
    ];
    for (k, v) in pairs {
        out.insert(k.into(), Stat::Float(v));
    }
    if out.contains_key("dram.reads") {
        let hits = get(out, "dram.reads.row_hits") + get(out, "dram.writes.row_hits");
        let rate = ratio(hits, get(out, "dram.reads") + get(out, "dram.writes"));
        out.insert("dram.row_hit_rate".into(), Stat::Float(rate));
    }
    let mut sorted = faults.to_vec();
    sorted.sort_by(f32::total_cmp);
    let p99 = if sorted.is_empty() { 0.0 } else { sorted[((sorted.len() - 1) as f64 * 0.99).round() as usize] as f64 };
    out.insert("faults.cycles_p99".into(), Stat::Float(p99));
}

fn tlb_arrays(out: &mut Stats, core: &super::core::Core) {
    // The TLB's per-array counters (`tlb.l2.hits`...); its dtlb/itlb
    // totals duplicate the core's own and are left out.
    for (name, value) in core.mmu.tlb.stats().named().into_iter().filter(|(n, _)| n.starts_with("tlb.")) {
        out.insert(format!("core{}.{name}", core.id), Stat::Int(value));
    }
    // The page-walk caches' counters (`pwc.pde_hits`...).
    for (name, value) in core.mmu.pwc.stats().named() {
        out.insert(format!("core{}.{name}", core.id), Stat::Int(value));
    }
}

/// Guest `vm`'s kernel's report (the native kernel's: guest 0).
fn kernel_stats(out: &mut Stats, sim: &Simulation, vm: usize) {
    let kernel = sim.guest(vm);
    kernel.report(&crate::systems::idle_stats(), out);
    // Set once at boot by `Snapshot::apply` (os.fragmentation.snapshot).
    out.insert("phys.snapshot_unplaced".into(), Stat::Int(kernel.mem.snapshot_unplaced()));
    // The snapshot's page cache freed when memory ran out (0 without one).
    out.insert("phys.reclaimed".into(), Stat::Int(kernel.mem.reclaimed()));
}
