//! The hypervisor's services worked by hand: EPT accessed and dirty bits
//! after known access sequences, their scan and clearing.

use crate::engine::testutil::BASE;
use crate::engine::walk2d::tests::{access, cold, guest_frame, touched, virt_config};
use crate::engine::Simulation;
use crate::units::{Gfn, PageSize, VirtAddr};
use crate::virt::ept_bits::{EptClear, EptLeafBits};

const BASE_ON_BASE: [&str; 3] = ["os.policy=\"base\"", "virt.host.policy=\"base\"", "machine.pwc.enabled=false"];

fn page(i: u64) -> VirtAddr {
    BASE.add(i * 4096)
}

/// Every EPT leaf of VM 0 with its bits (and clears them as `clear` says).
fn scan(sim: &mut Simulation, clear: EptClear) -> Vec<EptLeafBits> {
    let frames = sim.virt.as_ref().unwrap().hv.vms[0].guest_frames;
    sim.scan_ept_bits(0, Gfn::new(0), Gfn::new(frames), clear, false).unwrap()
}

/// The bits of the leaf mapping `gfn`: (accessed, dirty).
fn bits_of(leaves: &[EptLeafBits], gfn: Gfn) -> (bool, bool) {
    let leaf = leaves.iter().find(|l| l.gfn.raw() <= gfn.raw() && gfn.raw() < l.gfn.raw() + l.size.nr_pages());
    leaf.map_or((false, false), |l| (l.accessed, l.dirty))
}

#[test]
fn stores_set_accessed_and_dirty_and_a_walk_dirties_the_guest_tables_it_reads() {
    // Four stores to four new pages: each a guest fault (its tables and
    // page backed at once: zeroing), then a walk of a store. The EPT then
    // maps 4 guest tables (PGD, PUD, PMD, PTE page) and 4 data frames;
    // every one accessed and dirty (a guest table's read is a store to
    // EPT A/D).
    let mut sim = touched(virt_config(&BASE_ON_BASE), 4);
    let leaves = scan(&mut sim, EptClear::None);
    assert_eq!(leaves.len(), 8);
    assert!(leaves.iter().all(|l| l.size == PageSize::Size4K && l.accessed && l.dirty), "{leaves:?}");
    let data: Vec<Gfn> = (0..4).map(|i| guest_frame(&sim.kernel, page(i))).collect();
    let tables: Vec<&EptLeafBits> = leaves.iter().filter(|l| !data.contains(&l.gfn)).collect();
    assert_eq!(tables.len(), 4);
    let root = Gfn::of_guest_kernel(sim.kernel.proc(1).aspace.pt.root_frame());
    assert!(tables.iter().any(|l| l.gfn == root));
}

#[test]
fn after_a_clear_a_scan_sees_only_the_new_accesses() {
    let mut sim = touched(virt_config(&BASE_ON_BASE), 4);
    let cleared = scan(&mut sim, EptClear::AccessedDirty);
    assert_eq!(cleared.len(), 8);
    assert!(scan(&mut sim, EptClear::None).iter().all(|l| !l.accessed && !l.dirty));
    let data: Vec<Gfn> = (0..4).map(|i| guest_frame(&sim.kernel, page(i))).collect();
    // On a core with nothing cached: a load of page 1 walks all four guest
    // tables (accessed and dirty again) and its data frame (accessed: the
    // guest PTE is dirty, the EPT leaf not, so the combined entry is
    // clean); the store to page 1 hits that clean entry: the dirty assist
    // sets the EPT leaf's dirty bit; the store to page 2 walks (the tables
    // from the nested TLB) and sets both of its data frame.
    let mut hw = cold(&sim);
    let (_, load) = access(&mut sim, &mut hw, page(1), false);
    assert_eq!((load.walks, load.walk_host_refs), (1, 4 * 4 + 4));
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), data[1]), (true, false));
    let (_, store) = access(&mut sim, &mut hw, page(1), true);
    assert_eq!((store.walks, store.dirty_assists), (0, 1));
    let (_, store2) = access(&mut sim, &mut hw, page(2), true);
    assert_eq!((store2.walks, store2.walk_host_refs, store2.dirty_assists), (1, 4, 0));
    let leaves = scan(&mut sim, EptClear::None);
    assert_eq!(bits_of(&leaves, data[0]), (false, false));
    assert_eq!(bits_of(&leaves, data[1]), (true, true));
    assert_eq!(bits_of(&leaves, data[2]), (true, true));
    assert_eq!(bits_of(&leaves, data[3]), (false, false));
    let tables = leaves.iter().filter(|l| !data.contains(&l.gfn));
    assert!(tables.clone().all(|l| l.accessed && l.dirty));
    assert_eq!(tables.count(), 4);
}

