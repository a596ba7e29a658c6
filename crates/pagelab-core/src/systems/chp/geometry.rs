//! The shape of colored huge pages on one machine: the stride between a
//! sub-mapping's pages and the buddy block each is carved from.

use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::units::{Order, Pfn};

/// 4 KiB pages in one 2 MiB page.
pub(super) const PAGES_PER_HUGE: u64 = 512;

/// The shape of colored huge pages on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChpGeometry {
    /// log2 of the number of system colors: the stride, in frames, between
    /// consecutive pages of a sub-mapping.
    pub stride_shift: u8,
    /// Sub-mappings per 2 MiB page (1, 2, 4 or 8).
    pub submappings: u32,
}

impl ChpGeometry {
    /// The geometry for a color map whose bits are consecutive from bit 12
    /// (the color must be the low bits of the pfn for a stride to exist).
    pub fn new(colors: &ColorMap, submappings: u32) -> Result<ChpGeometry> {
        let bits = colors.bits();
        if bits.iter().enumerate().any(|(i, &b)| b != 12 + i as u32) {
            return Err(Error::config(
                "os.coloring.bits",
                format!("colored huge pages need color bits consecutive from bit 12, not {bits:?}"),
            ));
        }
        Ok(ChpGeometry { stride_shift: bits.len() as u8, submappings })
    }

    pub fn nr_colors(&self) -> u32 {
        1 << self.stride_shift
    }
    /// Pages of one sub-mapping.
    pub fn pages_per_sub(&self) -> u64 {
        PAGES_PER_HUGE / self.submappings as u64
    }
    /// Order of the buddy block one sub-mapping is carved from.
    pub fn block_order(&self) -> Order {
        Order::new(self.pages_per_sub().trailing_zeros() as u8 + self.stride_shift)
    }
    /// Frame of page `i` of the sub-mapping that starts at `base`.
    #[inline]
    pub fn frame(&self, base: Pfn, i: u64) -> Pfn {
        Pfn::new(base.raw() | (i << self.stride_shift))
    }
    pub(super) fn color_of(&self, base: Pfn) -> u32 {
        (base.raw() & (self.nr_colors() as u64 - 1)) as u32
    }
}
