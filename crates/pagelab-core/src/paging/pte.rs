//! Page-table entries in the x86-64 format, so a walk reads what hardware
//! would read: present, writable, user, accessed, dirty, page-size bits and a
//! frame number in bits 12..51. Bits 9..11 are ignored by hardware and free
//! for software; pagelab uses bit 9 at the PMD level for the Colored Huge
//! Pages paper's colored-huge-page bit, which its modified walker reads.

use crate::units::Pfn;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const ACCESSED: u64 = 1 << 5;
pub const DIRTY: u64 = 1 << 6;
/// In a PMD or PUD: this entry maps a huge page instead of a table.
pub const HUGE: u64 = 1 << 7;
/// Software bit 9 at the PMD level: the region is a colored huge page.
pub const COLORED_HUGE: u64 = 1 << 9;
const PFN_MASK: u64 = ((1 << 52) - 1) & !((1 << 12) - 1);

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
    /// A PMD entry pointing at a page table whose 512 pages form a colored
    /// huge page (the bit is meaningless at other levels).
    #[inline]
    pub const fn is_colored_huge(self) -> bool {
        self.0 & (COLORED_HUGE | HUGE | PRESENT) == COLORED_HUGE | PRESENT
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

impl std::fmt::Debug for Pte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.present() {
            return write!(f, "Pte(none)");
        }
        write!(
            f,
            "Pte(pfn={:#x}{}{}{}{}{})",
            self.pfn().raw(),
            if self.writable() { " rw" } else { " ro" },
            if self.is_huge() { " huge" } else { "" },
            if self.accessed() { " A" } else { "" },
            if self.dirty() { " D" } else { "" },
            if self.is_colored_huge() { " chp" } else { "" }
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
