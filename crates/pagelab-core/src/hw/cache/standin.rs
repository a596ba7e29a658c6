//! The stand-in slice hash (`slice_hash = "stand-in"`): any slice count,
//! for machines whose hash is not public in a form pagelab can use.
//!
//! What is known. Maurice et al. (RAID 2015) recovered Intel's XOR hash for
//! 2, 4 and 8 slices (`super::slice`). McCalpin (TACC technical report
//! "Mapping Addresses to L3/CHA Slices in Intel Processors", 2021, and its
//! blog post) describes the server parts with 14 to 28 slices, 20 among them,
//! as a short "base sequence" of slice numbers (16 to 16,384 entries)
//! repeated over consecutive blocks of memory, each block's copy reordered by
//! a "binary permutation" (its index XORed with a value) that XOR-reductions
//! of higher address bits select. pagelab does not have the measured base
//! sequences, so this module keeps that structure and makes its contents up:
//!
//! - The block is the line number above the set index within a slice (so the
//!   set within a slice stays the line's low bits, as on Intel: 2,048 sets
//!   use address bits 6-16), and its low [`SEQUENCE_BITS`] bits index a base
//!   sequence of 4,096 entries, entry i = slice `order[i mod slices]`, where
//!   `order` is a permutation of the slices drawn from `slice_seed`. Aligned
//!   runs of blocks are therefore spread over the slices as evenly as a
//!   round robin: contiguous memory fills every slice alike.
//! - The block's higher bits select the binary permutation: the XOR of one
//!   random 12-bit value per set bit (four byte-table lookups, drawn from
//!   `slice_seed`), XORed into the sequence index.
//! - Unlike McCalpin's measurements, where consecutive lines go to different
//!   slices, the COPLACE paper (section IV) describes a page as mapped "to a
//!   few possible cache slices". The stand-in follows the paper: a line's
//!   position within its page (address bits 6-11), folded two bits at a
//!   time, adds an offset of 0 to 3, so the lines of a page spread evenly
//!   over [`SPREAD`] consecutive slices (fewer when there are fewer slices).
//!
//! So a page's slices are decided by address bits 6-11 and by the page-level
//! bits from the top of the slice's set index upwards (17 and up on the
//! xeon-gold-6138 preset), which [`StandIn::page_bits`] lists. Every choice
//! above (sequence length, spread, round robin) is pagelab's, not Intel's:
//! `slice_seed` varies the two random parts so that a result's sensitivity
//! to the stand-in can be measured.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// log2 of the base sequence's length (4,096 entries: 204 or 205 per slice
/// with 20 slices, so random lines reach every slice within 0.5%).
pub const SEQUENCE_BITS: u32 = 12;
const SEQUENCE_LEN: usize = 1 << SEQUENCE_BITS;
/// Bytes of the block number above the sequence index that select the
/// permutation: 32 bits, which with 2,048 sets per slice reach address bit
/// 61, above any physical address.
const SELECT_BYTES: usize = 4;
/// Most slices a page's lines spread over.
pub const SPREAD: u32 = 4;
/// Most slices the stand-in takes (slice numbers are `u16`; real parts have
/// at most a few dozen).
pub const MAX_SLICES: u32 = 1024;

/// The stand-in hash of one LLC: its tables, built once from the geometry
/// and the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandIn {
    slices: u32,
    /// log2 of the sets per slice: line-number bits below the block.
    block_shift: u32,
    sequence: Box<[u16]>,
    select: Box<[[u16; 256]; SELECT_BYTES]>,
    /// Offset of each line within a page (index: line number mod lines per
    /// page), already reduced below the slice count.
    offset: Box<[u16]>,
    offset_mask: u64,
}

impl StandIn {
    /// The hash for `slices` slices (1..=[`MAX_SLICES`]) of `sets_per_slice`
    /// sets (a power of two) of `1 << line_shift`-byte lines.
    pub fn new(slices: u32, sets_per_slice: u32, line_shift: u32, seed: u64) -> StandIn {
        assert!((1..=MAX_SLICES).contains(&slices) && sets_per_slice.is_power_of_two());
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5_71ce_57a2_d1e5);
        let mut order: Vec<u16> = (0..slices as u16).collect();
        order.shuffle(&mut rng);
        let sequence = (0..SEQUENCE_LEN).map(|i| order[i % slices as usize]).collect();
        let bit_values: Vec<u16> =
            (0..8 * SELECT_BYTES).map(|_| rng.random::<u16>() & (SEQUENCE_LEN as u16 - 1)).collect();
        let mut select = Box::new([[0u16; 256]; SELECT_BYTES]);
        for (byte, table) in select.iter_mut().enumerate() {
            for (value, entry) in table.iter_mut().enumerate() {
                *entry = (0..8).filter(|b| value >> b & 1 == 1).fold(0, |acc, b| acc ^ bit_values[8 * byte + b]);
            }
        }
        let lines_per_page = 1usize << crate::units::PAGE_SHIFT.saturating_sub(line_shift);
        let offset = (0..lines_per_page as u64).map(|l| (fold2(l) % slices.min(SPREAD) as u64) as u16).collect();
        StandIn {
            slices,
            block_shift: sets_per_slice.trailing_zeros(),
            sequence,
            select,
            offset,
            offset_mask: lines_per_page as u64 - 1,
        }
    }

    /// The slice of line number `line`: a sequence entry plus the line's
    /// offset in its page, wrapped by one subtraction (both are below the
    /// slice count), so no division.
    #[inline]
    pub fn slice(&self, line: u64) -> u32 {
        let block = line >> self.block_shift;
        let high = block >> SEQUENCE_BITS;
        let byte = |i: usize| self.select[i][(high >> (8 * i) & 0xff) as usize];
        let permutation = byte(0) ^ byte(1) ^ byte(2) ^ byte(3);
        let index = (block as usize ^ usize::from(permutation)) & (SEQUENCE_LEN - 1);
        let slice = u32::from(self.sequence[index]) + u32::from(self.offset[(line & self.offset_mask) as usize]);
        if slice >= self.slices {
            slice - self.slices
        } else {
            slice
        }
    }

    /// The address bits the hash reads at or above bit 12 (the page-level
    /// slice-select bits), lowest first: from the top of the set index within
    /// a slice up to the last bit the permutation reads, for lines of
    /// `1 << line_shift` bytes.
    pub fn page_bits(sets_per_slice: u32, line_shift: u32) -> std::ops::Range<u32> {
        let low = line_shift + sets_per_slice.trailing_zeros();
        let high = (low + SEQUENCE_BITS + 8 * SELECT_BYTES as u32).min(64);
        low.max(crate::units::PAGE_SHIFT)..high
    }
}

