//! Hardware: layer 3. Caches, their prefetchers, TLBs, page-walk caches and
//! DRAM's banks and row buffers. These models know
//! nothing of page tables or policies; the walker that joins them to the
//! page tables is in `engine::mmu`.

pub mod cache;
pub mod core_stats;
pub mod dram;
pub mod lru_array;
pub mod lru_map;
pub mod nested_tlb;
pub mod prefetch;
pub mod pwc;
pub mod refs;
pub mod set_assoc;
pub mod tlb;
