//! The systems of the papers pagelab reproduces, one folder each, reaching
//! the shared core only through its extension points. A system's folder
//! spans layers; each of its modules states its own (a hardware module
//! uses only the hardware layer and below).
//!
//! This file is where the systems' hardware extensions are registered:
//! the TLB entry kinds the simulated cores have ([`TlbExtensions`]) and
//! the walk steps the page-table software bits lead to
//! ([`walk_leaf_ext`]). Outside the systems' folders, only here are they
//! named.

pub mod chp;

use crate::engine::{CoreStats, RefBuf};
use crate::hw::tlb::{TlbEntry, TlbExtension};
use crate::paging::pte::COLORED_HUGE;
use crate::paging::{NodeId, PageTable};
use crate::units::{Asid, VirtAddr};

/// The owner of the L2 TLB's extension kinds: Colored Huge Pages' today.
/// (A second kind makes this a struct of the owners' side tables with an
/// enum of their payloads, dispatched by the entry's kind tag.)
pub type TlbExtensions = chp::tlb::ChpTlb;

/// What an extension kind's walk hands the TLB.
pub type ExtEntry = TlbEntry<<TlbExtensions as TlbExtension>::Payload>;

/// The hardware extensions of a core, set up for a machine whose
/// colored huge pages (if any) have sub-mappings strided by
/// `chp_stride_shift` (log2 of the colors).
pub fn tlb_extensions(chp_stride_shift: u8) -> TlbExtensions {
    chp::tlb::ChpTlb::new(chp_stride_shift)
}

/// The walk step of the leaf extension whose software bits (`bits`, of
/// `pte::LEAF_EXT`) the PMD entry above `table` carries: the walker's one
/// jump to a system's code. Returns the entry to cache.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the walker's state at its last step
pub fn walk_leaf_ext(
    bits: u64,
    pt: &mut PageTable,
    table: NodeId,
    asid: Asid,
    vaddr: VirtAddr,
    write: bool,
    ext: &TlbExtensions,
    refs: &mut RefBuf,
    stats: &mut CoreStats,
) -> ExtEntry {
    debug_assert_eq!(bits, COLORED_HUGE, "no walk step for software bits {bits:#x}");
    chp::walk::walk(pt, table, asid, vaddr, write, ext.stride_shift, refs, stats)
}

/// A store through a clean TLB entry of a leaf extension (its PTE's D bit
/// is set already): what else the locked update sets.
#[cold]
#[inline(never)]
pub fn dirty_assist_leaf_ext(bits: u64, pt: &mut PageTable, table: NodeId) {
    debug_assert_eq!(bits, COLORED_HUGE, "no dirty assist for software bits {bits:#x}");
    chp::walk::dirty_assist(pt, table);
}
