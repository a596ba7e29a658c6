//! The native trace format (docs/trace-format.md has it byte by byte).
//!
//! ```text
//! file   = header block* end
//! header = "PGLTRACE" version:u16 flags:u16 reserved:u32      (16 bytes)
//!          flags bit 0: the mapping events are partial (FLAG_PARTIAL_MAPS)
//! block  = payload_len:u32 compressed_len:u32 records:u32 crc32:u32
//!          zstd(payload)                                      (16 + n)
//! end    = 16 zero bytes, then records:u64 accesses:u64 instructions:u64
//!          ifetches:u64 (version 2; version 1 ends after instructions)
//! ```
//!
//! The end record's totals are checked against the blocks when the trace
//! is streamed; read alone ([`end_totals`]) they give a run's progress
//! bar its total before the first block is decoded.
//!
//! A payload is a sequence of records; the delta state resets at every
//! block, so a block decodes alone. An access record is a tag byte
//! `op:2 | size_code:3 | same_addr:1 | instrs_code:2` (low bits first), then
//! the instructions as a varint when instrs_code is 0, the size byte when
//! size_code is 7, and, unless same_addr, the zigzag-varint delta from the
//! previous address of the same kind. Sequential streams cost about two
//! payload bytes per access before zstd, which squeezes the repetition.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{bad, Sink, Source};
use crate::error::Result;
use crate::units::VirtAddr;
use crate::workload::{Access, AccessKind, Batch, MapEvent, Site};

pub const MAGIC: &[u8; 8] = b"PGLTRACE";
/// The version written. Version 1 (read too) has no header flags and no
/// `ifetches` in its end record.
pub const VERSION: u16 = 2;
/// Header flag: the trace's mapping events do not cover every mapping it
/// touches (a captured program: exec's mappings are never seen), so
/// automatic VMAs stay on beside them (`Workload::partial_mappings`).
pub const FLAG_PARTIAL_MAPS: u16 = 1;
/// The flags this version knows; a reader refuses others.
const KNOWN_FLAGS: u16 = FLAG_PARTIAL_MAPS;
const HEADER_LEN: u64 = 16;
const BLOCK_HEADER_LEN: u64 = 16;
/// The end record of version 2 (version 1's is 8 bytes shorter).
const END_LEN: u64 = 48;
/// A block is flushed once its payload reaches this size; bigger blocks
/// compress better, and the reader holds one at a time.
const BLOCK_TARGET: usize = 1 << 20;
/// The most a reader accepts for one block: a corrupt length must not make
/// it allocate gigabytes.
const MAX_PAYLOAD: u32 = 16 << 20;
const ZSTD_LEVEL: i32 = 3;

/// Op field of the tag: the three access kinds, or 3 = another record.
const OP_OTHER: u8 = 3;
/// Record types under OP_OTHER (tag >> 2).
const T_MMAP: u8 = 0;
const T_MUNMAP: u8 = 1;
const T_MPROTECT: u8 = 2;
const T_INSTRUCTIONS: u8 = 3;
const SAME_ADDR: u8 = 0x20;
/// instrs_code values (tag >> 6).
const I_VARINT: u8 = 0;
const I_ZERO: u8 = 1;
const I_ONE: u8 = 2;
const I_PREVIOUS: u8 = 3;

/// Per-block delta state, identical in writer and reader.
#[derive(Clone, Copy, Debug, Default)]
struct Delta {
    /// Previous address of each access kind (load, store, ifetch).
    last: [u64; 3],
    /// Previous address of any kind (the same_addr flag).
    last_any: u64,
    /// Previous access's instrs (instrs_code 3).
    last_instrs: u32,
}

/// Counts of a whole native file (its end record).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeTotals {
    pub records: u64,
    pub accesses: u64,
    pub instructions: u64,
    /// Of the accesses, instruction fetches (version 2; 0 in version 1).
    pub ifetches: u64,
    /// Bytes of the file (writer only).
    pub bytes: u64,
}

/// Streams records into a native file, one block in memory at a time.
pub struct NativeWriter<W: Write> {
    out: W,
    payload: Vec<u8>,
    block_records: u32,
    delta: Delta,
    totals: NativeTotals,
    compressor: zstd::bulk::Compressor<'static>,
}

impl<W: Write> std::fmt::Debug for NativeWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeWriter").field("totals", &self.totals).finish()
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

