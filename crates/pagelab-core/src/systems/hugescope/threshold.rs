//! The artifact's page-size policy (`hmmv/ept_scanner.c`,
//! `huge_page_split_select` and `collapse_th_change`; constants from
//! `ss_work.h`), offered beside the paper's PSR policy (`policy.rs`) as
//! `page_size_policy = "threshold"`: split a hot huge page when
//! 0 < accessed regions <= the split threshold, collapse a split region
//! when at least the collapse threshold of its regions were accessed.

use super::policy::{Skew, REGIONS};

/// `SP_SPLITE_THRESHOLD`, `SP_SPLITE_LOWER`, `SP_SPLITE_UPPER`.
pub const SPLIT_START: u32 = 70;
pub const SPLIT_LOWER: u32 = 10;
pub const SPLIT_UPPER: u32 = 250;
/// The threshold moves by this much a round.
pub const SPLIT_STEP: u32 = 20;
/// `SP_COLLAPSE_THRESHOLD`, `SP_COLLAPSE_THRESHOLD_LOWER`.
pub const COLLAPSE: u32 = 450;
pub const COLLAPSE_LOWER: u32 = 256;
/// At least this many huge pages may be split a round (`split_limit_num`).
pub const SPLIT_LIMIT_MIN: u64 = 500;

/// The split threshold as it moves from round to round.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitThreshold {
    pub value: u32,
    /// Whether a round with hot pressure was seen before (the artifact's
    /// `ls_tb != 0`: the first such round does not move the threshold).
    seen: bool,
}

impl Default for SplitThreshold {
    fn default() -> Self {
        SplitThreshold { value: SPLIT_START, seen: false }
    }
}

impl SplitThreshold {
    /// A round in which the hot pages exceed fast memory: the threshold
    /// rises (more pages split) while `hot_bytes` passes 1.2x `fast_bytes`
    /// and falls below 1.05x, within its bounds.
    pub fn adapt(&mut self, hot_bytes: u64, fast_bytes: u64) {
        let (hot, fast) = (u128::from(hot_bytes), u128::from(fast_bytes));
        if self.seen && hot * 5 > fast * 6 {
            if self.value < SPLIT_UPPER {
                self.value += SPLIT_STEP;
            }
        } else if self.seen && hot * 20 < fast * 21 && self.value > SPLIT_LOWER {
            self.value -= SPLIT_STEP;
        }
        self.seen = true;
    }

    /// The hot huge pages to split this round: 0 < accessed regions <=
    /// the threshold, in guest-frame order, at most `limit`.
    pub fn splits(&self, huge: &[Skew], limit: u64) -> Vec<u64> {
        let mut v: Vec<u64> =
            huge.iter().filter(|s| (1..=self.value).contains(&s.accessed_regions)).map(|s| s.gfn).collect();
        v.sort_unstable();
        v.truncate(limit as usize);
        v
    }

    /// How many huge pages a round may split: enough that the monitored
    /// hot huge pages beyond those fast memory holds shed their cold
    /// regions at this threshold, and never fewer than `SPLIT_LIMIT_MIN`.
    pub fn split_limit(&self, monitored: u64, fast_huge_pages: u64) -> u64 {
        let over = monitored.saturating_sub(fast_huge_pages) * u64::from(REGIONS);
        (over / u64::from(REGIONS - self.value)).max(SPLIT_LIMIT_MIN)
    }
}

/// The collapse threshold of a round: `COLLAPSE` while the round splits
/// or fast memory has no room; otherwise lowered so that the split regions
/// with the most accessed regions fill the room (`room_pages` 4 KiB pages):
/// from 512 accessed regions down, each count's regions take 512 pages of
/// the room, and the threshold is the count at which the room runs out.
/// When every region from 512 down to `COLLAPSE_LOWER` fits, the artifact's
/// loop ends one below, at 255.
pub fn collapse_threshold(need_split: bool, room_pages: i64, split: &[Skew]) -> u32 {
    if need_split || room_pages <= 0 {
        return COLLAPSE;
    }
    let mut by_count = [0i64; REGIONS as usize + 1];
    for s in split {
        by_count[s.accessed_regions.min(REGIONS) as usize] += 1;
    }
    let mut room = room_pages;
    let mut count = REGIONS;
    while count >= COLLAPSE_LOWER {
        room -= i64::from(REGIONS) * by_count[count as usize];
        if room < 0 {
            return count;
        }
        count -= 1;
    }
    count
}

/// The split regions to collapse: at least `threshold` regions accessed,
/// in guest-frame order.
pub fn collapses(split: &[Skew], threshold: u32) -> Vec<u64> {
    let mut v: Vec<u64> = split.iter().filter(|s| s.accessed_regions >= threshold).map(|s| s.gfn).collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skew(gfn: u64, accessed_regions: u32) -> Skew {
        Skew { gfn, accessed_regions }
    }

    #[test]
    fn the_split_threshold_moves_by_20_from_the_second_round_within_its_bounds() {
        let mut t = SplitThreshold::default();
        t.adapt(130, 100); // first round: no move
        assert_eq!(t.value, 70);
        t.adapt(121, 100); // > 1.2x
        assert_eq!(t.value, 90);
        t.adapt(110, 100); // between 1.05x and 1.2x: stays
        assert_eq!(t.value, 90);
        t.adapt(104, 100); // < 1.05x
        assert_eq!(t.value, 70);
        (0..20).for_each(|_| t.adapt(200, 100));
        assert_eq!(t.value, 250, "capped at SP_SPLITE_UPPER");
        (0..20).for_each(|_| t.adapt(100, 100));
        assert_eq!(t.value, 10, "floored at SP_SPLITE_LOWER");
    }

    #[test]
    fn it_splits_skewed_hot_pages_only_and_collapses_dense_regions() {
        let t = SplitThreshold::default();
        let huge = [skew(1536, 70), skew(0, 0), skew(512, 71), skew(1024, 1)];
        assert_eq!(t.splits(&huge, 500), vec![1024, 1536], "0 < regions <= 70");
        assert_eq!(t.splits(&huge, 1), vec![1024]);
        let split = [skew(0, 450), skew(512, 449), skew(1024, 512)];
        assert_eq!(collapses(&split, COLLAPSE), vec![0, 1024]);
    }

    #[test]
    fn the_split_limit_is_the_excess_over_the_regions_left_hot_and_at_least_500() {
        let t = SplitThreshold::default();
        // 2,000 monitored against 1,000 in fast memory: 1,000 x 512 / 442.
        assert_eq!(t.split_limit(2_000, 1_000), 512_000 / 442);
        assert_eq!(t.split_limit(1_200, 1_000), 500);
        assert_eq!(t.split_limit(10, 1_000), 500);
    }

    #[test]
    fn the_collapse_threshold_falls_to_fill_fast_memory_with_the_densest_regions() {
        let split = [skew(0, 512), skew(512, 500), skew(1024, 500), skew(1536, 300)];
        assert_eq!(collapse_threshold(true, 1 << 20, &split), COLLAPSE, "a splitting round keeps 450");
        assert_eq!(collapse_threshold(false, 0, &split), COLLAPSE, "no room");
        // Room for 2 huge pages: 512 fits (room 512 left), the two 500s
        // do not: the threshold is 500.
        assert_eq!(collapse_threshold(false, 1024, &split), 500);
        // Room for 3: 512 and both 500s fit, 300 does not.
        assert_eq!(collapse_threshold(false, 1536, &split), 300);
        // Room for all: the loop runs out below 256.
        assert_eq!(collapse_threshold(false, 1 << 20, &split), 255);
    }
}
