//! KSM on a hypervisor alone, worked by hand: two VMs with the same buffer
//! merge at the second full scan, a copy-on-write breaks one share, zero
//! pages merge with each other up to `max_page_sharing`, changing pages
//! never merge, host huge pages split as `split` says; a property test
//! that merging never joins different contents and that reference counts
//! equal the sharers; the configuration's errors.

use proptest::prelude::*;

use super::*;
use crate::config::parse_config;
use crate::engine::host_boot;
use crate::units::{PageSize, Vpn};
use crate::virt::{Hypervisor, PageData};

const BASE_TOML: &str = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";

/// The scan period of `sleep_ms = 1` on the 3 GHz clock the tests boot.
const PERIOD: f64 = 3e6;

/// A 256 MiB host with `vms` VMs of 64 MiB, KSM on, waking every
/// millisecond, with `extra` settings.
pub(super) fn hypervisor(vms: usize, extra: &[&str]) -> Hypervisor {
    let mut sets = vec![
        "virt.host.ksm.enabled=true".to_string(),
        "virt.host.ksm.sleep_ms=1".to_string(),
        "virt.host.thp.khugepaged=false".to_string(),
        "virt.host.policy=\"base\"".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let cfg = parse_config(BASE_TOML, "t.toml", &sets).unwrap();
    Hypervisor::boot(&cfg.virt, &vec![64 << 20; vms], host_boot(&cfg).unwrap(), 3.0, 1).unwrap()
}

/// Runs ksmd's wake-ups up to the `n`-th.
pub(super) fn wake_until(hv: &mut Hypervisor, contents: &Contents, n: u64) {
    hv.tick(n as f64 * PERIOD, &mut [], Some(contents)).unwrap();
}

pub(super) fn ksm(hv: &Hypervisor) -> &Ksm {
    hv.policy::<Ksm>().unwrap()
}

/// Both VMs back guest frames [0, pages) and write the same shared data
/// there (two VMs initialising the same buffer).
fn same_buffer(hv: &mut Hypervisor, pages: u64) -> Contents {
    let mut contents = Contents::default();
    for vm in 0..hv.vms.len() {
        hv.back_range(vm, Gfn::new(0), pages).unwrap();
        contents.written(vm, Gfn::new(0), pages, Vpn::new(100), PageData::Shared);
    }
    contents
}

/// The invariants: a host frame backs one guest frame unless it is a KSM
/// page, whose sharers are the guest frames mapping it, all holding its
/// content, at most `max_page_sharing`; a KSM page is read-only, and every
/// other backed frame is the VM's own.
pub(crate) fn check_sharing(hv: &Hypervisor, contents: &Contents) {
    let ksm = hv.policy::<Ksm>();
    let mut mapped: BTreeMap<Pfn, Vec<(usize, Gfn)>> = BTreeMap::new();
    for (vm, v) in hv.vms.iter().enumerate() {
        let end = VirtAddr::new(v.guest_frames << 12);
        for (va, m) in hv.ept(vm).leaves_in(VirtAddr::new(0), end) {
            for i in 0..m.size.nr_pages() {
                let gfn = Gfn::new(va.vpn().raw() + i);
                mapped.entry(m.frame.add(i)).or_default().push((vm, gfn));
                let shared = ksm.is_some_and(|k| k.is_ksm_page(m.frame.add(i)));
                assert_eq!(m.pte.writable(), !shared, "{gfn} of VM {vm}: only KSM pages are read-only");
            }
        }
    }
    for (frame, sites) in &mapped {
        match ksm.and_then(|k| k.pages.get(frame)) {
            Some(page) => {
                assert_eq!(page.sharers as usize, sites.len(), "KSM page {frame}: its count is its sharers");
                assert!(page.sharers <= ksm.unwrap().cfg.max_page_sharing);
                assert_eq!(hv.host.mem.owner(*frame), FrameOwner::Reserved { pool: KSM_POOL });
                for &(vm, gfn) in sites {
                    assert_eq!(contents.of(vm, gfn), Some(page.content), "{gfn} of VM {vm} differs from its KSM page");
                }
            }
            None => {
                assert_eq!(sites.len(), 1, "host frame {frame} backs {sites:?}");
                let (vm, gfn) = sites[0];
                let owner = FrameOwner::User { asid: hv.vms[vm].host_asid, vpn: Vpn::new(gfn.raw()) };
                assert_eq!(hv.host.mem.owner(*frame), owner);
            }
        }
    }
    if let Some(k) = ksm {
        assert!(k.pages.keys().all(|f| mapped.contains_key(f)), "a KSM page no guest frame maps");
    }
}

#[test]
fn two_vms_with_the_same_buffer_merge_at_the_second_full_scan() {
    let mut hv = hypervisor(2, &[]);
    let contents = same_buffer(&mut hv, 8);
    let free = hv.host.mem.free_pages();
    // The first full scan (16 pages, within one wake-up's 100) only
    // records each page's content: none was seen before.
    wake_until(&mut hv, &contents, 1);
    assert_eq!((ksm(&hv).counters.full_scans, ksm(&hv).counters.pages_scanned), (1, 16));
    assert_eq!(ksm(&hv).shared_and_sharing(), (0, 0));
    // The second: VM 1's pages go to the unstable tree, VM 2's match them.
    wake_until(&mut hv, &contents, 2);
    assert_eq!(ksm(&hv).shared_and_sharing(), (8, 8));
    assert_eq!(ksm(&hv).counters.merges, 8);
    assert_eq!(hv.host.mem.free_pages(), free + 8, "VM 2's 8 frames went back to the host");
    for g in 0..8 {
        let (a, b) = (hv.backing_of(0, Gfn::new(g)).unwrap().0, hv.backing_of(1, Gfn::new(g)).unwrap().0);
        assert_eq!(a, b, "guest frame {g}: one host frame, VM 1's");
        assert!(hv.write_protected(0, Gfn::new(g)) && hv.write_protected(1, Gfn::new(g)));
    }
    check_sharing(&hv, &contents);
    // Each merge changed an EPT leaf: 16 INVEPTs' worth of changes queued.
    assert_eq!(hv.drain_ept_changes().len(), 16);
    // Nothing more to merge: a third scan changes nothing.
    wake_until(&mut hv, &contents, 3);
    assert_eq!(ksm(&hv).shared_and_sharing(), (8, 8));
}

#[test]
fn a_store_copies_a_merged_page_and_the_last_sharer_frees_it() {
    let mut hv = hypervisor(2, &[]);
    let mut contents = same_buffer(&mut hv, 8);
    wake_until(&mut hv, &contents, 2);
    let free = hv.host.mem.free_pages();
    let shared = hv.backing_of(1, Gfn::new(3)).unwrap().0;
    let cycles = hv.break_cow(1, Gfn::new(3), Some(&mut contents)).unwrap();
    let costs = &hv.costs;
    assert_eq!(cycles, costs.vm_exit + costs.ept_violation + hv.host.costs.copy_4k);
    // VM 2's frame 3 has a copy of its own, writable, and new content.
    let copy = hv.backing_of(1, Gfn::new(3)).unwrap().0;
    assert_ne!(copy, shared);
    assert!(!hv.write_protected(1, Gfn::new(3)));
    assert_ne!(contents.of(1, Gfn::new(3)), contents.of(0, Gfn::new(3)));
    assert_eq!(hv.host.mem.free_pages(), free - 1);
    // The KSM page stays one with its one sharer left.
    assert_eq!(ksm(&hv).shared_and_sharing(), (8, 7));
    assert_eq!(ksm(&hv).counters.cow_breaks, 1);
    check_sharing(&hv, &contents);
    // The last sharer's store copies too, and frees the KSM page.
    hv.break_cow(0, Gfn::new(3), Some(&mut contents)).unwrap();
    assert_eq!(ksm(&hv).shared_and_sharing(), (7, 7));
    assert_eq!(hv.host.mem.free_pages(), free - 1);
    assert!(hv.host.mem.is_free(shared));
    check_sharing(&hv, &contents);
    // Both changed pages are unique: never merged again.
    wake_until(&mut hv, &contents, 6);
    assert_eq!(ksm(&hv).shared_and_sharing(), (7, 7));
}

#[test]
fn zero_pages_merge_with_each_other_up_to_max_page_sharing() {
    // use_zero_pages = 0 (Linux's default): zero pages are ordinary
    // content. 6 of them in one VM, at most 2 sharers a KSM page: 3 pages.
    let mut hv = hypervisor(1, &["virt.host.ksm.max_page_sharing=2"]);
    hv.back_range(0, Gfn::new(0), 6).unwrap();
    let mut contents = Contents::default();
    contents.zeroed(0, Gfn::new(0), 6);
    wake_until(&mut hv, &contents, 2);
    assert_eq!(ksm(&hv).shared_and_sharing(), (3, 3));
    check_sharing(&hv, &contents);
    // With the default 256, one KSM page for all 6.
    let mut hv = hypervisor(1, &[]);
    hv.back_range(0, Gfn::new(0), 6).unwrap();
    wake_until(&mut hv, &contents, 2);
    assert_eq!(ksm(&hv).shared_and_sharing(), (1, 5));
}

#[test]
fn a_page_that_changes_between_scans_is_volatile_and_not_merged() {
    let mut hv = hypervisor(2, &[]);
    let mut contents = same_buffer(&mut hv, 2);
    wake_until(&mut hv, &contents, 1);
    // VM 2's frame 0 is rewritten (unique data) and then written with the
    // shared data again before each scan: never the same twice in a row.
    for scan in 2..6 {
        if scan % 2 == 0 {
            contents.rewritten(1, Gfn::new(0));
        } else {
            contents.written(1, Gfn::new(0), 1, Vpn::new(100), PageData::Shared);
        }
        wake_until(&mut hv, &contents, scan);
    }
    // Frame 1 merged; frame 0 of VM 2 never did.
    assert_eq!(ksm(&hv).shared_and_sharing(), (1, 1));
    assert_ne!(hv.backing_of(0, Gfn::new(0)).unwrap().0, hv.backing_of(1, Gfn::new(0)).unwrap().0);
    check_sharing(&hv, &contents);
}

#[test]
fn pages_to_scan_paces_the_scan() {
    // 16 pages at 5 a wake-up: the first full scan takes 4 wake-ups (the
    // last one ends at the wrap), the merges come in the second.
    let mut hv = hypervisor(2, &["virt.host.ksm.pages_to_scan=5"]);
    let contents = same_buffer(&mut hv, 8);
    wake_until(&mut hv, &contents, 3);
    assert_eq!((ksm(&hv).counters.pages_scanned, ksm(&hv).counters.full_scans), (15, 0));
    wake_until(&mut hv, &contents, 4);
    assert_eq!((ksm(&hv).counters.pages_scanned, ksm(&hv).counters.full_scans), (16, 1));
    // Wake-ups 5 and 6 scan VM 1's 8 pages into the unstable tree and 2
    // of VM 2's, which merge.
    wake_until(&mut hv, &contents, 6);
    assert_eq!(ksm(&hv).shared_and_sharing(), (2, 2));
    wake_until(&mut hv, &contents, 8);
    assert_eq!(ksm(&hv).shared_and_sharing(), (8, 8));
}

/// Two VMs on host THP, each guest's first 2 MiB backed by one huge page
/// whose first 4 frames hold the same shared data, under `split`.
fn huge_run(split: &str) -> (Hypervisor, Contents) {
    let split = format!("virt.host.ksm.split=\"{split}\"");
    let mut hv = hypervisor(2, &["virt.host.policy=\"thp\"", &split]);
    let mut contents = Contents::default();
    for vm in 0..2 {
        hv.back_range(vm, Gfn::new(0), 1).unwrap();
        assert_eq!(hv.backing_of(vm, Gfn::new(0)).unwrap().1, PageSize::Size2M);
        contents.written(vm, Gfn::new(0), 4, Vpn::new(100), PageData::Shared);
        contents.written(vm, Gfn::new(4), 508, Vpn::new(0), PageData::Unique);
    }
    for wake in 1..=40 {
        wake_until(&mut hv, &contents, wake);
    }
    check_sharing(&hv, &contents);
    (hv, contents)
}

#[test]
fn host_huge_pages_split_as_the_policy_says() {
    // never: huge leaves are not scanned; nothing merges.
    let (hv, _) = huge_run("never");
    assert_eq!((ksm(&hv).counters.pages_scanned, ksm(&hv).counters.splits), (0, 0));
    assert_eq!(ksm(&hv).shared_and_sharing(), (0, 0));
    // any-duplicate (Linux): both huge pages split, the 4 equal parts merge.
    let (hv, _) = huge_run("any-duplicate");
    assert_eq!(ksm(&hv).counters.splits, 2);
    assert_eq!(ksm(&hv).shared_and_sharing(), (4, 4));
    assert_eq!(hv.backing_of(0, Gfn::new(100)).unwrap().1, PageSize::Size4K);
    // all: split on sight, the same merges.
    let (hv, _) = huge_run("all");
    assert_eq!(ksm(&hv).counters.splits, 2);
    assert_eq!(ksm(&hv).shared_and_sharing(), (4, 4));
}

#[test]
fn any_duplicate_leaves_a_huge_page_without_duplicates_whole() {
    let mut hv = hypervisor(2, &["virt.host.policy=\"thp\""]);
    let mut contents = Contents::default();
    for vm in 0..2 {
        hv.back_range(vm, Gfn::new(0), 1).unwrap();
        contents.written(vm, Gfn::new(0), 512, Vpn::new(0), PageData::Unique);
    }
    for wake in 1..=30 {
        wake_until(&mut hv, &contents, wake);
    }
    assert_eq!(ksm(&hv).counters.splits, 0);
    assert!(ksm(&hv).counters.pages_scanned >= 2048, "scanned part by part");
    assert_eq!(hv.backing_of(1, Gfn::new(9)).unwrap().1, PageSize::Size2M);
}

#[test]
fn a_discard_of_a_merged_frame_leaves_the_other_sharer_its_page() {
    let mut hv = hypervisor(2, &[]);
    let contents = same_buffer(&mut hv, 4);
    wake_until(&mut hv, &contents, 2);
    let shared = hv.backing_of(0, Gfn::new(2)).unwrap().0;
    hv.discard(1, Gfn::new(2), 1).unwrap();
    assert_eq!(hv.backing_of(1, Gfn::new(2)), None);
    assert_eq!(hv.backing_of(0, Gfn::new(2)).unwrap().0, shared);
    assert_eq!(ksm(&hv).sharers(shared), 1);
    assert!(!hv.host.mem.is_free(shared));
    check_sharing(&hv, &contents);
}

#[test]
fn bad_ksm_keys_are_errors_naming_the_key() {
    for (sets, key) in [
        (&["virt.enabled=true", "virt.host.ksm.pages_to_scan=0"][..], "virt.host.ksm.pages_to_scan"),
        (&["virt.enabled=true", "virt.host.ksm.sleep_ms=-1"][..], "virt.host.ksm.sleep_ms"),
        (&["virt.enabled=true", "virt.host.ksm.split=\"sometimes\""][..], "virt.host.ksm.split"),
        (&["virt.enabled=true", "virt.host.ksm.max_page_sharing=1"][..], "virt.host.ksm.max_page_sharing"),
        (&["virt.enabled=true", "virt.host.ksm.nonesuch=1"][..], "nonesuch"),
        (&["virt.enabled=true", "os.ksm.enabled=true"][..], "os.ksm.enabled"),
        (&["os.ksm.enabled=true"][..], "os.ksm.enabled"),
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let e = match parse_config(BASE_TOML, "t.toml", &sets).and_then(|c| c.validate()) {
            Ok(_) => panic!("{sets:?} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(key), "{sets:?}: {e}");
    }
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Step {
    /// ksmd's next wake-up.
    Wake,
    /// A guest store to (VM, guest frame): a copy-on-write if merged,
    /// else the frame gets content `c` (0 = zero page).
    Store(usize, u64, u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![Just(Step::Wake), (0..2usize, 0..24u64, 0..4u8).prop_map(|(v, g, c)| Step::Store(v, g, c))]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn merging_never_joins_different_contents_and_counts_equal_sharers(
        initial in proptest::collection::vec(0..4u8, 48),
        steps in proptest::collection::vec(step(), 1..60),
        sharing in 2..5u32,
        scan in 3..20u32,
    ) {
        let sets = [format!("virt.host.ksm.max_page_sharing={sharing}"), format!("virt.host.ksm.pages_to_scan={scan}")];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let mut hv = hypervisor(2, &sets);
        let mut contents = Contents::default();
        // 24 frames a VM, each with one of 4 contents (0: the zero page).
        let write = |contents: &mut Contents, vm: usize, gfn: u64, c: u8| match c {
            0 => contents.zeroed(vm, Gfn::new(gfn), 1),
            c => contents.written(vm, Gfn::new(gfn), 1, Vpn::new(c as u64), PageData::Shared),
        };
        for (i, &c) in initial.iter().enumerate() {
            let (vm, gfn) = (i / 24, i as u64 % 24);
            hv.back_range(vm, Gfn::new(gfn), 1).unwrap();
            write(&mut contents, vm, gfn, c);
        }
        let mut wakes = 0;
        for s in steps {
            match s {
                Step::Wake => {
                    wakes += 1;
                    wake_until(&mut hv, &contents, wakes);
                }
                Step::Store(vm, gfn, c) => {
                    if hv.write_protected(vm, Gfn::new(gfn)) {
                        hv.break_cow(vm, Gfn::new(gfn), Some(&mut contents)).unwrap();
                    } else {
                        write(&mut contents, vm, gfn, c);
                    }
                }
            }
            check_sharing(&hv, &contents);
        }
        let (shared, sharing_sites) = ksm(&hv).shared_and_sharing();
        prop_assert!(sharing_sites <= shared * (sharing as u64 - 1));
    }
}
