//! One order's free lists (`struct free_area`), kept as bitmaps.
//!
//! `heads` has one bit per aligned block of this order: set iff that block is
//! a free buddy block of exactly this order. Per migratetype, a summary
//! bitmap over "groups" says which groups hold such a head: a group is a
//! pageblock for orders below `pageblock_order`, and the block itself for
//! larger orders (a block of order >= 9 spans whole pageblocks, all of one
//! type while it is free). Finding the lowest free block of an order and type
//! is then a find-first-set in the summary, plus, below pageblock order, one
//! in at most 8 words of `heads`.
//!
//! Linux keeps these lists as linked lists and takes the head of the list,
//! i.e. the most recently freed block; here the lowest pfn is taken, which is
//! deterministic and keeps allocations packed at the bottom of memory.

use super::bitmap::{Bitmap, SummaryBitmap};
use super::migratetype::{Migratetype, NR_MIGRATETYPES, PAGEBLOCK_ORDER};

#[derive(Debug, Clone)]
pub(crate) struct FreeArea {
    order: u8,
    heads: Bitmap,
    lists: [SummaryBitmap; NR_MIGRATETYPES],
    nr_free: [u64; NR_MIGRATETYPES],
}

impl FreeArea {
    pub(crate) fn new(order: u8, nr_frames: u64) -> Self {
        let nr_blocks = nr_frames >> order;
        let nr_groups = nr_frames.div_ceil(1 << order.max(PAGEBLOCK_ORDER));
        FreeArea {
            order,
            heads: Bitmap::new(nr_blocks),
            lists: std::array::from_fn(|_| SummaryBitmap::new(nr_groups)),
            nr_free: [0; NR_MIGRATETYPES],
        }
    }

    /// log2 of the frames in one group.
    #[inline]
    fn group_order(&self) -> u8 {
        self.order.max(PAGEBLOCK_ORDER)
    }

    /// Head bits per group (1 for orders >= pageblock order).
    #[inline]
    fn heads_per_group(&self) -> u64 {
        1 << (self.group_order() - self.order)
    }

    #[inline]
    pub(crate) fn is_head(&self, pfn: u64) -> bool {
        debug_assert!(pfn.is_multiple_of(1 << self.order));
        self.heads.get(pfn >> self.order)
    }

    #[inline]
    pub(crate) fn nr_free(&self, mt: Migratetype) -> u64 {
        self.nr_free[mt.index()]
    }

    #[inline]
    pub(crate) fn nr_free_total(&self) -> u64 {
        self.nr_free.iter().sum()
    }

    /// `add_to_free_list`: `pfn` is the head of a free block of this order
    /// on the list of `mt` (its pageblock's type).
    #[inline]
    pub(crate) fn add(&mut self, pfn: u64, mt: Migratetype) {
        debug_assert!(!self.is_head(pfn), "pfn {pfn:#x} already free at order {}", self.order);
        self.heads.set(pfn >> self.order);
        self.lists[mt.index()].set(pfn >> self.group_order());
        self.nr_free[mt.index()] += 1;
    }

    /// `del_page_from_free_list`.
    #[inline]
    pub(crate) fn del(&mut self, pfn: u64, mt: Migratetype) {
        debug_assert!(self.is_head(pfn), "pfn {pfn:#x} not free at order {}", self.order);
        let head = pfn >> self.order;
        self.heads.clear(head);
        self.nr_free[mt.index()] -= 1;
        let group = pfn >> self.group_order();
        if self.order >= PAGEBLOCK_ORDER || !self.group_has_heads(group, head) {
            self.lists[mt.index()].clear(group);
        }
    }

    /// Lowest free block of this order on the list of `mt`.
    #[inline]
    pub(crate) fn first(&self, mt: Migratetype) -> Option<u64> {
        let group = self.lists[mt.index()].first()?;
        let per_group = self.heads_per_group();
        let bit = self.heads.first_in(group * per_group, per_group);
        debug_assert!(bit.is_some(), "group {group} listed without a free head");
        bit.map(|b| b << self.order)
    }

