//! x86-64 radix page tables whose pages are frames of simulated memory.
//!
//! Every table page is a frame taken from the buddy allocator (owner
//! `PageTable`, migratetype UNMOVABLE as Linux's page-table allocations), so
//! a walk reads real physical addresses: the entry for `vaddr` at level `l`
//! of a table in frame `t` sits at `t * 4096 + index(vaddr, l) * 8`.
//!
//! The contents live in host memory in a slab of nodes. A non-leaf node also
//! keeps, beside its hardware-visible entries, the slab index of each child:
//! a software shortcut equal by construction to following the entry's frame
//! number (checked in debug builds), so a walk never searches a map.
//! Levels are numbered as Intel does: 1 = PTE (page table), 2 = PMD (page
//! directory), 3 = PUD (PDPT), 4 = PGD (PML4), 5 = PML5.

use super::pte::{Pte, ACCESSED, DIRTY};
use crate::error::{Error, Result};
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Asid, Order, PageSize, PhysAddr, Pfn, VirtAddr, PTRS_PER_TABLE};

/// Index of a table node in the slab.
pub type NodeId = u32;
const NO_CHILD: u32 = u32::MAX;
/// Level of a slab slot whose table was freed.
const RELEASED: u8 = 0;

#[derive(Debug)]
struct Node {
    entries: Box<[u64; PTRS_PER_TABLE]>,
    /// Slab index of each entry's next-level table (non-leaf levels only).
    child: Option<Box<[u32; PTRS_PER_TABLE]>>,
    frame: Pfn,
    level: u8,
    /// Present entries, so an emptied table can be freed.
    live: u16,
}

/// A leaf translation found by a software walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First frame of the page (aligned to its size).
    pub frame: Pfn,
    pub size: PageSize,
    pub pte: Pte,
}

/// Where a leaf entry lives: the node, the index in it, the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafSlot {
    pub node: NodeId,
    pub index: usize,
    pub level: u8,
}

#[derive(Debug)]
pub struct PageTable {
    asid: Asid,
    levels: u8,
    nodes: Vec<Node>,
    free_nodes: Vec<NodeId>,
    root: NodeId,
    table_pages: u64,
}

/// Index of `vaddr`'s entry in a table of `level`.
#[inline]
pub fn table_index(vaddr: VirtAddr, level: u8) -> usize {
    ((vaddr.raw() >> (12 + 9 * (level as u32 - 1))) & 511) as usize
}

impl PageTable {
    pub fn new(asid: Asid, levels: u8, mem: &mut PhysMem) -> Result<Self> {
        debug_assert!(levels == 4 || levels == 5);
        let mut pt = PageTable { asid, levels, nodes: Vec::new(), free_nodes: Vec::new(), root: 0, table_pages: 0 };
        pt.root = pt.alloc_node(levels, mem)?;
        Ok(pt)
    }

    pub fn levels(&self) -> u8 {
        self.levels
    }
    pub fn root(&self) -> NodeId {
        self.root
    }
    /// The frame of the top-level table (what CR3 holds).
    pub fn root_frame(&self) -> Pfn {
        self.nodes[self.root as usize].frame
    }
    /// Table pages this address space uses.
    pub fn table_pages(&self) -> u64 {
        self.table_pages
    }

    /// The entry of `node` for `vaddr`, its physical address, and the child
    /// table it points to (if it points to one).
    #[inline]
    pub fn read(&self, node: NodeId, vaddr: VirtAddr) -> (Pte, PhysAddr, Option<NodeId>) {
        let n = &self.nodes[node as usize];
        let idx = table_index(vaddr, n.level);
        let pte = Pte::from_raw(n.entries[idx]);
        let addr = n.frame.addr().add((idx * 8) as u64);
        let child = match &n.child {
            Some(c) if c[idx] != NO_CHILD => Some(c[idx]),
            _ => None,
        };
        (pte, addr, child)
    }

