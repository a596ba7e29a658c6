//! Reach sizes and keys.
//!
//! A TLB entry's *reach* is how much virtual memory it translates: 4 KiB,
//! 64 KiB, 2 MiB, 32 MiB or 1 GiB. It is not a page-table leaf level
//! ([`PageSize`]): a coalesced 64 KiB translation (16 contiguous PTEs, the
//! Arm contiguous bit, Elastic Translations) or a 32 MiB one (16 PMDs) is a
//! reach the walker builds from several leaves of one level. Every page
//! size is a reach ([`ReachSize::from`]); not every reach is a page size.
//!
//! key = asid (bits 48..63) | key class (45..47) | vpn at that reach (0..44).
//! 45 vpn bits cover a 57-bit (5-level) virtual address; canonical addresses
//! are distinct in their low 57 bits, so masking keeps keys unique. The class
//! keeps entries of different reach with equal index apart in a shared
//! array. Class 7 is never used, so no key equals the array's INVALID_KEY.
//! The classes of 4 KiB, 2 MiB and 1 GiB are 0, 1, 2 (their values enter
//! the L1's region hash, so they stay what they were); 64 KiB and 32 MiB
//! take 3 and 4; 5 is left for cached hole-bitmap chunks of perforated
//! pages.

use crate::units::{Asid, PageSize, VirtAddr, PAGE_SHIFT};

/// How much virtual memory one TLB entry translates. Ordered by size (the
/// discriminant is the index in [`ReachSize::ALL`] and the bit in a
/// [`ReachSet`]), so smaller reaches are probed first and take precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ReachSize {
    Size4K = 0,
    /// 16 contiguous 4 KiB pages (a coalesced translation).
    Size64K = 1,
    Size2M = 2,
    /// 16 contiguous 2 MiB pages (a coalesced translation).
    Size32M = 3,
    Size1G = 4,
}

/// How many reach sizes there are.
pub const REACHES: usize = 5;

/// Per-reach constants packed one byte per reach (by discriminant) into a
/// word, read with a shift. An array literal indexed at run time made LLVM
/// copy the array onto the stack at every use, and two of those uses are
/// on the fill after every walk: a stall on each.
const fn packed(bytes: [u8; REACHES]) -> u64 {
    let mut word = 0;
    let mut i = 0;
    while i < REACHES {
        word |= (bytes[i] as u64) << (8 * i);
        i += 1;
    }
    word
}

#[inline(always)]
const fn byte_of(word: u64, reach: ReachSize) -> u32 {
    ((word >> (8 * reach as u32)) & 0xff) as u32
}

/// log2 of each reach's bytes.
const SHIFTS: u64 = packed([12, 16, 21, 25, 30]);
/// Each reach's key class.
const KEY_CLASSES: u64 =
    packed([KEY_CLASS_4K as u8, KEY_CLASS_64K as u8, KEY_CLASS_2M as u8, KEY_CLASS_32M as u8, KEY_CLASS_1G as u8]);

impl ReachSize {
    pub const ALL: [ReachSize; REACHES] =
        [ReachSize::Size4K, ReachSize::Size64K, ReachSize::Size2M, ReachSize::Size32M, ReachSize::Size1G];