#[test]
fn a_cleared_bit_is_set_again_only_once_the_cached_translation_goes() {
    let mut sim = touched(virt_config(&BASE_ON_BASE), 4);
    let gfn0 = guest_frame(&sim.kernel, page(0));
    let mut hw = cold(&sim);
    access(&mut sim, &mut hw, page(0), false);
    scan(&mut sim, EptClear::Accessed);
    // The combined entry is still in the TLB: no walk, no bit.
    let (_, hit) = access(&mut sim, &mut hw, page(0), false);
    assert_eq!(hit.walks, 0);
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), gfn0), (false, true), "dirty bits were kept");
    // A flushing scan: its INVEPT drops the VM's combined entries.
    let frames = sim.virt.as_ref().unwrap().hv.vms[0].guest_frames;
    let virt = sim.virt.as_deref_mut().unwrap();
    virt.hv.scan_ept_bits(0, Gfn::new(0), Gfn::new(frames), EptClear::None, true);
    let changes = virt.hv.drain_ept_changes();
    assert_eq!(changes.len(), 1);
    for c in changes {
        hw.nested.invept(&mut hw.mmu, virt.hv.host_asid(0), &virt.guest_asids[0], c);
    }
    let (_, walked) = access(&mut sim, &mut hw, page(0), false);
    assert_eq!(walked.walks, 1);
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), gfn0), (true, true));
}

#[test]
fn a_store_through_a_clean_nested_tlb_entry_sets_the_dirty_bit() {
    // Guest 4 KiB pages on host 2 MiB pages: one nested-TLB entry covers
    // the data frames of pages 0 and 1. The load of page 0 fills it clean;
    // the store to page 1 walks the guest tables and hits that entry.
    let mut sim =
        touched(virt_config(&["os.policy=\"base\"", "virt.host.policy=\"thp\"", "machine.pwc.enabled=false"]), 4);
    let (g0, g1) = (guest_frame(&sim.kernel, page(0)), guest_frame(&sim.kernel, page(1)));
    assert_eq!(g0.raw() >> 9, g1.raw() >> 9, "one host 2 MiB page backs both");
    scan(&mut sim, EptClear::AccessedDirty);
    let mut hw = cold(&sim);
    access(&mut sim, &mut hw, page(0), false);
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), g0), (true, false));
    let (_, store) = access(&mut sim, &mut hw, page(1), true);
    // Every frame from the nested TLB: no EPT entry read.
    assert_eq!((store.walks, store.walk_host_refs, store.dirty_assists), (1, 0, 0));
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), g1), (true, true));
    assert_eq!(sim.virt.as_ref().unwrap().hv.counters.ept_scans, 3);
}

/// Delivers the hypervisor's queued EPT changes to `hw` as INVEPTs.
fn invept(sim: &mut Simulation, hw: &mut crate::engine::walk2d::tests::Cold) -> usize {
    let virt = sim.virt.as_deref_mut().unwrap();
    let changes = virt.hv.drain_ept_changes();
    for &c in &changes {
        hw.nested.invept(&mut hw.mmu, virt.hv.host_asid(0), &virt.guest_asids[0], c);
    }
    changes.len()
}

const NO_CACHES: [&str; 2] = ["machine.pwc.enabled=false", "machine.nested_tlb.entries=0"];

