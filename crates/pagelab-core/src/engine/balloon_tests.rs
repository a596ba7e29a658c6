//! Ballooning worked by hand: two VMs on a host too small for both, and
//! the invariants of both layers after an inflation.

use std::collections::HashSet;

use crate::config::parse_config;
use crate::engine::testutil::{batch, mmap, stores, Script, BASE};
use crate::engine::Simulation;
use crate::error::Result;
use crate::units::{Gfn, PageSize, Pfn, VirtAddr};
use crate::virt::balloon::Inflation;
use crate::workload::{Access, MapEvent, Workload};

const MIB32: u64 = 32 << 20;
const PAGES32: u64 = MIB32 / 4096;
/// Where each VM keeps one page it loads while the other works.
const OTHER: VirtAddr = VirtAddr::new(0x7e00_0000_0000);

/// Two VMs of 48 MiB on a 64 MiB host, 4 KiB pages in both layers, every
/// TLB hit checked; `extra` adds keys.
fn two_vms(extra: &str) -> String {
    let mut text = format!(
        "[machine]\nphys_mem = \"64MiB\"\n[virt]\nenabled = true\n[virt.host]\npolicy = \"base\"\n{extra}\n\
         [run]\ncheck_translations = true\n"
    );
    for _ in 0..2 {
        text += "[[vms]]\nguest_mem = \"48MiB\"\n[vms.os]\npolicy = \"base\"\n\
                 [vms.workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ninit = \"none\"\n";
    }
    text
}

fn loads(at: VirtAddr, n: usize) -> Vec<Access> {
    (0..n).map(|_| Access::load(at, 8, 1)).collect()
}

/// VM 1 stores to 32 MiB, frees it (its guest keeps the frames, the host
/// still backs them), then loads one page. VM 2 loads one page for as long
/// as VM 1 works, then stores to 32 MiB.
fn scripts() -> Vec<Box<dyn Workload>> {
    let mut first = stores(BASE, PAGES32);
    first.extend(loads(OTHER, 20_000));
    let vm1 = batch(
        vec![
            mmap(BASE, MIB32),
            (PAGES32 as u32, MapEvent::Munmap { start: BASE, len: MIB32 }),
            (PAGES32 as u32, MapEvent::Mmap { start: OTHER, len: 4 << 20, writable: true, name: "other".into() }),
        ],
        first,
    );
    let mut second = loads(OTHER, 20_000);
    second.extend(stores(BASE, PAGES32));
    let vm2 = batch(vec![mmap(OTHER, 4 << 20), (20_000, mmap(BASE, MIB32).1)], second);
    [vm1, vm2].into_iter().map(|b| Box::new(Script { batches: vec![b] }) as Box<dyn Workload>).collect()
}

/// Runs the two VMs; after `before` accesses (VM 1 done with its 32 MiB,
/// VM 2 not yet started on its own), inflates VM 1's balloon by `balloon`
/// bytes when some.
fn run(balloon: u64) -> Result<(Simulation, Option<Inflation>)> {
    let cfg = parse_config(&two_vms(""), "balloon.toml", &[])?;
    let mut sim = Simulation::with_workloads(cfg, scripts())?;
    sim.step(2 * (PAGES32 + 2048))?;
    let before = free_but_backed(&sim);
    let tables = sim.virt.as_ref().unwrap().hv.ept(0).table_pages();
    let inflation = if balloon > 0 { Some(sim.inflate_balloon(0, balloon)?) } else { None };
    if let Some(inflation) = inflation {
        // The host frames freed: those of the balloon's frames the host
        // backed, and the EPT's page-table pages left empty.
        let hv = &sim.virt.as_ref().unwrap().hv;
        let backed_in_balloon = before.iter().filter(|&&g| hv.in_balloon(0, g)).count() as u64;
        assert_eq!(inflation.freed, backed_in_balloon + (tables - hv.ept(0).table_pages()));
        assert!(backed_in_balloon >= PAGES32 - 1024, "{backed_in_balloon} of the frames VM 1 freed");
    }
    sim.run()?;
    Ok((sim, inflation))
}

