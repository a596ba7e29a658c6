//! eKSM worked by hand (`colors.rs`): two host colors (`vmm-coloring` over
//! `virt.host.coloring.bits = [12]`, so guest frame g sits in host color
//! g mod 2); VMs whose identical pages sit in the same color or in the
//! other one; `strict` never crosses, `eksm` crosses only once a full scan
//! found identical pages scarce, `ignore` is Linux's KSM.

use super::tests::{check_sharing, hypervisor, ksm, wake_until};
use super::*;
use crate::units::Vpn;
use crate::virt::{Hypervisor, PageData};

/// Three VMs over two host colors: VM `vm` backs 9 guest frames, and VM
/// `vm` writes content `100 + i` to guest frame `i + shift[vm]`.
fn two_colors(colors: &str, scarce: f64, shift: &[u64]) -> (Hypervisor, Contents) {
    let sets = [
        "virt.host.policy=\"vmm-coloring\"".to_string(),
        "virt.host.coloring.bits=[12]".to_string(),
        format!("virt.host.ksm.colors=\"{colors}\""),
        format!("virt.host.ksm.scarce={scarce}"),
    ];
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let mut hv = hypervisor(shift.len(), &sets);
    let mut contents = Contents::default();
    for (vm, &s) in shift.iter().enumerate() {
        hv.back_range(vm, Gfn::new(0), 9).unwrap();
        contents.written(vm, Gfn::new(s), 8, Vpn::new(100), PageData::Shared);
    }
    (hv, contents)
}

/// The host color of guest frame `gfn` of `vm`'s backing.
fn color_of(hv: &Hypervisor, vm: usize, gfn: u64) -> u32 {
    hv.host.placement_colors().color_of(hv.backing_of(vm, Gfn::new(gfn)).unwrap().0)
}

fn color_counters(hv: &Hypervisor) -> (u64, u64, u64) {
    let c = &ksm(hv).colors.counters;
    (c.across, c.refused, c.scarce_scans)
}

#[test]
fn the_host_placement_colors_guest_frames_alternately() {
    let (hv, _) = two_colors("strict", 0.1, &[0, 1]);
    assert_eq!(hv.host.placement_colors().nr_colors(), 2);
    for g in 0..9 {
        assert_eq!((color_of(&hv, 0, g), color_of(&hv, 1, g)), ((g % 2) as u32, (g % 2) as u32));
    }
}

#[test]
fn strict_never_merges_across_colors_and_ignore_does() {
    // VM 2's copy of VM 1's page i is its frame i + 1: the other color.
    let (mut strict, contents) = two_colors("strict", 0.1, &[0, 1]);
    wake_until(&mut strict, &contents, 6);
    assert_eq!(ksm(&strict).counters.merges, 0);
    // Every full scan from the second one refuses VM 2's 8 pages.
    assert_eq!(color_counters(&strict), (0, 8 * 5, 0));
    check_sharing(&strict, &contents);
    let (mut ignore, contents) = two_colors("ignore", 0.1, &[0, 1]);
    wake_until(&mut ignore, &contents, 2);
    assert_eq!(ksm(&ignore).counters.merges, 8);
    assert_eq!(ksm(&ignore).shared_and_sharing(), (8, 8));
    check_sharing(&ignore, &contents);
}

#[test]
fn eksm_crosses_colors_only_after_a_scan_found_identical_pages_scarce() {
    // The second full scan examines 16 unchanged pages; VM 2's 8 found
    // VM 1's (other color): 8/16 identical. Not scarce under 0.5...
    let (mut plenty, contents) = two_colors("eksm", 0.5, &[0, 1]);
    wake_until(&mut plenty, &contents, 6);
    assert_eq!(ksm(&plenty).counters.merges, 0);
    assert_eq!(color_counters(&plenty), (0, 8 * 5, 0));
    // ... scarce under 0.6: the third full scan merges across colors.
    let (mut scarce, contents) = two_colors("eksm", 0.6, &[0, 1]);
    wake_until(&mut scarce, &contents, 2);
    assert_eq!((ksm(&scarce).counters.merges, color_counters(&scarce)), (0, (0, 8, 1)));
    wake_until(&mut scarce, &contents, 3);
    assert_eq!(ksm(&scarce).counters.merges, 8);
    assert_eq!(color_counters(&scarce).0, 8);
    assert_eq!(ksm(&scarce).shared_and_sharing(), (8, 8));
    for i in 0..8 {
        // VM 2's frame i + 1 maps VM 1's frame i: VM 1's color.
        assert_eq!(scarce.backing_of(1, Gfn::new(i + 1)), scarce.backing_of(0, Gfn::new(i)));
    }
    check_sharing(&scarce, &contents);
}

#[test]
fn eksm_merges_same_color_duplicates_first() {
    // VM 3's copies sit in VM 1's colors, VM 2's in the other color.
    let (mut hv, contents) = two_colors("eksm", 1.0, &[0, 1, 0]);
    // Second full scan, not scarce yet: VM 3 merges with VM 1 (same
    // color), VM 2 is refused.
    wake_until(&mut hv, &contents, 2);
    assert_eq!(ksm(&hv).counters.merges, 8);
    assert_eq!(color_counters(&hv), (0, 8, 1));
    for i in 0..8 {
        assert_eq!(hv.backing_of(2, Gfn::new(i)), hv.backing_of(0, Gfn::new(i)));
        assert_eq!(color_of(&hv, 2, i), (i % 2) as u32);
    }
    // That scan's identical pages: VM 2's 8 and VM 3's 8 of 24, scarce
    // under 1.0: the third merges VM 2's pages across colors.
    wake_until(&mut hv, &contents, 3);
    assert_eq!(ksm(&hv).counters.merges, 16);
    assert_eq!(color_counters(&hv).0, 8);
    assert_eq!(ksm(&hv).shared_and_sharing(), (8, 16));
    check_sharing(&hv, &contents);
}

#[test]
fn scarce_must_be_a_fraction() {
    for bad in ["-0.1", "1.5", "nan"] {
        let sets = [format!("virt.host.ksm.scarce={bad}"), "virt.host.ksm.enabled=true".into()];
        let base = "[machine]\nphys_mem = \"256MiB\"\n[virt]\nenabled = true\n[workload]\nfootprint = \"1MiB\"\n";
        let e = crate::config::parse_config(base, "t.toml", &sets).unwrap_err().to_string();
        assert!(e.contains("virt.host.ksm.scarce"), "{e}");
    }
    let e = crate::config::parse_config("", "t.toml", &["virt.host.ksm.colors=\"loose\"".into()]).unwrap_err();
    assert!(e.to_string().contains("colors"), "{e}");
}

#[test]
fn a_store_to_a_page_merged_across_colors_copies_into_its_own_color() {
    // Stock KSM merges VM 1's frame g (host color g mod 2) into VM 0's
    // frame g - 1 (the other color); VM 1's store breaks the sharing and
    // the copy is placed as frame g's own fault would be: color g mod 2.
    let (mut hv, mut contents) = two_colors("ignore", 0.1, &[0, 1]);
    wake_until(&mut hv, &contents, 2);
    for g in 1..9 {
        assert_ne!(color_of(&hv, 1, g), (g % 2) as u32, "merged across colors");
        hv.break_cow(1, Gfn::new(g), Some(&mut contents)).unwrap();
        assert_eq!(color_of(&hv, 1, g), (g % 2) as u32, "guest frame {g}");
    }
    check_sharing(&hv, &contents);
}