    /// Lowest free block of this order, any type, in the aligned range of
    /// `len` frames at `start` (`len` a power of two of at least a block).
    pub(crate) fn first_in_range(&self, start: u64, len: u64) -> Option<u64> {
        self.heads.first_in(start >> self.order, len >> self.order).map(|b| b << self.order)
    }

    #[inline]
    pub(crate) fn is_empty(&self, mt: Migratetype) -> bool {
        self.nr_free[mt.index()] == 0
    }

    /// Whether `group` holds a free head; `near` is a head bit of the group
    /// (one just taken: the heads left are usually in its word).
    #[inline]
    fn group_has_heads(&self, group: u64, near: u64) -> bool {
        let per_group = self.heads_per_group();
        self.heads.any_in_near(group * per_group, per_group, near)
    }

    /// Free heads of this order in `group`.
    #[inline]
    fn heads_in_group(&self, group: u64) -> u64 {
        let per_group = self.heads_per_group();
        self.heads.count_in(group * per_group, per_group)
    }

    /// Frames in free blocks of this order inside pageblock `pb` (orders
    /// below pageblock order only).
    pub(crate) fn free_pages_in_pageblock(&self, pb: u64) -> u64 {
        debug_assert!(self.order < PAGEBLOCK_ORDER);
        self.heads_in_group(pb) << self.order
    }

    /// `move_freepages_block` for this order: the free blocks inside
    /// pageblock `pb` (order below pageblock order) go from the `from` list
    /// to the `to` list.
    pub(crate) fn move_pageblock(&mut self, pb: u64, from: Migratetype, to: Migratetype) {
        debug_assert!(self.order < PAGEBLOCK_ORDER);
        let count = self.heads_in_group(pb);
        if count == 0 {
            return;
        }
        self.nr_free[from.index()] -= count;
        self.nr_free[to.index()] += count;
        self.lists[from.index()].clear(pb);
        self.lists[to.index()].set(pb);
    }

    /// All free heads of this order (pfns), lowest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.heads.iter().map(move |b| b << self.order)
    }

    /// Whether the summary of `mt` lists `group`.
    pub(crate) fn listed(&self, mt: Migratetype, group: u64) -> bool {
        self.lists[mt.index()].get(group)
    }

    /// Checks the summaries against the heads, given each group's type
    /// (`group_mt(group)`, the type of the group's first pageblock).
    pub(crate) fn check(&self, group_mt: impl Fn(u64) -> Migratetype) -> Result<(), String> {
        let order = self.order;
        let mut counted = [0u64; NR_MIGRATETYPES];
        let mut groups_seen = Vec::new();
        for pfn in self.iter() {
            let group = pfn >> self.group_order();
            let mt = group_mt(group);
            counted[mt.index()] += 1;
            if !self.listed(mt, group) {
                return Err(format!("order {order}: free pfn {pfn:#x} not on the {} list", mt.name()));
            }
            if groups_seen.last() != Some(&group) {
                groups_seen.push(group);
            }
        }
        if counted != self.nr_free {
            return Err(format!("order {order}: nr_free {:?} but heads {counted:?}", self.nr_free));
        }
        for mt in Migratetype::ALL {
            self.lists[mt.index()].check().map_err(|e| format!("order {order} {}: {e}", mt.name()))?;
            let listed = self.lists[mt.index()].iter().count() as u64;
            let expected = groups_seen.iter().filter(|&&g| group_mt(g) == mt).count() as u64;
            if listed != expected {
                return Err(format!(
                    "order {order}: {} list has {listed} groups, {expected} hold free blocks",
                    mt.name()
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn heap_bytes(&self) -> u64 {
        self.heads.heap_bytes() + self.lists.iter().map(|l| l.heap_bytes()).sum::<u64>()
    }
}
