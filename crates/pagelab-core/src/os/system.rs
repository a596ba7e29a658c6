//! The extension points of the OS: a [`System`] is one paging system (a
//! baseline such as `thp` or `coloring`, or a paper's system such as
//! `chp`), plugged into the kernel's chain; a [`Daemon`] is background
//! work on the simulated clock (khugepaged, CoalaKhugepaged, online Leshy;
//! later HugeScope's scanner and KSM).
//!
//! The kernel keeps the mechanism (memory, processes, VMAs, page tables,
//! shootdowns, costs, shared counters) and calls the systems at fixed
//! points. Every hook has a no-op default, so a system implements only
//! what it changes. Hooks run once per fault or per mapping change, never
//! per access: the chain is a list of boxed systems, dispatched
//! dynamically, at no cost to the per-access path.
//!
//! While a hook runs, the kernel's chain is lent to the caller (hooks get
//! `&mut Kernel` without the systems in it): a hook must not call back
//! into the chain (`Kernel::mmap` and the like from inside a hook).

use super::fault::{Fault, FaultOutcome};
use super::Kernel;
use crate::error::Result;
use crate::paging::PageTable;
use crate::phys::FrameOwner;
use crate::stat::Stats;
use crate::units::{Asid, PageSize, Pfn, VirtAddr, Vpn};

/// What a process asks of the systems when it starts.
#[derive(Debug, Clone, Default)]
pub struct ProcessSpec {
    /// Allowed page colors (empty = all).
    pub colors: Vec<u32>,
    /// Whether VMAs are created around touched addresses.
    pub auto_vma: bool,
    /// Systems of the chain this process does not use, by name (the
    /// process's faults skip them): `workload.chp = false` is `["chp"]`.
    pub opt_out: Vec<&'static str>,
    /// Pages the program declares it never touches (an allocator's pad
    /// pages: `Workload::untouched_pages`), as 512-bit masks by 2 MiB
    /// region, regions in order. A system may leave them unbacked where it
    /// would back a whole region (perforated pages' unallocated holes).
    pub untouched: Vec<(u64, [u64; 8])>,
    /// The files it reads, each through a read-only window
    /// (`os::page_cache`).
    pub files: Vec<super::FileWindow>,
}

/// A paging system: what backs a fault, and what happens to its mappings.
pub trait System: std::fmt::Debug + Send {
    /// Its name in `os.systems` (and the prefix of its statistics).
    fn name(&self) -> &'static str;

    /// A process starts.
    fn spawn(&mut self, _k: &mut Kernel, _asid: Asid, _spec: &ProcessSpec) {}

    /// Backs the fault, or declines (`Ok(None)`): the next system of the
    /// chain tries. An error ends the run (no memory left, a bad access).
    fn fault(&mut self, _k: &mut Kernel, _f: &Fault) -> Result<Option<FaultOutcome>> {
        Ok(None)
    }

    /// A 4 KiB frame the kernel needs for process `asid` (a page-cache
    /// page), chosen as this system's 4 KiB fault would choose it, with
    /// `owner`: `Ok(None)` leaves it to the next system and finally to the
    /// buddy allocator (`Kernel::alloc_page_for`).
    fn alloc_page(&mut self, _k: &mut Kernel, _asid: Asid, _owner: FrameOwner) -> Result<Option<Pfn>> {
        Ok(None)
    }

    /// A VMA was mapped (after it is in the process's tree).
    fn mmap(&mut self, _k: &mut Kernel, _asid: Asid, _start: VirtAddr, _end: VirtAddr, _name: &str) {}

    /// [start, end) is about to be unmapped; its mappings are still there.
    fn before_unmap(&mut self, _k: &mut Kernel, _asid: Asid, _start: VirtAddr, _end: VirtAddr) {}

    /// A user page of `size` at `vaddr` left the page table during an
    /// unmap: take its frames back (`true`), or leave them to the next
    /// system and finally to the buddy allocator (`false`).
    fn frame_freed(&mut self, _k: &mut Kernel, _vaddr: VirtAddr, _frame: Pfn, _size: PageSize) -> bool {
        false
    }

    /// [start, end) was unmapped (its frames freed or taken back).
    fn after_unmap(&mut self, _k: &mut Kernel, _asid: Asid, _start: VirtAddr, _end: VirtAddr) {}

    /// [start, end) is about to change permissions.
    fn protect(&mut self, _k: &mut Kernel, _asid: Asid, _start: VirtAddr, _end: VirtAddr) {}

    /// Compaction asks whether the 4 KiB page at `vpn`, mapped in `pt`,
    /// may move to another frame.
    fn may_migrate(&self, _pt: &PageTable, _vpn: Vpn) -> bool {
        true
    }

    /// The colors it places frames by, when they are its own rather than
    /// the kernel's map (COPLACE's host colors): what a policy that keeps
    /// placement (eKSM, eBal) reads through [`Kernel::placement_colors`].
    fn placement_colors(&self) -> Option<&crate::hw::cache::ColorMap> {
        None
    }

    /// Its statistics, under its own prefix (names other systems use stay
    /// theirs). Reported over the registry's zeros (see
    /// `systems::Registration::idle_stats`).
    fn report(&self, _k: &Kernel, _out: &mut Stats) {}

    /// Zeroes its counters (the end of warm-up); its state stays.
    fn reset_stats(&mut self) {}
}

/// A daemon's wake-ups on the simulated clock: one every `sleep_ms`, the
/// first after one sleep (khugepaged's `scan_sleep_millisecs`, ksmd's
/// `sleep_millisecs`).
#[derive(Debug, Clone, Copy)]
pub struct WakeClock {
    period: f64,
    next: f64,
}

impl WakeClock {
    /// Every `sleep_ms` milliseconds of a core at `freq_ghz`, in cycles.
    pub fn every_ms(sleep_ms: f64, freq_ghz: f64) -> Self {
        let period = sleep_ms * 1e6 * freq_ghz;
        WakeClock { period, next: period }
    }

    /// Whether a wake-up is due at `now` (cycles); if so, the clock moves
    /// to the next one. A zero period would wake forever: once per call.
    pub fn due(&mut self, now: f64) -> bool {
        if now < self.next {
            return false;
        }
        self.next = if self.period > 0.0 { self.next + self.period } else { now + 1.0 };
        true
    }
}

/// Background work that runs when the simulated clock reaches its time.
pub trait Daemon: std::fmt::Debug + Send {
    fn name(&self) -> &'static str;

    /// Runs every wake-up due by `now` (cycles). What it costs the
    /// workloads are its shootdowns, queued in the kernel.
    fn run_due(&mut self, k: &mut Kernel, now: f64);

    /// The run ended (`Simulation::finish`): last work, e.g. writing
    /// what the run profiled. An error fails the run's end.
    fn finish(&mut self, _k: &mut Kernel) -> Result<()> {
        Ok(())
    }

    fn report(&self, _out: &mut Stats) {}

    fn reset_stats(&mut self) {}
}
