//! Perforated pages on a machine booted into a fragmentation snapshot
//! (`os.fragmentation.snapshot`): the paper's III-C kernel, which makes a
//! perforated page of a partly used pageblock whose used (pinned) frames
//! pass the rule, and the snapshot's page cache reclaimed for the rest.

use super::holes::{count, is_hole};
use super::pagetable::perforation_at;
use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};
use crate::engine::Simulation;
use crate::phys::FrameOwner;
use crate::units::Pfn;

const HUGE: u64 = 2 << 20;

/// Four pageblocks, none free: one Unmovable with a free order-4 block
/// (the process's page tables come from it), two Movable wholly used (the
/// page cache), one Reclaimable with free blocks of orders 8, 7, 2, 1 and
/// 0: 256 + 128 + 4 + 2 + 1 = 391 free, so 121 used (23.6%, under the
/// rule's 25%), all in the quarter the order-8 and order-7 blocks leave:
/// two 256 KiB parts, two filter bits.
const BOOTED: &str = "== /proc/pagetypeinfo
Free pages count per migrate type at order 0 1 2 3 4 5 6 7 8 9
Node 0, zone Normal, type Unmovable 0 0 0 0 1 0 0 0 0 0
Node 0, zone Normal, type Movable 0 0 0 0 0 0 0 0 0 0
Node 0, zone Normal, type Reclaimable 1 1 1 0 0 0 0 1 1 0
Number of blocks type Unmovable Movable Reclaimable
Node 0, zone Normal 1 2 1
";

/// One region of 2 MiB, every page stored to, on the booted 8 MiB machine.
fn booted(name: &str, extra: &[&str]) -> Simulation {
    let dir = std::env::temp_dir().join(format!("pagelab-booted-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("snap.txt");
    std::fs::write(&path, BOOTED).unwrap();
    let snapshot = format!("os.fragmentation.snapshot={:?}", path.to_str().unwrap());
    let mut all = vec![
        "machine.phys_mem=\"8MiB\"",
        "machine.max_order=9",
        "os.thp.khugepaged=false",
        "run.check_translations=true",
        &snapshot,
    ];
    all.extend_from_slice(extra);
    let sim = simulate(config(&all), vec![batch(vec![mmap(BASE, HUGE)], stores(BASE, 512))]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    sim
}

#[test]
fn a_partly_used_pageblock_under_the_rule_is_a_perforated_page_with_holes_at_its_used_frames() {
    let sim = booted("rule", &["os.policy=\"perforated\""]);
    assert_eq!(stat(&sim, "phys.snapshot_unplaced"), 0.0);
    assert_eq!((stat(&sim, "perforated.pages"), stat(&sim, "os.faults.perforated")), (1.0, 1.0));
    assert_eq!(stat(&sim, "mem.mapped.perforated"), HUGE as f64);
    let p = perforation_at(&sim.kernel.proc(1).aspace.pt, BASE).expect("a perforated page");
    // The Reclaimable pageblock is the region: its 121 used frames are the
    // holes, still the kernel's; the 391 free ones back the page in place.
    assert_eq!(count(&p.holes), 121);
    assert_eq!(p.filter.count_ones(), 2, "filter {:#010b}", p.filter);
    let frame = p.frame.raw();
    assert_eq!(frame % 512, 0);
    for i in 0..512u64 {
        let owner = sim.kernel.mem.owner(Pfn::new(frame + i));
        if is_hole(&p.holes, i as usize) {
            assert_eq!(owner, FrameOwner::Kernel, "hole {i}");
        } else {
            assert!(matches!(owner, FrameOwner::User { asid: 1, .. }), "page {i}: {owner:?}");
        }
    }
    // The holes are remapped (the program stores to every page): their
    // frames came from elsewhere, the last of them from the page cache
    // that reclaim freed, 32 frames at a time.
    assert_eq!(stat(&sim, "faults"), 1.0);
    let reclaimed = stat(&sim, "phys.reclaimed");
    assert!(reclaimed > 0.0 && reclaimed % 32.0 == 0.0 && reclaimed <= 128.0, "{reclaimed}");
}

#[test]
fn the_rule_refuses_the_same_pageblock_when_its_used_share_is_over_the_limit() {
    // 121 / 512 = 23.6% used: not under 20%.
    let sim = booted("refused", &["os.policy=\"perforated\"", "os.perforated.max_unmovable=0.2"]);
    assert_eq!(stat(&sim, "perforated.pages"), 0.0);
    // The Unmovable pageblock (496 used) and the Reclaimable one were
    // refused; the Movable ones have no free frame (not candidates).
    assert_eq!(stat(&sim, "os.perforated.declined"), 2.0);
    assert_eq!(stat(&sim, "faults"), 512.0);
    // A conventional kernel: the same 4 KiB pages.
    let thp = booted("thp", &["os.policy=\"thp\""]);
    assert_eq!((stat(&thp, "mem.mapped.2m"), stat(&thp, "faults")), (0.0, 512.0));
    assert_eq!(stat(&thp, "mem.mapped.4k"), stat(&sim, "mem.mapped.4k"));
}
