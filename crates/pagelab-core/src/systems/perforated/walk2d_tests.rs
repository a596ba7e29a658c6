//! A guest's perforated page in the 2D walk, worked by hand. As natively
//! (`systems/perforated/tests.rs`), one perforated page at BASE has holes
//! exactly at pages 70 and 100 (both in 256 KiB region 1), so its filter
//! is 0b10; the guest's page tables, its bitmap, its shadow table and the
//! whole 2 MiB guest frame are backed before the hand probes, which run
//! on a fresh MMU with every cache of both dimensions off (so each count
//! below is exact) and an L2 TLB latency of 9 cycles.

use crate::engine::mmu::Mmu;
use crate::engine::testutil::*;
use crate::engine::walk2d::tests::{walk_once, NO_CACHES};
use crate::engine::walk2d::NestedHw;
use crate::engine::{CoreStats, Simulation};
use crate::hw::pwc::Pwc;
use crate::hw::refs::RefTag;
use crate::hw::tlb::{Tlb, TlbLookup};
use crate::systems::perforated::holes::is_hole;
use crate::systems::perforated::pagetable::{perforation_at, Perforation};
use crate::systems::perforated::tests::holes_at_70_and_100;
use crate::units::{Gfn, PageSize, Pfn, VirtAddr};
use crate::workload::{Access, Batch, MapEvent};

pub(super) const HUGE: u64 = 2 << 20;
pub(super) const L2: f64 = 9.0;

fn perforated_guest(host: &str, extra: &[&str]) -> crate::config::SimConfig {
    let host = format!("virt.host.policy=\"{host}\"");
    let mut all = vec![
        "virt.enabled=true",
        "virt.guest_mem=\"64MiB\"",
        "virt.host.thp.khugepaged=false",
        "os.policy=\"perforated\"",
        "os.thp.khugepaged=false",
        "os.holes.portion=1.0",
        "os.holes.degree=0.01",
        "run.check_translations=true",
        &host,
    ];
    all.extend_from_slice(extra);
    config(&all)
}

pub(super) fn page(i: u64) -> VirtAddr {
    BASE.add(i * 4096)
}

/// The guest's perforated page at BASE with holes at 70 and 100 only,
/// over host `host` pages, with everything a probe reads backed.
fn known_page(host: &str, extra: &[&str]) -> (Simulation, Perforation) {
    let cfg = perforated_guest(host, extra);
    let mut sim = simulate(cfg, vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 1))]).unwrap();
    let p = holes_at_70_and_100(&mut sim.kernel);
    let (guest, virt) = guest_and_virt(&mut sim);
    let hv = &mut virt.hv;
    let mut back = |pfn: Pfn, n: u64| hv.back_range(0, Gfn::of_guest_kernel(pfn), n).unwrap();
    back(p.frame, 512);
    back(p.shadow.pfn(), 1);
    back(p.bitmap_line.pfn(), 1);
    for i in [70, 100] {
        back(guest.proc(1).aspace.pt.lookup(page(i)).unwrap().frame, 1);
    }
    drop(hv.drain_ept_changes());
    (sim, p)
}

/// A fresh core: TLBs, and the page-walk caches and nested TLB as the
/// configuration says.
pub(super) fn cold(sim: &Simulation) -> (Mmu, NestedHw) {
    let cfg = sim.config();
    let m = &cfg.machine;
    let mmu = Mmu {
        tlb: Tlb::with_extensions(&m.tlb, 1, crate::systems::tlb_extensions(sim.kernel.color_map(), true)),
        pwc: Pwc::new(&m.pwc, m.paging_levels, 1),
        l2_tlb_latency: L2,
        walk_latency: 0.0,
        check: true,
    };
    (mmu, NestedHw::new(&m.ept_pwc, &m.pwc, &m.nested_tlb, cfg.virt.ept_levels, 1, 1))
}

/// One core's fresh MMU and nested hardware ([`cold`]), for loads by
/// hand: the host frame, the references (address and tag) and the
/// translation cycles each took.
pub(super) struct Probe {
    pub(super) mmu: Mmu,
    pub(super) nested: NestedHw,
    pub(super) stats: CoreStats,
}

impl Probe {
    pub(super) fn new(sim: &Simulation) -> Self {
        let (mmu, nested) = cold(sim);
        Probe { mmu, nested, stats: CoreStats::default() }
    }