    /// Frame of a node's table page.
    #[inline]
    pub fn node_frame(&self, node: NodeId) -> Pfn {
        self.nodes[node as usize].frame
    }
    #[inline]
    pub fn node_level(&self, node: NodeId) -> u8 {
        self.nodes[node as usize].level
    }

    /// Sets bits (A, D) in a leaf entry, as the walker does.
    #[inline]
    pub fn set_bits(&mut self, slot: LeafSlot, bits: u64) {
        self.nodes[slot.node as usize].entries[slot.index] |= bits;
    }

    /// Clears A and D bits of a leaf (an access-tracking scan).
    pub fn clear_bits(&mut self, slot: LeafSlot, bits: u64) {
        self.nodes[slot.node as usize].entries[slot.index] &= !bits;
    }

    pub fn entry(&self, slot: LeafSlot) -> Pte {
        Pte::from_raw(self.nodes[slot.node as usize].entries[slot.index])
    }

    /// Software walk: the leaf mapping `vaddr`, if present.
    pub fn lookup(&self, vaddr: VirtAddr) -> Option<Mapping> {
        let slot = self.leaf_slot(vaddr)?;
        let pte = self.entry(slot);
        if !pte.present() {
            return None;
        }
        let size = level_size(slot.level);
        Some(Mapping { frame: pte.pfn(), size, pte })
    }

    /// The slot of the entry that maps (or would map, at the deepest
    /// existing level) `vaddr`: the first huge or not-present entry, or the
    /// PTE. `None` only when an upper level is missing.
    pub fn leaf_slot(&self, vaddr: VirtAddr) -> Option<LeafSlot> {
        let mut node = self.root;
        loop {
            let n = &self.nodes[node as usize];
            let index = table_index(vaddr, n.level);
            let pte = Pte::from_raw(n.entries[index]);
            if n.level == 1 || pte.is_huge() {
                return Some(LeafSlot { node, index, level: n.level });
            }
            match n.child.as_ref().map(|c| c[index]) {
                Some(c) if c != NO_CHILD => node = c,
                _ => return if pte.present() { None } else { Some(LeafSlot { node, index, level: n.level }) },
            }
        }
    }

    /// Host-prefetches the leaf entry of `vaddr`, so that a walk for an
    /// access to come finds it in the host cache. Upper levels are few and
    /// stay hot; only the leaf tables are large.
    #[inline]
    pub fn prefetch_leaf(&self, vaddr: VirtAddr) {
        let mut node = self.root;
        loop {
            let n = &self.nodes[node as usize];
            let index = table_index(vaddr, n.level);
            match &n.child {
                Some(c) if c[index] != NO_CHILD => node = c[index],
                _ => {
                    prefetch(&n.entries[index]);
                    return;
                }
            }
        }
    }

    /// Installs a leaf of `size` for the aligned `vaddr`, creating tables on
    /// the way. Mapping over a present entry is a bug in the caller.
    pub fn map(&mut self, vaddr: VirtAddr, frame: Pfn, size: PageSize, writable: bool, mem: &mut PhysMem) -> Result<()> {
        debug_assert!(vaddr.is_aligned(size.bytes()) && frame.is_aligned(size.nr_pages()));
        let node = self.table_for(vaddr, size.leaf_level(), mem)?;
        let n = &mut self.nodes[node as usize];
        let idx = table_index(vaddr, n.level);
        debug_assert!(!Pte::from_raw(n.entries[idx]).present(), "map over a present entry at {vaddr}");
        n.entries[idx] = Pte::leaf(frame, writable, size != PageSize::Size4K).raw();
        n.live += 1;
        Ok(())
    }

    /// Removes the leaf of `size` at aligned `vaddr`; returns the old entry.
    /// A table left empty is freed and unlinked (its frame returned to `mem`).
    pub fn unmap(&mut self, vaddr: VirtAddr, size: PageSize, mem: &mut PhysMem) -> Option<Pte> {
        let slot = self.leaf_slot(vaddr)?;
        if slot.level != size.leaf_level() {
            return None;
        }
        let old = self.entry(slot);
        if !old.present() {
            return None;
        }
        self.clear_entry(slot.node, slot.index);
        self.free_empty_tables(vaddr, mem);
        Some(old)
    }

