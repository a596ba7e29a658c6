//! Size hints: which translation size a region should get (64 KiB, 2 MiB
//! or 32 MiB), as Leshy writes them and the kernel keeps them per address
//! space (the artifact's `mm->coala_hints`, an xarray of multi-order
//! entries, loaded by `prctl --hints` through process_madvise).
//!
//! A hint also carries CoalaKhugepaged's mark (the xarray's XA_MARK_1):
//! set when the hint is loaded, cleared once the region is promoted (or
//! found already so), and CoalaKhugepaged visits marked hints in the order
//! they were loaded (the kernel's `coala_hints.index`), best first as
//! Leshy wrote them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::placement::{Region, Size};
use crate::error::{Error, Result};
use crate::units::{Asid, VirtAddr};

/// A region's hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    pub size: Size,
    /// CoalaKhugepaged has still to promote it.
    pub pending: bool,
}

/// One address space's hints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    by_base: BTreeMap<u64, Hint>,
    /// Bases in the order loaded (CoalaKhugepaged's scan order).
    order: Vec<u64>,
}

impl Hints {
    /// Hints from lines `0xSTART-0xEND` (the artifact's hint files). A
    /// 4 KiB range is skipped, as `prctl` skips it; a range overlapping
    /// an earlier one is skipped, as `prctl` skips it. Anything else must
    /// be an aligned 64 KiB, 2 MiB or 32 MiB range: the error names
    /// `what` and the line.
    pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>, what: &str) -> Result<Hints> {
        let mut hints = Hints::default();
        for (i, line) in lines.into_iter().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| Error::config(what.to_string(), format!("line {}: {why}: {line:?}", i + 1));
            let (start, end) = line.split_once('-').ok_or_else(|| bad("expected 0xSTART-0xEND"))?;
            let (start, end) =
                (parse_hex(start).ok_or_else(|| bad("bad start"))?, parse_hex(end).ok_or_else(|| bad("bad end"))?);
            let len = end.checked_sub(start).ok_or_else(|| bad("end before start"))?;
            if len == 4096 {
                continue;
            }
            let size = [Size::Size64K, Size::Size2M, Size::Size32M]
                .into_iter()
                .find(|s| s.bytes() == len)
                .ok_or_else(|| bad("a range of 4KiB, 64KiB, 2MiB or 32MiB"))?;
            if start % len != 0 {
                return Err(bad("start not aligned to the range's size"));
            }
            hints.insert(start, size);
        }
        Ok(hints)
    }

    /// The hint file at `path` (the artifact's format, see [`Hints::parse`]);
    /// `key` names the setting in errors, with the file.
    pub fn read_file(path: &str, key: &str) -> Result<Hints> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::config(key, format!("cannot read {path}: {e}")))?;
        Hints::parse(text.lines(), &format!("{key} ({path})"))
    }

    /// Hints from Leshy's regions (4 KiB ones dropped), best first.
    pub fn from_regions(regions: &[Region]) -> Hints {
        let mut hints = Hints::default();
        for r in regions.iter().filter(|r| r.size != Size::Size4K) {
            hints.insert(r.base, r.size);
        }
        hints
    }

    /// Adds a hint unless it overlaps one already there.
    pub fn insert(&mut self, base: u64, size: Size) -> bool {
        let end = base + size.bytes();
        let first = base.saturating_sub(Size::Size32M.bytes() - 1);
        if self.by_base.range(first..end).any(|(&b, h)| b + h.size.bytes() > base) {
            return false;
        }
        self.by_base.insert(base, Hint { size, pending: true });
        self.order.push(base);
        true
    }

    /// The hint of the region holding `vaddr`, if any.
    pub fn at(&self, vaddr: VirtAddr) -> Option<Size> {
        [Size::Size32M, Size::Size2M, Size::Size64K].into_iter().find(|&s| {
            let base = vaddr.raw() & !(s.bytes() - 1);
            self.by_base.get(&base).is_some_and(|h| h.size == s)
        })
    }

    /// The hints CoalaKhugepaged has still to visit, in load order.
    pub fn pending(&self) -> impl Iterator<Item = (u64, Size)> + '_ {
        self.order.iter().filter_map(|b| self.by_base.get(b).filter(|h| h.pending).map(|h| (*b, h.size)))
    }

    /// Clears CoalaKhugepaged's mark on the hint at `base`.
    pub fn done(&mut self, base: u64) {
        if let Some(h) = self.by_base.get_mut(&base) {
            h.pending = false;
        }
    }

    pub fn len(&self) -> usize {
        self.by_base.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_base.is_empty()
    }

    /// The hints as (base, size), in load order.
    pub fn regions(&self) -> impl Iterator<Item = (u64, Size)> + '_ {
        self.order.iter().filter_map(|b| self.by_base.get(b).map(|h| (*b, h.size)))
    }
}

impl Hints {
    /// The hints in the artifact's file format, one `0xSTART-0xEND` per
    /// line in load order (best first, as Leshy wrote them): what
    /// [`Hints::parse`] reads back.
    pub fn to_text(&self) -> String {
        self.regions().map(|(base, size)| format!("{base:#x}-{:#x}\n", base + size.bytes())).collect()
    }

    /// Writes [`Hints::to_text`] to `path` whole or not at all: under a
    /// temporary name beside it, then renamed over it, so that an error
    /// (or a crash) never leaves a half-written hint file for an offline
    /// run to read. `key` names the setting in the error.
    pub fn write_file(&self, path: &str, key: &str) -> Result<()> {
        use std::io::Write;
        let fail = |e: Error| Error::config(key, e.to_string());
        let (out, mut file) = crate::outfile::OutFile::create(std::path::Path::new(path)).map_err(fail)?;
        file.write_all(self.to_text().as_bytes()).map_err(|e| fail(out.error(e)))?;
        drop(file);
        out.commit().map_err(fail)
    }
}

fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    u64::from_str_radix(s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?, 16).ok()
}

/// Every address space's hints, shared by the fault path (the `elastic`
/// system), Leshy's epochs and CoalaKhugepaged (one simulation thread: the
/// lock never waits). `loaded` is what a process gets when it starts
/// (offline hints); Leshy online replaces a process's hints each epoch.
#[derive(Debug, Default)]
pub struct HintTable {
    pub loaded: Hints,
    pub by_asid: BTreeMap<Asid, Hints>,
}

pub type SharedHints = Arc<Mutex<HintTable>>;

/// The table's lock (a poisoned lock means a panic already ended the run).
pub fn lock(table: &SharedHints) -> std::sync::MutexGuard<'_, HintTable> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}