fn size_code(size: u8) -> u8 {
    if size.is_power_of_two() && size <= 64 {
        size.trailing_zeros() as u8
    } else {
        7
    }
}

impl<W: Write> NativeWriter<W> {
    /// Writes the header (no flags).
    pub fn new(out: W) -> std::io::Result<Self> {
        Self::with_flags(out, 0)
    }

    /// Writes the header with `flags` (e.g. [`FLAG_PARTIAL_MAPS`]).
    pub fn with_flags(mut out: W, flags: u16) -> std::io::Result<Self> {
        if flags & !KNOWN_FLAGS != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("unknown native trace flags {flags:#x}"),
            ));
        }
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&flags.to_le_bytes());
        header.extend_from_slice(&[0; 4]);
        out.write_all(&header)?;
        Ok(NativeWriter {
            out,
            payload: Vec::with_capacity(BLOCK_TARGET + 4096),
            block_records: 0,
            delta: Delta::default(),
            totals: NativeTotals { bytes: HEADER_LEN, ..NativeTotals::default() },
            compressor: zstd::bulk::Compressor::new(ZSTD_LEVEL)?,
        })
    }

    pub fn access(&mut self, a: &Access) -> std::io::Result<()> {
        let kind = a.kind as usize;
        let addr = a.vaddr.raw();
        let d = &mut self.delta;
        let sc = size_code(a.size);
        let ic = match a.instrs {
            i if i == d.last_instrs => I_PREVIOUS,
            0 => I_ZERO,
            1 => I_ONE,
            _ => I_VARINT,
        };
        let same = addr == d.last_any;
        let tag = kind as u8 | sc << 2 | if same { SAME_ADDR } else { 0 } | ic << 6;
        let p = &mut self.payload;
        p.push(tag);
        if ic == I_VARINT {
            put_varint(p, a.instrs as u64);
        }
        if sc == 7 {
            p.push(a.size);
        }
        if !same {
            put_varint(p, zigzag(addr.wrapping_sub(d.last[kind]) as i64));
        }
        d.last[kind] = addr;
        d.last_any = addr;
        d.last_instrs = a.instrs;
        self.totals.accesses += 1;
        self.totals.ifetches += (a.kind == AccessKind::IFetch) as u64;
        self.totals.instructions += a.instrs as u64;
        self.end_record()
    }

    pub fn event(&mut self, e: &MapEvent) -> std::io::Result<()> {
        let p = &mut self.payload;
        match e {
            MapEvent::Mmap { start, len, writable, name } => {
                p.push(OP_OTHER | T_MMAP << 2);
                put_varint(p, start.raw());
                put_varint(p, *len);
                p.push(*writable as u8);
                put_varint(p, name.len() as u64);
                p.extend_from_slice(name.as_bytes());
            }
            MapEvent::Munmap { start, len } => {
                p.push(OP_OTHER | T_MUNMAP << 2);
                put_varint(p, start.raw());
                put_varint(p, *len);
            }
            MapEvent::Mprotect { start, len, writable } => {
                p.push(OP_OTHER | T_MPROTECT << 2);
                put_varint(p, start.raw());
                put_varint(p, *len);
                p.push(*writable as u8);
            }
        }
        self.end_record()
    }

    /// Instructions that make no memory access (before the next access).
    pub fn instructions(&mut self, n: u64) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.payload.push(OP_OTHER | T_INSTRUCTIONS << 2);
        put_varint(&mut self.payload, n);
        self.totals.instructions += n;
        self.end_record()
    }

    /// Writes a batch's events, accesses and trailing instructions in order.
    pub fn write_batch(&mut self, b: &Batch) -> std::io::Result<()> {
        let mut events = b.events.iter().peekable();
        for (i, a) in b.accesses.iter().enumerate() {
            while let Some((_, e)) = events.next_if(|(at, _)| *at as usize <= i) {
                self.event(e)?;
            }
            self.access(a)?;
        }
        for (_, e) in events {
            self.event(e)?;
        }
        self.instructions(b.trailing_instrs)
    }

    #[inline]
    fn end_record(&mut self) -> std::io::Result<()> {
        self.block_records += 1;
        self.totals.records += 1;
        if self.payload.len() >= BLOCK_TARGET {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        if self.block_records == 0 {
            return Ok(());
        }
        let compressed = self.compressor.compress(&self.payload)?;
        let mut crc = flate2::Crc::new();
        crc.update(&self.payload);
        let mut header = [0u8; BLOCK_HEADER_LEN as usize];
        header[0..4].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        header[4..8].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
        header[8..12].copy_from_slice(&self.block_records.to_le_bytes());
        header[12..16].copy_from_slice(&crc.sum().to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(&compressed)?;
        self.totals.bytes += BLOCK_HEADER_LEN + compressed.len() as u64;
        self.payload.clear();
        self.block_records = 0;
        self.delta = Delta::default();
        Ok(())
    }

    /// Flushes the last block and writes the end record; returns the
    /// output and the totals.
    pub fn finish(mut self) -> std::io::Result<(W, NativeTotals)> {
        self.flush_block()?;
        let mut end = [0u8; END_LEN as usize];
        end[16..24].copy_from_slice(&self.totals.records.to_le_bytes());
        end[24..32].copy_from_slice(&self.totals.accesses.to_le_bytes());
        end[32..40].copy_from_slice(&self.totals.instructions.to_le_bytes());
        end[40..48].copy_from_slice(&self.totals.ifetches.to_le_bytes());
        self.out.write_all(&end)?;
        self.out.flush()?;
        self.totals.bytes += END_LEN;
        Ok((self.out, self.totals))
    }
}

/// Streams a native file block by block.
pub struct NativeReader<R: Read> {
    r: R,
    path: PathBuf,
    /// Byte offset of the next unread byte of the file.
    offset: u64,
    compressed: Vec<u8>,
    payload: Vec<u8>,
    decompressor: zstd::bulk::Decompressor<'static>,
    totals: NativeTotals,
    flags: u16,
    version: u16,
}

impl<R: Read> std::fmt::Debug for NativeReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeReader").field("path", &self.path).field("offset", &self.offset).finish()
    }
}

