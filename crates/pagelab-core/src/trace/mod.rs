//! Traces: recorded memory-access streams as workloads.
//!
//! Three readers feed one [`Sink`]: the native format ([`native`], written
//! by [`convert`]), ChampSim instruction traces ([`champsim`]) and Valgrind
//! lackey output ([`lackey`]). [`detect`](mod@detect) chooses the reader from the file's
//! content, [`TraceWorkload`] streams a trace into the engine in batches,
//! [`info`](mod@info) summarises one. `docs/trace-format.md` documents the native
//! format byte by byte and the detection rules.
//!
//! Every reader streams: host memory holds one block (native) or one chunk
//! of records, never the file. A corrupt or truncated file is an
//! [`Error::Trace`] naming the byte offset (line number for lackey), never
//! a panic and never a silently shorter trace.

mod champsim;
mod detect;
mod info;
mod lackey;
pub mod native;
mod syscalls;
mod workload;

pub use champsim::ChampSimLayout;
pub use detect::{detect, open, Compression, Detected};
pub use info::{info, ReuseSummary, TraceInfo, REUSE_SAMPLE};
pub use native::{NativeReader, NativeTotals, NativeWriter};
pub use workload::TraceWorkload;

use std::path::Path;

use crate::error::{Error, Result};
use crate::outfile::OutFile;
use crate::workload::{Access, AccessKind, Batch, MapEvent, Site};

pub use crate::workload::TraceFormat;

/// A reader of one format: appends the next chunk of records to a sink.
pub trait Source: Send {
    /// Appends the next chunk (a native block, a few thousand ChampSim
    /// records or lackey lines). `Ok(false)`: the trace has ended (the
    /// sink may still have received its last records).
    fn fill(&mut self, sink: &mut Sink) -> Result<bool>;
    /// Whether the trace's mapping events (if any) leave out mappings it
    /// touches: lackey output (exec's mappings are never seen, even with
    /// `--trace-syscalls=yes`) and native traces flagged so.
    fn partial_maps(&self) -> bool {
        false
    }
}

/// Where readers put records: a [`Batch`] being built. Instructions that
/// come without an access (ChampSim records without memory operands,
/// dropped instruction fetches, native instruction records) are added to
/// the next access's `instrs`, or become `trailing_instrs` at the end.
#[derive(Debug, Default)]
pub struct Sink {
    pub batch: Batch,
    /// Instructions not yet attributed to an access.
    pending: u64,
    /// Whether instruction fetches are kept (`workload.ifetch`); dropped
    /// ones count only as instructions.
    pub keep_ifetch: bool,
    /// Set when more than 2^32-1 instructions separate two accesses (an
    /// access's `instrs` is a u32): the trace workload reports it.
    pub overflow: bool,
    /// The site of the last instruction fetch, kept or dropped: the data
    /// accesses after it belong to that instruction (ChampSim's records and
    /// lackey's `I` lines give every instruction's address), so they take
    /// its program-counter tag unless their reader gave one.
    pc: Site,
}

impl Sink {
    pub fn new(keep_ifetch: bool) -> Self {
        Sink { keep_ifetch, ..Sink::default() }
    }

    #[inline]
    pub fn access(&mut self, mut a: Access) {
        if a.kind == AccessKind::IFetch {
            self.pc = Site::pc(a.vaddr.raw());
            if !self.keep_ifetch {
                self.pending += a.instrs as u64;
                return;
            }
        } else if a.site.pc_tag() == 0 {
            a.site = a.site.with_pc_of(self.pc);
        }
        if self.pending != 0 {
            let total = self.pending + a.instrs as u64;
            self.overflow |= total > u32::MAX as u64;
            a.instrs = total.min(u32::MAX as u64) as u32;
            self.pending = 0;
        }
        self.batch.accesses.push(a);
    }

    pub fn event(&mut self, e: MapEvent) {
        let at = self.batch.accesses.len() as u32;
        self.batch.events.push((at, e));
    }

    pub fn instructions(&mut self, n: u64) {
        self.pending += n;
    }

    /// At the end of the trace: instructions after the last access.
    pub fn finish(&mut self) {
        self.batch.trailing_instrs += std::mem::take(&mut self.pending);
    }

    /// Empties the batch (pending instructions stay for the next access).
    pub fn clear(&mut self) {
        self.batch.clear();
    }
}

/// The error of a bad trace at `offset` (bytes, or a line as `msg` says).
pub(crate) fn bad(path: &Path, offset: u64, msg: impl Into<String>) -> Error {
    Error::Trace { path: path.to_path_buf(), offset, msg: msg.into() }
}

/// What [`convert`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ConvertSummary {
    pub records: u64,
    /// Access records: data (a modify as a load and a store) and
    /// instruction fetches.
    pub accesses: u64,
    /// Of those, instruction fetches.
    pub ifetches: u64,
    pub instructions: u64,
    /// Size of the native file written.
    pub bytes: u64,
}

/// Converts the trace at `src` (any readable format; `format` overrides
/// detection) to the native format at `dst`. Instruction fetches are kept.
/// The output goes through [`OutFile`]: `dst` is whole or untouched, and
/// never the input itself nor anything but a regular file.
pub fn convert(src: &Path, dst: &Path, format: Option<TraceFormat>) -> Result<ConvertSummary> {
    crate::outfile::check_not_input(dst, &[src])?;
    let (out, file) = OutFile::create(dst)?;
    let mut source = open(src, format)?.source;
    let summary = write_native(source.as_mut(), file, &out)?;
    out.commit()?;
    Ok(summary)
}

/// The mapping events of the trace at `path`, each with the number of
/// accesses (instruction fetches included) before it. Streams the trace;
/// holds only the events.
pub fn map_events(path: &Path, format: Option<TraceFormat>) -> Result<Vec<(u64, MapEvent)>> {
    let mut source = open(path, format)?.source;
    let mut sink = Sink::new(true);
    let (mut seen, mut out) = (0u64, Vec::new());
    loop {
        sink.clear();
        let more = source.fill(&mut sink)?;
        out.extend(sink.batch.events.drain(..).map(|(at, e)| (seen + at as u64, e)));
        seen += sink.batch.accesses.len() as u64;
        if !more {
            return Ok(out);
        }
    }
}

fn write_native(source: &mut dyn Source, file: std::fs::File, out: &OutFile) -> Result<ConvertSummary> {
    let io = |e| out.error(e);
    let flags = if source.partial_maps() { native::FLAG_PARTIAL_MAPS } else { 0 };
    let mut writer = NativeWriter::with_flags(std::io::BufWriter::new(file), flags).map_err(io)?;
    let mut sink = Sink::new(true);
    loop {
        sink.clear();
        let more = source.fill(&mut sink)?;
        if !more {
            sink.finish();
        }
        writer.write_batch(&sink.batch).map_err(io)?;
        if !more {
            break;
        }
    }
    let (buffered, totals) = writer.finish().map_err(io)?;
    let file = buffered.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(ConvertSummary {
        records: totals.records,
        accesses: totals.accesses,
        ifetches: totals.ifetches,
        instructions: totals.instructions,
        bytes: totals.bytes,
    })
}

#[cfg(test)]
mod tests;
