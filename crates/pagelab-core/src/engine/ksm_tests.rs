//! Copy-on-write in the two-dimensional walker, worked by hand: after KSM
//! merged two VMs' equal pages, a store faults once (an EPT violation on a
//! read-only leaf), the host copies the page, and the next store hits; a
//! store through a clean entry of a merged page takes the same path; whole
//! runs with KSM scanning while the guests store keep every translation
//! right (`run.check_translations`) and the sharing invariants.

use super::testutil::*;
use super::walk2d::Walker2d;
use super::*;
use crate::config::parse_config;
use crate::hw::tlb::TlbLookup;
use crate::units::{Gfn, Pfn};
use crate::virt::{hw_tag, PageData};

/// Two one-vCPU VMs of 64 MiB on a 256 MiB host, 4 KiB pages in both
/// layers, both writing `shared` data, KSM on (waking every `sleep_ms`),
/// every TLB hit checked.
pub(crate) fn ksm_text(sleep_ms: f64) -> String {
    let mut text = format!(
        "[machine]\nphys_mem = \"256MiB\"\n[virt]\nenabled = true\n[run]\ncheck_translations = true\n\
         [virt.host]\npolicy = \"base\"\n[virt.host.ksm]\nenabled = true\nsleep_ms = {sleep_ms}\n"
    );
    for _ in 0..2 {
        text += "[[vms]]\nguest_mem = \"64MiB\"\n[vms.os]\npolicy = \"base\"\n[vms.workload]\nkind = \"gups\"\n\
                 footprint = \"1MiB\"\ninit = \"none\"\ncontents = \"shared\"\n";
    }
    text
}

/// Both VMs' vCPUs run `accesses` (scripted) under `ksm_text(sleep_ms)`.
fn run(sleep_ms: f64, accesses: Vec<crate::workload::Access>) -> Simulation {
    run_both(&ksm_text(sleep_ms), accesses)
}

/// Both VMs' vCPUs run `accesses` (scripted, in a 4 MiB mapping at BASE)
/// under the configuration `text`, to the end.
pub(crate) fn run_both(text: &str, accesses: Vec<crate::workload::Access>) -> Simulation {
    let cfg = parse_config(text, "ksm.toml", &[]).unwrap();
    let scripts: Vec<Box<dyn crate::workload::Workload>> = (0..2)
        .map(|_| {
            let b = batch(vec![mmap(BASE, 4 << 20)], accesses.clone());
            Box::new(Script { batches: vec![b] }) as Box<dyn crate::workload::Workload>
        })
        .collect();
    let mut sim = Simulation::with_workloads(cfg, scripts).unwrap();
    sim.run().unwrap();
    sim
}

/// 8 pages stored to in both VMs, then KSM's first wake-ups (one full scan
/// records, the next merges) with their INVEPTs delivered.
fn merged() -> Simulation {
    // (KSM sleeps 1 s: it does not wake during the stores.)
    let mut sim = run(1000.0, stores(BASE, 8));
    sim.virt_round_end(2.0 * 3e9).unwrap();
    let s = sim.stats();
    assert_eq!((s["ksm.pages_shared"].as_f64(), s["ksm.pages_sharing"].as_f64()), (8.0, 8.0));
    sim
}

/// One access of core 0 (VM 1's vCPU) through the 2D walker; its counters.
fn access(sim: &mut Simulation, vaddr: crate::units::VirtAddr, write: bool) -> (Pfn, CoreStats) {
    let virt = sim.virt.as_deref_mut().unwrap();
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    let mut w = Walker2d {
        mmu: &mut sim.cores[0].mmu,
        nested: &mut virt.cores[0],
        guest: &mut sim.kernel,
        hv: &mut virt.hv,
        refs: &mut refs,
        stats: &mut stats,
        guest_asids: &virt.guest_asids[0],
        contents: virt.contents.as_deref_mut().map(|c| (c, PageData::Shared.into())),
    };
    let frame = w.translate(mmu::Request { asid: 1, vaddr, write, instr: false }).unwrap();
    (frame, stats)
}