/// VM 1's guest frames free in the guest and backed by the host.
fn free_but_backed(sim: &Simulation) -> Vec<Gfn> {
    let (hv, guest) = (&sim.virt.as_ref().unwrap().hv, sim.guest(0));
    (0..guest.mem.nr_frames())
        .filter(|&f| guest.mem.owner(Pfn::new(f)) == crate::phys::FrameOwner::Free)
        .map(|f| Gfn::of_guest_kernel(Pfn::new(f)))
        .filter(|&g| hv.backing_of(0, g).is_some())
        .collect()
}

#[test]
fn vm_2_runs_only_because_vm_1s_balloon_gave_its_freed_memory_back() {
    let e = run(0).unwrap_err().to_string();
    assert!(e.contains("host memory exhausted") && e.contains("VM 2 (vms[1]"), "{e}");

    let (sim, inflation) = run(MIB32).unwrap();
    let inflation = inflation.unwrap();
    assert_eq!(inflation.pages, PAGES32, "VM 1's guest had 32 MiB free");
    let s = sim.stats();
    assert_eq!(s["balloon.pages"].as_f64(), PAGES32 as f64);
    assert_eq!(s["host.balloon.freed"].as_f64(), inflation.freed as f64);
    check_invariants(&sim);
}

/// A host frame backs at most one guest frame (no KSM here); no frame of
/// a balloon is backed; every guest frame in use is backed (zeroing
/// backing touched each when the guest allocated it).
fn check_invariants(sim: &Simulation) {
    let hv = &sim.virt.as_ref().unwrap().hv;
    let mut seen = HashSet::new();
    for vm in 0..2 {
        let frames = hv.vms[vm].guest_frames;
        for (va, m) in hv.ept(vm).leaves_in(VirtAddr::new(0), VirtAddr::new(frames << 12)) {
            assert_eq!(m.size, PageSize::Size4K);
            assert!(seen.insert(m.frame), "host frame {} backs two guest frames ({va})", m.frame);
            assert!(!hv.in_balloon(vm, Gfn::new(va.raw() >> 12)), "a balloon frame is backed");
        }
        assert_eq!(hv.untouched_guest_frames(vm, sim.guest(vm)), 0);
    }
    let balloon: Vec<Gfn> = (0..48 << 8).map(Gfn::new).filter(|&g| hv.in_balloon(0, g)).collect();
    assert_eq!(balloon.len() as u64, PAGES32);
    assert!(balloon.iter().all(|&g| hv.backing_of(0, g).is_none()));
}

#[test]
fn the_policy_inflates_each_balloon_to_its_target_at_its_time() {
    // At the end of the first round: VM 1 gives 8 MiB, VM 2 nothing. Its
    // guest frames were free and never touched: the host frees nothing.
    let text = two_vms("[virt.host.balloon]\ntargets = [\"8MiB\"]\ninflate_at_ms = 0.0\n");
    let cfg = parse_config(&text, "balloon.toml", &[]).unwrap();
    let few: Vec<Box<dyn Workload>> = (0..2)
        .map(|_| Box::new(Script { batches: vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, 4))] }) as _)
        .collect();
    let mut sim = Simulation::with_workloads(cfg, few).unwrap();
    sim.run().unwrap();
    let s = sim.stats();
    assert_eq!((s["balloon.pages"].as_f64(), s["host.balloon.freed"].as_f64()), (2048.0, 0.0));
    let hv = &sim.virt.as_ref().unwrap().hv;
    assert_eq!((hv.balloons.pages(0), hv.balloons.pages(1)), (2048, 0));
}

#[test]
fn balloon_keys_are_checked() {
    for (extra, key) in [
        ("[virt.host.balloon]\ntargets = [\"5000\"]\n", "virt.host.balloon.targets[0]"),
        ("[virt.host.balloon]\ninflate_at_ms = -1.0\n", "virt.host.balloon.inflate_at_ms"),
    ] {
        let e = parse_config(&two_vms(extra), "b.toml", &[]).and_then(|c| c.validate()).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
    let text = "[machine]\nphys_mem = \"64MiB\"\n[os.balloon]\ntargets = [\"4MiB\"]\n[workload]\nkind = \"gups\"\n";
    let e = parse_config(text, "b.toml", &[]).and_then(|c| c.validate()).unwrap_err().to_string();
    assert!(e.contains("os.balloon.targets"), "{e}");
}
