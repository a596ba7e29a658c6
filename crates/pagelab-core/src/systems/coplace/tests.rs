//! `vmm-coloring` and `coplace`, hand-worked: host colors on a given
//! geometry, the guest color to host color function, the nearest-color
//! fallback, and whole runs where the guest frees and reuses frames.

use super::colors::{host_color_bits, host_color_of_guest};
use super::place::{alloc_colored, nearest};
use crate::config::parse_config;
use crate::engine::host_boot;
use crate::engine::testutil::{run_toml, stat};
use crate::hw::cache::{ColorMap, Geometry, SliceHash};
use crate::os::{ColorPool, HostView};
use crate::phys::PhysMem;
use crate::units::{Gfn, Pfn};
use crate::virt::Hypervisor;

/// An LLC of 2 slices of 2,048 sets (16 ways, 64-byte lines) under the
/// Intel hash: set bits 6-16, page colors on bits 12-16 (32 per slice).
/// With two slices the hash reads mask o0 = 0x1b_5f57_5440, whose page
/// bits are 12, 14, 16, 17, 18, 20...: beyond the set bits, 17 then 18.
fn view(l2_sets: u32, inclusive: bool) -> HostView {
    HostView {
        llc: Geometry::sets(4096, 16, 64).with_slices(2, SliceHash::Intel),
        l2: Geometry::sets(l2_sets, 16, 64),
        llc_inclusive: inclusive,
        guest_colors: Vec::new(),
    }
}

#[test]
fn host_colors_are_the_llc_color_the_lowest_slice_bits_and_the_l2_color() {
    // An L2 of 1,024 sets: page bits 12-15, inside the LLC's.
    let small_l2 = view(1024, false);
    assert_eq!(host_color_bits(&small_l2, None), [12, 13, 14, 15, 16, 17], "one slice bit tells 2 slices apart");
    assert_eq!(host_color_bits(&small_l2, Some(2)), [12, 13, 14, 15, 16, 17, 18]);
    assert_eq!(host_color_bits(&small_l2, Some(0)), [12, 13, 14, 15, 16]);
    // An L2 of 8,192 sets: page bits 12-18, counted only when the LLC is
    // non-inclusive.
    assert_eq!(host_color_bits(&view(8192, false), Some(0)), [12, 13, 14, 15, 16, 17, 18]);
    assert_eq!(host_color_bits(&view(8192, true), Some(0)), [12, 13, 14, 15, 16]);
    // The modulo hash (xeon-gold-6138 today: 16 slices of 2,048 sets):
    // lines' bits 6-9 pick the slice, no page bit does; the set bits are
    // 10-20, the colors bits 12-20, and no slice bit joins them.
    let modulo = HostView { llc: Geometry::sets(32768, 11, 64).with_slices(16, SliceHash::Modulo), ..view(1024, true) };
    assert_eq!(host_color_bits(&modulo, None), (12..=20).collect::<Vec<u32>>());
}

#[test]
fn the_host_color_is_the_guests_color_then_guest_frame_bits_above_it() {
    let low = ColorMap::new(&[12, 13], "t").unwrap();
    // As many host colors: the guest's color itself.
    let same: Vec<u32> = (0..8).map(|g| host_color_of_guest(&low, 4, g)).collect();
    assert_eq!(same, [0, 1, 2, 3, 0, 1, 2, 3]);
    // Four times as many: gfn bits 2-3 (above the guest's bits 12-13) on top.
    let more: Vec<u32> = [0, 1, 4, 5, 13, 16].iter().map(|&g| host_color_of_guest(&low, 16, g)).collect();
    assert_eq!(more, [0, 1, 4, 5, 13, 0]);
    // Fewer: the guest color's low bit.
    assert_eq!(host_color_of_guest(&low, 2, 3), 1);
    // Guest bits 13 and 14: gfn 2 is guest color 1, gfn 6 color 3, gfn 1
    // color 0; with 8 host colors the top bit is gfn bit 3 (above bit 14).
    let high = ColorMap::new(&[13, 14], "t").unwrap();
    let got: Vec<u32> = [1, 2, 6, 8, 10].iter().map(|&g| host_color_of_guest(&high, 8, g)).collect();
    assert_eq!(got, [0, 1, 3, 4, 5]);
}

