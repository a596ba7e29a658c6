//! EPT accessed and dirty bits, as Intel's EPT A/D (EPTP bit 6, which KVM
//! enables by default): what the walker sets, and the host's scan that
//! reads and clears them.
//!
//! What the two-dimensional walker (`engine::walk2d`) sets:
//! - every EPT walk that reaches a leaf sets its accessed bit (bit 5 in
//!   pagelab's x86-format entries; the EPT's real bit 8): the leaf only,
//!   as the native walker sets A on leaves only (the upper entries' A bits
//!   are not modelled);
//! - the walk of a store sets the dirty bit of the leaf that maps the
//!   data's guest frame; and, as the SDM says of EPT A/D (28.2.4), reads of
//!   guest page-table entries count as stores, so every guest table a walk
//!   reads gets its EPT leaf's dirty bit too;
//! - a nested-TLB hit sets no bit unless the entry was filled clean and
//!   the access is a store (then the leaf's dirty bit is set, as hardware
//!   sets it by walking again; that re-walk is not charged, a
//!   simplification);
//! - a combined TLB entry is dirty only when both the guest PTE and the EPT
//!   leaf are: a store through a clean one takes the dirty assist, which
//!   sets both (again without charging the EPT side).
//!
//! A store to a write-protected (KSM) leaf sets its dirty bit before the
//! copy-on-write replaces that leaf with the copy's, which starts clean.
//!
//! The host's scan ([`Hypervisor::scan_ept_bits`]) lists the leaves of a
//! guest-physical range with their bits and may clear them. A cleared bit
//! is set again only by a later EPT walk: a translation still cached in a
//! core's TLB or nested TLB sets nothing. So the scan may also flush (an
//! INVEPT of the range, `virt.costs.invept` on each of the VM's cores when
//! delivered), as HugeScope's coarse path does, or not, as KVM's
//! `clear_young` does not.

use super::Hypervisor;
use crate::hw::nested_tlb::{NestedHit, NestedTlb};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::units::{Gfn, PageSize, Pfn};

/// What a scan clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EptClear {
    /// Nothing: a read of the bits.
    None,
    /// The accessed bits.
    Accessed,
    /// The accessed and dirty bits.
    AccessedDirty,
}

impl EptClear {
    fn bits(self) -> u64 {
        match self {
            EptClear::None => 0,
            EptClear::Accessed => ACCESSED,
            EptClear::AccessedDirty => ACCESSED | DIRTY,
        }
    }
}

/// One EPT leaf as a scan saw it (before any clearing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EptLeafBits {
    /// The first guest frame the leaf maps.
    pub gfn: Gfn,
    pub size: PageSize,
    pub accessed: bool,
    pub dirty: bool,
}

impl Hypervisor {
    /// Sets the dirty (and accessed) bit of the EPT leaf mapping `gfn` of
    /// VM `vm`, if one does (a software update for the cold paths).
    pub fn set_ept_dirty(&mut self, vm: usize, gfn: Gfn) {
        let ept = self.ept_mut(vm);
        if let Some(slot) = ept.leaf_slot(gfn.addr().as_host_virt()).filter(|&s| ept.entry(s).present()) {
            ept.set_bits(slot, ACCESSED | DIRTY);
        }
    }

    /// Whether the EPT leaf mapping `gfn` of VM `vm` is dirty.
    pub fn ept_dirty(&self, vm: usize, gfn: Gfn) -> bool {
        self.ept(vm).lookup(gfn.addr().as_host_virt()).is_some_and(|m| m.pte.dirty())
    }

    /// The EPT leaves of VM `vm` over guest frames [start, end), in order,
    /// each with its bits as they were; `clear` clears those bits in each,
    /// and `flush` queues an INVEPT of the range (delivered with the host's
    /// other changes) so that the next access to each page walks and sets
    /// them again. Counted in `host.ept_scans` and `host.ept_cleared`.
    pub fn scan_ept_bits(&mut self, vm: usize, start: Gfn, end: Gfn, clear: EptClear, flush: bool) -> Vec<EptLeafBits> {
        let host_asid = self.host_asid(vm);
        let (lo, hi) = (start.addr().as_host_virt(), end.addr().as_host_virt());
        let ept = self.ept_mut(vm);
        let leaves: Vec<EptLeafBits> = ept
            .leaves_in(lo, hi)
            .into_iter()
            .map(|(va, m)| EptLeafBits {
                gfn: Gfn::new(va.raw() >> 12),
                size: m.size,
                accessed: m.pte.accessed(),
                dirty: m.pte.dirty(),
            })
            .collect();
        if clear != EptClear::None {
            for leaf in &leaves {
                let slot = ept.leaf_slot(leaf.gfn.addr().as_host_virt()).expect("a leaf just listed");
                ept.clear_bits(slot, clear.bits());
            }
            self.counters.ept_cleared += leaves.len() as u64;
        }
        self.counters.ept_scans += 1;
        if flush && !leaves.is_empty() {
            self.host.shoot(host_asid, lo, hi);
        }
        leaves
    }

    /// The walker's store (or guest-table read) through nested-TLB entry
    /// `hit` of `gfn`, filled clean: the EPT leaf's dirty bit is set and
    /// the entry, just hit (so already the most recent), marked dirty.
    #[cold]
    #[inline(never)]
    pub fn store_through_clean_ntlb(&mut self, vm: usize, ntlb: &mut NestedTlb, gfn: Gfn, hit: NestedHit) -> NestedHit {
        self.set_ept_dirty(vm, gfn);
        ntlb.mark_dirty(self.vms[vm].vpid, gfn, hit);
        (hit.0, hit.1, hit.2, true)
    }

    /// Whether `gfn`'s EPT leaf is dirty now, for a combined entry over a
    /// nested-TLB entry filled clean (which may be stale-clean: a dirty
    /// assist or another core set the bit since); if it is, the entry
    /// (of `frame`, `size`, writable), if still cached, is marked dirty.
    #[cold]
    #[inline(never)]
    pub fn refresh_ntlb_dirty(&self, vm: usize, ntlb: &mut NestedTlb, gfn: Gfn, frame: Pfn, size: PageSize) -> bool {
        let dirty = self.ept_dirty(vm, gfn);
        if dirty {
            ntlb.mark_dirty(self.vms[vm].vpid, gfn, (frame, size, true, false));
        }
        dirty
    }
}
