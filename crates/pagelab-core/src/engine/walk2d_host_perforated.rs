//! Perforated pages in the host: a perforated EPT leaf (issue 13's
//! virtualization, the paper's V and Figure 6 seen from the host's side).
//! Cold code: reached from the EPT walk at a PMD entry that carries the
//! perforated bit, and from the 2D walk's guest huge leaf only when the
//! host's chain holds `perforated` (`Hypervisor::host_perforated`).
//!
//! - **The EPT walk** ending at a perforated EPT leaf gets the host's 2 MiB
//!   frame and filter from that PMD entry. Where the filter does not
//!   answer it reads the host's bitmap (one reference, at its host address
//!   directly: the host's bitmap region is host memory), and a host hole
//!   takes the host's hole walk: the shadow PMD entry and the hole's PTE,
//!   two EPT references. The EPT walk's result is a 4 KiB translation (the
//!   nested TLB holds it as such), so a guest 4 KiB page over a host
//!   perforated leaf splinters to 4 KiB entries. The EPT's
//!   paging-structure caches do not keep the perforated PMD entry (its
//!   filter must be read at each walk). A non-hole's accessed and dirty
//!   bits are kept in its PTE of the hole table, where the host's software
//!   (EPT A/D scans, `backing_of`) looks.
//! - **The combined entry.** A guest huge or perforated page over a host
//!   perforated leaf makes one combined perforated entry: the host's 2 MiB
//!   frame, the guest's filter ORed with the host's, and (at the bitmap
//!   step, `walk2d_perforated.rs`) the guest's bitmap ORed with the
//!   host's: both lines are read when the L2 lacks the entry. A sub-page
//!   that is a hole only in the host: the walker translates as usual (the
//!   guest's walk, then the EPT's, which takes the host's hole walk) and
//!   caches the hole's 4 KiB entry; a hole in both: the guest's hole walk,
//!   whose data frame goes through the EPT and so through the host's hole
//!   walk.
//! - **The nested TLB** holds 4 KiB translations of a perforated EPT leaf;
//!   whether a guest huge page's data frame came from one the walker learns
//!   from the host's table (no reference), as a nested-TLB entry marked
//!   perforated would tell it.
//! - **Shootdowns.** A host punch or patch (the host kernel's
//!   `perforated::punch`/`patch`, KSM's punch) shoots down the sub-page of
//!   the VM's process, which the hypervisor turns into an INVEPT: every
//!   combined entry of the VM (perforated, bitmap and hole entries
//!   included), and the nested TLB and EPT caches over that guest frame.

use super::super::{push_ept, Ept, EptMiss, Walk2d};
use crate::hw::nested_tlb::NestedHit;
use crate::hw::refs::RefKind;
use crate::hw::tlb::{EntryKind, ReachSize, TlbEntry};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::NodeId;
use crate::systems::perforated::config::Variant;
use crate::systems::perforated::holes::is_hole;
use crate::systems::perforated::pagetable::{perforation, perforation_at, Perforation};
use crate::systems::perforated::tlb::{PerforatedKind, PerforatedPage};
use crate::systems::perforated::translate::{chunk_addr, page_index};
use crate::systems::ExtKind;
use crate::units::{Asid, Gfn, PageSize, VirtAddr};
use crate::virt::Hypervisor;

/// The EPT walk's step at a perforated PMD entry whose hole table is
/// `table`: the filter, maybe the host's bitmap, maybe the host's hole
/// walk; a 4 KiB translation of `gfn` (the leaf's frame: `gfn`'s is
/// this frame plus nothing), or the violation of an unbacked hole.
#[cold]
#[inline(never)]
pub(in crate::engine::walk2d) fn ept_leaf(
    ept: &mut Ept,
    gfn: Gfn,
    table: NodeId,
    write: bool,
) -> std::result::Result<NestedHit, EptMiss> {
    let va = gfn.addr().as_host_virt();
    let pt = ept.hv.host.page_table_mut(ept.nested.host_asid);
    let p = perforation(pt, table);
    let hole = !filter_of(&p).filtered(va.raw() & ((2 << 20) - 1)) && {
        ept.refs.push(chunk_addr(p.bitmap_line, va), RefKind::Walk);
        ept.stats.walk_mem_refs += 1;
        is_hole(&p.holes, page_index(va))
    };
    let bits = if write { ACCESSED | DIRTY } else { ACCESSED };
    if hole {
        push_ept(ept.refs, ept.stats, p.shadow);
    }
    let (pte, at) = pt.read_leaf_and_set(table, va, bits);
    if hole {
        push_ept(ept.refs, ept.stats, at);
    }
    if !pte.present() {
        return Err(EptMiss::Violation(gfn));
    }
    // (The caller fills the nested TLB with this 4 KiB translation.)
    Ok((pte.pfn(), PageSize::Size4K, pte.writable(), write || pte.dirty()))
}

/// The perforated page's main-entry view: its frame and the filter the
/// hardware uses (all bits set without a filter).
fn filter_of(p: &Perforation) -> PerforatedPage {
    let filter = if Variant::from_code(p.variant as u64).has_filter() { p.filter } else { 0xff };
    PerforatedPage { frame: p.frame, filter }
}

/// The host's perforated page under guest frame `gfn` of VM `vm`, if its
/// EPT leaf is one (read from the host's table: no reference).
pub(super) fn host_perforation(hv: &Hypervisor, vm: usize, gfn: Gfn) -> Option<Perforation> {
    if !hv.host_perforated {
        return None;
    }
    perforation_at(hv.ept(vm), gfn.addr().as_host_virt())
}

/// A guest huge page (or a guest perforated page, whose filter is
/// `guest_filter`) over a host perforated leaf at `data_gfn`: the combined
/// perforated entry (`perms`: its permission and dirtiness), or `None`
/// when the EPT leaf is no perforated page or the accessed sub-page is a
/// hole in the host (the walk's 4 KiB translation, the hole's, stands).
pub(in crate::engine::walk2d) fn combined(
    ept: &mut Ept,
    tag: Asid,
    vaddr: VirtAddr,
    data_gfn: Gfn,
    perms: (bool, bool),
    guest_filter: u8,
) -> Option<Walk2d> {
    let host = host_perforation(ept.hv, ept.nested.vm, data_gfn)?;
    if is_hole(&host.holes, page_index(vaddr)) {
        return None;
    }
    let main = filter_of(&host);
    let page = PerforatedPage { frame: main.frame, filter: main.filter | guest_filter };
    Some(Walk2d::Perforated(TlbEntry {
        asid: tag,
        vbase: vaddr.align_down(PageSize::Size2M.bytes()).vpn(),
        size: ReachSize::Size2M,
        writable: perms.0,
        dirty: perms.1,
        kind: EntryKind::Ext(ExtKind::Perforated(PerforatedKind::Page(page))),
    }))
}

#[cfg(test)]
#[path = "walk2d_host_perforated_tests.rs"]
mod tests;
