//! x86-64 radix page tables whose pages are frames of simulated memory.
//!
//! Every table page is a frame taken from the buddy allocator (owner
//! `PageTable`, migratetype UNMOVABLE as Linux's page-table allocations), so
//! a walk reads real physical addresses: the entry for `vaddr` at level `l`
//! of a table in frame `t` sits at `t * 4096 + index(vaddr, l) * 8`.
//!
//! The contents live in host memory in two slabs of 512-entry tables: one
//! for PTE pages (level 1), which are many, and one for the upper levels,
//! which are few. A table is named by a `NodeId` (its level and its index
//! in the slab of that level). An upper table also keeps, beside its
//! hardware-visible entries, the slab index of each child: a software
//! shortcut equal by construction to following the entry's frame number,
//! so a walk never searches a map. Because PTE pages are one flat array,
//! the host address of the PTE of an access to come is known from the hot
//! upper tables alone, and can be prefetched without touching anything
//! cold.
//! Levels are numbered as Intel does: 1 = PTE (page table), 2 = PMD (page
//! directory), 3 = PUD (PDPT), 4 = PGD (PML4), 5 = PML5.

use super::pte::{Pte, ACCESSED, CONTIGUOUS, DIRTY, LEAF_EXT};
use crate::error::{Error, Result};
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Asid, Order, PageSize, Pfn, PhysAddr, VirtAddr, PTRS_PER_TABLE};

#[path = "contig.rs"]
mod contig;
pub use contig::{ContigCounts, CONTIG_ENTRIES};

const NO_CHILD: u32 = u32::MAX;

/// Words of a leaf extension's record beside a PTE page.
pub const EXT_RECORD_WORDS: usize = 12;
/// What a leaf extension keeps beside a PTE page ([`PageTable::ext_record`]).
pub type ExtRecord = [u64; EXT_RECORD_WORDS];

/// A table: its level and its index in the slab of that level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeId {
    index: u32,
    level: u8,
}

impl NodeId {
    pub fn level(self) -> u8 {
        self.level
    }
    /// The table's index in the slab of its level: with the level, names
    /// the table (the handle the walker keeps in the page-walk caches).
    #[inline]
    pub fn handle(self) -> u32 {
        self.index
    }
}

/// Tables of one kind (PTE pages, or upper levels), 512 entries each.
#[derive(Debug, Default)]
struct Slab {
    entries: Vec<u64>,
    frames: Vec<Pfn>,
    /// Present entries of each table, so an emptied table can be freed.
    live: Vec<u16>,
    /// Slab indexes of freed tables, reused first.
    free: Vec<u32>,
}

impl Slab {
    #[inline]
    fn table(&self, index: u32) -> &[u64] {
        let at = index as usize * PTRS_PER_TABLE;
        &self.entries[at..at + PTRS_PER_TABLE]
    }
    #[inline]
    fn table_mut(&mut self, index: u32) -> &mut [u64] {
        let at = index as usize * PTRS_PER_TABLE;
        &mut self.entries[at..at + PTRS_PER_TABLE]
    }
    fn add(&mut self, frame: Pfn) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.frames[i as usize] = frame;
                self.live[i as usize] = 0;
                self.table_mut(i).fill(0);
                i
            }
            None => {
                crate::hostmem::grow(&mut self.entries, PTRS_PER_TABLE, 0);
                self.frames.push(frame);
                self.live.push(0);
                (self.frames.len() - 1) as u32
            }
        }
    }
}

/// A leaf translation found by a software walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First frame of the page (aligned to its size).
    pub frame: Pfn,
    pub size: PageSize,
    pub pte: Pte,
}

impl Mapping {
    /// The frame of `vaddr`'s 4 KiB page within this page.
    pub fn frame_of(&self, vaddr: VirtAddr) -> Pfn {
        self.frame.add((vaddr.raw() & (self.size.bytes() - 1)) >> 12)
    }
}

