//! The L1D's instruction-pointer stride prefetcher: a direct-mapped table
//! indexed by the load's program-counter tag, each entry the last line the
//! instruction touched and the stride between its last two lines. A stride
//! seen twice in a row is trusted.

/// One load instruction's history.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// Program-counter tag + 1 (0 = empty).
    tag: u32,
    last: u64,
    stride: i64,
    /// The same stride was seen this many times in a row after the first.
    repeats: u8,
}

#[derive(Debug, Clone)]
pub struct StrideTable {
    entries: Vec<Entry>,
}

impl StrideTable {
    /// `entries` is a power of two (validated by `PrefetchConfig`).
    pub fn new(entries: usize) -> StrideTable {
        debug_assert!(entries.is_power_of_two());
        StrideTable { entries: vec![Entry::default(); entries] }
    }

    /// Learns that instruction `pc` touched `line`; returns the stride to
    /// prefetch along when it repeats. Touching the same line again teaches
    /// nothing (a loop over one line's words).
    ///
    /// Lines 0, 4, 8, 12 from one instruction: 0 is remembered, 4 gives
    /// stride 4 (seen once), 8 repeats it (prefetch along 4), 12 too.
    #[inline]
    pub fn train(&mut self, pc: u16, line: u64) -> Option<i64> {
        let mask = self.entries.len() - 1;
        let e = &mut self.entries[pc as usize & mask];
        let tag = pc as u32 + 1;
        if e.tag != tag {
            *e = Entry { tag, last: line, stride: 0, repeats: 0 };
            return None;
        }
        let stride = line.wrapping_sub(e.last) as i64;
        if stride == 0 {
            return None;
        }
        e.last = line;
        if stride == e.stride {
            e.repeats = e.repeats.saturating_add(1);
        } else {
            e.stride = stride;
            e.repeats = 0;
        }
        (e.repeats >= 1).then_some(stride)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stride_is_trusted_when_it_repeats() {
        let mut t = StrideTable::new(4);
        let got: Vec<_> = [0, 4, 8, 12, 12, 16].iter().map(|&l| t.train(7, l)).collect();
        assert_eq!(got, [None, None, Some(4), Some(4), None, Some(4)]);
        // Another instruction of the same table slot (7 and 3 share it)
        // starts over; a descending stride works the same way.
        let got: Vec<_> = [100, 97, 94].iter().map(|&l| t.train(3, l)).collect();
        assert_eq!(got, [None, None, Some(-3)]);
    }
}
