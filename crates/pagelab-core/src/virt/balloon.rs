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
//! With even colors (COPLACE's eBal, its section IV) the driver takes
//! single 4 KiB frames round-robin over the guest's colors (its color map:
//! the colors the guest places pages by, which COPLACE's host colors
//! follow), so the host frames it frees are as even across the host's
//! colors as the guest's were: another VM whose host placement wants a
//! given color finds it among them. It breaks free blocks (largest first)
//! into frames by color until every color has its share or the guest has
//! no free frame left, takes an equal number of each color that has them,
//! and gives the rest back to the guest's allocator.
//!
//! Deflating gives a balloon's frames back to its guest's allocator, the
//! last taken first; the host backs them at their next touch through its
//! chain of systems (COPLACE: in the colors the guest frames want).
//!
//! Costs: each range given back is a VM exit (the driver's notification,
//! `virt.costs.vm_exit`, in `host.balloon.cycles`) and its INVEPT on the
//! VM's cores when delivered; a deflation's notification is one VM exit.
//! When and how much is a policy's: the registry's `balloon` policy
//! inflates and deflates to what `virt.host.balloon` sets.

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

/// How a balloon chooses the guest's free frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The largest free blocks first (up to 2 MiB): Linux's driver.
    Largest,
    /// 4 KiB frames evenly across the guest's colors (eBal).
    EvenColors,
}

impl HostCtx<'_, '_> {
    /// Inflates VM `vm`'s balloon by `pages` guest pages taken from its
    /// guest kernel (the largest free blocks first) and gives their backing
    /// back to the host (the policies give up what they hold there first).
    pub fn inflate_balloon(&mut self, vm: usize, pages: u64) -> Result<Inflation> {
        self.inflate_balloon_by(vm, pages, Take::Largest)
    }

    /// Inflates VM `vm`'s balloon by `pages` guest pages chosen by `take`.
    pub fn inflate_balloon_by(&mut self, vm: usize, pages: u64, take: Take) -> Result<Inflation> {
        let free_before = self.hv.host.mem.free_pages();
        let blocks = match take {
            Take::Largest => largest_blocks(self.guests[vm], pages),
            Take::EvenColors => even_frames(self.guests[vm], pages),
        };
        let taken = blocks.iter().map(|(_, o)| o.nr_pages()).sum();
        for (pfn, count) in ranges(&blocks, take) {
            self.count_colors(vm, pfn, count);
            self.discard(vm, Gfn::of_guest_kernel(pfn), count)?;
            self.hv.balloons.counters.cycles += self.hv.costs.vm_exit;
        }
        let balloons = &mut self.hv.balloons;
        if balloons.blocks.len() <= vm {
            balloons.blocks.resize(vm + 1, Vec::new());
        }
        balloons.blocks[vm].extend(blocks);
        // (Tables the host freed with the mappings count as freed too.)
        let freed = self.hv.host.mem.free_pages().saturating_sub(free_before);
        self.hv.balloons.counters.freed += freed;
        Ok(Inflation { pages: taken, freed })
    }

    /// Deflates VM `vm`'s balloon by up to `pages` guest pages, the last
    /// taken first: they go back to its guest's allocator, unbacked.
    /// Returns the pages given back (short when the balloon held fewer).
    pub fn deflate_balloon(&mut self, vm: usize, pages: u64) -> u64 {
        let Some(blocks) = self.hv.balloons.blocks.get_mut(vm) else { return 0 };
        let guest = &mut *self.guests[vm];
        let mut given = 0;
        while given < pages {
            let Some((pfn, order)) = blocks.pop() else { break };
            if order.nr_pages() > pages - given {
                // Halve it: its upper half stays, the lower one is looked at next.
                let half = Order::new(order.get() - 1);
                blocks.push((pfn.add(half.nr_pages()), half));
                blocks.push((pfn, half));
                continue;
            }
            guest.mem.free(pfn, order);
            given += order.nr_pages();
        }
        let counters = &mut self.hv.balloons.counters;
        counters.deflated += given;
        if given > 0 {
            counters.cycles += self.hv.costs.vm_exit;
        }
        given
    }

