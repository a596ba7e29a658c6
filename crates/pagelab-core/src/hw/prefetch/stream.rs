//! The L2's stream prefetcher: per 4 KiB page, the direction of the last
//! L2 lookups; once two in a row go the same way, each lookup fetches the
//! next lines in that direction, a few per lookup and never too far ahead.

/// One page's stream.
#[derive(Debug, Clone, Copy, Default)]
struct Tracker {
    /// Page number + 1 (0 = empty).
    page: u64,
    last: u64,
    /// +1, -1, or 0 before a direction is known.
    dir: i64,
    /// Steps in a row in `dir`.
    steps: u32,
    /// The next line to prefetch in `dir`.
    next: u64,
    /// Last use, for least-recently-used replacement.
    stamp: u64,
}

/// Lines to prefetch: `count` lines from `first`, stepping by `dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub first: u64,
    pub count: u64,
    pub dir: i64,
}

#[derive(Debug, Clone)]
pub struct StreamTable {
    trackers: Vec<Tracker>,
    degree: u64,
    distance: u64,
    /// log2 of the lines in a 4 KiB page.
    page_shift: u32,
    clock: u64,
}

impl StreamTable {
    pub fn new(trackers: usize, degree: u32, distance: u32, line_shift: u32) -> StreamTable {
        StreamTable {
            trackers: vec![Tracker::default(); trackers],
            degree: degree as u64,
            distance: distance as u64,
            page_shift: 12u32.saturating_sub(line_shift),
            clock: 0,
        }
    }

    /// Learns an L2 lookup of `line`; returns the lines to prefetch. With
    /// `within_page` the run stops at the page's edge.
    ///
    /// Degree 2, distance 4, lines 0, 1, 2, 3 of one page: 0 starts a
    /// tracker, 1 sets the direction, 2 confirms it and fetches 3 and 4,
    /// 3 fetches 5 and 6 (never beyond 3 + 4 = 7).
    pub fn train(&mut self, line: u64, within_page: bool) -> Option<Run> {
        self.clock += 1;
        let page = (line >> self.page_shift) + 1;
        let slot = match self.trackers.iter().position(|t| t.page == page) {
            Some(slot) => slot,
            None => {
                let victim = (0..self.trackers.len()).min_by_key(|&i| self.trackers[i].stamp).unwrap_or(0);
                self.trackers[victim] = Tracker { page, last: line, dir: 0, steps: 0, next: line, stamp: self.clock };
                return None;
            }
        };
        let t = &mut self.trackers[slot];
        t.stamp = self.clock;
        let dir = (line as i64 - t.last as i64).signum();
        if dir == 0 {
            return None;
        }
        if dir != t.dir {
            (t.dir, t.steps, t.next) = (dir, 0, line);
        }
        t.steps += 1;
        t.last = line;
        if t.steps < 2 {
            return None;
        }
        // From past both the line and what was fetched already, up to
        // `distance` lines ahead of the line, `degree` at most.
        let ahead = |n: u64| line.wrapping_add_signed(dir * n as i64);
        let beyond = |a: u64, b: u64| if dir > 0 { a.max(b) } else { a.min(b) };
        let first = beyond(t.next, ahead(1));
        let room = (ahead(self.distance) as i64 - first as i64) * dir + 1;
        let mut count = (room.max(0) as u64).min(self.degree);
        if within_page {
            let edge = if dir > 0 { (page << self.page_shift) - 1 } else { (page - 1) << self.page_shift };
            let to_edge = (edge as i64 - first as i64) * dir + 1;
            count = count.min(to_edge.max(0) as u64);
        }
        if count == 0 {
            return None;
        }
        t.next = first.wrapping_add_signed(dir * count as i64);
        Some(Run { first, count, dir })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_runs_ahead_within_its_distance() {
        // 64-byte lines: 64 lines per 4 KiB page.
        let mut s = StreamTable::new(2, 2, 4, 6);
        let runs: Vec<_> = (0..5).map(|l| s.train(l, true)).collect();
        assert_eq!(runs[..2], [None, None]);
        assert_eq!(runs[2], Some(Run { first: 3, count: 2, dir: 1 }));
        assert_eq!(runs[3], Some(Run { first: 5, count: 2, dir: 1 }));
        assert_eq!(runs[4], Some(Run { first: 7, count: 2, dir: 1 }), "4 + 4 = 8 is the limit");
    }

    #[test]
    fn a_stream_stops_at_the_page_edge_unless_allowed() {
        let mut s = StreamTable::new(1, 4, 8, 6);
        for l in [60, 61] {
            assert_eq!(s.train(l, true), None);
        }
        // Lines 63 is the page's last: only 63 is left.
        assert_eq!(s.train(62, true), Some(Run { first: 63, count: 1, dir: 1 }));
        let mut s = StreamTable::new(1, 4, 8, 6);
        for l in [60, 61] {
            s.train(l, false);
        }
        assert_eq!(s.train(62, false), Some(Run { first: 63, count: 4, dir: 1 }));
        // Descending.
        let mut s = StreamTable::new(1, 2, 4, 6);
        for l in [130, 129] {
            assert_eq!(s.train(l, true), None);
        }
        assert_eq!(s.train(128, true), None, "128 is the page's first line: nothing below it");
    }
}
