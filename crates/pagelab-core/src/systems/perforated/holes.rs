//! The fragmentation scenario perforated pages are evaluated under, and
//! the bits of a region's holes: `phys::holes`, where the scenario also
//! serves other choices of pages (a workload's shared pages).

pub use crate::phys::holes::{count, filter_of, is_hole, set_hole, HoleBits, HoleScenario};
