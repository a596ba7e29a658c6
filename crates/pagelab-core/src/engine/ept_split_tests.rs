//! The EPT-only split leaves the host's metadata alone: its counters, its
//! frames' owners and its daemons see the huge page the host allocated,
//! and the host's own work on the range puts the huge leaf back first.
//! (Issue 36's defect: khugepaged collapsed the split leaves and took
//! 2 MiB off `host.mem.mapped.4k`, which never held them.)

use super::testutil::*;
use super::Simulation;
use crate::units::{Gfn, PageSize};
use crate::virt::Hypervisor;

const MIB: f64 = (1 << 20) as f64;

/// A 64 MiB VM (4 KiB guest pages) on a host with THP whose khugepaged
/// wakes every simulated millisecond; its vCPU runs gups over 16 MiB for
/// `accesses`, every TLB hit checked.
fn gups_on_host_thp(accesses: u64) -> Simulation {
    gups_on_host_thp_with(accesses, &[])
}

fn gups_on_host_thp_with(accesses: u64, extra: &[&str]) -> Simulation {
    let accesses = format!("workload.accesses={accesses}");
    let mut set = vec![
        "virt.enabled=true",
        "virt.guest_mem=\"64MiB\"",
        "os.policy=\"base\"",
        "os.thp.khugepaged=false",
        "virt.host.policy=\"thp\"",
        "virt.host.thp.scan_sleep_ms=1",
        "workload.footprint=\"16MiB\"",
        &accesses,
        "run.check_translations=true",
    ];
    set.extend_from_slice(extra);
    Simulation::new(config(&set)).unwrap()
}

fn hv(sim: &mut Simulation) -> &mut Hypervisor {
    &mut sim.virt.as_deref_mut().unwrap().hv
}

/// The first guest frame of VM 0 whose host backing is a 2 MiB page.
fn huge_backed(sim: &mut Simulation) -> Gfn {
    let hv = hv(sim);
    let frames = hv.vms[0].guest_frames;
    (0..frames)
        .step_by(512)
        .map(Gfn::new)
        .find(|&g| matches!(hv.backing_of(0, g), Some((_, PageSize::Size2M))))
        .expect("host THP backs some 2 MiB of the guest")
}

fn stat(sim: &Simulation, key: &str) -> f64 {
    sim.stats()[key].as_f64()
}

#[test]
fn khugepaged_sees_the_huge_page_the_metadata_holds_and_the_counters_stay() {
    let mut sim = gups_on_host_thp(200_000);
    sim.step(100_000).unwrap();
    let gfn = huge_backed(&mut sim);
    let (mapped_4k, mapped_2m) = (stat(&sim, "host.mem.mapped.4k"), stat(&sim, "host.mem.mapped.2m"));
    let (frame, _) = hv(&mut sim).backing_of(0, gfn).unwrap();
    sim.ept_split(0, gfn).unwrap();
    assert_eq!((stat(&sim, "host.mem.mapped.4k"), stat(&sim, "host.mem.mapped.2m")), (mapped_4k, mapped_2m));
    sim.run().unwrap();
    let s = sim.stats();
    // Still split, still one huge page to the host: khugepaged saw it as
    // mapped by a PMD on each pass and left it.
    assert_eq!(hv(&mut sim).backing_of(0, gfn), Some((frame, PageSize::Size4K)));
    assert!(s["host.khugepaged.pmd_mapped"].as_f64() > 0.0, "khugepaged scanned the VM");
    assert!(s["host.mem.mapped.4k"].as_f64() <= 64.0 * MIB, "{}", s["host.mem.mapped.4k"].as_f64());
    let (m4k, m2m) = (s["host.mem.mapped.4k"].as_f64(), s["host.mem.mapped.2m"].as_f64());
    let host_asid = hv(&mut sim).host_asid(0);
    let aspace = &hv(&mut sim).host.proc(host_asid).aspace;
    assert_eq!(aspace.table_only_splits(), 1);
    // The metadata's counts cover what the table maps, the split range
    // once, as 2 MiB.
    let leaves = aspace.pt.leaves_in(crate::units::VirtAddr::new(0), crate::units::VirtAddr::new(u64::MAX >> 7));
    let table_bytes: u64 = leaves.iter().map(|(_, m)| m.size.bytes()).sum();
    assert_eq!((m4k + m2m) as u64, table_bytes);
    assert!(m2m >= 2.0 * MIB);
}

