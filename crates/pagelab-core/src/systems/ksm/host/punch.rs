//! KSM that punches holes (`virt.host.ksm.split = "punch"`): the paper's
//! motivation (II-B) turned into a policy. To merge a 4 KiB part of a host
//! huge page, ksmd does not split the whole EPT leaf: it makes the leaf a
//! perforated page of the same 2 MiB frame (no copy; the PTE table the
//! split would fill becomes the hole table, and the PMD keeps the frame,
//! the filter and the perforated bit), and the merged part a hole
//! remapped, read-only, to its KSM page. The part's own frame in the 2 MiB
//! block is freed: that is the memory saved. The rest of the leaf keeps
//! its 2 MiB reach in the TLB through the combined perforated entry
//! (`systems/perforated/walk2d.rs`).
//!
//! The paper's creation rule (III-C: under 25% of the region unmovable,
//! at most 4 of 8 filter bits) is not applied: it guards against regions
//! whose holes are unmovable kernel data and would be a poor huge page;
//! here every hole is a merged, movable page the guest chose to share,
//! and the alternative is splitting the whole leaf (every part then a
//! 4 KiB entry), so a perforated page with any number of holes is no worse
//! than the split. `ksm.perforated` counts the leaves made perforated.
//!
//! A copy-on-write break of a merged part (a guest store): when the part's
//! own frame in the 2 MiB block is still free, it is taken back, the copy
//! goes there and the hole is patched (the filter may clear, and the
//! sub-page is again translated by the 2 MiB frame); otherwise the hole
//! stays, remapped writable to a fresh frame (as a hole of a perforated
//! page after a copy-on-write, the paper's punch).
//!
//! KSM keeps its own hole-bitmap region (one bit per host frame, reserved
//! at its first perforation) and shadow PMD tables, as the perforated
//! system does for the pages it makes; a leaf the host's `perforated`
//! system made already is punched with its own record.

use std::collections::BTreeMap;

