//! Several VMs on one host, worked by hand: each VM's own guest memory and
//! host frames, VPID-tagged TLB entries, INVEPTs that stay within their
//! VM, an overcommitted host running out, per-VM statistics, and the
//! `[[vms]]` configuration's errors.

use super::testutil::*;
use super::walk2d::tests::check_backing;
use super::walk2d::{NestedHw, Walker2d};
use super::*;
use crate::config::parse_config;
use crate::hw::tlb::TlbLookup;
use crate::units::Gfn;
use crate::virt::hw_tag;

/// A 256 MiB host running `vms` VMs of `guest_mem` each, one vCPU each,
/// 4 KiB pages in both layers, no daemons, every TLB hit checked.
fn vms_text(vms: usize, guest_mem: &str, phys_mem: &str) -> String {
    let mut text = format!(
        "[machine]\nphys_mem = \"{phys_mem}\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"base\"\n\
         [run]\ncheck_translations = true\n"
    );
    for _ in 0..vms {
        text += &format!(
            "[[vms]]\nguest_mem = \"{guest_mem}\"\n[vms.os]\npolicy = \"base\"\n\
             [vms.workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n"
        );
    }
    text
}

fn vms_config(vms: usize, guest_mem: &str, phys_mem: &str) -> SimConfig {
    parse_config(&vms_text(vms, guest_mem, phys_mem), "vms.toml", &[]).unwrap()
}

/// Runs one scripted workload per vCPU: each stores to `pages` pages from
/// `BASE` in a VMA of at least 4 MiB.
fn run_stores(cfg: SimConfig, pages: u64) -> Result<Simulation> {
    let n = cfg.nr_cores();
    let scripts: Vec<Box<dyn crate::workload::Workload>> = (0..n)
        .map(|_| {
            let b = batch(vec![mmap(BASE, (pages * 4096).max(4 << 20))], stores(BASE, pages));
            Box::new(Script { batches: vec![b] }) as Box<dyn crate::workload::Workload>
        })
        .collect();
    let mut sim = Simulation::with_workloads(cfg, scripts)?;
    sim.run()?;
    Ok(sim)
}

/// The guest frame VM `vm`'s process 1 maps `vaddr` to.
fn guest_frame(sim: &Simulation, vm: usize, vaddr: crate::units::VirtAddr) -> Gfn {
    let m = sim.guest(vm).proc(1).aspace.pt.lookup(vaddr).unwrap();
    Gfn::of_guest_kernel(m.frame_of(vaddr))
}

fn hits(tlb_lookup: TlbLookup) -> bool {
    !matches!(tlb_lookup, TlbLookup::Miss)
}

#[test]
fn two_vms_with_the_same_guest_addresses_get_different_host_frames() {
    let sim = run_stores(vms_config(2, "64MiB", "256MiB"), 8).unwrap();
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!((hv.vms[0].vpid, hv.vms[1].vpid), (1, 2));
    assert_ne!(hv.vms[0].host_asid, hv.vms[1].host_asid, "one host process (one EPT) per VM");
    for page in 0..8 {
        let va = BASE.add(page * 4096);
        // Two identical guests allocate alike: the same guest frame...
        let (g0, g1) = (guest_frame(&sim, 0, va), guest_frame(&sim, 1, va));
        assert_eq!(g0, g1);
        // ...backed by two host frames.
        let (h0, h1) = (hv.backing_of(0, g0).unwrap().0, hv.backing_of(1, g1).unwrap().0);
        assert_ne!(h0, h1, "page {page}");
    }
    check_backing(&sim);
    // Every vCPU walked its own VM's tables: 8 guest faults each.
    let s = sim.stats();
    assert_eq!(s["vm0.faults"].as_f64(), 8.0);
    assert_eq!(s["vm1.faults"].as_f64(), 8.0);
    assert_eq!(s["faults"].as_f64(), 16.0);
}

