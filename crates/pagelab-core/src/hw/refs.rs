//! The buffer of physical references the translation stage hands to the
//! caches: hardware data (physical addresses and the caches' reference
//! kinds), kept at the hardware layer so that the engine's core and MMU and
//! a system's walk step (`systems::chp::walk`) all fill it without
//! importing each other.

use crate::units::PhysAddr;

/// What a physical reference is: the caches' own kind (load, store, walk,
/// instruction fetch), also what `--export-phys` writes.
pub use crate::hw::cache::RefKind;

/// The references of one quantum, in program order: walk references
/// before the data reference of the access that caused them. Each is one
/// word, its kind in the top two bits above the physical address (one
/// push per reference: the translation stage makes several per access).
#[derive(Debug, Default)]
pub struct RefBuf {
    refs: Vec<u64>,
}

/// Where a reference's kind sits in its word (physical addresses stay far
/// below 2^62: memory is at most 1 TiB).
const KIND_SHIFT: u32 = 62;
const ADDR_MASK: u64 = (1 << KIND_SHIFT) - 1;

impl RefBuf {
    #[inline]
    pub fn push(&mut self, addr: PhysAddr, kind: RefKind) {
        debug_assert!(addr.raw() <= ADDR_MASK);
        self.refs.push(addr.raw() | (kind.index() as u64) << KIND_SHIFT);
    }
    pub fn clear(&mut self) {
        self.refs.clear();
    }
    pub fn len(&self) -> usize {
        self.refs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
    /// The physical address and kind of reference `j`.
    #[inline]
    pub fn get(&self, j: usize) -> (u64, RefKind) {
        unpack(self.refs[j])
    }
    /// The address of reference `j`, if there is one (a lookahead).
    #[inline]
    pub fn addr_at(&self, j: usize) -> Option<u64> {
        self.refs.get(j).map(|&r| r & ADDR_MASK)
    }
    /// The kind of every reference, in order.
    #[inline]
    pub fn kinds(&self) -> impl Iterator<Item = RefKind> + '_ {
        self.refs.iter().map(|&r| RefKind::ALL[(r >> KIND_SHIFT) as usize])
    }
}

#[inline]
fn unpack(r: u64) -> (u64, RefKind) {
    (r & ADDR_MASK, RefKind::ALL[(r >> KIND_SHIFT) as usize])
}