#[test]
fn a_discard_of_part_of_a_split_range_restores_it_then_splits_the_metadata() {
    let mut sim = gups_on_host_thp(50_000);
    sim.run().unwrap();
    let gfn = Gfn::new(huge_backed(&mut sim).raw());
    let (m4k, m2m) = (stat(&sim, "host.mem.mapped.4k"), stat(&sim, "host.mem.mapped.2m"));
    let remap = stat(&sim, "host.ept_remap_cycles");
    sim.ept_split(0, gfn).unwrap();
    // The balloon hands back 4 pages of the range: the host puts the huge
    // leaf back (a restore, charged as a collapse), then splits it for
    // real at the edges and frees the 4 pages.
    hv(&mut sim).discard(0, Gfn::new(gfn.raw() + 8), 4).unwrap();
    let s = sim.stats();
    assert_eq!(s["host.ept_restores"].as_f64(), 1.0);
    assert_eq!(s["host.mem.mapped.2m"].as_f64(), m2m - 2.0 * MIB);
    assert_eq!(s["host.mem.mapped.4k"].as_f64(), m4k + 2.0 * MIB - 4.0 * 4096.0);
    assert_eq!(s["host.ept_remap_cycles"].as_f64(), remap + 26_100.0 + 46_800.0);
    let host_asid = hv(&mut sim).host_asid(0);
    assert_eq!(hv(&mut sim).host.proc(host_asid).aspace.table_only_splits(), 0);
    // The collapse of HugeScope's fine phase is then refused: the host's
    // own split is the host's to collapse.
    assert_eq!(hv(&mut sim).ept_collapse(0, gfn, PageSize::Size2M).unwrap(), None);
}

#[test]
fn a_discard_of_a_whole_split_range_frees_one_huge_page() {
    let mut sim = gups_on_host_thp(50_000);
    sim.run().unwrap();
    let gfn = huge_backed(&mut sim);
    let (m4k, m2m) = (stat(&sim, "host.mem.mapped.4k"), stat(&sim, "host.mem.mapped.2m"));
    let free = hv(&mut sim).host.mem.free_pages();
    sim.ept_split(0, gfn).unwrap();
    hv(&mut sim).discard(0, gfn, 512).unwrap();
    let s = sim.stats();
    assert_eq!((s["host.mem.mapped.4k"].as_f64(), s["host.mem.mapped.2m"].as_f64()), (m4k, m2m - 2.0 * MIB));
    // The 512 frames back, and the split's table frame too.
    assert_eq!(hv(&mut sim).host.mem.free_pages(), free + 512);
    assert_eq!(s["host.ept_restores"].as_f64(), 1.0);
}

#[test]
fn a_migration_of_a_page_in_a_split_range_restores_it_and_moves_the_whole_huge_page() {
    let tiers = "machine.memory.tiers=[{name=\"dram\", size=\"128MiB\", read_latency=100, write_latency=100}, \
                 {name=\"nvm\", size=\"128MiB\", read_latency=300, write_latency=700}]";
    let mut sim = gups_on_host_thp_with(50_000, &[tiers]);
    sim.run().unwrap();
    let gfn = huge_backed(&mut sim);
    let (frame, _) = hv(&mut sim).backing_of(0, gfn).unwrap();
    sim.ept_split(0, gfn).unwrap();
    let moved = sim.migrate_guest_frame(0, Gfn::new(gfn.raw() + 3), 1).unwrap();
    let crate::os::Migration::Moved { to, size, .. } = moved else { panic!("{moved:?}") };
    assert_eq!(size, PageSize::Size2M, "the whole huge page, not its 4 KiB part");
    let hv = hv(&mut sim);
    assert_eq!(hv.backing_of(0, gfn), Some((to, PageSize::Size2M)));
    assert_eq!(hv.host.mem.node_of(to), 1);
    assert!((0..512).all(|i| hv.host.mem.is_free(frame.add(i))), "the old 2 MiB freed whole");
    let s = sim.stats();
    assert_eq!((s["host.ept_restores"].as_f64(), s["host.os.tier.migrations.2m"].as_f64()), (1.0, 1.0));
    sim.run().unwrap(); // check_translations: no stale entry
}

/// Two VMs on host THP store the same data to 8 pages each; KSM (waking
/// after the stores) may split a huge page to merge a part. With
/// `split_vm0`, VM 0's huge page holding the data is split in the EPT only
/// first.
fn ksm_after_stores(split_vm0: bool) -> Simulation {
    let text = super::ksm_tests::ksm_text(1000.0).replace(
        "policy = \"base\"\n[virt.host.ksm]",
        "policy = \"thp\"\n[virt.host.thp]\nkhugepaged = false\n[virt.host.ksm]\npages_to_scan = 100000\n\
         split = \"any-duplicate\"",
    );
    let mut sim = super::ksm_tests::run_both(&text, stores(BASE, 8));
    if split_vm0 {
        let m = sim.kernel.proc(1).aspace.pt.lookup(BASE).unwrap();
        sim.ept_split(0, Gfn::of_guest_kernel(m.frame)).unwrap();
    }
    sim.virt_round_end(2.0 * 3e9).unwrap();
    sim
}

#[test]
fn ksm_skips_a_split_range_until_it_is_collapsed() {
    let merged = ksm_after_stores(false).stats();
    assert_eq!(merged["ksm.pages_sharing"].as_f64(), 8.0, "the control: the 8 pairs merge");
    let mut sim = ksm_after_stores(true);
    let s = sim.stats();
    assert_eq!((s["ksm.pages_sharing"].as_f64(), s["ksm.splits"].as_f64()), (0.0, 0.0));
    let host_asid = hv(&mut sim).host_asid(0);
    assert_eq!(hv(&mut sim).host.proc(host_asid).aspace.table_only_splits(), 1, "still split, untouched");
}