#[test]
fn a_vcpu_of_one_vm_never_hits_another_vms_tlb_entries() {
    let mut sim = run_stores(vms_config(2, "64MiB", "256MiB"), 8).unwrap();
    // Core 0 (VM 1's vCPU) holds BASE under VPID 1; the same guest address
    // and guest process number under VPID 2 is another translation.
    assert!(hits(sim.cores[0].mmu.tlb.lookup(hw_tag(1, 1), BASE, false)));
    assert!(!hits(sim.cores[0].mmu.tlb.lookup(hw_tag(2, 1), BASE, false)));
    // Running VM 2's translation of BASE on core 0's warm TLB walks, and
    // gives VM 2's host frame (as after a VM switch on one core).
    let m = sim.config().machine.clone();
    let mut nested = NestedHw::new(&m.ept_pwc, &m.pwc, &m.nested_tlb, 4, 2, 1);
    let virt = sim.virt.as_deref_mut().unwrap();
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    let mut w = Walker2d {
        mmu: &mut sim.cores[0].mmu,
        nested: &mut nested,
        guest: &mut virt.other_guests[0],
        hv: &mut virt.hv,
        refs: &mut refs,
        stats: &mut stats,
        guest_asids: &virt.guest_asids[1],
        contents: None,
    };
    let frame = w.translate(mmu::Request { asid: 1, vaddr: BASE, write: false, instr: false }).unwrap();
    assert_eq!(stats.walks, 1, "a TLB miss: VPID 1's entry is not VPID 2's");
    let gfn = guest_frame(&sim, 1, BASE);
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!(frame, hv.backing_of(1, gfn).unwrap().0);
    assert_ne!(frame, hv.backing_of(0, guest_frame(&sim, 0, BASE)).unwrap().0);
}

#[test]
fn an_ept_change_in_one_vm_leaves_the_other_vms_entries() {
    let mut sim = run_stores(vms_config(2, "64MiB", "256MiB"), 8).unwrap();
    for (core, vpid) in [(0, 1), (1, 2)] {
        assert!(hits(sim.cores[core].mmu.tlb.lookup(hw_tag(vpid, 1), BASE, false)));
    }
    let ntlb_before: Vec<u64> = sim.virt.as_ref().unwrap().cores.iter().map(|n| n.ntlb.stats().invalidations).collect();
    // The host gives back VM 1's frame of BASE (a balloon's discard).
    let gfn = guest_frame(&sim, 0, BASE);
    sim.virt.as_deref_mut().unwrap().hv.discard(0, gfn, 1).unwrap();
    let cycles_virt: Vec<f64> = sim.cores.iter().map(|c| c.stats.cycles_virt).collect();
    sim.virt_round_end(0.0).unwrap();
    // VM 1's core paid an INVEPT and lost its entries; VM 2's did neither.
    let invept = sim.virt.as_ref().unwrap().hv.costs.invept;
    assert_eq!(sim.cores[0].stats.cycles_virt, cycles_virt[0] + invept);
    assert_eq!(sim.cores[1].stats.cycles_virt, cycles_virt[1]);
    assert!(!hits(sim.cores[0].mmu.tlb.lookup(hw_tag(1, 1), BASE, false)));
    assert!(hits(sim.cores[1].mmu.tlb.lookup(hw_tag(2, 1), BASE, false)));
    let ntlb_after: Vec<u64> = sim.virt.as_ref().unwrap().cores.iter().map(|n| n.ntlb.stats().invalidations).collect();
    assert_eq!(ntlb_after[1], ntlb_before[1], "VM 2's nested TLB untouched");
    assert!(sim.virt.as_ref().unwrap().hv.backing_of(1, guest_frame(&sim, 1, BASE)).is_some());
}

#[test]
fn an_overcommitted_host_runs_until_its_memory_runs_out() {
    // Two VMs of 48 MiB on a 64 MiB host: allowed.
    let small = run_stores(vms_config(2, "48MiB", "64MiB"), 64).unwrap();
    check_backing(&small);
    // Each VM touching 32 MiB (plus page tables) needs more than the host has.
    let e = run_stores(vms_config(2, "48MiB", "64MiB"), 8192).unwrap_err().to_string();
    assert!(e.contains("host memory exhausted") && e.contains("no swap"), "{e}");
    assert!(e.contains("VM 2 (vms[1]"), "the second VM's backing fails: {e}");
}

