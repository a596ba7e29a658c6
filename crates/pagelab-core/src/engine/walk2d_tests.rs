//! The two-dimensional walk, worked by hand: reference counts without
//! caches and with each dimension's caches warm, where the references go,
//! when guest frames are backed, and that no cached entry outlives a guest
//! or host change.

use super::*;
use crate::engine::testutil::*;
use crate::hw::refs::RefTag;
use crate::hw::tlb::Tlb;
use crate::paging::pagetable::table_index;
use crate::phys::FrameOwner;
use crate::stat::Stats;
use crate::units::{Gfn, VirtAddr};
use crate::virt::VirtCosts;
use crate::workload::{Access, Batch, MapEvent};

/// A VM of 64 MiB on the test machine (256 MiB), every TLB hit checked.
pub(crate) fn virt_config(extra: &[&str]) -> SimConfig {
    let mut all = vec![
        "virt.enabled=true",
        "virt.guest_mem=\"64MiB\"",
        "os.thp.khugepaged=false",
        "virt.host.thp.khugepaged=false",
        "run.check_translations=true",
    ];
    all.extend_from_slice(extra);
    config(&all)
}

/// A machine where `pages` pages from `BASE` (in a 4 MiB VMA) were stored
/// to: all backed, their guest PTEs dirty.
pub(crate) fn touched(cfg: SimConfig, pages: u64) -> Simulation {
    simulate(cfg, vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, pages))]).unwrap()
}

/// A core's MMU and second-dimension hardware, cold, as `sim`'s machine
/// builds them.
pub(crate) struct Cold {
    pub(crate) mmu: Mmu,
    pub(crate) nested: NestedHw,
}

pub(crate) fn cold(sim: &Simulation) -> Cold {
    let cfg = sim.config();
    let m = &cfg.machine;
    let mmu = Mmu {
        tlb: Tlb::with_extensions(&m.tlb, 1, crate::systems::tlb_extensions(sim.kernel.color_map(), false)),
        pwc: Pwc::new(&m.pwc, m.paging_levels, 1),
        l2_tlb_latency: 9.0,
        walk_latency: 1.0,
        check: true,
    };
    Cold { mmu, nested: NestedHw::new(&m.ept_pwc, &m.pwc, &m.nested_tlb, cfg.virt.ept_levels, 1, 1) }
}

/// Translates a load of `vaddr` (process 1) on `hw`; the references and
/// counters of that one translation.
pub(crate) fn translate(sim: &mut Simulation, hw: &mut Cold, vaddr: VirtAddr) -> (RefBuf, CoreStats) {
    access(sim, hw, vaddr, false)
}

/// [`translate`] of a load or, with `write`, a store.
pub(crate) fn access(sim: &mut Simulation, hw: &mut Cold, vaddr: VirtAddr, write: bool) -> (RefBuf, CoreStats) {
    let mut stats = CoreStats::default();
    let (frame, refs) = walk_once(sim, &mut hw.mmu, &mut hw.nested, &mut stats, vaddr, write);
    let virt = sim.virt.as_deref().unwrap();
    let expected = virt.hv.backing_of(0, guest_frame(&sim.kernel, vaddr)).unwrap().0;
    assert_eq!(frame, expected, "the combined translation is the guest's then the EPT's");
    assert_eq!(stats.walk_mem_refs as usize, refs.len());
    assert_eq!(stats.walk_guest_refs + stats.walk_host_refs, stats.walk_mem_refs);
    (refs, stats)
}

/// One translation of `vaddr` (process 1 of the first VM) on the given
/// hardware, counted into `stats`: the host frame and the references.
pub(crate) fn walk_once(
    sim: &mut Simulation,
    mmu: &mut Mmu,
    nested: &mut NestedHw,
    stats: &mut CoreStats,
    vaddr: VirtAddr,
    write: bool,
) -> (Pfn, RefBuf) {
    let virt = sim.virt.as_deref_mut().unwrap();
    let mut refs = RefBuf::default();
    let mut w = Walker2d {
        mmu,
        nested,
        guest: &mut sim.kernel,
        hv: &mut virt.hv,
        refs: &mut refs,
        stats,
        guest_asids: &virt.guest_asids[0],
        contents: None,
    };
    let frame = w.translate(Request { asid: 1, vaddr, write, instr: false }).unwrap();
    (frame, refs)
}

