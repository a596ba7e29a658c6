//! Migratetypes and pageblocks (include/linux/mmzone.h, mm/page_alloc.c).
//!
//! Memory is grouped by mobility: every 2 MiB pageblock carries one
//! migratetype, and a free block sits on the free list of its pageblock's
//! type. When a type runs out, allocation falls back to the others in a fixed
//! order and may claim ("steal") whole pageblocks, which is how unmovable
//! allocations end up scattered over memory that was movable at boot.

/// log2 of the frames in a pageblock (2 MiB on x86-64, `pageblock_order`).
pub const PAGEBLOCK_ORDER: u8 = 9;
/// Frames in a pageblock (`pageblock_nr_pages`).
pub const PAGEBLOCK_NR_PAGES: u64 = 1 << PAGEBLOCK_ORDER;

/// The migratetypes a pageblock can have. The numbering follows Linux
/// (`MIGRATE_UNMOVABLE = 0, MIGRATE_MOVABLE = 1, MIGRATE_RECLAIMABLE = 2`);
/// HIGHATOMIC, CMA and ISOLATE are not modelled.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Migratetype {
    Unmovable = 0,
    Movable = 1,
    Reclaimable = 2,
}

/// `MIGRATE_PCPTYPES`: the types that have free lists here.
pub const NR_MIGRATETYPES: usize = 3;

impl Migratetype {
    pub const ALL: [Migratetype; NR_MIGRATETYPES] =
        [Migratetype::Unmovable, Migratetype::Movable, Migratetype::Reclaimable];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub fn from_index(i: usize) -> Migratetype {
        Self::ALL[i]
    }

    /// The types to try, in order, when this type's lists are empty
    /// (`fallbacks[]` in mm/page_alloc.c).
    #[inline]
    pub const fn fallbacks(self) -> [Migratetype; 2] {
        match self {
            Migratetype::Unmovable => [Migratetype::Reclaimable, Migratetype::Movable],
            Migratetype::Movable => [Migratetype::Reclaimable, Migratetype::Unmovable],
            Migratetype::Reclaimable => [Migratetype::Unmovable, Migratetype::Movable],
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Migratetype::Unmovable => "unmovable",
            Migratetype::Movable => "movable",
            Migratetype::Reclaimable => "reclaimable",
        }
    }
}

/// Whether a fallback from a free block of `current_order` should try to
/// claim its whole pageblock for `start` (`should_try_claim_block`). Note the
/// order is the order of the free block found, not of the request, as in
/// Linux: big free blocks are claimed whatever the request.
#[inline]
pub fn should_try_claim_block(current_order: u8, start: Migratetype) -> bool {
    current_order >= PAGEBLOCK_ORDER
        || current_order >= PAGEBLOCK_ORDER / 2
        || start == Migratetype::Unmovable
        || start == Migratetype::Reclaimable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_order_is_linux_table() {
        use Migratetype::*;
        assert_eq!(Unmovable.fallbacks(), [Reclaimable, Movable]);
        assert_eq!(Movable.fallbacks(), [Reclaimable, Unmovable]);
        assert_eq!(Reclaimable.fallbacks(), [Unmovable, Movable]);
        for mt in Migratetype::ALL {
            assert!(!mt.fallbacks().contains(&mt));
            assert_eq!(Migratetype::from_index(mt.index()), mt);
        }
    }

    #[test]
    fn claim_threshold() {
        // pageblock_order / 2 = 4: a movable request claims from order 4 up.
        assert!(!should_try_claim_block(3, Migratetype::Movable));
        assert!(should_try_claim_block(4, Migratetype::Movable));
        assert!(should_try_claim_block(0, Migratetype::Unmovable));
        assert!(should_try_claim_block(0, Migratetype::Reclaimable));
    }
}
