//! Paging: layer 4. Page-table entries, radix tables in simulated memory,
//! VMAs and address spaces. Mechanism only: which frames back a fault is
//! the policy's choice (layer 5).

pub mod address_space;
pub mod leaf_ext;
pub mod nested_walk;
pub mod pagetable;
pub mod pte;
pub mod vma;

pub use address_space::AddressSpace;
pub use pagetable::{ContigCounts, LeafSlot, Mapping, NodeId, PageTable, CONTIG_ENTRIES};
pub use pte::Pte;
pub use vma::{Vma, VmaTree};