/// Where a leaf entry lives: the table, the index in it, the level.
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
    /// PTE pages.
    ptes: Slab,
    /// PMD, PUD, PGD (and PML5) pages.
    upper: Slab,
    /// 512 child indexes per upper table (into `ptes` for a PMD's
    /// children, into `upper` otherwise).
    children: Vec<u32>,
    /// Per PTE page (by slab index) whose PMD entry carries leaf-extension
    /// software bits (`pte::LEAF_EXT`): those bits, so that a walk that
    /// skipped the PMD (a page-walk-cache hit) still knows them. 0 for
    /// other PTE pages; empty until an extension first marks a table.
    ext_bits: Vec<u64>,
    /// For the same PTE pages: a 64-byte line of 8 entries mirroring PTEs
    /// 0, 64, .., 448 (the first of each 64-page slot), what an
    /// extension's walk reads as one hot line instead of the 4 KiB table
    /// (a colored huge page's 8 sub-mapping entries, with the A/D bits
    /// the whole page shares). Not present for other PTE pages. Kept equal
    /// to the PTEs it mirrors here only: by `set_leaf_ext`, `replace` and
    /// `release_node`.
    ext_line: Vec<[Pte; 8]>,
    /// For the same PTE pages: the words an extension keeps beside the
    /// table for its modified hardware (a perforated page's 2 MiB frame,
    /// filter, shadow entry and hole bitmap: `systems::perforated`). All
    /// zero for other tables; empty until an extension first writes one.
    ext_record: Vec<ExtRecord>,
    root: NodeId,
    table_pages: u64,
    /// Its contiguous ranges (Arm's contiguous bit: `contig.rs`).
    contig: ContigCounts,
}

/// Index of `vaddr`'s entry in a table of `level`.
#[inline(always)]
pub fn table_index(vaddr: VirtAddr, level: u8) -> usize {
    ((vaddr.raw() >> (12 + 9 * (level as u32 - 1))) & 511) as usize
}

impl PageTable {
    pub fn new(asid: Asid, levels: u8, mem: &mut PhysMem) -> Result<Self> {
        debug_assert!((3..=5).contains(&levels), "3 (a small guest's EPT), 4 or 5 levels");
        let mut pt = PageTable {
            asid,
            levels,
            ptes: Slab::default(),
            upper: Slab::default(),
            children: Vec::new(),
            ext_bits: Vec::new(),
            ext_line: Vec::new(),
            ext_record: Vec::new(),
            root: NodeId { index: 0, level: levels },
            table_pages: 0,
            contig: ContigCounts::default(),
        };
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
        self.node_frame(self.root)
    }
    /// Table pages this address space uses.
    pub fn table_pages(&self) -> u64 {
        self.table_pages
    }

    #[inline(always)]
    fn slab(&self, level: u8) -> &Slab {
        if level == 1 {
            &self.ptes
        } else {
            &self.upper
        }
    }
    #[inline(always)]
    fn slab_mut(&mut self, level: u8) -> &mut Slab {
        if level == 1 {
            &mut self.ptes
        } else {
            &mut self.upper
        }
    }
    #[inline(always)]
    fn raw_entry(&self, node: NodeId, idx: usize) -> u64 {
        self.slab(node.level).entries[node.index as usize * PTRS_PER_TABLE + idx]
    }
    #[inline(always)]
    fn raw_entry_mut(&mut self, node: NodeId, idx: usize) -> &mut u64 {
        &mut self.slab_mut(node.level).entries[node.index as usize * PTRS_PER_TABLE + idx]
    }
    #[inline]
    fn live_mut(&mut self, node: NodeId) -> &mut u16 {
        &mut self.slab_mut(node.level).live[node.index as usize]
    }
    /// The child table of entry `idx` of an upper table, if it has one.
    #[inline(always)]
    fn child(&self, node: NodeId, idx: usize) -> Option<NodeId> {
        if node.level == 1 {
            return None;
        }
        let c = self.children[node.index as usize * PTRS_PER_TABLE + idx];
        (c != NO_CHILD).then_some(NodeId { index: c, level: node.level - 1 })
    }
    fn set_child(&mut self, node: NodeId, idx: usize, child: u32) {
        self.children[node.index as usize * PTRS_PER_TABLE + idx] = child;
    }

    /// The walker's read in a table above the leaves (level >= 2): the
    /// entry for `vaddr`, its physical address, and the child table it
    /// points to (if it points to one). No branch on the level for the
    /// slab.
    #[inline(always)]
    pub fn read_upper(&self, node: NodeId, vaddr: VirtAddr) -> (Pte, PhysAddr, Option<NodeId>) {
        debug_assert!(node.level >= 2);
        let idx = table_index(vaddr, node.level);
        let at = node.index as usize * PTRS_PER_TABLE + idx;
        let pte = Pte::from_raw(self.upper.entries[at]);
        let addr = self.upper.frames[node.index as usize].addr().add((idx * 8) as u64);
        let c = self.children[at];
        (pte, addr, (c != NO_CHILD).then_some(NodeId { index: c, level: node.level - 1 }))
    }

