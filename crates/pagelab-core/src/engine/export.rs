//! `--export-phys`: every physical reference the caches see, one per line,
//! zstd-compressed when the file name ends in `.zst`, in one of three
//! formats:
//! - `pagelab`: `R 0x…` (load), `W 0x…` (store), `P 0x…` (page-walk
//!   reference), `I 0x…` (instruction fetch);
//! - `ramulator2`: Ramulator 2's `LoadStoreTrace` frontend, `LD 0x…` or
//!   `ST 0x…` (walk references and fetches are loads);
//! - `dramsim3`: DRAMsim3's trace-driven CPU, `0x… READ|WRITE CYCLE`, the
//!   cycle being the issuing core's simulated clock (core cycles, to
//!   within one quantum; scale to the DRAM clock if the configurations
//!   differ).
//!
//! With `memory_only`, only references served by memory (LLC misses) are
//! written: what a DRAM simulator should be fed.
//! Written through [`OutFile`]: a failed or killed run leaves no
//! half-written file under the requested name, and a FIFO or a device is
//! refused, not replaced.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::core::RefKind;
use crate::error::Result;
use crate::outfile::OutFile;

enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

/// The line format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Pagelab,
    Ramulator2,
    Dramsim3,
}

impl ExportFormat {
    pub fn parse(name: &str) -> Option<ExportFormat> {
        match name {
            "pagelab" => Some(ExportFormat::Pagelab),
            "ramulator2" => Some(ExportFormat::Ramulator2),
            "dramsim3" => Some(ExportFormat::Dramsim3),
            _ => None,
        }
    }
}

pub struct PhysExport {
    format: ExportFormat,
    /// Write only references served by memory.
    pub memory_only: bool,
    sink: Sink,
    out: OutFile,
    line: Vec<u8>,
    error: Option<std::io::Error>,
}

impl PhysExport {
    pub fn create(path: &Path, format: ExportFormat, memory_only: bool) -> Result<PhysExport> {
        let (out, file) = OutFile::create(path)?;
        let file = BufWriter::with_capacity(1 << 20, file);
        let sink = if path.extension().is_some_and(|e| e == "zst") {
            Sink::Zstd(zstd::Encoder::new(file, 3).map_err(|e| out.error(e))?)
        } else {
            Sink::Plain(file)
        };
        Ok(PhysExport { format, memory_only, sink, out, line: Vec::with_capacity(48), error: None })
    }

    /// Writes one reference; `cycle` is the issuing core's clock.
    #[inline]
    pub fn write(&mut self, addr: u64, kind: RefKind, cycle: f64) {
        self.line.clear();
        let store = kind == RefKind::Store;
        match self.format {
            ExportFormat::Pagelab => {
                let tag = match kind {
                    RefKind::Load => b'R',
                    RefKind::Store => b'W',
                    RefKind::Walk => b'P',
                    RefKind::IFetch => b'I',
                };
                self.line.extend_from_slice(&[tag, b' ']);
                push_hex(&mut self.line, addr);
            }
            ExportFormat::Ramulator2 => {
                self.line.extend_from_slice(if store { b"ST " } else { b"LD " });
                push_hex(&mut self.line, addr);
            }
            ExportFormat::Dramsim3 => {
                push_hex(&mut self.line, addr);
                self.line.extend_from_slice(if store { b" WRITE " } else { b" READ " });
                self.line.extend_from_slice((cycle.max(0.0) as u64).to_string().as_bytes());
            }
        }
        self.line.push(b'\n');
        let r = match &mut self.sink {
            Sink::Plain(w) => w.write_all(&self.line),
            Sink::Zstd(w) => w.write_all(&self.line),
        };
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Flushes, closes and renames into place; the first write error, if
    /// any, is reported here and the temporary file removed.
    pub fn finish(self) -> Result<()> {
        let flushed = match self.sink {
            Sink::Plain(mut w) => w.flush(),
            Sink::Zstd(w) => w.finish().and_then(|mut f| f.flush()),
        };
        match self.error {
            Some(e) => Err(self.out.error(e)),
            None => flushed.map_err(|e| self.out.error(e)),
        }?;
        self.out.commit()
    }
}

fn push_hex(line: &mut Vec<u8>, addr: u64) {
    line.extend_from_slice(b"0x");
    let digits = 16 - (addr.leading_zeros() / 4).min(15) as usize;
    for i in (0..digits).rev() {
        line.push(b"0123456789abcdef"[((addr >> (i * 4)) & 0xf) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_hex_and_renamed_on_finish() {
        let dir = std::env::temp_dir().join(format!("pagelab-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("refs.txt");
        let expect = [
            (ExportFormat::Pagelab, "R 0x1f40\nP 0x0\nW 0xdeadbeef000\n"),
            (ExportFormat::Ramulator2, "LD 0x1f40\nLD 0x0\nST 0xdeadbeef000\n"),
            (ExportFormat::Dramsim3, "0x1f40 READ 10\n0x0 READ 12\n0xdeadbeef000 WRITE 17\n"),
        ];
        for (format, text) in expect {
            let mut e = PhysExport::create(&path, format, false).unwrap();
            e.write(0x1f40, RefKind::Load, 10.0);
            e.write(0, RefKind::Walk, 12.5);
            e.write(0xdea_dbee_f000, RefKind::Store, 17.0);
            assert!(!path.exists());
            e.finish().unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
