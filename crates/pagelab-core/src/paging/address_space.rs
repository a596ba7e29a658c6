//! One process's address space: its VMAs and its page table, and the
//! mechanics of changing mappings (map, unmap, protect, split). Each change
//! returns what it removed so the OS can free frames and shoot down TLBs.

use super::pagetable::{Mapping, PageTable};
use super::pte::ACCESSED;
use super::vma::{Vma, VmaTree};
use crate::error::Result;
use crate::phys::PhysMem;
use crate::units::{Asid, PageSize, VirtAddr};

#[derive(Debug)]
pub struct AddressSpace {
    pub asid: Asid,
    pub pt: PageTable,
    pub vmas: VmaTree,
    /// Bytes mapped by leaves of each size (index: 4K, 2M, 1G).
    mapped: [u64; 3],
}

fn size_index(size: PageSize) -> usize {
    size.leaf_level() as usize - 1
}

impl AddressSpace {
    pub fn new(asid: Asid, levels: u8, mem: &mut PhysMem) -> Result<Self> {
        Ok(AddressSpace { asid, pt: PageTable::new(asid, levels, mem)?, vmas: VmaTree::default(), mapped: [0; 3] })
    }

    pub fn mapped_bytes(&self, size: PageSize) -> u64 {
        self.mapped[size_index(size)]
    }

    /// (Inline: the fault handler's lookup, once per fault; out of line,
    /// a call per fault measurably slowed the first-touch pass.)
    #[inline]
    pub fn find_vma(&self, a: VirtAddr) -> Option<&Vma> {
        self.vmas.find(a)
    }

    /// Installs a leaf translation.
    pub fn map_leaf(
        &mut self,
        vaddr: VirtAddr,
        frame: crate::units::Pfn,
        size: PageSize,
        writable: bool,
        mem: &mut PhysMem,
    ) -> Result<()> {
        self.pt.map(vaddr, frame, size, writable, mem)?;
        self.mapped[size_index(size)] += size.bytes();
        Ok(())
    }

    /// Splits a huge leaf one level down (THP split on partial munmap or
    /// mprotect).
    pub fn split(&mut self, vaddr: VirtAddr, size: PageSize, mem: &mut PhysMem) -> Result<()> {
        self.pt.split_huge(vaddr, mem)?;
        let smaller = if size == PageSize::Size1G { PageSize::Size2M } else { PageSize::Size4K };
        self.mapped[size_index(size)] -= size.bytes();
        self.mapped[size_index(smaller)] += size.bytes();
        Ok(())
    }

    /// Collapses a 2 MiB (or 1 GiB) range into one leaf of `frame`; returns
    /// the entries it replaced.
    pub fn collapse(
        &mut self,
        vaddr: VirtAddr,
        frame: crate::units::Pfn,
        size: PageSize,
        writable: bool,
        mem: &mut PhysMem,
    ) -> Vec<super::Pte> {
        let old = self.pt.collapse(vaddr, frame, size, writable, mem);
        let smaller = if size == PageSize::Size1G { PageSize::Size2M } else { PageSize::Size4K };
        self.mapped[size_index(smaller)] -= old.len() as u64 * smaller.bytes();
        self.mapped[size_index(size)] += size.bytes();
        old
    }

    /// Splits every huge leaf that straddles an edge of [start, end), so
    /// the range can be changed page by page. Returns how many splits.
    pub fn split_edges(&mut self, start: VirtAddr, end: VirtAddr, mem: &mut PhysMem) -> Result<u32> {
        let mut splits = 0;
        for edge in [start, end] {
            while let Some(m) = self.pt.lookup(edge) {
                let base = edge.align_down(m.size.bytes());
                if m.size == PageSize::Size4K || base == edge {
                    break;
                }
                self.split(base, m.size, mem)?;
                splits += 1;
            }
        }
        Ok(splits)
    }

    /// munmap: removes [start, end) from the VMAs and the page table.
    /// Returns the removed leaves (their frames are the caller's to free).
    pub fn unmap_range(
        &mut self,
        start: VirtAddr,
        end: VirtAddr,
        mem: &mut PhysMem,
    ) -> Result<(Vec<(VirtAddr, Mapping)>, u32)> {
        let splits = self.split_edges(start, end, mem)?;
        let leaves = self.pt.leaves_in(start, end);
        for (va, m) in &leaves {
            self.pt.unmap(*va, m.size, mem);
            self.mapped[size_index(m.size)] -= m.size.bytes();
        }
        self.vmas.remove(start, end);
        Ok((leaves, splits))
    }