/// Reads as much of `buf` as the stream has; returns the bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> NativeReader<R> {
    /// Reads and checks the header.
    pub fn new(mut r: R, path: &Path) -> Result<Self> {
        let mut header = [0u8; HEADER_LEN as usize];
        let got = read_full(&mut r, &mut header).map_err(|e| bad(path, 0, format!("read failed: {e}")))?;
        if got < header.len() {
            return Err(bad(path, got as u64, "truncated: the 16-byte header is incomplete"));
        }
        if &header[0..8] != MAGIC {
            return Err(bad(path, 0, "not a native pagelab trace (bad magic)"));
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if version != 1 && version != VERSION {
            return Err(bad(path, 8, format!("unsupported version {version} (this pagelab reads 1 and {VERSION})")));
        }
        let flags = u16::from_le_bytes([header[10], header[11]]);
        if version == 1 && flags != 0 {
            return Err(bad(path, 10, format!("flags {flags:#x} in a version 1 header (version 1 has none)")));
        }
        if flags & !KNOWN_FLAGS != 0 {
            return Err(bad(
                path,
                10,
                format!("unknown flags {flags:#x} in the header (this pagelab knows {KNOWN_FLAGS:#x})"),
            ));
        }
        if header[12..16] != [0; 4] {
            return Err(bad(path, 12, "reserved header bytes are not zero"));
        }
        Ok(NativeReader {
            r,
            path: path.to_path_buf(),
            offset: HEADER_LEN,
            compressed: Vec::new(),
            payload: Vec::new(),
            decompressor: zstd::bulk::Decompressor::new().map_err(|e| bad(path, 0, e.to_string()))?,
            totals: NativeTotals::default(),
            flags,
            version,
        })
    }

    /// The header's flags.
    pub fn flags(&self) -> u16 {
        self.flags
    }

    fn read_exact_at(&mut self, len: usize, what: &str) -> Result<()> {
        self.compressed.resize(len, 0);
        let got = read_full(&mut self.r, &mut self.compressed)
            .map_err(|e| bad(&self.path, self.offset, format!("read failed: {e}")))?;
        if got < len {
            return Err(bad(
                &self.path,
                self.offset + got as u64,
                format!("truncated: {what} ends after {got} of {len} bytes"),
            ));
        }
        self.offset += len as u64;
        Ok(())
    }

    /// Decodes the next block into `sink`; false at the end record.
    fn next_block(&mut self, sink: &mut Sink) -> Result<bool> {
        let at = self.offset;
        self.read_exact_at(BLOCK_HEADER_LEN as usize, "a block header")?;
        let h = &self.compressed;
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let (payload_len, compressed_len, records, crc) = (word(0), word(4), word(8), word(12));
        if h.iter().all(|&b| b == 0) {
            self.read_end(at)?;
            return Ok(false);
        }
        if records == 0
            || payload_len == 0
            || payload_len > MAX_PAYLOAD
            || compressed_len == 0
            || compressed_len > MAX_PAYLOAD + 4096
        {
            return Err(bad(
                &self.path,
                at,
                format!(
                    "corrupt block header (payload {payload_len} B, compressed {compressed_len} B, {records} records)"
                ),
            ));
        }
        self.read_exact_at(compressed_len as usize, "a block")?;
        self.payload.clear();
        self.payload.reserve(payload_len as usize);
        let n = self
            .decompressor
            .decompress_to_buffer(&self.compressed, &mut self.payload)
            .map_err(|e| bad(&self.path, at, format!("corrupt block: zstd: {e}")))?;
        let mut sum = flate2::Crc::new();
        sum.update(&self.payload);
        if n != payload_len as usize || sum.sum() != crc {
            return Err(bad(&self.path, at, "corrupt block: checksum or length mismatch"));
        }
        let n =
            decode(&self.payload, records, sink).map_err(|msg| bad(&self.path, at, format!("corrupt block: {msg}")))?;
        self.totals.records += records as u64;
        self.totals.accesses += n.accesses;
        self.totals.instructions += n.instructions;
        if self.version >= 2 {
            self.totals.ifetches += n.ifetches;
        }
        Ok(true)
    }

    fn read_end(&mut self, at: u64) -> Result<()> {
        let len = if self.version >= 2 { END_LEN - 16 } else { 24 };
        self.read_exact_at(len as usize, "the end record")?;
        let h = &self.compressed;
        let word = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        let ifetches = if self.version >= 2 { word(24) } else { 0 };
        let expected = NativeTotals { records: word(0), accesses: word(8), instructions: word(16), ifetches, bytes: 0 };
        let got = NativeTotals { bytes: 0, ..self.totals };
        if expected != got {
            return Err(bad(&self.path, at, format!("the end record says {expected:?} but the blocks hold {got:?}")));
        }
        let mut extra = [0u8; 1];
        if read_full(&mut self.r, &mut extra).map_err(|e| bad(&self.path, self.offset, e.to_string()))? != 0 {
            return Err(bad(&self.path, self.offset, "bytes after the end record"));
        }
        Ok(())
    }
}

