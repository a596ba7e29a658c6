//! Frames and their owners.
//!
//! Every 4 KiB frame of simulated memory has exactly one owner, packed into
//! one `u64` so that a 1 TiB machine (2^28 frames) keeps its whole ownership
//! map in 2 GiB. The packing puts `Free` at 0, so a fresh owner array is
//! `vec![0; n]`, which the system allocator hands out lazily zeroed.

use crate::units::{Asid, Vpn};

/// Bits of a virtual page number kept in a packed owner: 57-bit virtual
/// addresses (5-level paging) minus the 12-bit page offset.
pub const VPN_BITS: u32 = 45;

const TAG_SHIFT: u32 = 61;
const ASID_SHIFT: u32 = VPN_BITS;
const VPN_MASK: u64 = (1 << VPN_BITS) - 1;

const TAG_FREE: u64 = 0;
const TAG_KERNEL: u64 = 1;
const TAG_PAGE_TABLE: u64 = 2;
const TAG_USER: u64 = 3;
const TAG_RESERVED: u64 = 4;
const TAG_FAULTY: u64 = 5;

/// Who holds a frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum FrameOwner {
    /// In a free buddy block.
    #[default]
    Free,
    /// Unmovable kernel memory (slab, pinned pages, injected fragmentation).
    Kernel,
    /// A page-table page of an address space.
    PageTable { asid: Asid },
    /// A user page: `vpn` is the virtual page it backs. Only these frames are
    /// movable (compaction migrates them).
    User { asid: Asid, vpn: Vpn },
    /// Taken out of the buddy allocator by a pool (a hugetlb reserve, CHP's
    /// allocator cache); `pool` says which.
    Reserved { pool: u8 },
    /// A frame whose memory failed (a retired page): out of the allocator
    /// for good, never allocated, freed or migrated (`phys::faulty`).
    Faulty,
}

impl FrameOwner {
    /// The packed form: tag in bits 61..64, asid in bits 45..61, vpn (or
    /// pool) in bits 0..45.
    #[inline]
    pub fn pack(self) -> u64 {
        match self {
            FrameOwner::Free => TAG_FREE << TAG_SHIFT,
            FrameOwner::Kernel => TAG_KERNEL << TAG_SHIFT,
            FrameOwner::PageTable { asid } => TAG_PAGE_TABLE << TAG_SHIFT | (asid as u64) << ASID_SHIFT,
            FrameOwner::User { asid, vpn } => {
                debug_assert!(vpn.raw() <= VPN_MASK, "{vpn:?} does not fit in {VPN_BITS} bits");
                TAG_USER << TAG_SHIFT | (asid as u64) << ASID_SHIFT | (vpn.raw() & VPN_MASK)
            }
            FrameOwner::Reserved { pool } => TAG_RESERVED << TAG_SHIFT | pool as u64,
            FrameOwner::Faulty => TAG_FAULTY << TAG_SHIFT,
        }
    }

    /// Inverse of [`FrameOwner::pack`].
    #[inline]
    pub fn unpack(raw: u64) -> FrameOwner {
        let asid = (raw >> ASID_SHIFT) as Asid;
        match raw >> TAG_SHIFT {
            TAG_FREE => FrameOwner::Free,
            TAG_KERNEL => FrameOwner::Kernel,
            TAG_PAGE_TABLE => FrameOwner::PageTable { asid },
            TAG_USER => FrameOwner::User { asid, vpn: Vpn::new(raw & VPN_MASK) },
            TAG_RESERVED => FrameOwner::Reserved { pool: raw as u8 },
            TAG_FAULTY => FrameOwner::Faulty,
            tag => unreachable!("corrupt packed frame owner {raw:#x} (tag {tag})"),
        }
    }

    /// The owner of frame `i` of a block owned by `self`: a user block backs
    /// consecutive virtual pages, everything else owns all its frames alike.
    #[inline]
    pub fn nth(self, i: u64) -> FrameOwner {
        match self {
            FrameOwner::User { asid, vpn } => FrameOwner::User { asid, vpn: vpn.add(i) },
            other => other,
        }
    }

    #[inline]
    pub fn is_free(self) -> bool {
        self == FrameOwner::Free
    }

    /// Whether compaction may migrate the frame (Linux: an LRU page).
    #[inline]
    pub fn is_movable(self) -> bool {
        matches!(self, FrameOwner::User { .. })
    }
}

/// Packed owner of frame `i` of a block whose first frame has packed owner
/// `first`: the vpn sits in the low bits, so a user block adds `i`.
#[inline]
pub(crate) fn packed_nth(first: u64, i: u64) -> u64 {
    if first >> TAG_SHIFT == TAG_USER {
        debug_assert!((first & VPN_MASK) + i <= VPN_MASK, "vpn overflows {VPN_BITS} bits");
        first + i
    } else {
        first
    }
}

/// Packed value of a free frame.
pub(crate) const PACKED_FREE: u64 = 0;

/// Whether a packed owner is a movable (user) frame, without unpacking.
#[inline]
pub(crate) fn packed_is_movable(raw: u64) -> bool {
    raw >> TAG_SHIFT == TAG_USER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip_through_one_word() {
        let cases = [
            FrameOwner::Free,
            FrameOwner::Kernel,
            FrameOwner::PageTable { asid: 0xffff },
            FrameOwner::User { asid: 7, vpn: Vpn::new(VPN_MASK) },
            FrameOwner::User { asid: 0, vpn: Vpn::new(0) },
            FrameOwner::Reserved { pool: 255 },
            FrameOwner::Faulty,
        ];
        for owner in cases {
            assert_eq!(FrameOwner::unpack(owner.pack()), owner);
        }
        assert_eq!(FrameOwner::Free.pack(), PACKED_FREE);
        // User and PageTable of the same asid differ in the tag only.
        assert_ne!(FrameOwner::User { asid: 1, vpn: Vpn::new(0) }.pack(), FrameOwner::PageTable { asid: 1 }.pack());
    }

    #[test]
    fn user_blocks_back_consecutive_pages() {
        let first = FrameOwner::User { asid: 3, vpn: Vpn::new(0x7f00_0000) };
        assert_eq!(first.nth(5), FrameOwner::User { asid: 3, vpn: Vpn::new(0x7f00_0005) });
        assert_eq!(FrameOwner::unpack(packed_nth(first.pack(), 5)), first.nth(5));
        let kernel = FrameOwner::Kernel.pack();
        assert_eq!(packed_nth(kernel, 9), kernel);
        assert!(first.is_movable() && !FrameOwner::Kernel.is_movable());
        assert!(packed_is_movable(first.pack()));
    }
}
