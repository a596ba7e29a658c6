//! The buddy allocator (mm/page_alloc.c), over frames whose owners are known.
//!
//! Memory is a run of 4 KiB frames cut into aligned power-of-two blocks. A
//! request of order k takes the lowest free block of order >= k on the list
//! of its migratetype and splits it (`expand`), returning the upper halves to
//! the free lists; a freed block merges with its buddy while the buddy is
//! free (`__free_one_page`). The buddy of pfn p at order k is p ^ (1 << k):
//! the buddy of pfn 8 at order 1 is 8 ^ 2 = 10.
//!
//! Every free block is on the list of its pageblock's migratetype, as in
//! Linux since 6.10 (`move_freepages_block` moves a pageblock's free blocks
//! when the pageblock changes type). Free blocks larger than a pageblock have
//! all their pageblocks of one type.
//!
//! Memory cost: one packed [`FrameOwner`] (8 bytes) per frame, plus the free
//! lists as bitmaps (about 2 bits per frame for the heads of all orders, and
//! about 30 bits per pageblock of summaries), plus one byte per pageblock:
//! about 8.26 bytes per frame in all (see [`PhysMem::metadata_bytes`]).

use super::frame::{packed_is_movable, packed_nth, FrameOwner, PACKED_FREE};
use super::free_area::FreeArea;
use super::migratetype::{should_try_claim_block, Migratetype, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::error::{Error, Result};
use crate::units::{Order, Pfn};

/// Largest buddy order by default: 4 MiB blocks (Linux `MAX_PAGE_ORDER`).
pub const DEFAULT_MAX_ORDER: u8 = 10;
/// Smallest allowed largest order: blocks must reach a pageblock.
pub const MIN_MAX_ORDER: u8 = PAGEBLOCK_ORDER;
/// Largest allowed largest order: 1 GiB blocks (13 gives the 32 MiB blocks
/// of Elastic Translations).
pub const MAX_MAX_ORDER: u8 = 18;
/// Most frames a machine may have: 1 TiB.
pub const MAX_FRAMES: u64 = 1 << 28;
/// Configuration key named when the memory size is out of range.
pub const MEMORY_SIZE_KEY: &str = "machine.phys_mem";
/// Configuration key named when the largest order is out of range.
pub const MAX_ORDER_KEY: &str = "machine.max_order";

/// Event counters of the allocator.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct Stats {
    /// Blocks allocated (by `alloc` and `alloc_specific`).
    pub allocs: u64,
    /// Blocks freed.
    pub frees: u64,
    /// Allocations served from a free block of another migratetype (Linux's
    /// `mm_page_alloc_extfrag` event).
    pub fallbacks: u64,
    /// Pageblocks claimed (relabelled) by a fallback.
    pub steals: u64,
}

/// Physical memory of one machine (or one guest): frames, their owners and
/// the buddy allocator's free lists.
#[derive(Debug, Clone)]
pub struct PhysMem {
    pub(super) nr_frames: u64,
    pub(super) max_order: u8,
    /// Packed [`FrameOwner`] of every frame; 0 = free.
    pub(super) owners: Vec<u64>,
    /// Migratetype of every pageblock (the last one may be partial).
    pub(super) pageblock_mt: Vec<Migratetype>,
    /// `free_area[order]`, orders 0..=max_order.
    pub(super) free_area: Vec<FreeArea>,
    pub(super) nr_free_pages: u64,
    stats: Stats,
    /// Free blocks of a fragmentation snapshot that [`snapshot::Snapshot::apply`]
    /// could not place (reported as `phys.snapshot_unplaced`).
    ///
    /// [`snapshot::Snapshot::apply`]: super::snapshot::Snapshot::apply
    snapshot_unplaced: u64,
    /// The frames a snapshot left in use in Movable pageblocks (its page
    /// cache), in the order reclaim frees them: the last first. Empty
    /// without a snapshot, so reclaim never runs then.
    page_cache: Vec<u64>,
    /// Frames freed by reclaim (`phys.reclaimed`).
    reclaimed: u64,
    /// The first pfn past each node (memory tier), ascending; one node ends
    /// at `nr_frames`. Node boundaries are multiples of the largest block,
    /// so no buddy block straddles two nodes.
    node_ends: Vec<u64>,
}

