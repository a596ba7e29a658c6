//! Valgrind lackey output (`--tool=lackey --trace-mem=yes`): lines
//! `I  ADDR,SIZE` (an instruction: its fetch), ` L ADDR,SIZE` (load),
//! ` S ADDR,SIZE` (store), ` M ADDR,SIZE` (modify: a load and a store of
//! the same place by one instruction); ADDR hexadecimal, SIZE decimal.
//! Valgrind's own lines (`==PID== ...`, `--PID-- ...`) and blank lines are
//! skipped. Each I line is one instruction; a data line belongs to the
//! instruction before it (instrs 0). Sizes above 64 are recorded as 64
//! (an access is simulated at its first byte). Errors give the line
//! number as the offset. A last line without its newline is a truncated
//! file.
//!
//! With `--trace-syscalls=yes` (as `pagelab trace capture` runs it), the
//! `SYSCALL[...]` lines of mmap, munmap, mprotect, mremap and brk become
//! mapping events ([`super::syscalls`]); other system calls and their
//! ` --> ` continuation lines are skipped. Lackey output never holds the
//! mappings exec made, so its events are partial (`partial_maps`).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::syscalls::Syscalls;
use super::{bad, Sink, Source};
use crate::error::Result;
use crate::units::VirtAddr;
use crate::workload::{Access, AccessKind, Site};

const CHUNK_LINES: usize = 65536;

pub(crate) struct LackeyReader {
    r: Box<dyn BufRead + Send>,
    path: PathBuf,
    /// Number of the last line read (1-based).
    line_no: u64,
    line: Vec<u8>,
    syscalls: Syscalls,
    events: Vec<crate::workload::MapEvent>,
}

impl LackeyReader {
    pub(crate) fn new(r: Box<dyn BufRead + Send>, path: &Path) -> Self {
        LackeyReader {
            r,
            path: path.to_path_buf(),
            line_no: 0,
            line: Vec::with_capacity(64),
            syscalls: Syscalls::default(),
            events: Vec::new(),
        }
    }

    fn err(&self, msg: impl std::fmt::Display) -> crate::Error {
        bad(&self.path, self.line_no, format!("line {}: {msg}", self.line_no))
    }
}

/// Parses `ADDR,SIZE`.
fn operand(s: &[u8]) -> Option<(u64, u8)> {
    let comma = s.iter().position(|&b| b == b',')?;
    let addr = std::str::from_utf8(&s[..comma]).ok()?;
    let size = std::str::from_utf8(&s[comma + 1..]).ok()?;
    if addr.is_empty() || addr.starts_with('+') || size.starts_with('+') {
        return None;
    }
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let size: u64 = size.parse().ok()?;
    Some((addr, size.min(64) as u8))
}

/// One line, without its newline: the accesses it makes, or None to skip.
pub(crate) fn parse_line(line: &[u8]) -> std::result::Result<Option<(AccessKind, bool, u64, u8)>, &'static str> {
    if line.is_empty() || line.starts_with(b"==") || line.starts_with(b"--") {
        return Ok(None);
    }
    let (kind, modify, rest) = match line {
        [b'I', b' ', b' ', rest @ ..] => (AccessKind::IFetch, false, rest),
        [b' ', b'L', b' ', rest @ ..] => (AccessKind::Load, false, rest),
        [b' ', b'S', b' ', rest @ ..] => (AccessKind::Store, false, rest),
        [b' ', b'M', b' ', rest @ ..] => (AccessKind::Load, true, rest),
        _ => return Err("not a lackey line (expected `I  `, ` L `, ` S `, ` M ` or `==pid==`)"),
    };
    let (addr, size) = operand(rest).ok_or("bad operand (expected HEXADDR,SIZE)")?;
    Ok(Some((kind, modify, addr, size)))
}

impl Source for LackeyReader {
    fn fill(&mut self, sink: &mut Sink) -> Result<bool> {
        for _ in 0..CHUNK_LINES {
            self.line.clear();
            let n = self.r.read_until(b'\n', &mut self.line).map_err(|e| self.err(format!("read failed: {e}")))?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            if self.line.pop() != Some(b'\n') {
                return Err(self.err("truncated: the last line has no newline"));
            }
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            if self.line.starts_with(b"SYSCALL[") {
                let text = String::from_utf8_lossy(&self.line).into_owned();
                if let Err(m) = self.syscalls.line(&text, &mut self.events) {
                    return Err(self.err(m));
                }
                for e in self.events.drain(..) {
                    sink.event(e);
                }
                continue;
            }
            if self.line.starts_with(b" --> ") {
                continue; // The result of a system call printed on two lines.
            }
            let Some((kind, modify, addr, size)) = parse_line(&self.line).map_err(|m| self.err(m))? else {
                continue;
            };
            let vaddr = VirtAddr::new(addr);
            let instrs = (kind == AccessKind::IFetch) as u32;
            sink.access(Access { vaddr, kind, size, site: Site::NONE, instrs });
            if modify {
                sink.access(Access::store(vaddr, size, 0));
            }
        }
        Ok(true)
    }

    fn partial_maps(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_line_kind() {
        assert_eq!(parse_line(b"I  04001ae0,3"), Ok(Some((AccessKind::IFetch, false, 0x0400_1ae0, 3))));
        assert_eq!(parse_line(b" L 1ffefffd68,8"), Ok(Some((AccessKind::Load, false, 0x1f_feff_fd68, 8))));
        assert_eq!(parse_line(b" S 0422fc28,4"), Ok(Some((AccessKind::Store, false, 0x0422_fc28, 4))));
        assert_eq!(parse_line(b" M 0422fc28,128"), Ok(Some((AccessKind::Load, true, 0x0422_fc28, 64))));
        assert_eq!(parse_line(b"==12345== Lackey, an example Valgrind tool"), Ok(None));
        assert_eq!(parse_line(b""), Ok(None));
        assert!(parse_line(b" X 0422fc28,4").is_err());
        assert!(parse_line(b" L 0422fc28").is_err());
        assert!(parse_line(b" L zz,4").is_err());
        assert!(parse_line(b" L 10,-4").is_err());
    }
}
