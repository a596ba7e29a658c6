//! Bitmaps behind the free lists.
//!
//! Linux threads free pages on doubly linked lists through `struct page`; a
//! simulator of a 1 TiB machine cannot afford pointers per frame, so the free
//! lists are bitmaps instead: [`Bitmap`] is a flat bitmap (one bit per aligned
//! block of an order), [`SummaryBitmap`] a bitmap with summary levels, where a
//! bit of level `i + 1` says "word `j` of level `i` is not zero". Finding the
//! lowest set bit is then one find-first-set per level (four levels cover
//! 2^24 bits).

/// A flat bitmap of `len` bits, all clear at creation. The words come from
/// `vec![0; n]`, which the allocator hands out lazily zeroed, so an untouched
/// bitmap costs no resident memory.
#[derive(Debug, Clone)]
pub(crate) struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    pub(crate) fn new(len: u64) -> Self {
        Bitmap { words: vec![0; len.div_ceil(64) as usize] }
    }

    #[inline]
    pub(crate) fn get(&self, bit: u64) -> bool {
        match self.words.get((bit / 64) as usize) {
            Some(w) => w & (1 << (bit % 64)) != 0,
            None => false,
        }
    }

    #[inline]
    pub(crate) fn set(&mut self, bit: u64) {
        self.words[(bit / 64) as usize] |= 1 << (bit % 64);
    }

    #[inline]
    pub(crate) fn clear(&mut self, bit: u64) {
        self.words[(bit / 64) as usize] &= !(1 << (bit % 64));
    }

    /// Words (index, masked value) of the aligned range `[start, start+len)`,
    /// `len` a power of two and `start` a multiple of it. Words past the end
    /// of the bitmap are skipped (they hold no bits).
    #[inline]
    fn range_words(&self, start: u64, len: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        debug_assert!(len.is_power_of_two() && start.is_multiple_of(len));
        let (first, last, mask) = if len >= 64 {
            (start / 64, (start + len) / 64, u64::MAX)
        } else {
            (start / 64, start / 64 + 1, ((1u64 << len) - 1) << (start % 64))
        };
        let last = last.min(self.words.len() as u64);
        (first..last).map(move |i| (i, self.words[i as usize] & mask))
    }

    /// Lowest set bit in the aligned range `[start, start+len)`.
    #[inline]
    pub(crate) fn first_in(&self, start: u64, len: u64) -> Option<u64> {
        self.range_words(start, len).find(|&(_, w)| w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as u64)
    }

    /// Whether any bit of the aligned range `[start, start+len)` is set,
    /// looking first at the word holding `near` (a bit of the range): when
    /// set bits cluster, as a pageblock's free heads do, one word decides.
    #[inline]
    pub(crate) fn any_in_near(&self, start: u64, len: u64, near: u64) -> bool {
        debug_assert!((start..start + len).contains(&near));
        let mask = if len >= 64 { u64::MAX } else { ((1u64 << len) - 1) << (start % 64) };
        let word = self.words.get((near / 64) as usize).map_or(0, |w| w & mask);
        word != 0 || self.range_words(start, len).any(|(_, w)| w != 0)
    }

    /// Number of set bits in the aligned range `[start, start+len)`.
    #[inline]
    pub(crate) fn count_in(&self, start: u64, len: u64) -> u64 {
        self.range_words(start, len).map(|(_, w)| w.count_ones() as u64).sum()
    }

    /// All set bits, lowest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        set_bits(&self.words)
    }

    pub(crate) fn heap_bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }
}

/// The set bits of a run of words, lowest first.
fn set_bits(words: &[u64]) -> impl Iterator<Item = u64> + '_ {
    words.iter().enumerate().filter(|(_, &w)| w != 0).flat_map(|(i, &w)| SetBits(w).map(move |b| i as u64 * 64 + b))
}

/// The set bits of one word, lowest first.
struct SetBits(u64);

impl Iterator for SetBits {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros() as u64;
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// A bitmap with summary levels: `levels[0]` holds the bits, and bit `j` of
/// `levels[i + 1]` is set iff word `j` of `levels[i]` is not zero. The top
/// level is a single word.
#[derive(Debug, Clone)]
pub(crate) struct SummaryBitmap {
    levels: Vec<Vec<u64>>,
}

impl SummaryBitmap {
    pub(crate) fn new(len: u64) -> Self {
        let mut levels = vec![vec![0u64; len.div_ceil(64).max(1) as usize]];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().map_or(1, |l| l.len() as u64);
            levels.push(vec![0; below.div_ceil(64) as usize]);
        }
        SummaryBitmap { levels }
    }

