//! A trace as a workload (`workload.kind = "trace"`): the reader fills a
//! staging batch one chunk at a time; `next_batch` moves up to `max`
//! accesses out of it, so host memory holds one chunk, never the file.
//! The workload knows it is exhausted exactly when it hands out the last
//! records (it refills the staging batch before answering), so the engine
//! sees the same last batch as from a generator.

use std::path::PathBuf;

use super::{bad, open, Sink, Source, TraceFormat};
use crate::error::{Error, Result};
use crate::workload::{Batch, Workload, WorkloadConfig};

pub struct TraceWorkload {
    name: String,
    path: PathBuf,
    source: Box<dyn Source>,
    staging: Sink,
    /// Next access / event of the staging batch to hand out.
    pos: usize,
    next_event: usize,
    /// The source has ended (the staging batch holds its last records).
    source_done: bool,
    /// `workload.instructions` (0 = all) and the instructions handed out.
    limit: u64,
    handed: u64,
    finished: bool,
    error: Option<Error>,
    format: TraceFormat,
    partial_maps: bool,
    /// The accesses it will hand out, when known in advance.
    total: Option<u64>,
}

impl std::fmt::Debug for TraceWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWorkload").field("path", &self.path).field("format", &self.format).finish()
    }
}

impl TraceWorkload {
    /// Opens `cfg.path` (already validated: kind = trace, path set).
    pub fn new(cfg: &WorkloadConfig, key_prefix: &str) -> Result<Self> {
        let path = cfg
            .path
            .clone()
            .ok_or_else(|| Error::config(format!("{key_prefix}.path"), "a trace workload needs a path"))?;
        let d = open(&path, cfg.format)?;
        let partial_maps = d.source.partial_maps();
        let total = match (d.format, d.compression) {
            (TraceFormat::Native, super::Compression::None) => {
                super::native::end_totals(&path).map(|t| expected_accesses(cfg, &t))
            }
            _ => None,
        };
        let name = cfg.name.clone().unwrap_or_else(|| {
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into())
        });
        Ok(TraceWorkload {
            name,
            path,
            source: d.source,
            staging: Sink::new(cfg.ifetch),
            pos: 0,
            next_event: 0,
            source_done: false,
            limit: cfg.instructions,
            handed: 0,
            finished: false,
            error: None,
            format: d.format,
            partial_maps,
            total,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// The error that ended the trace early, if any (a corrupt or
    /// truncated file); `next_batch` returned false when it happened.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn drained(&self) -> bool {
        self.pos == self.staging.batch.accesses.len() && self.next_event == self.staging.batch.events.len()
    }

    /// Refills the staging batch while it is drained and the source has
    /// more. Errors end the trace and are kept for `take_error`.
    fn refill(&mut self) -> Result<()> {
        while self.drained() && !self.source_done {
            let trailing = self.staging.batch.trailing_instrs;
            self.staging.clear();
            self.staging.batch.trailing_instrs = trailing;
            self.pos = 0;
            self.next_event = 0;
            self.source_done = !self.source.fill(&mut self.staging)?;
            if self.source_done {
                self.staging.finish();
            }
            if self.staging.overflow {
                return Err(bad(&self.path, 0, "more than 2^32-1 instructions between two memory accesses"));
            }
        }
        Ok(())
    }

    /// Moves accesses [pos, end) and the events due before them.
    fn take(&mut self, batch: &mut Batch, max: usize) {
        let s = &self.staging.batch;
        while let Some((at, e)) = s.events.get(self.next_event) {
            if *at as usize > self.pos {
                break;
            }
            batch.events.push((batch.accesses.len() as u32, e.clone()));
            self.next_event += 1;
        }
        let next_event_at = s.events.get(self.next_event).map_or(usize::MAX, |e| e.0 as usize);
        let mut end = s.accesses.len().min(self.pos + (max - batch.accesses.len())).min(next_event_at);
        if self.limit != 0 {
            end = self.cut_at_limit(end);
        }
        batch.accesses.extend_from_slice(&self.staging.batch.accesses[self.pos..end]);
        self.pos = end;
    }

    /// The first access in [pos, end) whose instruction lies beyond
    /// `workload.instructions`; marks the trace finished there.
    fn cut_at_limit(&mut self, end: usize) -> usize {
        for i in self.pos..end {
            let n = self.staging.batch.accesses[i].instrs as u64;
            if self.handed + n > self.limit {
                self.finished = true;
                return i;
            }
            self.handed += n;
        }
        end
    }
}

impl Workload for TraceWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> bool {
        if self.finished {
            return false;
        }
        if let Err(e) = self.fill_batch(batch, max) {
            self.error = Some(e);
            self.finished = true;
            return false;
        }
        if self.finished {
            // Cut by workload.instructions: the compute before the cut
            // access still ran, up to the limit.
            batch.trailing_instrs += self.limit - self.handed;
            self.handed = self.limit;
        } else if self.drained() && self.source_done {
            self.finished = true;
            self.add_trailing(batch);
        }
        !self.finished
    }

    /// Unknown before the trace is read: traces are streamed.
    fn footprint(&self) -> u64 {
        0
    }

    fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn partial_mappings(&self) -> bool {
        self.partial_maps
    }

    fn total_accesses(&self) -> Option<u64> {
        self.total
    }
}

/// The accesses a native trace with end record `t` hands out under `cfg`:
/// its fetches only with `workload.ifetch`; cut by `workload.instructions`,
/// the share of the instructions (an estimate: accesses per instruction
/// vary along a trace).
fn expected_accesses(cfg: &WorkloadConfig, t: &super::NativeTotals) -> u64 {
    let all = if cfg.ifetch { t.accesses } else { t.accesses.saturating_sub(t.ifetches) };
    if cfg.instructions == 0 || cfg.instructions >= t.instructions {
        all
    } else {
        (all as u128 * cfg.instructions as u128 / t.instructions.max(1) as u128) as u64
    }
}

impl TraceWorkload {
    /// Moves up to `max` accesses into `batch`, then refills the staging
    /// batch so that the end of the trace is known.
    fn fill_batch(&mut self, batch: &mut Batch, max: usize) -> Result<()> {
        loop {
            self.refill()?;
            if self.finished || (self.drained() && self.source_done) || batch.accesses.len() >= max {
                break;
            }
            self.take(batch, max);
        }
        self.refill()
    }

    /// The instructions after the last access, within the limit.
    fn add_trailing(&mut self, batch: &mut Batch) {
        let mut t = self.staging.batch.trailing_instrs;
        if self.limit != 0 {
            t = t.min(self.limit - self.handed);
        }
        self.handed += t;
        batch.trailing_instrs += t;
    }
}
