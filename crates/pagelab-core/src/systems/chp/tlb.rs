//! CHP's TLB entry kind (III-B-1, III-B-2): one L2 entry translates a whole
//! colored huge page, 2 MiB as 8 sub-mappings of 64 pages; page `i` of
//! sub-mapping `s` is frame `sub[s] | (i << stride_shift)`, the stride
//! being the number of colors. The 8 frames do not fit in an L2 entry:
//! the cores' TLB extensions keep them beside the L2, by the entry's slot,
//! as the design's wider STLB entry would. A hit generates a 4 KiB L1
//! entry.
//!
//! Layer: hardware (uses `hw` and `units` only).

use crate::hw::cache::ColorMap;
use crate::hw::tlb::{EntryKind, ExtPayload, ReachSize, TlbEntry};
use crate::units::{Asid, Pfn, Vpn, PAGE_SHIFT};

/// CHP's L2 entry kinds (one: a colored huge page), by their number in
/// CHP (the registry numbers the TLB's kinds).
pub const KINDS: &[&str] = &["colored_huge"];

/// CHP geometry: 8 sub-mappings of 64 base pages make one 2 MiB page.
const SUB_SHIFT: u32 = 18; // bits 18..20 of the 2 MiB offset pick the sub-mapping
const PAGES_PER_SUB: u64 = 64; // bits 12..17 index a page inside it

/// What a colored huge page's L2 entry carries beyond a plain one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColoredHuge {
    /// The first frame of each sub-mapping.
    pub sub: [Pfn; 8],
    /// log2 of the number of colors: the stride of a sub-mapping's pages.
    pub stride_shift: u8,
}

impl ExtPayload for ColoredHuge {
    fn kind(&self) -> u8 {
        0
    }

    #[inline]
    fn frame_of(&self, offset: u64) -> Pfn {
        // Paper III-B-2: step 3 takes the sub-mapping from offset bits
        // 18..20; step 4 picks its base frame; step 5 shifts the page
        // index (bits 12..17) by log2(colors); step 6 ORs them.
        let s = (offset >> SUB_SHIFT) as usize;
        let index = (offset >> PAGE_SHIFT) & (PAGES_PER_SUB - 1);
        Pfn::new(self.sub[s].raw() | (index << self.stride_shift))
    }

    fn l1_piece(&self) -> ReachSize {
        ReachSize::Size4K
    }
}

/// CHP's hardware state on a core: the stride of the machine (a constant
/// of the hardware, from the number of colors). The 8 frames of the
/// colored huge page in each L2 slot are kept beside the L2 with every
/// other kind's payload (`systems::TlbExtensions`), as the design's wider
/// STLB entry would hold them.
#[derive(Debug, Clone, Default)]
pub struct ChpTlb {
    pub stride_shift: u8,
}

impl ChpTlb {
    pub fn new(stride_shift: u8) -> Self {
        ChpTlb { stride_shift }
    }
}

/// The stride shift of colored huge pages on a machine with these colors
/// (log2 of the number of colors), a constant of its hardware.
pub fn stride_shift(colors: &ColorMap) -> u8 {
    colors.bits().len() as u8
}

