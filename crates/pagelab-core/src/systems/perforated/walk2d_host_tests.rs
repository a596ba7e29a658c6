//! A host perforated EPT leaf in the 2D walk, worked by hand. The host
//! runs `perforated` with every region of the VM's memory fragmented; the
//! tests patch every hole of every host perforated page (so their filters
//! are 0: an EPT translation through one reads 3 entries with no caches,
//! as a 2 MiB EPT leaf's), then punch host holes at sub-pages 70 and 100
//! of the region under the guest's data (filter 0b10). Every cache of both
//! dimensions is off; the L2 TLB latency is 9 cycles.

use super::tests::{page, Probe, HUGE, L2};
use crate::engine::testutil::*;
use crate::engine::walk2d::tests::{ept_translate, NO_CACHES};
use crate::engine::Simulation;
use crate::hw::refs::RefTag;
use crate::hw::tlb::TlbLookup;
use crate::systems::perforated::holes::is_hole;
use crate::systems::perforated::pagetable::{perforation_at, Perforation};
use crate::systems::perforated::{patch, punch};
use crate::units::{Gfn, PageSize, Pfn, VirtAddr};
use crate::workload::{Access, Batch};

fn host_perforated(guest: &str, extra: &[&str]) -> crate::config::SimConfig {
    let guest = format!("os.policy=\"{guest}\"");
    let mut all = vec![
        "virt.enabled=true",
        "virt.guest_mem=\"64MiB\"",
        "virt.host.policy=\"perforated\"",
        "virt.host.holes.portion=1.0",
        "virt.host.holes.degree=0.01",
        "virt.host.thp.khugepaged=false",
        "os.thp.khugepaged=false",
        "run.check_translations=true",
        &guest,
    ];
    all.extend_from_slice(extra);
    config(&all)
}

/// The VM process's address (guest-physical) of guest frame `pfn`.
fn gpa(pfn: Pfn) -> VirtAddr {
    Gfn::of_guest_kernel(pfn).addr().as_host_virt()
}

/// Every host perforated page of the VM patched whole, then host holes
/// punched at `holes` of the region under guest frame `data`; its
/// shootdowns dropped. Returns the host perforated page.
fn host_holes_at(sim: &mut Simulation, data: Pfn, holes: &[u64]) -> Perforation {
    let hv = &mut virt_run_mut(sim).hv;
    let asid = hv.host_asid(0);
    let frames = hv.vms[0].guest_frames;
    for region in 0..frames / 512 {
        let base = VirtAddr::new(region * HUGE);
        let Some(p) = perforation_at(hv.ept(0), base) else { continue };
        for i in (0..512).filter(|&i| is_hole(&p.holes, i)) {
            patch(&mut hv.host, asid, base.add(i as u64 * 4096)).unwrap();
        }
    }
    let base = gpa(data).align_down(HUGE);
    for &i in holes {
        punch(&mut hv.host, asid, base.add(i * 4096)).unwrap();
    }
    drop(hv.drain_ept_changes());
    perforation_at(hv.ept(0), base).expect("the data's host region is a perforated page")
}

/// A load's host frame, reference tags and translation cycles.
fn tags((frame, refs, cycles): (Pfn, Vec<(u64, RefTag)>, f64)) -> (Pfn, Vec<RefTag>, f64) {
    (frame, refs.into_iter().map(|(_, tag)| tag).collect(), cycles)
}

/// The host frame backing `va` (guest table, then EPT: software walks).
fn host_of(sim: &Simulation, va: VirtAddr) -> Pfn {
    let m = sim.kernel.proc(1).aspace.pt.lookup(va).unwrap();
    let gfn = Gfn::of_guest_kernel(m.frame_of(va));
    virt_run(sim).hv.backing_of(0, gfn).unwrap().0
}

/// `n` EPT walks of `h` entries, each followed by one guest entry.
fn guest_walk(n: usize, h: usize) -> Vec<RefTag> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend(std::iter::repeat_n(RefTag::EptWalk, h));
        out.push(RefTag::GuestWalk);
    }
    out
}

