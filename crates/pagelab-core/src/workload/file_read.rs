//! `file-read`: SysBench fileio's sequential read of a file into an
//! anonymous array, `read(fd, array + off, chunk)` chunk after chunk, the
//! first phase of COPLACE's varying workload.
//!
//! Keeps: the file is `workload.file` (a name; programs reading the same
//! name share its page-cache pages) of `workload.footprint` bytes, read
//! into an array as large. Each read() first finds or fills the
//! page-cache page of every 4 KiB of its chunk, then copies the chunk into
//! the array. So, with the default chunk of 4 KiB, the first touches
//! alternate page-cache page, array page, page-cache page... and their
//! frames are allocated interleaved, as the paper describes.
//!
//! How the kernel's side appears: the file is mapped read-only into the
//! program at a window (`os::FileWindow`), standing for the kernel's
//! direct map of the page-cache pages; a fault there finds or fills the
//! cached page (`os::page_cache`). Per chunk: one 8-byte load at the start
//! of each of its pages (the read's page-cache lookup, which fills the
//! page on a miss; a one-page chunk has no separate lookup: the copy's
//! first load does it), then the copy, per 64-byte line, a 64-byte load
//! from the window and a 64-byte store to the array (one instruction
//! each: `rep movsb` moves lines). The disk read of a fill costs nothing
//! beyond its fault.
//!
//! Simplifies: no system-call cost; the array is the program's only
//! anonymous memory; the natural run is one read of the whole file (a
//! budget beyond it reads the file again, now hitting the cache). The
//! init pass (`workload.init`) is off: the read is the array's first
//! touch.

use super::driver::Generator;
use super::{Access, Array, Layout, Site, WorkloadConfig};
use crate::os::FileWindow;
use crate::units::VirtAddr;

const PAGE: u64 = 4096;
const LINE: u64 = 64;

pub(crate) struct FileRead {
    arrays: Vec<Array>,
    window: FileWindow,
    array: VirtAddr,
    bytes: u64,
    chunk: u64,
    /// Offset of the next chunk in the file.
    offset: u64,
}

impl FileRead {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let bytes = cfg.footprint.bytes().div_ceil(PAGE) * PAGE;
        let mut layout = Layout::new();
        let array = layout.place("file-read-array", bytes);
        let window_start = layout.place("file-read-window", bytes);
        let mut arrays = layout.into_arrays();
        // The window is the file's, not an anonymous allocation: no Mmap
        // event, no init pass.
        arrays.truncate(1);
        let file = cfg.file.clone().unwrap_or_else(|| "file".to_string());
        let chunk = cfg.chunk.map_or(PAGE, |c| c.bytes());
        let window = FileWindow { start: window_start, len: bytes, file };
        FileRead { arrays, window, array, bytes, chunk, offset: 0 }
    }

    /// One read() of the chunk at `self.offset`.
    fn read_chunk(&mut self, out: &mut Vec<Access>) {
        let end = (self.offset + self.chunk).min(self.bytes);
        let src = self.window.start;
        if end - self.offset > PAGE {
            for page in (self.offset..end).step_by(PAGE as usize) {
                out.push(Access::load(src.add(page), 8, 1).at(Site::pc(1)));
            }
        }
        for line in (self.offset..end).step_by(LINE as usize) {
            out.push(Access::load(src.add(line), 64, 1).at(Site::pc(2)));
            out.push(Access::store(self.array.add(line), 64, 1).at(Site::pc(3)));
        }
        self.offset = end;
    }
}

impl Generator for FileRead {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.offset == self.bytes {
                return false;
            }
            self.read_chunk(out);
        }
        true
    }

    fn restart(&mut self) {
        self.offset = 0;
    }

    fn file_windows(&self) -> Vec<FileWindow> {
        vec![self.window.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{build_generator, Access, MapEvent, Site, WorkloadKind};
    use crate::units::{ByteSize, VirtAddr};

    #[test]
    fn a_two_page_chunk_looks_up_both_pages_then_copies_line_by_line() {
        // 8 KiB file, one chunk of 8 KiB: the array at 0x7eff_ffe0_0000
        // (the first placement), the window 2 MiB gap lower.
        let mut cfg = small_config(WorkloadKind::FileRead, 1);
        cfg.footprint = ByteSize(8192);
        cfg.chunk = Some(ByteSize(8192));
        cfg.accesses = 0;
        let all = collect(&cfg, usize::MAX);
        let (array, window) = (0x7eff_ffe0_0000u64, 0x7eff_ffa0_0000u64);
        assert_eq!(all.events.len(), 1);
        assert!(matches!(&all.events[0].1, MapEvent::Mmap { start, len: 8192, .. } if start.raw() == array));
        let w = build_generator(&cfg, "workload").unwrap();
        assert_eq!(w.file_windows()[0].start.raw(), window);
        assert_eq!(w.file_windows()[0].file, "file");
        let v = VirtAddr::new;
        // Two lookups, then 128 lines of load and store: no init pass.
        assert_eq!(all.accesses.len(), 2 + 2 * 128);
        assert_eq!(all.accesses[0], Access::load(v(window), 8, 1).at(Site::pc(1)));
        assert_eq!(all.accesses[1], Access::load(v(window + 4096), 8, 1).at(Site::pc(1)));
        assert_eq!(all.accesses[2], Access::load(v(window), 64, 1).at(Site::pc(2)));
        assert_eq!(all.accesses[3], Access::store(v(array), 64, 1).at(Site::pc(3)));
        assert_eq!(all.accesses[257], Access::store(v(array + 8192 - 64), 64, 1).at(Site::pc(3)));
    }
}
