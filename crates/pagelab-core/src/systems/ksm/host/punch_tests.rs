//! KSM that punches holes, worked by hand: one part of each of two VMs'
//! host huge pages merged, the leaves perforated pages of their own
//! frames; copy-on-write breaks patching the holes back; the sharing
//! invariants throughout (`tests::check_sharing`), and the property test's
//! pattern (different contents never merge) over perforated leaves.

use proptest::prelude::*;

use super::super::tests::{check_sharing, hypervisor, ksm, wake_until};
use super::*;
use crate::systems::perforated::holes::count;
use crate::units::Vpn;
use crate::virt::{Contents, Hypervisor, PageData};

/// Two VMs on host THP under `split = "punch"`, each guest's first 2 MiB
/// one huge page; part 7 of each holds the same shared data, the rest
/// unique data; ksmd run long enough for two full scans and more.
fn one_part_each() -> (Hypervisor, Contents) {
    let mut hv = hypervisor(2, &["virt.host.policy=\"thp\"", "virt.host.ksm.split=\"punch\""]);
    let mut contents = Contents::default();
    for vm in 0..2 {
        hv.back_range(vm, Gfn::new(0), 1).unwrap();
        assert_eq!(hv.backing_of(vm, Gfn::new(0)).unwrap().1, PageSize::Size2M);
        contents.written(vm, Gfn::new(0), 512, Vpn::new(vm as u64 * 1000), PageData::Unique);
        contents.written(vm, Gfn::new(7), 1, Vpn::new(100), PageData::Shared);
    }
    for wake in 1..=40 {
        wake_until(&mut hv, &contents, wake);
    }
    check_sharing(&hv, &contents);
    (hv, contents)
}

/// The host frames backing VM `vm`'s first 2 MiB.
fn backing(hv: &Hypervisor, vm: usize) -> Vec<Pfn> {
    (0..512).map(|g| hv.backing_of(vm, Gfn::new(g)).unwrap().0).collect()
}

#[test]
fn a_merged_part_is_a_hole_and_each_leaf_stays_a_perforated_page_of_its_frame() {
    let (hv, _) = one_part_each();
    let k = ksm(&hv);
    assert_eq!((k.shared_and_sharing(), k.counters.splits, k.punch_space.perforated), ((1, 1), 0, 2));
    let (a, b) = (backing(&hv, 0), backing(&hv, 1));
    // One host frame less backs the two VMs: VM 2's part 7 went back.
    let distinct: std::collections::BTreeSet<Pfn> = a.iter().chain(&b).copied().collect();
    assert_eq!(distinct.len(), 1023);
    assert_eq!(a[7], b[7], "part 7: one KSM page, VM 1's own frame");
    assert!(hv.host.mem.is_free(b[0].add(7)), "VM 2's own part 7 is free");
    for (vm, frames) in [(0, &a), (1, &b)] {
        let p = perforation_at(hv.ept(vm), VirtAddr::new(0)).expect("a perforated EPT leaf");
        assert_eq!((p.frame, p.filter, count(&p.holes)), (frames[0], 0b1, 1), "VM {}", vm + 1);
        assert!(is_hole(&p.holes, 7));
        // Every other part is translated by the 2 MiB frame.
        assert!((0..512).filter(|&i| i != 7).all(|i| frames[i] == p.frame.add(i as u64)));
        assert!(hv.write_protected(vm, Gfn::new(7)) && !hv.write_protected(vm, Gfn::new(8)));
    }
}