#[test]
fn several_vms_report_per_vm_statistics_and_the_host_once() {
    let sim = run_stores(vms_config(2, "64MiB", "256MiB"), 8).unwrap();
    let s = sim.stats();
    for name in ["vm0.core0.walks", "vm1.core0.walks", "vm1.mem.mapped.4k", "vm0.virt.ept_violations", "host.faults"] {
        assert!(s.contains_key(name), "{name}");
    }
    assert!(!s.keys().any(|k| k.starts_with("core")), "per-core names are under vmN.");
    assert!(!s.contains_key("mem.mapped.4k"), "the guests' kernels report under vmN. only");
    for name in ["walks", "walk.mem_refs", "virt.ept_violations", "faults"] {
        let sum = s[&format!("vm0.{name}")].as_f64() + s[&format!("vm1.{name}")].as_f64();
        assert_eq!(s[name].as_f64(), sum, "{name}: the machine's is the VMs' sum");
    }
    // 8 pages of 4 KiB mapped in each guest (in bytes).
    assert_eq!(s["vm0.mem.mapped.4k"].as_f64(), 8.0 * 4096.0);
    assert_eq!(s["vm1.mem.mapped.4k"].as_f64(), 8.0 * 4096.0);
    // Zeroing backing, per VM: the root table at boot (no vCPU's), then
    // the first fault's 3 new tables and its page, and 7 more pages: 11
    // violations on the vCPU, 12 host faults.
    assert_eq!(s["vm0.virt.ept_violations"].as_f64(), 11.0);
    assert_eq!(s["vm1.virt.ept_violations"].as_f64(), 11.0);
    assert_eq!(s["host.faults"].as_f64(), 24.0);
}

#[test]
fn one_vm_in_vms_tables_runs_as_the_top_level_form() {
    let one = vms_text(1, "64MiB", "256MiB");
    let top = "[machine]\nphys_mem = \"256MiB\"\n[virt]\nenabled = true\nguest_mem = \"64MiB\"\n[virt.host]\n\
               policy = \"base\"\n[run]\ncheck_translations = true\n[os]\npolicy = \"base\"\n[workload]\n\
               kind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n";
    let a = run_stores(parse_config(&one, "one.toml", &[]).unwrap(), 8).unwrap().stats();
    let b = run_stores(parse_config(top, "top.toml", &[]).unwrap(), 8).unwrap().stats();
    assert_eq!(a, b);
}

#[test]
fn vcpus_take_cores_in_vm_order() {
    let text = vms_text(2, "64MiB", "256MiB").replacen(
        "[vms.workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n",
        "[[vms.workloads]]\nkind = \"gups\"\nfootprint = \"1MiB\"\n[[vms.workloads]]\nkind = \"stream\"\n\
         footprint = \"1MiB\"\n",
        1,
    );
    let cfg = parse_config(&text, "t.toml", &["machine.cores=3".into()]).unwrap();
    assert_eq!(cfg.vm_of_cores(), vec![0, 0, 1]);
    assert_eq!(cfg.workload_keys(), vec!["vms[0].workloads[0]", "vms[0].workloads[1]", "vms[1].workload"]);
    let e = parse_config(&text, "t.toml", &["machine.cores=2".into()]).unwrap_err().to_string();
    assert!(e.contains("machine.cores") && e.contains("vms[0]: 2, vms[1]: 1"), "{e}");
}

