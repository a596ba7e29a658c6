//! Page colors: which group of LLC sets a 4 KiB frame maps to.
//!
//! A physically indexed cache whose way is larger than a page splits its sets
//! into groups; all lines of one frame fall in one group, its color. Frames of
//! different colors never compete for a set, which is what page coloring
//! (PALLOC, COPLACE, Colored Huge Pages) exploits. Following PALLOC, a color
//! is the concatenation of chosen physical-address bits (at or above bit 12,
//! so constant over a frame); by default the LLC's set-index bits at or above
//! bit 12. Which bits to use is the OS's choice (`os.coloring.bits`): this
//! module only takes them as a list and validates it.

use super::config::Geometry;
use crate::error::{Error, Result};
use crate::units::{Order, Pfn, PAGE_SHIFT};

/// Most color bits: 65,536 colors, which per-color tables (free lists, the
/// conflict level's counts) hold cheaply. Wider than any set index of a real
/// LLC slice at or above bit 12 (a slice's way would have to exceed 256 MiB),
/// so the default map never cuts the set index (an unsliced 8 MiB 16-way
/// LLC's bits 12-18 are 128 colors; xeon-gold-6138's slices, 12-16 and 32).
pub const MAX_COLOR_BITS: usize = 16;
/// Physical-address bits above this are not real on x86-64 (52-bit max).
pub const PHYS_ADDR_BITS: u32 = 52;

/// Number of page colors of one slice of a cache: the bytes of one way of a
/// slice (sets * line) over the page size, at least 1.
pub fn nr_page_colors(geometry: &Geometry) -> u32 {
    let way_bytes = u64::from(geometry.sets_per_slice) * u64::from(geometry.line);
    (way_bytes >> PAGE_SHIFT).max(1) as u32
}

/// The set-index bits of `geometry` at or above bit 12: those a page's
/// frame decides, whose count is the log2 of [`nr_page_colors`].
pub fn page_set_bits(geometry: &Geometry) -> impl Iterator<Item = u32> {
    geometry.set_index_bits().filter(|&b| b >= PAGE_SHIFT)
}

/// Maps frames to colors through a list of physical-address bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColorMap {
    /// Address bits, ascending: `bits[i]` is bit i of the color.
    bits: Vec<u32>,
    /// The same bits as a mask over pfn bits.
    pfn_mask: u64,
    /// Set when the bits are consecutive: color = (pfn >> shift) & mask.
    contiguous_shift: Option<u32>,
}

impl ColorMap {
    /// A map from the address bits `bits` (any order; the lowest bit becomes
    /// bit 0 of the color). `key` names the configuration entry in errors.
    pub fn new(bits: &[u32], key: &str) -> Result<ColorMap> {
        if bits.len() > MAX_COLOR_BITS {
            return Err(Error::config(key, format!("{} bits: at most {MAX_COLOR_BITS}", bits.len())));
        }
        let mut sorted = bits.to_vec();
        sorted.sort_unstable();
        for (i, &bit) in sorted.iter().enumerate() {
            if !(PAGE_SHIFT..PHYS_ADDR_BITS).contains(&bit) {
                return Err(Error::config(
                    key,
                    format!(
                        "bit {bit}: color bits must be in {PAGE_SHIFT}..{PHYS_ADDR_BITS} (constant over a 4 KiB frame)"
                    ),
                ));
            }
            if i > 0 && sorted[i - 1] == bit {
                return Err(Error::config(key, format!("bit {bit} is listed twice")));
            }
        }
        let pfn_mask = sorted.iter().fold(0u64, |m, &b| m | 1 << (b - PAGE_SHIFT));
        let contiguous = sorted.windows(2).all(|w| w[1] == w[0] + 1);
        let contiguous_shift = (contiguous && !sorted.is_empty()).then(|| sorted[0] - PAGE_SHIFT);
        Ok(ColorMap { bits: sorted, pfn_mask, contiguous_shift })
    }