/// `x`'s bits folded two at a time by XOR: 0..=3, each value taken by a
/// quarter of any aligned run of 4^k numbers.
fn fold2(mut x: u64) -> u64 {
    let mut folded = 0;
    while x != 0 {
        folded ^= x & 3;
        x >>= 2;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xeon-gold-6138's LLC: 20 slices of 2,048 sets, 64-byte lines.
    fn gold(seed: u64) -> StandIn {
        StandIn::new(20, 2048, 6, seed)
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn a_million_random_lines_spread_evenly_over_twenty_slices() {
        let hash = gold(0);
        let mut counts = [0u32; 20];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let n = 1_000_000;
        for _ in 0..n {
            counts[hash.slice(xorshift(&mut x) >> 30) as usize] += 1;
        }
        let expected = f64::from(n) / 20.0;
        for (slice, &c) in counts.iter().enumerate() {
            let off = (f64::from(c) - expected).abs() / expected;
            assert!(off < 0.02, "slice {slice}: {c} lines, {:.2}% off 1/20", 100.0 * off);
        }
    }

    #[test]
    fn contiguous_memory_fills_every_slice_alike() {
        // 40 blocks of 128 KiB (5 MiB): two rounds of the round robin, and
        // within a block each page's offsets cover 4 slices equally.
        let hash = gold(0);
        let mut counts = [0u32; 20];
        for line in 0..40 * 2048u64 {
            counts[hash.slice(line) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c == 40 * 2048 / 20), "{counts:?}");
    }

    #[test]
    fn a_page_spreads_over_four_consecutive_slices() {
        let hash = gold(0);
        for page in [0u64, 1, 37, 12_345, 1 << 30] {
            let mut counts = std::collections::BTreeMap::new();
            for l in 0..64 {
                *counts.entry(hash.slice(page * 64 + l)).or_insert(0) += 1;
            }
            assert_eq!(counts.len(), 4, "page {page}: {counts:?}");
            assert!(counts.values().all(|&c| c == 16), "page {page}: {counts:?}");
            let first = hash.slice(page * 64);
            let mut wanted: Vec<u32> = (0..4).map(|o| (first + o) % 20).collect();
            wanted.sort_unstable();
            assert_eq!(counts.keys().copied().collect::<Vec<_>>(), wanted, "page {page}: consecutive slices");
        }
    }

    #[test]
    fn the_page_bits_below_the_block_leave_the_slices_alone() {
        // Pages 0..32 share block 0 (address bits 12-16 are set bits), and
        // flipping bit 17 moves the page to another entry of the sequence.
        let hash = gold(0);
        let slices = |page: u64| (0..64).map(|l| hash.slice(page * 64 + l)).collect::<Vec<_>>();
        for page in 1..32 {
            assert_eq!(slices(page), slices(0), "page {page}");
        }
        assert_ne!(slices(32)[0], slices(0)[0], "bit 17 selects the next sequence entry");
        assert_eq!(StandIn::page_bits(2048, 6), 17..61);
        assert_eq!(StandIn::page_bits(4, 6), 12..52, "small slices: page bits start at 12");
    }

    #[test]
    fn higher_bits_permute_the_sequence() {
        // Bit 29 (block bit 12) is the first the permutation reads: the
        // slices of a block far away follow another order.
        let hash = gold(0);
        let round = |base: u64| (0..20u64).map(|b| hash.slice(base + b * 2048)).collect::<Vec<_>>();
        assert_ne!(round(0), round(1 << 23), "line 1 << 23 = address bit 29");
    }

    #[test]
    fn the_seed_varies_the_hash_and_only_it() {
        let lines: Vec<u64> = (0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20).collect();
        let map = |seed| lines.iter().map(|&l| gold(seed).slice(l)).collect::<Vec<_>>();
        assert_eq!(map(7), map(7));
        let (a, b) = (map(0), map(1));
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        assert!(same < lines.len() / 5, "{same} of {} lines kept their slice", lines.len());
    }

    #[test]
    fn few_slices_and_fold2() {
        assert_eq!((0..16).map(fold2).collect::<Vec<_>>(), [0, 1, 2, 3, 1, 0, 3, 2, 2, 3, 0, 1, 3, 2, 1, 0]);
        for slices in 1..=5 {
            let hash = StandIn::new(slices, 64, 6, 3);
            for line in 0..100_000u64 {
                assert!(hash.slice(line) < slices);
            }
        }
    }
}
