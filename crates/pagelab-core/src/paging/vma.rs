//! Virtual memory areas: the ranges a process has mapped, with their
//! permissions, as Linux's vm_area_struct (start, end, flags, a name for
//! the reader: the workload's array or the trace's mapping).

use std::collections::BTreeMap;

use crate::units::VirtAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vma {
    pub start: VirtAddr,
    /// Exclusive.
    pub end: VirtAddr,
    pub writable: bool,
    /// Shared, so that cloning a VMA (once per fault) copies no string.
    pub name: std::sync::Arc<str>,
}

impl Vma {
    pub fn len(&self) -> u64 {
        self.end.offset_from(self.start)
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
    pub fn contains(&self, a: VirtAddr) -> bool {
        self.start <= a && a < self.end
    }
    /// Whether the aligned range [a, a + len) lies inside this VMA.
    pub fn covers(&self, a: VirtAddr, len: u64) -> bool {
        self.start <= a && a.raw() + len <= self.end.raw()
    }
    fn can_merge(&self, other: &Vma) -> bool {
        self.writable == other.writable && self.name == other.name
    }
}

/// The VMAs of one address space, keyed by start; never overlapping.
#[derive(Debug, Default)]
pub struct VmaTree {
    map: BTreeMap<u64, Vma>,
}

impl VmaTree {
    #[inline]
    pub fn find(&self, a: VirtAddr) -> Option<&Vma> {
        self.map.range(..=a.raw()).next_back().map(|(_, v)| v).filter(|v| v.contains(a))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.map.values()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether any VMA overlaps [start, end).
    pub fn overlaps(&self, start: VirtAddr, end: VirtAddr) -> bool {
        self.map.range(..end.raw()).next_back().is_some_and(|(_, v)| v.end > start)
    }

    /// The VMAs overlapping [start, end), in address order.
    pub fn overlapping(&self, start: VirtAddr, end: VirtAddr) -> impl Iterator<Item = &Vma> {
        let before = self.map.range(..start.raw()).next_back().map(|(_, v)| v).filter(|v| v.end > start);
        before.into_iter().chain(self.map.range(start.raw()..end.raw()).map(|(_, v)| v))
    }

    /// Adds a VMA, merging with an adjacent compatible one (vma_merge: this
    /// is also how a heap or stack grows). Overlap is the caller's error.
    pub fn insert(&mut self, vma: Vma) {
        debug_assert!(!self.overlaps(vma.start, vma.end));
        let mut vma = vma;
        if let Some(prev) = self.map.range(..vma.start.raw()).next_back().map(|(_, v)| v.clone()) {
            if prev.end == vma.start && prev.can_merge(&vma) {
                self.map.remove(&prev.start.raw());
                vma.start = prev.start;
            }
        }
        if let Some(next) = self.map.get(&vma.end.raw()).cloned() {
            if next.can_merge(&vma) {
                self.map.remove(&next.start.raw());
                vma.end = next.end;
            }
        }
        self.map.insert(vma.start.raw(), vma);
    }

    /// Removes [start, end) from every VMA, splitting those that straddle it.
    pub fn remove(&mut self, start: VirtAddr, end: VirtAddr) {
        self.isolate(start, end);
        let keys: Vec<u64> = self.map.range(start.raw()..end.raw()).map(|(k, _)| *k).collect();
        for k in keys {
            self.map.remove(&k);
        }
    }

    /// Sets the permission of [start, end), splitting VMAs at the edges.
    pub fn protect(&mut self, start: VirtAddr, end: VirtAddr, writable: bool) {
        self.isolate(start, end);
        for (_, v) in self.map.range_mut(start.raw()..end.raw()) {
            v.writable = writable;
        }
    }

    /// Splits VMAs so that `start` and `end` fall on VMA boundaries.
    fn isolate(&mut self, start: VirtAddr, end: VirtAddr) {
        for cut in [start, end] {
            let Some(v) = self.find(cut).cloned() else { continue };
            if v.start == cut {
                continue;
            }
            let mut right = v.clone();
            right.start = cut;
            self.map.get_mut(&v.start.raw()).expect("found above").end = cut;
            self.map.insert(cut.raw(), right);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(s: u64, e: u64) -> Vma {
        Vma { start: VirtAddr::new(s), end: VirtAddr::new(e), writable: true, name: "heap".into() }
    }

    #[test]
    fn adjacent_compatible_vmas_merge_like_heap_growth() {
        let mut t = VmaTree::default();
        t.insert(vma(0x1000, 0x3000));
        t.insert(vma(0x3000, 0x5000));
        assert_eq!(t.len(), 1);
        assert_eq!(t.find(VirtAddr::new(0x4fff)).unwrap().start, VirtAddr::new(0x1000));
        assert!(t.find(VirtAddr::new(0x5000)).is_none());
    }

    #[test]
    fn munmap_in_the_middle_splits_a_vma_in_two() {
        let mut t = VmaTree::default();
        t.insert(vma(0x0, 0x10000));
        t.remove(VirtAddr::new(0x4000), VirtAddr::new(0x6000));
        assert_eq!(t.len(), 2);
        assert!(t.find(VirtAddr::new(0x5000)).is_none());
        assert_eq!(t.find(VirtAddr::new(0x6000)).unwrap().end, VirtAddr::new(0x10000));
        assert_eq!(t.find(VirtAddr::new(0x3fff)).unwrap().end, VirtAddr::new(0x4000));
    }

    #[test]
    fn mprotect_splits_at_both_edges() {
        let mut t = VmaTree::default();
        t.insert(vma(0x0, 0x10000));
        t.protect(VirtAddr::new(0x2000), VirtAddr::new(0x3000), false);
        assert_eq!(t.len(), 3);
        assert!(!t.find(VirtAddr::new(0x2000)).unwrap().writable);
        assert!(t.find(VirtAddr::new(0x3000)).unwrap().writable);
        assert!(t.overlaps(VirtAddr::new(0xf000), VirtAddr::new(0x20000)));
        assert!(!t.overlaps(VirtAddr::new(0x10000), VirtAddr::new(0x20000)));
    }

    #[test]
    fn overlapping_lists_the_vmas_a_range_touches() {
        let mut t = VmaTree::default();
        t.insert(vma(0x0, 0x2000));
        t.insert(Vma { name: "b".into(), ..vma(0x3000, 0x5000) });
        t.insert(Vma { name: "c".into(), ..vma(0x6000, 0x7000) });
        let starts = |s: u64, e: u64| {
            t.overlapping(VirtAddr::new(s), VirtAddr::new(e)).map(|v| v.start.raw()).collect::<Vec<_>>()
        };
        assert_eq!(starts(0x1000, 0x3001), [0x0, 0x3000]);
        assert_eq!(starts(0x2000, 0x3000), Vec::<u64>::new());
        assert_eq!(starts(0x4000, 0x8000), [0x3000, 0x6000]);
        assert_eq!(starts(0x7000, 0x9000), Vec::<u64>::new());
    }
}