    /// The reach whose discriminant is `i` (1 GiB for any larger `i`).
    #[inline]
    pub const fn from_index(i: u8) -> ReachSize {
        match i {
            0 => ReachSize::Size4K,
            1 => ReachSize::Size64K,
            2 => ReachSize::Size2M,
            3 => ReachSize::Size32M,
            _ => ReachSize::Size1G,
        }
    }
    /// log2 of the bytes it translates.
    #[inline]
    pub const fn shift(self) -> u32 {
        byte_of(SHIFTS, self)
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// 4 KiB pages this reach covers.
    #[inline]
    pub const fn nr_pages(self) -> u64 {
        1 << self.pages_shift()
    }
    /// log2 of [`nr_pages`](Self::nr_pages).
    #[inline]
    pub const fn pages_shift(self) -> u32 {
        self.shift() - PAGE_SHIFT
    }
    /// The class in keys of this reach (see the module doc).
    #[inline]
    pub const fn key_class(self) -> u64 {
        byte_of(KEY_CLASSES, self) as u64
    }
    /// The reach whose keys carry class `class` (one of a reach's classes).
    #[inline]
    pub const fn of_key_class(class: u64) -> ReachSize {
        const BY_CLASS: [ReachSize; 5] =
            [ReachSize::Size4K, ReachSize::Size2M, ReachSize::Size1G, ReachSize::Size64K, ReachSize::Size32M];
        BY_CLASS[class as usize]
    }
    /// The page size of this reach, if a single leaf maps it.
    pub const fn page_size(self) -> Option<PageSize> {
        match self {
            ReachSize::Size4K => Some(PageSize::Size4K),
            ReachSize::Size2M => Some(PageSize::Size2M),
            ReachSize::Size1G => Some(PageSize::Size1G),
            ReachSize::Size64K | ReachSize::Size32M => None,
        }
    }
}

impl From<PageSize> for ReachSize {
    #[inline]
    fn from(size: PageSize) -> Self {
        match size {
            PageSize::Size4K => ReachSize::Size4K,
            PageSize::Size2M => ReachSize::Size2M,
            PageSize::Size1G => ReachSize::Size1G,
        }
    }
}

/// A set of reach sizes (which an array holds, which hold live entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReachSet(pub u8);

impl ReachSet {
    pub const fn of(reaches: &[ReachSize]) -> ReachSet {
        let mut bits = 0;
        let mut i = 0;
        while i < reaches.len() {
            bits |= 1 << reaches[i] as u8;
            i += 1;
        }
        ReachSet(bits)
    }
    #[inline]
    pub const fn contains(self, r: ReachSize) -> bool {
        self.0 & (1 << r as u8) != 0
    }
    /// The reaches of the set, smallest first.
    pub fn iter(self) -> impl Iterator<Item = ReachSize> {
        ReachSize::ALL.into_iter().filter(move |&r| self.contains(r))
    }
}

pub(super) const VPN_BITS: u32 = 45;
pub(super) const VPN_MASK: u64 = (1 << VPN_BITS) - 1;
pub(super) const ASID_SHIFT: u32 = 48;

pub const KEY_CLASS_4K: u64 = 0;
pub const KEY_CLASS_2M: u64 = 1;
pub const KEY_CLASS_1G: u64 = 2;
/// Coalesced 64 KiB entries (contiguous PTEs).
pub const KEY_CLASS_64K: u64 = 3;
/// Coalesced 32 MiB entries (contiguous PMDs).
pub const KEY_CLASS_32M: u64 = 4;
/// Reserved for cached hole-bitmap chunks of perforated pages.
pub const KEY_CLASS_HOLE_BITMAP: u64 = 5;

/// The 45-bit vpn of `vaddr` used for indexing and keys.
#[inline]
pub(super) fn masked_vpn(vaddr: VirtAddr) -> u64 {
    (vaddr.raw() >> PAGE_SHIFT) & VPN_MASK
}

/// Key of the `reach` page containing 4 KiB page `mvpn` (a masked vpn).
#[inline]
pub(super) fn make_key(asid: Asid, reach: ReachSize, mvpn: u64) -> u64 {
    ((asid as u64) << ASID_SHIFT) | (reach.key_class() << VPN_BITS) | (mvpn >> reach.pages_shift())
}

#[inline]
pub(super) fn key_asid(key: u64) -> Asid {
    (key >> ASID_SHIFT) as Asid
}

/// First (masked) 4 KiB vpn of the page a key of reach `reach` names.
#[inline]
pub(super) fn key_first_vpn(key: u64, reach: ReachSize) -> u64 {
    (key & VPN_MASK) << reach.pages_shift()
}
