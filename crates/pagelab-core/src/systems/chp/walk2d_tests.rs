//! A guest's colored huge pages in the two-dimensional walk, worked by
//! hand: the references of a cold walk over host 2 MiB and 4 KiB pages,
//! the combined entry or its splinters, a warm walk, and no stale entry
//! after a guest or host change (the check mode verifies every hit and
//! every combined fill against both tables).

use crate::config::SimConfig;
use crate::engine::mmu::Request;
use crate::engine::testutil::*;
use crate::engine::walk2d::tests::{
    access, check_backing, cold, guest_frame, op, run_churn, translate, virt_config, Cold, NO_CACHES,
};
use crate::engine::walk2d::Walker2d;
use crate::engine::Simulation;
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::RefBuf;
use crate::hw::refs::RefTag;
use crate::systems::ExtKind;
use crate::units::{Gfn, VirtAddr};
use crate::virt::hw_tag;
use crate::workload::{Access, Batch, MapEvent};

const SUB: u64 = 256 << 10; // one sub-mapping's 64 pages

/// CHP in the guest with 8 colors (bits 12-14, so a sub-mapping's block
/// is 2 MiB), the process allowed colors 1 and 5: its 8 sub-mappings come
/// from 4 blocks. Host policy `host`.
fn chp_guest(host: &str, extra: &[&str]) -> SimConfig {
    let host = format!("virt.host.policy=\"{host}\"");
    let mut all = vec!["os.policy=\"chp\"", "machine.color_bits=[12,13,14]", host.as_str()];
    all.extend_from_slice(extra);
    let mut cfg = virt_config(&all);
    cfg.workload.as_mut().unwrap().colors = vec![1, 5];
    cfg
}

/// `cfg` after one store to each 4 KiB page of the first 2 MiB of a 4 MiB
/// VMA at `BASE` (one colored huge page; zeroing backing backs its 512
/// frames at the fault).
fn one_colored_huge_page(cfg: SimConfig) -> Simulation {
    let sim = simulate(cfg, vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, 512))]).unwrap();
    assert_eq!(stat(&sim, "os.chp.success"), 1.0);
    assert!(crate::systems::chp::pagetable::is_colored_huge(&sim.kernel.proc(1).aspace.pt, BASE));
    sim
}

fn tags(refs: &RefBuf) -> Vec<RefTag> {
    (0..refs.len()).map(|j| refs.tag(j)).collect()
}

/// `h` EPT entries then one guest entry, `g` times; then `tail` EPT entries.
fn walk_tags(g: usize, h: usize, tail: usize) -> Vec<RefTag> {
    let mut t = Vec::new();
    for _ in 0..g {
        t.extend(std::iter::repeat_n(RefTag::EptWalk, h));
        t.push(RefTag::GuestWalk);
    }
    t.extend(std::iter::repeat_n(RefTag::EptWalk, tail));
    t
}

/// A page of sub-mapping `s`, `page` pages into it.
fn page_of(s: u64, page: u64) -> VirtAddr {
    BASE.add(s * SUB + page * 4096)
}

/// The L2's entry for `vaddr` (process 1 of VM 1), if a colored huge one.
fn colored_huge_entry(hw: &Cold, vaddr: VirtAddr) -> Option<crate::systems::chp::tlb::ColoredHuge> {
    match hw.mmu.tlb.peek_l2(hw_tag(1, 1), vaddr)?.kind {
        crate::hw::tlb::EntryKind::Ext(ExtKind::ColoredHuge(p)) => Some(p),
        _ => None,
    }
}