#[test]
fn an_ept_only_split_maps_the_same_frames_through_4k_leaves_and_a_collapse_puts_the_huge_leaf_back() {
    // Guest 4 KiB pages on host 2 MiB pages, no walk caches: a walk reads
    // 4 guest entries, each after a 3-level EPT walk, then 3 for the data:
    // 19. After splitting the 2 MiB EPT leaf of the data's frame, its EPT
    // walk reads 4 entries, and so does that of every guest table in the
    // same 2 MiB of guest memory.
    let mut cfg = vec!["os.policy=\"base\"", "virt.host.policy=\"thp\""];
    cfg.extend(NO_CACHES);
    let mut sim = touched(virt_config(&cfg), 4);
    let gfn = guest_frame(&sim.kernel, page(1));
    let region = gfn.raw() >> 9;
    let guest_tables = (scan(&mut sim, EptClear::None).len() - 1) as u64;
    let hv = &sim.virt.as_ref().unwrap().hv;
    let (frame, size) = hv.backing_of(0, gfn).unwrap();
    assert_eq!(size, PageSize::Size2M);
    let root = Gfn::of_guest_kernel(sim.kernel.proc(1).aspace.pt.root_frame());
    let tables_in_region = u64::from(root.raw() >> 9 == region) * guest_tables;
    let owner = hv.host.mem.owner(frame);
    let (free, mapped) = (hv.host.mem.free_pages(), sim.stats()["host.mem.mapped.2m"].as_f64());
    // Only the A bit of the huge leaf: the split leaves inherit it.
    scan(&mut sim, EptClear::AccessedDirty);
    let mut hw = cold(&sim);
    let (before, _) = access(&mut sim, &mut hw, page(1), false);
    assert_eq!(before.len(), 19);

    let cycles = hv_mut(&mut sim).ept_split(0, gfn).unwrap();
    assert_eq!(cycles, 26_100.0);
    assert_eq!(invept(&mut sim, &mut hw), 1);
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!(hv.backing_of(0, gfn), Some((frame, PageSize::Size4K)), "the same host frame, a 4 KiB leaf");
    assert_eq!(hv.host.mem.owner(frame), owner, "no host metadata change");
    assert_eq!(hv.host.mem.free_pages(), free - 1, "one host frame for the new EPT table");
    assert_eq!(sim.stats()["host.mem.mapped.2m"].as_f64(), mapped);
    assert_eq!(sim.stats()["host.ept_splits"].as_f64(), 1.0);
    let leaves = scan(&mut sim, EptClear::None);
    let split: Vec<_> = leaves.iter().filter(|l| l.gfn.raw() >> 9 == region).collect();
    assert_eq!(split.len(), 512);
    let page1 = split.iter().find(|l| l.gfn == gfn).unwrap();
    assert!(page1.accessed && !page1.dirty);
    assert!(split.iter().all(|l| l.size == PageSize::Size4K && l.accessed == page1.accessed && !l.dirty));
    // The walk (check mode on: the frame is the guest's then the EPT's).
    let (after, _) = access(&mut sim, &mut hw, page(1), true);
    assert_eq!(after.len() as u64, 19 + 1 + tables_in_region);
    let leaves = scan(&mut sim, EptClear::None);
    // Per-4 KiB dirty bits: the stored page's, and the guest tables' in
    // the region (their reads count as stores).
    let dirty = leaves.iter().filter(|l| l.dirty && l.gfn.raw() >> 9 == region);
    assert_eq!(dirty.clone().count() as u64, 1 + tables_in_region);
    assert!(dirty.clone().any(|l| l.gfn == gfn));

    let cycles = hv_mut(&mut sim).ept_collapse(0, gfn, PageSize::Size2M).unwrap();
    assert_eq!(cycles, Some(46_800.0));
    assert_eq!(invept(&mut sim, &mut hw), 1);
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!(hv.backing_of(0, gfn), Some((frame, PageSize::Size2M)));
    assert_eq!(hv.host.mem.free_pages(), free, "the table's frame is back");
    assert_eq!(bits_of(&scan(&mut sim, EptClear::None), gfn), (true, true), "the bits of any of the 512");
    let (again, _) = access(&mut sim, &mut hw, page(2), false);
    assert_eq!(again.len(), 19);
    let s = sim.stats();
    assert_eq!((s["host.ept_collapses"].as_f64(), s["host.ept_remap_cycles"].as_f64()), (1.0, 72_900.0));
}

