//! Colored Huge Pages (CHP): 2 MiB of virtual memory as 8 strided sub-mappings of chosen colors, walked and cached as one.

pub mod pagetable;
pub mod tlb;
pub mod walk;
