//! GTSM's walk step at a GTSM PMD entry (the walker comes here through
//! `pte::LEAF_EXT`): one reference, the descriptor at the start of the
//! table the entry points to, which gives the chunk and the vector of used
//! sub-blocks. The upper levels and the PMD entry are the walker's, so the
//! page-walk caches serve GTSM as any walk (the paper gives GTSM 32-entry
//! L2 and L3 walk caches: `machine.pwc`, set by the experiment).
//!
//! Layer: paging (uses `hw`, `paging` and `units`).

use super::pagetable::gtsm_record;
use super::tlb::GtsmPage;
use crate::hw::core_stats::CoreStats;
use crate::hw::refs::{RefBuf, RefKind};
use crate::hw::tlb::{EntryKind, ReachSize, TlbEntry};
use crate::paging::{NodeId, PageTable};
use crate::units::{Asid, PageSize, VirtAddr};

/// The walk's last step: reads the descriptor and returns the page's entry
/// to cache. The entry is dirty: the kernel installs a GTSM page's PTEs
/// dirty, as it does a huge PMD, so no store needs a dirty assist.
pub fn walk(
    pt: &PageTable,
    table: NodeId,
    asid: Asid,
    vaddr: VirtAddr,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> TlbEntry<GtsmPage> {
    refs.push(pt.node_frame(table).addr(), RefKind::Walk);
    stats.walk_mem_refs += 1;
    stats.leaf_ext_walks += 1;
    let g = gtsm_record(pt, table);
    TlbEntry {
        asid,
        vbase: vaddr.align_down(PageSize::Size2M.bytes()).vpn(),
        size: ReachSize::Size2M,
        writable: g.writable,
        dirty: true,
        kind: EntryKind::Ext(GtsmPage::new(g.chunk, g.used)),
    }
}
