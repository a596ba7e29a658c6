//! ChampSim instruction traces (`inc/trace_instruction.h` in
//! ChampSim/ChampSim): fixed-size little-endian records, one instruction
//! each. Source memory operands become loads, destination memory operands
//! stores (in that order: an instruction reads before it writes), a zero
//! operand is none; the ip becomes an instruction fetch (dropped unless
//! `workload.ifetch`). Records carry no sizes: data accesses are 8 bytes,
//! fetches 4. ChampSim traces have no mapping events: the OS's automatic
//! VMAs (`os.auto_vma = "auto"`) create them.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::native::read_full;
use super::{bad, Sink, Source};
use crate::error::Result;
use crate::units::VirtAddr;
use crate::workload::{Access, AccessKind};

/// Where the memory operands sit in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChampSimLayout {
    pub record: usize,
    pub dst_offset: usize,
    pub dst_count: usize,
    pub src_offset: usize,
    pub src_count: usize,
}

impl ChampSimLayout {
    /// `input_instr`: ip u64; is_branch, branch_taken u8; destination
    /// registers [2]u8; source registers [4]u8; destination_memory [2]u64 at
    /// 16; source_memory [4]u64 at 32 (64 bytes, no padding).
    pub const STANDARD: ChampSimLayout =
        ChampSimLayout { record: 64, dst_offset: 16, dst_count: 2, src_offset: 32, src_count: 4 };
    /// `cloudsuite_instr`: four destination registers, so after 18 bytes of
    /// ip, branch and registers the u64 arrays align to 24: destination
    /// memory [4]u64 at 24, source memory [4]u64 at 56, asid [2]u8 at 88,
    /// padding to 96.
    pub const CLOUDSUITE: ChampSimLayout =
        ChampSimLayout { record: 96, dst_offset: 24, dst_count: 4, src_offset: 56, src_count: 4 };
}

/// Records decoded per `fill`.
const CHUNK_RECORDS: usize = 4096;

pub(crate) struct ChampSimReader {
    r: Box<dyn Read + Send>,
    path: PathBuf,
    layout: ChampSimLayout,
    /// Offset of the next record in the decompressed stream.
    offset: u64,
    buf: Vec<u8>,
}

impl ChampSimReader {
    pub(crate) fn new(r: Box<dyn Read + Send>, path: &Path, layout: ChampSimLayout) -> Self {
        ChampSimReader { r, path: path.to_path_buf(), layout, offset: 0, buf: vec![0; CHUNK_RECORDS * layout.record] }
    }
}

#[inline]
fn u64_at(rec: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(rec[at..at + 8].try_into().expect("8 bytes"))
}

impl Source for ChampSimReader {
    fn fill(&mut self, sink: &mut Sink) -> Result<bool> {
        let got = read_full(&mut self.r, &mut self.buf).map_err(|e| {
            bad(
                &self.path,
                self.offset,
                format!("decompression or read failed near this offset of the decompressed stream: {e}"),
            )
        })?;
        let l = self.layout;
        let whole = got / l.record;
        for rec in self.buf[..whole * l.record].chunks_exact(l.record) {
            sink.access(Access { vaddr: VirtAddr::new(u64_at(rec, 0)), kind: AccessKind::IFetch, size: 4, instrs: 1 });
            for i in 0..l.src_count {
                let a = u64_at(rec, l.src_offset + 8 * i);
                if a != 0 {
                    sink.access(Access::load(VirtAddr::new(a), 8, 0));
                }
            }
            for i in 0..l.dst_count {
                let a = u64_at(rec, l.dst_offset + 8 * i);
                if a != 0 {
                    sink.access(Access::store(VirtAddr::new(a), 8, 0));
                }
            }
        }
        self.offset += (whole * l.record) as u64;
        if got % l.record != 0 {
            return Err(bad(
                &self.path,
                self.offset,
                format!(
                    "truncated: the last record has {} of {} bytes (offset in the decompressed stream)",
                    got % l.record,
                    l.record
                ),
            ));
        }
        Ok(got == self.buf.len())
    }
}