#[test]
fn a_cold_walk_reads_40_entries_over_host_2m_pages_and_24_over_host_4k_pages() {
    // Guest: PML4, PDPT, PMD and the line (g = 4), each after an EPT walk
    // of its table's frame; then the data's frame: (4 + 1)(h + 1) - 1.
    // Over host 2 MiB pages (h = 3) that is 19, and the other 7
    // sub-mappings' first frames take an EPT walk each: 19 + 21 = 40.
    // Over host 4 KiB pages (h = 4): 24, and the data's 4 KiB EPT leaf
    // ends it (a splinter): the line stands in for the guest PTE.
    for (host, h, others) in [("thp", 3, 7), ("base", 4, 0)] {
        let mut sim = one_colored_huge_page(chp_guest(host, &NO_CACHES));
        let mut hw = cold(&sim);
        let (refs, stats) = translate(&mut sim, &mut hw, page_of(2, 5));
        assert_eq!(refs.len(), 5 * (h + 1) - 1 + others * h, "host {host}");
        assert_eq!(tags(&refs), walk_tags(4, h, h + others * h), "host {host}");
        assert_eq!(
            (stats.walks, super::super::tests::chp_walks(&stats), stats.ept_violations),
            (1, 1, 0),
            "host {host}"
        );
        // The line is read at offset 0 of the PTE page's host frame.
        let pt = sim.kernel.proc(1).aspace.pt.pmd_table_of(BASE).unwrap().0;
        let table = Gfn::of_guest_kernel(sim.kernel.proc(1).aspace.pt.node_frame(pt));
        let host_table = virt_run(&sim).hv.backing_of(0, table).unwrap().0;
        assert_eq!(refs.get(4 * h + 3).0, host_table.addr().raw(), "host {host}");
    }
}

#[test]
fn over_host_2m_pages_one_entry_serves_all_8_sub_mappings_and_over_4k_pages_it_splinters() {
    for (host, walks_each) in [("thp", 0), ("base", 1)] {
        let mut sim = one_colored_huge_page(chp_guest(host, &NO_CACHES));
        let mut hw = cold(&sim);
        translate(&mut sim, &mut hw, page_of(0, 0));
        // `translate` asserts each frame against both tables.
        for s in 0..8 {
            let (_, stats) = translate(&mut sim, &mut hw, page_of(s, 17 + s));
            assert_eq!(stats.walks, walks_each, "host {host}, sub-mapping {s}");
        }
        let entry = colored_huge_entry(&hw, BASE);
        assert_eq!(entry.is_some(), host == "thp", "host {host}");
        if let Some(p) = entry {
            // Its 8 frames: each sub-mapping's first page's host frame.
            let hv = &virt_run(&sim).hv;
            for s in 0..8 {
                let host_first = hv.backing_of(0, guest_frame(&sim.kernel, page_of(s, 0))).unwrap().0;
                assert_eq!(p.sub[s as usize], host_first, "sub-mapping {s}");
            }
            assert_eq!(p.stride_shift, 3);
        }
    }
}

#[test]
fn with_16_colors_a_sub_mapping_spans_4m_and_host_2m_pages_splinter() {
    // A sub-mapping's block is 64 x 16 pages (4 MiB): no 2 MiB EPT leaf
    // holds it, so no combined entry can exist.
    let mut cfg = chp_guest("thp", &["machine.color_bits=[12,13,14,15]"]);
    cfg.workload.as_mut().unwrap().colors = vec![1, 9];
    let mut sim = one_colored_huge_page(cfg);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, page_of(3, 0));
    let (_, stats) = translate(&mut sim, &mut hw, page_of(3, 1));
    assert_eq!(stats.walks, 1, "splintered: the neighbouring page walks");
    assert!(colored_huge_entry(&hw, BASE).is_none());
}

#[test]
fn a_warm_walk_reads_the_line_and_nothing_else() {
    // All caches on. After one walk, the TLB entry dropped: the guest PDE
    // cache gives the PTE page, the nested TLB its host frame and the 8
    // sub-mappings' (12 translations fit its 16 entries): one reference.
    let mut sim = one_colored_huge_page(chp_guest("thp", &[]));
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, page_of(0, 0));
    hw.mmu.tlb.invalidate_asid(hw_tag(1, 1));
    let (refs, stats) = translate(&mut sim, &mut hw, page_of(6, 40));
    assert_eq!((refs.len(), stats.walk_guest_refs, stats.walk_host_refs, stats.pwc_hits), (1, 1, 0, 1));
    assert!(colored_huge_entry(&hw, BASE).is_some());
}

