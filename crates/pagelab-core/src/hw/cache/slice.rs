//! LLC slice selection: which slice of a sliced last-level cache holds a line.
//!
//! Intel client and server parts split the LLC into slices (one per core or
//! per ring stop) and choose the slice with an undocumented hash of the
//! physical address. Maurice et al. (RAID 2015) recovered it for 2, 4 and 8
//! slices: slice bit i is the parity of `addr & mask_i`. The `modulo` hash
//! interleaves consecutive lines over the slices, which is what a simulator
//! without a reverse-engineered hash usually does. The `stand-in` hash
//! (`super::standin`) takes any slice count.

/// How the LLC chooses a slice (`machine.cache.llc.slice_hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SliceHash {
    /// Line number modulo the slice count: consecutive lines in consecutive
    /// slices; the set index within a slice comes from the bits above.
    Modulo,
    /// The XOR hash of Maurice et al. for 1, 2, 4 or 8 slices; the set index
    /// within a slice comes from the line number's low bits, as on Intel.
    Intel,
    /// pagelab's stand-in for any slice count (`super::standin`), varied by
    /// `machine.cache.llc.slice_seed`; the set index within a slice comes
    /// from the line number's low bits.
    #[serde(rename = "stand-in")]
    StandIn,
}

impl SliceHash {
    pub const fn name(self) -> &'static str {
        match self {
            SliceHash::Modulo => "modulo",
            SliceHash::Intel => "intel",
            SliceHash::StandIn => "stand-in",
        }
    }
}

/// Mask of slice bit 0 (`o0`), used alone with 2 slices.
pub const INTEL_O0: u64 = 0x1b_5f57_5440;
/// Mask of slice bit 1 (`o1`), added with 4 slices.
pub const INTEL_O1: u64 = 0x2e_b5fa_a880;
/// Mask of slice bit 2 (`o2`), added with 8 slices.
pub const INTEL_O2: u64 = 0x3c_ccc9_3100;

/// The address bits the Intel hash reads with `slices` slices (1, 2, 4 or
/// 8): the union of the masks it uses.
pub const fn intel_mask(slices: u32) -> u64 {
    match slices {
        0 | 1 => 0,
        2 => INTEL_O0,
        3 | 4 => INTEL_O0 | INTEL_O1,
        _ => INTEL_O0 | INTEL_O1 | INTEL_O2,
    }
}

/// Largest slice count the Intel hash is known for.
pub const INTEL_MAX_SLICES: u32 = 8;

/// Lowest address bit any of the masks uses.
const INTEL_LOW_BIT: u32 = 6;

const fn parity(x: u64) -> u8 {
    (x.count_ones() & 1) as u8
}

/// The three slice bits of `addr` by the definition: one parity per mask.
const fn intel_bits(addr: u64) -> u8 {
    parity(addr & INTEL_O0) | parity(addr & INTEL_O1) << 1 | parity(addr & INTEL_O2) << 2
}

/// `INTEL_TABLE[i][b]`: the slice bits of an address whose only set bits
/// are byte value `b` at bit `6 + 8i`. Parity is linear over XOR, so the
/// slice bits of any address are the XOR of its four bytes' entries (the
/// masks use bits 6..=37 only). Four loads instead of three 64-bit
/// popcounts, which the baseline x86-64 target lacks.
static INTEL_TABLE: [[u8; 256]; 4] = {
    let mut table = [[0u8; 256]; 4];
    let mut i = 0;
    while i < 4 {
        let mut b = 0;
        while b < 256 {
            table[i][b] = intel_bits((b as u64) << (INTEL_LOW_BIT + 8 * i as u32));
            b += 1;
        }
        i += 1;
    }
    table
};

