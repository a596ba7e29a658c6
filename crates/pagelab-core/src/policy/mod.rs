//! Policies and daemons: layer 5. The [`Kernel`] owns physical memory and
//! the processes; a [`Policy`] decides what backs each page fault; daemons
//! (khugepaged) run on the simulated clock. The hardware is reached only
//! through narrow interfaces: the color of a frame (`hw::cache::ColorMap`)
//! and the queue of TLB shootdowns the engine drains after every call.

mod base;
mod bin_hopping;
mod chp;
mod coloring;
mod compaction;
mod fault;
mod hugetlb;
mod kernel;
mod khugepaged;
mod stats;
mod thp;

pub use chp::{ChpGeometry, ChpState};
pub use coloring::ColorPool;
pub use fault::AUTO_VMA_NAME;
pub use kernel::{Kernel, Process, Shootdown};
pub use khugepaged::ScanResult;
pub use stats::OsStats;

/// The fault-time policy, chosen by `os.policy`; static dispatch (one
/// match per fault, never per access).
#[derive(Debug)]
pub enum Policy {
    Base,
    Thp,
    Hugetlb(hugetlb::HugetlbPool),
    Coloring(ColorPool),
    BinHopping(ColorPool),
    Chp(ChpState),
}

/// What a fault installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A 4 KiB page from the buddy allocator.
    Base,
    /// A 4 KiB page of a chosen color.
    Colored,
    /// A transparent huge page.
    Thp,
    /// A hugetlb page of 2 MiB or 1 GiB.
    Hugetlb2M,
    Hugetlb1G,
    /// A colored huge page (all 512 pages of a 2 MiB region).
    Chp,
}