    #[inline]
    pub(crate) fn get(&self, bit: u64) -> bool {
        self.levels[0].get((bit / 64) as usize).is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    /// Sets `bit`; summary bits are set up to the first level that already
    /// had a non-zero word.
    #[inline]
    pub(crate) fn set(&mut self, bit: u64) {
        let mut index = bit;
        for level in &mut self.levels {
            let word = &mut level[(index / 64) as usize];
            let was_empty = *word == 0;
            *word |= 1 << (index % 64);
            if !was_empty {
                return;
            }
            index /= 64;
        }
    }

    /// Clears `bit`; summary bits are cleared while words become zero.
    #[inline]
    pub(crate) fn clear(&mut self, bit: u64) {
        let mut index = bit;
        for level in &mut self.levels {
            let word = &mut level[(index / 64) as usize];
            *word &= !(1 << (index % 64));
            if *word != 0 {
                return;
            }
            index /= 64;
        }
    }

    /// Lowest set bit: one trailing-zeros per level, top down.
    #[inline]
    pub(crate) fn first(&self) -> Option<u64> {
        let top = self.levels.last()?[0];
        if top == 0 {
            return None;
        }
        let mut index = top.trailing_zeros() as u64;
        for level in self.levels.iter().rev().skip(1) {
            let word = level[index as usize];
            debug_assert!(word != 0, "summary bit set over an empty word");
            index = index * 64 + word.trailing_zeros() as u64;
        }
        Some(index)
    }

    /// All set bits (of the bottom level), lowest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        set_bits(&self.levels[0])
    }

    /// Checks that every summary bit matches the words below it.
    pub(crate) fn check(&self) -> Result<(), String> {
        for pair in self.levels.windows(2) {
            let (below, above) = (&pair[0], &pair[1]);
            for (j, &w) in below.iter().enumerate() {
                let summary = above[j / 64] & (1 << (j % 64)) != 0;
                if summary != (w != 0) {
                    return Err(format!("summary bit {j} is {summary} over word {w:#x}"));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn heap_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.len() as u64 * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_bitmap_ranges() {
        let mut b = Bitmap::new(1024);
        b.set(70);
        b.set(75);
        b.set(600);
        assert_eq!(b.first_in(64, 8), Some(70));
        assert_eq!(b.first_in(72, 8), Some(75));
        assert_eq!(b.first_in(0, 64), None);
        assert_eq!(b.count_in(0, 512), 2);
        assert_eq!(b.count_in(512, 512), 1);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![70, 75, 600]);
        b.clear(70);
        assert!(!b.get(70) && b.get(75));
        // A range that runs past the end of a short bitmap is clipped.
        let short = Bitmap::new(10);
        assert_eq!(short.first_in(0, 512), None);
    }

    #[test]
    fn any_in_near_looks_at_the_whole_range() {
        let mut b = Bitmap::new(1024);
        b.set(75);
        b.set(600);
        // The word of `near` decides, or the rest of the range does.
        assert!(b.any_in_near(64, 16, 64));
        assert!(b.any_in_near(0, 512, 3));
        assert!(!b.any_in_near(0, 64, 3));
        // Bits of the same word outside the range do not count.
        assert!(!b.any_in_near(64, 8, 64));
        assert!(b.any_in_near(512, 512, 1000));
        b.clear(600);
        assert!(!b.any_in_near(512, 512, 600));
    }

    #[test]
    fn summary_bitmap_finds_lowest_across_levels() {
        // 300_000 bits: levels of 4688, 74, 2 and 1 words.
        let mut s = SummaryBitmap::new(300_000);
        assert_eq!(s.levels.len(), 4);
        assert_eq!(s.first(), None);
        s.set(299_999);
        s.set(123_456);
        assert_eq!(s.first(), Some(123_456));
        s.clear(123_456);
        assert_eq!(s.first(), Some(299_999));
        s.check().unwrap();
        s.clear(299_999);
        assert_eq!(s.first(), None);
        s.check().unwrap();
        // Setting twice and clearing once clears (a bit, not a count).
        s.set(5);
        s.set(5);
        s.clear(5);
        assert_eq!(s.iter().count(), 0);
    }

    #[test]
    fn summary_bitmap_of_one_word() {
        let mut s = SummaryBitmap::new(3);
        s.set(2);
        assert_eq!(s.first(), Some(2));
        assert!(s.get(2) && !s.get(1));
    }
}