#[test]
fn a_store_through_a_clean_combined_entry_dirties_the_line_and_all_8_ept_leaves() {
    let loads = (0..512).map(|i| Access::load(BASE.add(i * 4096), 8, 1)).collect();
    let mut sim =
        simulate(chp_guest("thp", &["virt.backing=\"first-touch\""]), vec![batch(vec![mmap(BASE, 4 << 20)], loads)])
            .unwrap();
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, page_of(0, 0));
    let gfns: Vec<Gfn> = (0..8).map(|s| guest_frame(&sim.kernel, page_of(s, 0))).collect();
    let hv = &virt_run(&sim).hv;
    assert!(gfns.iter().all(|&g| !hv.ept_dirty(0, g)), "loads and first-touch backing leave the leaves clean");
    let (_, stats) = access(&mut sim, &mut hw, page_of(5, 3), true);
    assert_eq!((stats.walks, stats.dirty_assists), (0, 1));
    let hv = &virt_run(&sim).hv;
    assert!(gfns.iter().all(|&g| hv.ept_dirty(0, g)));
    let pt = sim.kernel.page_table_mut(1);
    let table = pt.pmd_table_of(BASE).unwrap().0;
    assert!(pt.ext_line(table).iter().all(|e| e.dirty()));
    // The entry is dirty now: a store to another sub-mapping needs no assist.
    let (_, stats) = access(&mut sim, &mut hw, page_of(2, 9), true);
    assert_eq!((stats.walks, stats.dirty_assists), (0, 0));
}

/// Statistics of a run of `batches` with CHP in the guest over `host`.
fn run(host: &str, batches: Vec<Batch>) -> Simulation {
    simulate(chp_guest(host, &["run.quantum=1"]), batches).unwrap()
}

#[test]
fn guest_munmap_mprotect_and_reclaim_leave_no_stale_combined_entry() {
    // Check mode on: every TLB hit and every combined fill is checked
    // against the guest's table and the EPT. Touch both colored huge
    // pages, write-protect part of the second (its bit cleared: demoted),
    // unmap another part of it and all of the first (recycled into the
    // allocator cache), map again and touch everything again.
    for host in ["thp", "base"] {
        let all = || (0..1024).map(|i| Access::store(BASE.add(i * 4096), 8, 1)).collect::<Vec<_>>();
        let mprotect = (0, MapEvent::Mprotect { start: page_of(9, 0), len: 4096 * 8, writable: false });
        let unmap_part = (0, MapEvent::Munmap { start: page_of(10, 0), len: SUB });
        let unmap_first = (0, MapEvent::Munmap { start: BASE, len: 2 << 20 });
        let writable_again = (0, MapEvent::Mprotect { start: page_of(9, 0), len: 4096 * 8, writable: true });
        let remap_part = mmap(page_of(10, 0), SUB);
        let loads = (0..1024).map(|i| Access::load(BASE.add(i * 4096), 8, 1)).collect();
        let sim = run(
            host,
            vec![
                batch(vec![mmap(BASE, 4 << 20)], all()),
                batch(vec![mprotect], loads),
                batch(vec![writable_again, unmap_part, unmap_first, mmap(BASE, 2 << 20), remap_part], all()),
            ],
        );
        assert!(stat(&sim, "os.chp.demoted") >= 1.0, "host {host}");
        assert!(stat(&sim, "os.chp.returned") >= 1.0, "host {host}");
        assert!(stat(&sim, "os.chp.cache_hits") >= 1.0, "host {host}");
        assert!(stat(&sim, "walk.chp") >= 2.0, "host {host}");
        check_backing(&sim);
    }
}

#[test]
fn a_host_change_under_a_combined_entry_is_an_invept_and_the_next_walk_splinters() {
    let mut sim = one_colored_huge_page(chp_guest("thp", &[]));
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, page_of(0, 0));
    assert!(colored_huge_entry(&hw, BASE).is_some());
    // The host discards one frame of sub-mapping 3: its 2 MiB EPT leaf
    // splits into 4 KiB leaves.
    let gfn = guest_frame(&sim.kernel, page_of(3, 7));
    let virt = virt_run_mut(&mut sim);
    virt.hv.discard(0, gfn, 1).unwrap();
    for change in virt.hv.drain_ept_changes() {
        hw.nested.invept(&mut hw.mmu, virt.hv.vms[0].host_asid, &virt.guest_asids[0], change);
    }
    assert!(colored_huge_entry(&hw, BASE).is_none(), "the INVEPT dropped it");
    // Sub-mapping 3's leaf is now too small: a walk splinters, another
    // sub-mapping's page walks again too (no combined entry).
    let (_, stats) = translate(&mut sim, &mut hw, page_of(3, 7));
    assert_eq!((stats.walks, stats.ept_violations), (2, 1), "backed again after a violation");
    let (_, stats) = translate(&mut sim, &mut hw, page_of(0, 1));
    assert_eq!(stats.walks, 1);
    assert!(colored_huge_entry(&hw, BASE).is_none());
}