fn host_frame(sim: &Simulation, vm: usize, vaddr: crate::units::VirtAddr) -> Pfn {
    let m = sim.guest(vm).proc(1).aspace.pt.lookup(vaddr).unwrap();
    let gfn = Gfn::of_guest_kernel(m.frame);
    sim.virt.as_ref().unwrap().hv.backing_of(vm, gfn).unwrap().0
}

#[test]
fn a_store_to_a_merged_page_faults_once_copies_and_the_next_store_hits() {
    let mut sim = merged();
    let shared = host_frame(&sim, 0, BASE);
    assert_eq!(shared, host_frame(&sim, 1, BASE), "one host frame for both VMs' page");
    // The merges' INVEPTs emptied VM 1's combined entries.
    assert!(matches!(sim.cores[0].mmu.tlb.lookup(hw_tag(1, 1), BASE, false), TlbLookup::Miss));
    let (frame, s) = access(&mut sim, BASE, true);
    // A walk ends at the read-only EPT leaf; the host copies; the walk
    // restarts and fills a writable, dirty entry.
    assert_eq!((s.walks, s.ept_violations, s.vm_exits, s.dirty_assists), (2, 1, 1, 0));
    let virt = sim.virt.as_ref().unwrap();
    let (costs, copy) = (&virt.hv.costs, virt.hv.host.costs.copy_4k);
    assert_eq!(s.cycles_virt, costs.vm_exit + costs.ept_violation + copy + costs.invept);
    assert_ne!(frame, shared);
    assert_eq!(frame, host_frame(&sim, 0, BASE));
    assert_eq!(host_frame(&sim, 1, BASE), shared, "VM 2 keeps the KSM page");
    let (again, s) = access(&mut sim, BASE, true);
    assert_eq!((again, s.walks, s.ept_violations, s.dtlb_l1_misses), (frame, 0, 0, 0));
    let stats = sim.stats();
    assert_eq!(stats["ksm.cow_breaks"].as_f64(), 1.0);
    assert_eq!((stats["ksm.pages_shared"].as_f64(), stats["ksm.pages_sharing"].as_f64()), (8.0, 7.0));
}

#[test]
fn a_store_through_a_clean_entry_of_a_merged_page_copies_it() {
    let mut sim = merged();
    let va = BASE.add(4096);
    let shared = host_frame(&sim, 0, va);
    // A load fills a clean, read-only combined entry of the KSM page...
    let (frame, s) = access(&mut sim, va, false);
    assert_eq!((frame, s.walks, s.ept_violations), (shared, 1, 0));
    // ...a store through it faults instead of assisting the dirty bit.
    let (frame, s) = access(&mut sim, va, true);
    assert_eq!((s.walks, s.ept_violations, s.dirty_assists), (1, 1, 0));
    assert_ne!(frame, shared);
    let (_, s) = access(&mut sim, va, true);
    assert_eq!((s.walks, s.ept_violations), (0, 0));
}

#[test]
fn runs_with_ksm_scanning_while_the_guests_store_keep_translations_right() {
    // KSM wakes every 0.01 ms while both VMs store to 64 pages, load them,
    // and store to them again: merges, copy-on-writes and INVEPTs meet
    // the check mode on every TLB hit.
    let mut accesses = stores(BASE, 64);
    accesses.extend((0..64).map(|i| crate::workload::Access::load(BASE.add(i * 4096), 8, 1)));
    for _ in 0..20 {
        accesses.extend((0..64).map(|i| crate::workload::Access::load(BASE.add(i * 4096), 8, 1)));
    }
    accesses.extend(stores(BASE, 64));
    let sim = run(0.01, accesses);
    let s = sim.stats();
    assert!(s["ksm.merges"].as_f64() > 0.0, "KSM merged during the run");
    assert!(s["ksm.cow_breaks"].as_f64() > 0.0, "the second stores broke merged pages");
    let virt = sim.virt.as_ref().unwrap();
    crate::systems::ksm::host::tests::check_sharing(&virt.hv, virt.contents.as_deref().unwrap());
}