impl PhysMem {
    /// A machine of `nr_frames` frames, all free and all pageblocks MOVABLE,
    /// carved greedily into the largest aligned blocks (the size need not be
    /// a multiple of the largest block). `max_order` is the largest block
    /// order, 9..=18.
    pub fn new(nr_frames: u64, max_order: u8) -> Result<Self> {
        PhysMem::with_nodes(&[nr_frames], max_order)
    }

    /// A machine whose memory is `node_frames` nodes, in order from pfn 0
    /// (memory tiers: `phys::tiers`). Every node but the last is a whole
    /// number of the largest blocks. Allocation takes the first node that
    /// can serve a request, trying all of a node (its own migratetype, then
    /// the fallbacks) before the next, as Linux's zonelist walk does.
    pub fn with_nodes(node_frames: &[u64], max_order: u8) -> Result<Self> {
        let nr_frames: u64 = node_frames.iter().sum();
        let block = 1u64 << max_order.min(63);
        if let Some(i) = node_frames[..node_frames.len().saturating_sub(1)].iter().position(|&n| n % block != 0) {
            let msg = format!("node {i} is not a whole number of {}-frame blocks", block);
            return Err(Error::config(MEMORY_SIZE_KEY, msg));
        }
        if !(1..=MAX_FRAMES).contains(&nr_frames) {
            let msg = format!("{nr_frames} frames; the simulator takes 1 frame to 1 TiB (2^28 frames)");
            return Err(Error::config(MEMORY_SIZE_KEY, msg));
        }
        if !(MIN_MAX_ORDER..=MAX_MAX_ORDER).contains(&max_order) {
            let msg = format!("{max_order} is not in {MIN_MAX_ORDER}..={MAX_MAX_ORDER}");
            return Err(Error::config(MAX_ORDER_KEY, msg));
        }
        let nr_pageblocks = nr_frames.div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        let mut mem = PhysMem {
            nr_frames,
            max_order,
            owners: crate::hostmem::zeroed_vec(nr_frames as usize),
            pageblock_mt: vec![Migratetype::Movable; nr_pageblocks],
            free_area: (0..=max_order).map(|o| FreeArea::new(o, nr_frames)).collect(),
            nr_free_pages: 0,
            stats: Stats::default(),
            snapshot_unplaced: 0,
            page_cache: Vec::new(),
            reclaimed: 0,
            node_ends: node_frames
                .iter()
                .scan(0, |end, &n| {
                    *end += n;
                    Some(*end)
                })
                .collect(),
        };
        mem.carve_free_blocks();
        Ok(mem)
    }

    /// Puts all memory on the free lists as the largest aligned blocks that
    /// fit (what `memblock_free_all` achieves).
    fn carve_free_blocks(&mut self) {
        let mut pfn = 0u64;
        while pfn < self.nr_frames {
            let mut order = (pfn.trailing_zeros() as u8).min(self.max_order);
            while pfn + (1 << order) > self.nr_frames {
                order -= 1;
            }
            self.add_free(pfn, order);
            pfn += 1 << order;
        }
    }

    pub fn nr_frames(&self) -> u64 {
        self.nr_frames
    }

    /// Nodes (memory tiers): 1 unless built by [`PhysMem::with_nodes`].
    pub fn nr_nodes(&self) -> usize {
        self.node_ends.len()
    }

    /// The node of a frame.
    pub fn node_of(&self, pfn: Pfn) -> usize {
        self.node_ends.partition_point(|&end| end <= pfn.raw())
    }

    /// The frames `[start, end)` of node `node`.
    pub fn node_range(&self, node: usize) -> std::ops::Range<u64> {
        let start = if node == 0 { 0 } else { self.node_ends[node - 1] };
        start..self.node_ends[node]
    }

    /// Frames of node `node` that are not free (`mem.tier.NAME.pages`).
    pub fn used_pages_in_node(&self, node: usize) -> u64 {
        let range = self.node_range(node);
        self.owners[range.start as usize..range.end as usize].iter().filter(|&&o| o != PACKED_FREE).count() as u64
    }

