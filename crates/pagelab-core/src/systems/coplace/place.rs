//! The host fault of `vmm-coloring` and `coplace`: the color a guest
//! frame wants, a free frame of it from a color pool, else the nearest
//! color's, else any free frame (each of the last two counted).

use super::colors::host_color_of_guest;
use crate::error::{Error, Result};
use crate::hw::cache::ColorMap;
use crate::os::{ColorPool, Fault, FaultOutcome, Kernel, System};
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::stat::{put_ints, Stats};
use crate::units::{Asid, Order, PageSize, Pfn};

/// Which host color a guest frame wants.
#[derive(Debug)]
pub(super) enum Target {
    /// Its page offset within the VM's memory, modulo the colors
    /// (`vmm-coloring`).
    GuestFrame,
    /// A function of the guest's color of it (`coplace`), each VM's guest
    /// colors by VM.
    GuestColors { guests: Vec<ColorMap> },
}

impl Target {
    /// The color guest frame `offset` (its page offset within the VM's
    /// memory) of VM `vm` wants, of `nr_colors`.
    fn wanted(&self, vm: usize, offset: u64, nr_colors: u32) -> u32 {
        match self {
            Target::GuestFrame => (offset % u64::from(nr_colors)) as u32,
            Target::GuestColors { guests } => {
                let guest = &guests[vm.min(guests.len() - 1)];
                host_color_of_guest(guest, nr_colors, offset)
            }
        }
    }
}

/// A host placement by color of the guest frame.
#[derive(Debug)]
pub(super) struct HostColoring {
    name: &'static str,
    /// Where its statistics go: the name as a statistic spells it.
    stat_prefix: &'static str,
    /// Its own colors and free lists (`coplace`'s), or `None`: the host
    /// kernel's color map and pool (`virt.host.coloring.bits`).
    own: Option<ColorPool>,
    target: Target,
    /// Faults backed with a frame of another color than wanted.
    fallbacks: u64,
}

impl HostColoring {
    pub(super) fn new(
        name: &'static str,
        stat_prefix: &'static str,
        map: Option<ColorMap>,
        target: Target,
    ) -> HostColoring {
        HostColoring { name, stat_prefix, own: map.as_ref().map(ColorPool::new), target, fallbacks: 0 }
    }
}

impl HostColoring {
    /// A free frame for guest frame `offset` (its page offset within the
    /// VM's memory) of the VM whose host process is `asid`, of the color it
    /// wants, else the nearest (counted). `what` names the page in the
    /// out-of-memory message.
    fn frame_for(&mut self, k: &mut Kernel, asid: Asid, offset: u64, what: impl FnOnce() -> String) -> Result<Pfn> {
        // A VM's process in the host: VM i's is the (i + 1)th spawned.
        let vm = asid as usize - 1;
        let pool = self.own.as_mut().unwrap_or(&mut k.color_pool);
        let nr_colors = pool.map().nr_colors();
        let want = self.target.wanted(vm, offset, nr_colors);
        let (frame, exact) = alloc_colored(pool, &mut k.mem, want, nr_colors)
            .ok_or_else(|| Error::OutOfMemory(format!("no free host frame for {} ({})", what(), self.name)))?;
        self.fallbacks += u64::from(!exact);
        Ok(frame)
    }
}

impl System for HostColoring {
    fn name(&self) -> &'static str {
        self.name
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let page = f.vaddr.align_down(4096);
        let offset = page.vpn().raw() - f.vma.start.vpn().raw();
        let frame = self.frame_for(k, f.asid, offset, || format!("{}", f.vaddr))?;
        k.mem.set_owner(frame, FrameOwner::User { asid: f.asid, vpn: page.vpn() });
        k.map_user(f.asid, page, frame, PageSize::Size4K, f.vma.writable)?;
        Ok(Some(FaultOutcome { kind: "colored", size: PageSize::Size4K, cycles: k.costs.colored }))
    }

    /// A frame the host kernel needs for a VM's page outside a fault (a
    /// store to a KSM-merged page copies into it): of the color the guest
    /// frame wants, as its fault would have chosen. Pages outside a VMA
    /// (none in a VM's process) are left to the buddy allocator.
    fn alloc_page(&mut self, k: &mut Kernel, asid: Asid, owner: FrameOwner) -> Result<Option<Pfn>> {
        let FrameOwner::User { vpn, .. } = owner else { return Ok(None) };
        let Some(start) = k.proc(asid).aspace.find_vma(vpn.addr()).map(|v| v.start) else { return Ok(None) };
        let frame = self.frame_for(k, asid, vpn.raw() - start.vpn().raw(), || format!("{}", vpn.addr()))?;
        k.mem.set_owner(frame, owner);
        Ok(Some(frame))
    }

    fn placement_colors(&self) -> Option<&ColorMap> {
        self.own.as_ref().map(ColorPool::map)
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        put_ints(out, self.stat_prefix, &[("color_fallbacks", self.fallbacks)]);
    }

    fn reset_stats(&mut self) {
        self.fallbacks = 0;
    }
}

/// A free frame of color `want` (of `nr_colors`) from `pool`, breaking a
/// buddy block if none is pooled; else the pooled frame of the nearest
/// color; else any free 4 KiB frame of the buddy allocator (memory too
/// fragmented for a block spanning every color). The flag says whether it
/// is of `want`.
pub(super) fn alloc_colored(pool: &mut ColorPool, mem: &mut PhysMem, want: u32, nr_colors: u32) -> Option<(Pfn, bool)> {
    if let Some(frame) = pool.alloc(mem, &[want], |_| want) {
        return Some((frame, true));
    }
    if let Some(frame) = pool.alloc(mem, &[], |found| nearest(found, want, nr_colors)) {
        return Some((frame, false));
    }
    let frame = mem.alloc(Order::new(0), Migratetype::Movable, FrameOwner::Reserved { pool: 0 })?;
    Some((frame, false))
}

/// The color of `found` (not empty) nearest to `want` around the circle of
/// `nr_colors`; the lower on a tie.
pub(super) fn nearest(found: &[u32], want: u32, nr_colors: u32) -> u32 {
    let distance = |c: u32| {
        let d = c.abs_diff(want);
        d.min(nr_colors - d)
    };
    *found.iter().min_by_key(|&&c| (distance(c), c)).expect("a color with a free frame")
}
