//! pagelab-core: the simulator behind pagelab.
//!
//! Layers (a module uses only those listed before it):
//! 1. [`units`], [`error`]: typed addresses, page sizes, orders, errors.
//! 2. [`phys`]: frames and their owners, the buddy allocator, pageblocks and
//!    migratetypes, fragmentation metrics and injection, compaction.
//! 3. [`hw`]: caches, TLBs, page-walk caches, the page walker.
//! 4. [`paging`]: page-table entries and radix tables in simulated memory,
//!    VMAs, address spaces.
//! 5. [`policy`]: what backs a fault (base, thp, hugetlb, coloring,
//!    bin-hopping) and the daemons (khugepaged).
//! 6. [`engine`]: cores, interleaving, the timing model, statistics.
//! 7. [`config`], [`workload`], [`trace`]: configuration, workload generators
//!    and trace readers/writers, read by the front (the Python package).
//!
//! [`systems`] holds one folder per paper's system; its modules span the
//! layers, each stating its own. [`virt`] (the hypervisor: a second kernel
//! whose VM process's page table is the EPT) sits after the systems and
//! before the workloads. ARCHITECTURE.md has the full, checked order.
#![warn(missing_debug_implementations)]

pub mod config;
pub mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod hostmem;
pub mod hw;
pub mod os;
pub mod outfile;
pub mod paging;
pub mod phys;
pub mod stat;
pub mod systems;
pub mod trace;
pub mod units;
pub mod virt;
pub mod workload;

pub use error::{Error, Result};
