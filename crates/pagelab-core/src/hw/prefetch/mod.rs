//! Hardware data prefetchers (`machine.prefetch`): next-line and stride at
//! the L1D, stream at the L2 ([`config`]). The cache hierarchy runs them
//! after each demand load or store (`CacheHierarchy::access_prefetching`);
//! page-walk references and instruction fetches neither train nor trigger
//! them. A prefetch fills its level (and the levels below it, as a demand
//! miss would) without counting as an access or a miss there.
//!
//! Usefulness, per level: a prefetched line is *useful* when a demand
//! access (or, for the L2, an L1D prefetch) hits it there before it
//! leaves, *useless* when it leaves first.
//! [`Pending`] remembers the prefetched lines not yet used; a line is found
//! to have left when a demand access misses it, when it is prefetched
//! again, or when the record itself is pushed out (capacity: the level's
//! lines) and the cache no longer holds it. A line still waiting at the end
//! of a run is neither.

pub mod config;
pub mod stream;
pub mod stride;

pub use config::PrefetchConfig;

use crate::hw::lru_map::LruMap;

/// The lines a level received by prefetch and no demand access used yet.
#[derive(Debug, Clone)]
pub struct Pending {
    /// line -> still unused. Used lines stay as `false` until pushed out
    /// (the map cannot remove one key).
    lines: LruMap<bool>,
}

impl Pending {
    /// Room for `lines` records (at most 32768: the map's limit).
    pub fn new(lines: usize) -> Pending {
        Pending { lines: LruMap::new(lines.clamp(1, 32768)) }
    }

    /// A demand access to `line`: whether it was a prefetched, unused line.
    #[inline]
    pub fn take(&mut self, line: u64) -> bool {
        match self.lines.peek(line) {
            Some(true) => {
                self.lines.insert(line, false);
                true
            }
            _ => false,
        }
    }

    /// `line` was just prefetched. Returns a record pushed out while still
    /// unused, for the caller to check against the cache.
    #[inline]
    pub fn add(&mut self, line: u64) -> Option<u64> {
        match self.lines.insert(line, true) {
            Some((old, true)) => Some(old),
            _ => None,
        }
    }
}

/// One core's prefetchers and their records.
#[derive(Debug, Clone)]
pub struct Prefetchers {
    pub stride: stride::StrideTable,
    pub stream: stream::StreamTable,
    pub l1d: Pending,
    pub l2: Pending,
}

impl Prefetchers {
    pub fn new(cfg: &PrefetchConfig, l1d_lines: usize, l2_lines: usize, line_shift: u32) -> Prefetchers {
        Prefetchers {
            stride: stride::StrideTable::new(cfg.stride_entries as usize),
            stream: stream::StreamTable::new(
                cfg.stream_trackers as usize,
                cfg.stream_degree,
                cfg.stream_distance,
                line_shift,
            ),
            l1d: Pending::new(l1d_lines),
            l2: Pending::new(l2_lines),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_line_is_used_once() {
        let mut p = Pending::new(2);
        assert_eq!(p.add(10), None);
        assert!(p.take(10));
        assert!(!p.take(10), "used already");
        assert!(!p.take(11), "never prefetched");
        assert_eq!(p.add(11), None);
        // 12 pushes out the least recently used record: 10, already used.
        assert_eq!(p.add(12), None);
        // 13 pushes out 11, still unused.
        assert_eq!(p.add(13), Some(11));
    }

    #[test]
    fn the_defaults_are_valid_and_ranges_are_named() {
        assert!(PrefetchConfig::default().validate("machine.prefetch").is_ok());
        let bad = PrefetchConfig { stride_entries: 100, ..PrefetchConfig::default() };
        let err = bad.validate("machine.prefetch").unwrap_err().to_string();
        assert!(err.contains("machine.prefetch.stride_entries"), "{err}");
        let bad = PrefetchConfig { stream_degree: 8, stream_distance: 4, ..PrefetchConfig::default() };
        assert!(bad.validate("machine.prefetch").is_err());
    }
}
