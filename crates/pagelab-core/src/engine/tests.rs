//! Scenario tests of whole paths: MMU, faults, policies, shootdowns,
//! determinism. Each builds a machine from a small configuration and runs
//! either a scripted workload or a generator.

use super::testutil::*;
use super::*;
use crate::config::parse_config;
use crate::units::{PageSize, Pfn, VirtAddr};
use crate::workload::{Access, Site, Workload};

/// Translates `vaddr` on a fresh MMU (cold TLB and PWC) of `sim`'s machine
/// and returns the number of walk references.
fn cold_walk_refs(sim: &mut Simulation, mmu: &mut Mmu, vaddr: VirtAddr) -> usize {
    let mut refs = RefBuf::default();
    let mut stats = CoreStats::default();
    mmu.translate(&mut sim.kernel, req(vaddr), &mut refs, &mut stats).unwrap();
    assert_eq!(stats.walk_mem_refs as usize, refs.len());
    refs.len()
}

#[test]
fn a_4k_walk_is_four_references_cold_and_one_with_a_warm_pwc() {
    let cfg = config(&[]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 2))]).unwrap();
    let mut no_pwc = cfg.clone();
    no_pwc.machine.pwc.enabled = false;
    let mut mmu = fresh_mmu(&no_pwc);
    assert_eq!(cold_walk_refs(&mut sim, &mut mmu, BASE), 4);
    assert_eq!(cold_walk_refs(&mut sim, &mut mmu, BASE.add(4096)), 4);
    let mut mmu = fresh_mmu(&cfg);
    assert_eq!(cold_walk_refs(&mut sim, &mut mmu, BASE), 4);
    // Same 2 MiB region: the PDE cache holds the page-table page.
    assert_eq!(cold_walk_refs(&mut sim, &mut mmu, BASE.add(4096)), 1);
}

#[test]
fn walk_references_read_the_real_page_table_addresses() {
    let cfg = config(&[]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    let mut mmu = fresh_mmu(&cfg);
    let mut refs = RefBuf::default();
    mmu.translate(&mut sim.kernel, req(BASE), &mut refs, &mut CoreStats::default()).unwrap();
    let pt = &sim.kernel.proc(1).aspace.pt;
    // The first reference is the PML4 entry: root frame + index * 8.
    let index = (BASE.raw() >> 39) & 511;
    assert_eq!(refs.get(0).0, pt.root_frame().addr().raw() + index * 8);
    assert!(refs.kinds().all(|k| k == RefKind::Walk));
}

#[test]
fn thp_backs_an_aligned_2m_vma_with_one_fault() {
    let cfg = config(&["os.policy=\"thp\"", "run.check_translations=true"]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "faults"), 1.0);
    assert_eq!(stat(&sim, "faults.huge"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.2m"), (2 << 20) as f64);
    assert_eq!(stat(&sim, "mem.mapped.4k"), 0.0);
    // One walk: every later access hits the 2 MiB TLB entry.
    assert_eq!(stat(&sim, "dtlb.l1.misses"), 1.0);
}

#[test]
fn thp_falls_back_to_4k_when_the_vma_is_not_aligned() {
    let cfg = config(&["os.policy=\"thp\"", "os.thp.khugepaged=false"]);
    let start = BASE.add(4096);
    let sim = simulate(cfg, vec![batch(vec![mmap(start, 2 << 20)], stores(start, 512))]).unwrap();
    assert_eq!(stat(&sim, "faults"), 512.0);
    assert_eq!(stat(&sim, "faults.huge"), 0.0);
}

#[test]
fn coloring_hands_out_only_allowed_colors_round_robin() {
    let mut cfg = config(&["os.policy=\"coloring\""]);
    cfg.workload.as_mut().unwrap().colors = vec![1, 3];
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 200))]).unwrap();
    let colors = sim.kernel.color_map();
    let mut count = [0u32; 4];
    for i in 0..200 {
        let m = sim.kernel.proc(1).aspace.pt.lookup(BASE.add(i * 4096)).unwrap();
        let c = colors.color_of(m.frame);
        assert!(c == 1 || c == 3, "page {i} got color {c}");
        count[c as usize] += 1;
    }
    assert_eq!((count[1], count[3]), (100, 100));
}

