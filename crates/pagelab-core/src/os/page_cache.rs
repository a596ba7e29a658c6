//! The page cache: pages of files, kept after the program that read them
//! exits, found again by a later read of the same file page, and reclaimed
//! from the cold end of an LRU when an allocation finds no free frame.
//!
//! What is modelled: a file is a named object of a size; its 4 KiB pages
//! are cached by (file, page index). A program reads a file through a
//! read-only *file window* in its address space (`FileWindow`): the first
//! touch of a window page is a fault that finds the file page in the cache
//! (a hit: no allocation) or allocates a frame for it (a fill) through the
//! same allocation path a 4 KiB anonymous fault of that process takes
//! (`Kernel::alloc_page_for`: a coloring system colors it, else the buddy
//! allocator), and maps it. The window stands for the kernel's copy source
//! in `read()` (Linux reads the page through its direct map): the copy's
//! loads are references at the page-cache frame's physical address.
//!
//! Simplified: pages are clean (nothing writes a file), so reclaim just
//! frees them; only pages no window maps are reclaimed (Linux would unmap
//! mapped ones through its rmap first); the disk read of a fill costs
//! nothing beyond the fault; one LRU list, no active/inactive split.

use std::collections::{BTreeMap, HashMap};

use crate::units::{Pfn, VirtAddr};

/// The pool tag of a page-cache frame's owner (`FrameOwner::Reserved`):
/// the frame is neither free nor any process's page.
pub const PAGE_CACHE_POOL: u8 = 10;

/// A file mapped read-only into a process at `start` for `len` bytes: the
/// source of its reads (see the module comment). `file` names the file:
/// two windows of one name read the same pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWindow {
    pub start: VirtAddr,
    pub len: u64,
    pub file: String,
}

/// One cached file page.
#[derive(Debug, Clone, Copy)]
struct CachedPage {
    frame: Pfn,
    /// Its position in the LRU (larger = more recently used).
    stamp: u64,
    /// How many windows map it now (mapped pages are not reclaimed).
    mapcount: u32,
}

/// The page cache's counters (`pagecache.*`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PageCacheStats {
    pub fills: u64,
    pub hits: u64,
    pub reclaimed: u64,
}

#[derive(Debug, Default)]
pub struct PageCache {
    /// File names to their numbers, in order of first use.
    files: BTreeMap<String, u32>,
    /// (file, page index) packed by `key` to the cached page. Looked up
    /// only, never iterated (iteration order would reach results).
    pages: HashMap<u64, CachedPage>,
    /// The LRU: stamp to key, coldest first.
    lru: BTreeMap<u64, u64>,
    /// Frames to keys, for an unmap that sees a frame only.
    by_frame: HashMap<Pfn, u64>,
    next_stamp: u64,
    pub stats: PageCacheStats,
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Hit(Pfn),
    Miss,
}

fn key(file: u32, index: u64) -> u64 {
    debug_assert!(index < 1 << 40, "a file of at most 4 PiB");
    (file as u64) << 40 | index
}

impl PageCache {
    /// The number of `name`, given one at its first use.
    pub fn file_id(&mut self, name: &str) -> u32 {
        let next = self.files.len() as u32;
        *self.files.entry(name.to_string()).or_insert(next)
    }

    /// Pages cached now (`pagecache.pages`).
    pub fn nr_pages(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Looks up page `index` of `file` for a window that maps it: a hit
    /// moves it to the hot end and counts one more mapping.
    pub fn map(&mut self, file: u32, index: u64) -> Lookup {
        let k = key(file, index);
        let stamp = self.next_stamp;
        let Some(page) = self.pages.get_mut(&k) else { return Lookup::Miss };
        self.lru.remove(&page.stamp);
        page.stamp = stamp;
        page.mapcount += 1;
        self.lru.insert(stamp, k);
        self.next_stamp += 1;
        self.stats.hits += 1;
        Lookup::Hit(page.frame)
    }

    /// Adds page `index` of `file` in `frame` after a miss, mapped once,
    /// at the hot end.
    pub fn fill(&mut self, file: u32, index: u64, frame: Pfn) {
        let k = key(file, index);
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        let old = self.pages.insert(k, CachedPage { frame, stamp, mapcount: 1 });
        debug_assert!(old.is_none(), "file page {k:#x} filled twice");
        self.lru.insert(stamp, k);
        self.by_frame.insert(frame, k);
        self.stats.fills += 1;
    }

    /// Whether `frame` holds a cached file page.
    pub fn holds(&self, frame: Pfn) -> bool {
        self.by_frame.contains_key(&frame)
    }

    /// A window stopped mapping `frame` (an unmap, a process's exit).
    pub fn unmapped(&mut self, frame: Pfn) {
        let k = self.by_frame[&frame];
        let page = self.pages.get_mut(&k).expect("a frame of the cache has its page");
        debug_assert!(page.mapcount > 0, "frame {frame} unmapped more often than mapped");
        page.mapcount -= 1;
    }

    /// Takes up to `n` unmapped pages from the cold end of the LRU out of
    /// the cache and returns their frames, coldest first (the caller frees
    /// them).
    pub fn reclaim(&mut self, n: usize) -> Vec<Pfn> {
        let victims: Vec<(u64, u64)> = self
            .lru
            .iter()
            .filter(|(_, k)| self.pages[k].mapcount == 0)
            .take(n)
            .map(|(&stamp, &k)| (stamp, k))
            .collect();
        let mut frames = Vec::with_capacity(victims.len());
        for (stamp, k) in victims {
            self.lru.remove(&stamp);
            let page = self.pages.remove(&k).expect("an LRU entry has its page");
            self.by_frame.remove(&page.frame);
            frames.push(page.frame);
        }
        self.stats.reclaimed += frames.len() as u64;
        frames
    }

    /// The cached frames, coldest first (tests and invariants).
    pub fn frames_by_age(&self) -> Vec<Pfn> {
        self.lru.values().map(|k| self.pages[k].frame).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_map_hits_and_reclaim_takes_the_coldest_unmapped_first() {
        let mut pc = PageCache::default();
        let f = pc.file_id("data");
        assert_eq!(pc.file_id("other"), 1);
        assert_eq!(pc.file_id("data"), f);
        for i in 0..3 {
            assert_eq!(pc.map(f, i), Lookup::Miss);
            pc.fill(f, i, Pfn::new(100 + i));
        }
        // Page 0 becomes the hottest; page 2 stays mapped.
        for i in 0..2 {
            pc.unmapped(Pfn::new(100 + i));
        }
        assert_eq!(pc.map(f, 0), Lookup::Hit(Pfn::new(100)));
        pc.unmapped(Pfn::new(100));
        assert_eq!(pc.frames_by_age(), [Pfn::new(101), Pfn::new(102), Pfn::new(100)]);
        // 102 is mapped: skipped; 101 then 100.
        assert_eq!(pc.reclaim(5), [Pfn::new(101), Pfn::new(100)]);
        assert_eq!(pc.nr_pages(), 1);
        assert!(pc.holds(Pfn::new(102)) && !pc.holds(Pfn::new(100)));
        assert_eq!((pc.stats.fills, pc.stats.hits, pc.stats.reclaimed), (3, 1, 2));
        assert_eq!(pc.map(f, 1), Lookup::Miss);
    }
}
