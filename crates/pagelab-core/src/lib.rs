//! pagelab-core: the simulator behind pagelab.
//!
//! Layers (a module uses only its own and those listed before it; the
//! order is checked by `tests/layers.rs`, and ARCHITECTURE.md has it with
//! a line per module):
//! 1. [`units`], [`stat`], [`error`], [`hostmem`], [`outfile`]: typed
//!    addresses and sizes, the flat statistics and their declarations,
//!    errors, every file pagelab writes.
//! 2. [`phys`]: frames and their owners, the buddy allocator, pageblocks
//!    and migratetypes, fragmentation, compaction, tiers.
//! 3. [`hw`]: caches, prefetchers, DRAM's banks, TLBs, page-walk caches,
//!    the nested TLB.
//! 4. [`paging`]: page-table entries and radix tables in simulated memory,
//!    VMAs, address spaces, the context of a system's walk step.
//! 5. [`os`]: the kernel, its extension points (`System`, `Daemon`).
//! 6. [`systems`]: one folder per paging system, and the registry.
//! 7. [`virt`]: the hypervisor (a second kernel whose VM process's page
//!    table is the EPT) and its policies' interface.
//! 8. [`workload`]: workload generators.
//! 9. [`trace`]: trace readers and writers.
//! 10. [`config`]: the configuration tree, read by the front.
//! 11. [`engine`]: cores, the walkers, the timing models, statistics.
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
