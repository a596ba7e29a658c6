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
//! grows, to the target `virt.host.balloon` sets (one simple policy, see
//! `systems::balloon`).

use super::Hypervisor;
use crate::error::Result;
use crate::os::Kernel;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stat, Stats};
use crate::units::{Gfn, Order, Pfn};

/// The guest frames a balloon holds are owned by this pool.
pub const BALLOON_POOL: u8 = 5;

/// The largest block the driver takes at once: 2 MiB.
const MAX_BLOCK: Order = Order::new(9);

/// Every VM's balloon.
#[derive(Debug, Default)]
pub struct Balloons {
    /// By VM: the guest blocks each balloon holds.
    blocks: Vec<Vec<(Pfn, Order)>>,
    counters: BalloonCounters,
    /// The policy (`virt.host.balloon`) has inflated the balloons (once).
    pub policy_done: bool,
}

#[derive(Debug, Default, Clone)]
struct BalloonCounters {
    /// Host frames freed by inflations.
    freed: u64,
    cycles: f64,
}

/// What one inflation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inflation {
    /// Guest pages the balloon took (short of the request when the guest
    /// had no more free memory).
    pub pages: u64,
    /// Host frames it freed.
    pub freed: u64,
}

impl Balloons {
    /// Guest pages in VM `vm`'s balloon.
    pub fn pages(&self, vm: usize) -> u64 {
        self.blocks.get(vm).map_or(0, |b| b.iter().map(|(_, o)| o.nr_pages()).sum())
    }

    /// `balloon.pages` (all VMs' balloons), `host.balloon.freed` and
    /// `host.balloon.cycles`.
    pub fn report(&self, out: &mut Stats) {
        let pages = (0..self.blocks.len()).map(|vm| self.pages(vm)).sum();
        put_ints(out, "", &[("balloon.pages", pages), ("host.balloon.freed", self.counters.freed)]);
        out.insert("host.balloon.cycles".into(), Stat::Float(self.counters.cycles));
    }

    pub fn reset_stats(&mut self) {
        self.counters = BalloonCounters::default();
    }
}

impl Hypervisor {
    /// Inflates VM `vm`'s balloon by `pages` guest pages taken from
    /// `guest` (that VM's kernel) and gives their backing back to the host.
    pub fn inflate_balloon(&mut self, vm: usize, guest: &mut Kernel, pages: u64) -> Result<Inflation> {
        let free_before = self.host.mem.free_pages();
        let mut taken = 0;
        while taken < pages {
            let Some((pfn, order)) = take_free_block(guest, pages - taken) else { break };
            self.discard(vm, Gfn::of_guest_kernel(pfn), order.nr_pages())?;
            let balloons = &mut self.balloons;
            if balloons.blocks.len() <= vm {
                balloons.blocks.resize(vm + 1, Vec::new());
            }
            balloons.blocks[vm].push((pfn, order));
            balloons.counters.cycles += self.costs.vm_exit;
            taken += order.nr_pages();
        }
        // (Tables the host freed with the mappings count as freed too.)
        let freed = self.host.mem.free_pages().saturating_sub(free_before);
        self.balloons.counters.freed += freed;
        Ok(Inflation { pages: taken, freed })
    }

    /// Whether guest frame `gfn` of VM `vm` is in its balloon.
    pub fn in_balloon(&self, vm: usize, gfn: Gfn) -> bool {
        let blocks = self.balloons.blocks.get(vm).map_or(&[][..], Vec::as_slice);
        blocks.iter().any(|&(pfn, order)| (pfn.raw()..pfn.raw() + order.nr_pages()).contains(&gfn.raw()))
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