/// The guest frame the guest maps `vaddr` to (a software walk).
pub(crate) fn guest_frame(guest: &Kernel, vaddr: VirtAddr) -> Gfn {
    let m = guest.proc(1).aspace.pt.lookup(vaddr).unwrap();
    Gfn::of_guest_kernel(m.frame_of(vaddr))
}

fn tags(refs: &RefBuf) -> Vec<RefTag> {
    (0..refs.len()).map(|j| refs.tag(j)).collect()
}

/// One EPT translation of `gfn` through `nested`'s caches, the check mode
/// on (tests of a system's EPT leaves).
pub(crate) fn ept_translate(nested: &mut NestedHw, hv: &mut Hypervisor, gfn: Gfn, write: bool) -> Option<NestedHit> {
    let (mut refs, mut stats) = (RefBuf::default(), CoreStats::default());
    let mut ept = Ept { nested, hv, refs: &mut refs, stats: &mut stats, check: true };
    ept.translate(gfn, write).ok()
}

pub(crate) const NO_CACHES: [&str; 2] = ["machine.pwc.enabled=false", "machine.nested_tlb.entries=0"];

#[test]
fn with_no_caching_a_2d_walk_reads_24_19_19_and_15_entries() {
    // (g + 1)(h + 1) - 1: g guest levels, each preceded by an EPT walk of
    // its table's frame, then an EPT walk of the data's frame.
    for (guest, host, g, h) in
        [("base", "base", 4, 4), ("base", "thp", 4, 3), ("thp", "base", 3, 4), ("thp", "thp", 3, 3)]
    {
        let policies = [format!("os.policy=\"{guest}\""), format!("virt.host.policy=\"{host}\"")];
        let mut extra: Vec<&str> = policies.iter().map(String::as_str).collect();
        extra.extend(NO_CACHES);
        let mut sim = touched(virt_config(&extra), 8);
        let mut hw = cold(&sim);
        let (refs, stats) = translate(&mut sim, &mut hw, BASE.add(5 * 4096));
        let case = format!("guest {guest} on host {host}");
        assert_eq!(refs.len(), (g + 1) * (h + 1) - 1, "{case}");
        assert_eq!((stats.walks, stats.ept_violations, stats.dirty_assists), (1, 0, 0), "{case}");
        // h EPT entries, then the guest's entry, g times; then h EPT entries.
        let mut expected = Vec::new();
        for _ in 0..g {
            expected.extend(std::iter::repeat_n(RefTag::EptWalk, h));
            expected.push(RefTag::GuestWalk);
        }
        expected.extend(std::iter::repeat_n(RefTag::EptWalk, h));
        assert_eq!(tags(&refs), expected, "{case}");
    }
}

#[test]
fn the_first_references_are_the_ept_root_then_the_guest_root_at_its_host_address() {
    let mut sim = touched(virt_config(&NO_CACHES), 1);
    let mut hw = cold(&sim);
    let (refs, _) = translate(&mut sim, &mut hw, BASE);
    let hv = &sim.virt.as_ref().unwrap().hv;
    let guest_root = Gfn::of_guest_kernel(sim.kernel.proc(1).aspace.pt.root_frame());
    let ept_root = hv.ept(0).root_frame().addr().raw();
    assert_eq!(refs.get(0).0, ept_root + table_index(guest_root.addr().as_host_virt(), 4) as u64 * 8);
    let host_root = hv.backing_of(0, guest_root).unwrap().0.addr().raw();
    assert_eq!(refs.get(4).0, host_root + table_index(BASE, 4) as u64 * 8);
    // Every reference is host-physical: inside the host's memory.
    let host_bytes = sim.config().machine.phys_mem.bytes();
    assert!((0..refs.len()).all(|j| refs.get(j).0 < host_bytes));
}