    /// Free blocks of the snapshot applied at boot that found no place
    /// (0 without a snapshot).
    pub fn snapshot_unplaced(&self) -> u64 {
        self.snapshot_unplaced
    }

    pub(super) fn set_snapshot_unplaced(&mut self, n: u64) {
        self.snapshot_unplaced = n;
    }

    /// Gives reclaim the snapshot's page cache: these frames, taken
    /// (owner `Kernel`), freed the last first when memory runs out.
    pub(super) fn set_page_cache(&mut self, frames: Vec<u64>) {
        debug_assert!(frames.iter().all(|&f| self.owners[f as usize] == FrameOwner::Kernel.pack()));
        self.page_cache = frames;
    }

    /// Frames of the snapshot's page cache not reclaimed yet.
    pub fn page_cache_left(&self) -> u64 {
        self.page_cache.len() as u64
    }

    /// Frames freed by reclaim since boot (0 without a snapshot).
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed
    }

    /// Frees up to `n` frames of the snapshot's page cache (shrink_lru's
    /// batch); returns how many it freed. A frame whose owner changed since
    /// the snapshot (a perforated page patched over it) is skipped.
    pub fn reclaim(&mut self, n: usize) -> u64 {
        let mut freed = 0;
        while freed < n as u64 {
            let Some(pfn) = self.page_cache.pop() else { break };
            if self.owners[pfn as usize] == FrameOwner::Kernel.pack() {
                self.free(Pfn::new(pfn), Order::BASE);
                freed += 1;
            }
        }
        self.reclaimed += freed;
        freed
    }

    /// Largest block order, as given to [`PhysMem::new`].
    pub fn max_order(&self) -> u8 {
        self.max_order
    }

    /// Pageblocks, counting a partial last one.
    pub fn nr_pageblocks(&self) -> u64 {
        self.pageblock_mt.len() as u64
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    // ---- free-list primitives -------------------------------------------

    /// Migratetype of the block headed by `pfn`: its pageblock's.
    #[inline]
    pub(super) fn block_mt(&self, pfn: u64) -> Migratetype {
        self.pageblock_mt[(pfn >> PAGEBLOCK_ORDER) as usize]
    }

    #[inline]
    fn add_free(&mut self, pfn: u64, order: u8) {
        let mt = self.block_mt(pfn);
        self.free_area[order as usize].add(pfn, mt);
        self.nr_free_pages += 1 << order;
    }

    #[inline]
    fn del_free(&mut self, pfn: u64, order: u8) {
        let mt = self.block_mt(pfn);
        self.free_area[order as usize].del(pfn, mt);
        self.nr_free_pages -= 1 << order;
    }

    /// `expand`: the free block at `pfn` of order `high`, already off the
    /// lists, is split down to order `low`; the upper halves go back on the
    /// lists and the lowest part (at `pfn`) is the caller's.
    #[inline]
    fn expand(&mut self, pfn: u64, low: u8, high: u8) {
        for order in (low..high).rev() {
            self.add_free(pfn + (1 << order), order);
        }
    }

    /// Sets the type of every pageblock of a block that is off the lists
    /// (`change_pageblock_range`).
    fn set_pageblock_range(&mut self, pfn: u64, order: u8, mt: Migratetype) {
        let first = (pfn >> PAGEBLOCK_ORDER) as usize;
        let count = 1usize << order.saturating_sub(PAGEBLOCK_ORDER);
        self.pageblock_mt[first..first + count].fill(mt);
    }

    /// `move_freepages_block` and `set_pageblock_migratetype` for a
    /// pageblock that is not inside a free block of pageblock order or more.
    fn move_pageblock(&mut self, pb: u64, to: Migratetype) {
        let from = self.pageblock_mt[pb as usize];
        if from == to {
            return;
        }
        for area in &mut self.free_area[..PAGEBLOCK_ORDER as usize] {
            area.move_pageblock(pb, from, to);
        }
        self.pageblock_mt[pb as usize] = to;
    }

    fn set_block_owner(&mut self, pfn: u64, order: u8, owner: FrameOwner) {
        debug_assert!(!owner.is_free(), "allocating to FrameOwner::Free");
        let first = owner.pack();
        let frames = &mut self.owners[pfn as usize..(pfn + (1 << order)) as usize];
        for (i, slot) in frames.iter_mut().enumerate() {
            *slot = packed_nth(first, i as u64);
        }
    }

    // ---- allocation ------------------------------------------------------

    /// Allocates a block of `order` for a request of migratetype `mt`
    /// (`__rmqueue`): the lowest free block of that type, else a fallback.
    /// Every frame of the block gets `owner` (a user owner's vpn grows by one
    /// per frame). `None` when no free block is large enough.
    pub fn alloc(&mut self, order: Order, mt: Migratetype, owner: FrameOwner) -> Option<Pfn> {
        let order = order.get();
        if order > self.max_order {
            return None;
        }
        let pfn = self.rmqueue(order, mt).or_else(|| self.reclaim_then_rmqueue(order, mt))?;
        self.set_block_owner(pfn, order, owner);
        self.stats.allocs += 1;
        Some(Pfn::new(pfn))
    }

    fn rmqueue(&mut self, order: u8, mt: Migratetype) -> Option<u64> {
        (0..self.node_ends.len()).find_map(|node| self.rmqueue_in(order, mt, self.node_ends[node]))
    }

    /// Direct reclaim when no frame is free: a batch of the snapshot's page
    /// cache at a time until a 4 KiB request is served. Only order 0: a
    /// 2 MiB request (THP's fault, `defrag = madvise`) falls back rather
    /// than stall, and frames freed in LRU order, scattered over memory,
    /// seldom merge into larger blocks.
    #[cold]
    fn reclaim_then_rmqueue(&mut self, order: u8, mt: Migratetype) -> Option<u64> {
        const BATCH: usize = 32; // SWAP_CLUSTER_MAX
        if order != 0 {
            return None;
        }
        while self.reclaim(BATCH) > 0 {
            if let Some(pfn) = self.rmqueue(order, mt) {
                return Some(pfn);
            }
        }
        None
    }

    /// `__rmqueue` in the nodes below pfn `limit`. Nodes are tried in
    /// order and a node is tried whole (own type, claim, steal) before the
    /// next, so when node k is tried the nodes before it have no block this
    /// request could take: the lowest free block below `limit` is node k's.
    fn rmqueue_in(&mut self, order: u8, mt: Migratetype, limit: u64) -> Option<u64> {
        self.rmqueue_smallest(order, mt, limit)
            .or_else(|| self.rmqueue_claim(order, mt, limit))
            .or_else(|| self.rmqueue_steal(order, mt, limit))
    }

    /// Lowest free block of `order` on the list of `mt`, if below `limit`.
    #[inline]
    fn first_below(&self, order: u8, mt: Migratetype, limit: u64) -> Option<u64> {
        self.free_area[order as usize].first(mt).filter(|&pfn| pfn < limit)
    }

    /// `__rmqueue_smallest`: the smallest order with a free block of `mt`.
    fn rmqueue_smallest(&mut self, order: u8, mt: Migratetype, limit: u64) -> Option<u64> {
        for current in order..=self.max_order {
            if let Some(pfn) = self.first_below(current, mt, limit) {
                self.del_free(pfn, current);
                self.expand(pfn, order, current);
                return Some(pfn);
            }
        }
        None
    }

    /// First fallback type with a free block of `order` (the non-claiming
    /// half of `find_suitable_fallback`).
    fn suitable_fallback(&self, order: u8, start: Migratetype, limit: u64) -> Option<Migratetype> {
        let area = &self.free_area[order as usize];
        start.fallbacks().into_iter().find(|&mt| !area.is_empty(mt) && self.first_below(order, mt, limit).is_some())
    }

    /// `__rmqueue_claim`: from the largest order down, take a fallback block
    /// and try to claim its pageblock for `start` (the largest free block
    /// approximates the pageblock with most free pages). Stops at the first
    /// order too small to claim from.
    fn rmqueue_claim(&mut self, order: u8, start: Migratetype, limit: u64) -> Option<u64> {
        for current in (order..=self.max_order).rev() {
            if !should_try_claim_block(current, start) {
                break;
            }
            let Some(fallback) = self.suitable_fallback(current, start, limit) else {
                continue;
            };
            let pfn = self.first_below(current, fallback, limit)?;
            if let Some(page) = self.try_to_claim_block(pfn, current, order, start, fallback, limit) {
                self.stats.fallbacks += 1;
                return Some(page);
            }
        }
        None
    }

    /// `try_to_claim_block`. A block of pageblock order or more is taken
    /// whole and all its pageblocks relabelled. Otherwise its pageblock is
    /// relabelled when at least half of it is free or compatible with
    /// `start` (movable frames for a movable request; for an unmovable or
    /// reclaimable request falling back to a movable pageblock, all the
    /// non-free non-movable frames), and the request is served from the
    /// claimed lists.
    fn try_to_claim_block(
        &mut self,
        pfn: u64,
        current: u8,
        order: u8,
        start: Migratetype,
        block_type: Migratetype,
        limit: u64,
    ) -> Option<u64> {
        if current >= PAGEBLOCK_ORDER {
            self.del_free(pfn, current);
            self.set_pageblock_range(pfn, current, start);
            self.expand(pfn, order, current);
            self.stats.steals += 1 << (current - PAGEBLOCK_ORDER);
            return Some(pfn);
        }
        let pb = pfn >> PAGEBLOCK_ORDER;
        if (pb + 1) * PAGEBLOCK_NR_PAGES > self.nr_frames {
            return None; // a partial pageblock cannot move (zone boundary)
        }
        let free = self.free_pages_in_pageblock(pb);
        let movable = self.movable_pages_in_pageblock(pb);
        let alike = match (start, block_type) {
            (Migratetype::Movable, _) => movable,
            (_, Migratetype::Movable) => PAGEBLOCK_NR_PAGES - free - movable,
            _ => 0,
        };
        if free + alike < PAGEBLOCK_NR_PAGES / 2 {
            return None;
        }
        self.move_pageblock(pb, start);
        self.stats.steals += 1;
        self.rmqueue_smallest(order, start, limit)
    }

    /// `__rmqueue_steal`: the smallest fallback block, taken without
    /// claiming its pageblock (its leftovers stay on the fallback type).
    fn rmqueue_steal(&mut self, order: u8, start: Migratetype, limit: u64) -> Option<u64> {
        for current in order..=self.max_order {
            if let Some(fallback) = self.suitable_fallback(current, start, limit) {
                let pfn = self.first_below(current, fallback, limit)?;
                self.del_free(pfn, current);
                self.expand(pfn, order, current);
                self.stats.fallbacks += 1;
                return Some(pfn);
            }
        }
        None
    }

    /// Allocates a block of `order` in node `node` only, whatever its
    /// pageblock's type (a migration's target page on a chosen tier, as
    /// `alloc_migration_target` asks one node): the lowest free block of the
    /// smallest order that has one, within each largest-block span of the
    /// node in turn, split as `expand` does. `None` when the node has none.
    pub fn alloc_in_node(&mut self, order: Order, node: usize, owner: FrameOwner) -> Option<Pfn> {
        let order = order.get();
        if order > self.max_order || node >= self.node_ends.len() {
            return None;
        }
        let span = 1u64 << self.max_order;
        let range = self.node_range(node);
        let (pfn, current) = (range.start..range.end).step_by(span as usize).find_map(|start| {
            (order..=self.max_order)
                .find_map(|current| self.free_area[current as usize].first_in_range(start, span).map(|p| (p, current)))
        })?;
        self.del_free(pfn, current);
        self.expand(pfn, order, current);
        self.set_block_owner(pfn, order, owner);
        self.stats.allocs += 1;
        Some(Pfn::new(pfn))
    }

    /// Takes exactly the aligned block of `order` at `pfn` if all of it is
    /// free, splitting the free block that contains it (page coloring,
    /// CoalaPaging, fragmentation injection and compaction need a chosen
    /// frame). The pageblock keeps its type. `false` if any frame of the
    /// block is taken, or the block is misaligned or outside memory.
    pub fn alloc_specific(&mut self, pfn: Pfn, order: Order, owner: FrameOwner) -> bool {
        let (pfn, order) = (pfn.raw(), order.get());
        let len = 1u64 << order.min(63);
        if order > self.max_order
            || !pfn.is_multiple_of(len)
            || pfn.checked_add(len).is_none_or(|end| end > self.nr_frames)
        {
            return false;
        }
        let Some((head, current)) = self.free_block_containing_raw(pfn) else {
            return false;
        };
        if current < order {
            return false; // a fully merged free block would contain the whole range
        }
        self.del_free(head, current);
        self.split_to(head, current, pfn, order);
        self.set_block_owner(pfn, order, owner);
        self.stats.allocs += 1;
        true
    }

    /// Splits the free block (`head`, `current`), already off the lists,
    /// down to the block (`target`, `order`) inside it, returning every
    /// other half to the lists.
    fn split_to(&mut self, mut head: u64, mut current: u8, target: u64, order: u8) {
        while current > order {
            current -= 1;
            let half = 1u64 << current;
            if target >= head + half {
                self.add_free(head, current);
                head += half;
            } else {
                self.add_free(head + half, current);
            }
        }
        debug_assert_eq!(head, target);
    }

    // ---- freeing ---------------------------------------------------------

    /// Frees the block of `order` at `pfn` and merges it with its free
    /// buddies (`__free_one_page`). The block must be aligned and all its
    /// frames allocated (debug-asserted). A block larger than a pageblock
    /// has its pageblocks set to its first pageblock's type; when buddies of
    /// pageblock order or more merge, the buddy takes the freed block's type
    /// (as Linux does, so that later splits land on the right lists).
    pub fn free(&mut self, pfn: Pfn, order: Order) {
        let (mut pfn, mut order) = (pfn.raw(), order.get());
        debug_assert!(order <= self.max_order, "free of order {order} > max_order");
        debug_assert!(pfn.is_multiple_of(1 << order), "free of misaligned pfn {pfn:#x} at order {order}");
        let frames = &mut self.owners[pfn as usize..(pfn + (1 << order)) as usize];
        debug_assert!(frames.iter().all(|&o| o != PACKED_FREE), "double free in block {pfn:#x} order {order}");
        frames.fill(PACKED_FREE);
        let mt = self.block_mt(pfn);
        if order > PAGEBLOCK_ORDER {
            self.set_pageblock_range(pfn, order, mt);
        }
        while order < self.max_order {
            let buddy = pfn ^ (1 << order);
            if buddy + (1 << order) > self.nr_frames || !self.free_area[order as usize].is_head(buddy) {
                break;
            }
            self.del_free(buddy, order);
            if order >= PAGEBLOCK_ORDER && self.block_mt(buddy) != mt {
                self.set_pageblock_range(buddy, order, mt);
            }
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.add_free(pfn, order);
        self.stats.frees += 1;
    }

    // ---- frames and owners -----------------------------------------------

    #[inline]
    pub fn is_free(&self, pfn: Pfn) -> bool {
        self.owners[pfn.raw() as usize] == PACKED_FREE
    }

    #[inline]
    pub fn owner(&self, pfn: Pfn) -> FrameOwner {
        FrameOwner::unpack(self.owners[pfn.raw() as usize])
    }

    /// Packed owner, for scanners that only test it.
    #[inline]
    pub(crate) fn packed_owner(&self, pfn: u64) -> u64 {
        self.owners[pfn as usize]
    }

    /// Changes the owner of an allocated frame (a pool handing out a frame
    /// it holds, a page-table page changing hands).
    pub fn set_owner(&mut self, pfn: Pfn, owner: FrameOwner) {
        debug_assert!(!self.is_free(pfn), "set_owner on free frame {pfn:?}");
        debug_assert!(!owner.is_free(), "set_owner to Free: use free()");
        self.owners[pfn.raw() as usize] = owner.pack();
    }

    /// The free block (head pfn, order) that contains `pfn`, if `pfn` is free.
    pub fn free_block_containing(&self, pfn: Pfn) -> Option<(Pfn, Order)> {
        self.free_block_containing_raw(pfn.raw()).map(|(h, o)| (Pfn::new(h), Order::new(o)))
    }

    /// Looks only at the free-list bitmaps, largest order first: reading
    /// the owner array first would fault in a fresh page of it twice (read,
    /// then write) when a fresh frame is taken, which dominates fragmentation
    /// injection on a large machine.
    #[inline]
    fn free_block_containing_raw(&self, pfn: u64) -> Option<(u64, u8)> {
        (0..=self.max_order).rev().find_map(|order| {
            let head = pfn & !((1u64 << order) - 1);
            self.free_area[order as usize].is_head(head).then_some((head, order))
        })
    }

    // ---- counts ----------------------------------------------------------

    /// Free blocks of `order` on the list of `mt` (`nr_free` of one list).
    pub fn nr_free(&self, order: Order, mt: Migratetype) -> u64 {
        self.free_area.get(order.get() as usize).map_or(0, |a| a.nr_free(mt))
    }

    /// Free blocks per order, all types together (`/proc/buddyinfo`), index
    /// = order, length max_order + 1.
    pub fn free_blocks_per_order(&self) -> Vec<u64> {
        self.free_area.iter().map(FreeArea::nr_free_total).collect()
    }

    /// Free frames.
    pub fn free_pages(&self) -> u64 {
        self.nr_free_pages
    }

    /// Frames in free blocks of `order` or more (at order 9: the frames that
    /// could back 2 MiB pages now).
    pub fn free_pages_at_or_above(&self, order: Order) -> u64 {
        let first = order.get() as usize;
        self.free_area.iter().enumerate().skip(first).map(|(o, a)| a.nr_free_total() << o).sum()
    }

    /// Pfns of the free blocks of `order`, lowest first (O(bitmap)).
    pub fn free_blocks(&self, order: Order) -> Vec<Pfn> {
        self.free_area.get(order.get() as usize).map_or_else(Vec::new, |a| a.iter().map(Pfn::new).collect())
    }

    /// Frames in free blocks inside pageblock `pb`, which must not lie in a
    /// free block of pageblock order or more.
    fn free_pages_in_pageblock(&self, pb: u64) -> u64 {
        self.free_area[..PAGEBLOCK_ORDER as usize].iter().map(|a| a.free_pages_in_pageblock(pb)).sum()
    }

    /// Movable (user) frames in pageblock `pb`.
    pub(crate) fn movable_pages_in_pageblock(&self, pb: u64) -> u64 {
        let start = (pb * PAGEBLOCK_NR_PAGES) as usize;
        let end = ((pb + 1) * PAGEBLOCK_NR_PAGES).min(self.nr_frames) as usize;
        self.owners[start..end].iter().filter(|&&o| packed_is_movable(o)).count() as u64
    }

    /// Whether the whole pageblock `pb` lies in one free block (of pageblock
    /// order or more), i.e. could back a 2 MiB page right now.
    pub fn pageblock_is_free(&self, pb: u64) -> bool {
        let pfn = pb * PAGEBLOCK_NR_PAGES;
        pfn < self.nr_frames && self.free_block_containing_raw(pfn).is_some_and(|(_, order)| order >= PAGEBLOCK_ORDER)
    }

    // ---- pageblocks --------------------------------------------------------

    pub fn pageblock_migratetype(&self, pfn: Pfn) -> Migratetype {
        self.block_mt(pfn.raw())
    }

    /// Relabels the pageblock of `pfn`, moving its free blocks to the lists
    /// of `mt`. If the pageblock lies inside a free block larger than a
    /// pageblock, that whole block (all its pageblocks) is relabelled, since
    /// a free block has one type.
    pub fn set_pageblock_migratetype(&mut self, pfn: Pfn, mt: Migratetype) {
        let pb = pfn.raw() >> PAGEBLOCK_ORDER;
        match self.free_block_containing_raw(pb << PAGEBLOCK_ORDER) {
            Some((head, order)) if order >= PAGEBLOCK_ORDER => {
                self.del_free(head, order);
                self.set_pageblock_range(head, order, mt);
                self.add_free(head, order);
            }
            _ => self.move_pageblock(pb, mt),
        }
    }
}

#[cfg(test)]
#[path = "buddy_tests.rs"]
mod tests;