impl<R: Read + Send> Source for NativeReader<R> {
    fn fill(&mut self, sink: &mut Sink) -> Result<bool> {
        self.next_block(sink)
    }

    fn partial_maps(&self) -> bool {
        self.flags & FLAG_PARTIAL_MAPS != 0
    }
}

/// The totals an uncompressed native file's end record claims, read from
/// its header and its last bytes without decoding a block (a seek): what
/// a run's progress bar needs before it starts. None when the file is not
/// an uncompressed native trace of this version (version 1 does not count
/// fetches) or its end looks wrong (e.g. truncated:
/// streaming it will report that); the totals are checked against the
/// blocks only when the trace is streamed.
pub fn end_totals(path: &Path) -> Option<NativeTotals> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut header = [0u8; HEADER_LEN as usize];
    f.read_exact(&mut header).ok()?;
    if &header[0..8] != MAGIC {
        return None;
    }
    // Version 1's end record lacks the fetch count a total needs.
    if u16::from_le_bytes([header[8], header[9]]) != VERSION {
        return None;
    }
    let end_len = END_LEN;
    let size = f.seek(SeekFrom::End(0)).ok()?;
    if size < HEADER_LEN + end_len {
        return None;
    }
    f.seek(SeekFrom::Start(size - end_len)).ok()?;
    let mut end = vec![0u8; end_len as usize];
    f.read_exact(&mut end).ok()?;
    if end[..16].iter().any(|&b| b != 0) {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(end[i..i + 8].try_into().expect("8 bytes"));
    Some(NativeTotals {
        records: word(16),
        accesses: word(24),
        instructions: word(32),
        ifetches: word(40),
        bytes: size,
    })
}