#[test]
fn a_warm_guest_pde_cache_leaves_one_guest_entry_and_two_ept_walks() {
    // Guest PWC on; EPT caches and nested TLB off. The second page of the
    // same 2 MiB region: PDE hit -> EPT walk of the PTE page's frame (4),
    // the guest PTE (1), EPT walk of the data frame (4) = 9.
    let mut sim = touched(virt_config(&["machine.ept_pwc.enabled=false", "machine.nested_tlb.entries=0"]), 8);
    let mut hw = cold(&sim);
    let (first, _) = translate(&mut sim, &mut hw, BASE);
    assert_eq!(first.len(), 24, "cold");
    let (refs, stats) = translate(&mut sim, &mut hw, BASE.add(4096));
    assert_eq!(refs.len(), 9);
    assert_eq!((stats.walk_guest_refs, stats.walk_host_refs, stats.pwc_hits), (1, 8, 1));
}

#[test]
fn a_warm_ept_pde_cache_leaves_one_ept_entry_per_translated_frame() {
    // Guest PWC of no entries, nested TLB off, EPT PWC on. After one walk
    // the EPT PDE cache holds the EPT page tables of every 2 MiB of guest
    // memory the walk touched; a second page whose data frame lies in the
    // same 2 MiB of guest memory: 4 guest entries, each table's frame one
    // EPT PTE (4), the data's one (1) = 9.
    let mut sim = touched(
        virt_config(&[
            "machine.pwc.pde_entries=0",
            "machine.pwc.pdpt_entries=0",
            "machine.pwc.pml4_entries=0",
            "machine.nested_tlb.entries=0",
        ]),
        8,
    );
    let (a, b) = (BASE, BASE.add(4096));
    let (ga, gb) = (guest_frame(&sim.kernel, a), guest_frame(&sim.kernel, b));
    assert_eq!(ga.raw() >> 9, gb.raw() >> 9, "the two data frames share a 2 MiB region of guest memory");
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, a);
    let (refs, stats) = translate(&mut sim, &mut hw, b);
    assert_eq!(refs.len(), 9);
    assert_eq!((stats.walk_guest_refs, stats.walk_host_refs), (4, 5));
}

#[test]
fn a_warm_nested_tlb_skips_the_ept_walks_of_the_guest_tables() {
    // Nested TLB on (16 entries), every paging-structure cache off: the
    // guest's four tables hit the nested TLB, the new data frame walks
    // the EPT: 4 + 4 = 8. Then everything warm: guest PDE hit, the PTE
    // page's frame from the nested TLB, the PTE (1), and a third page's
    // data frame through the EPT PDE cache (1) = 2.
    let mut sim = touched(virt_config(&["machine.pwc.enabled=false"]), 8);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    let (refs, stats) = translate(&mut sim, &mut hw, BASE.add(4096));
    assert_eq!((refs.len(), stats.walk_guest_refs, stats.walk_host_refs), (8, 4, 4));
    assert_eq!(hw.nested.ntlb.stats().hits, 4);

    let mut sim = touched(virt_config(&[]), 8);
    let (ga, gc) = (guest_frame(&sim.kernel, BASE), guest_frame(&sim.kernel, BASE.add(2 * 4096)));
    assert_eq!(ga.raw() >> 9, gc.raw() >> 9, "the data frames share a 2 MiB region of guest memory");
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    translate(&mut sim, &mut hw, BASE.add(4096));
    let (refs, stats) = translate(&mut sim, &mut hw, BASE.add(2 * 4096));
    assert_eq!((refs.len(), stats.walk_guest_refs, stats.walk_host_refs), (2, 1, 1));
}

