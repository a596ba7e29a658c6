//! GTSM's walk step at a GTSM PMD entry (the walker comes here through
//! `pte::LEAF_EXT` and the registry): one reference, the descriptor at the start of the
//! table the entry points to, which gives the chunk and the vector of used
//! sub-blocks. The upper levels and the PMD entry are the walker's, so the
//! page-walk caches serve GTSM as any walk (the paper gives GTSM 32-entry
//! L2 and L3 walk caches: `machine.pwc`, set by the experiment).
//!
//! Layer: paging (uses `hw`, `paging` and `units`).

use super::pagetable::{gtsm_record, SOFT_BIT};
use super::tlb::{GtsmPage, KINDS};
use crate::hw::refs::RefKind;
use crate::hw::tlb::{EntryKind, Holds, ReachSize, TlbEntry};
use crate::paging::leaf_ext::{LeafExtension, LeafWalk};
use crate::paging::pte::SoftBit;
use crate::units::PageSize;

/// GTSM's hardware: one L2 entry per GTSM page, reached by a walk through
/// a PMD entry with bit 54. (In a guest its table's 4 KiB PTEs are walked
/// as plain ones: it has no 2D step.)
#[derive(Debug)]
pub struct GtsmLeaf;

impl LeafExtension for GtsmLeaf {
    type Payload = GtsmPage;
    type State = ();
    const KINDS: &'static [&'static str] = KINDS;
    const SOFT_BIT: Option<SoftBit> = Some(SOFT_BIT);
    const WALK_STAT: Option<&'static str> = Some("walk.gtsm");

    fn walk<X: Holds<GtsmPage, ()>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<GtsmPage> {
        walk(w)
    }
}

/// The walk's last step: reads the descriptor and returns the page's entry
/// to cache. The entry is dirty: the kernel installs a GTSM page's PTEs
/// dirty, as it does a huge PMD, so no store needs a dirty assist.
pub fn walk<X: Holds<GtsmPage, ()>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<GtsmPage> {
    let (pt, table) = (&*w.pt, w.table);
    w.refs.push(pt.node_frame(table).addr(), RefKind::Walk);
    w.stats.walk_mem_refs += 1;
    w.stats.leaf_ext_walks[X::OWNER] += 1;
    let g = gtsm_record(pt, table);
    TlbEntry {
        asid: w.asid,
        vbase: w.vaddr.align_down(PageSize::Size2M.bytes()).vpn(),
        size: ReachSize::Size2M,
        writable: g.writable,
        dirty: true,
        kind: EntryKind::Ext(GtsmPage::new(g.chunk, g.used)),
    }
}
