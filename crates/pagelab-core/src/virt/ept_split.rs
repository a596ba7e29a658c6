//! The EPT-only split and re-collapse of a huge mapping (HugeScope's fine
//! path, §3.3.2 of its paper): the huge EPT leaf backing a guest range is
//! replaced by a table of 512 entries of the next size mapping the same
//! host frames, and later put back. Nothing else changes: no copy, no
//! guest change, and none of the host's metadata (the frames' owners, the
//! buddy allocator's blocks, the host's `mem.mapped.*` counts still say
//! "one huge page"); only the EPT and one host page-table frame for the new
//! table. The split leaves start with the huge leaf's permission and
//! accessed and dirty bits, so a scan after the split reads per-4 KiB bits
//! (`virt::ept_bits`).
//!
//! Costs: `virt.costs.ept_split` and `virt.costs.ept_collapse` are host
//! CPU cycles (the host thread's, on no vCPU's clock), counted in
//! `host.ept_remap_cycles`; each change queues an INVEPT of its range,
//! charged `virt.costs.invept` on every core of the VM when delivered, and
//! the VM's next accesses to the range walk again (a split range's walks
//! read one more EPT level, and its combined TLB entries are 4 KiB).
//!
//! While a range is split, host work on it sees 4 KiB leaves (as HugeScope's
//! inconsistency): a collapse then checks that the 512 entries still map
//! the contiguous, aligned frames of one huge page with one permission, and
//! refuses otherwise (`host.ept_collapse_refused`).

use super::Hypervisor;
use crate::error::{Error, Result};
use crate::paging::pagetable::level_size;
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::units::{Gfn, PageSize, Pfn};

impl Hypervisor {
    /// Splits the huge EPT leaf (2 MiB or 1 GiB) mapping `gfn` of VM `vm`
    /// into 512 leaves of the next size over the same frames. Returns the
    /// host cycles it cost. An error when no huge leaf maps `gfn`, or when
    /// no host frame is left for the table.
    pub fn ept_split(&mut self, vm: usize, gfn: Gfn) -> Result<f64> {
        let host_asid = self.host_asid(vm);
        let va = gfn.addr().as_host_virt();
        let Some(m) = self.ept(vm).lookup(va).filter(|m| m.size != PageSize::Size4K) else {
            return Err(Error::Workload(format!("EPT split: no huge EPT leaf maps guest frame {gfn} of VM {vm}")));
        };
        let base = va.align_down(m.size.bytes());
        let host = &mut self.host;
        host.procs[host_asid as usize - 1].aspace.pt.split_huge(base, &mut host.mem)?;
        self.host.shoot(host_asid, base, base.add(m.size.bytes()));
        self.counters.ept_splits += 1;
        self.counters.ept_remap_cycles += self.costs.ept_split;
        Ok(self.costs.ept_split)
    }

    /// Collapses the EPT table under the `size` (2 MiB or 1 GiB) range
    /// holding `gfn` of VM `vm` back into one huge leaf, if its 512 entries
    /// are leaves of the next size mapping contiguous, `size`-aligned host
    /// frames with one permission. The leaf's accessed and dirty bits are
    /// those of any of the entries. Returns the host cycles it cost, or
    /// None when the range cannot be collapsed (counted).
    pub fn ept_collapse(&mut self, vm: usize, gfn: Gfn, size: PageSize) -> Result<Option<f64>> {
        if size == PageSize::Size4K {
            return Err(Error::Workload("EPT collapse: the target size must be 2MiB or 1GiB".into()));
        }
        let host_asid = self.host_asid(vm);
        let base = gfn.addr().as_host_virt().align_down(size.bytes());
        let Some((frame, writable, bits)) = self.collapsible(vm, base, size) else {
            self.counters.ept_collapse_refused += 1;
            return Ok(None);
        };
        let host = &mut self.host;
        let ept = &mut host.procs[host_asid as usize - 1].aspace.pt;
        ept.collapse(base, frame, size, writable, &mut host.mem);
        let slot = ept.leaf_slot(base).expect("a leaf just installed");
        ept.set_bits(slot, bits);
        self.host.shoot(host_asid, base, base.add(size.bytes()));
        self.counters.ept_collapses += 1;
        self.counters.ept_remap_cycles += self.costs.ept_collapse;
        Ok(Some(self.costs.ept_collapse))
    }

    /// The first frame, permission and A/D bits of the range at `base` if
    /// its EPT entries are the 512 leaves of one split huge page.
    fn collapsible(&self, vm: usize, base: crate::units::VirtAddr, size: PageSize) -> Option<(Pfn, bool, u64)> {
        let leaves = self.ept(vm).leaves_in(base, base.add(size.bytes()));
        let part = level_size(size.leaf_level() - 1);
        let first = leaves.first()?.1;
        let aligned = first.frame.is_aligned(size.nr_pages());
        let whole = leaves.len() == 512
            && leaves.iter().enumerate().all(|(i, (_, m))| {
                m.size == part
                    && m.frame.raw() == first.frame.raw() + i as u64 * part.nr_pages()
                    && m.pte.writable() == first.pte.writable()
            });
        let bits = leaves.iter().fold(0, |acc, (_, m)| acc | (m.pte.raw() & (ACCESSED | DIRTY)));
        (aligned && whole).then_some((first.frame, first.pte.writable(), bits))
    }
}