#[test]
fn a_guest_2m_page_on_host_4k_pages_splinters_in_the_tlb() {
    for (host, second_walks) in [("base", 1), ("thp", 0)] {
        let cfg = virt_config(&["os.policy=\"thp\"", &format!("virt.host.policy=\"{host}\"")]);
        let mut sim = touched(cfg, 1);
        let mut hw = cold(&sim);
        translate(&mut sim, &mut hw, BASE);
        let (_, stats) = translate(&mut sim, &mut hw, BASE.add(8 * 4096));
        assert_eq!(stats.walks, second_walks, "host {host}: another 4 KiB of the same guest 2 MiB page");
    }
}

/// Statistics of a run of `batches` on a virtualized machine.
fn run(extra: &[&str], batches: Vec<Batch>) -> Stats {
    simulate(virt_config(extra), batches).unwrap().stats()
}

fn get(s: &Stats, name: &str) -> u64 {
    s.get(name).unwrap_or_else(|| panic!("no statistic {name}")).as_f64() as u64
}

#[test]
fn zeroing_backs_what_a_guest_fault_allocated_and_first_touch_backs_at_the_walk() {
    // 16 stores to new pages, 4 KiB on 4 KiB. In use: 4 guest tables and
    // 16 data frames = 20 host faults. Zeroing: the root at boot, the
    // other 19 as the guest's faults allocate them; no walk meets one.
    // First touch: all 20 in walks: the first store's walk restarts for
    // the root, then (after the guest fault) for the PUD, PMD, PTE pages
    // and the data frame; each later store's for its data frame.
    let stores = || vec![batch(vec![mmap(BASE, 4 << 20)], stores(BASE, 16))];
    let z = run(&[], stores());
    assert_eq!(get(&z, "host.faults"), 20);
    assert_eq!((get(&z, "virt.ept_violations"), get(&z, "virt.ept_violations.walk")), (19, 0));
    let t = run(&["virt.backing=\"first-touch\""], stores());
    assert_eq!(get(&t, "host.faults"), 20);
    assert_eq!((get(&t, "virt.ept_violations"), get(&t, "virt.ept_violations.walk")), (20, 20));
    for s in [&z, &t] {
        assert_eq!(get(s, "virt.vm_exits"), get(s, "virt.ept_violations"));
        // Each EPT violation in a walk restarts it: one more walk.
        assert_eq!(get(s, "walks"), get(s, "dtlb.l2.misses") + get(s, "faults") + get(s, "virt.ept_violations.walk"));
        assert_eq!(get(s, "walk.mem_refs"), get(s, "walk.guest_refs") + get(s, "walk.host_refs"));
        assert_eq!(get(s, "host.mem.mapped.4k"), 20 * 4096);
        assert_eq!(get(s, "virt.guest_frames_untouched"), 0);
        let costs = VirtCosts::default();
        let per = costs.vm_exit + costs.ept_violation + crate::os::FaultCosts::default().base;
        assert_eq!(s["cycles.virt"].as_f64(), get(s, "virt.ept_violations") as f64 * per);
    }
}

#[test]
fn a_guest_huge_page_touched_once_leaves_511_frames_untouched_under_first_touch() {
    let s = run(
        &["os.policy=\"thp\"", "virt.backing=\"first-touch\""],
        vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 1))],
    );
    assert_eq!(get(&s, "mem.mapped.2m"), 2 << 20);
    assert_eq!(get(&s, "virt.guest_frames_untouched"), 511);
    let s = run(&["os.policy=\"thp\""], vec![batch(vec![mmap(BASE, 2 << 20)], stores(BASE, 1))]);
    assert_eq!(get(&s, "virt.guest_frames_untouched"), 0, "zeroing touched all 512");
}

