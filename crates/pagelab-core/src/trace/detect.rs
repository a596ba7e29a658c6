//! Opening a trace: the compression from its first bytes, then the format
//! from the decompressed payload (docs/trace-format.md, "Detection"):
//!
//! 1. magic bytes: xz `FD 37 7A 58 5A 00`, gzip `1F 8B`, bzip2 `BZh`, zstd
//!    `28 B5 2F FD`; anything else is read as is;
//! 2. the payload: the native magic `PGLTRACE` -> native; a first line that
//!    is a Valgrind banner (`==`), a system-call line (`SYSCALL[`) or a
//!    lackey line -> lackey; other
//!    text -> an error; binary -> ChampSim, the record size (64 or 96)
//!    chosen by how plausible the first records of the peeked 64 KiB look
//!    under each layout (branch flags 0 or 1, a non-zero user-space ip,
//!    consecutive ips within 1 MiB; a payload that ended inside the peek
//!    must be a whole number of records). When neither layout wins clearly
//!    the error asks for `workload.format`, which also overrides detection.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

use super::champsim::{ChampSimLayout, ChampSimReader};
use super::lackey::LackeyReader;
use super::native::{read_full, NativeReader, MAGIC};
use super::{bad, Source, TraceFormat};
use crate::error::{Error, Result};

/// The outer compression of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Xz,
    Gzip,
    Bzip2,
    Zstd,
}

impl Compression {
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Zstd => "zstd",
        }
    }

    fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Compression::Xz
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// An opened trace.
pub struct Detected {
    pub format: TraceFormat,
    pub compression: Compression,
    pub source: Box<dyn Source>,
}

impl std::fmt::Debug for Detected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detected").field("format", &self.format).field("compression", &self.compression).finish()
    }
}

/// Bytes of decompressed payload examined.
const PEEK: usize = 64 << 10;
const IO_BUF: usize = 256 << 10;

type Stream = Box<dyn Read + Send>;

fn decoder(path: &Path, file: BufReader<File>, c: Compression) -> Result<Stream> {
    Ok(match c {
        Compression::None => Box::new(file),
        Compression::Xz => Box::new(xz2::read::XzDecoder::new_multi_decoder(file)),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(file)),
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(file).map_err(|e| bad(path, 0, format!("zstd: {e}")))?)
        }
    })
}

/// The format and compression of `path` (no reader kept).
pub fn detect(path: &Path) -> Result<(TraceFormat, Compression)> {
    let d = open(path, None)?;
    Ok((d.format, d.compression))
}

/// Opens `path` for reading, detecting its compression and (unless
/// `format` is given) its format. Readers always emit instruction fetches;
/// the caller's [`super::Sink`] keeps or drops them.
pub fn open(path: &Path, format: Option<TraceFormat>) -> Result<Detected> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut file = BufReader::with_capacity(IO_BUF, file);
    let head = file.fill_buf().map_err(|e| Error::io(path, e))?;
    let compression = if head.starts_with(MAGIC) { Compression::None } else { Compression::from_magic(head) };
    let mut stream = decoder(path, file, compression)?;
    let mut peek = vec![0u8; PEEK];
    let got = read_full(&mut stream, &mut peek)
        .map_err(|e| bad(path, 0, format!("{} decompression failed: {e}", compression.as_str())))?;
    peek.truncate(got);
    let ended = got < PEEK;
    let format = match format {
        Some(f) => f,
        None => classify(path, &peek, ended)?,
    };
    let stream: Stream = Box::new(Cursor::new(peek).chain(stream));
    let source: Box<dyn Source> = match format {
        TraceFormat::Native => Box::new(NativeReader::new(stream, path)?),
        TraceFormat::Lackey => Box::new(LackeyReader::new(Box::new(BufReader::with_capacity(IO_BUF, stream)), path)),
        TraceFormat::Champsim => Box::new(ChampSimReader::new(stream, path, ChampSimLayout::STANDARD)),
        TraceFormat::ChampsimCloudsuite => Box::new(ChampSimReader::new(stream, path, ChampSimLayout::CLOUDSUITE)),
    };
    Ok(Detected { format, compression, source })
}

fn classify(path: &Path, peek: &[u8], ended: bool) -> Result<TraceFormat> {
    if peek.starts_with(MAGIC) {
        return Ok(TraceFormat::Native);
    }
    if peek.is_empty() {
        return Err(bad(path, 0, "empty trace"));
    }
    let first_line = peek.split(|&b| b == b'\n').next().unwrap_or(peek);
    let first_line = first_line.strip_suffix(b"\r").unwrap_or(first_line);
    if peek.contains(&b'\n') && matches!(super::lackey::parse_line(first_line), Ok(Some(_)))
        || first_line.starts_with(b"==")
        || first_line.starts_with(b"SYSCALL[")
    {
        return Ok(TraceFormat::Lackey);
    }
    if peek.iter().all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b)) {
        return Err(bad(path, 0, "text that is not Valgrind lackey output"));
    }
    let s64 = plausibility(peek, ChampSimLayout::STANDARD, ended);
    let s96 = plausibility(peek, ChampSimLayout::CLOUDSUITE, ended);
    if s64 >= 0.9 && s96 < 0.5 {
        Ok(TraceFormat::Champsim)
    } else if s96 >= 0.9 && s64 < 0.5 {
        Ok(TraceFormat::ChampsimCloudsuite)
    } else {
        Err(bad(
            path,
            0,
            format!(
                "cannot tell the format (as 64-byte ChampSim records {:.0}% plausible, as 96-byte {:.0}%): set workload.format",
                s64 * 100.0,
                s96 * 100.0
            ),
        ))
    }
}

/// Share of the peeked records that look like real instructions under
/// `layout` (0 when the payload ended inside the peek on a partial record).
fn plausibility(peek: &[u8], layout: ChampSimLayout, ended: bool) -> f64 {
    if ended && !peek.len().is_multiple_of(layout.record) {
        return 0.0;
    }
    let records: Vec<&[u8]> = peek.chunks_exact(layout.record).take(512).collect();
    if records.is_empty() {
        return 0.0;
    }
    let ip = |r: &[u8]| u64::from_le_bytes(r[0..8].try_into().expect("8 bytes"));
    let mut good = 0;
    for (k, r) in records.iter().enumerate() {
        let flags_ok = r[8] <= 1 && r[9] <= 1;
        let ip_ok = ip(r) != 0 && ip(r) < 1 << 57;
        let near = k == 0 || ip(r).abs_diff(ip(records[k - 1])) < 1 << 20;
        good += (flags_ok && ip_ok && near) as usize;
    }
    good as f64 / records.len() as f64
}