    /// The walker's last step in PTE page `node`: reads `vaddr`'s entry
    /// and, if it is present, sets `bits` (A, D) in it. Returns the entry
    /// as read (before the bits) and its physical address.
    #[inline(always)]
    pub fn read_leaf_and_set(&mut self, node: NodeId, vaddr: VirtAddr, bits: u64) -> (Pte, PhysAddr) {
        debug_assert_eq!(node.level, 1);
        let idx = table_index(vaddr, 1);
        let addr = self.ptes.frames[node.index as usize].addr().add((idx * 8) as u64);
        let entry = &mut self.ptes.entries[node.index as usize * PTRS_PER_TABLE + idx];
        let pte = Pte::from_raw(*entry);
        if pte.present() {
            *entry |= bits;
        }
        (pte, addr)
    }

    /// The table of `level` whose [`NodeId::handle`] is `handle`. It must
    /// be live: the caller got the handle from a table it has not freed
    /// since (a page-walk-cache entry is invalidated with its table).
    #[inline(always)]
    pub fn node_from_handle(&self, level: u8, handle: u32) -> NodeId {
        debug_assert!((1..=self.levels).contains(&level) && (handle as usize) < self.slab(level).frames.len());
        NodeId { index: handle, level }
    }

    /// The leaf-extension bits of the PMD entry pointing at `table` (0 for
    /// an upper table or a table without them).
    #[inline]
    pub fn table_leaf_ext(&self, table: NodeId) -> u64 {
        if table.level != 1 {
            return 0;
        }
        self.ext_bits.get(table.index as usize).copied().unwrap_or(0)
    }

    /// Frame of a table page.
    #[inline(always)]
    pub fn node_frame(&self, node: NodeId) -> Pfn {
        self.slab(node.level).frames[node.index as usize]
    }
    #[inline]
    pub fn node_level(&self, node: NodeId) -> u8 {
        node.level
    }

    /// Sets bits (A, D) in a leaf entry, as the walker does.
    #[inline(always)]
    pub fn set_bits(&mut self, slot: LeafSlot, bits: u64) {
        *self.raw_entry_mut(slot.node, slot.index) |= bits;
    }

    /// Clears bits of a leaf (an access-tracking scan clears A and D).
    pub fn clear_bits(&mut self, slot: LeafSlot, bits: u64) {
        *self.raw_entry_mut(slot.node, slot.index) &= !bits;
    }

    pub fn entry(&self, slot: LeafSlot) -> Pte {
        Pte::from_raw(self.raw_entry(slot.node, slot.index))
    }

    /// Software walk: the leaf mapping `vaddr`, if present.
    pub fn lookup(&self, vaddr: VirtAddr) -> Option<Mapping> {
        let slot = self.leaf_slot(vaddr)?;
        let pte = self.entry(slot);
        if !pte.present() {
            return None;
        }
        Some(Mapping { frame: pte.pfn(), size: level_size(slot.level), pte })
    }

    /// The slot of the entry that maps (or would map, at the deepest
    /// existing level) `vaddr`: the first huge or not-present entry, or the
    /// PTE. `None` only when a present entry has no table (never, by
    /// construction).
    pub fn leaf_slot(&self, vaddr: VirtAddr) -> Option<LeafSlot> {
        let mut node = self.root;
        loop {
            let index = table_index(vaddr, node.level);
            let pte = Pte::from_raw(self.raw_entry(node, index));
            if node.level == 1 || pte.is_huge() || !pte.present() {
                return Some(LeafSlot { node, index, level: node.level });
            }
            node = self.child(node, index)?;
        }
    }

    /// Entry `idx` of a table and its physical address.
    #[inline]
    pub fn entry_at(&self, node: NodeId, idx: usize) -> (Pte, PhysAddr) {
        let addr = self.node_frame(node).addr().add((idx * 8) as u64);
        (Pte::from_raw(self.raw_entry(node, idx)), addr)
    }