/// The cross-layer invariants: every EPT leaf's host frames belong to its
/// VM's process at the guest frame they back (so a host frame backs at
/// most one guest frame), and no two leaves, of one VM or of two, share a
/// frame.
pub(crate) fn check_backing(sim: &Simulation) {
    let hv = &sim.virt.as_ref().unwrap().hv;
    let mut seen = std::collections::HashSet::new();
    for (vm, v) in hv.vms.iter().enumerate() {
        let end = VirtAddr::new(v.guest_frames << 12);
        for (va, m) in hv.ept(vm).leaves_in(VirtAddr::new(0), end) {
            for i in 0..m.size.nr_pages() {
                let frame = m.frame.add(i);
                assert!(seen.insert(frame), "host frame {frame} backs two guest frames");
                let gfn = va.vpn().raw() + i;
                let owner = hv.host.mem.owner(frame);
                assert_eq!(owner, FrameOwner::User { asid: v.host_asid, vpn: crate::units::Vpn::new(gfn) });
            }
        }
    }
}

#[test]
fn a_host_frame_backs_at_most_one_guest_frame_and_zeroing_leaves_none_untouched() {
    for policies in
        [["os.policy=\"base\"", "virt.host.policy=\"base\""], ["os.policy=\"thp\"", "virt.host.policy=\"thp\""]]
    {
        let mut extra = policies.to_vec();
        extra.extend(["workload.footprint=\"8MiB\"", "workload.accesses=20000", "workload.init=\"pages\""]);
        let mut sim = Simulation::new(virt_config(&extra)).unwrap();
        sim.run().unwrap();
        check_backing(&sim);
        assert_eq!(stat(&sim, "virt.guest_frames_untouched"), 0.0);
        assert!(stat(&sim, "walks") > 0.0);
    }
}

#[test]
fn a_host_discard_invalidates_the_combined_entries_and_the_next_access_backs_again() {
    let mut sim = touched(virt_config(&[]), 4);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    let gfn = guest_frame(&sim.kernel, BASE);
    let virt = sim.virt.as_deref_mut().unwrap();
    let old = virt.hv.backing_of(0, gfn).unwrap().0;
    virt.hv.discard(0, gfn, 1).unwrap();
    assert_eq!(virt.hv.backing_of(0, gfn), None);
    for change in virt.hv.drain_ept_changes() {
        hw.nested.invept(&mut hw.mmu, virt.hv.vms[0].host_asid, &virt.guest_asids[0], change);
    }
    // Without the INVEPT, the TLB's entry would be stale (check mode).
    let (_, stats) = translate(&mut sim, &mut hw, BASE);
    assert_eq!((stats.walks, stats.ept_violations, stats.ept_violations_walk), (2, 1, 1));
    let virt = sim.virt.as_ref().unwrap();
    assert!(virt.hv.backing_of(0, gfn).is_some(), "backed again (frame {old} was freed)");
}

#[test]
fn a_missing_invept_is_caught_by_the_check_mode() {
    let mut sim = touched(virt_config(&[]), 4);
    let mut hw = cold(&sim);
    translate(&mut sim, &mut hw, BASE);
    let gfn = guest_frame(&sim.kernel, BASE);
    let virt = sim.virt.as_deref_mut().unwrap();
    virt.hv.discard(0, gfn, 1).unwrap();
    // The host change is not applied: the TLB still maps BASE to the freed frame.
    let mut w = Walker2d {
        mmu: &mut hw.mmu,
        nested: &mut hw.nested,
        guest: &mut sim.kernel,
        hv: &mut virt.hv,
        refs: &mut RefBuf::default(),
        stats: &mut CoreStats::default(),
        guest_asids: &virt.guest_asids[0],
        contents: None,
    };
    let e = w.translate(Request { asid: 1, vaddr: BASE, write: false, instr: false }).unwrap_err().to_string();
    assert!(e.contains("stale translation"), "{e}");
}

#[test]
fn three_level_ept_walks_three_levels() {
    let mut sim =
        touched(virt_config(&["virt.ept_levels=3", "machine.pwc.enabled=false", "machine.nested_tlb.entries=0"]), 2);
    let mut hw = cold(&sim);
    let (refs, _) = translate(&mut sim, &mut hw, BASE);
    assert_eq!(refs.len(), 5 * 4 - 1);
}

