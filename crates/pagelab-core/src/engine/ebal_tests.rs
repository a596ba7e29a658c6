//! eBal worked by hand: a balloon that evens the guest's colors out of a
//! free list skewed by color; a balloon held from boot that deflates into
//! its guest, whose new pages the host backs with the frames another VM's
//! balloon released; and a whole run (two VMs, COPLACE in the host, eKSM,
//! a balloon moving memory between them) with every translation checked.

use crate::config::parse_config;
use crate::engine::Simulation;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Gfn, Order, Pfn};
use crate::virt::balloon::Take;
use crate::virt::Hypervisor;

/// Two VMs of 48 MiB, 4 KiB pages in both layers, guests coloring by bits
/// 12 and 13 (4 colors); `host` is the host's table's extra keys.
fn two_vms(phys: &str, host: &str) -> String {
    let mut text = format!(
        "[machine]\nphys_mem = \"{phys}\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"base\"\n{host}\n\
         [run]\ncheck_translations = true\n"
    );
    for _ in 0..2 {
        text += "[[vms]]\nguest_mem = \"48MiB\"\n[vms.os]\npolicy = \"base\"\n[vms.os.coloring]\nbits = [12, 13]\n\
                 [vms.workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n";
    }
    text
}

fn hv(sim: &Simulation) -> &Hypervisor {
    &sim.virt.as_ref().unwrap().hv
}

/// VM 1's guest frees, of all its frames, only 100 of color 0 (its
/// highest) and 1,000 of each other color (its lowest): its free list is
/// skewed.
fn skew_free_list(sim: &mut Simulation) {
    let guest = sim.guest_mut(0);
    let owner = FrameOwner::User { asid: 1, vpn: crate::units::Vpn::new(0) };
    let mut held = Vec::new();
    while let Some(f) = guest.mem.alloc(Order::BASE, Migratetype::Movable, owner) {
        held.push(f);
    }
    // Color 0's from the top of memory, the others' from the bottom: no
    // free block below spans color 0.
    held.sort_unstable_by_key(|f| if f.raw() & 3 == 0 { u64::MAX - f.raw() } else { f.raw() });
    let mut left = [100u32, 1000, 1000, 1000];
    for f in held {
        let c = (f.raw() & 3) as usize;
        if left[c] > 0 {
            left[c] -= 1;
            guest.mem.free(f, Order::BASE);
        }
    }
    assert_eq!(left, [0; 4], "the guest had enough frames of each color");
}

/// The pages of VM 1's balloon per guest color (bits 12-13).
fn balloon_colors(sim: &Simulation) -> [u64; 4] {
    let mut counts = [0; 4];
    for g in (0..48 << 8).map(Gfn::new).filter(|&g| hv(sim).in_balloon(0, g)) {
        counts[(g.raw() & 3) as usize] += 1;
    }
    counts
}

#[test]
fn even_colors_take_as_many_frames_of_each_color_as_the_scarcest_allows() {
    let text = two_vms("256MiB", "");
    let mut even = Simulation::new(parse_config(&text, "e.toml", &[]).unwrap()).unwrap();
    skew_free_list(&mut even);
    let inflation = even.inflate_balloon_by(0, 400 << 12, Take::EvenColors).unwrap();
    assert_eq!(inflation.pages, 400);
    assert_eq!(balloon_colors(&even), [100, 100, 100, 100]);
    // Past the scarcest color's 100, the others share what is asked.
    even.inflate_balloon_by(0, 300 << 12, Take::EvenColors).unwrap();
    assert_eq!(balloon_colors(&even), [100, 200, 200, 200]);
    // The guest's other free frames went back to it: 3,100 free before.
    assert_eq!(even.guest(0).mem.free_pages(), 3100 - 700);
    // Largest blocks first takes the order-1 blocks of colors 2 and 3
    // (frames 4k + 2 and 4k + 3 are buddies; 4k + 1's buddy is not free).
    let mut largest = Simulation::new(parse_config(&text, "l.toml", &[]).unwrap()).unwrap();
    skew_free_list(&mut largest);
    largest.inflate_balloon_by(0, 400 << 12, Take::Largest).unwrap();
    assert_eq!(balloon_colors(&largest), [0, 0, 200, 200]);
}

