//! `pagelab trace info`: counts, footprint and a reuse-distance summary of
//! a trace, in one streaming pass.
//!
//! - `instructions`: all the trace's instructions (each lackey `I` line,
//!   each ChampSim record, the native `instrs` and instruction records);
//! - `loads`, `stores`: data accesses, a modify counting as one of each;
//!   `accesses = loads + stores - modifies` (cachegrind's "D refs": a
//!   modify counted once). A modify is a store to the address and size of
//!   the access just before it, a load, made by the same instruction
//!   (store `instrs` 0): how lackey's `M` lines are recorded in every format;
//! - `footprint`: distinct 4 KiB pages touched by data accesses x 4096;
//!   `pages_4k`, `pages_2m` count them (instruction pages apart:
//!   `ifetch_pages_4k`);
//! - `map_events`, and `partial_maps`: whether they leave out mappings the
//!   trace touches (lackey output; native traces flagged so);
//! - `reuse`: LRU stack distances in 64-byte lines (distinct other lines
//!   touched since the previous access to the same line) of the first
//!   [`REUSE_SAMPLE`] data accesses (a modify once), exact (a Fenwick tree
//!   over access times marks each line's latest access); first touches are
//!   `cold`, and `median`/`p90` are nearest-rank percentiles of the finite
//!   distances.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use super::{open, Sink, TraceFormat};
use crate::error::Result;
use crate::workload::{Access, AccessKind};

/// Data accesses whose reuse distance is computed (16 Mi: 64 MiB of tree).
pub const REUSE_SAMPLE: usize = 1 << 24;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TraceInfo {
    pub format: String,
    pub compression: String,
    pub instructions: u64,
    pub accesses: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    pub ifetches: u64,
    pub map_events: u64,
    /// The mapping events leave out mappings the trace touches (a captured
    /// program: exec's mappings); automatic VMAs stay on beside them.
    pub partial_maps: bool,
    pub footprint: u64,
    pub pages_4k: u64,
    pub pages_2m: u64,
    pub ifetch_pages_4k: u64,
    pub reuse: ReuseSummary,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReuseSummary {
    /// Data accesses examined (at most [`REUSE_SAMPLE`]).
    pub sampled: u64,
    /// First touches of a line among them.
    pub cold: u64,
    pub median: Option<u64>,
    pub p90: Option<u64>,
}

/// splitmix64's finaliser as a hasher: keys are page and line numbers.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        crate::workload::mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).rotate_left(5);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Fast = BuildHasherDefault<MixHasher>;

/// Exact LRU stack distances over access times.
#[derive(Debug, Default)]
struct Reuse {
    /// Fenwick tree: 1 at the latest access time of every line.
    tree: Vec<u32>,
    last: HashMap<u64, u32, Fast>,
    distances: Vec<u32>,
    time: u32,
    cold: u64,
}

impl Reuse {
    fn add(&mut self, mut i: usize, v: i32) {
        i += 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = self.tree[i - 1].wrapping_add_signed(v);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times [0, i).
    fn prefix(&self, mut i: usize) -> u32 {
        let mut s = 0;
        while i > 0 {
            s += self.tree[i - 1];
            i &= i - 1;
        }
        s
    }

    fn touch(&mut self, line: u64) {
        if self.tree.is_empty() {
            self.tree = vec![0; REUSE_SAMPLE];
        }
        let t = self.time;
        self.time += 1;
        match self.last.insert(line, t) {
            Some(p) => {
                let d = self.prefix(t as usize) - self.prefix(p as usize + 1);
                self.distances.push(d);
                self.add(p as usize, -1);
            }
            None => self.cold += 1,
        }
        self.add(t as usize, 1);
    }

    fn summary(mut self) -> ReuseSummary {
        let rank = |d: &mut Vec<u32>, q: f64| -> Option<u64> {
            if d.is_empty() {
                return None;
            }
            let k = ((q * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1;
            Some(*d.select_nth_unstable(k).1 as u64)
        };
        ReuseSummary {
            sampled: self.time as u64,
            cold: self.cold,
            median: rank(&mut self.distances, 0.5),
            p90: rank(&mut self.distances, 0.9),
        }
    }
}

#[derive(Debug, Default)]
struct Counter {
    info: TraceInfo,
    prev: Option<Access>,
    pages: HashSet<u64, Fast>,
    huge: HashSet<u64, Fast>,
    code: HashSet<u64, Fast>,
    reuse: Reuse,
}

impl Counter {
    fn count(&mut self, a: Access) {
        let i = &mut self.info;
        i.instructions += a.instrs as u64;
        let addr = a.vaddr.raw();
        match a.kind {
            AccessKind::IFetch => {
                i.ifetches += 1;
                self.code.insert(addr >> 12);
                self.prev = Some(a);
                return;
            }
            AccessKind::Load => i.loads += 1,
            AccessKind::Store => i.stores += 1,
        }
        let modify = a.kind == AccessKind::Store
            && a.instrs == 0
            && self.prev.is_some_and(|p| p.kind == AccessKind::Load && p.vaddr == a.vaddr && p.size == a.size);
        self.prev = Some(a);
        if modify {
            i.modifies += 1;
            // The store half of a modify is one access with its load.
            self.prev = None;
            return;
        }
        self.pages.insert(addr >> 12);
        self.huge.insert(addr >> 21);
        if (self.reuse.time as usize) < REUSE_SAMPLE {
            self.reuse.touch(addr >> 6);
        }
    }
}

/// Reads the whole trace at `path` once (streaming) and summarises it.
pub fn info(path: &Path, format: Option<TraceFormat>) -> Result<TraceInfo> {
    let d = open(path, format)?;
    let mut source = d.source;
    let mut sink = Sink::new(true);
    let mut c = Counter::default();
    loop {
        sink.clear();
        let more = source.fill(&mut sink)?;
        if !more {
            sink.finish();
        }
        for &a in &sink.batch.accesses {
            c.count(a);
        }
        c.info.map_events += sink.batch.events.len() as u64;
        c.info.instructions += sink.batch.trailing_instrs;
        if !more {
            break;
        }
    }
    let mut info = c.info;
    info.partial_maps = source.partial_maps();
    info.format = d.format.as_str().to_string();
    info.compression = d.compression.as_str().to_string();
    info.accesses = info.loads + info.stores - info.modifies;
    info.pages_4k = c.pages.len() as u64;
    info.pages_2m = c.huge.len() as u64;
    info.footprint = info.pages_4k * 4096;
    info.ifetch_pages_4k = c.code.len() as u64;
    info.reuse = c.reuse.summary();
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines A B C A B B: A's reuse sees B, C (2); B's sees C, A (2); the
    /// last B sees nothing (0). Three cold, distances {0, 2, 2}.
    #[test]
    fn stack_distances_by_hand() {
        let mut r = Reuse::default();
        for line in [1, 2, 3, 1, 2, 2] {
            r.touch(line);
        }
        assert_eq!(r.distances, vec![2, 2, 0]);
        let s = r.summary();
        assert_eq!((s.sampled, s.cold, s.median, s.p90), (6, 3, Some(2), Some(2)));
    }
}
