//! The buffer of physical references the translation stage hands to the
//! caches: hardware data (physical addresses and the caches' reference
//! kinds), kept at the hardware layer so that the engine's core and MMU and
//! a system's walk step (`systems::chp::walk`) all fill it without
//! importing each other.

use crate::units::PhysAddr;

/// What a physical reference is: the caches' own kind (load, store, walk,
/// instruction fetch), also what `--export-phys` writes.
pub use crate::hw::cache::RefKind;

/// A reference's tag in the buffer: the caches' kind, and for a walk
/// reference under virtualization which dimension read it. The caches see
/// both walk dimensions as [`RefKind::Walk`]; the tag tells them apart for
/// whoever reads the buffer ([`RefBuf::tag`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefTag {
    Load,
    Store,
    /// A native walk reference (one dimension).
    Walk,
    IFetch,
    /// A 2D walk's read of a guest page-table entry (at its host-physical
    /// address).
    GuestWalk,
    /// A 2D walk's read of an EPT entry.
    EptWalk,
}

impl RefTag {
    /// What the caches see.
    pub const fn kind(self) -> RefKind {
        match self {
            RefTag::Load => RefKind::Load,
            RefTag::Store => RefKind::Store,
            RefTag::Walk | RefTag::GuestWalk | RefTag::EptWalk => RefKind::Walk,
            RefTag::IFetch => RefKind::IFetch,
        }
    }

    /// The walk dimension's code beside the kind: 0 for everything but a
    /// 2D walk's references.
    const fn dimension(self) -> u64 {
        match self {
            RefTag::GuestWalk => 1,
            RefTag::EptWalk => 2,
            _ => 0,
        }
    }
}

impl From<RefKind> for RefTag {
    fn from(kind: RefKind) -> RefTag {
        [RefTag::Load, RefTag::Store, RefTag::Walk, RefTag::IFetch][kind.index()]
    }
}

/// The references of one quantum, in program order: walk references
/// before the data reference of the access that caused them. Each is one
/// word: the caches' kind in the top two bits, a 2D walk reference's
/// dimension in the two below, the physical address under them (one push
/// per reference: the translation stage makes several per access). The
/// kind keeps its own field, so the caches' per-reference decoding is one
/// shift, as before the dimension existed.
#[derive(Debug, Default)]
pub struct RefBuf {
    refs: Vec<u64>,
}

/// Where a reference's kind and walk dimension sit in its word (physical
/// addresses stay far below 2^60: memory is at most 1 TiB).
const KIND_SHIFT: u32 = 62;
const DIM_SHIFT: u32 = 60;
const ADDR_MASK: u64 = (1 << DIM_SHIFT) - 1;

impl RefBuf {
    #[inline]
    pub fn push(&mut self, addr: PhysAddr, kind: RefKind) {
        debug_assert!(addr.raw() <= ADDR_MASK);
        self.refs.push(addr.raw() | (kind.index() as u64) << KIND_SHIFT);
    }
    /// A reference with its full tag (a 2D walk's references).
    #[inline]
    pub fn push_tagged(&mut self, addr: PhysAddr, tag: RefTag) {
        debug_assert!(addr.raw() <= ADDR_MASK);
        self.refs.push(addr.raw() | (tag.kind().index() as u64) << KIND_SHIFT | tag.dimension() << DIM_SHIFT);
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
    /// The full tag of reference `j`.
    pub fn tag(&self, j: usize) -> RefTag {
        let r = self.refs[j];
        match (r >> DIM_SHIFT) & 3 {
            1 => RefTag::GuestWalk,
            2 => RefTag::EptWalk,
            _ => RefTag::from(RefKind::ALL[(r >> KIND_SHIFT) as usize]),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_walk_dimensions_reach_the_caches_as_walks_and_stay_apart_in_the_buffer() {
        let mut refs = RefBuf::default();
        let top = PhysAddr::new((1 << 40) - 64);
        refs.push(top, RefKind::Store);
        refs.push_tagged(top, RefTag::GuestWalk);
        refs.push_tagged(PhysAddr::new(8), RefTag::EptWalk);
        assert_eq!(refs.get(0), (top.raw(), RefKind::Store));
        assert_eq!(refs.get(1), (top.raw(), RefKind::Walk));
        assert_eq!(refs.get(2), (8, RefKind::Walk));
        assert_eq!([refs.tag(0), refs.tag(1), refs.tag(2)], [RefTag::Store, RefTag::GuestWalk, RefTag::EptWalk]);
        assert_eq!(refs.kinds().collect::<Vec<_>>(), [RefKind::Store, RefKind::Walk, RefKind::Walk]);
        assert_eq!(RefTag::from(RefKind::IFetch).kind(), RefKind::IFetch);
    }
}
