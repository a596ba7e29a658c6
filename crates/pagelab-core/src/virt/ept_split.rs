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
//! The host's metadata work never sees the split leaves (the paper's
//! section 3.3.3: the split "does not perform any modifications to the
//! metadata structures"): munmap, mprotect and the balloon's discard put
//! the huge leaf back first (`AddressSpace::restore_table_only`, counted in
//! `host.ept_restores` and charged as a collapse), as HugeScope coalesces a
//! split range the hypervisor itself touches (section 3.3.4); migration
//! restores it and moves the whole page; khugepaged sees the huge page the
//! metadata holds (SCAN_PMD_MAPPED); KSM and compaction skip the range
//! until it is collapsed. A collapse checks that the 512 entries still map
//! the contiguous, aligned frames of one huge page with one permission, and
//! refuses otherwise (`host.ept_collapse_refused`).

use super::Hypervisor;
use crate::error::{Error, Result};
use crate::units::{Gfn, PageSize};

impl Hypervisor {
    /// Splits the huge EPT leaf (2 MiB or 1 GiB) mapping `gfn` of VM `vm`
    /// into 512 leaves of the next size over the same frames, in the table
    /// only (`AddressSpace::split_table_only`). Returns the host cycles it
    /// cost. An error when no huge leaf maps `gfn`, or when no host frame
    /// is left for the table.
    pub fn ept_split(&mut self, vm: usize, gfn: Gfn) -> Result<f64> {
        let host_asid = self.host_asid(vm);
        let va = gfn.addr().as_host_virt();
        let Some(m) = self.ept(vm).lookup(va).filter(|m| m.size != PageSize::Size4K) else {
            return Err(Error::Workload(format!("EPT split: no huge EPT leaf maps guest frame {gfn} of VM {vm}")));
        };
        let base = va.align_down(m.size.bytes());
        let host = &mut self.host;
        host.procs[host_asid as usize - 1].aspace.split_table_only(base, m.size, &mut host.mem)?;
        self.host.shoot(host_asid, base, base.add(m.size.bytes()));
        self.counters.ept_splits += 1;
        self.counters.ept_remap_cycles += self.costs.ept_split;
        Ok(self.costs.ept_split)
    }

    /// Collapses the EPT-only split of the `size` (2 MiB or 1 GiB) range
    /// holding `gfn` of VM `vm` back into one huge leaf, if its 512 entries
    /// still map contiguous, `size`-aligned host frames with one
    /// permission. The leaf's accessed and dirty bits are those of any of
    /// the entries. Returns the host cycles it cost, or None (counted) when
    /// the range is not an EPT-only split of that size or its entries
    /// changed (a range the host itself split is the host's to collapse:
    /// khugepaged's).
    pub fn ept_collapse(&mut self, vm: usize, gfn: Gfn, size: PageSize) -> Result<Option<f64>> {
        if size == PageSize::Size4K {
            return Err(Error::Workload("EPT collapse: the target size must be 2MiB or 1GiB".into()));
        }
        let host_asid = self.host_asid(vm);
        let base = gfn.addr().as_host_virt().align_down(size.bytes());
        let aspace = &self.host.procs[host_asid as usize - 1].aspace;
        let split_here = aspace.table_only_split(base) == Some((base, size));
        let Some((frame, writable, bits)) = split_here.then(|| aspace.table_only_frames(base, size)).flatten() else {
            self.counters.ept_collapse_refused += 1;
            return Ok(None);
        };
        let host = &mut self.host;
        let aspace = &mut host.procs[host_asid as usize - 1].aspace;
        aspace.collapse_table_only(base, frame, writable, &mut host.mem);
        let slot = aspace.pt.leaf_slot(base).expect("a leaf just installed");
        aspace.pt.set_bits(slot, bits);
        self.host.shoot(host_asid, base, base.add(size.bytes()));
        self.counters.ept_collapses += 1;
        self.counters.ept_remap_cycles += self.costs.ept_collapse;
        Ok(Some(self.costs.ept_collapse))
    }
}
