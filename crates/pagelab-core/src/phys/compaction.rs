//! Memory compaction (mm/compaction.c), as an explicit operation.
//!
//! Two scanners walk towards each other: the migrate scanner from the lowest
//! pageblock up, isolating movable (user) frames, and the free scanner from
//! the highest pageblock down, taking free frames as migration targets. Each
//! movable frame is moved to a target, so free frames gather at the bottom of
//! memory and merge into large blocks. Compaction stops when a free block of
//! the requested order exists (`compact_finished`) or the scanners meet.
//!
//! Moving a page needs its page table and a TLB shootdown, which live in
//! higher layers; this layer only calls a closure `migrate(old, new, owner)`
//! that does that and answers whether the page could move (false for a
//! pinned page, which then stays). The closure cannot reach the `PhysMem`
//! (compaction holds it), so it must not allocate physical memory.
//!
//! Frames move one at a time. A user frame that is part of a larger mapping
//! (a 2 MiB THP) is moved like any other if the closure accepts, which
//! splits the mapping: a caller that cannot split should refuse such frames.
//!
//! Differences from Linux: one synchronous pass over the whole machine
//! (like writing to /proc/sys/vm/compact_memory, no deferral, no skip
//! bits, no async mode); the migrate scanner looks at every pageblock
//! whatever its type (sync compaction does), the free scanner only at
//! MOVABLE pageblocks that are not already wholly free
//! (`suitable_migration_target`).

use super::buddy::PhysMem;
use super::frame::{packed_is_movable, FrameOwner};
use super::migratetype::{Migratetype, PAGEBLOCK_NR_PAGES};
use crate::units::{Order, Pfn};

/// What one compaction run did (compare /proc/vmstat `compact_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct CompactionStats {
    /// Frames looked at by the migrate scanner (`compact_migrate_scanned`).
    pub pages_scanned: u64,
    /// Frames moved, i.e. 4 KiB copies made.
    pub pages_migrated: u64,
    /// Movable frames the closure refused to move.
    pub migrate_failed: u64,
    /// Frames looked at by the free scanner (`compact_free_scanned`).
    pub free_scanned: u64,
    /// A free block of the requested order exists at the end.
    pub success: bool,
}

/// Compacts `mem` until a free block of `order` exists or the scanners meet.
/// `migrate(old, new, owner)` moves the page of frame `old` to the free frame
/// `new` (already given `owner`) and returns whether it did; on success the
/// old frame is freed, otherwise the new one is.
pub fn compact(
    mem: &mut PhysMem,
    order: Order,
    mut migrate: impl FnMut(Pfn, Pfn, FrameOwner) -> bool,
) -> CompactionStats {
    let mut stats = CompactionStats { success: compact_finished(mem, order), ..Default::default() };
    let mut free_scanner = FreeScanner::new(mem);
    for migrate_pb in 0..mem.nr_pageblocks() {
        if stats.success || free_scanner.pb <= migrate_pb {
            break;
        }
        if mem.pageblock_is_free(migrate_pb) {
            continue;
        }
        let end = ((migrate_pb + 1) * PAGEBLOCK_NR_PAGES).min(mem.nr_frames());
        for pfn in migrate_pb * PAGEBLOCK_NR_PAGES..end {
            stats.pages_scanned += 1;
            if !packed_is_movable(mem.packed_owner(pfn)) {
                continue;
            }
            let Some(target) = free_scanner.next(mem, migrate_pb, &mut stats) else {
                mem.debug_check_invariants();
                return stats; // the scanners met
            };
            if migrate_one(mem, pfn, target, &mut migrate) {
                free_scanner.consume();
                stats.pages_migrated += 1;
                if compact_finished(mem, order) {
                    stats.success = true;
                    break;
                }
            } else {
                stats.migrate_failed += 1;
            }
        }
    }
    mem.debug_check_invariants();
    stats
}

/// Moves frame `old` to the free frame `new` through the caller's closure.
fn migrate_one(mem: &mut PhysMem, old: u64, new: u64, migrate: &mut impl FnMut(Pfn, Pfn, FrameOwner) -> bool) -> bool {
    let (old, new) = (Pfn::new(old), Pfn::new(new));
    let owner = mem.owner(old);
    let taken = mem.alloc_specific(new, Order::BASE, owner);
    debug_assert!(taken, "free scanner returned a taken frame {new:?}");
    if migrate(old, new, owner) {
        mem.free(old, Order::BASE);
        true
    } else {
        mem.free(new, Order::BASE);
        false
    }
}

/// `compact_finished`: a request of `order` would now succeed. With this
/// allocator that is any free block of `order` or more, of any type, since
/// fallback takes blocks of every type.
fn compact_finished(mem: &PhysMem, order: Order) -> bool {
    mem.free_pages_at_or_above(order) > 0
}

/// The free scanner: a cursor moving down from the top of memory.
#[derive(Debug)]
struct FreeScanner {
    /// Pageblock being scanned.
    pb: u64,
    /// Next frame to look at, if this pageblock is suitable.
    cursor: Option<u64>,
}

impl FreeScanner {
    fn new(mem: &PhysMem) -> Self {
        let pb = mem.nr_pageblocks() - 1;
        FreeScanner { pb, cursor: Self::start_of_scan(mem, pb) }
    }

    /// Top frame of pageblock `pb` if it may give targets
    /// (`suitable_migration_target`): MOVABLE and not wholly free, so the
    /// scanner never breaks up a free 2 MiB block.
    fn start_of_scan(mem: &PhysMem, pb: u64) -> Option<u64> {
        let first = pb * PAGEBLOCK_NR_PAGES;
        let suitable = mem.pageblock_migratetype(Pfn::new(first)) == Migratetype::Movable && !mem.pageblock_is_free(pb);
        suitable.then(|| ((pb + 1) * PAGEBLOCK_NR_PAGES).min(mem.nr_frames()) - 1)
    }