#[test]
fn bin_hopping_gives_consecutive_faults_consecutive_colors() {
    let cfg = config(&["os.policy=\"bin-hopping\""]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 40))]).unwrap();
    let colors = sim.kernel.color_map();
    let n = colors.nr_colors();
    let seq: Vec<u32> = (0..40)
        .map(|i| colors.color_of(sim.kernel.proc(1).aspace.pt.lookup(BASE.add(i * 4096)).unwrap().frame))
        .collect();
    for w in seq.windows(2) {
        assert_eq!(w[1], (w[0] + 1) % n, "{seq:?}");
    }
}

#[test]
fn munmap_shoots_down_and_a_remapped_page_gets_its_new_frame() {
    let cfg = config(&["run.check_translations=true"]);
    let first = batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 4));
    let unmap = (0, MapEvent::Munmap { start: BASE, len: 1 << 20 });
    let again = batch(vec![unmap, mmap(BASE, 1 << 20)], stores(BASE, 4));
    // check_translations compares every TLB hit with the page table: a
    // stale entry surviving the munmap would fail the run.
    let sim = simulate(cfg, vec![first, again]).unwrap();
    assert_eq!(stat(&sim, "faults"), 8.0);
    assert!(stat(&sim, "os.shootdowns") >= 1.0);
}

#[test]
fn an_access_after_munmap_is_a_segmentation_fault() {
    let cfg = config(&[]);
    let first = batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1));
    let then = batch(vec![(0, MapEvent::Munmap { start: BASE, len: 1 << 20 })], stores(BASE, 1));
    let err = simulate(cfg, vec![first, then]).unwrap_err().to_string();
    assert!(err.contains("outside every mapping"), "{err}");
}

#[test]
fn the_check_mode_catches_a_missing_shootdown() {
    // Remap a page behind the TLB's back (no shootdown): the check must
    // see the TLB's stale frame.
    let cfg = config(&[]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    let mut mmu = fresh_mmu(&cfg);
    let mut refs = RefBuf::default();
    let mut stats = CoreStats::default();
    mmu.translate(&mut sim.kernel, req(BASE), &mut refs, &mut stats).unwrap();
    let k = &mut sim.kernel;
    let aspace = &mut k.procs[0].aspace;
    aspace.unmap_range(BASE, BASE.add(4096), &mut k.mem).unwrap();
    aspace.map_leaf(BASE, Pfn::new(0x3000), PageSize::Size4K, true, &mut k.mem).unwrap();
    let err = mmu.translate(&mut sim.kernel, req(BASE), &mut refs, &mut stats).unwrap_err();
    assert!(err.to_string().contains("stale translation"), "{err}");
}

#[test]
fn partial_munmap_of_a_thp_splits_it() {
    let cfg = config(&["os.policy=\"thp\"", "os.thp.khugepaged=false", "run.check_translations=true"]);
    let first = batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 512));
    let hole = (0, MapEvent::Munmap { start: BASE.add(8192), len: 4096 });
    let mut rest = stores(BASE, 512);
    rest.remove(2);
    let sim = simulate(cfg, vec![first, batch(vec![hole], rest)]).unwrap();
    assert_eq!(stat(&sim, "os.splits"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.2m"), 0.0);
    assert_eq!(stat(&sim, "mem.mapped.4k"), ((2 << 20) - 4096) as f64);
}

#[test]
fn khugepaged_collapses_as_soon_as_max_ptes_none_allows() {
    // Linux's default max_ptes_none = 511 collapses a range with a single
    // present page: here the first quantum of 64 stores.
    let cfg = config(&["os.policy=\"thp\"", "os.thp.fault=false", "os.thp.scan_sleep_ms=0.001", "run.quantum=64"]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "khugepaged.succeed"), 1.0);
    assert_eq!(stat(&sim, "os.pages_copied"), 64.0);
    assert_eq!(stat(&sim, "faults"), 64.0);
}

