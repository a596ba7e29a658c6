//! Ballooning, as virtio-balloon does it: the guest's balloon driver takes
//! free frames from the guest's own allocator (so the guest cannot use
//! them until the balloon deflates), tells the host which, and the host
//! drops their backing (`MADV_DONTNEED` in QEMU: the EPT entries removed,
//! the host frames freed, an INVEPT of each range), so another VM's faults
//! can use the frames.
//!
//! The guest takes the largest free blocks first (up to 2 MiB: the host
//! can then free whole huge pages); the blocks are the guest's frames
//! owned by the balloon (`FrameOwner::Reserved { pool: BALLOON_POOL }`).
//! What the host gets back is only what was backed: a free guest frame
//! never touched costs the host nothing already.
//!
//! Costs: each range given back is a VM exit (the driver's notification,
//! `virt.costs.vm_exit`, in `host.balloon.cycles`) and its INVEPT on the
//! VM's cores when delivered. Deflating is not modelled: a balloon only
//! grows. When and how much is a policy's: the registry's `balloon`
//! policy inflates to the targets `virt.host.balloon` sets.

use super::hypervisor::HostCtx;
use crate::error::Result;
use crate::os::Kernel;
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Gfn, Order, Pfn};

/// The guest frames a balloon holds are owned by this pool.
pub const BALLOON_POOL: u8 = 5;

/// The largest block the driver takes at once: 2 MiB.
const MAX_BLOCK: Order = Order::new(9);

/// What one inflation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inflation {
    /// Guest pages the balloon took (short of the request when the guest
    /// had no more free memory).
    pub pages: u64,
    /// Host frames it freed.
    pub freed: u64,
}

impl HostCtx<'_, '_> {
    /// Inflates VM `vm`'s balloon by `pages` guest pages taken from its
    /// guest kernel and gives their backing back to the host (the
    /// policies give up what they hold there first).
    pub fn inflate_balloon(&mut self, vm: usize, pages: u64) -> Result<Inflation> {
        let free_before = self.hv.host.mem.free_pages();
        let mut taken = 0;
        while taken < pages {
            let Some((pfn, order)) = take_free_block(self.guests[vm], pages - taken) else { break };
            self.discard(vm, Gfn::of_guest_kernel(pfn), order.nr_pages())?;
            let balloons = &mut self.hv.balloons;
            if balloons.blocks.len() <= vm {
                balloons.blocks.resize(vm + 1, Vec::new());
            }
            balloons.blocks[vm].push((pfn, order));
            balloons.counters.cycles += self.hv.costs.vm_exit;
            taken += order.nr_pages();
        }
        // (Tables the host freed with the mappings count as freed too.)
        let freed = self.hv.host.mem.free_pages().saturating_sub(free_before);
        self.hv.balloons.counters.freed += freed;
        Ok(Inflation { pages: taken, freed })
    }
}

/// The largest free block of at most `want` pages (and 2 MiB) the guest's
/// allocator gives, now the balloon's; None when it has no free frame.
fn take_free_block(guest: &mut Kernel, want: u64) -> Option<(Pfn, Order)> {
    let owner = FrameOwner::Reserved { pool: BALLOON_POOL };
    let largest = (63 - want.leading_zeros()).min(MAX_BLOCK.get() as u32) as u8;
    (0..=largest).rev().find_map(|o| {
        let order = Order::new(o);
        guest.mem.alloc(order, Migratetype::Movable, owner).map(|pfn| (pfn, order))
    })
}