    pub(super) fn load(&mut self, sim: &mut Simulation, va: VirtAddr) -> (Pfn, Vec<(u64, RefTag)>, f64) {
        let before = self.stats.cycles_translation;
        let (frame, refs) = walk_once(sim, &mut self.mmu, &mut self.nested, &mut self.stats, va, false);
        let got = (0..refs.len()).map(|j| (refs.get(j).0, refs.tag(j))).collect();
        (frame, got, self.stats.cycles_translation - before)
    }

    pub(super) fn counters(&self) -> (u64, u64, u64, u64) {
        let c = self.mmu.tlb.extensions().perforated.counters;
        (c.filter_hits, c.bitmap_lookups, c.bitmap_refs, c.hole_walks)
    }
}

/// The host frame and EPT leaf size backing guest frame `pfn`.
fn host_of(sim: &Simulation, pfn: Pfn) -> (Pfn, PageSize) {
    virt_run(sim).hv.backing_of(0, Gfn::of_guest_kernel(pfn)).unwrap()
}

/// The guest frame the guest's table maps `va` to.
fn guest_frame(sim: &Simulation, va: VirtAddr) -> Pfn {
    sim.kernel.proc(1).aspace.pt.lookup(va).unwrap().frame
}

/// `n` EPT walks of `h` entries, each followed by one guest entry, then
/// `tail` more EPT entries.
fn tags(n: usize, h: usize, tail: usize) -> Vec<RefTag> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend(std::iter::repeat_n(RefTag::EptWalk, h));
        out.push(RefTag::GuestWalk);
    }
    out.extend(std::iter::repeat_n(RefTag::EptWalk, tail));
    out
}

fn tags_of(refs: &[(u64, RefTag)]) -> Vec<RefTag> {
    refs.iter().map(|r| r.1).collect()
}

#[test]
fn figure_5_row_by_row_in_two_dimensions_over_host_huge_pages() {
    let (mut sim, p) = known_page("thp", &NO_CACHES);
    // Every frame a probe translates has a 2 MiB EPT leaf: 3 EPT entries.
    let (host_frame, size) = host_of(&sim, p.frame);
    assert_eq!(size, PageSize::Size2M);
    let tables = sim.kernel.proc(1).aspace.pt.root_frame();
    assert_eq!(host_of(&sim, tables).1, PageSize::Size2M);
    let mut probe = Probe::new(&sim);
    // An L2 miss: three guest levels (PML4, PDPT, the perforated PMD),
    // each after the EPT walk of its table's frame, then the EPT walk of
    // the page's place in the 2 MiB frame: 3 x (3 + 1) + 3 = 15, as a 2 MiB
    // guest page on 2 MiB host pages. Page 0's region has no hole: the
    // filter answers; the combined entry is the host's 2 MiB frame.
    let (f, refs, cycles) = probe.load(&mut sim, page(0));
    assert_eq!((f, tags_of(&refs), cycles), (host_frame, tags(3, 3, 3), L2));
    assert_eq!(probe.counters(), (1, 0, 0, 0));
    assert!(
        matches!(probe.mmu.tlb.peek(crate::virt::hw_tag(1, 1), page(5), false), TlbLookup::L2(_)),
        "a 2 MiB combined entry"
    );
    // Row 1: an L2 hit the filter answers: no reference, one L2 access.
    let (f, refs, cycles) = probe.load(&mut sim, page(5));
    assert_eq!((f, refs, cycles), (host_frame.add(5), vec![], L2));
    assert_eq!(probe.counters(), (2, 0, 0, 0));
    // Row 4: region 1 may hold holes; the bitmap entry of pages 64..95 is
    // not in the L2: one reference to its bytes in the guest's bitmap
    // line, at the host address the register gives (no 2D translation), a
    // second L2 access; page 65 is no hole.
    let line = host_of(&sim, p.bitmap_line.pfn()).0.addr().raw() + (p.bitmap_line.raw() & 4095);
    let (f, refs, cycles) = probe.load(&mut sim, page(65));
    assert_eq!((f, refs, cycles), (host_frame.add(65), vec![(line + 8, RefTag::Walk)], 2.0 * L2));
    assert_eq!(probe.counters(), (2, 1, 1, 0));
    // Row 2: the bitmap entry is in the L2 now and says no hole.
    let (f, refs, cycles) = probe.load(&mut sim, page(66));
    assert_eq!((f, refs, cycles), (host_frame.add(66), vec![], 2.0 * L2));
    assert_eq!(probe.counters(), (2, 2, 1, 0));
    // Row 3: the bitmap in the L2 says hole: the hole walk reads the
    // shadow PMD entry and the hole's PTE, each after the EPT walk of its
    // table's frame, then walks the EPT for the hole's frame: 3 x 3 + 2 =
    // 11, the punched frame's host frame.
    let hole_70 = host_of(&sim, guest_frame(&sim, page(70))).0;
    let (f, refs, cycles) = probe.load(&mut sim, page(70));
    assert_eq!((f, tags_of(&refs), cycles), (hole_70, tags(2, 3, 3), 2.0 * L2));
    let shadow = host_of(&sim, p.shadow.pfn()).0.addr().raw() + (p.shadow.raw() & 4095);
    assert_eq!(refs[3].0, shadow, "the shadow PMD entry at its host address");
    assert_eq!(probe.counters(), (2, 3, 1, 1));
    // Row 5: page 100's bitmap entry (pages 96..127) is not in the L2:
    // the bitmap reference, then the hole walk: 1 + 11.
    let hole_100 = host_of(&sim, guest_frame(&sim, page(100))).0;
    let (f, refs, cycles) = probe.load(&mut sim, page(100));
    let mut expected = vec![RefTag::Walk];
    expected.extend(tags(2, 3, 3));
    assert_eq!((f, tags_of(&refs), cycles), (hole_100, expected, 2.0 * L2));
    assert_eq!(refs[0].0, line + 12);
    assert_eq!(probe.counters(), (2, 4, 2, 2));
    // The hole's entry went into the L1 too: a hit, nothing more.
    let (f, refs, cycles) = probe.load(&mut sim, page(70));
    assert_eq!((f, refs, cycles), (hole_70, vec![], 0.0));
    assert_eq!((probe.stats.walks, probe.stats.walk_mem_refs), (1, 15 + 1 + 11 + 12));
}