    /// The default map of an LLC: all its set-index bits at or above bit 12,
    /// never fewer (a cut map would hide skew in the bits left out). No bits
    /// (one color) when a way of a slice fits in a page. An error naming
    /// `machine.cache.llc.size` when they exceed [`MAX_COLOR_BITS`].
    pub fn from_llc(llc: &Geometry) -> Result<ColorMap> {
        let bits: Vec<u32> = page_set_bits(llc).collect();
        if bits.len() > MAX_COLOR_BITS {
            let msg = format!(
                "a way of an LLC slice spans {} set-index bits above the page: page colors need at most {MAX_COLOR_BITS} \
                 (give os.coloring.bits or machine.color_bits)",
                bits.len()
            );
            return Err(Error::config("machine.cache.llc.size", msg));
        }
        ColorMap::new(&bits, "machine.cache.llc.size")
    }

    /// The address bits, lowest first.
    pub fn bits(&self) -> &[u32] {
        &self.bits
    }

    /// Order of the smallest aligned block that holds every color: the
    /// block spans every color bit (bits 12..=max).
    pub fn span_order(&self) -> u8 {
        self.bits().iter().max().map_or(0, |&b| (b + 1 - 12) as u8)
    }

    pub fn nr_colors(&self) -> u32 {
        1 << self.bits.len()
    }

    /// The color bits as a mask over pfn bits.
    pub fn pfn_mask(&self) -> u64 {
        self.pfn_mask
    }

    /// The color of frame `pfn`: its color bits, concatenated.
    #[inline]
    pub fn color_of(&self, pfn: Pfn) -> u32 {
        let raw = pfn.raw();
        if let Some(shift) = self.contiguous_shift {
            return ((raw & self.pfn_mask) >> shift) as u32;
        }
        let mut color = 0;
        for (i, &bit) in self.bits.iter().enumerate() {
            color |= ((raw >> (bit - PAGE_SHIFT)) & 1) << i;
        }
        color as u32
    }

    /// The pfn bits of `color`, placed at their positions (the inverse of
    /// [`color_of`](Self::color_of) on the color bits).
    fn pfn_bits_of(&self, color: u32) -> u64 {
        let mut bits = 0;
        for (i, &bit) in self.bits.iter().enumerate() {
            bits |= u64::from(color >> i & 1) << (bit - PAGE_SHIFT);
        }
        bits
    }

    /// The frames of color `color` in the block of `2^order` frames at
    /// `start` (aligned to its order), in increasing order. Empty when the
    /// color bits above the block disagree with `color`.
    pub fn frames_of_color(&self, start: Pfn, order: Order, color: u32) -> FramesOfColor {
        debug_assert!(start.is_aligned(order.nr_pages()), "{start:?} not aligned to order {}", order.get());
        debug_assert!(color < self.nr_colors());
        let block = order.nr_pages() - 1;
        let want = self.pfn_bits_of(color);
        let fixed_in_block = self.pfn_mask & block;
        // Color bits above the block are fixed by `start`.
        let above = self.pfn_mask & !block;
        let matches = start.raw() & above == want & above;
        FramesOfColor {
            base: start.raw() | (want & fixed_in_block),
            free: block & !fixed_in_block,
            next: 0,
            done: !matches,
        }
    }
}

/// Iterator of [`ColorMap::frames_of_color`]: walks the subsets of the
/// block's non-color bits in increasing order (`next = ((s | !free) + 1) &
/// free`, the standard submask successor), each ORed onto the color's bits.
#[derive(Debug, Clone)]
pub struct FramesOfColor {
    base: u64,
    free: u64,
    next: u64,
    done: bool,
}

impl Iterator for FramesOfColor {
    type Item = Pfn;

