//! The kernel's side of the page cache and of a process's life: file
//! windows and their faults, the page allocation a page-cache fill shares
//! with a 4 KiB fault, reclaim of clean cached pages before an allocation
//! fails, and a process's exit.

use super::fault::FaultOutcome;
use super::page_cache::{FileWindow, Lookup, PageCache, PAGE_CACHE_POOL};
use super::Kernel;
use crate::error::{Error, Result};
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr};

/// Pages reclaim frees at a time (Linux's SWAP_CLUSTER_MAX).
const RECLAIM_BATCH: usize = 32;

/// A page-cache frame's owner.
const CACHED: FrameOwner = FrameOwner::Reserved { pool: PAGE_CACHE_POOL };

impl Kernel {
    /// Maps a new process's file windows: read-only VMAs named after the
    /// file, noted in the process so that its faults there go to the page
    /// cache.
    pub(super) fn map_files(&mut self, asid: Asid, files: &[FileWindow]) -> Result<()> {
        for w in files {
            let end = w.start.checked_add(w.len).filter(|_| w.len > 0 && w.start.is_aligned(4096));
            let end = end.ok_or_else(|| Error::Workload(format!("file window of `{}` at {}", w.file, w.start)))?;
            let id = self.page_cache.get_or_insert_with(PageCache::default).file_id(&w.file);
            let p = self.proc_mut(asid);
            if p.aspace.vmas.overlaps(w.start, end) {
                return Err(Error::Workload(format!("file window of `{}` overlaps a mapping", w.file)));
            }
            p.aspace.vmas.insert(Vma { start: w.start, end, writable: false, name: format!("file:{}", w.file).into() });
            p.files.push((w.start, end, id));
        }
        Ok(())
    }

    /// The file window of `asid` holding `vaddr`, if any: (file, page
    /// index in the file).
    pub(super) fn file_page_at(&self, asid: Asid, vaddr: VirtAddr) -> Option<(u32, u64)> {
        let files = &self.proc(asid).files;
        let &(start, _, file) = files.iter().find(|&&(s, e, _)| vaddr >= s && vaddr < e)?;
        Some((file, (vaddr.raw() - start.raw()) >> 12))
    }

    /// A fault in a file window: the cached page (a hit), else a frame
    /// from the process's allocation path filled with the file page (a
    /// fill); mapped read-only. Costs a 4 KiB fault either way (the disk
    /// read of a fill is not modelled).
    pub(super) fn file_fault(&mut self, asid: Asid, vaddr: VirtAddr, file: u32, index: u64) -> Result<FaultOutcome> {
        let cache = self.page_cache.as_mut().expect("a file window has a page cache");
        let frame = match cache.map(file, index) {
            Lookup::Hit(frame) => frame,
            Lookup::Miss => {
                let frame = self.with_reclaim(|k| k.alloc_page_for(asid, CACHED))?;
                self.page_cache.as_mut().expect("checked above").fill(file, index, frame);
                frame
            }
        };
        self.map_user(asid, vaddr.align_down(4096), frame, PageSize::Size4K, false)?;
        Ok(FaultOutcome { kind: "pagecache", size: PageSize::Size4K, cycles: self.costs.base })
    }

    /// A 4 KiB frame for process `asid`, owned by `owner`, as its 4 KiB
    /// fault would get it: the first system of its chain that allocates
    /// one (coloring and bin hopping color it), else the buddy allocator
    /// (MOVABLE, as Linux's page-cache and anonymous pages both are).
    pub fn alloc_page_for(&mut self, asid: Asid, owner: FrameOwner) -> Result<Pfn> {
        let chosen = self.with_systems(|systems, k| {
            for s in systems.iter_mut() {
                if k.proc(asid).opt_out.contains(&s.name()) {
                    continue;
                }
                if let Some(frame) = s.alloc_page(k, asid, owner)? {
                    return Ok(Some(frame));
                }
            }
            Ok::<_, Error>(None)
        })?;
        if let Some(frame) = chosen {
            return Ok(frame);
        }
        self.mem
            .alloc(Order::BASE, Migratetype::Movable, owner)
            .ok_or_else(|| Error::OutOfMemory("no 4 KiB frame for a page-cache page".into()))
    }

    /// Runs `f` until it succeeds or fails otherwise than out of memory;
    /// out of memory, reclaims clean page-cache pages from the LRU's cold
    /// end and tries again while there are any.
    pub(super) fn with_reclaim<T>(&mut self, mut f: impl FnMut(&mut Kernel) -> Result<T>) -> Result<T> {
        loop {
            match f(self) {
                Err(Error::OutOfMemory(msg)) => {
                    if !self.reclaim_cache(RECLAIM_BATCH) {
                        return Err(Error::OutOfMemory(msg));
                    }
                }
                other => return other,
            }
        }
    }

    /// Frees up to `n` of the coldest unmapped page-cache pages. Returns
    /// whether it freed any.
    pub fn reclaim_cache(&mut self, n: usize) -> bool {
        let Some(cache) = self.page_cache.as_mut() else { return false };
        let frames = cache.reclaim(n);
        for &frame in &frames {
            self.mem.free(frame, Order::BASE);
        }
        !frames.is_empty()
    }

    /// Whether `frame`, just unmapped from a window, is a page-cache page
    /// (then it stays cached, one mapping fewer).
    pub(super) fn release_cached(&mut self, frame: Pfn) -> bool {
        match self.page_cache.as_mut() {
            Some(cache) if cache.holds(frame) => {
                cache.unmapped(frame);
                true
            }
            _ => false,
        }
    }

    /// The process exits: every mapping is unmapped (anonymous frames go
    /// back to their system or the buddy allocator, page-cache pages stay
    /// cached), each range shot down, and its page-table pages freed. Its
    /// asid is never reused: a later process gets a new one (a new
    /// ASID/PCID, as Linux gives a new mm).
    pub fn exit(&mut self, asid: Asid) -> Result<()> {
        let ranges: Vec<(VirtAddr, VirtAddr)> = self.proc(asid).aspace.vmas.iter().map(|v| (v.start, v.end)).collect();
        for (start, end) in ranges {
            self.unmap(asid, start, end, true)?;
        }
        let p = &mut self.procs[asid as usize - 1];
        p.aspace.destroy(&mut self.mem);
        p.files.clear();
        p.unmapped = Default::default();
        p.exited = true;
        Ok(())
    }
}