/// Delivers the guest's queued shootdowns to `probe`'s MMU, tagged with
/// the VM (VPID 1), as the engine does.
fn deliver(sim: &mut Simulation, probe: &mut Probe) {
    for s in sim.kernel.drain_shootdowns() {
        probe.mmu.shoot_down(&crate::os::Shootdown { asid: crate::virt::hw_tag(1, s.asid), ..s });
    }
}

#[test]
fn a_guest_punch_or_patch_shoots_down_the_sub_page_its_bitmap_entry_and_the_perforated_entry_in_the_vm() {
    let (mut sim, p) = known_page("thp", &NO_CACHES);
    let host_frame = host_of(&sim, p.frame).0;
    let mut probe = Probe::new(&sim);
    for i in [0, 66, 70] {
        probe.load(&mut sim, page(i));
    }
    // Punch page 66 (its L1 entry and the bitmap entry of pages 64..95
    // are cached): the shootdown of the sub-page drops them and the
    // perforated entry over it, as natively. The next access walks again
    // (15), reads the new bitmap (1) and walks to the hole (11): the
    // copy's host frame, not the 2 MiB frame's.
    let copy = crate::systems::perforated::punch(&mut sim.kernel, 1, page(66)).unwrap();
    virt_run_mut(&mut sim).hv.back_range(0, Gfn::of_guest_kernel(copy), 1).unwrap();
    deliver(&mut sim, &mut probe);
    let (f, refs, _) = probe.load(&mut sim, page(66));
    assert_eq!((f, refs.len(), probe.stats.walks), (host_of(&sim, copy).0, 15 + 1 + 11, 2));
    assert_ne!(f, host_frame.add(66));
    // Patch page 70 (its hole entry is in both TLBs): walk (15), the
    // bitmap again (1), and the 2 MiB frame translates it.
    crate::systems::perforated::patch(&mut sim.kernel, 1, page(70)).unwrap();
    deliver(&mut sim, &mut probe);
    let (f, refs, _) = probe.load(&mut sim, page(70));
    assert_eq!((f, refs.len(), probe.stats.walks), (host_frame.add(70), 15 + 1, 3));
    // Page 5 (region 0) hits the perforated entry the walk cached.
    let (f, refs, _) = probe.load(&mut sim, page(5));
    assert_eq!((f, refs.len(), probe.stats.walks), (host_frame.add(5), 0, 3));
}

