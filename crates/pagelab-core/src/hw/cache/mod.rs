//! Data caches: physically indexed, set-associative, write-back and
//! write-allocate, 64-byte lines by default.
//!
//! - [`config`]: `machine.cache` (levels, policies, slices, way masks).
//! - [`replacement`]: LRU, FIFO, random, SRRIP, one byte per way.
//! - [`slice`](mod@slice): which LLC slice a line lives in (Intel hash, modulo).
//! - [`standin`]: the stand-in slice hash for any slice count.
//! - [`level`]: [`Cache`], one level of one core (or the shared LLC).
//! - [`hierarchy`]: [`CacheHierarchy`], L1D/L1I/L2 per core plus the LLC,
//!   non-inclusive (pycachesim's model) or inclusive, the LLC filled on a
//!   miss or by the L2's victims (`hierarchy/victim.rs`).
//! - [`stats`]: counters per core and level ([`CacheStats`]).
//! - [`color`]: page colors of the LLC ([`ColorMap`]) for coloring policies.
//!
//! The engine calls [`CacheHierarchy::access`] per physical reference
//! (walk references included) and charges [`CacheHierarchy::latency`] of the
//! returned [`HitLevel`]; calling [`CacheHierarchy::prefetch`] a few
//! references ahead hides the host's misses on the simulated tag arrays.

pub mod color;
pub mod config;
pub mod hierarchy;
pub mod level;
pub mod replacement;
pub mod slice;
pub mod standin;
pub mod stats;

#[cfg(test)]
mod crosscheck;

pub use color::{nr_page_colors, ColorMap};
pub use config::{CacheConfig, CacheHierarchyConfig, Geometry, L1iConfig, LlcConfig};
pub use hierarchy::{CacheHierarchy, HitLevel};
pub use level::{Cache, Evicted};
pub use replacement::ReplacementKind;
pub use slice::SliceHash;
pub use stats::{CacheStats, Level, LevelStats, RefKind};
