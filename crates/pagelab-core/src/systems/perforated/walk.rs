//! Perforated pages' walk steps: the step at a perforated PMD entry (the
//! walker comes here through `pte::LEAF_EXT` and [`super::leaf`]), and
//! the hole walk through
//! the shadow PMD entry (Figure 5, last row).
//!
//! Layer: paging (uses `hw`, `paging` and `units`).

use super::config::Variant;
use super::pagetable::{perforation, Perforation};
use super::tlb::{HolePage, PerforatedKind, PerforatedPage};
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{EntryKind, ReachSize, TlbEntry};
use crate::paging::leaf_ext::Access;
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::{NodeId, PageTable};
use crate::units::{Asid, PageSize, VirtAddr};

/// The walk's last step at a perforated PMD entry: the walker's read of
/// that entry gave the 2 MiB frame and the filter, so nothing more is
/// read. Returns the perforated page's entry to cache. Hardware without
/// the filter (`naive`, `on-demand`) treats every region as holed.
/// The entry is dirty: the kernel installs a perforated page's PTEs dirty,
/// as it does a huge PMD (pmd_mkdirty), so stores need no dirty assist.
pub fn walk(pt: &PageTable, table: NodeId, asid: Asid, vaddr: VirtAddr) -> TlbEntry<PerforatedKind> {
    let p = perforation(pt, table);
    let page = main_entry(&p);
    TlbEntry {
        asid,
        vbase: vaddr.align_down(PageSize::Size2M.bytes()).vpn(),
        size: ReachSize::Size2M,
        writable: p.writable,
        dirty: true,
        kind: EntryKind::Ext(PerforatedKind::Page(page)),
    }
}

/// The perforated page's main-entry view: its frame and the filter the
/// hardware uses (all bits set without a filter).
pub fn main_entry(p: &Perforation) -> PerforatedPage {
    let filter = if Variant::from_code(p.variant as u64).has_filter() { p.filter } else { 0xff };
    PerforatedPage { frame: p.frame, filter }
}

/// A hole's walk: the shadow PMD entry, then the hole's PTE in `table`
/// (two references), setting A (and D on a store) in the PTE. Returns the
/// hole's 4 KiB entry, or `None` when the hole is not backed (a fault).
pub fn hole_walk(
    pt: &mut PageTable,
    table: NodeId,
    p: &Perforation,
    asid: Asid,
    access: Access,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> Option<TlbEntry<PerforatedKind>> {
    let Access { vaddr, write, .. } = access;
    refs.push(p.shadow, RefKind::Walk);
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    let (pte, addr) = pt.read_leaf_and_set(table, vaddr, bits);
    refs.push(addr, RefKind::Walk);
    stats.walk_mem_refs += 2;
    if !pte.present() {
        return None;
    }
    Some(TlbEntry {
        asid,
        vbase: vaddr.vpn(),
        size: ReachSize::Size4K,
        writable: pte.writable(),
        dirty: write || pte.dirty(),
        kind: EntryKind::Ext(PerforatedKind::Hole(HolePage { pfn: pte.pfn() })),
    })
}