fn cat(parts: &[&[RefTag]]) -> Vec<RefTag> {
    parts.concat()
}

const EPT3: [RefTag; 3] = [RefTag::EptWalk; 3];
/// The EPT's hole walk after its PMD: the host's bitmap, the shadow PMD
/// entry, the hole's PTE.
const HOST_HOLE: [RefTag; 3] = [RefTag::Walk, RefTag::EptWalk, RefTag::EptWalk];

/// A guest mapping of `pages` pages at BASE, all stored to.
fn guest_with(guest: &str) -> Simulation {
    let cfg = host_perforated(guest, &NO_CACHES);
    simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap()
}

#[test]
fn a_guest_huge_page_over_a_host_perforated_leaf_is_one_combined_perforated_entry() {
    let mut sim = guest_with("thp");
    let data = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap();
    assert_eq!(data.size, PageSize::Size2M, "a guest 2 MiB page");
    let host = host_holes_at(&mut sim, data.frame, &[70, 100]);
    assert_eq!(host.filter, 0b10);
    let mut probe = Probe::new(&sim);
    // An L2 miss: three guest levels after their tables' EPT translations
    // (3 entries each: the perforated PMD's filter answers), then the
    // data's: 15, as 2 MiB on 2 MiB. A combined perforated entry over the
    // host's 2 MiB frame with the host's filter; page 0's region has no
    // hole: the filter answers.
    let (f, refs, cycles) = tags(probe.load(&mut sim, page(0)));
    assert_eq!((f, refs, cycles), (host.frame, cat(&[&guest_walk(3, 3), &EPT3]), L2));
    assert_eq!(probe.counters(), (1, 0, 0, 0));
    assert!(matches!(probe.mmu.tlb.peek(crate::virt::hw_tag(1, 1), page(5), false), TlbLookup::L2(_)));
    // Row 1: the filter answers; no reference.
    let (f, refs, cycles) = tags(probe.load(&mut sim, page(5)));
    assert_eq!((f, refs, cycles), (host.frame.add(5), vec![], L2));
    // Row 4: region 1 may hold a hole: the host's bitmap line, read at its
    // host address (no translation), a second L2 access; no hole.
    let (f, refs, cycles) = tags(probe.load(&mut sim, page(65)));
    assert_eq!((f, refs, cycles), (host.frame.add(65), vec![RefTag::Walk], 2.0 * L2));
    assert_eq!(probe.counters(), (2, 1, 1, 0));
    // Row 2: the bitmap entry is in the L2.
    let (f, refs, _) = tags(probe.load(&mut sim, page(66)));
    assert_eq!((f, refs), (host.frame.add(66), vec![]));
    // A hole only in the host: the bitmap in the L2 says hole; the walker
    // translates as usual: the guest's walk (12), the EPT's to the
    // perforated PMD (3), the host's bitmap and its hole walk (3): 18,
    // the punched host frame, cached as a 4 KiB entry.
    let hole_70 = host_of(&sim, page(70));
    assert_ne!(hole_70, host.frame.add(70));
    let (f, refs, cycles) = tags(probe.load(&mut sim, page(70)));
    assert_eq!((f, refs, cycles), (hole_70, cat(&[&guest_walk(3, 3), &EPT3, &HOST_HOLE]), 2.0 * L2));
    assert_eq!(probe.counters(), (2, 3, 1, 1));
    // Page 100: the bitmap entry of 96..127 is not in the L2 (1), then the
    // same 18.
    let (f, refs, _) = tags(probe.load(&mut sim, page(100)));
    assert_eq!((f, refs.len()), (host_of(&sim, page(100)), 19));
    assert_eq!(probe.counters(), (2, 4, 2, 2));
    // The host hole's 4 KiB entry: an L1 hit.
    let (f, refs, cycles) = tags(probe.load(&mut sim, page(70)));
    assert_eq!((f, refs, cycles), (hole_70, vec![], 0.0));
    assert_eq!(probe.stats.walks, 3);
}