#[test]
fn ksm_statistics_exist_only_when_it_runs() {
    let with = run(1000.0, stores(BASE, 2)).stats();
    for name in ["ksm.pages_shared", "ksm.pages_sharing", "ksm.cow_breaks", "ksm.full_scans", "ksm.cpu_cycles"] {
        assert!(with.contains_key(name), "{name}");
    }
    let text = ksm_text(1000.0).replace("enabled = true\nsleep_ms", "enabled = false\nsleep_ms");
    let cfg = parse_config(&text, "off.toml", &[]).unwrap();
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run().unwrap();
    assert!(!sim.stats().keys().any(|k| k.starts_with("ksm.")));
}

/// Both VMs store to 8 pages of host THP memory, host khugepaged waking
/// every 1 ms; KSM (`extra` keys; every 1 s, scanning all of both VMs'
/// backed memory each time) merges the 8 pairs at its second wake-up.
/// Returns the run and the clock's cycles per second.
fn merged_beside_khugepaged(extra: &str) -> (Simulation, f64) {
    let text = ksm_text(1000.0).replace(
        "policy = \"base\"\n[virt.host.ksm]",
        &format!(
            "policy = \"thp\"\n[virt.host.thp]\nkhugepaged = true\nscan_sleep_ms = 1.0\n[virt.host.ksm]\n\
             {extra}pages_to_scan = 100000"
        ),
    );
    let mut sim = run_both(&text, stores(BASE, 8));
    let ghz = 3e9;
    sim.virt_round_end(2.0 * ghz).unwrap();
    let s = sim.stats();
    assert_eq!((s["ksm.pages_shared"].as_f64(), s["ksm.pages_sharing"].as_f64()), (8.0, 8.0));
    (sim, ghz)
}

#[test]
fn host_khugepaged_leaves_a_range_with_a_ksm_page_alone_and_collapses_it_once_unshared() {
    // KSM splits the 2 MiB leaves of the 8 pages both VMs wrote to merge
    // them.
    let (mut sim, ghz) = merged_beside_khugepaged("");
    let gfn =
        |sim: &Simulation, vm: usize| Gfn::of_guest_kernel(sim.guest(vm).proc(1).aspace.pt.lookup(BASE).unwrap().frame);
    let backing = |sim: &Simulation, vm: usize| sim.virt.as_ref().unwrap().hv.backing_of(vm, gfn(sim, vm)).unwrap();
    assert_eq!(backing(&sim, 0).1, crate::units::PageSize::Size4K, "KSM split the leaf to merge a part");
    // khugepaged's next wake-ups find the KSM pages and leave both VMs'
    // ranges alone: still shared, still 4 KiB.
    let before = khugepaged_leaves_both_alone(&mut sim, ghz);
    assert_eq!(backing(&sim, 0).0, backing(&sim, 1).0, "one KSM frame for both");
    // VM 1 stores to its 8 pages: each is copied back (copy-on-write), so
    // its range holds only its own pages and collapses at the next scan;
    // VM 2 still maps the KSM pages.
    for i in 0..8 {
        access(&mut sim, BASE.add(i * 4096), true);
    }
    sim.virt_round_end(2.02 * ghz).unwrap();
    let s = sim.stats();
    assert!(s["host.khugepaged.succeed"].as_f64() > before);
    assert_eq!(backing(&sim, 0).1, crate::units::PageSize::Size2M);
    assert_eq!(backing(&sim, 1).1, crate::units::PageSize::Size4K);
    assert_eq!(s["ksm.pages_shared"].as_f64(), 8.0, "VM 2 keeps each KSM page");
    vm1_reads_its_own_frames(&mut sim);
}

/// khugepaged's wake-ups up to 2.01 s: both VMs' ranges counted as
/// `page_count`, none collapsed, the 8 pages still shared. Returns the
/// collapses before them.
fn khugepaged_leaves_both_alone(sim: &mut Simulation, ghz: f64) -> f64 {
    let before = sim.stats()["host.khugepaged.succeed"].as_f64();
    sim.virt_round_end(2.01 * ghz).unwrap();
    let s = sim.stats();
    assert!(s["host.khugepaged.page_count"].as_f64() >= 2.0);
    assert_eq!(s["host.khugepaged.succeed"].as_f64(), before);
    assert_eq!(s["ksm.pages_sharing"].as_f64(), 8.0);
    before
}

