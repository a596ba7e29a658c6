//! Contiguous entries in the 2D walk, worked by hand on the `ampere-altra`
//! machine (its L2 TLB holds 64 KiB and 32 MiB entries, its L1 64 KiB ones)
//! shrunk to 512 MiB, a VM of 128 MiB: guest and EPT mappings made by hand
//! (each side's leaves and contiguous bits exactly as the case needs), then
//! a walk with no caches whose references are counted, and the pages the
//! one combined entry serves without another walk.
//!
//! Reference counts, no caches: a guest walk of g levels whose tables sit
//! on 4 KiB host pages (4-level EPT walks: the host backs them by `base`)
//! reads g (4 + 1) entries, then the data's EPT walk h entries (4 to a
//! 4 KiB EPT leaf, 3 to a 2 MiB one): 4 KiB guest leaves g = 4, 2 MiB ones
//! g = 3.

use super::super::walk2d::tests::{cold, translate, NO_CACHES};
use crate::config::SimConfig;
use crate::engine::testutil::{batch, config, mmap, simulate, BASE};
use crate::engine::Simulation;
use crate::phys::FrameOwner;
use crate::units::{Gfn, Order, PageSize, Pfn, VirtAddr};

const MIB: u64 = 1 << 20;
/// Guest frames from 64 MiB of guest memory (above what the guest's own
/// tables take) and host frames from 256 MiB of host memory (above the
/// host's tables and the guest's tables' backing): both 32 MiB-aligned.
const GUEST_DATA: u64 = (64 * MIB) >> 12;
const HOST_DATA: u64 = (256 * MIB) >> 12;

fn arm_virt(extra: &[&str]) -> SimConfig {
    let mut all = vec![
        "machine.preset=\"ampere-altra\"",
        "machine.phys_mem=\"512MiB\"",
        "virt.enabled=true",
        "virt.guest_mem=\"128MiB\"",
        "os.policy=\"base\"",
        "virt.host.policy=\"base\"",
        "run.check_translations=true",
    ];
    all.extend_from_slice(extra);
    config(&all)
}

/// A VM with a 64 MiB VMA at BASE and nothing mapped in it.
fn empty_vm(extra: &[&str]) -> Simulation {
    simulate(arm_virt(extra), vec![batch(vec![mmap(BASE, 64 * MIB)], vec![])]).unwrap()
}

fn order_of(size: PageSize) -> Order {
    Order::new((size.shift() - 12) as u8)
}

/// The guest maps `n` pages of `size` from BASE to guest frames from
/// GUEST_DATA, in order; `contig`: then sets the contiguous bit on them (16
/// pages: one range).
fn guest_maps(sim: &mut Simulation, size: PageSize, n: u64, contig: bool) {
    for i in 0..n {
        let (va, gfn) = (BASE.add(i * size.bytes()), Pfn::new(GUEST_DATA + i * size.nr_pages()));
        let owner = FrameOwner::User { asid: 1, vpn: va.vpn() };
        assert!(sim.kernel.mem.alloc_specific(gfn, order_of(size), owner));
        sim.kernel.map_user(1, va, gfn, size, true).unwrap();
    }
    if contig {
        assert!(sim.kernel.page_table_mut(1).set_contiguous(BASE, size), "the guest range qualifies");
    }
}

/// The host backs `n` pages of `size` of guest memory from GUEST_DATA with
/// host frames from HOST_DATA, in order; `contig` as for the guest.
fn host_maps(sim: &mut Simulation, size: PageSize, n: u64, contig: bool) {
    let hv = &mut sim.virt.as_deref_mut().unwrap().hv;
    let host_asid = hv.host_asid(0);
    for i in 0..n {
        let gpa = Gfn::new(GUEST_DATA + i * size.nr_pages()).addr().as_host_virt();
        let pfn = Pfn::new(HOST_DATA + i * size.nr_pages());
        assert!(hv.host.mem.alloc_specific(pfn, order_of(size), FrameOwner::User { asid: host_asid, vpn: gpa.vpn() }));
        hv.host.map_user(host_asid, gpa, pfn, size, true).unwrap();
    }
    if contig {
        let gpa = Gfn::new(GUEST_DATA).addr().as_host_virt();
        assert!(hv.host.page_table_mut(host_asid).set_contiguous(gpa, size), "the EPT range qualifies");
    }
}