    /// Counts `count` guest pages from `pfn` by the guest's colors, and
    /// the host frames backing them by the host placement's colors (eBal's
    /// statistics), before they are discarded.
    fn count_colors(&mut self, vm: usize, pfn: Pfn, count: u64) {
        let (guest, host) = (self.guests[vm].color_map(), self.hv.host.placement_colors());
        let gfns = (pfn.raw()..pfn.raw() + count).map(Pfn::new);
        let taken: Vec<u32> = gfns.clone().map(|g| guest.color_of(g)).collect();
        let freed: Vec<u32> = gfns
            .filter_map(|g| self.hv.backing_of(vm, Gfn::of_guest_kernel(g)))
            .map(|(frame, _)| host.color_of(frame))
            .collect();
        let (nr_guest, nr_host) = (guest.nr_colors(), host.nr_colors());
        let counts = &mut self.hv.balloons.colors;
        taken.into_iter().for_each(|c| counts.taken(c, nr_guest));
        freed.into_iter().for_each(|c| counts.freed(c, nr_host));
    }
}

/// The ranges of guest frames one notification gives back: each block
/// (`Largest`: Linux's driver sends a block at a time), or each run of
/// consecutive frames (`EvenColors`: its single frames, sorted).
fn ranges(blocks: &[(Pfn, Order)], take: Take) -> Vec<(Pfn, u64)> {
    let mut out: Vec<(Pfn, u64)> = Vec::new();
    for &(pfn, order) in blocks {
        match out.last_mut() {
            Some((start, n)) if take == Take::EvenColors && start.add(*n) == pfn => *n += order.nr_pages(),
            _ => out.push((pfn, order.nr_pages())),
        }
    }
    out
}

/// The largest free blocks of at most `want` pages in all (and 2 MiB
/// each) the guest's allocator gives, now the balloon's.
fn largest_blocks(guest: &mut Kernel, want: u64) -> Vec<(Pfn, Order)> {
    let mut blocks = Vec::new();
    let mut taken = 0;
    while taken < want {
        let Some((pfn, order)) = take_free_block(guest, want - taken) else { break };
        blocks.push((pfn, order));
        taken += order.nr_pages();
    }
    blocks
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

/// Up to `want` free 4 KiB guest frames, as even across the guest's
/// colors as its free memory allows (see the module comment), now the
/// balloon's, as order-0 blocks, consecutive frames first.
fn even_frames(guest: &mut Kernel, want: u64) -> Vec<(Pfn, Order)> {
    let colors = guest.color_map().clone();
    let nr = colors.nr_colors() as usize;
    let share = want.div_ceil(nr as u64) as usize;
    let mut by_color: Vec<Vec<Pfn>> = vec![Vec::new(); nr];
    // Free blocks into frames by color, until every color has its share.
    while by_color.iter().any(|c| c.len() < share) {
        let Some((pfn, order)) = take_free_block(guest, MAX_BLOCK.nr_pages()) else { break };
        for f in (0..order.nr_pages()).map(|i| pfn.add(i)) {
            by_color[colors.color_of(f) as usize].push(f);
        }
    }
    // Round-robin over the colors that have frames, lowest frames first.
    let mut cursors = vec![0usize; nr];
    let mut chosen = Vec::new();
    'rounds: loop {
        let before = chosen.len();
        for (c, frames) in by_color.iter().enumerate() {
            if chosen.len() as u64 == want {
                break 'rounds;
            }
            if let Some(&f) = frames.get(cursors[c]) {
                chosen.push(f);
                cursors[c] += 1;
            }
        }
        if chosen.len() == before {
            break;
        }
    }
    // The rest goes back to the guest's allocator.
    for (c, frames) in by_color.iter().enumerate() {
        for &f in &frames[cursors[c]..] {
            guest.mem.free(f, Order::BASE);
        }
    }
    chosen.sort_unstable();
    chosen.into_iter().map(|f| (f, Order::BASE)).collect()
}