    /// The PMD entry on `vaddr`'s path, if the path reaches level 2.
    fn pmd_of(&self, vaddr: VirtAddr) -> Option<(NodeId, usize)> {
        Some((self.table_for_existing(vaddr, 2)?, table_index(vaddr, 2)))
    }

    /// The leaf-extension bits of `vaddr`'s PMD entry (0 when it is a
    /// leaf, not present, or the path does not reach level 2).
    pub fn leaf_ext(&self, vaddr: VirtAddr) -> u64 {
        self.pmd_of(vaddr).map_or(0, |(node, idx)| Pte::from_raw(self.raw_entry(node, idx)).leaf_ext())
    }

    /// Sets or clears leaf-extension bit `bit` (one of `pte::LEAF_EXT`) of
    /// `vaddr`'s PMD entry, which must point at a page table (an extension
    /// sets it once the table holds what its walk expects), and keeps the
    /// table's bits and line: a table has a line exactly while its PMD
    /// carries some leaf-extension bit.
    pub fn set_leaf_ext(&mut self, vaddr: VirtAddr, bit: u64, on: bool) {
        debug_assert!(bit != 0 && bit & !LEAF_EXT == 0, "{bit:#x} is not a leaf-extension bit");
        let (node, idx) = self.pmd_of(vaddr).expect("a leaf extension needs a PMD");
        let e = self.raw_entry_mut(node, idx);
        debug_assert!(
            Pte::from_raw(*e).present() && !Pte::from_raw(*e).is_huge(),
            "leaf-extension bit on a PMD without a table"
        );
        if on {
            *e |= bit;
        } else {
            *e &= !bit;
        }
        let bits = *e & LEAF_EXT;
        let table = self.child(node, idx).expect("a present PMD entry has a table");
        let line = if bits != 0 { std::array::from_fn(|s| self.entry_at(table, s * 64).0) } else { [Pte::NONE; 8] };
        let at = table.index as usize;
        if self.ext_line.len() <= at {
            self.ext_line.resize(at + 1, [Pte::NONE; 8]);
            self.ext_bits.resize(at + 1, 0);
        }
        self.ext_line[at] = line;
        self.ext_bits[at] = bits;
    }

    /// The record a leaf extension keeps beside PTE page `table` (zeros
    /// when it keeps none).
    #[inline]
    pub fn ext_record(&self, table: NodeId) -> ExtRecord {
        debug_assert_eq!(table.level, 1);
        self.ext_record.get(table.index as usize).copied().unwrap_or([0; EXT_RECORD_WORDS])
    }

    /// The record beside the PTE page of `vaddr`'s 2 MiB region, to write
    /// (the region's PMD entry must point at a page table). Freed with the
    /// table.
    pub fn ext_record_mut(&mut self, vaddr: VirtAddr) -> &mut ExtRecord {
        let (node, idx) = self.pmd_of(vaddr).expect("a leaf extension needs a PMD");
        let table = self.child(node, idx).expect("a leaf extension's PMD entry points at a table");
        let at = table.index as usize;
        if self.ext_record.len() <= at {
            self.ext_record.resize(at + 1, [0; EXT_RECORD_WORDS]);
        }
        &mut self.ext_record[at]
    }

    /// The PTE page of `vaddr`'s 2 MiB region and the physical address of
    /// its PMD entry, if the region's PMD entry points at a table.
    pub fn pmd_table_of(&self, vaddr: VirtAddr) -> Option<(NodeId, PhysAddr)> {
        let (node, idx) = self.pmd_of(vaddr)?;
        let table = self.child(node, idx)?;
        Some((table, self.entry_at(node, idx).1))
    }

    /// The line entry mirroring a PTE, if that PTE heads a 64-page slot of
    /// a table with a line.
    fn ext_line_entry(&mut self, node: NodeId, index: usize) -> Option<&mut Pte> {
        if node.level != 1 || !index.is_multiple_of(64) {
            return None;
        }
        let line = self.ext_line.get_mut(node.index as usize)?;
        line[0].present().then(|| &mut line[index / 64])
    }

    /// The line of PTE page `table` (whose PMD entry must carry a
    /// leaf-extension bit): what the extension's walk reads in one
    /// reference and where it sets bits the line's entries share.
    #[inline]
    pub fn ext_line(&mut self, table: NodeId) -> &mut [Pte; 8] {
        debug_assert_eq!(table.level, 1);
        debug_assert!(
            (0..8).all(|s| {
                let (pte, line) = (self.entry_at(table, s * 64).0, self.ext_line[table.index as usize][s]);
                pte.pfn() == line.pfn() && pte.writable() == line.writable()
            }),
            "stale leaf-extension line"
        );
        &mut self.ext_line[table.index as usize]
    }