#[test]
fn a_deflated_page_is_backed_by_what_another_vm_s_balloon_released() {
    let host = "[virt.host.balloon]\ninflated_at_boot = [\"8MiB\"]\ndeflate = [\"8MiB\"]\ndeflate_at_ms = 1e9\n\
                even_colors = true\n";
    let mut sim = Simulation::new(parse_config(&two_vms("96MiB", host), "d.toml", &[]).unwrap()).unwrap();
    // VM 1 booted with 8 MiB in its balloon: its guest cannot have them.
    assert_eq!(hv(&sim).balloons.pages(0), 2048);
    let free_guest = sim.guest(0).mem.free_pages();
    // VM 2's memory all backed (its guest used and freed it), the rest of
    // the host's memory taken: the host has no free frame.
    let virt = sim.virt.as_deref_mut().unwrap();
    virt.hv.back_range(1, Gfn::new(0), 48 << 8).unwrap();
    let hog = FrameOwner::Reserved { pool: 0 };
    while virt.hv.host.mem.alloc(Order::BASE, Migratetype::Movable, hog).is_some() {}
    assert_eq!(virt.hv.host.mem.free_pages(), 0);
    let vm2: Vec<Pfn> = (0..48 << 8).map(|g| virt.hv.backing_of(1, Gfn::new(g)).unwrap().0).collect();
    // VM 2's balloon takes 8 MiB of its guest's free (backed) frames: the
    // host's free frames are now theirs and the EPT tables left empty.
    let inflation = sim.inflate_balloon_by(1, 8 << 20, Take::EvenColors).unwrap();
    assert_eq!(inflation.pages, 2048);
    let mem = &hv(&sim).host.mem;
    let released: std::collections::HashSet<Pfn> =
        (0..mem.nr_frames()).map(Pfn::new).filter(|&f| mem.is_free(f)).collect();
    let data = (0..48 << 8).filter(|&g| hv(&sim).in_balloon(1, Gfn::new(g))).map(|g| vm2[g as usize]);
    assert!(data.inspect(|f| assert!(released.contains(f))).count() == 2048);
    assert_eq!(released.len() as u64, inflation.freed);
    // VM 1's balloon deflates: its guest allocates the 8 MiB back...
    assert_eq!(sim.deflate_balloon(0, 8 << 20).unwrap(), 2048);
    assert_eq!(sim.guest(0).mem.free_pages(), free_guest + 2048);
    let owner = FrameOwner::User { asid: 1, vpn: crate::units::Vpn::new(0) };
    let guest: Vec<Pfn> =
        (0..2048).map(|_| sim.guest_mut(0).mem.alloc(Order::BASE, Migratetype::Movable, owner).unwrap()).collect();
    // ... unbacked until touched; the host backs each with a frame VM 2
    // released (it had no other; EPT tables take some of them too).
    let virt = sim.virt.as_deref_mut().unwrap();
    for &g in &guest {
        let gfn = Gfn::of_guest_kernel(g);
        assert!(virt.hv.backing_of(0, gfn).is_none(), "{gfn} was in the balloon: unbacked");
        virt.hv.handle_violation(0, gfn).unwrap();
        let (frame, _) = virt.hv.backing_of(0, gfn).unwrap();
        assert!(released.contains(&frame), "{gfn} of VM 1 is backed by {frame}, not a frame VM 2 released");
    }
    let s = sim.stats();
    assert_eq!(s["host.balloon.deflated"].as_f64(), 2048.0);
    // VM 2's 2,048 pages, 512 of each guest color.
    assert_eq!(s["host.balloon.taken_color_stddev"].as_f64(), 0.0);
}

#[test]
fn translations_hold_through_merges_balloons_and_reuse() {
    // VM 1 boots with 16 MiB ballooned and gets it back at 0.2 ms; VM 2
    // gives 16 MiB at 0.1 ms. Both share data that eKSM merges.
    let host = "policy = \"coplace\"\n[virt.host.ksm]\nenabled = true\nsleep_ms = 0.05\npages_to_scan = 4096\n\
                colors = \"eksm\"\n[virt.host.balloon]\ninflated_at_boot = [\"16MiB\"]\ntargets = [\"0MiB\", \"16MiB\"]\n\
                inflate_at_ms = 0.1\ndeflate = [\"16MiB\"]\ndeflate_at_ms = 0.2\neven_colors = true\n";
    let text = two_vms("128MiB", host).replace("policy = \"base\"\n", "").replace(
        "footprint = \"1MiB\"\ninit = \"none\"\n",
        "footprint = \"24MiB\"\naccesses = 300000\ncontents = \"shared\"\n",
    );
    let mut sim = Simulation::new(parse_config(&text, "w.toml", &[]).unwrap()).unwrap();
    sim.run().unwrap();
    let s = sim.stats();
    assert_eq!(s["host.balloon.deflated"].as_f64(), 4096.0, "VM 1's balloon gave its 16 MiB back");
    assert_eq!(s["balloon.pages"].as_f64(), 4096.0, "VM 2's balloon holds 16 MiB");
    assert!(s["ksm.merges"].as_f64() > 0.0, "KSM merged the shared data");
    // Across colors only after a scan that found identical pages scarce.
    let (across, scarce) = (s["ksm.merges_across_colors"].as_f64(), s["ksm.scarce_scans"].as_f64());
    assert!(across <= s["ksm.merges"].as_f64() && (across == 0.0 || scarce > 0.0), "{across} {scarce}");
}

#[test]
fn balloon_keys_of_ebal_are_checked() {
    for (extra, key) in [
        ("[virt.host.balloon]\ndeflate = [\"4MiB\"]\ntargets = [\"2MiB\"]\n", "virt.host.balloon.deflate[0]"),
        ("[virt.host.balloon]\ninflated_at_boot = [\"5000\"]\n", "virt.host.balloon.inflated_at_boot[0]"),
        ("[virt.host.balloon]\ndeflate_at_ms = -1.0\n", "virt.host.balloon.deflate_at_ms"),
    ] {
        let text = two_vms("256MiB", extra);
        let e = parse_config(&text, "b.toml", &[]).and_then(|c| c.validate()).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
}
