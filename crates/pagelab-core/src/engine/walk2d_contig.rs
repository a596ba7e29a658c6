//! Contiguous entries in the two-dimensional walk (Elastic Translations'
//! virtualized runs: a guest running ET over a host running ET).
//!
//! Either dimension's leaf may carry Arm's contiguous bit: a guest leaf
//! (one of 16 aligned PTEs or PMDs mapping 16 contiguous guest frames) has a
//! guest reach of 64 KiB or 32 MiB, an EPT leaf a host reach of 64 KiB or
//! 32 MiB, each as the native walker's `contiguous_leaf` reads it
//! ([`contiguous_reach`]: only on a TLB that holds that reach). The combined
//! TLB entry translates the smaller of the two reaches, R:
//!
//! - the guest maps the R-aligned virtual block around the address to an
//!   R-aligned block of guest frames, in order: the guest's reach is at
//!   least R, and a page or a contiguous range maps its aligned virtual
//!   range to an equally aligned frame range (`paging::contig` sets the bit
//!   only when entry i maps anchor + i, the anchor aligned to the range);
//! - that block of guest frames lies inside one host-reach-aligned block
//!   (R is at most the host reach and both are powers of two), which the
//!   EPT maps to host frames in order, for the same reason.
//!
//! So the block is contiguous in host memory and one entry stands for all
//! of it; the check mode asserts it at every fill ([`check_range`]) and at
//! every hit (`walk2d::check_combined`).
//!
//! What the nested TLB holds is unchanged: the EPT leaf's page size (4 KiB,
//! 2 MiB, 1 GiB), so its staleness check against the EPT stays exact. The
//! leaf's contiguous bit is read from the EPT entry when it matters (a
//! software read: the walk just read that entry, or the nested TLB would
//! hold the bit beside the frame). Reading it now rather than caching it is
//! exact for the same reason a contiguous TLB entry is never stale on Arm:
//! any change to one entry of a range clears the bit on all sixteen first,
//! and its INVEPT drops every combined entry of the VM.
//!
//! Kept off the hot path of runs without contiguous bits: the guest side is
//! one test of the leaf's bit, the host side one compare of the two sizes
//! before any work (a guest page no larger than the EPT leaf needs no look
//! at the EPT's bit), both jumping to cold code here.

use super::mmu::{contiguous_reach, Mmu};
use crate::hw::tlb::ReachSize;
use crate::os::Kernel;
use crate::paging::pte::{Pte, CONTIGUOUS};
use crate::units::{Asid, Gfn, PageSize, Pfn, VirtAddr};
use crate::virt::Hypervisor;

/// What the 2D walk keeps of the guest's leaf entry.
pub(super) struct GuestLeaf {
    pub frame: Pfn,
    pub size: PageSize,
    pub writable: bool,
    /// The entry is dirty after this access.
    pub dirty: bool,
    /// This access sets its dirty bit.
    pub newly_dirty: bool,
    /// It carries the contiguous bit.
    pub contig: bool,
}

impl GuestLeaf {
    #[inline(always)]
    pub fn of(pte: Pte, size: PageSize, write: bool) -> GuestLeaf {
        GuestLeaf {
            frame: pte.pfn(),
            size,
            writable: pte.writable(),
            dirty: write || pte.dirty(),
            newly_dirty: write && !pte.dirty(),
            contig: pte.raw() & CONTIGUOUS != 0,
        }
    }
}

/// The guest reach of a guest leaf of `size` whose contiguous bit is set.
#[cold]
#[inline(never)]
pub(super) fn guest_contiguous_reach(mmu: &Mmu, size: PageSize) -> ReachSize {
    contiguous_reach(&mmu.tlb, size)
}

/// The reach of the combined entry for guest reach `guest` over the EPT
/// leaf of `host_size` that backs `gfn` in VM `vm`: the smaller of the
/// guest reach and the host reach (the leaf's page, or its contiguous
/// range's).
#[inline]
pub(super) fn combined_reach(
    mmu: &Mmu,
    hv: &Hypervisor,
    vm: usize,
    guest: ReachSize,
    gfn: Gfn,
    host_size: PageSize,
) -> ReachSize {
    let host = ReachSize::from(host_size);
    if guest <= host {
        return guest;
    }
    host_reach_below(mmu, hv, vm, guest, gfn, host_size)
}

/// A guest reach wider than the EPT leaf's page: the EPT leaf's contiguous
/// range may widen the host reach (up to the guest's).
#[cold]
#[inline(never)]
fn host_reach_below(
    mmu: &Mmu,
    hv: &Hypervisor,
    vm: usize,
    guest: ReachSize,
    gfn: Gfn,
    host_size: PageSize,
) -> ReachSize {
    let page = ReachSize::from(host_size);
    let coalescing = host_size != PageSize::Size1G && contiguous_reach(&mmu.tlb, host_size) != page;
    if !coalescing {
        return page; // a TLB without that reach: the bit is ignored, as natively
    }
    let contiguous = hv.ept(vm).lookup(gfn.addr().as_host_virt()).is_some_and(|m| m.pte.raw() & CONTIGUOUS != 0);
    if contiguous {
        guest.min(contiguous_reach(&mmu.tlb, host_size))
    } else {
        page
    }
}

/// The check mode at a fill: the first and last 4 KiB page of the combined
/// entry's range (`reach` around `vaddr`, starting at host frame `base`)
/// translate through both tables to `base` and `base` + pages - 1; with the
/// accessed page in between (its walk), the range is the contiguous one the
/// module doc argues. Returns what is wrong.
#[cold]
#[inline(never)]
pub(super) fn check_range(
    guest: &Kernel,
    hv: &Hypervisor,
    vm: usize,
    asid: Asid,
    vaddr: VirtAddr,
    reach: ReachSize,
    base: Pfn,
) -> Option<String> {
    let first = vaddr.align_down(reach.bytes());
    let last = first.add(reach.bytes() - 4096);
    for (at, frame) in [(first, base), (last, base.add(reach.nr_pages() - 1))] {
        if let Err(e) = super::walk2d::check::check_combined(guest, hv, vm, asid, at, frame) {
            return Some(format!("a combined {reach:?} entry for {vaddr} is not contiguous: {e}"));
        }
    }
    None
}

#[cfg(test)]
#[path = "walk2d_contig_tests.rs"]
mod tests;