/// A cursor over a payload; every read is bounds-checked.
struct Cursor<'a> {
    p: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    #[inline]
    fn byte(&mut self) -> std::result::Result<u8, String> {
        let b = *self.p.get(self.i).ok_or("record runs past the payload")?;
        self.i += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self) -> std::result::Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                if shift == 63 && b > 1 {
                    break;
                }
                return Ok(v);
            }
        }
        Err("varint longer than 64 bits".into())
    }
}

/// What one payload held.
#[derive(Default)]
struct Decoded {
    accesses: u64,
    instructions: u64,
    ifetches: u64,
}

/// Decodes `records` records of one payload into `sink`. The error is a
/// message (the caller adds path and offset).
fn decode(p: &[u8], records: u32, sink: &mut Sink) -> std::result::Result<Decoded, String> {
    let mut c = Cursor { p, i: 0 };
    let mut d = Delta::default();
    let mut n = Decoded::default();
    for k in 0..records {
        let tag = c.byte()?;
        let op = tag & 3;
        if op == OP_OTHER {
            n.instructions += decode_other(&mut c, tag >> 2, sink).map_err(|m| format!("record {k}: {m}"))?;
            continue;
        }
        let instrs = match tag >> 6 {
            I_VARINT => u32::try_from(c.varint()?).map_err(|_| format!("record {k}: instrs above 2^32"))?,
            I_ZERO => 0,
            I_ONE => 1,
            _ => d.last_instrs,
        };
        let size = match (tag >> 2) & 7 {
            7 => c.byte()?,
            code => 1 << code,
        };
        let addr = if tag & SAME_ADDR != 0 {
            d.last_any
        } else {
            d.last[op as usize].wrapping_add(unzigzag(c.varint()?) as u64)
        };
        d.last[op as usize] = addr;
        d.last_any = addr;
        d.last_instrs = instrs;
        let kind = match op {
            0 => AccessKind::Load,
            1 => AccessKind::Store,
            _ => AccessKind::IFetch,
        };
        sink.access(Access { vaddr: VirtAddr::new(addr), kind, size, site: Site::NONE, instrs });
        n.accesses += 1;
        n.ifetches += (kind == AccessKind::IFetch) as u64;
        n.instructions += instrs as u64;
    }
    if c.i != p.len() {
        return Err(format!("{} bytes left after the last record", p.len() - c.i));
    }
    Ok(n)
}

/// A non-access record; returns the instructions it carries.
fn decode_other(c: &mut Cursor, kind: u8, sink: &mut Sink) -> std::result::Result<u64, String> {
    match kind {
        T_MMAP => {
            let (start, len) = (c.varint()?, c.varint()?);
            let writable = flag(c.byte()?)?;
            let n = c.varint()? as usize;
            let bytes = c.p.get(c.i..c.i.saturating_add(n)).ok_or("mmap name runs past the payload")?;
            c.i += n;
            let name = String::from_utf8(bytes.to_vec()).map_err(|_| "mmap name is not UTF-8")?;
            sink.event(MapEvent::Mmap { start: VirtAddr::new(start), len, writable, name });
            Ok(0)
        }
        T_MUNMAP => {
            let (start, len) = (c.varint()?, c.varint()?);
            sink.event(MapEvent::Munmap { start: VirtAddr::new(start), len });
            Ok(0)
        }
        T_MPROTECT => {
            let (start, len) = (c.varint()?, c.varint()?);
            let writable = flag(c.byte()?)?;
            sink.event(MapEvent::Mprotect { start: VirtAddr::new(start), len, writable });
            Ok(0)
        }
        T_INSTRUCTIONS => {
            let n = c.varint()?;
            sink.instructions(n);
            Ok(n)
        }
        other => Err(format!("unknown record type {other}")),
    }
}

fn flag(b: u8) -> std::result::Result<bool, String> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(format!("flag byte {b} is neither 0 nor 1")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for d in [0i64, 1, -1, 64, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(8), 16);
    }

    #[test]
    fn varint_rejects_overlong() {
        let p = [0xffu8; 11];
        let mut c = Cursor { p: &p, i: 0 };
        assert!(c.varint().is_err());
        let mut out = Vec::new();
        put_varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
        assert_eq!(Cursor { p: &out, i: 0 }.varint().unwrap(), u64::MAX);
    }
}