#[test]
fn a_guest_2m_page_splinters_while_its_ept_leaf_is_split_and_grows_again_after_the_collapse() {
    // Guest and host THP: one 2 MiB combined TLB entry covers pages 0 and
    // 1 (one walk). Split: 4 KiB combined entries (two walks). Collapse:
    // one walk again.
    let mut sim = touched(virt_config(&["os.policy=\"thp\"", "virt.host.policy=\"thp\""]), 4);
    let gfn = guest_frame(&sim.kernel, page(0));
    let walks = |sim: &mut Simulation, hw: &mut crate::engine::walk2d::tests::Cold| {
        (0..2).map(|i| access(sim, hw, page(i), false).1.walks).sum::<u64>()
    };
    let mut hw = cold(&sim);
    assert_eq!(walks(&mut sim, &mut hw), 1);
    hv_mut(&mut sim).ept_split(0, gfn).unwrap();
    invept(&mut sim, &mut hw);
    assert_eq!(walks(&mut sim, &mut hw), 2);
    assert_eq!(hv_mut(&mut sim).ept_collapse(0, gfn, PageSize::Size2M).unwrap(), Some(46_800.0));
    invept(&mut sim, &mut hw);
    assert_eq!(walks(&mut sim, &mut hw), 1);
}

#[test]
fn a_collapse_is_refused_when_a_part_no_longer_maps_its_frame_and_a_split_needs_a_huge_leaf() {
    let mut sim = touched(virt_config(&["os.policy=\"base\"", "virt.host.policy=\"thp\""]), 4);
    let gfn = guest_frame(&sim.kernel, page(0));
    assert_eq!(hv_mut(&mut sim).ept_collapse(0, gfn, PageSize::Size2M).unwrap(), None, "not split");
    hv_mut(&mut sim).ept_split(0, gfn).unwrap();
    let e = hv_mut(&mut sim).ept_split(0, gfn).unwrap_err().to_string();
    assert!(e.contains("no huge EPT leaf"), "{e}");
    // Move one part elsewhere (as a migration of a 4 KiB part would).
    let hv = &mut sim.virt.as_deref_mut().unwrap().hv;
    let ept = hv.ept_mut(0);
    let slot = ept.leaf_slot(gfn.addr().as_host_virt()).unwrap();
    let pte = ept.entry(slot);
    ept.replace(slot, pte.with_pfn(crate::units::Pfn::new(pte.pfn().raw() + 4096)));
    assert_eq!(hv_mut(&mut sim).ept_collapse(0, gfn, PageSize::Size2M).unwrap(), None);
    let s = sim.stats();
    assert_eq!((s["host.ept_collapses"].as_f64(), s["host.ept_collapse_refused"].as_f64()), (0.0, 2.0));
}

fn hv_mut(sim: &mut Simulation) -> &mut crate::virt::Hypervisor {
    &mut sim.virt.as_deref_mut().unwrap().hv
}

#[test]
fn the_engine_delivers_a_split_and_a_collapse_as_invepts_to_the_vms_cores() {
    let mut sim = touched(virt_config(&["os.policy=\"base\"", "virt.host.policy=\"thp\""]), 4);
    let gfn = guest_frame(&sim.kernel, page(0));
    let cycles = sim.stats()["cycles.virt"].as_f64();
    sim.ept_split(0, gfn).unwrap();
    assert_eq!(sim.ept_collapse(0, gfn, PageSize::Size2M).unwrap(), Some(46_800.0));
    let s = sim.stats();
    assert_eq!(s["virt.invepts"].as_f64(), 2.0);
    assert_eq!(s["cycles.virt"].as_f64() - cycles, 2.0 * 500.0, "one INVEPT each on the VM's one core");
}