    /// Replaces a leaf's entry with `pte` (permission changes, migration).
    pub fn replace(&mut self, slot: LeafSlot, pte: Pte) {
        debug_assert!(self.entry(slot).present() && pte.present());
        self.nodes[slot.node as usize].entries[slot.index] = pte.raw();
    }

    /// Splits the huge leaf mapping aligned `vaddr` one level down: a new
    /// table whose entries map the same frames with the same permissions
    /// and A/D bits (Linux's __split_huge_pmd_locked). The frames are not
    /// moved.
    pub fn split_huge(&mut self, vaddr: VirtAddr, mem: &mut PhysMem) -> Result<()> {
        let slot = self.leaf_slot(vaddr).ok_or_else(|| Error::Workload(format!("split of unmapped {vaddr}")))?;
        let old = self.entry(slot);
        debug_assert!(old.present() && old.is_huge() && slot.level >= 2);
        let child_level = slot.level - 1;
        let child = self.alloc_node(child_level, mem)?;
        let step = level_size(child_level).nr_pages();
        let flags = old.raw() & (ACCESSED | DIRTY | super::pte::WRITABLE);
        {
            let c = &mut self.nodes[child as usize];
            for i in 0..PTRS_PER_TABLE {
                let frame = Pfn::new(old.pfn().raw() + i as u64 * step);
                c.entries[i] = Pte::leaf(frame, false, child_level > 1).with(flags).raw();
            }
            c.live = PTRS_PER_TABLE as u16;
        }
        let child_frame = self.nodes[child as usize].frame;
        let parent = &mut self.nodes[slot.node as usize];
        parent.entries[slot.index] = Pte::table(child_frame).raw();
        parent.child.as_mut().expect("non-leaf level has children")[slot.index] = child;
        Ok(())
    }

    /// Collapses the table under the level-`level+1` entry for aligned
    /// `vaddr` into one huge leaf of `frame` (khugepaged's
    /// collapse_huge_page): the table page is freed; the old entries are
    /// returned so the caller can free or reuse their frames.
    pub fn collapse(&mut self, vaddr: VirtAddr, frame: Pfn, size: PageSize, writable: bool, mem: &mut PhysMem) -> Vec<Pte> {
        let level = size.leaf_level();
        let parent = self.table_for_existing(vaddr, level).expect("collapse under a missing table");
        let idx = table_index(vaddr, level);
        let child = self.nodes[parent as usize].child.as_ref().map_or(NO_CHILD, |c| c[idx]);
        let mut old = Vec::new();
        if child != NO_CHILD {
            old.extend(self.nodes[child as usize].entries.iter().map(|&e| Pte::from_raw(e)).filter(|p| p.present()));
            self.release_node(child, mem);
            let p = &mut self.nodes[parent as usize];
            p.child.as_mut().expect("non-leaf")[idx] = NO_CHILD;
            p.entries[idx] = 0;
            p.live -= 1;
        }
        let p = &mut self.nodes[parent as usize];
        debug_assert!(!Pte::from_raw(p.entries[idx]).present());
        p.entries[idx] = Pte::leaf(frame, writable, true).raw();
        p.live += 1;
        old
    }

    /// Every present leaf in [start, end), in address order.
    pub fn leaves_in(&self, start: VirtAddr, end: VirtAddr) -> Vec<(VirtAddr, Mapping)> {
        let mut out = Vec::new();
        self.collect(self.root, VirtAddr::new(0), start.raw(), end.raw(), &mut out);
        out
    }

    fn collect(&self, node: NodeId, base: VirtAddr, start: u64, end: u64, out: &mut Vec<(VirtAddr, Mapping)>) {
        let n = &self.nodes[node as usize];
        let span = level_size_bytes(n.level);
        for i in 0..PTRS_PER_TABLE {
            let lo = base.raw() + i as u64 * span;
            if lo + span <= start || lo >= end {
                continue;
            }
            let pte = Pte::from_raw(n.entries[i]);
            if !pte.present() {
                continue;
            }
            match n.child.as_ref().map(|c| c[i]) {
                Some(c) if c != NO_CHILD => self.collect(c, VirtAddr::new(lo), start, end, out),
                _ => out.push((VirtAddr::new(lo), Mapping { frame: pte.pfn(), size: level_size(n.level), pte })),
            }
        }
    }

