//! CHP's hardware extension as the registry takes it: its L2 entry kind
//! (`tlb.rs`), its page-table bit (`pagetable.rs`), its walk step and
//! dirty assist natively (`walk.rs`) and in a guest (`walk2d.rs`).
//!
//! Layer: paging (as the steps it names).

use super::pagetable::SOFT_BIT;
use super::tlb::{stride_shift, ChpTlb, ColoredHuge, KINDS};
use super::{walk, walk2d};
use crate::hw::cache::ColorMap;
use crate::hw::tlb::{Holds, TlbEntry};
use crate::paging::leaf_ext::{DirtyAssist2d, LeafExtension, LeafWalk, LeafWalk2d};
use crate::paging::nested_walk::{NestedWalk, Step2d};
use crate::paging::pte::SoftBit;
use crate::paging::{NodeId, PageTable};
use crate::units::{Gfn, VirtAddr};

/// Colored Huge Pages' hardware: one L2 entry per colored huge page,
/// reached by a walk through a PMD entry with bit 9.
#[derive(Debug)]
pub struct ChpLeaf;

impl LeafExtension for ChpLeaf {
    type Payload = ColoredHuge;
    type State = ChpTlb;
    const KINDS: &'static [&'static str] = KINDS;
    const SOFT_BIT: Option<SoftBit> = Some(SOFT_BIT);
    const WALK_STAT: Option<&'static str> = Some("walk.chp");
    const GUEST_STEP: bool = true;
    const DIRTY_ASSIST: bool = true;
    const OWN_ZEROED_FRAMES: bool = true;

    fn state(colors: &ColorMap, _sampling: bool) -> ChpTlb {
        ChpTlb::new(stride_shift(colors))
    }

    fn walk<X: Holds<ColoredHuge, ChpTlb>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<ColoredHuge> {
        walk::walk(w)
    }

    fn dirty_assist(pt: &mut PageTable, table: NodeId) {
        walk::dirty_assist(pt, table);
    }

    fn walk2d<W: NestedWalk, X: Holds<ColoredHuge, ChpTlb>>(w: &mut LeafWalk2d<'_, W, X>) -> Step2d<ColoredHuge> {
        walk2d::step(w)
    }

    fn dirty_assist_2d<W: NestedWalk>(d: &mut DirtyAssist2d<'_, W, ChpTlb>) {
        walk2d::dirty_assist(d);
    }

    fn push_zeroed(pt: &PageTable, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
        walk2d::push_zeroed(pt, vaddr, out);
    }
}
