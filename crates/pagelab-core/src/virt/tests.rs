//! The hypervisor alone, and its configuration's errors.

use super::*;
use crate::config::parse_config;
use crate::engine::host_boot;
use crate::os::Boot;
use crate::units::{Gfn, PageSize};

const BASE_TOML: &str = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";

fn config_error(sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match parse_config(BASE_TOML, "t.toml", &sets).and_then(|c| c.validate()) {
        Ok(_) => panic!("{sets:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_virt_keys_are_errors_naming_the_key() {
    for (sets, key) in [
        (&["virt.enabled=true", "virt.guest_mem=\"3MiB\""][..], "virt.guest_mem"),
        (&["virt.enabled=true", "virt.ept_levels=5"][..], "virt.ept_levels"),
        (&["virt.enabled=true", "virt.guest_mem=\"1TiB\"", "virt.ept_levels=3"][..], "virt.ept_levels"),
        (&["virt.enabled=true", "virt.costs.vm_exit=-1"][..], "virt.costs.vm_exit"),
        (&["virt.enabled=true", "virt.host.policy=\"nonesuch\""][..], "virt.host.policy"),
        (&["virt.enabled=true", "virt.host.systems=[\"thp\"]"][..], "virt.host.systems"),
        (&["virt.enabled=true", "virt.host.fragmentation.target=2.0"][..], "virt.host.fragmentation.target"),
        (&["virt.enabled=true", "virt.host.fragmentation.fmfi=1.5"][..], "virt.host.fragmentation.fmfi"),
        (&["virt.enabled=true", "virt.host.policy=\"chp\""][..], "virt.host.policy"),
        (&["virt.enabled=true", "virt.host.systems=[\"chp\", \"coloring\", \"base\"]"][..], "virt.host.systems"),
        (&["virt.backing=\"sometimes\""][..], "virt.backing"),
        (&["virt.nonesuch=1"][..], "nonesuch"),
        (&["machine.nested_tlb.entries=24", "machine.nested_tlb.ways=4"][..], "machine.nested_tlb.entries"),
        (&["machine.ept_pwc.pde_entries=24", "machine.ept_pwc.ways=4"][..], "machine.ept_pwc.pde_entries"),
    ] {
        let e = config_error(sets);
        assert!(e.contains(key), "{sets:?}: {e}");
    }
}

fn hypervisor(policy: &str) -> Hypervisor {
    let sets = vec![format!("virt.host.policy=\"{policy}\""), "virt.guest_mem=\"64MiB\"".to_string()];
    let cfg = parse_config(BASE_TOML, "t.toml", &sets).unwrap();
    Hypervisor::boot(&cfg.virt, &[cfg.virt.guest_mem.bytes()], host_boot(&cfg).unwrap(), 3.0, 1).unwrap()
}

#[test]
fn a_host_fmfi_target_releases_the_guests_memory_in_512k_chunks() {
    // 256 MiB of host memory, one 64 MiB guest, 4 MiB of slack: at 0.99
    // memfrag holds all but the slack, then releases the guest's 64 MiB
    // as 128 chunks of 512 KiB, which stay order-7 blocks. (The VM's host
    // page table, made after, splits the slack's block: one order-7 more.)
    let sets: Vec<String> = [
        "virt.guest_mem=\"64MiB\"",
        "virt.host.fragmentation.fmfi=0.99",
        "virt.host.fragmentation.fmfi_slack=\"4MiB\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cfg = parse_config(BASE_TOML, "t.toml", &sets).unwrap();
    let hv = Hypervisor::boot(&cfg.virt, &[cfg.virt.guest_mem.bytes()], host_boot(&cfg).unwrap(), 3.0, 1).unwrap();
    assert_eq!(hv.host.mem.free_blocks_per_order()[7], 129);
    let mem = &hv.host.mem;
    let held =
        (0..mem.nr_frames()).filter(|&p| mem.owner(crate::units::Pfn::new(p)) == crate::phys::FrameOwner::Kernel);
    assert_eq!(held.count() as u64, (256 - 68) << 8);
}

#[test]
fn an_ept_violation_is_a_host_fault_in_the_vm_process() {
    let mut hv = hypervisor("base");
    assert_eq!(hv.backing_of(0, Gfn::new(7)), None, "nothing is backed at boot");
    let cycles = hv.handle_violation(0, Gfn::new(7)).unwrap();
    let costs = VirtCosts::default();
    assert_eq!(cycles, costs.vm_exit + costs.ept_violation + hv.host.costs.base);
    let (frame, size) = hv.backing_of(0, Gfn::new(7)).unwrap();
    assert_eq!(size, PageSize::Size4K);
    let owner = hv.host.mem.owner(frame);
    assert_eq!(owner, crate::phys::FrameOwner::User { asid: hv.vms[0].host_asid, vpn: crate::units::Vpn::new(7) });
    assert_eq!(hv.counters.faults, 1);
}

#[test]
fn a_host_thp_backs_the_whole_2m_region_and_back_range_skips_it() {
    let mut hv = hypervisor("thp");
    let (violations, _) = hv.back_range(0, Gfn::new(0), 1024).unwrap();
    assert_eq!(violations, 2, "two 2 MiB host pages");
    assert_eq!(hv.backing_of(0, Gfn::new(600)).unwrap().1, PageSize::Size2M);
}

#[test]
fn a_reference_beyond_guest_memory_is_a_clear_error() {
    let mut hv = hypervisor("base");
    let e = hv.handle_violation(0, Gfn::new(1 << 20)).unwrap_err().to_string();
    assert!(e.contains("beyond its 16384 frames"), "{e}");
}

#[test]
fn host_memory_running_out_stops_with_a_message() {
    // 64 MiB of guest memory over 16 MiB of host memory: overcommitted.
    let sets = ["virt.guest_mem=\"64MiB\"".to_string()];
    let cfg = parse_config(BASE_TOML, "t.toml", &sets).unwrap();
    let boot = Boot { frames: 4096, max_order: 10, ..host_boot(&cfg).unwrap() };
    let mut hv = Hypervisor::boot(&cfg.virt, &[cfg.virt.guest_mem.bytes()], boot, 3.0, 1).unwrap();
    let e = hv.back_range(0, Gfn::new(0), 16384).unwrap_err().to_string();
    assert!(e.contains("host memory exhausted"), "{e}");
}

#[test]
fn a_discard_frees_the_host_frames_and_reports_the_change() {
    let mut hv = hypervisor("base");
    hv.back_range(0, Gfn::new(10), 4).unwrap();
    let free = hv.host.mem.free_pages();
    hv.discard(0, Gfn::new(11), 2).unwrap();
    assert_eq!(hv.host.mem.free_pages(), free + 2);
    assert_eq!(hv.drain_ept_changes(), vec![EptChange { vm: 0, start: Gfn::new(11), end: Gfn::new(13) }]);
    assert!(hv.backing_of(0, Gfn::new(10)).is_some() && hv.backing_of(0, Gfn::new(11)).is_none());
    hv.handle_violation(0, Gfn::new(11)).unwrap();
}