    /// The node at `level` on the path to `vaddr`, creating missing tables.
    fn table_for(&mut self, vaddr: VirtAddr, level: u8, mem: &mut PhysMem) -> Result<NodeId> {
        let mut node = self.root;
        while self.nodes[node as usize].level > level {
            let idx = table_index(vaddr, self.nodes[node as usize].level);
            let child = self.nodes[node as usize].child.as_ref().expect("non-leaf")[idx];
            node = if child != NO_CHILD {
                child
            } else {
                debug_assert!(!Pte::from_raw(self.nodes[node as usize].entries[idx]).present(), "huge leaf in the way");
                let new = self.alloc_node(self.nodes[node as usize].level - 1, mem)?;
                let frame = self.nodes[new as usize].frame;
                let n = &mut self.nodes[node as usize];
                n.entries[idx] = Pte::table(frame).raw();
                n.child.as_mut().expect("non-leaf")[idx] = new;
                n.live += 1;
                new
            };
        }
        Ok(node)
    }

    fn table_for_existing(&self, vaddr: VirtAddr, level: u8) -> Option<NodeId> {
        let mut node = self.root;
        while self.nodes[node as usize].level > level {
            let idx = table_index(vaddr, self.nodes[node as usize].level);
            let child = self.nodes[node as usize].child.as_ref()?[idx];
            if child == NO_CHILD {
                return None;
            }
            node = child;
        }
        Some(node)
    }

    fn clear_entry(&mut self, node: NodeId, idx: usize) {
        let n = &mut self.nodes[node as usize];
        debug_assert!(Pte::from_raw(n.entries[idx]).present());
        n.entries[idx] = 0;
        n.live -= 1;
    }

    /// Frees the tables on `vaddr`'s path that became empty (bottom up).
    fn free_empty_tables(&mut self, vaddr: VirtAddr, mem: &mut PhysMem) {
        let mut path = vec![self.root];
        while let Some(&node) = path.last() {
            let n = &self.nodes[node as usize];
            let idx = table_index(vaddr, n.level);
            match n.child.as_ref().map(|c| c[idx]) {
                Some(c) if c != NO_CHILD => path.push(c),
                _ => break,
            }
        }
        while path.len() > 1 {
            let node = path.pop().expect("len > 1");
            if self.nodes[node as usize].live != 0 {
                break;
            }
            let parent = *path.last().expect("len > 1");
            let idx = table_index(vaddr, self.nodes[parent as usize].level);
            self.release_node(node, mem);
            self.nodes[parent as usize].child.as_mut().expect("non-leaf")[idx] = NO_CHILD;
            self.clear_entry(parent, idx);
        }
    }

    fn alloc_node(&mut self, level: u8, mem: &mut PhysMem) -> Result<NodeId> {
        let frame = mem
            .alloc(Order::BASE, Migratetype::Unmovable, FrameOwner::PageTable { asid: self.asid })
            .ok_or_else(|| Error::OutOfMemory("no frame for a page-table page".into()))?;
        let child = (level > 1).then(|| Box::new([NO_CHILD; PTRS_PER_TABLE]));
        let node = Node { entries: Box::new([0; PTRS_PER_TABLE]), child, frame, level, live: 0 };
        self.table_pages += 1;
        Ok(match self.free_nodes.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as NodeId
            }
        })
    }

    fn release_node(&mut self, node: NodeId, mem: &mut PhysMem) {
        let n = &mut self.nodes[node as usize];
        mem.free(n.frame, Order::BASE);
        n.entries.fill(0);
        n.live = 0;
        n.level = RELEASED;
        self.table_pages -= 1;
        self.free_nodes.push(node);
    }

    /// Frees every table page (process exit).
    pub fn destroy(&mut self, mem: &mut PhysMem) {
        for n in self.nodes.iter().filter(|n| n.level != RELEASED) {
            mem.free(n.frame, Order::BASE);
        }
        self.nodes.clear();
        self.free_nodes.clear();
        self.table_pages = 0;
    }
}

