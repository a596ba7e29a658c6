//! Page-table entries in the x86-64 format, so a walk reads what hardware
//! would read: present, writable, user, accessed, dirty, page-size bits and a
//! frame number in bits 12..51. Bits 9..11 and 52..58 are ignored by
//! hardware and free for software; the systems pagelab models give some of
//! them a meaning their modified hardware reads (a colored huge page's PMD
//! bit) or their OS keeps (access-tracking marks). The kernel's own uses
//! are in [`SOFT_BITS`]; the bits a system may take for its leaf
//! extension are [`LEAF_EXT`], each system declaring its one bit in its
//! folder and the registry (`systems/mod.rs`) checking them against each
//! other; all are checked at compile time against the hardware's bits.

use crate::units::Pfn;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const ACCESSED: u64 = 1 << 5;
pub const DIRTY: u64 = 1 << 6;
/// In a PMD or PUD: this entry maps a huge page instead of a table.
pub const HUGE: u64 = 1 << 7;
const PFN_MASK: u64 = ((1 << 52) - 1) & !((1 << 12) - 1);

/// The bits hardware defines: P, R/W, U/S, PWT, PCD, A, D, PS (PAT in a
/// PTE), G, the frame number, protection keys (59..62) and XD (63).
pub const HW_BITS: u64 = 0x1ff | PFN_MASK | (0xf << 59) | (1 << 63);

/// One use of bits the hardware ignores.
#[derive(Debug, Clone, Copy)]
pub struct SoftBit {
    pub name: &'static str,
    pub mask: u64,
    /// Page-table levels whose entries carry it (1 = PTE, 2 = PMD).
    pub levels: &'static [u8],
    /// Set in a PMD entry that points at a page table, it makes the walk
    /// of that table an extension's (see [`LEAF_EXT`]).
    pub leaf_ext: bool,
}

/// Bit 11: the Arm-style contiguous hint, set in 16 aligned PTEs (64 KiB)
/// or PMDs (32 MiB) that map contiguous frames, so the walker may cache one
/// coalesced translation (Elastic Translations; managed by `paging::contig`).
pub const CONTIGUOUS: u64 = 1 << 11;
/// Bits 52..53 of a leaf: access-tracking marks (young, idle) a scanner
/// keeps without disturbing the hardware's A bit (reserved).
pub const ACCESS_TRACK: u64 = 0b11 << 52;

/// The kernel's own software bits (the systems' leaf-extension bits are
/// the systems', among [`LEAF_EXT`]).
pub const SOFT_BITS: [SoftBit; 2] = [
    SoftBit { name: "contiguous", mask: CONTIGUOUS, levels: &[1, 2], leaf_ext: false },
    SoftBit { name: "access_track", mask: ACCESS_TRACK, levels: &[1, 2, 3], leaf_ext: false },
];

/// The software bits a system may take for its leaf extension (one each,
/// in a PMD entry pointing at a page table, which hands the walk of that
/// table to the system): bits 9 and 10, and 54 to 58. The walker's one
/// test. Which system has which is declared in its folder and checked
/// by the registry (`systems/mod.rs`).
pub const LEAF_EXT: u64 = (1 << 9) | (1 << 10) | (0x1f << 54);

/// No two software uses share a bit (the kernel's and the leaf
/// extensions'), and none takes a hardware bit.
const _: () = {
    let mut seen = LEAF_EXT;
    assert!(LEAF_EXT & HW_BITS == 0, "a leaf-extension bit on a hardware bit");
    let mut i = 0;
    while i < SOFT_BITS.len() {
        let mask = SOFT_BITS[i].mask;
        assert!(mask != 0, "a software bit without a bit");
        assert!(mask & HW_BITS == 0, "a software bit on a hardware bit");
        assert!(mask & seen == 0, "two software uses of one bit");
        seen |= mask;
        i += 1;
    }
};

/// One 8-byte entry of a page-table page.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Pte(u64);

impl Pte {
    pub const NONE: Pte = Pte(0);

    /// An entry pointing at a next-level table (always writable and user:
    /// permissions are enforced at the leaf, as Linux does for user tables).
    pub fn table(table: Pfn) -> Pte {
        Pte((table.raw() << 12) | PRESENT | WRITABLE | USER | ACCESSED)
    }

    /// A leaf: a 4 KiB page (level 1) or, with `huge`, a 2 MiB or 1 GiB page.
    pub fn leaf(frame: Pfn, writable: bool, huge: bool) -> Pte {
        let mut bits = (frame.raw() << 12) | PRESENT | USER;
        if writable {
            bits |= WRITABLE;
        }
        if huge {
            bits |= HUGE;
        }
        Pte(bits)
    }

    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }
    #[inline]
    pub const fn from_raw(raw: u64) -> Pte {
        Pte(raw)
    }
    #[inline]
    pub const fn present(self) -> bool {
        self.0 & PRESENT != 0
    }
    #[inline]
    pub const fn is_huge(self) -> bool {
        self.0 & HUGE != 0
    }
    /// The leaf-extension bits ([`LEAF_EXT`]) of a present entry pointing
    /// at a table (0 for a leaf or a not-present entry).
    #[inline]
    pub const fn leaf_ext(self) -> u64 {
        if self.0 & (HUGE | PRESENT) == PRESENT {
            self.0 & LEAF_EXT
        } else {
            0
        }
    }
    #[inline]
    pub const fn writable(self) -> bool {
        self.0 & WRITABLE != 0
    }
    #[inline]
    pub const fn accessed(self) -> bool {
        self.0 & ACCESSED != 0
    }
    #[inline]
    pub const fn dirty(self) -> bool {
        self.0 & DIRTY != 0
    }
    #[inline]
    pub const fn pfn(self) -> Pfn {
        Pfn::new((self.0 & PFN_MASK) >> 12)
    }
    #[inline]
    pub const fn with(self, bits: u64) -> Pte {
        Pte(self.0 | bits)
    }
    #[inline]
    pub const fn without(self, bits: u64) -> Pte {
        Pte(self.0 & !bits)
    }
    pub fn with_pfn(self, frame: Pfn) -> Pte {
        Pte((self.0 & !PFN_MASK) | (frame.raw() << 12))
    }
}

/// Every bit software may set.
const SOFT_MASK: u64 = LEAF_EXT | CONTIGUOUS | ACCESS_TRACK;

impl std::fmt::Debug for Pte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.present() {
            return write!(f, "Pte(none)");
        }
        let soft = self.0 & SOFT_MASK;
        let soft = if soft != 0 { format!(" sw={soft:#x}") } else { String::new() };
        write!(
            f,
            "Pte(pfn={:#x}{}{}{}{}{})",
            self.pfn().raw(),
            if self.writable() { " rw" } else { " ro" },
            if self.is_huge() { " huge" } else { "" },
            if self.accessed() { " A" } else { "" },
            if self.dirty() { " D" } else { "" },
            soft
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_bits_round_trip() {
        let e = Pte::leaf(Pfn::new(0xabcde), true, true);
        assert!(e.present() && e.writable() && e.is_huge() && !e.accessed());
        assert_eq!(e.pfn(), Pfn::new(0xabcde));
        assert_eq!(e.raw() & 0xfff, PRESENT | USER | WRITABLE | HUGE);
        let e = e.with(ACCESSED | DIRTY);
        assert!(e.dirty() && e.accessed());
        assert_eq!(e.with_pfn(Pfn::new(7)).pfn(), Pfn::new(7));
        assert!(!Pte::NONE.present());
    }
}