    /// Host-prefetches the leaf entry of `vaddr`, so that a walk for an
    /// access to come finds it in the host cache. Only the upper tables
    /// are read, and they are few and hot. Where leaf extensions exist,
    /// the table's line is fetched too (it is what their walk reads; a
    /// stale line costs one useless prefetch).
    #[inline]
    pub fn prefetch_leaf(&self, vaddr: VirtAddr) {
        // The descent through the child indexes alone, by the VA bits of
        // each upper level (the general `child` also checks levels).
        let mut index = self.root.index as usize;
        let mut shift = 12 + 9 * (self.levels as u32 - 1);
        while shift > 12 {
            let child = self.children[index * PTRS_PER_TABLE + ((vaddr.raw() >> shift) & 511) as usize];
            if child == NO_CHILD {
                return;
            }
            index = child as usize;
            shift -= 9;
        }
        if let Some(line) = self.ext_line.get(index) {
            prefetch(line);
        }
        let at = index * PTRS_PER_TABLE + table_index(vaddr, 1);
        if let Some(e) = self.ptes.entries.get(at) {
            prefetch(e);
        }
    }

    /// Installs a leaf of `size` for the aligned `vaddr`, creating tables on
    /// the way. Mapping over a present entry is a bug in the caller.
    pub fn map(
        &mut self,
        vaddr: VirtAddr,
        frame: Pfn,
        size: PageSize,
        writable: bool,
        mem: &mut PhysMem,
    ) -> Result<()> {
        debug_assert!(vaddr.is_aligned(size.bytes()) && frame.is_aligned(size.nr_pages()));
        let node = self.table_for(vaddr, size.leaf_level(), mem)?;
        let idx = table_index(vaddr, node.level);
        debug_assert!(!Pte::from_raw(self.raw_entry(node, idx)).present(), "map over a present entry at {vaddr}");
        *self.raw_entry_mut(node, idx) = Pte::leaf(frame, writable, size != PageSize::Size4K).raw();
        *self.live_mut(node) += 1;
        Ok(())
    }

    /// Removes the leaf of `size` at aligned `vaddr`; returns the old entry.
    /// A table left empty is freed and unlinked (its frame returned to `mem`).
    pub fn unmap(&mut self, vaddr: VirtAddr, size: PageSize, mem: &mut PhysMem) -> Option<Pte> {
        let slot = self.leaf_slot(vaddr)?;
        let old = self.entry(slot);
        if slot.level != size.leaf_level() || !old.present() {
            return None;
        }
        self.clear_entry(slot.node, slot.index);
        self.free_empty_tables(vaddr, mem);
        Some(old)
    }

    /// Replaces a leaf's entry with `pte` (permission changes, migration).
    /// A contiguous range it belongs to is broken first, and `pte`'s
    /// contiguous bit (copied from the old entry by a caller) dropped.
    pub fn replace(&mut self, slot: LeafSlot, pte: Pte) {
        debug_assert!(self.entry(slot).present() && pte.present());
        self.break_contiguous(slot.node, slot.index);
        let pte = pte.without(CONTIGUOUS);
        *self.raw_entry_mut(slot.node, slot.index) = pte.raw();
        if let Some(e) = self.ext_line_entry(slot.node, slot.index) {
            // Frame and permission from the PTE; A/D stay the page's shared ones.
            let shared = e.raw() & (ACCESSED | DIRTY);
            *e = Pte::from_raw(pte.raw() & !(ACCESSED | DIRTY) | shared);
        }
    }