/// The page size a leaf at `level` maps.
pub fn level_size(level: u8) -> PageSize {
    match level {
        1 => PageSize::Size4K,
        2 => PageSize::Size2M,
        _ => PageSize::Size1G,
    }
}

fn level_size_bytes(level: u8) -> u64 {
    1u64 << (12 + 9 * (level as u32 - 1))
}

#[inline]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on a bad address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (PhysMem, PageTable) {
        let mut mem = PhysMem::new(1 << 14, 10).unwrap();
        let pt = PageTable::new(1, 4, &mut mem).unwrap();
        (mem, pt)
    }

    #[test]
    fn a_4k_map_builds_three_tables_below_the_root() {
        let (mut mem, mut pt) = setup();
        let va = VirtAddr::new(0x7f00_0000_1000);
        pt.map(va, Pfn::new(0x100), PageSize::Size4K, true, &mut mem).unwrap();
        assert_eq!(pt.table_pages(), 4);
        let m = pt.lookup(va.add(0x123)).unwrap();
        assert_eq!((m.frame, m.size), (Pfn::new(0x100), PageSize::Size4K));
        assert!(pt.lookup(va.add(0x1000)).is_none());
        // Every table page is a frame owned by the page table.
        assert_eq!(mem.owner(pt.root_frame()), FrameOwner::PageTable { asid: 1 });
    }

    #[test]
    fn unmapping_the_last_page_frees_the_tables() {
        let (mut mem, mut pt) = setup();
        let free_before = mem.free_pages();
        let va = VirtAddr::new(0x4000_0000);
        pt.map(va, Pfn::new(0x200), PageSize::Size4K, true, &mut mem).unwrap();
        assert_eq!(mem.free_pages(), free_before - 3);
        assert!(pt.unmap(va, PageSize::Size4K, &mut mem).is_some());
        assert_eq!(pt.table_pages(), 1);
        assert_eq!(mem.free_pages(), free_before);
    }

    #[test]
    fn split_keeps_frames_and_collapse_restores_a_huge_leaf() {
        let (mut mem, mut pt) = setup();
        let va = VirtAddr::new(0x20_0000);
        pt.map(va, Pfn::new(0x400), PageSize::Size2M, true, &mut mem).unwrap();
        assert_eq!(pt.lookup(va.add(5 * 4096)).unwrap().size, PageSize::Size2M);
        pt.split_huge(va, &mut mem).unwrap();
        let m = pt.lookup(va.add(5 * 4096)).unwrap();
        assert_eq!((m.frame, m.size), (Pfn::new(0x405), PageSize::Size4K));
        assert!(m.pte.writable());
        let old = pt.collapse(va, Pfn::new(0x800), PageSize::Size2M, true, &mut mem);
        assert_eq!(old.len(), 512);
        assert_eq!(pt.lookup(va).unwrap().frame, Pfn::new(0x800));
    }

    #[test]
    fn read_gives_the_physical_address_of_each_entry() {
        let (mut mem, mut pt) = setup();
        let va = VirtAddr::new((3u64 << 39) | (5 << 30) | (7 << 21) | (9 << 12));
        pt.map(va, Pfn::new(0x300), PageSize::Size4K, true, &mut mem).unwrap();
        let (pte, addr, child) = pt.read(pt.root(), va);
        assert!(pte.present());
        assert_eq!(addr, pt.root_frame().addr().add(3 * 8));
        let child = child.unwrap();
        assert_eq!(pte.pfn(), pt.node_frame(child));
        let leaves = pt.leaves_in(VirtAddr::new(0), VirtAddr::new(u64::MAX >> 16));
        assert_eq!(leaves.len(), 1);
        assert_eq!(leaves[0].0, va);
    }
}
