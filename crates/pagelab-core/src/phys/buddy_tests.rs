//! The buddy allocator worked by hand (splits, buddies, carving, claiming
//! and stealing pageblocks, a 1 TiB machine) and a property test of its
//! invariants over random operations.

use super::*;
use crate::units::Vpn;
use proptest::prelude::*;

const KERNEL: FrameOwner = FrameOwner::Kernel;

fn o(order: u8) -> Order {
    Order::new(order)
}

fn p(pfn: u64) -> Pfn {
    Pfn::new(pfn)
}

fn heads(mem: &PhysMem, order: u8) -> Vec<u64> {
    mem.free_blocks(o(order)).into_iter().map(Pfn::raw).collect()
}

#[test]
fn splitting_an_order_3_block_leaves_one_block_per_lower_order() {
    // Given 8 frames, i.e. one free order-3 block at pfn 0,
    let mut mem = PhysMem::new(8, 9).unwrap();
    assert_eq!(heads(&mem, 3), [0]);
    // when one frame is allocated, expand keeps pfn 0 and frees the
    // upper halves: 4..8 (order 2), 2..4 (order 1), 1 (order 0).
    assert_eq!(mem.alloc(o(0), Migratetype::Movable, KERNEL), Some(p(0)));
    assert_eq!(heads(&mem, 0), [1]);
    assert_eq!(heads(&mem, 1), [2]);
    assert_eq!(heads(&mem, 2), [4]);
    assert_eq!(heads(&mem, 3), [] as [u64; 0]);
    assert_eq!(mem.free_pages(), 7);
    mem.check_invariants().unwrap();
    // Freeing it merges all the way back.
    mem.free(p(0), o(0));
    assert_eq!(mem.free_blocks_per_order(), [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    mem.check_invariants().unwrap();
}

#[test]
fn buddy_of_pfn_8_at_order_1_is_10() {
    let mut mem = PhysMem::new(16, 9).unwrap();
    let pfns: Vec<u64> = (0..8).map(|_| mem.alloc(o(1), Migratetype::Movable, KERNEL).unwrap().raw()).collect();
    assert_eq!(pfns, [0, 2, 4, 6, 8, 10, 12, 14]);
    mem.free(p(10), o(1));
    assert_eq!(heads(&mem, 1), [10]);
    // 8 ^ (1 << 1) = 10 is free, so they merge into order 2 at 8; its
    // buddy 8 ^ 4 = 12 is taken, so merging stops there.
    mem.free(p(8), o(1));
    assert_eq!(heads(&mem, 1), [] as [u64; 0]);
    assert_eq!(heads(&mem, 2), [8]);
    mem.check_invariants().unwrap();
}

#[test]
fn odd_sizes_are_carved_into_aligned_blocks() {
    // 1000 = 512 + 256 + 128 + 64 + 32 + 8.
    let mem = PhysMem::new(1000, 9).unwrap();
    assert_eq!(mem.free_blocks_per_order(), [0, 0, 0, 1, 0, 1, 1, 1, 1, 1]);
    assert_eq!(heads(&mem, 3), [992]);
    assert_eq!(mem.nr_pageblocks(), 2);
    mem.check_invariants().unwrap();
    // 3000 = 2 * 1024 + 512 + 256 + 128 + 32 + 16 + 8 with max_order 10.
    let mem = PhysMem::new(3000, 10).unwrap();
    assert_eq!(mem.free_blocks_per_order(), [0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 2]);
    assert_eq!(mem.free_pages(), 3000);
    mem.check_invariants().unwrap();
}

#[test]
fn bad_sizes_and_orders_are_config_errors() {
    let key = |r: Result<PhysMem>| match r {
        Err(Error::Config { key, .. }) => key,
        other => panic!("expected a config error, got {other:?}"),
    };
    assert_eq!(key(PhysMem::new(0, 10)), MEMORY_SIZE_KEY);
    assert_eq!(key(PhysMem::new(MAX_FRAMES + 1, 10)), MEMORY_SIZE_KEY);
    assert_eq!(key(PhysMem::new(1024, 8)), MAX_ORDER_KEY);
    assert_eq!(key(PhysMem::new(1024, 19)), MAX_ORDER_KEY);
    assert!(PhysMem::new(1 << 20, 18).is_ok());
}

#[test]
fn user_blocks_record_consecutive_vpns() {
    let mut mem = PhysMem::new(64, 9).unwrap();
    let owner = FrameOwner::User { asid: 2, vpn: Vpn::new(100) };
    let pfn = mem.alloc(o(2), Migratetype::Movable, owner).unwrap();
    assert_eq!(mem.owner(pfn.add(3)), FrameOwner::User { asid: 2, vpn: Vpn::new(103) });
    mem.set_owner(pfn.add(1), FrameOwner::PageTable { asid: 2 });
    assert_eq!(mem.owner(pfn.add(1)), FrameOwner::PageTable { asid: 2 });
    assert!(!mem.is_free(pfn) && mem.is_free(pfn.add(4)));
    mem.free(pfn, o(2));
    assert_eq!(mem.owner(pfn.add(3)), FrameOwner::Free);
    assert_eq!(mem.stats().allocs, 1);
    assert_eq!(mem.stats().frees, 1);
}

#[test]
fn alloc_specific_splits_around_the_chosen_frame() {
    let mut mem = PhysMem::new(1024, 10).unwrap();
    assert!(mem.alloc_specific(p(5), o(0), KERNEL));
    // Splitting 0..1024 towards 5 frees 512 o9, 256 o8, ..., 8 o3, then
    // 0 o2 (5 is in the upper half 4..8), 6 o1, and 4 o0.
    assert_eq!(heads(&mem, 0), [4]);
    assert_eq!(heads(&mem, 1), [6]);
    assert_eq!(heads(&mem, 2), [0]);
    for order in 3..=9 {
        assert_eq!(heads(&mem, order), [1 << order]);
    }
    assert!(!mem.alloc_specific(p(5), o(0), KERNEL), "taken");
    assert!(!mem.alloc_specific(p(4), o(1), KERNEL), "half taken");
    assert!(!mem.alloc_specific(p(3), o(1), KERNEL), "misaligned");
    assert!(!mem.alloc_specific(p(1024), o(0), KERNEL), "outside memory");
    assert!(mem.alloc_specific(p(6), o(1), KERNEL));
    assert!(mem.alloc_specific(p(512), o(9), KERNEL));
    assert_eq!(mem.free_block_containing(p(100)), Some((p(64), o(6))));
    assert_eq!(mem.free_block_containing(p(5)), None);
    mem.check_invariants().unwrap();
}

#[test]
fn unmovable_request_claims_a_whole_free_block_and_relabels_it() {
    // Two order-10 blocks, all movable. An unmovable request finds no
    // unmovable block, falls back to the largest movable one (order 10,
    // claimable) and relabels both its pageblocks.
    let mut mem = PhysMem::new(2048, 10).unwrap();
    assert_eq!(mem.alloc(o(0), Migratetype::Unmovable, KERNEL), Some(p(0)));
    assert_eq!(mem.pageblock_migratetype(p(0)), Migratetype::Unmovable);
    assert_eq!(mem.pageblock_migratetype(p(512)), Migratetype::Unmovable);
    assert_eq!(mem.pageblock_migratetype(p(1024)), Migratetype::Movable);
    assert_eq!(mem.nr_free(o(9), Migratetype::Unmovable), 1);
    assert_eq!(mem.nr_free(o(10), Migratetype::Movable), 1);
    assert_eq!(mem.stats().fallbacks, 1);
    assert_eq!(mem.stats().steals, 2);
    // The next unmovable request is served from the claimed lists.
    assert_eq!(mem.alloc(o(0), Migratetype::Unmovable, KERNEL), Some(p(1)));
    assert_eq!(mem.stats().fallbacks, 1);
    mem.check_invariants().unwrap();
}

#[test]
fn unmovable_request_claims_a_mostly_free_pageblock() {
    // One pageblock with one movable frame at pfn 0 and 511 free frames.
    let mut mem = PhysMem::new(512, 9).unwrap();
    mem.alloc(o(0), Migratetype::Movable, FrameOwner::User { asid: 1, vpn: Vpn::new(0) });
    // The largest fallback block is 256 (order 8); the pageblock has
    // 511 free frames >= 256, so it is claimed and the request served
    // from the unmovable lists, lowest first: pfn 1.
    assert_eq!(mem.alloc(o(0), Migratetype::Unmovable, KERNEL), Some(p(1)));
    assert_eq!(mem.pageblock_migratetype(p(0)), Migratetype::Unmovable);
    assert_eq!(mem.nr_free(o(8), Migratetype::Unmovable), 1);
    assert_eq!(mem.nr_free(o(8), Migratetype::Movable), 0);
    assert_eq!((mem.stats().fallbacks, mem.stats().steals), (1, 1));
    mem.check_invariants().unwrap();
}

#[test]
fn small_movable_request_steals_without_claiming() {
    // One unmovable pageblock, 288 frames taken: free are 288 (o5),
    // 320 (o6), 384 (o7): 224 frames, less than half the pageblock.
    let mut mem = PhysMem::new(512, 9).unwrap();
    mem.set_pageblock_migratetype(p(0), Migratetype::Unmovable);
    assert_eq!(mem.alloc(o(8), Migratetype::Unmovable, KERNEL), Some(p(0)));
    assert_eq!(mem.alloc(o(5), Migratetype::Unmovable, KERNEL), Some(p(256)));
    // A movable order-0 request tries to claim from orders 7, 6, 5 (too
    // few free or movable frames), stops at order 3 (too small to
    // claim), then steals the smallest fallback block, 288 (o5).
    let user = FrameOwner::User { asid: 1, vpn: Vpn::new(0) };
    assert_eq!(mem.alloc(o(0), Migratetype::Movable, user), Some(p(288)));
    assert_eq!(mem.pageblock_migratetype(p(0)), Migratetype::Unmovable);
    assert_eq!((mem.stats().fallbacks, mem.stats().steals), (1, 0));
    // The leftovers of the split stay on the unmovable lists.
    assert_eq!(heads(&mem, 4), [304]);
    assert_eq!(mem.nr_free(o(4), Migratetype::Unmovable), 1);
    mem.check_invariants().unwrap();
}

#[test]
fn relabelling_a_pageblock_inside_a_larger_free_block_relabels_the_block() {
    let mut mem = PhysMem::new(1024, 10).unwrap();
    mem.set_pageblock_migratetype(p(600), Migratetype::Reclaimable);
    assert_eq!(mem.pageblock_migratetype(p(0)), Migratetype::Reclaimable);
    assert_eq!(mem.nr_free(o(10), Migratetype::Reclaimable), 1);
    mem.check_invariants().unwrap();
}

#[test]
fn merging_pageblocks_of_different_types_takes_the_freed_type() {
    let mut mem = PhysMem::new(1024, 10).unwrap();
    assert!(mem.alloc_specific(p(0), o(9), KERNEL));
    assert!(mem.alloc_specific(p(512), o(9), KERNEL));
    mem.set_pageblock_migratetype(p(512), Migratetype::Unmovable);
    mem.free(p(512), o(9));
    assert_eq!(mem.nr_free(o(9), Migratetype::Unmovable), 1);
    mem.free(p(0), o(9));
    assert_eq!(mem.nr_free(o(10), Migratetype::Movable), 1);
    assert_eq!(mem.pageblock_migratetype(p(512)), Migratetype::Movable);
    mem.check_invariants().unwrap();
}

#[test]
fn a_one_tib_machine_is_cheap_to_create() {
    let start = std::time::Instant::now();
    let mut mem = PhysMem::new(MAX_FRAMES, DEFAULT_MAX_ORDER).unwrap();
    assert_eq!(mem.nr_free(o(10), Migratetype::Movable), 1 << 18);
    let pfn = mem.alloc(o(9), Migratetype::Movable, KERNEL).unwrap();
    assert_eq!(pfn, p(0));
    assert!(mem.alloc_specific(p(MAX_FRAMES - 1), o(0), KERNEL));
    assert_eq!(mem.free_pages(), MAX_FRAMES - 513);
    let per_frame = mem.metadata_bytes() as f64 / MAX_FRAMES as f64;
    assert!(per_frame < 8.3, "{per_frame} bytes per frame");
    assert!(PhysMem::host_bytes(MAX_FRAMES) >= mem.metadata_bytes(), "the budget's estimate is a bound");
    // The owner array is lazily zeroed, so this is far below a second
    // (it would take seconds to touch 2 GiB).
    assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
}

#[derive(Debug, Clone)]
enum Op {
    Alloc(u8, usize),
    AllocSpecific(u64, u8),
    Free(usize),
    Relabel(u64, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..12, 0usize..3).prop_map(|(o, m)| Op::Alloc(o, m)),
        2 => (0u64..4096, 0u8..11).prop_map(|(p, o)| Op::AllocSpecific(p, o)),
        4 => any::<usize>().prop_map(Op::Free),
        1 => (0u64..4096, 0usize..3).prop_map(|(p, m)| Op::Relabel(p, m)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn random_operations_keep_the_invariants(
        nr_frames in 1u64..4096,
        max_order in 9u8..12,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut mem = PhysMem::new(nr_frames, max_order).unwrap();
        let mut taken: Vec<(Pfn, Order)> = Vec::new();
        for (i, op) in ops.into_iter().enumerate() {
            let owner = FrameOwner::User { asid: 1, vpn: Vpn::new(i as u64 * 4096) };
            match op {
                Op::Alloc(order, m) => {
                    if let Some(pfn) = mem.alloc(o(order), Migratetype::from_index(m), owner) {
                        taken.push((pfn, o(order)));
                    }
                }
                Op::AllocSpecific(pfn, order) => {
                    let pfn = p(pfn & !((1 << order) - 1));
                    let all_free = pfn.raw() + (1 << order) <= nr_frames
                        && (0..1 << order).all(|i| mem.is_free(pfn.add(i)));
                    let got = mem.alloc_specific(pfn, o(order), owner);
                    prop_assert_eq!(got, all_free && order <= max_order);
                    if got {
                        taken.push((pfn, o(order)));
                    }
                }
                Op::Free(i) if !taken.is_empty() => {
                    let (pfn, order) = taken.swap_remove(i % taken.len());
                    mem.free(pfn, order);
                }
                Op::Free(_) => {}
                Op::Relabel(pfn, m) => {
                    mem.set_pageblock_migratetype(p(pfn % nr_frames), Migratetype::from_index(m));
                }
            }
            prop_assert_eq!(mem.check_invariants(), Ok(()));
            let owned: u64 = taken.iter().map(|(_, o)| o.nr_pages()).sum();
            prop_assert_eq!(mem.free_pages(), nr_frames - owned);
        }
    }
}