#[test]
fn bad_vms_tables_are_errors_naming_the_keys() {
    let two = vms_text(2, "64MiB", "256MiB");
    let workload = "[workload]\nkind = \"gups\"\n";
    for (text, sets, key) in [
        (two.clone() + workload, &[][..], "workload"),
        (two.clone(), &["os.policy=\"thp\""][..], "os"),
        (two.clone(), &["virt.guest_mem=\"32MiB\""][..], "virt.guest_mem"),
        (two.clone(), &["virt.enabled=false"][..], "virt.enabled"),
        (two.clone(), &["vms=[{guest_mem = \"64MiB\"}]"][..], "vms[0]"),
        (two.clone().replace("guest_mem = \"64MiB\"", "guest_mem = \"3MiB\""), &[][..], "vms[0].guest_mem"),
        (two.clone().replace("[vms.os]\n", "nonesuch = 1\n[vms.os]\n"), &[][..], "nonesuch"),
        (two.clone().replace("kind = \"gups\"", "kind = \"nonesuch\""), &[][..], "vms[0].workload.kind"),
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let e = parse_config(&text, "t.toml", &sets).unwrap_err().to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

/// Two one-vCPU VMs of 64 MiB, guest policy `policy`, whose processes
/// declare `contents` `a` and `b`, each storing to `stores` pages and then
/// loading the next `loads`.
fn contents_run(a: &str, b: &str, policy: &str, stores: u64, loads: u64) -> Simulation {
    let mut accesses = super::testutil::stores(BASE, stores);
    let load = |i: u64| crate::workload::Access::load(BASE.add((stores + i) * 4096), 8, 1);
    accesses.extend((0..loads).map(load));
    contents_run_of(a, b, policy, accesses)
}

/// The same, each VM's vCPU making `accesses`.
fn contents_run_of(a: &str, b: &str, policy: &str, accesses: Vec<crate::workload::Access>) -> Simulation {
    let mut text = "[machine]\nphys_mem = \"256MiB\"\n[virt]\nenabled = true\n[run]\ncheck_translations = true\n\
                    [virt.host]\npolicy = \"base\"\n"
        .to_string();
    for data in [a, b] {
        text += &format!(
            "[[vms]]\nguest_mem = \"64MiB\"\n[vms.os]\npolicy = \"{policy}\"\n[vms.os.thp]\nkhugepaged = false\n\
             [vms.workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\ncontents = \"{data}\"\n"
        );
    }
    let cfg = parse_config(&text, "contents.toml", &[]).unwrap();
    let scripts: Vec<Box<dyn crate::workload::Workload>> = (0..2)
        .map(|_| {
            let accesses = accesses.clone();
            Box::new(Script { batches: vec![batch(vec![mmap(BASE, 4 << 20)], accesses)] })
                as Box<dyn crate::workload::Workload>
        })
        .collect();
    let mut sim = Simulation::with_workloads(cfg, scripts).unwrap();
    sim.run().unwrap();
    sim
}

fn census(sim: &Simulation) -> (f64, f64, f64) {
    let s = sim.stats();
    let get = |k: &str| s.get(&format!("virt.contents.{k}")).unwrap_or_else(|| panic!("no {k}")).as_f64();
    (get("pages"), get("zero"), get("duplicates"))
}

#[test]
fn page_contents_follow_the_declarations_at_faults_and_dirty_bits() {
    // 8 stored pages in each VM: shared data in both is 8 duplicates;
    // the 3 pages each only loads were zeroed by the guest's fault: 6
    // zero pages, 5 of them duplicates of the first.
    assert_eq!(census(&contents_run("shared", "shared", "base", 8, 3)), (22.0, 6.0, 8.0 + 5.0));
    // Unique data in both: only the zero pages repeat.
    assert_eq!(census(&contents_run("unique", "unique", "base", 8, 3)), (22.0, 6.0, 5.0));
    // Zero data: all 22 are zero pages, 21 duplicates.
    assert_eq!(census(&contents_run("zero", "zero", "base", 8, 3)), (22.0, 22.0, 21.0));
    // Shared against unique: nothing but the zero pages is equal.
    assert_eq!(census(&contents_run("shared", "unique", "base", 8, 3)), (22.0, 6.0, 5.0));
}

#[test]
fn a_store_through_a_clean_tlb_entry_writes_the_contents_at_its_dirty_assist() {
    // 4 pages loaded (faulted in as zero pages, clean TLB entries), then
    // stored to: the dirty-bit assist is the transition.
    let load = |i: u64| crate::workload::Access::load(BASE.add(i * 4096), 8, 1);
    let mut accesses: Vec<_> = (0..4).map(load).collect();
    accesses.extend(super::testutil::stores(BASE, 4));
    let sim = contents_run_of("shared", "shared", "base", accesses);
    assert_eq!(sim.stats()["walk.dirty_assists"].as_f64(), 8.0);
    assert_eq!(census(&sim), (8.0, 0.0, 4.0));
}

#[test]
fn a_guest_huge_page_gets_its_contents_at_its_one_dirty_transition() {
    // Guest THP: the first store faults in a whole 2 MiB page (512 zero
    // frames), the store sets its dirty bit: all 512 frames get the
    // declared data; later stores to it change nothing.
    let sim = contents_run("shared", "shared", "thp", 8, 0);
    assert_eq!(sim.stats()["vm0.mem.mapped.2m"].as_f64(), (2u64 << 20) as f64);
    assert_eq!(census(&sim), (1024.0, 0.0, 512.0));
}

#[test]
fn runs_without_declared_contents_keep_no_table_and_no_statistics() {
    let sim = run_stores(vms_config(2, "64MiB", "256MiB"), 8).unwrap();
    assert!(sim.virt.as_ref().unwrap().contents.is_none());
    assert!(!sim.stats().keys().any(|k| k.starts_with("virt.contents")));
    // A native run refuses the key.
    let e = crate::config::parse_config("[workload]\nkind = \"gups\"\ncontents = \"shared\"\n", "native.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("workload.contents") && e.contains("virt.enabled"), "{e}");
}