use super::Ksm;
use crate::os::Kernel;
use crate::paging::pagetable::table_index;
use crate::paging::pte::Pte;
use crate::phys::{FrameOwner, Migratetype};
use crate::systems::perforated::config::Variant;
use crate::systems::perforated::holes::{filter_of, is_hole, set_hole};
use crate::systems::perforated::pagetable::{perforation_at, set_perforated, Perforation};
use crate::systems::perforated::reserve_bitmaps;
use crate::units::{Asid, Gfn, Order, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::virt::hypervisor::Vm;

const HUGE: u64 = 2 << 20;

/// What KSM keeps to make perforated pages.
#[derive(Debug, Default)]
pub(super) struct PunchSpace {
    /// The first frame of KSM's hole-bitmap region, once reserved.
    bitmap_base: Option<Pfn>,
    /// The shadow PMD table of each (VM process, 1 GiB region).
    shadows: BTreeMap<(Asid, u64), Pfn>,
    /// Leaves made perforated (`ksm.perforated`).
    pub(super) perforated: u64,
}

impl Ksm {
    /// Makes the host huge leaf (2 MiB) over `gfn` of `vm` a perforated
    /// page of the same frames with no hole yet, and queues its INVEPT.
    /// False when no frame is left for its tables (the leaf stays).
    pub(super) fn perforate(&mut self, host: &mut Kernel, vm: &Vm, gfn: Gfn) -> bool {
        let base = gfn.addr().as_host_virt().align_down(HUGE);
        let asid = vm.host_asid;
        let Some(m) = host.proc(asid).aspace.pt.lookup(base) else { return false };
        if m.size != PageSize::Size2M {
            return perforation_at(&host.proc(asid).aspace.pt, base).is_some();
        }
        let Some((shadow, bitmap_line)) = self.punch_space_for(host, asid, base, m.frame) else { return false };
        if host.procs[asid as usize - 1].aspace.split(base, PageSize::Size2M, &mut host.mem).is_err() {
            return false;
        }
        let p = Perforation {
            frame: m.frame,
            filter: 0,
            variant: Variant::OnDemandFilter.code() as u8,
            writable: m.pte.writable(),
            shadow,
            bitmap_line,
            holes: [0; 8],
        };
        set_perforated(host.page_table_mut(asid), base, &p);
        host.shoot(asid, base, base.add(HUGE));
        self.punch_space.perforated += 1;
        // The page-table work of a split (the PTE table filled), no copy.
        self.counters.cpu_cycles += host.costs.split;
        true
    }

    /// The shadow PMD entry and bitmap line for a perforated page at
    /// `base` of `asid` over the 2 MiB frame `frame` (KSM's region and
    /// tables, made on first use).
    fn punch_space_for(
        &mut self,
        host: &mut Kernel,
        asid: Asid,
        base: VirtAddr,
        frame: Pfn,
    ) -> Option<(PhysAddr, PhysAddr)> {
        let space = &mut self.punch_space;
        let bitmaps = match space.bitmap_base {
            Some(b) => b,
            None => *space.bitmap_base.insert(reserve_bitmaps(host).ok()?),
        };
        let table = match space.shadows.get(&(asid, base.raw() >> 30)) {
            Some(&t) => t,
            None => {
                let owner = FrameOwner::PageTable { asid };
                let t = host.mem.alloc(Order::BASE, Migratetype::Unmovable, owner)?;
                *space.shadows.entry((asid, base.raw() >> 30)).or_insert(t)
            }
        };
        Some((table.addr().add(table_index(base, 2) as u64 * 8), bitmaps.addr().add(frame.raw() / 8)))
    }
}

/// Marks `gfn`'s part of its host perforated page a hole (a no-op outside
/// one): KSM is about to remap it, so the 2 MiB frame no longer
/// translates it.
pub(super) fn mark_hole(host: &mut Kernel, vm: &Vm, gfn: Gfn) {
    let base = gfn.addr().as_host_virt().align_down(HUGE);
    let pt = host.page_table_mut(vm.host_asid);
    if let Some(mut p) = perforation_at(pt, base) {
        set_hole(&mut p.holes, (gfn.raw() & 511) as usize, true);
        p.filter = filter_of(&p.holes);
        set_perforated(pt, base, &p);
    }
}

/// Whether `gfn` of `vm` is in a host perforated page.
pub(super) fn in_perforated_page(host: &Kernel, vm: &Vm, gfn: Gfn) -> bool {
    perforation_at(&host.proc(vm.host_asid).aspace.pt, gfn.addr().as_host_virt().align_down(HUGE)).is_some()
}

/// A copy-on-write break of `gfn`, a hole of a host perforated page:
/// patched back into the 2 MiB frame when the part's own frame there is
/// free (taken, and the copy put there). Returns whether it was; false
/// outside a perforated page or when the frame was reused.
pub(super) fn patch_back(host: &mut Kernel, vm: &Vm, gfn: Gfn) -> bool {
    let va = gfn.addr().as_host_virt();
    let base = va.align_down(HUGE);
    let Some(mut p) = perforation_at(&host.proc(vm.host_asid).aspace.pt, base) else { return false };
    let i = (gfn.raw() & 511) as usize;
    let home = p.frame.add(i as u64);
    if !is_hole(&p.holes, i)
        || !host.mem.alloc_specific(home, Order::BASE, FrameOwner::User { asid: vm.host_asid, vpn: va.vpn() })
    {
        return false;
    }
    let pt = host.page_table_mut(vm.host_asid);
    let slot = pt.leaf_slot(va).expect("a perforated page has its hole table");
    let old = pt.entry(slot);
    pt.replace(slot, Pte::leaf(home, p.writable, false).with(old.raw() & crate::paging::pte::ACCESSED));
    set_hole(&mut p.holes, i, false);
    p.filter = filter_of(&p.holes);
    set_perforated(pt, base, &p);
    host.shoot(vm.host_asid, va, va.add(4096));
    true
}

#[cfg(test)]
#[path = "punch_tests.rs"]
mod tests;