#[test]
fn a_guest_4k_page_over_a_host_perforated_leaf_splinters() {
    let mut sim = guest_with("base");
    let frame = sim.kernel.proc(1).aspace.pt.lookup(page(70)).unwrap().frame;
    let host = host_holes_at(&mut sim, frame, &[frame.raw() % 512]);
    let i = frame.raw() % 512;
    let mut probe = Probe::new(&sim);
    // A non-hole: 4 guest levels after 3-entry EPT translations, then the
    // data's: 19, a 4 KiB entry (the next page walks again).
    let others: Vec<u64> = (0..512).filter(|&p| p != 70).take(2).collect();
    for (n, &p) in others.iter().enumerate() {
        let (f, refs, _) = tags(probe.load(&mut sim, page(p)));
        assert_eq!((f, refs.len()), (host_of(&sim, page(p)), 19));
        assert_eq!(probe.stats.walks, n as u64 + 1);
    }
    // Page 70's guest frame is a host hole: the EPT's bitmap and hole walk
    // after its PMD: 16 + 3 + 3 = 22.
    let (f, refs, _) = tags(probe.load(&mut sim, page(70)));
    assert_eq!(f, host_of(&sim, page(70)));
    assert_ne!(f, host.frame.add(i));
    assert_eq!(refs, cat(&[&guest_walk(4, 3), &EPT3, &HOST_HOLE]));
    // No combined perforated entry: the L2 holds 4 KiB entries only.
    assert_eq!(probe.counters(), (0, 0, 0, 0));
}

#[test]
fn a_hole_in_both_layers_takes_the_guests_hole_walk_then_the_hosts() {
    let cfg =
        host_perforated("perforated", &["os.holes.portion=1.0", "os.holes.degree=0.01", NO_CACHES[0], NO_CACHES[1]]);
    let mut sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    let guest = crate::systems::perforated::tests::holes_at_70_and_100(&mut sim.kernel);
    // Back what the guest's punches allocated.
    let copy = sim.kernel.proc(1).aspace.pt.lookup(page(70)).unwrap().frame;
    for pfn in [copy, sim.kernel.proc(1).aspace.pt.lookup(page(100)).unwrap().frame] {
        virt_run_mut(&mut sim).hv.back_range(0, Gfn::of_guest_kernel(pfn), 1).unwrap();
    }
    // Host holes: sub-page 65 of the guest's 2 MiB frame (a hole only in
    // the host), and the guest copy of page 70 (a hole in both).
    let host = host_holes_at(&mut sim, guest.frame, &[65]);
    let hv = &mut virt_run_mut(&mut sim).hv;
    let asid = hv.host_asid(0);
    punch(&mut hv.host, asid, gpa(copy)).unwrap();
    drop(hv.drain_ept_changes());
    let mut probe = Probe::new(&sim);
    // The walk: three guest levels (the third the perforated PMD), then
    // the EPT's translation of page 0's home: 15; the combined entry's
    // filter is the guest's 0b10 ORed with the host's 0b10.
    let (f, refs, _) = tags(probe.load(&mut sim, page(0)));
    assert_eq!((f, refs.len()), (host.frame, 15));
    // Page 65: a hole only in the host. The combined bitmap reads both
    // lines (2) and says hole; the walk again: 15 + the host's bitmap
    // and hole walk (3), and the walker's own read of the guest's bitmap
    // (1: its 4 KiB result needs the guest's answer too) = 21.
    let (f, refs, _) = tags(probe.load(&mut sim, page(65)));
    assert_eq!(f, host_of(&sim, page(65)));
    assert_ne!(f, host.frame.add(65));
    assert_eq!(refs.len(), 2 + 12 + 3 + 3 + 1);
    // Page 70: a hole in both: the bitmap entry is cached; the guest's
    // hole walk (shadow and PTE after their EPT translations: 2 x 4), then
    // the EPT's translation of the copy: its PMD (3), the host's bitmap,
    // shadow entry and hole PTE (3): 14.
    let (f, refs, _) = tags(probe.load(&mut sim, page(70)));
    assert_eq!(f, host_of(&sim, page(70)));
    assert_eq!(refs, cat(&[&guest_walk(2, 3), &EPT3, &HOST_HOLE]));
    let (_, _, bitmap_refs, hole_walks) = probe.counters();
    assert_eq!((bitmap_refs, hole_walks), (3, 2));
}

