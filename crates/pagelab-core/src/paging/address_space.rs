//! One process's address space: its VMAs and its page table, and the
//! mechanics of changing mappings (map, unmap, protect, split). Each change
//! returns what it removed so the OS can free frames and shoot down TLBs.
//!
//! A huge leaf may also be split in the table only (HugeScope's EPT-only
//! split, `virt::ept_split`): the table then holds 512 leaves of the next
//! size over the same frames while everything else (the counters here, the
//! frames' owners, the buddy allocator's blocks) still says "one huge page".
//! Such a range is a *table-only split*. Every change of the metadata here
//! (munmap, mprotect, a split or collapse) first puts the huge leaf back
//! over a table-only split it reaches, as HugeScope coalesces a split range
//! the hypervisor itself touches (its paper, section 3.3.4); daemons that
//! read the table for metadata work (khugepaged, KSM, compaction,
//! migration) ask [`AddressSpace::table_only_split`] and skip the range or
//! restore it first.

use std::collections::BTreeMap;

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
    /// Bytes mapped by leaves of each size (index: 4K, 2M, 1G), as the
    /// metadata says: a table-only split counts as its huge leaf.
    mapped: [u64; 3],
    /// The table-only splits: first address -> the huge size the metadata
    /// still holds there.
    table_only: BTreeMap<VirtAddr, PageSize>,
    /// Table-only splits put back because metadata work reached them.
    restored: u64,
}

fn size_index(size: PageSize) -> usize {
    size.leaf_level() as usize - 1
}

impl AddressSpace {
    pub fn new(asid: Asid, levels: u8, mem: &mut PhysMem) -> Result<Self> {
        Ok(AddressSpace {
            asid,
            pt: PageTable::new(asid, levels, mem)?,
            vmas: VmaTree::default(),
            mapped: [0; 3],
            table_only: BTreeMap::new(),
            restored: 0,
        })
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
        self.restore_table_only(vaddr, vaddr.add(size.bytes()), mem);
        self.pt.split_huge(vaddr, mem)?;
        self.count_split(size);
        Ok(())
    }

    /// The counters of a `size` leaf split one level down.
    fn count_split(&mut self, size: PageSize) {
        let smaller = if size == PageSize::Size1G { PageSize::Size2M } else { PageSize::Size4K };
        self.mapped[size_index(size)] -= size.bytes();
        self.mapped[size_index(smaller)] += size.bytes();
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
        debug_assert!(self.table_only_split(vaddr).is_none(), "a collapse over a table-only split at {vaddr}");
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
        self.restore_table_only(start, end, mem);
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
        self.restore_table_only(start, end, mem);
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

    /// Splits the huge leaf at `base` in the table only (see the module's
    /// doc): the counters keep saying one huge page.
    pub fn split_table_only(&mut self, base: VirtAddr, size: PageSize, mem: &mut PhysMem) -> Result<()> {
        debug_assert!(size != PageSize::Size4K && base.is_aligned(size.bytes()));
        self.pt.split_huge(base, mem)?;
        self.table_only.insert(base, size);
        Ok(())
    }

    /// Puts the huge leaf of `frame` back over the table-only split at
    /// `base`; returns the entries it replaced.
    pub fn collapse_table_only(
        &mut self,
        base: VirtAddr,
        frame: crate::units::Pfn,
        writable: bool,
        mem: &mut PhysMem,
    ) -> Vec<super::Pte> {
        let size = self.table_only.remove(&base).expect("a table-only split at base");
        self.pt.collapse(base, frame, size, writable, mem)
    }

    /// The table-only split holding `a`, if any: (its first address, the
    /// huge size the metadata holds).
    pub fn table_only_split(&self, a: VirtAddr) -> Option<(VirtAddr, PageSize)> {
        let (&base, &size) = self.table_only.range(..=a).next_back()?;
        (a.raw() < base.raw() + size.bytes()).then_some((base, size))
    }

    /// How many table-only splits there are now.
    pub fn table_only_splits(&self) -> usize {
        self.table_only.len()
    }

    /// Table-only splits put back because metadata work reached them.
    pub fn table_only_restored(&self) -> u64 {
        self.restored
    }

    pub fn reset_table_only_restored(&mut self) {
        self.restored = 0;
    }

    /// Puts the huge leaf back over every table-only split that overlaps
    /// [start, end) (metadata work is about to change the range). A split
    /// whose 512 entries no longer map its frames in order (only a direct
    /// change of the table can do that) becomes a split of the metadata
    /// too, so the counters follow the table. Returns how many it restored.
    pub fn restore_table_only(&mut self, start: VirtAddr, end: VirtAddr, mem: &mut PhysMem) -> u32 {
        let from = self.table_only_split(start).map_or(start, |(base, _)| base);
        let reached: Vec<(VirtAddr, PageSize)> = self.table_only.range(from..end).map(|(&b, &s)| (b, s)).collect();
        for &(base, size) in &reached {
            match self.table_only_frames(base, size) {
                Some((frame, writable, bits)) => {
                    self.collapse_table_only(base, frame, writable, mem);
                    let slot = self.pt.leaf_slot(base).expect("a leaf just installed");
                    self.pt.set_bits(slot, bits);
                }
                None => {
                    self.table_only.remove(&base);
                    self.count_split(size);
                }
            }
        }
        self.restored += reached.len() as u64;
        reached.len() as u32
    }

    /// The first frame, permission and accessed and dirty bits of the range
    /// at `base` if its entries are the 512 leaves of one `size` page over
    /// contiguous, aligned frames with one permission.
    pub fn table_only_frames(&self, base: VirtAddr, size: PageSize) -> Option<(crate::units::Pfn, bool, u64)> {
        use super::pte::DIRTY;
        let leaves = self.pt.leaves_in(base, base.add(size.bytes()));
        let part = super::pagetable::level_size(size.leaf_level() - 1);
        let first = leaves.first()?.1;
        let whole = leaves.len() == 512
            && first.frame.is_aligned(size.nr_pages())
            && leaves.iter().enumerate().all(|(i, (_, m))| {
                m.size == part
                    && m.frame.raw() == first.frame.raw() + i as u64 * part.nr_pages()
                    && m.pte.writable() == first.pte.writable()
            });
        let bits = leaves.iter().fold(0, |acc, (_, m)| acc | (m.pte.raw() & (ACCESSED | DIRTY)));
        whole.then_some((first.frame, first.pte.writable(), bits))
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