    fn next(&mut self) -> Option<Pfn> {
        if self.done {
            return None;
        }
        let pfn = Pfn::new(self.base | self.next);
        self.next = (self.next | !self.free).wrapping_add(1) & self.free;
        self.done = self.next == 0;
        Some(pfn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cache::config::LlcConfig;
    use crate::units::ByteSize;

    fn i7_10700_llc() -> Geometry {
        // 16 MiB, 16 ways, 64-byte lines, one slice: 16384 sets.
        LlcConfig { size: ByteSize(16 << 20), ways: 16, line: 64, slices: 1, ..LlcConfig::default() }.geometry()
    }

    #[test]
    fn i7_10700_has_sixteen_colors_from_bits_12_to_15() {
        let map = ColorMap::new(&[12, 13, 14, 15], "os.coloring.bits").unwrap();
        assert_eq!(map.nr_colors(), 16);
        assert_eq!(map.color_of(Pfn::new(0)), 0);
        assert_eq!(map.color_of(Pfn::new(5)), 5);
        assert_eq!(map.color_of(Pfn::new(0x1f)), 15, "pfn bit 4 (address bit 16) is not a color bit");
        assert_eq!(map.color_of(Pfn::new(0x123)), 3);
        // The cache itself has 16384 * 64 / 4096 = 256 page colors: bits
        // 12..19 by default.
        assert_eq!(nr_page_colors(&i7_10700_llc()), 256);
        let default = ColorMap::from_llc(&i7_10700_llc()).unwrap();
        assert_eq!(default.bits(), [12, 13, 14, 15, 16, 17, 18, 19]);
        assert_eq!(default.color_of(Pfn::new(0x1234)), 0x34);
    }

    #[test]
    fn scattered_bits_concatenate_lowest_first() {
        // PALLOC-style mask: bits 12, 13, 19, 20 -> color bits 0, 1, 2, 3.
        let map = ColorMap::new(&[20, 12, 19, 13], "k").unwrap();
        assert_eq!(map.bits(), [12, 13, 19, 20]);
        // pfn 0x181 = pfn bits 0, 7, 8 = address bits 12, 19, 20: color 0b1101.
        assert_eq!(map.color_of(Pfn::new(0x181)), 0b1101);
        assert_eq!(map.color_of(Pfn::new(0x002)), 0b0010);
        assert_eq!(map.color_of(Pfn::new(0x07c)), 0, "pfn bits 2..6 are not color bits");
    }

    #[test]
    fn xeon_gold_6138_colors_are_the_set_bits_12_to_16_of_a_slice() {
        // The preset's LLC: 20 slices of 2,048 sets (27.5 MiB, 11 ways) by
        // the stand-in hash, the set within a slice from bits 6-16: page bits
        // 12-16, the paper's 32 colors per slice. The slice-select page bits
        // start above them, at 17.
        let cfg = crate::config::parse_config(
            "[machine]\npreset = \"xeon-gold-6138\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n",
            "t.toml",
            &[],
        )
        .unwrap();
        let llc = cfg.machine.cache.llc.geometry();
        assert_eq!((llc.slices, llc.sets_per_slice, llc.ways, llc.size()), (20, 2048, 11, 55 << 19));
        let map = ColorMap::from_llc(&llc).unwrap();
        assert_eq!(map.bits(), (12..=16).collect::<Vec<u32>>());
        assert_eq!(map.nr_colors(), 32);
        assert_eq!(map.color_of(Pfn::new(1 << 4)), 16, "address bit 16 is color bit 4");
        assert_eq!(map.color_of(Pfn::new(1 << 5)), 0, "address bit 17 chooses slices, not sets");
        assert_eq!(llc.slice_select_page_bits()[..2], [17, 18]);
        assert_eq!(cfg.color_map().unwrap(), map, "the OS's default colors are the LLC's");
    }

    #[test]
    fn an_llc_with_more_page_colors_than_a_map_holds_is_an_error() {
        // One way of one slice of 256 MiB: set bits 6..28, page bits 12..27,
        // 16 color bits, the most a map holds; 512 MiB is one more.
        let llc = |mib: u64| Geometry::unsliced(mib << 20, 1, 64);
        assert_eq!(ColorMap::from_llc(&llc(256)).unwrap().nr_colors(), 1 << 16);
        assert!(
            matches!(ColorMap::from_llc(&llc(512)), Err(Error::Config { ref key, .. }) if key == "machine.cache.llc.size")
        );
    }

    #[test]
    fn small_ways_have_one_color() {
        let l2 = Geometry::unsliced(256 << 10, 4, 64); // 1024 sets * 64 B = 64 KiB per way
        assert_eq!(nr_page_colors(&l2), 16);
        let l1 = Geometry::unsliced(32 << 10, 8, 64); // 4 KiB per way
        assert_eq!(nr_page_colors(&l1), 1);
        let map = ColorMap::from_llc(&l1).unwrap();
        assert_eq!((map.nr_colors(), map.color_of(Pfn::new(77))), (1, 0));
    }

    #[test]
    fn sliced_llc_colors_count_per_slice() {
        let sliced = i7_10700_llc().with_slices(8, crate::hw::cache::slice::SliceHash::Intel);
        assert_eq!(nr_page_colors(&sliced), 32);
        assert_eq!(ColorMap::from_llc(&sliced).unwrap().bits(), [12, 13, 14, 15, 16]);
    }

    #[test]
    fn bad_bit_lists_are_config_errors() {
        let seventeen: Vec<u32> = (12..29).collect();
        for bits in [&[11u32][..], &[52], &[12, 12], &seventeen] {
            assert!(
                matches!(ColorMap::new(bits, "os.coloring.bits"), Err(Error::Config { ref key, .. }) if key == "os.coloring.bits"),
                "{bits:?}"
            );
        }
        assert_eq!(ColorMap::new(&[], "k").unwrap().nr_colors(), 1);
    }

    #[test]
    fn frames_of_color_in_a_block() {
        let map = ColorMap::new(&[12, 13], "k").unwrap(); // 4 colors, pfn bits 0, 1
        let got: Vec<u64> = map.frames_of_color(Pfn::new(16), Order::new(3), 2).map(Pfn::raw).collect();
        assert_eq!(got, [18, 22]);
        // Scattered: pfn bits 1 and 4; an order-5 block at 32 holds both.
        let map = ColorMap::new(&[13, 16], "k").unwrap();
        assert_eq!(map.frames_of_color(Pfn::new(32), Order::new(4), 0b11).count(), 0, "bit 4 is 0 in 32..47");
        let got: Vec<u64> = map.frames_of_color(Pfn::new(32), Order::new(5), 0b11).map(Pfn::raw).collect();
        assert_eq!(
            got,
            [
                32 | 0b10010,
                32 | 0b10011,
                32 | 0b10110,
                32 | 0b10111,
                32 | 0b11010,
                32 | 0b11011,
                32 | 0b11110,
                32 | 0b11111
            ]
        );
        // Order 0 block: the frame itself, if its color matches.
        assert_eq!(map.frames_of_color(Pfn::new(2), Order::new(0), 1).count(), 1);
        assert_eq!(map.frames_of_color(Pfn::new(2), Order::new(0), 0).count(), 0);
        // Order 1 at pfn 16: bit 4 (color bit 1) fixed at 1 by the start.
        assert_eq!(map.frames_of_color(Pfn::new(16), Order::new(1), 0b01).count(), 0);
        let got: Vec<u64> = map.frames_of_color(Pfn::new(16), Order::new(1), 0b10).map(Pfn::raw).collect();
        assert_eq!(got, [16, 17]);
    }

    #[test]
    fn frames_of_color_agree_with_color_of() {
        let map = ColorMap::new(&[12, 14, 17], "k").unwrap();
        for order in [0u8, 2, 5, 9] {
            let start = Pfn::new(0x1000);
            for color in 0..map.nr_colors() {
                let fast: Vec<Pfn> = map.frames_of_color(start, Order::new(order), color).collect();
                let slow: Vec<Pfn> = (0..1u64 << order)
                    .map(|i| Pfn::new(start.raw() + i))
                    .filter(|&p| map.color_of(p) == color)
                    .collect();
                assert_eq!(fast, slow, "order {order} color {color}");
            }
        }
    }
}
