//! A page's access history as HugeScope keeps it (its paper, section 3.5):
//! one 64-bit *access entry* per page and per 4 KiB region of a huge page,
//! the dirty bits of the last 32 intervals in the high half and the
//! accessed bits in the low half, the latest interval in bit 0 of each.
//! From it come a page's recency and frequency, and vTMM's hotness score
//! (the artifact's `lcd_work.c`).

/// Intervals an entry remembers.
pub const HISTORY: u32 = 32;

/// Scans vTMM's score reads (the artifact's `TRACE_LEN`).
pub const TRACE_LEN: u32 = 10;

/// Highest score over `TRACE_LEN` scans (3 a written scan): the artifact's
/// classifier has `MAX_SCORE + 1` buckets (31 in `hmmv/hot_or_cold.c`).
pub const MAX_SCORE: u32 = 3 * TRACE_LEN;

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct AccessEntry(u64);

impl AccessEntry {
    /// The end of an interval: both halves move one interval older and the
    /// interval's bits come in at bit 0 (a dirty page was accessed too).
    pub fn record(&mut self, accessed: bool, dirty: bool) {
        let acc = ((self.0 as u32) << 1) | u32::from(accessed || dirty);
        let dirt = (((self.0 >> 32) as u32) << 1) | u32::from(dirty);
        self.0 = (u64::from(dirt) << 32) | u64::from(acc);
    }

    fn accessed_bits(self) -> u32 {
        self.0 as u32
    }

    fn dirty_bits(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Intervals among the last `n` (at most 32) in which the page was
    /// accessed.
    pub fn accessed_in_last(self, n: u32) -> u32 {
        (self.accessed_bits() & last(n)).count_ones()
    }

    /// Intervals among the last `n` in which the page was written.
    pub fn written_in_last(self, n: u32) -> u32 {
        (self.dirty_bits() & last(n)).count_ones()
    }

    /// Whether the latest interval saw an access.
    pub fn accessed_last(self) -> bool {
        self.accessed_bits() & 1 != 0
    }

    /// vTMM's hotness (the artifact's `lcd_work.c`): over the last
    /// `TRACE_LEN` scans, 1 for a scan that saw the page read only and 3
    /// for one that saw it written; 0 to `MAX_SCORE`.
    pub fn score(self) -> u32 {
        let written = self.written_in_last(TRACE_LEN);
        let read_only = self.accessed_in_last(TRACE_LEN) - written;
        read_only + 3 * written
    }
}

fn last(n: u32) -> u32 {
    debug_assert!(n <= HISTORY);
    if n >= HISTORY {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_shifts_one_interval_a_record_and_forgets_after_32() {
        let mut e = AccessEntry::default();
        e.record(true, false); // read
        e.record(false, false); // idle
        e.record(true, true); // written

        // Latest first: written (acc 1, dirty 1), idle, read (acc 1).
        assert_eq!(e, AccessEntry((0b1 << 32) | 0b101));
        assert_eq!((e.accessed_in_last(1), e.accessed_in_last(2), e.accessed_in_last(3)), (1, 1, 2));
        assert_eq!((e.written_in_last(3), e.accessed_last()), (1, true));
        for _ in 0..30 {
            e.record(false, false);
        }
        // The read is 32 intervals old: gone; the write, 30: kept.
        assert_eq!((e.accessed_in_last(32), e.written_in_last(32)), (1, 1));
        e.record(false, false);
        assert_eq!(e.accessed_in_last(32), 1, "31 intervals old: the oldest an entry keeps");
        e.record(false, false);
        assert_eq!((e.accessed_in_last(32), e.written_in_last(32)), (0, 0));
    }

    #[test]
    fn the_score_is_one_a_read_scan_and_three_a_written_one_over_the_last_ten() {
        let mut e = AccessEntry::default();
        // 12 scans: 2 writes that will age out, then 4 reads, 3 writes, 3 idle.
        for (acc, dirty) in [(true, true); 2].into_iter().chain([(true, false); 4]).chain([(true, true); 3]) {
            e.record(acc, dirty);
        }
        for _ in 0..3 {
            e.record(false, false);
        }
        assert_eq!(e.score(), 4 + 3 * 3);
        let mut hottest = AccessEntry::default();
        (0..TRACE_LEN).for_each(|_| hottest.record(true, true));
        assert_eq!(hottest.score(), MAX_SCORE);
    }
}