    /// The next free frame above pageblock `migrate_pb`, highest first. The
    /// cursor stays on it until [`FreeScanner::consume`], so a frame handed
    /// back after a failed migration is offered again.
    fn next(&mut self, mem: &PhysMem, migrate_pb: u64, stats: &mut CompactionStats) -> Option<u64> {
        while self.pb > migrate_pb {
            if let Some(cursor) = self.cursor {
                let first = self.pb * PAGEBLOCK_NR_PAGES;
                for pfn in (first..=cursor).rev() {
                    stats.free_scanned += 1;
                    if mem.is_free(Pfn::new(pfn)) {
                        self.cursor = Some(pfn);
                        return Some(pfn);
                    }
                }
            }
            self.pb -= 1;
            self.cursor = Self::start_of_scan(mem, self.pb);
        }
        None
    }

    /// The frame last returned by `next` was used: step below it.
    fn consume(&mut self) {
        let first = self.pb * PAGEBLOCK_NR_PAGES;
        self.cursor = self.cursor.filter(|&c| c > first).map(|c| c - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Vpn;

    fn user(vpn: u64) -> FrameOwner {
        FrameOwner::User { asid: 1, vpn: Vpn::new(vpn) }
    }

    /// 4 pageblocks: user frames 0..10 in the first, and one user frame in
    /// each of the others, so no 2 MiB block is free.
    fn scattered_machine() -> PhysMem {
        let mut mem = PhysMem::new(2048, 10).unwrap();
        for pfn in 0..10 {
            assert!(mem.alloc_specific(Pfn::new(pfn), Order::BASE, user(pfn)));
        }
        for pfn in [612, 1029, 1543] {
            assert!(mem.alloc_specific(Pfn::new(pfn), Order::BASE, user(pfn)));
        }
        assert_eq!(mem.free_pages_at_or_above(Order::PMD), 0);
        mem
    }

    #[test]
    fn compaction_empties_the_lowest_pageblock_into_the_top() {
        let mut mem = scattered_machine();
        let mut moves = Vec::new();
        let stats = compact(&mut mem, Order::PMD, |old, new, owner| {
            moves.push((old.raw(), new.raw(), owner));
            true
        });
        // Frames 0..10 go to 2047, 2046, ..., 2038; then pageblock 0 is free
        // and merges into an order-9 block at pfn 0.
        let expected: Vec<_> = (0..10).map(|i| (i, 2047 - i, user(i))).collect();
        assert_eq!(moves, expected);
        assert_eq!(
            stats,
            CompactionStats {
                pages_scanned: 10,
                pages_migrated: 10,
                migrate_failed: 0,
                free_scanned: 10,
                success: true
            }
        );
        assert_eq!(mem.free_blocks(Order::PMD), [Pfn::new(0)]);
        assert_eq!(mem.owner(Pfn::new(2040)), user(7));
        mem.check_invariants().unwrap();
    }

    #[test]
    fn a_pinned_page_stays_and_compaction_moves_on() {
        let mut mem = scattered_machine();
        let stats = compact(&mut mem, Order::PMD, |_, _, owner| owner != user(3));
        // Frame 3 refuses, so pageblock 0 stays busy; pageblock 1 (one user
        // frame at 612) is emptied next. Frame 3's target 2044 was handed
        // back and reused, so 612 lands on 2038.
        assert_eq!(stats.pages_migrated, 10);
        assert_eq!(stats.migrate_failed, 1);
        assert_eq!(stats.pages_scanned, 512 + 101);
        assert!(stats.success);
        assert_eq!(mem.owner(Pfn::new(3)), user(3));
        assert_eq!(mem.owner(Pfn::new(2038)), user(612));
        assert_eq!(mem.free_blocks(Order::PMD), [Pfn::new(512)]);
        mem.check_invariants().unwrap();
    }

    #[test]
    fn scanners_meet_when_there_is_no_room() {
        // Two pageblocks, each with 300 user frames: pageblock 1 has only
        // 212 free frames to give, so 212 frames move and compaction fails.
        let mut mem = PhysMem::new(1024, 10).unwrap();
        for pfn in (0..300).chain(512..812) {
            assert!(mem.alloc_specific(Pfn::new(pfn), Order::BASE, user(pfn)));
        }
        let stats = compact(&mut mem, Order::PMD, |_, _, _| true);
        assert!(!stats.success);
        assert_eq!(stats.pages_migrated, 212);
        assert_eq!(mem.free_pages(), 1024 - 600);
        assert!((812..1024).all(|pfn| !mem.is_free(Pfn::new(pfn))));
        mem.check_invariants().unwrap();
    }

    #[test]
    fn unmovable_frames_and_free_blocks_are_left_alone() {
        let mut mem = scattered_machine();
        // A kernel frame cannot move; a request already satisfiable does
        // nothing.
        assert!(mem.alloc_specific(Pfn::new(20), Order::BASE, FrameOwner::Kernel));
        let stats = compact(&mut mem, Order::new(3), |_, _, _| panic!("nothing to do"));
        assert_eq!(stats, CompactionStats { success: true, ..Default::default() });
        let stats = compact(&mut mem, Order::PMD, |_, _, _| true);
        // Pageblock 0 keeps the kernel frame, pageblock 1 is emptied.
        assert!(stats.success);
        assert_eq!(mem.owner(Pfn::new(20)), FrameOwner::Kernel);
        assert_eq!(mem.free_blocks(Order::PMD), [Pfn::new(512)]);
        mem.check_invariants().unwrap();
    }
}