#[test]
fn no_frame_of_the_color_takes_the_nearest_then_any() {
    // 64 frames, colors on bits 12-13 (4 colors, blocks of 4 frames).
    let map = ColorMap::new(&[12, 13], "t").unwrap();
    let mut mem = PhysMem::new(64, 10).unwrap();
    let mut pool = ColorPool::new(&map);
    for i in 0..16 {
        let (frame, exact) = alloc_colored(&mut pool, &mut mem, 0, 4).unwrap();
        assert!(exact && map.color_of(frame) == 0, "frame {i}");
    }
    // Every block is broken: color 0 is gone; 1 and 3 are as near, the
    // lower wins.
    let (frame, exact) = alloc_colored(&mut pool, &mut mem, 0, 4).unwrap();
    assert!(!exact);
    assert_eq!(map.color_of(frame), 1);
    assert_eq!(nearest(&[2, 3], 0, 4), 3, "around the circle");
    assert_eq!(nearest(&[5, 9], 7, 16), 5, "a tie goes to the lower color");
    for _ in 0..47 {
        alloc_colored(&mut pool, &mut mem, 0, 4).unwrap();
    }
    assert!(alloc_colored(&mut pool, &mut mem, 0, 4).is_none(), "memory is full");
}

/// A hypervisor of 256 MiB with one VM of 64 MiB, host policy `policy`.
fn hypervisor(policy: &str, extra: &[&str]) -> Hypervisor {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[machine.cache.llc]\nsize = \"1MiB\"\nways = 16\nslices = 1\n\
                [virt]\nenabled = true\nguest_mem = \"64MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let mut sets = vec![format!("virt.host.policy=\"{policy}\"")];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let cfg = parse_config(text, "t.toml", &sets).unwrap();
    cfg.validate().unwrap();
    Hypervisor::boot(&cfg.virt, &[cfg.virt.guest_mem.bytes()], host_boot(&cfg).unwrap(), 2.0, 1).unwrap()
}

fn host_frame(hv: &Hypervisor, gfn: u64) -> Pfn {
    hv.backing_of(0, Gfn::new(gfn)).expect("backed").0
}

/// The host colors (bits 12-15 of the 1 MiB LLC: 16) of guest frames
/// `gfns`, each backed by a fault in that order.
fn colors_after_faults(hv: &mut Hypervisor, gfns: &[u64]) -> Vec<u32> {
    let map = ColorMap::new(&[12, 13, 14, 15], "t").unwrap();
    for &g in gfns {
        hv.handle_violation(0, Gfn::new(g)).unwrap();
    }
    gfns.iter().map(|&g| map.color_of(host_frame(hv, g))).collect()
}

#[test]
fn coplace_keeps_the_guests_colors_whatever_the_fault_order_and_after_a_refault() {
    // The guest's colors are the LLC's (bits 12-15): guest frame g is color
    // g mod 16, and so is its host frame, in any fault order; a frame the
    // host dropped and backs again gets its color again.
    let mut hv = hypervisor("coplace", &[]);
    let order = [7, 3, 100, 1, 2, 0, 16, 17];
    assert_eq!(colors_after_faults(&mut hv, &order), [7, 3, 4, 1, 2, 0, 0, 1]);
    hv.discard(0, Gfn::new(3), 1).unwrap();
    hv.handle_violation(0, Gfn::new(50)).unwrap();
    assert_eq!(colors_after_faults(&mut hv, &[3]), [3], "refaulted");
    // Consecutive guest colors, distinct host colors.
    let consecutive = colors_after_faults(&mut hv, &(200..216).collect::<Vec<_>>());
    assert_eq!(consecutive, (8..16).chain(0..8).collect::<Vec<u32>>());
    // PALLOC's coloring in the host follows the fault order instead (its
    // cursor over the colors that have free frames).
    let mut palloc = hypervisor("coloring", &[]);
    assert_eq!(colors_after_faults(&mut palloc, &order), [0, 2, 4, 6, 8, 10, 12, 14]);
}