#[test]
fn the_same_seed_gives_identical_virtualized_statistics() {
    let cfg = virt_config(&[
        "os.policy=\"thp\"",
        "virt.host.policy=\"thp\"",
        "workload.footprint=\"8MiB\"",
        "workload.accesses=5000",
    ]);
    let run = || {
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        sim.run().unwrap();
        format!("{:?}", sim.stats())
    };
    assert_eq!(run(), run());
}

/// Greedy ET in the guest (64 KiB ranges in the 4 MiB VMA) and the host
/// (32 MiB ranges of 2 MiB pages of guest memory) on the N1's TLBs.
const ELASTIC_BOTH: [&str; 6] = [
    "machine.preset=\"ampere-altra\"",
    "os.policy=\"elastic\"",
    "os.elastic.leshy=\"off\"",
    "virt.host.policy=\"elastic\"",
    "virt.host.elastic.leshy=\"off\"",
    "run.quantum=1",
];

/// One step of the churn the property tests apply to a 4 MiB VMA at
/// `BASE` in a VM (`run_churn`).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A load or store of a page of the 4 MiB VMA.
    Touch { page: u64, write: bool },
    /// The guest unmaps pages and maps them again (frames freed, the
    /// guest's shootdown, later faults).
    GuestRemap { page: u64, pages: u64 },
    /// The guest write-protects pages and makes them writable again.
    GuestProtect { page: u64, pages: u64 },
    /// The host discards guest frames (EPT entries removed, host huge
    /// pages split: an INVEPT).
    HostDiscard { gfn: u64, frames: u64 },
}

/// A step: mostly touches (weight `touch` against 1 for each change).
pub(crate) fn op(touch: u32) -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let change = |page: u64, pages: u64| (page, pages.min(1024 - page));
    prop_oneof![
        touch => (0..1024u64, any::<bool>()).prop_map(|(page, write)| Op::Touch { page, write }),
        1 => (0..1024u64, 1..600u64).prop_map(move |(p, n)| { let (page, pages) = change(p, n); Op::GuestRemap { page, pages } }),
        1 => (0..1024u64, 1..600u64).prop_map(move |(p, n)| { let (page, pages) = change(p, n); Op::GuestProtect { page, pages } }),
        1 => (0..16384u64, 1..600u64).prop_map(|(gfn, frames)| Op::HostDiscard { gfn, frames: frames.min(16384 - gfn) }),
    ]
}

/// Runs `ops` on a VM configured by `cfg` (which should check every
/// translation): one batch per touch with the guest's changes as events
/// before it, the host's discards between steps; then checks the backing.
pub(crate) fn run_churn(cfg: SimConfig, ops: &[Op]) {
    let mut batches = vec![batch(vec![mmap(BASE, 4 << 20)], vec![])];
    let mut host_ops = Vec::new();
    let mut events = Vec::new();
    for op in ops {
        match *op {
            Op::Touch { page, write } => {
                let at = BASE.add(page * 4096);
                let a = if write { Access::store(at, 8, 1) } else { Access::load(at, 8, 1) };
                batches.push(batch(std::mem::take(&mut events), vec![a]));
                host_ops.push(None);
            }
            Op::GuestRemap { page, pages } => {
                let (start, len) = (BASE.add(page * 4096), pages * 4096);
                events.push((0, MapEvent::Munmap { start, len }));
                events.push((0, MapEvent::Mmap { start, len, writable: true, name: "heap".into() }));
            }
            Op::GuestProtect { page, pages } => {
                let (start, len) = (BASE.add(page * 4096), pages * 4096);
                events.push((0, MapEvent::Mprotect { start, len, writable: false }));
                events.push((0, MapEvent::Mprotect { start, len, writable: true }));
            }
            Op::HostDiscard { gfn, frames } => host_ops.push(Some((gfn, frames))),
        }
    }
    let mut sim = Simulation::with_workloads(cfg, vec![Box::new(Script { batches })]).unwrap();
    for host_op in host_ops {
        if let Some((gfn, frames)) = host_op {
            sim.virt.as_deref_mut().unwrap().hv.discard(0, Gfn::new(gfn), frames).unwrap();
            sim.virt_round_end(0.0).unwrap();
        } else {
            sim.step(1).unwrap();
        }
    }
    sim.run().unwrap();
    check_backing(&sim);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// No stale combined entry, nested-TLB entry or paging-structure-cache
    /// entry survives any guest or host change: the check mode verifies
    /// every TLB hit against both tables and every cached EPT entry.
    #[test]
    fn no_stale_translation_survives_a_guest_or_host_change(
        guest_thp in proptest::prelude::any::<bool>(),
        host_thp in proptest::prelude::any::<bool>(),
        elastic in proptest::prelude::any::<bool>(),
        ops in proptest::collection::vec(op(6), 1..60),
    ) {
        let guest = if guest_thp { "os.policy=\"thp\"" } else { "os.policy=\"base\"" };
        let host = if host_thp { "virt.host.policy=\"thp\"" } else { "virt.host.policy=\"base\"" };
        // Or greedy Elastic Translations in both, on the N1 (contiguous
        // entries in both dimensions: `walk2d_contig`).
        let cfg = if elastic { virt_config(&ELASTIC_BOTH) } else { virt_config(&[guest, host, "run.quantum=1"]) };
        run_churn(cfg, &ops);
    }
}