#[test]
fn copy_on_write_breaks_patch_the_holes_back_into_the_huge_frames() {
    let (mut hv, mut contents) = one_part_each();
    let free = hv.host.mem.free_pages();
    // VM 2's store: its own part 7 is free in its 2 MiB block: taken back,
    // the hole patched (filter 0); the KSM page keeps VM 1.
    hv.break_cow(1, Gfn::new(7), Some(&mut contents)).unwrap();
    let p = perforation_at(hv.ept(1), VirtAddr::new(0)).unwrap();
    assert_eq!((p.filter, count(&p.holes)), (0, 0));
    assert_eq!(hv.backing_of(1, Gfn::new(7)).unwrap().0, p.frame.add(7));
    assert_eq!(hv.host.mem.free_pages(), free - 1);
    // VM 1's store, the last sharer: the KSM page (its own part 7) is
    // freed, then taken back as its own: no copy frame, no hole.
    hv.break_cow(0, Gfn::new(7), Some(&mut contents)).unwrap();
    let p = perforation_at(hv.ept(0), VirtAddr::new(0)).unwrap();
    assert_eq!((p.filter, count(&p.holes)), (0, 0));
    assert_eq!(hv.backing_of(0, Gfn::new(7)).unwrap().0, p.frame.add(7));
    assert_eq!(hv.host.mem.free_pages(), free - 1);
    assert_eq!((ksm(&hv).shared_and_sharing(), ksm(&hv).counters.cow_breaks), ((0, 0), 2));
    assert!(!hv.write_protected(0, Gfn::new(7)) && !hv.write_protected(1, Gfn::new(7)));
    check_sharing(&hv, &contents);
    // Each change was queued for an INVEPT of the VM's entries.
    assert!(hv.drain_ept_changes().iter().any(|c| c.vm == 1 && c.start == Gfn::new(7)));
}

#[test]
fn a_hole_whose_frame_was_reused_stays_a_hole_remapped_to_a_private_copy() {
    let (mut hv, mut contents) = one_part_each();
    let b7 = backing(&hv, 0)[0].add(0); // VM 1's block
    let home = backing(&hv, 1)[0].add(7);
    // Something else takes VM 2's free part 7 first.
    assert!(hv.host.mem.alloc_specific(home, Order::BASE, FrameOwner::Kernel));
    hv.break_cow(1, Gfn::new(7), Some(&mut contents)).unwrap();
    let p = perforation_at(hv.ept(1), VirtAddr::new(0)).unwrap();
    assert!(is_hole(&p.holes, 7), "the hole stays");
    let copy = hv.backing_of(1, Gfn::new(7)).unwrap().0;
    assert!(copy != home && copy != b7.add(7));
    assert!(!hv.write_protected(1, Gfn::new(7)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The existing invariant over perforated leaves: stores and wake-ups
    /// in any order never merge different contents, and every KSM page's
    /// count is its sharers (`check_sharing` after every step).
    #[test]
    fn punching_never_merges_different_contents(
        initial in proptest::collection::vec(0..4u8, 48),
        steps in proptest::collection::vec((0..3u8, 0..2usize, 0..24u64, 0..4u8), 1..50),
    ) {
        let mut hv = hypervisor(2, &["virt.host.policy=\"thp\"", "virt.host.ksm.split=\"punch\"", "virt.host.ksm.pages_to_scan=40"]);
        let mut contents = Contents::default();
        let write = |contents: &mut Contents, vm: usize, gfn: u64, c: u8| match c {
            0 => contents.zeroed(vm, Gfn::new(gfn), 1),
            c => contents.written(vm, Gfn::new(gfn), 1, Vpn::new(c as u64), PageData::Shared),
        };
        for vm in 0..2 {
            hv.back_range(vm, Gfn::new(0), 1).unwrap();
        }
        for (i, &c) in initial.iter().enumerate() {
            write(&mut contents, i / 24, i as u64 % 24, c);
        }
        let mut wakes = 0;
        for (kind, vm, gfn, c) in steps {
            if kind > 0 {
                wakes += 1;
                wake_until(&mut hv, &contents, wakes);
            } else if hv.write_protected(vm, Gfn::new(gfn)) {
                hv.break_cow(vm, Gfn::new(gfn), Some(&mut contents)).unwrap();
            } else {
                write(&mut contents, vm, gfn, c);
            }
            check_sharing(&hv, &contents);
        }
        prop_assert_eq!(ksm(&hv).counters.splits, 0);
    }
}