/// Translates `first`, then each of `then`, on one cold core without
/// caches (the guest's tables backed beforehand by a throw-away walk): the
/// first walk's references and the walks each later page took.
fn walk_then(sim: &mut Simulation, first: VirtAddr, then: &[VirtAddr]) -> (usize, Vec<u64>) {
    translate(sim, &mut cold(sim), first);
    for &va in then {
        translate(sim, &mut cold(sim), va); // backs what a first touch would
    }
    let mut hw = cold(sim);
    let (refs, stats) = translate(sim, &mut hw, first);
    assert_eq!(stats.walks, 1);
    let walks = then.iter().map(|&va| translate(sim, &mut hw, va).1.walks).collect();
    (refs.len(), walks)
}

fn pages(from: u64, to: u64, step: u64) -> Vec<VirtAddr> {
    (from..to).step_by(step as usize).map(|i| BASE.add(i * 4096)).collect()
}

#[test]
fn a_guest_64k_range_over_a_host_2m_page_is_one_64k_entry_for_its_16_pages() {
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size4K, 16, true);
    host_maps(&mut sim, PageSize::Size2M, 1, false);
    let (refs, walks) = walk_then(&mut sim, BASE.add(5 * 4096), &pages(0, 16, 1));
    assert_eq!(refs, 4 * 5 + 3, "four guest levels on 4 KiB-backed tables, a 3-level EPT walk to the 2 MiB leaf");
    assert_eq!(walks, vec![0; 16], "one walk served all 16 pages");
}

#[test]
fn without_the_guest_bit_the_same_pages_take_a_walk_each() {
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size4K, 16, false);
    host_maps(&mut sim, PageSize::Size2M, 1, false);
    let (refs, walks) = walk_then(&mut sim, BASE, &pages(1, 16, 1));
    assert_eq!(refs, 23);
    assert_eq!(walks, vec![1; 15]);
}

#[test]
fn a_guest_2m_page_over_a_host_32m_range_is_a_2m_entry() {
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size2M, 2, false);
    host_maps(&mut sim, PageSize::Size2M, 16, true);
    // Another page of the same 2 MiB page: no walk; of the next guest
    // 2 MiB page (the same host range): a walk.
    let (refs, walks) = walk_then(&mut sim, BASE, &[BASE.add(300 * 4096), BASE.add(512 * 4096)]);
    assert_eq!(refs, 3 * 5 + 3, "three guest levels, a 3-level EPT walk to the 2 MiB leaf");
    assert_eq!(walks, vec![0, 1]);
}

#[test]
fn a_guest_32m_range_over_a_host_32m_range_is_one_32m_entry() {
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size2M, 16, true);
    host_maps(&mut sim, PageSize::Size2M, 16, true);
    // A page in each of the 16 PMDs' 2 MiB: the L1 holds no 32 MiB entry
    // (N1), the L2's one serves them all.
    let (refs, walks) = walk_then(&mut sim, BASE.add(7 * 4096), &pages(3, 16 * 512, 512));
    assert_eq!(refs, 18);
    assert_eq!(walks, vec![0; 16]);
}

#[test]
fn a_guest_32m_range_over_host_4k_pages_splinters_into_4k_entries() {
    // The host backs the guest's frames at first touch, by `base`.
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size2M, 16, true);
    let (refs, walks) = walk_then(&mut sim, BASE, &[BASE.add(4096), BASE.add(20 * MIB)]);
    assert_eq!(refs, 3 * 5 + 4, "three guest levels, a 4-level EPT walk to the 4 KiB leaf");
    assert_eq!(walks, vec![1, 1]);
}