/// The sharing invariants hold, and each of VM 1's 8 pages reads its own
/// host frame through the combined entries (after its collapse).
fn vm1_reads_its_own_frames(sim: &mut Simulation) {
    let virt = sim.virt.as_ref().unwrap();
    crate::systems::ksm::host::tests::check_sharing(&virt.hv, virt.contents.as_deref().unwrap());
    for i in 0..8 {
        let (frame, _) = access(sim, BASE.add(i * 4096), false);
        assert_eq!(frame, host_frame(sim, 0, BASE.add(i * 4096)));
    }
}

#[test]
fn host_khugepaged_leaves_a_ksm_perforated_page_alone_and_collapses_it_once_every_hole_is_patched() {
    // As above with `split = "punch"`: KSM makes each VM's 2 MiB EPT leaf a
    // perforated page whose 8 merged parts are holes (VM 2's own frames
    // of them freed); khugepaged must neither copy a KSM page into a
    // private huge page nor free it.
    let (mut sim, ghz) = merged_beside_khugepaged("split = \"punch\"\n");
    let s = sim.stats();
    assert_eq!(s["ksm.splits"].as_f64(), 0.0);
    let gfn =
        |sim: &Simulation, vm: usize| Gfn::of_guest_kernel(sim.guest(vm).proc(1).aspace.pt.lookup(BASE).unwrap().frame);
    let perforation = |sim: &Simulation, vm: usize| {
        let base = gfn(sim, vm).addr().as_host_virt().align_down(2 << 20);
        crate::systems::perforated::pagetable::perforation_at(sim.virt.as_ref().unwrap().hv.ept(vm), base)
    };
    let holes =
        |sim: &Simulation, vm: usize| perforation(sim, vm).map(|p| crate::systems::perforated::holes::count(&p.holes));
    assert_eq!((holes(&sim, 0), holes(&sim, 1)), (Some(8), Some(8)), "each leaf perforated, 8 holes");
    // khugepaged's wake-ups find the KSM pages among the hole table's
    // PTEs (not the VM's own: SCAN_PAGE_COUNT) and leave both alone.
    let before = khugepaged_leaves_both_alone(&mut sim, ghz);
    assert_eq!((holes(&sim, 0), holes(&sim, 1)), (Some(8), Some(8)));
    let virt = sim.virt.as_ref().unwrap();
    crate::systems::ksm::host::tests::check_sharing(&virt.hv, virt.contents.as_deref().unwrap());
    // VM 1 stores to its 8 pages. The KSM pages are VM 1's own frames in
    // its 2 MiB block, still VM 2's: each hole stays, remapped to a
    // private copy. Its pages are then all its own: khugepaged collapses
    // the perforated page, with a copy, into a plain 2 MiB leaf, and frees
    // the copies and the old block's other frames, not the KSM pages.
    // VM 2's page keeps its holes and the KSM pages.
    for i in 0..8 {
        access(&mut sim, BASE.add(i * 4096), true);
    }
    assert_eq!(holes(&sim, 0), Some(8), "the KSM pages are VM 2's now");
    sim.virt_round_end(2.02 * ghz).unwrap();
    let s = sim.stats();
    assert!(s["host.khugepaged.succeed"].as_f64() > before);
    assert_eq!(perforation(&sim, 0), None, "collapsed: no longer a perforated page");
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!(hv.backing_of(0, gfn(&sim, 0)).unwrap().1, crate::units::PageSize::Size2M);
    assert_eq!(holes(&sim, 1), Some(8));
    assert_eq!(s["ksm.pages_shared"].as_f64(), 8.0, "VM 2 keeps each KSM page");
    // (check_translations checks every TLB hit too.)
    vm1_reads_its_own_frames(&mut sim);
}