    /// Splits the huge leaf mapping aligned `vaddr` one level down: a new
    /// table whose entries map the same frames with the same permissions
    /// and A/D bits (Linux's __split_huge_pmd_locked). The frames are not
    /// moved.
    pub fn split_huge(&mut self, vaddr: VirtAddr, mem: &mut PhysMem) -> Result<()> {
        let slot = self.leaf_slot(vaddr).ok_or_else(|| Error::Workload(format!("split of unmapped {vaddr}")))?;
        self.break_contiguous(slot.node, slot.index);
        let old = self.entry(slot);
        debug_assert!(old.present() && old.is_huge() && slot.level >= 2);
        let child_level = slot.level - 1;
        let child = self.alloc_node(child_level, mem)?;
        let step = level_size(child_level).nr_pages();
        let flags = old.raw() & (ACCESSED | DIRTY | super::pte::WRITABLE);
        for (i, e) in self.slab_mut(child_level).table_mut(child.index).iter_mut().enumerate() {
            let frame = Pfn::new(old.pfn().raw() + i as u64 * step);
            *e = Pte::leaf(frame, false, child_level > 1).with(flags).raw();
        }
        *self.live_mut(child) = PTRS_PER_TABLE as u16;
        *self.raw_entry_mut(slot.node, slot.index) = Pte::table(self.node_frame(child)).raw();
        self.set_child(slot.node, slot.index, child.index);
        Ok(())
    }

    /// Collapses the table under the entry of level `size.leaf_level()` for
    /// aligned `vaddr` into one huge leaf of `frame` (khugepaged's
    /// collapse_huge_page): the table page is freed; the old entries are
    /// returned so the caller can free or reuse their frames.
    pub fn collapse(
        &mut self,
        vaddr: VirtAddr,
        frame: Pfn,
        size: PageSize,
        writable: bool,
        mem: &mut PhysMem,
    ) -> Vec<Pte> {
        let level = size.leaf_level();
        let parent = self.table_for_existing(vaddr, level).expect("collapse under a missing table");
        let idx = table_index(vaddr, level);
        let mut old = Vec::new();
        if let Some(child) = self.child(parent, idx) {
            let table = self.slab(child.level).table(child.index);
            old.extend(table.iter().map(|&e| Pte::from_raw(e)).filter(|p| p.present()));
            self.forget_contiguous(child);
            self.release_node(child, mem);
            self.set_child(parent, idx, NO_CHILD);
            self.clear_entry(parent, idx);
        }
        debug_assert!(!Pte::from_raw(self.raw_entry(parent, idx)).present());
        *self.raw_entry_mut(parent, idx) = Pte::leaf(frame, writable, true).raw();
        *self.live_mut(parent) += 1;
        old
    }

    /// Every present leaf in [start, end), in address order.
    pub fn leaves_in(&self, start: VirtAddr, end: VirtAddr) -> Vec<(VirtAddr, Mapping)> {
        let mut out = Vec::new();
        self.collect(self.root, 0, start.raw(), end.raw(), &mut out);
        out
    }

    fn collect(&self, node: NodeId, base: u64, start: u64, end: u64, out: &mut Vec<(VirtAddr, Mapping)>) {
        let span = level_size_bytes(node.level);
        for i in 0..PTRS_PER_TABLE {
            let lo = base + i as u64 * span;
            if lo + span <= start || lo >= end {
                continue;
            }
            let pte = Pte::from_raw(self.raw_entry(node, i));
            if !pte.present() {
                continue;
            }
            match self.child(node, i) {
                Some(c) => self.collect(c, lo, start, end, out),
                None => out.push((VirtAddr::new(lo), Mapping { frame: pte.pfn(), size: level_size(node.level), pte })),
            }
        }
    }

    /// The table at `level` on the path to `vaddr`, creating missing tables.
    fn table_for(&mut self, vaddr: VirtAddr, level: u8, mem: &mut PhysMem) -> Result<NodeId> {
        let mut node = self.root;
        while node.level > level {
            let idx = table_index(vaddr, node.level);
            node = match self.child(node, idx) {
                Some(c) => c,
                None => {
                    debug_assert!(!Pte::from_raw(self.raw_entry(node, idx)).present(), "huge leaf in the way");
                    let new = self.alloc_node(node.level - 1, mem)?;
                    *self.raw_entry_mut(node, idx) = Pte::table(self.node_frame(new)).raw();
                    self.set_child(node, idx, new.index);
                    *self.live_mut(node) += 1;
                    new
                }
            };
        }
        Ok(node)
    }

    fn table_for_existing(&self, vaddr: VirtAddr, level: u8) -> Option<NodeId> {
        let mut node = self.root;
        while node.level > level {
            node = self.child(node, table_index(vaddr, node.level))?;
        }
        Some(node)
    }

    fn clear_entry(&mut self, node: NodeId, idx: usize) {
        debug_assert!(Pte::from_raw(self.raw_entry(node, idx)).present());
        self.break_contiguous(node, idx);
        *self.raw_entry_mut(node, idx) = 0;
        *self.live_mut(node) -= 1;
    }

