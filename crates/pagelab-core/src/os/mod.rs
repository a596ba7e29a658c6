//! The OS: layer 5. The [`Kernel`] keeps the mechanism (physical memory,
//! processes, VMAs and page tables, the shootdown queue, fault costs, the
//! shared counters); paging systems plug into it through the [`System`]
//! hooks and background work through [`Daemon`] (`system.rs`). The
//! systems themselves live in `crate::systems`, one module per system.
//! The hardware is reached only through narrow interfaces: the color of a
//! frame (`hw::cache::ColorMap`) and the queue of TLB shootdowns the engine
//! drains after every call.

mod color_pool;
mod compaction;
mod config;
mod fault;
mod file_fault;
mod kernel;
pub mod page_cache;
pub mod stats;
pub mod system;
pub mod tiering;

pub use color_pool::ColorPool;
pub use config::{AutoVma, FaultCosts, FragPattern, FragPlacement, FragmentationConfig};
pub use fault::{Fault, FaultKind, FaultOutcome, AUTO_VMA_NAME};
pub use kernel::{Boot, HostView, Kernel, Process, Shootdown};
pub use page_cache::{FileWindow, PageCache, PAGE_CACHE_POOL};
pub use stats::OsStats;
pub use system::{Daemon, ProcessSpec, System, WakeClock};
pub use tiering::Migration;