/// The slice of physical address `addr` under the Intel hash with `slices`
/// slices (1, 2, 4 or 8). Only address bits 6 and up matter, so any address
/// within a 64-byte line gives the same slice.
#[inline]
pub fn intel_slice(addr: u64, slices: u32) -> u32 {
    debug_assert!(matches!(slices, 1 | 2 | 4 | 8), "intel hash with {slices} slices");
    let x = addr >> INTEL_LOW_BIT;
    let byte = |i: usize| INTEL_TABLE[i][(x >> (8 * i) & 0xff) as usize];
    let bits = byte(0) ^ byte(1) ^ byte(2) ^ byte(3);
    // Fewer slices use fewer hash bits: masking keeps o0 for 2, o0/o1 for 4.
    u32::from(bits) & (slices - 1)
}

/// The slice of line number `line` under the modulo hash (`slices` a power
/// of two).
#[inline]
pub fn modulo_slice(line: u64, slices: u32) -> u32 {
    debug_assert!(slices.is_power_of_two());
    (line & u64::from(slices - 1)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intel_hash_of_single_bits() {
        // Bit 6 (0x40) is only in o0; bit 7 (0x80) only in o1; bit 8 (0x100)
        // only in o2 (o0 = ..5440 has bits 6, 10, 12, 14 in its low half).
        assert_eq!(intel_slice(0x40, 8), 0b001);
        assert_eq!(intel_slice(0x80, 8), 0b010);
        assert_eq!(intel_slice(0x100, 8), 0b100);
        assert_eq!(intel_slice(0x1c0, 8), 0b111);
        // Offsets inside a line do not matter (no mask has bits 0..5).
        assert_eq!(intel_slice(0xff, 8), 0b011);
        assert_eq!(intel_slice(0x3f, 8), 0);
    }

    #[test]
    fn intel_hash_parities_cancel() {
        // 0x440 = bits 6 and 10, both in o0: parity 0; neither in o1 nor o2.
        assert_eq!(intel_slice(0x440, 8), 0);
        // 0x400 = bit 10 alone: o0 = 1; o1 = ..a880 has bits 7, 11, 13, 15:
        // 0; o2 = ..3100 has bits 8, 12, 13: 0.
        assert_eq!(intel_slice(0x400, 8), 0b001);
        // 0x2000 = bit 13: o0 (..5440 = bits 6,10,12,14) no; o1 (0xa880 has
        // 0x2000? 0xa880 = 0x8000|0x2000|0x800|0x80) yes; o2 (0x3100 has
        // 0x2000) yes.
        assert_eq!(intel_slice(0x2000, 8), 0b110);
        // Bit 37 (0x20_0000_0000) is in o1 (0x2e..) and o2 (0x3c..) but not in
        // o0 (0x1b..).
        assert_eq!(intel_slice(1 << 37, 8), 0b110);
    }

    #[test]
    fn fewer_slices_use_fewer_hash_bits() {
        let addr = 0x1c0; // all three parities 1
        assert_eq!(intel_slice(addr, 1), 0);
        assert_eq!(intel_slice(addr, 2), 1);
        assert_eq!(intel_slice(addr, 4), 3);
        assert_eq!(intel_slice(0x100, 4), 0, "o2 is ignored with 4 slices");
    }

    #[test]
    fn intel_table_matches_the_parity_definition() {
        // The masks fit in the four table bytes, and random addresses agree.
        assert_eq!((INTEL_O0 | INTEL_O1 | INTEL_O2) >> (INTEL_LOW_BIT + 32), 0);
        assert_eq!((INTEL_O0 | INTEL_O1 | INTEL_O2) & ((1 << INTEL_LOW_BIT) - 1), 0);
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = x >> 12;
            assert_eq!(intel_slice(addr, 8), u32::from(intel_bits(addr)), "address {addr:#x}");
        }
    }

    #[test]
    fn modulo_interleaves_lines() {
        assert_eq!(modulo_slice(0, 4), 0);
        assert_eq!(modulo_slice(5, 4), 1);
        assert_eq!(modulo_slice(7, 4), 3);
        assert_eq!(modulo_slice(7, 1), 0);
    }

    #[test]
    fn slice_hash_names_are_serde_names() {
        for h in [SliceHash::Modulo, SliceHash::Intel, SliceHash::StandIn] {
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(json, format!("\"{}\"", h.name()));
        }
    }
}