    /// mprotect: sets the permission of [start, end). Returns the number of
    /// splits it needed.
    pub fn protect_range(&mut self, start: VirtAddr, end: VirtAddr, writable: bool, mem: &mut PhysMem) -> Result<u32> {
        let splits = self.split_edges(start, end, mem)?;
        for (va, m) in self.pt.leaves_in(start, end) {
            let slot = self.pt.leaf_slot(va).expect("leaf just listed");
            let pte = if writable { m.pte.with(super::pte::WRITABLE) } else { m.pte.without(super::pte::WRITABLE) };
            self.pt.replace(slot, pte);
        }
        self.vmas.protect(start, end, writable);
        Ok(splits)
    }

    /// The leaves in [start, end) whose accessed bit is set, each as (its
    /// first address, its size), in address order. With `clear` the bits
    /// are cleared, without a shootdown, as Linux's idle page tracking and
    /// HawkEye's scanner clear them (`pte_mkold`): a translation a TLB
    /// still holds sets no bit until it is fetched again. Leshy's
    /// access-bit source and HawkEye's access coverage both read them here.
    pub fn accessed_leaves(&mut self, start: VirtAddr, end: VirtAddr, clear: bool) -> Vec<(VirtAddr, PageSize)> {
        let mut accessed = Vec::new();
        for (va, m) in self.pt.leaves_in(start, end).into_iter().filter(|(_, m)| m.pte.raw() & ACCESSED != 0) {
            let base = va.align_down(m.size.bytes());
            if clear {
                let slot = self.pt.leaf_slot(base).expect("a leaf just listed");
                self.pt.clear_bits(slot, ACCESSED);
            }
            accessed.push((base, m.size));
        }
        accessed
    }

    /// Frees every table page (process exit; frames of pages are the
    /// caller's, via `unmap_range` first).
    pub fn destroy(&mut self, mem: &mut PhysMem) {
        self.pt.destroy(mem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Pfn;

    #[test]
    fn partial_munmap_of_a_huge_page_splits_it_and_keeps_the_rest() {
        let mut mem = PhysMem::new(1 << 14, 10).unwrap();
        let mut aspace = AddressSpace::new(1, 4, &mut mem).unwrap();
        let va = VirtAddr::new(0x4000_0000);
        aspace.vmas.insert(Vma { start: va, end: va.add(2 << 20), writable: true, name: "a".into() });
        aspace.map_leaf(va, Pfn::new(0x1000), PageSize::Size2M, true, &mut mem).unwrap();
        let (removed, splits) = aspace.unmap_range(va.add(0x1000), va.add(0x3000), &mut mem).unwrap();
        assert_eq!(splits, 1);
        assert_eq!(removed.len(), 2);
        assert_eq!(removed[0].1.frame, Pfn::new(0x1001));
        assert_eq!(aspace.mapped_bytes(PageSize::Size2M), 0);
        assert_eq!(aspace.mapped_bytes(PageSize::Size4K), (2 << 20) - 0x2000);
        assert_eq!(aspace.pt.lookup(va.add(0x3000)).unwrap().frame, Pfn::new(0x1003));
        assert!(aspace.pt.lookup(va.add(0x2000)).is_none());
        assert_eq!(aspace.vmas.len(), 2);
    }

    #[test]
    fn mprotect_of_part_of_a_huge_page_splits_it() {
        let mut mem = PhysMem::new(1 << 14, 10).unwrap();
        let mut aspace = AddressSpace::new(1, 4, &mut mem).unwrap();
        let va = VirtAddr::new(0x4000_0000);
        aspace.vmas.insert(Vma { start: va, end: va.add(2 << 20), writable: true, name: "a".into() });
        aspace.map_leaf(va, Pfn::new(0x1000), PageSize::Size2M, true, &mut mem).unwrap();
        assert_eq!(aspace.protect_range(va, va.add(0x1000), false, &mut mem).unwrap(), 1);
        assert!(!aspace.pt.lookup(va).unwrap().pte.writable());
        assert!(aspace.pt.lookup(va.add(0x1000)).unwrap().pte.writable());
    }
}