#[test]
fn khugepaged_collapses_a_fully_populated_range() {
    let cfg = config(&[
        "os.policy=\"thp\"",
        "os.thp.fault=false",
        "os.thp.scan_sleep_ms=0.001",
        "os.thp.max_ptes_none=0",
        "run.check_translations=true",
        "run.quantum=64",
    ]);
    let mut batches = vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 512))];
    for _ in 0..20 {
        batches.push(batch(vec![], (0..512).map(|i| Access::load(BASE.add(i * 4096), 8, 1)).collect()));
    }
    let sim = simulate(cfg, batches).unwrap();
    assert_eq!(stat(&sim, "khugepaged.succeed"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.2m"), (2 << 20) as f64);
    assert_eq!(stat(&sim, "os.pages_copied"), 512.0);
    assert!(stat(&sim, "khugepaged.pmd_mapped") >= 1.0);
}

#[test]
fn hugetlb_backs_chosen_vmas_from_its_pool() {
    let cfg = config(&["os.policy=\"hugetlb\"", "os.hugetlb.pool=\"8MiB\""]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, 1024))]).unwrap();
    assert_eq!(stat(&sim, "faults"), 2.0);
    assert_eq!(stat(&sim, "os.faults.hugetlb_2m"), 2.0);
}

#[test]
fn fragmentation_is_injected_before_the_run() {
    let cfg = config(&["os.fragmentation.target=0.5"]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    let fi = stat(&sim, "phys.fi");
    assert!((0.5..0.52).contains(&fi), "F_i = {fi}");
}

#[test]
fn fmfi_fragmentation_leaves_thp_the_slack_at_99_and_half_the_footprint_at_50() {
    // 512 MiB, a 128 MiB gups, 2 MiB of slack. At 0.99 memfrag releases
    // the footprint in 512 KiB chunks, so only the slack's 2 MiB can back a
    // huge page. At 0.5 (frag.sh's 1 - 128 x 0.5 / 130 = 0.508) it
    // alternates 512 KiB presses with 32 MiB chunks: 64 MiB comes back in
    // two 32 MiB chunks and 64 MiB in presses, so with the slack about half
    // the footprint can be 2 MiB pages.
    let mapped_2m = |fmfi: &str| {
        let cfg = config(&[
            "machine.phys_mem=\"512MiB\"",
            "os.policy=\"thp\"",
            "workload.footprint=\"128MiB\"",
            "workload.accesses=100000",
            "os.fragmentation.fmfi_slack=\"2MiB\"",
            fmfi,
        ]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        stat(&sim, "mem.mapped.2m") / (1 << 20) as f64
    };
    let at_99 = mapped_2m("os.fragmentation.fmfi=0.99");
    let at_50 = mapped_2m("os.fragmentation.fmfi=0.5");
    let unfragmented = mapped_2m("os.fragmentation.fmfi=0.0");
    assert!(at_99 <= 2.0, "{at_99} MiB in 2 MiB pages at FMFI 0.99");
    assert!((48.0..=66.0).contains(&at_50), "{at_50} MiB in 2 MiB pages at FMFI 0.5");
    assert_eq!(unfragmented, 128.0);
}

#[test]
fn fmfi_errors_name_the_key() {
    let key_of = |overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let text = "[machine]\nphys_mem = \"64MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"8MiB\"\n";
        match parse_config(text, "test.toml", &overrides).and_then(Simulation::new) {
            Err(crate::Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {:?}", other.err()),
        }
    };
    assert_eq!(key_of(&["os.fragmentation.fmfi=1.0"]), "os.fragmentation.fmfi");
    assert_eq!(key_of(&["os.fragmentation.fmfi=-0.5"]), "os.fragmentation.fmfi");
    assert_eq!(key_of(&["os.fragmentation.fmfi=0.5", "os.fragmentation.target=0.5"]), "os.fragmentation.fmfi");
    assert_eq!(
        key_of(&["os.fragmentation.fmfi=0.5", "os.fragmentation.fmfi_slack=\"64MiB\""]),
        "os.fragmentation.fmfi_slack"
    );
    let trace = "[machine]\nphys_mem = \"64MiB\"\n[workload]\nkind = \"trace\"\npath = \"t.trace\"\n";
    let cfg = parse_config(trace, "test.toml", &["os.fragmentation.fmfi=0.5".to_string()]).unwrap();
    match vm_footprint(&cfg, 0, "os") {
        Err(crate::Error::Config { key, .. }) => assert_eq!(key, "os.fragmentation.fmfi"),
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn the_same_seed_gives_identical_statistics() {
    let run = |seed: &str| {
        let cfg = config(&["workload.accesses=20000", "os.policy=\"thp\"", seed, "workload.footprint=\"64MiB\""]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        serde_json::to_string(&sim.stats()).unwrap()
    };
    assert_eq!(run("workload.seed=7"), run("workload.seed=7"));
    assert_ne!(run("workload.seed=7"), run("workload.seed=8"));
}

#[test]
fn without_caches_the_memory_stage_gives_the_general_stages_statistics() {
    // An export makes the engine take the general cache stage even with
    // the caches disabled; without one it takes the shortcut. Every
    // statistic (cycles to the last bit) must agree, for each walker entry.
    for walker in ["l1d", "llc", "none"] {
        let run = |export: bool| {
            let level = format!("machine.walker.cache_level=\"{walker}\"");
            let cfg = config(&[
                "workload.accesses=20000",
                "workload.footprint=\"64MiB\"",
                "machine.cache.enabled=false",
                "machine.timing.model=\"fixed\"",
                &level,
            ]);
            let mut sim = Simulation::new(cfg).unwrap();
            let dir = std::env::temp_dir().join(format!("pagelab-memory-stage-{}-{walker}", std::process::id()));
            if export {
                sim.export_phys(&dir).unwrap();
            }
            sim.run().unwrap();
            sim.finish().unwrap();
            let _ = std::fs::remove_file(&dir);
            serde_json::to_string(&sim.stats()).unwrap()
        };
        let (shortcut, general) = (run(false), run(true));
        assert!(shortcut.contains("\"cycles.translation\""));
        assert_eq!(shortcut, general, "walker entry {walker}");
    }
}

#[test]
fn the_engines_view_of_cache_traffic_agrees_with_the_hierarchy() {
    let cfg = config(&["workload.accesses=20000", "workload.footprint=\"64MiB\""]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    // Walk references enter at the L1D: every data and walk reference is
    // an L1D access, and every reference served in memory an LLC miss.
    let l1d = stat(&sim, "cache.l1d.accesses");
    assert_eq!(l1d, stat(&sim, "accesses") + stat(&sim, "walk.mem_refs"));
    assert_eq!(stat(&sim, "cache.llc.misses"), stat(&sim, "mem.accesses"));
    // A faulting access walks twice: once to find nothing, once after the
    // fault handler installed the page (the instruction is re-executed).
    assert_eq!(stat(&sim, "walks"), stat(&sim, "dtlb.l2.misses") + stat(&sim, "faults"));
}

#[test]
fn warmup_resets_statistics_but_not_state() {
    let run = |warmup: &str| {
        let mut sim = Simulation::new(config(&["workload.accesses=20000", warmup])).unwrap();
        sim.run().unwrap();
        sim
    };
    let (cold, warm) = (run("run.warmup=0"), run("run.warmup=30000"));
    let retired = stat(&cold, "instructions");
    let after = stat(&warm, "instructions");
    // Reset at the first quantum boundary past 30000 instructions.
    assert!(after < retired - 30000.0 && after > retired - 40000.0, "{after} of {retired}");
    assert!(stat(&warm, "faults") < stat(&cold, "faults"));
    // State is kept: the pages mapped during warm-up are still mapped.
    assert_eq!(stat(&warm, "mem.mapped.4k"), stat(&cold, "mem.mapped.4k"));
}

#[test]
fn epochs_snapshot_cumulative_statistics() {
    let cfg = config(&["workload.accesses=20000", "run.epoch=5000"]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    let ts = sim.timeseries();
    assert!(ts.len() >= 3, "{} epochs", ts.len());
    let instr: Vec<f64> = ts.iter().map(|s| s["instructions"].as_f64()).collect();
    assert!(instr.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn the_i7_10700_has_the_papers_16_colors() {
    let cfg = parse_config(
        "[machine]\npreset = \"i7-10700\"\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n",
        "t",
        &[],
    )
    .unwrap();
    let sim = Simulation::new(cfg).unwrap();
    let colors = sim.kernel.color_map();
    assert_eq!(colors.nr_colors(), 16);
    assert_eq!(colors.color_of(Pfn::new(0x12345)), 0x5);
    assert_eq!(colors.color_of(Pfn::new(0x1234f)), 0xf);
}

#[test]
fn skip_init_resets_statistics_exactly_where_the_init_pass_ends() {
    let run = |skip: &str| {
        let cfg = config(&["workload.accesses=5000", "workload.init=\"pages\"", "workload.footprint=\"4MiB\"", skip]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        sim
    };
    let all = run("run.skip_init=false");
    let measured = run("run.skip_init=true");
    // The init pass is one store per page (1024 pages): every fault is there.
    assert_eq!(stat(&all, "accesses"), 5000.0 + 1024.0);
    assert_eq!(stat(&measured, "accesses"), 5000.0);
    assert_eq!(stat(&measured, "faults"), 0.0);
    assert_eq!(stat(&all, "faults"), 1024.0);
}

#[test]
fn set_associative_page_walk_caches_work_with_4_level_paging() {
    // The PML5E cache is unused under 4-level paging and gets 0 entries;
    // with `ways` set that once made 0 sets and panicked at construction.
    let cfg = config(&["machine.pwc.ways=2", "workload.accesses=20000", "workload.footprint=\"64MiB\""]);
    assert_eq!(cfg.machine.paging_levels, 4);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    assert!(stat(&sim, "core0.pwc.fills") > 0.0);
    assert!(stat(&sim, "core0.pwc.pde_hits") > 0.0);
    assert_eq!(stat(&sim, "core0.pwc.pml5e_hits"), 0.0);
}

#[test]
fn an_impossible_page_walk_cache_geometry_is_a_config_error_naming_the_key() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let key_of = |overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        match parse_config(text, "test.toml", &overrides) {
            Err(crate::Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {other:?}"),
        }
    };
    // 24 PDE entries in 2-way sets: 12 sets, not a power of two.
    assert_eq!(key_of(&["machine.pwc.ways=2", "machine.pwc.pde_entries=24"]), "machine.pwc.pde_entries");
    // 12 PML5E entries in 4-way sets: 3 sets.
    assert_eq!(key_of(&["machine.pwc.ways=4", "machine.pwc.pml5_entries=12"]), "machine.pwc.pml5_entries");
    // An empty cache is allowed with any way count.
    let cfg = config(&[
        "machine.pwc.ways=4",
        "machine.pwc.pml5_entries=0",
        "machine.pwc.pml4_entries=0",
        "workload.accesses=2000",
    ]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    assert_eq!(stat(&sim, "core0.pwc.pml4e_hits"), 0.0);
    // Caches of at most `ways` entries (the default 2-entry PML4E and
    // PML5E caches beside 4-way sets) are one fully associative set.
    let cfg = config(&["machine.pwc.ways=4", "workload.accesses=2000"]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    assert!(stat(&sim, "core0.pwc.pde_hits") > 0.0);
}

#[test]
fn five_level_paging_walks_five_levels() {
    let cfg = config(&["machine.paging_levels=5", "machine.pwc.enabled=false"]);
    let mut sim = simulate(cfg.clone(), vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    let mut mmu = fresh_mmu(&cfg);
    mmu.pwc = Pwc::new(&cfg.machine.pwc, 5, 1);
    assert_eq!(cold_walk_refs(&mut sim, &mut mmu, BASE), 5);
}

#[test]
fn the_walker_sets_accessed_and_dirty_bits() {
    let cfg = config(&[]);
    let loads = (0..2).map(|i| Access::load(BASE.add(i * 4096), 8, 1)).collect();
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1)), batch(vec![], loads)]).unwrap();
    let pt = &sim.kernel.proc(1).aspace.pt;
    let stored = pt.lookup(BASE).unwrap().pte;
    let loaded = pt.lookup(BASE.add(4096)).unwrap().pte;
    assert!(stored.accessed() && stored.dirty());
    assert!(loaded.accessed() && !loaded.dirty());
}

#[test]
fn a_store_through_a_clean_tlb_entry_sets_the_dirty_bit() {
    let cfg = config(&[]);
    let load_then_store = vec![Access::load(BASE, 8, 1), Access::store(BASE, 8, 1)];
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], load_then_store)]).unwrap();
    assert!(sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().pte.dirty());
    assert_eq!(stat(&sim, "walk.dirty_assists"), 1.0);
}

#[test]
fn automatic_vmas_cover_raw_addresses_only_without_mapping_events() {
    // No mapping events: the OS creates 2 MiB-aligned VMAs around touches.
    let sim = simulate(config(&["os.policy=\"thp\""]), vec![batch(vec![], stores(BASE.add(0x1000), 3))]).unwrap();
    assert_eq!(stat(&sim, "os.auto_vmas"), 1.0);
    assert_eq!(stat(&sim, "faults.huge"), 1.0);
    // With events, an access outside them is an error, not a new VMA.
    let err = simulate(config(&[]), vec![batch(vec![mmap(BASE, 4096)], stores(BASE, 2))]).unwrap_err();
    assert!(err.to_string().contains("outside every mapping"), "{err}");
    let off = simulate(config(&["os.auto_vma=\"off\""]), vec![batch(vec![], stores(BASE, 1))]).unwrap_err();
    assert!(off.to_string().contains("outside every mapping"), "{off}");
}

/// A scripted workload whose mapping events are partial (a captured
/// program's).
struct Partial(Script);

impl Workload for Partial {
    fn name(&self) -> &str {
        "partial"
    }
    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> bool {
        self.0.next_batch(batch, max)
    }
    fn footprint(&self) -> u64 {
        0
    }
    fn partial_mappings(&self) -> bool {
        true
    }
}

#[test]
fn partial_mapping_events_keep_automatic_vmas_and_replace_them() {
    let cfg = config(&["os.policy=\"thp\"", "run.check_translations=true"]);
    let munmap = |start: VirtAddr, len| (0, MapEvent::Munmap { start, len });
    let batches = vec![
        // A first touch outside every mapping: a 2 MiB automatic VMA, THP-backed.
        batch(vec![], stores(BASE.add(0x1000), 1)),
        // A recorded mmap over it: the touched huge page is split and the
        // overlap unmapped (a shootdown), then faulted again in the new VMA.
        batch(vec![mmap(BASE, 4 * 4096)], stores(BASE.add(0x1000), 1)),
        // The automatic VMA's rest still holds its pages.
        batch(vec![], stores(BASE.add(0x10_0000), 1)),
        // Touching what a munmap unmapped: a new automatic VMA, counted.
        batch(vec![munmap(BASE, 4 * 4096)], stores(BASE, 1)),
    ];
    let sim = Simulation::with_workloads(cfg.clone(), vec![Box::new(Partial(Script { batches: batches.clone() }))])
        .and_then(|mut s| s.run().map(|_| s))
        .unwrap();
    assert_eq!(stat(&sim, "os.auto_vmas"), 2.0);
    assert_eq!(stat(&sim, "os.auto_vmas_after_munmap"), 1.0);
    assert_eq!(stat(&sim, "os.splits"), 1.0);
    assert_eq!(stat(&sim, "os.shootdowns"), 2.0);
    assert_eq!(stat(&sim, "faults"), 3.0);
    let names: Vec<_> = sim.kernel.proc(1).aspace.vmas.iter().map(|v| v.name.to_string()).collect();
    assert_eq!(names, ["auto"]);
    // The same script with complete events: no automatic VMA after the
    // first event, so the last store is a segmentation fault.
    let err = simulate(cfg, batches).unwrap_err();
    assert!(err.to_string().contains("outside every mapping"), "{err}");
}

#[test]
fn hugetlb_maps_1g_pages_when_the_buddy_has_1g_blocks() {
    let text = "[machine]\nphys_mem = \"2GiB\"\nmax_order = 18\n[os]\npolicy = \"hugetlb\"\n[os.hugetlb]\nsize = \"1GiB\"\npool = \"1GiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let cfg = parse_config(text, "t.toml", &["run.check_translations=true".into()]).unwrap();
    let base = VirtAddr::new(0x40_0000_0000);
    let sim = simulate(cfg, vec![batch(vec![mmap(base, 1 << 30)], stores(base, 600))]).unwrap();
    assert_eq!(stat(&sim, "os.faults.hugetlb_1g"), 1.0);
    assert_eq!(stat(&sim, "mem.mapped.1g"), (1u64 << 30) as f64);
    assert_eq!(stat(&sim, "dtlb.l1.misses"), 1.0);
}

#[test]
fn compaction_migrates_movable_pages_and_shoots_them_down() {
    // A 16 MiB machine almost full of one process's pages, then every other
    // page unmapped: free memory everywhere, but no free 2 MiB block.
    let cfg =
        parse_config("[machine]\nphys_mem = \"16MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n", "t", &[])
            .unwrap();
    let pages = 3500;
    let mut events = vec![];
    for i in (0..pages).step_by(2) {
        events.push((0, MapEvent::Munmap { start: BASE.add(i * 4096), len: 4096 }));
    }
    let fill = batch(vec![mmap(BASE, pages * 4096)], stores(BASE, pages));
    let mut sim = simulate(cfg, vec![fill, batch(events, vec![])]).unwrap();
    assert_eq!(sim.kernel.mem.free_blocks_per_order()[9..].iter().sum::<u64>(), 0);
    sim.kernel.drain_shootdowns().for_each(drop);
    let live: Vec<u64> = (1..pages).step_by(2).collect();
    let before: Vec<Pfn> =
        live.iter().map(|&i| sim.kernel.proc(1).aspace.pt.lookup(BASE.add(i * 4096)).unwrap().frame).collect();
    let cycles = sim.kernel.compact(crate::units::Order::PMD);
    let s = sim.kernel.stats.clone();
    assert!(s.compaction_migrated > 0 && cycles > 0.0);
    assert_eq!(s.pages_copied, s.compaction_migrated);
    // Every page still maps a frame it owns; those that moved were shot down.
    let mut moved = 0;
    for (&i, &old) in live.iter().zip(&before) {
        let va = BASE.add(i * 4096);
        let frame = sim.kernel.proc(1).aspace.pt.lookup(va).unwrap().frame;
        assert_eq!(sim.kernel.mem.owner(frame), crate::phys::FrameOwner::User { asid: 1, vpn: va.vpn() });
        moved += (frame != old) as u64;
    }
    assert_eq!(moved, s.compaction_migrated);
    assert_eq!(sim.kernel.drain_shootdowns().count() as u64, moved);
    assert!(sim.kernel.mem.free_blocks_per_order()[9..].iter().sum::<u64>() >= 1);
}

/// A capture of one Unmovable and one Reclaimable pageblock (no Movable),
/// with one free order-9 Unmovable block and three Reclaimable ones (two
/// HighAtomic pageblocks, which pagelab does not model, make room for
/// them: the free blocks of a snapshot must fit in its machine).
const ODD_SNAPSHOT: &str = "== /proc/pagetypeinfo
Free pages count per migrate type at order 0 1 2 3 4 5 6 7 8 9 10
Node 0, zone Normal, type Unmovable 0 0 0 0 0 0 0 0 0 1 0
Node 0, zone Normal, type Reclaimable 0 0 0 0 0 0 0 0 0 3 0
Number of blocks type Unmovable Movable Reclaimable HighAtomic
Node 0, zone Normal 1 0 1 2
";

#[test]
fn a_snapshot_on_an_odd_machine_boots_and_reports_what_it_could_not_place() {
    let dir = std::env::temp_dir().join(format!("pagelab-odd-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("snap.txt");
    std::fs::write(&path, ODD_SNAPSHOT).unwrap();
    // 258 MiB = 129 pageblocks: the 1:1 split rounded to 65 + 65 and hung.
    let snapshot = format!("os.fragmentation.snapshot={:?}", path.to_str().unwrap());
    let cfg = config(&["machine.phys_mem=\"258MiB\"", "machine.max_order=9", &snapshot]);
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    // 3 x 32.25 free Reclaimable blocks wanted in 64 Reclaimable pageblocks.
    let unplaced = stat(&sim, "phys.snapshot_unplaced");
    assert!((32.0..=33.0).contains(&unplaced), "{unplaced}");
    let fresh = simulate(config(&[]), vec![batch(vec![mmap(BASE, 1 << 20)], stores(BASE, 1))]).unwrap();
    assert_eq!(stat(&fresh, "phys.snapshot_unplaced"), 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Scripted loads of one page each over a 64 MiB mapping (TLB and cache
/// misses), all made at one site, dependent on each other or not. A first
/// pass over the same pages takes the faults (a fault serialises the
/// window) and is the warm-up.
fn scattered_loads(extra: &[&str], dependent: bool) -> Simulation {
    let site = if dependent { Site::pc(1).dependent() } else { Site::pc(1) };
    let at = |i: u64| BASE.add(((i * 40961) % (64 << 20)) & !7);
    let mut accesses: Vec<Access> = (0..4096u64).map(|i| Access::load(at(i), 8, 4)).collect();
    accesses.extend((0..4096u64).map(|i| Access::load(at(i + 7), 8, 4).at(site)));
    let mut all = vec!["machine.prefetch.enabled=false", "run.warmup=16384"];
    all.extend_from_slice(extra);
    simulate(config(&all), vec![batch(vec![mmap(BASE, 64 << 20)], accesses)]).unwrap()
}

#[test]
fn a_dependent_chain_costs_the_interval_model_more_than_independent_loads() {
    let independent = scattered_loads(&[], false);
    let chained = scattered_loads(&[], true);
    let stall = |s: &Simulation| stat(s, "cycles") - stat(s, "cycles.base") - stat(s, "cycles.faults");
    // Up to ten misses overlap when independent; a chain has one at a time.
    assert!(stall(&chained) > 3.0 * stall(&independent), "{} vs {}", stall(&chained), stall(&independent));
    // The fixed model knows no dependence: the same cycles either way.
    let fixed = ["machine.timing.model=\"fixed\""];
    assert_eq!(stat(&scattered_loads(&fixed, false), "cycles"), stat(&scattered_loads(&fixed, true), "cycles"));
}

#[test]
fn the_interval_model_keeps_the_cycle_identity_and_reports_walk_cycles() {
    for caches in ["true", "false"] {
        let enabled = format!("machine.cache.enabled={caches}");
        let cfg = config(&["workload.accesses=20000", "workload.footprint=\"64MiB\"", &enabled]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        let parts: f64 = ["cycles.base", "cycles.translation", "cycles.data", "cycles.faults", "cycles.daemon"]
            .iter()
            .map(|k| stat(&sim, k))
            .sum();
        let cycles = stat(&sim, "cycles");
        assert!((cycles - parts).abs() <= 1e-9 * cycles, "{cycles} vs {parts}");
        let (walk, translation) = (stat(&sim, "cycles.walk"), stat(&sim, "cycles.translation"));
        assert!(walk > 0.0 && walk <= translation, "walk {walk}, translation {translation}");
    }
}

#[test]
fn the_fixed_models_walk_cycles_are_translation_without_l2_tlb_lookups() {
    let cfg = config(&[
        "workload.accesses=20000",
        "workload.footprint=\"64MiB\"",
        "machine.timing.model=\"fixed\"",
        "machine.prefetch.enabled=false",
    ]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    let lookups = 9.0 * (stat(&sim, "dtlb.l1.misses") + stat(&sim, "itlb.l1.misses"));
    let expected = stat(&sim, "cycles.translation") - lookups;
    let walk = stat(&sim, "cycles.walk");
    assert!(walk > 0.0 && (walk - expected).abs() <= 1e-9 * expected, "{walk} vs {expected}");
}

#[test]
fn prefetchers_hide_a_streams_misses() {
    let run = |prefetch: &str| {
        let on = format!("machine.prefetch.enabled={prefetch}");
        let cfg = config(&["workload.kind=\"stream\"", "workload.accesses=60000", "workload.footprint=\"8MiB\"", &on]);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run().unwrap();
        sim
    };
    let (off, on) = (run("false"), run("true"));
    assert_eq!(stat(&off, "cache.l1d.prefetch_issued"), 0.0);
    assert!(stat(&on, "cache.l2.prefetch_useful") > 0.0 && stat(&on, "cache.l1d.prefetch_useful") > 0.0);
    // Demand accesses are the same; prefetched lines turn misses into hits.
    assert_eq!(stat(&on, "cache.l1d.accesses"), stat(&off, "cache.l1d.accesses"));
    assert!(stat(&on, "cache.l2.misses") < stat(&off, "cache.l2.misses") / 2.0);
    assert!(stat(&on, "cycles") < stat(&off, "cycles"));
}

#[test]
fn switched_off_page_walk_caches_cost_nothing_in_either_model() {
    // A structure that is not there is not looked up: with the caches off,
    // their latency moves no cycle (it did: every walk paid it).
    for model in ["fixed", "interval"] {
        let run = |latency: &str| {
            let timing = format!("machine.timing.model=\"{model}\"");
            let latency = format!("machine.pwc.latency={latency}");
            let cfg = config(&["workload.accesses=5000", "machine.pwc.enabled=false", &timing, &latency]);
            let mut sim = Simulation::new(cfg).unwrap();
            sim.run().unwrap();
            (stat(&sim, "walks"), stat(&sim, "cycles.translation"), stat(&sim, "cycles"))
        };
        let (walks, translation, cycles) = run("1");
        assert!(walks > 100.0, "{model}: the run walks ({walks})");
        assert_eq!(run("40"), (walks, translation, cycles), "{model}");
    }
}
