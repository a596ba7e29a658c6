//! `machine.prefetch`: the hardware data prefetchers. The defaults are what
//! an Intel core since Sandy Bridge ships switched on (Intel's optimization
//! manual, "Data Prefetching"): at the L1D a next-line prefetcher (the DCU
//! prefetcher) and an instruction-pointer stride prefetcher; at the L2 a
//! streamer that follows ascending or descending runs of lines within a
//! 4 KiB page, "up to 20 lines ahead", two lines per lookup, 32 streams.
//! None of them crosses a 4 KiB page (`cross_pages`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrefetchConfig {
    /// Every prefetcher on or off (off = nothing runs, nothing is counted).
    pub enabled: bool,
    /// L1D: an L1D miss on line X fetches line X + 1 into the L1D.
    pub next_line: bool,
    /// L1D: per load instruction (its program-counter tag), a stride seen
    /// twice in a row fetches the next `stride_degree` lines along it.
    pub stride: bool,
    pub stride_degree: u32,
    /// Load instructions the stride prefetcher tracks (a power of two;
    /// direct-mapped by program-counter tag).
    pub stride_entries: u32,
    /// L2: per 4 KiB page, two L2 lookups in one direction start a stream;
    /// each later lookup fetches up to `stream_degree` lines into the L2,
    /// never more than `stream_distance` lines ahead of it.
    pub stream: bool,
    pub stream_degree: u32,
    pub stream_distance: u32,
    /// Pages whose streams are tracked at once (least recently used out).
    pub stream_trackers: u32,
    /// Whether a prefetch may leave the 4 KiB page of the access that
    /// triggered it (no Intel core's does).
    pub cross_pages: bool,
}

impl Default for PrefetchConfig {
    fn default() -> Self {
        PrefetchConfig {
            enabled: true,
            next_line: true,
            stride: true,
            stride_degree: 1,
            stride_entries: 256,
            stream: true,
            stream_degree: 2,
            stream_distance: 20,
            stream_trackers: 32,
            cross_pages: false,
        }
    }
}

impl PrefetchConfig {
    pub fn validate(&self, key: &str) -> Result<()> {
        let limits = [
            ("stride_degree", self.stride_degree, 16),
            ("stride_entries", self.stride_entries, 4096),
            ("stream_degree", self.stream_degree, 16),
            ("stream_distance", self.stream_distance, 64),
            ("stream_trackers", self.stream_trackers, 256),
        ];
        for (name, value, max) in limits {
            if !(1..=max).contains(&value) {
                return Err(Error::config(format!("{key}.{name}"), format!("{value} is not between 1 and {max}")));
            }
        }
        if !self.stride_entries.is_power_of_two() {
            return Err(Error::config(format!("{key}.stride_entries"), "must be a power of two from 1 to 4096"));
        }
        if self.stream_degree > self.stream_distance {
            return Err(Error::config(
                format!("{key}.stream_degree"),
                format!("{} lines per lookup cannot fit {} lines ahead", self.stream_degree, self.stream_distance),
            ));
        }
        Ok(())
    }

    /// Whether any prefetcher runs.
    pub fn any(&self) -> bool {
        self.enabled && (self.next_line || self.stride || self.stream)
    }
}