#[test]
fn a_missing_invept_under_a_combined_entry_is_caught_by_the_check_mode() {
    let mut sim = one_colored_huge_page(chp_guest("thp", &[]));
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, page_of(0, 0));
    let gfn = guest_frame(&sim.kernel, page_of(6, 2));
    let (guest, virt) = guest_and_virt(&mut sim);
    virt.hv.discard(0, gfn, 1).unwrap();
    let mut w = Walker2d {
        mmu: &mut hw.mmu,
        nested: &mut hw.nested,
        guest,
        hv: &mut virt.hv,
        refs: &mut RefBuf::default(),
        stats: &mut CoreStats::default(),
        guest_asids: &virt.guest_asids[0],
        contents: None,
    };
    let req = Request { asid: 1, vaddr: page_of(6, 2), write: false, instr: false };
    let e = w.translate(req).unwrap_err().to_string();
    assert!(e.contains("stale translation"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// With CHP in the guest (over host THP or 4 KiB pages), every address
    /// translates as the two tables say after any guest or host change:
    /// the check mode verifies every TLB hit, every combined colored huge
    /// fill and every cached EPT entry.
    #[test]
    fn with_chp_in_the_guest_every_address_translates_as_the_two_tables_say(
        host_thp in proptest::prelude::any::<bool>(),
        ops in proptest::collection::vec(op(8), 1..60),
    ) {
        let cfg = chp_guest(if host_thp { "thp" } else { "base" }, &["run.quantum=1"]);
        run_churn(cfg, &ops);
    }
}

#[test]
fn chps_counters_read_the_same_in_a_guest_over_host_2m_pages_as_natively() {
    // Two colored huge pages stored to, then loads striding over both:
    // the guest OS does what the native one does (os.chp.*), and over
    // host 2 MiB pages the combined entries have the native entries'
    // reach, so the L2 TLB misses and CHP walks match; over host 4 KiB
    // pages every page misses once.
    let script = || {
        let loads = (0..4096u64).map(|i| Access::load(BASE.add((i * 37 % 1024) * 4096), 8, 1)).collect();
        vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, 1024)), batch(vec![], loads)]
    };
    let native = {
        let mut cfg = config(&["os.policy=\"chp\"", "machine.color_bits=[12,13,14]", "run.check_translations=true"]);
        cfg.workload.as_mut().unwrap().colors = vec![1, 5];
        simulate(cfg, script()).unwrap()
    };
    let over_2m = simulate(chp_guest("thp", &[]), script()).unwrap();
    let over_4k = simulate(chp_guest("base", &[]), script()).unwrap();
    for name in ["os.chp.attempts", "os.chp.success", "os.chp.blocks", "os.chp.cache_hits", "faults"] {
        assert_eq!(stat(&over_2m, name), stat(&native, name), "{name}");
        assert_eq!(stat(&over_4k, name), stat(&native, name), "{name}");
    }
    assert_eq!(stat(&native, "os.chp.success"), 2.0);
    for name in ["dtlb.l2.misses", "walk.chp"] {
        assert_eq!(stat(&over_2m, name), stat(&native, name), "{name}");
    }
    assert_eq!(stat(&native, "dtlb.l2.misses"), 2.0, "one walk per colored huge page");
    assert_eq!(stat(&over_4k, "dtlb.l2.misses"), 1024.0, "one walk per 4 KiB page");
    assert_eq!(stat(&over_4k, "walk.chp"), 1024.0);
    for s in [&over_2m, &over_4k] {
        let restarts = stat(s, "virt.ept_violations.walk");
        assert_eq!(stat(s, "walks"), stat(s, "dtlb.l2.misses") + stat(s, "faults") + restarts);
        assert_eq!(stat(s, "walk.mem_refs"), stat(s, "walk.guest_refs") + stat(s, "walk.host_refs"));
    }
}