#[test]
fn over_host_4k_pages_a_perforated_page_splinters_into_4k_entries() {
    let (mut sim, p) = known_page("base", &NO_CACHES);
    assert_eq!(host_of(&sim, p.frame).1, PageSize::Size4K);
    let mut probe = Probe::new(&sim);
    // 3 x (4 + 1) guest levels + 4 for the page's place = 19; a 4 KiB entry,
    // so the next page of the region walks again.
    for (n, i) in [(1, 0), (2, 5)] {
        let (f, refs, _) = probe.load(&mut sim, page(i));
        assert_eq!((f, tags_of(&refs)), (host_of(&sim, p.frame.add(i)).0, tags(3, 4, 4)));
        assert_eq!(probe.stats.walks, n);
    }
    // Region 1 may hold holes: the walker reads the guest bitmap itself
    // (one reference; no L2 bitmap entry, no second L2 access): 19 + 1.
    let (f, refs, cycles) = probe.load(&mut sim, page(65));
    let mut expected = tags(3, 4, 4);
    expected.push(RefTag::Walk);
    assert_eq!((f, tags_of(&refs), cycles), (host_of(&sim, p.frame.add(65)).0, expected, L2));
    // A hole: the same, then the hole walk: 19 + 1 + (4 + 1) x 2 + 4 = 34.
    let (f, refs, _) = probe.load(&mut sim, page(70));
    let mut expected = tags(3, 4, 4);
    expected.push(RefTag::Walk);
    expected.extend(tags(2, 4, 4));
    assert_eq!((f, tags_of(&refs)), (host_of(&sim, guest_frame(&sim, page(70))).0, expected));
    // No combined perforated entry, so no filter hit nor L2 bitmap lookup.
    assert_eq!(probe.counters(), (0, 0, 2, 1));
}

/// A run of a perforated guest: the VMA, stores to every page, then
/// `events` and loads of every page again (but 600..608, unmapped).
fn run(host: &str, kind: &str, events: Vec<(u32, MapEvent)>) -> Simulation {
    let loads: Vec<Access> =
        (0..1024).filter(|i| !(600..608).contains(i)).map(|i| Access::load(page(i), 8, 1)).collect();
    let batches: Vec<Batch> =
        vec![batch(vec![mmap(BASE, 2 * HUGE)], stores(BASE, 1024)), batch(events, loads.clone()), batch(vec![], loads)];
    let kind = format!("os.holes.kind=\"{kind}\"");
    simulate(perforated_guest(host, &["os.holes.degree=0.1", &kind]), batches).unwrap()
}

#[test]
fn guest_punches_and_host_changes_leave_no_stale_combined_entry() {
    // mprotect and munmap of part of a perforated page punch holes in the
    // guest (a shootdown of the sub-pages, tagged with the VM); every TLB
    // hit after them is checked against both tables. Unallocated holes
    // fault in the guest when the stores reach them (a hole walk that
    // finds no PTE, then the guest's fault and a walk again).
    for (host, kind) in [("thp", "allocated"), ("base", "allocated"), ("thp", "unallocated")] {
        let protect = (0, MapEvent::Mprotect { start: page(64), len: 4 * 4096, writable: false });
        let unmap = (0, MapEvent::Munmap { start: page(600), len: 8 * 4096 });
        let sim = run(host, kind, vec![protect, unmap]);
        let pt = &sim.kernel.proc(1).aspace.pt;
        assert!((64..68).all(|i| is_hole(&perforation_at(pt, BASE).unwrap().holes, i)), "host {host}");
        assert!(stat(&sim, "perforated.hole_walks") > 0.0, "host {host}");
        assert!(stat(&sim, "perforated.pages") >= 1.0, "host {host}");
    }
    // A host change under the perforated pages: the host discards every
    // frame of the guest's 2 MiB frames between the two passes (an
    // INVEPT); the next pass backs them again and translates right.
    let mut sim = Simulation::with_workloads(
        perforated_guest("thp", &["os.holes.degree=0.1", "run.quantum=64"]),
        vec![Box::new(Script {
            batches: vec![
                batch(vec![mmap(BASE, 2 * HUGE)], stores(BASE, 1024)),
                batch(vec![], (0..1024).map(|i| Access::load(page(i), 8, 1)).collect()),
            ],
        })],
    )
    .unwrap();
    sim.step(1024).unwrap();
    let frame = perforation_at(&sim.kernel.proc(1).aspace.pt, BASE).expect("a perforated page").frame;
    let virt = virt_run_mut(&mut sim);
    virt.hv.discard(0, Gfn::of_guest_kernel(frame), 512).unwrap();
    sim.virt_round_end(0.0).unwrap();
    sim.run().unwrap();
    assert!(stat(&sim, "virt.ept_violations") > 0.0);
    assert!(stat(&sim, "perforated.filter_hits") > 0.0);
}

#[test]
fn the_host_may_be_perforated() {
    let text = "[machine]\nphys_mem = \"256MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let sets = ["virt.enabled=true".to_string(), "virt.host.policy=\"perforated\"".to_string()];
    crate::config::parse_config(text, "t.toml", &sets).unwrap();
}