#[test]
fn coplace_follows_the_guests_own_bits_and_vmm_coloring_the_guest_frame() {
    // The guest colors on bits 13-16 (16 colors, as many as the host's):
    // guest frame 2 is its color 1, and COPLACE's host color 1; FreeBSD's
    // coloring follows the frame number: color 2. Guest frames 0 and 1,
    // both the guest's color 0, share host color 0 under COPLACE, as the
    // guest meant, and get two colors under vmm-coloring.
    let mut coplace = hypervisor("coplace", &["os.coloring.bits=[13,14,15,16]"]);
    assert_eq!(colors_after_faults(&mut coplace, &[2, 1, 0, 6]), [1, 0, 0, 3]);
    let mut vmm = hypervisor("vmm-coloring", &["os.coloring.bits=[13,14,15,16]"]);
    assert_eq!(colors_after_faults(&mut vmm, &[2, 1, 0, 6]), [2, 1, 0, 6]);
    // vmm-coloring reads the host's own map.
    let mut two = hypervisor("vmm-coloring", &["virt.host.coloring.bits=[12]"]);
    let map = ColorMap::new(&[12], "t").unwrap();
    for g in [5, 2, 9] {
        two.handle_violation(0, Gfn::new(g)).unwrap();
        assert_eq!(map.color_of(host_frame(&two, g)), (g % 2) as u32);
    }
}

#[test]
fn a_host_2mib_page_carries_the_guests_color_bits() {
    // Host THP before COPLACE: a 2 MiB-aligned guest range is one host
    // 2 MiB page, whose frames' bits 12-20 are the guest frames' own, so
    // host color = guest color on bits 12-15 without COPLACE choosing.
    let mut hv = hypervisor("coplace", &["virt.host.systems=[\"thp\", \"coplace\"]"]);
    hv.handle_violation(0, Gfn::new(512 + 5)).unwrap();
    let (frame, size) = hv.backing_of(0, Gfn::new(512 + 5)).unwrap();
    assert_eq!(size, crate::units::PageSize::Size2M);
    assert_eq!(frame.raw() & 511, 5);
    let map = ColorMap::new(&[12, 13, 14, 15], "t").unwrap();
    for g in [512, 530, 1000] {
        assert_eq!(map.color_of(host_frame(&hv, g)), (g % 16) as u32, "guest frame {g}");
    }
}

/// COPLACE's varying workload, tiny (as `engine::page_cache_tests`): a
/// file reader in the VM, then a stream over the reader's freed array
/// frames, every check on.
fn varying(policy: &str) -> crate::engine::Simulation {
    let text = "[machine]\nphys_mem = \"512MiB\"\n[machine.cache.llc]\nsize = \"1MiB\"\nways = 16\nslices = 1\n\
         [virt]\nenabled = true\nguest_mem = \"64MiB\"\n[os]\npolicy = \"base\"\n\
         [run]\nconflict_level = true\ncheck_translations = true\n\
         [[workloads]]\nkind = \"file-read\"\nfootprint = \"4MiB\"\naccesses = 0\n\
         [[workloads]]\nkind = \"stream\"\nfootprint = \"768KiB\"\naccesses = 200000\nafter = \"previous\"\n";
    run_toml(text, &[&format!("virt.host.policy=\"{policy}\"")])
}

#[test]
fn guest_reuse_keeps_the_host_colors_the_guest_frames_had() {
    // The stream reuses every other guest frame of the reader's: the
    // guest's placement (buddy, `base`) leaves it 8 of the 16 colors.
    // COPLACE and vmm-coloring keep those colors in the host: the
    // deviation is 12 as in the guest (24 pages on 8 colors, none on 8).
    for policy in ["coplace", "vmm-coloring"] {
        let sim = varying(policy);
        assert_eq!(stat(&sim, "core0.conflict_level"), 12.0, "{policy}");
        assert_eq!(stat(&sim, &format!("host.{}.color_fallbacks", policy.replace('-', "_"))), 0.0, "{policy}");
        assert!(stat(&sim, "host.os.faults.colored") > 0.0, "{policy}");
    }
}

#[test]
fn outside_the_host_the_policies_are_config_errors_naming_the_key() {
    let text = "[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    for (sets, key) in [
        (&["os.policy=\"coplace\""][..], "os.policy"),
        (&["os.systems=[\"vmm-coloring\"]"][..], "os.systems"),
        (&["virt.enabled=true", "os.policy=\"vmm-coloring\""][..], "os.policy"),
        (&["virt.enabled=true", "virt.host.policy=\"coplace\"", "virt.host.coplace.slice_bits=17"][..], "slice_bits"),
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let err = parse_config(text, "t.toml", &sets).and_then(|c| c.validate()).unwrap_err();
        let crate::Error::Config { key: got, .. } = &err else { panic!("{sets:?}: {err}") };
        assert!(got.ends_with(key), "{sets:?}: {err}");
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
    }
}
