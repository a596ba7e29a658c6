//! ChampSim instruction traces (`inc/trace_instruction.h` in
//! ChampSim/ChampSim): fixed-size little-endian records, one instruction
//! each. Source memory operands become loads, destination memory operands
//! stores (in that order: an instruction reads before it writes), a zero
//! operand is none; the ip becomes an instruction fetch (dropped unless
//! `workload.ifetch`). Records carry no sizes: data accesses are 8 bytes,
//! fetches 4. ChampSim traces have no mapping events: the OS's automatic
//! VMAs (`os.auto_vma = "auto"`) create them.
//!
//! Dependence (for the interval core model) comes from the records'
//! registers: every register remembers which load's data last flowed into
//! it (through loads and through the instructions that compute from them),
//! and a record's loads are dependent when one of its source registers
//! holds the data of the most recent load: a pointer chase
//! (`mov r1, [r1]`) is a chain, loads through registers no load wrote
//! are independent. A register 0 means none, as in ChampSim.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::native::read_full;
use super::{bad, Sink, Source};
use crate::error::Result;
use crate::units::VirtAddr;
use crate::workload::{Access, AccessKind, Site};

/// Where the memory operands sit in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChampSimLayout {
    pub record: usize,
    pub dst_reg_offset: usize,
    pub dst_reg_count: usize,
    pub src_reg_offset: usize,
    pub src_reg_count: usize,
    pub dst_offset: usize,
    pub dst_count: usize,
    pub src_offset: usize,
    pub src_count: usize,
}

impl ChampSimLayout {
    /// `input_instr`: ip u64; is_branch, branch_taken u8; destination
    /// registers `[2]u8`; source registers `[4]u8`; destination_memory
    /// `[2]u64` at 16; source_memory `[4]u64` at 32 (64 bytes, no padding).
    pub const STANDARD: ChampSimLayout = ChampSimLayout {
        record: 64,
        dst_reg_offset: 10,
        dst_reg_count: 2,
        src_reg_offset: 12,
        src_reg_count: 4,
        dst_offset: 16,
        dst_count: 2,
        src_offset: 32,
        src_count: 4,
    };
    /// `cloudsuite_instr`: four destination registers, so after 18 bytes of
    /// ip, branch and registers the u64 arrays align to 24: destination
    /// memory `[4]u64` at 24, source memory `[4]u64` at 56, asid `[2]u8` at 88,
    /// padding to 96.
    pub const CLOUDSUITE: ChampSimLayout = ChampSimLayout {
        record: 96,
        dst_reg_offset: 10,
        dst_reg_count: 4,
        src_reg_offset: 14,
        src_reg_count: 4,
        dst_offset: 24,
        dst_count: 4,
        src_offset: 56,
        src_count: 4,
    };
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
    regs: LoadedRegs,
}

impl ChampSimReader {
    pub(crate) fn new(r: Box<dyn Read + Send>, path: &Path, layout: ChampSimLayout) -> Self {
        ChampSimReader {
            r,
            path: path.to_path_buf(),
            layout,
            offset: 0,
            buf: vec![0; CHUNK_RECORDS * layout.record],
            regs: LoadedRegs::default(),
        }
    }
}

/// Which load's data each register last received (its number among the
/// trace's loads, from 1; 0 = no load's), and the number of the last load.
struct LoadedRegs {
    load_of: [u64; 256],
    last_load: u64,
}

impl Default for LoadedRegs {
    fn default() -> Self {
        LoadedRegs { load_of: [0; 256], last_load: 0 }
    }
}

impl LoadedRegs {
    /// Reads record `rec`'s registers: whether its loads wait for the most
    /// recent load, and (after them) which load's data its destination
    /// registers now hold.
    fn record(&mut self, rec: &[u8], l: &ChampSimLayout, loads: u64) -> bool {
        let srcs = &rec[l.src_reg_offset..l.src_reg_offset + l.src_reg_count];
        let from = srcs.iter().filter(|&&r| r != 0).map(|&r| self.load_of[r as usize]).max().unwrap_or(0);
        let dependent = from != 0 && from == self.last_load;
        self.last_load += loads;
        let written = if loads > 0 { self.last_load } else { from };
        for &r in rec[l.dst_reg_offset..l.dst_reg_offset + l.dst_reg_count].iter().filter(|&&r| r != 0) {
            self.load_of[r as usize] = written;
        }
        dependent
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
            sink.access(Access {
                vaddr: VirtAddr::new(u64_at(rec, 0)),
                kind: AccessKind::IFetch,
                size: 4,
                site: Site::NONE,
                instrs: 1,
            });
            let loads = (0..l.src_count).filter(|i| u64_at(rec, l.src_offset + 8 * i) != 0).count() as u64;
            let site = if self.regs.record(rec, &l, loads) { Site::NONE.dependent() } else { Site::NONE };
            for i in 0..l.src_count {
                let a = u64_at(rec, l.src_offset + 8 * i);
                if a != 0 {
                    sink.access(Access::load(VirtAddr::new(a), 8, 0).at(site));
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