#[test]
fn a_guest_2m_page_over_a_host_64k_range_is_a_64k_entry() {
    let mut sim = empty_vm(&NO_CACHES);
    guest_maps(&mut sim, PageSize::Size2M, 1, false);
    host_maps(&mut sim, PageSize::Size4K, 16, true);
    let (refs, walks) = walk_then(&mut sim, BASE, &pages(1, 16, 1));
    assert_eq!(refs, 19);
    assert_eq!(walks, vec![0; 15], "the host's 64 KiB range is the smaller reach");
}

#[test]
fn on_a_machine_without_coalescing_tlbs_the_bits_are_ignored() {
    let no_coalescing = ["machine.tlb.l2_coalesced=false", "machine.tlb.l1_64k_entries=0"];
    let mut extra = NO_CACHES.to_vec();
    extra.extend(no_coalescing);
    let mut sim = empty_vm(&extra);
    guest_maps(&mut sim, PageSize::Size4K, 16, true);
    host_maps(&mut sim, PageSize::Size2M, 1, false);
    let (_, walks) = walk_then(&mut sim, BASE, &pages(1, 4, 1));
    assert_eq!(walks, vec![1; 3]);
}

#[test]
fn a_host_change_to_one_page_of_an_ept_range_leaves_no_stale_combined_entry() {
    // Guest 32 MiB over host 32 MiB: one combined entry; the host then
    // discards one 2 MiB page of its range (the bit cleared on all 16 PMDs,
    // an INVEPT). Every later hit is checked against both tables.
    let mut sim = empty_vm(&[]);
    guest_maps(&mut sim, PageSize::Size2M, 16, true);
    host_maps(&mut sim, PageSize::Size2M, 16, true);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    let virt = sim.virt.as_deref_mut().unwrap();
    virt.hv.discard(0, Gfn::new(GUEST_DATA + 5 * 512), 512).unwrap();
    for change in virt.hv.drain_ept_changes() {
        hw.nested.invept(&mut hw.mmu, virt.hv.host_asid(0), &virt.guest_asids[0], change);
    }
    let ept = virt.hv.ept(0);
    let at = Gfn::new(GUEST_DATA).addr().as_host_virt();
    assert_eq!(ept.lookup(at).unwrap().pte.raw() & crate::paging::pte::CONTIGUOUS, 0, "the bit is cleared");
    // Page 0 again: a 2 MiB entry now (a walk); the discarded 2 MiB page
    // (at 10 MiB): a walk that ends in an EPT violation, then the walk
    // again; page 9's 2 MiB served by its own walk.
    for (mib, walks) in [(0, 1), (1, 0), (10, 2), (18, 1), (19, 0)] {
        let (_, stats) = translate(&mut sim, &mut hw, BASE.add(mib * MIB));
        assert_eq!(stats.walks, walks, "at {mib} MiB");
    }
}

#[test]
fn a_guest_change_to_one_page_of_a_guest_range_leaves_no_stale_combined_entry() {
    let mut sim = empty_vm(&[]);
    guest_maps(&mut sim, PageSize::Size4K, 16, true);
    host_maps(&mut sim, PageSize::Size2M, 1, false);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    // The guest remaps page 3 elsewhere: the bit cleared on all 16, the
    // guest's shootdown of that page drops the 64 KiB entry.
    sim.kernel.munmap(1, BASE.add(3 * 4096), 4096).unwrap();
    for s in sim.kernel.drain_shootdowns() {
        hw.mmu.shoot_down(&crate::os::Shootdown { asid: crate::virt::hw_tag(1, s.asid), ..s });
    }
    assert_eq!(translate(&mut sim, &mut hw, BASE.add(4096)).1.walks, 1, "a 4 KiB entry now");
    assert_eq!(translate(&mut sim, &mut hw, BASE.add(4096)).1.walks, 0);
}
