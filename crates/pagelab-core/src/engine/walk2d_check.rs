//! The check mode of the two-dimensional walker (`run.check_translations`):
//! a combined TLB entry checked against both tables, the guest's and the
//! EPT, at every hit. Cold code, apart from the walk.

use super::guest_frame_of;
use crate::error::{Error, Result};
use crate::os::Kernel;
use crate::units::{Asid, Pfn, VirtAddr};
use crate::virt::Hypervisor;

/// The check mode for a combined entry: its frame must be what the guest's
/// table and then the EPT say now.
#[cold]
#[inline(never)]
pub fn check_combined(
    guest: &Kernel,
    hv: &Hypervisor,
    vm: usize,
    asid: Asid,
    vaddr: VirtAddr,
    frame: Pfn,
) -> Result<()> {
    let gfn = guest_frame_of(guest, asid, vaddr);
    let expected = gfn.and_then(|g| hv.backing_of(vm, g)).map(|(f, _)| f);
    if expected != Some(frame) {
        return Err(Error::Workload(format!(
            "stale translation: the TLB maps guest {vaddr} to host frame {frame}, but the guest's table gives \
             guest frame {gfn:?} and the EPT host frame {expected:?}"
        )));
    }
    Ok(())
}

/// The check mode for a combined entry's permission: a dirty entry over a
/// write-protected EPT leaf would let stores skip their copy-on-write.
#[cold]
#[inline(never)]
pub(super) fn check_write_protection(
    guest: &Kernel,
    hv: &Hypervisor,
    vm: usize,
    asid: Asid,
    vaddr: VirtAddr,
    dirty: bool,
) -> Result<()> {
    let gfn = guest_frame_of(guest, asid, vaddr);
    if dirty && gfn.is_some_and(|g| hv.write_protected(vm, g)) {
        return Err(Error::Workload(format!(
            "stale translation: the TLB holds a dirty entry for guest {vaddr} over a write-protected EPT leaf"
        )));
    }
    Ok(())
}