    /// Frees the tables on `vaddr`'s path that became empty (bottom up).
    fn free_empty_tables(&mut self, vaddr: VirtAddr, mem: &mut PhysMem) {
        let mut path = vec![self.root];
        while let Some(&node) = path.last() {
            match self.child(node, table_index(vaddr, node.level)) {
                Some(c) => path.push(c),
                None => break,
            }
        }
        while path.len() > 1 {
            let node = path.pop().expect("len > 1");
            if self.slab(node.level).live[node.index as usize] != 0 {
                break;
            }
            let parent = *path.last().expect("len > 1");
            let idx = table_index(vaddr, parent.level);
            self.release_node(node, mem);
            self.set_child(parent, idx, NO_CHILD);
            self.clear_entry(parent, idx);
        }
    }

    fn alloc_node(&mut self, level: u8, mem: &mut PhysMem) -> Result<NodeId> {
        let frame = mem
            .alloc(Order::BASE, Migratetype::Unmovable, FrameOwner::PageTable { asid: self.asid })
            .ok_or_else(|| Error::OutOfMemory("no frame for a page-table page".into()))?;
        let index = self.slab_mut(level).add(frame);
        if level > 1 {
            let at = index as usize * PTRS_PER_TABLE;
            if self.children.len() < at + PTRS_PER_TABLE {
                self.children.resize(at + PTRS_PER_TABLE, NO_CHILD);
            }
            self.children[at..at + PTRS_PER_TABLE].fill(NO_CHILD);
        }
        self.table_pages += 1;
        Ok(NodeId { index, level })
    }

    fn release_node(&mut self, node: NodeId, mem: &mut PhysMem) {
        if let Some(line) = self.ext_line.get_mut(node.index as usize).filter(|_| node.level == 1) {
            *line = [Pte::NONE; 8];
            self.ext_bits[node.index as usize] = 0;
        }
        if let Some(record) = self.ext_record.get_mut(node.index as usize).filter(|_| node.level == 1) {
            *record = [0; EXT_RECORD_WORDS];
        }
        let slab = self.slab_mut(node.level);
        mem.free(slab.frames[node.index as usize], Order::BASE);
        slab.free.push(node.index);
        self.table_pages -= 1;
    }

    /// Frees every table page (process exit).
    pub fn destroy(&mut self, mem: &mut PhysMem) {
        for slab in [&mut self.ptes, &mut self.upper] {
            let mut freed = vec![false; slab.frames.len()];
            for &i in &slab.free {
                freed[i as usize] = true;
            }
            for (i, &frame) in slab.frames.iter().enumerate() {
                if !freed[i] {
                    mem.free(frame, Order::BASE);
                }
            }
            *slab = Slab::default();
        }
        self.children.clear();
        self.table_pages = 0;
        self.contig = ContigCounts::default();
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
    fn the_walkers_reads_give_the_physical_address_of_each_entry() {
        let (mut mem, mut pt) = setup();
        let va = VirtAddr::new((3u64 << 39) | (5 << 30) | (7 << 21) | (9 << 12));
        pt.map(va, Pfn::new(0x300), PageSize::Size4K, true, &mut mem).unwrap();
        // Down the upper levels: entry 3, 5, 7 of each table.
        let mut node = pt.root();
        for index in [3, 5, 7] {
            let (pte, addr, child) = pt.read_upper(node, va);
            assert!(pte.present());
            assert_eq!(addr, pt.node_frame(node).addr().add(index * 8));
            let child = child.unwrap();
            assert_eq!(pte.pfn(), pt.node_frame(child));
            node = child;
        }
        // The PTE: entry 9, read before the bits, which are then set.
        let (pte, addr) = pt.read_leaf_and_set(node, va, ACCESSED);
        assert_eq!((pte.pfn(), pte.accessed()), (Pfn::new(0x300), false));
        assert_eq!(addr, pt.node_frame(node).addr().add(9 * 8));
        assert!(pt.lookup(va).unwrap().pte.accessed());
        let leaves = pt.leaves_in(VirtAddr::new(0), VirtAddr::new(u64::MAX >> 16));
        assert_eq!(leaves.len(), 1);
        assert_eq!(leaves[0].0, va);
    }
}