/// The interval model times a virtualized run too: its 2D walks' references
/// are walk references in the window (serial within a walk), and its cycles
/// still add up, the VM's own included.
#[test]
fn under_the_interval_model_a_virtualized_run_keeps_the_cycle_identity() {
    for caches in ["true", "false"] {
        let enabled = format!("machine.cache.enabled={caches}");
        let common = ["workload.accesses=20000", "workload.footprint=\"32MiB\"", "machine.timing.model=\"interval\""];
        let mut native = Simulation::new(config(&[&common[..], &[&enabled]].concat())).unwrap();
        native.run().unwrap();
        let mut virt = Simulation::new(virt_config(&[&common[..], &[&enabled]].concat())).unwrap();
        virt.run().unwrap();
        let parts: f64 =
            ["cycles.base", "cycles.translation", "cycles.data", "cycles.faults", "cycles.daemon", "cycles.virt"]
                .iter()
                .map(|k| stat(&virt, k))
                .sum();
        let cycles = stat(&virt, "cycles");
        assert!((cycles - parts).abs() <= 1e-9 * cycles, "{cycles} vs {parts}");
        let (walk, translation) = (stat(&virt, "cycles.walk"), stat(&virt, "cycles.translation"));
        assert!(walk > 0.0 && walk <= translation, "walk {walk}, translation {translation}");
        // A 2D walk reads up to 24 entries where a native one reads 4.
        assert!(walk > stat(&native, "cycles.walk"), "caches {caches}: walk {walk} not above native");
    }
}

/// A VM exit during a translation (an EPT violation) serialises the window,
/// as a guest fault does; so do the INVEPTs that follow it.
#[test]
fn vm_exits_and_their_cycles_are_serialising_events_for_the_window() {
    use crate::engine::timing::window::FAULT;
    use crate::engine::{translation_flags, translation_marks};
    let before = translation_marks::<true>(&CoreStats::default());
    let mut exit = CoreStats { vm_exits: 1, cycles_virt: 1500.0, ..CoreStats::default() };
    assert_ne!(translation_flags(before, translation_marks::<true>(&exit)) & FAULT, 0);
    exit.vm_exits = 0;
    assert_ne!(translation_flags(before, translation_marks::<true>(&exit)) & FAULT, 0, "cycles without an exit");
    let hit = CoreStats { dtlb_l1_misses: 1, ..CoreStats::default() };
    assert_eq!(translation_flags(before, translation_marks::<true>(&hit)) & FAULT, 0);
}
