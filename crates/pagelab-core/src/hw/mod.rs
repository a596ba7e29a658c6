//! Hardware: layer 3. Caches, their prefetchers, TLBs and page-walk caches. These models know
//! nothing of page tables or policies; the walker that joins them to the
//! page tables is in `engine::mmu`.

pub mod cache;
pub mod core_stats;
pub mod lru_array;
pub mod lru_map;
pub mod nested_tlb;
pub mod prefetch;
pub mod pwc;
pub mod refs;
pub mod set_assoc;
pub mod tlb;