/// A run of `guest` pages over a host that punches and patches between
/// passes, every TLB hit checked against both tables.
#[test]
fn host_punch_and_patch_leave_no_stale_combined_entry() {
    for guest in ["thp", "base", "perforated"] {
        let cfg = host_perforated(guest, &["run.quantum=64", "os.holes.degree=0.01"]);
        let loads = || (0..1024).map(|i| Access::load(page(i), 8, 1)).collect::<Vec<_>>();
        let batches: Vec<Batch> = vec![batch(vec![mmap(BASE, 2 * HUGE)], stores(BASE, 1024)), batch(vec![], loads())];
        let mut sim = Simulation::with_workloads(cfg, vec![Box::new(Script { batches })]).unwrap();
        sim.step(1024).unwrap();
        // The host punches a hole under every guest data page of the first
        // region and patches every hole of the second's.
        let first = sim.kernel.proc(1).aspace.pt.lookup(page(3)).unwrap().frame;
        let second = sim.kernel.proc(1).aspace.pt.lookup(page(515)).unwrap().frame;
        let hv = &mut virt_run_mut(&mut sim).hv;
        let asid = hv.host_asid(0);
        if perforation_at(hv.ept(0), gpa(first)).is_some() {
            punch(&mut hv.host, asid, gpa(first)).unwrap();
        }
        if let Some(p) = perforation_at(hv.ept(0), gpa(second).align_down(HUGE)) {
            for i in (0..512).filter(|&i| is_hole(&p.holes, i)) {
                patch(&mut hv.host, asid, gpa(second).align_down(HUGE).add(i as u64 * 4096)).unwrap();
            }
        }
        sim.virt_round_end(0.0).unwrap();
        sim.run().unwrap();
        assert!(stat(&sim, "host.perforated.pages") >= 1.0, "guest {guest}");
    }
}

mod property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The EPT's walk through a host perforated leaf, with any holes,
        /// gives every guest frame of the region what the equivalent
        /// 4 KiB EPT mappings (the hole table's PTEs) give.
        #[test]
        fn a_host_perforated_leaf_translates_as_its_4k_mappings(
            punches in proptest::collection::vec(0u64..512, 0..24),
            patches in proptest::collection::vec(0u64..512, 0..8),
        ) {
            let mut sim = guest_with("thp");
            let data = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap().frame;
            host_holes_at(&mut sim, data, &[]);
            let hv = &mut virt_run_mut(&mut sim).hv;
            let asid = hv.host_asid(0);
            let base = gpa(data).align_down(HUGE);
            for &i in &punches {
                punch(&mut hv.host, asid, base.add(i * 4096)).unwrap();
            }
            for &i in &patches {
                patch(&mut hv.host, asid, base.add(i * 4096)).unwrap();
            }
            drop(hv.drain_ept_changes());
            let mut probe = Probe::new(&sim);
            let virt = virt_run_mut(&mut sim);
            for i in 0..512 {
                let gfn = Gfn::new(Gfn::of_guest_kernel(data).raw() + i);
                let expected = virt.hv.ept(0).lookup(gfn.addr().as_host_virt()).unwrap();
                let got = ept_translate(&mut probe.nested, &mut virt.hv, gfn, false).unwrap();
                prop_assert_eq!((got.0, got.1, got.2), (expected.frame, PageSize::Size4K, expected.pte.writable()));
            }
        }
    }
}