/// A 2 MiB colored huge page's TLB entry. Each `sub[s]` must leave clear
/// the bits that page indexes OR into (`63 << stride_shift`), as the
/// paper's allocator guarantees by carving sub-mappings from aligned blocks.
pub fn colored_huge(
    asid: Asid,
    vbase: Vpn,
    sub: [Pfn; 8],
    stride_shift: u8,
    writable: bool,
    dirty: bool,
) -> TlbEntry<ColoredHuge> {
    debug_assert!(vbase.is_aligned(ReachSize::Size2M.nr_pages()));
    debug_assert!(sub.iter().all(|p| p.raw() & ((PAGES_PER_SUB - 1) << stride_shift) == 0));
    let kind = EntryKind::Ext(ColoredHuge { sub, stride_shift });
    TlbEntry { asid, vbase, size: ReachSize::Size2M, writable, dirty, kind }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::tlb::{Tlb, TlbLookup, Translation};
    use crate::systems::extensions::wrap;
    use crate::systems::{ExtKind, TlbExtensions};
    use crate::units::VirtAddr;

    const A: Asid = 1;
    const KIB4: u64 = 4 << 10;
    const MIB2: u64 = 2 << 20;

    fn va(x: u64) -> VirtAddr {
        VirtAddr::new(x)
    }

    fn page4k(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry<ExtKind> {
        TlbEntry::page(asid, va(vaddr).vpn(), ReachSize::Size4K, Pfn::new(pfn), true, false)
    }

    /// The small machine of `hw::tlb`'s tests, with the cores' extensions.
    fn small() -> Tlb<TlbExtensions> {
        Tlb::new(&crate::hw::tlb::tests::small(), 0)
    }

    fn chp(asid: Asid, base: u64) -> TlbEntry<ExtKind> {
        // 16 colors (stride_shift 4); sub-mapping s starts at frame 0x1000 + s
        // (color s). Bits 4..9 of each start are clear, as the OR needs.
        let sub = std::array::from_fn(|s| Pfn::new(0x1000 + s as u64));
        wrap(colored_huge(asid, va(base).vpn(), sub, 4, true, false), ExtKind::ColoredHuge)
    }

    #[test]
    fn colored_huge_frame_of_by_hand() {
        let e = chp(A, 4 * MIB2);
        let at = |offset: u64| e.frame_of(va(4 * MIB2 + offset)).raw();
        // Offset 0: sub 0, page 0 -> 0x1000.
        assert_eq!(at(0), 0x1000);
        // Offset 0x5000: sub 0, page 5 -> 0x1000 | 5 << 4 = 0x1050.
        assert_eq!(at(0x5abc), 0x1050);
        // Offset 0x40000 (256 KiB): sub 1, page 0 -> 0x1001.
        assert_eq!(at(0x4_0000), 0x1001);
        // Offset 0xa3000: sub 2 (0xa3000 >> 18 = 2), page (0xa3000 >> 12) & 63
        // = 0xa3 & 0x3f = 0x23 -> 0x1002 | 0x230 = 0x1232.
        assert_eq!(at(0xa_3000), 0x1232);
        // Last page of sub-mapping 7: offset 0x1f_f000, page 63
        // -> 0x1007 | 0x3f0 = 0x13f7.
        assert_eq!(at(0x1f_ffff), 0x13f7);
    }

    #[test]
    fn colored_huge_l2_hit_installs_the_constructed_4k_page_in_l1() {
        let mut tlb = small();
        let base = 4 * MIB2;
        let x = base + 0x1f_f000; // last page of sub-mapping 7
        tlb.fill_after_walk(chp(A, base), va(base), false);
        // The walk filled a 4K L1 entry for page 0 only (nothing in L1 2M).
        assert_eq!(tlb.stats().l1d_2m.fills, 0);
        let e = tlb.peek_l2(A, va(x)).unwrap();
        match tlb.lookup(A, va(x), false) {
            TlbLookup::L2(t) => {
                assert_eq!((t.pfn.raw(), t.size), (0x13f7, ReachSize::Size2M));
                assert!(matches!(e.kind, EntryKind::Ext(ExtKind::ColoredHuge(_))));
            }
            other => panic!("expected an L2 hit, got {other:?}"),
        }
        let t = tlb.lookup(A, va(x + 0x10), false);
        assert_eq!(
            t,
            TlbLookup::L1(Translation { pfn: Pfn::new(0x13f7), size: ReachSize::Size4K, writable: true, dirty: false })
        );
        // A neighbouring page is not served by that L1 entry.
        assert!(matches!(tlb.lookup(A, va(x - KIB4), false), TlbLookup::L2(..)));
        // INVLPG of the base drops the constructed L1 entries too.
        assert_eq!(tlb.invalidate_page(A, va(base)), 3 + 1);
        assert_eq!(tlb.lookup(A, va(x), false), TlbLookup::Miss);
    }

    #[test]
    fn mark_dirty_reaches_l2_and_every_l1_piece() {
        let mut tlb = small();
        let base = 4 * MIB2;
        tlb.fill_after_walk(chp(A, base), va(base), false);
        tlb.lookup(A, va(base + KIB4), false); // second 4K piece in L1
        tlb.fill_after_walk(page4k(A, base + MIB2, 1), va(base + MIB2), false);
        assert_eq!(tlb.mark_dirty(A, va(base + 0x2000)), 3); // L2 + both pieces
        assert!(tlb.lookup(A, va(base), false).translation().unwrap().dirty);
        assert!(!tlb.lookup(A, va(base + MIB2), false).translation().unwrap().dirty);
        assert_eq!(tlb.mark_dirty(A, va(base)), 0);
    }
}
