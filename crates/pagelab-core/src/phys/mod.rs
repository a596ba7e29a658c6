//! Physical memory: layer 2.
//!
//! - [`frame`]: who owns each 4 KiB frame ([`FrameOwner`], packed in a u64).
//! - [`migratetype`]: migratetypes, pageblocks and the fallback table.
//! - [`buddy`]: the buddy allocator ([`PhysMem`]), free lists per order and
//!   migratetype, fallback and pageblock stealing, as in mm/page_alloc.c.
//! - [`fragmentation`]: Linux's fragmentation and unusable-free-space
//!   indices, the CHP paper's F_i, and fragmentation injection.
//! - [`compaction`]: migrate and free scanners (mm/compaction.c); moving a
//!   page is left to a caller-given closure, since page tables live in a
//!   higher layer.
//! - [`faulty`]: faulty (retired) frames, which nothing allocates.
//! - [`tiers`]: memory tiers (`machine.memory.tiers`), the nodes of memory.
//! - [`holes`]: the holes scenario (which pages of which 2 MiB regions).
//!
//! This layer uses only [`crate::units`] and [`crate::error`].

mod bitmap;
pub mod buddy;
mod buddy_check;
pub mod compaction;
pub mod faulty;
pub mod fragmentation;
pub mod frame;
mod free_area;
pub mod holes;
pub mod migratetype;
pub mod snapshot;
pub mod tiers;

pub use buddy::{
    PhysMem, Stats, DEFAULT_MAX_ORDER, MAX_FRAMES, MAX_MAX_ORDER, MAX_ORDER_KEY, MEMORY_SIZE_KEY, MIN_MAX_ORDER,
};
pub use compaction::{compact, CompactionStats};
pub use faulty::{inject_faulty, is_faulty, FaultyGranularity};
pub use fragmentation::{
    fi, fi_from, fragmentation_index, inject, inject_placed, unusable_free_index, InjectReport, Pattern, Placement,
};
pub use frame::FrameOwner;
pub use migratetype::{Migratetype, NR_MIGRATETYPES, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
pub use tiers::{TierConfig, MAX_TIERS};
