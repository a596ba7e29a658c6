//! What a TLB entry translates, and the extension point for entry kinds
//! beyond a plain page.
//!
//! A plain page needs only its first frame. Other kinds (a colored huge
//! page's 8 sub-mapping frames; later a perforated page's filter, a hole
//! bitmap chunk, a coalesced translation) need more than fits in an L2
//! entry, and belong to the system whose paper defines them, not to the
//! TLB. So an L2 entry keeps a kind tag and an index, and the kind's owner
//! ([`TlbExtension`], in the system's hardware module under `systems/`)
//! keeps the rest in a side table. The L2's hit path tests the tag and
//! calls the owner only for a tag other than a plain page, out of line;
//! the owner is a type parameter of the TLB, so nothing is dispatched
//! dynamically per access.

use super::key::ReachSize;
use crate::units::{Asid, Pfn, PhysAddr, VirtAddr, Vpn};

/// The kind tag of a plain page in an L2 entry; extension kinds use others.
pub const KIND_PAGE: u8 = 0;

/// The kind tag of an L2 entry that caches 32 bits of a perforated page's
/// hole bitmap (key class `KEY_CLASS_HOLE_BITMAP`, one entry per 32 pages,
/// the bits in the entry itself): not a translation, so no lookup for an
/// address finds it (Perforated Pages, IV-C).
pub const KIND_HOLE_BITMAP: u8 = u8::MAX;

/// Pages one cached hole-bitmap entry covers (32 bitmap bits per entry).
pub const BITMAP_CHUNK_PAGES: u64 = 32;

/// What an extension kind's walk hands the TLB for one translation (e.g.
/// a colored huge page's 8 frames), and how it translates.
pub trait ExtPayload: Copy + std::fmt::Debug + PartialEq + Eq {
    /// Which of its owner's kinds this is. A system's payload numbers its
    /// own kinds from 0; the payload the TLB holds (a `TlbExtension`'s,
    /// which numbers every system's kinds once) gives the L2 entry's kind
    /// tag (never [`KIND_PAGE`] or [`KIND_HOLE_BITMAP`]).
    fn kind(&self) -> u8;
    /// The 4 KiB frame at byte `offset` into the translation.
    fn frame_of(&self, offset: u64) -> Pfn;
    /// The reach of the L1 entry an access through this translation
    /// installs (the L1 holds plain pages only).
    fn l1_piece(&self) -> ReachSize;
    /// The origin an L1 piece built from this translation (of reach
    /// `size`) remembers: what a shootdown of one of its pages drops with
    /// it. By default the whole translation (INVLPG of a fractured page);
    /// a kind whose pieces are pages of their own says so.
    fn l1_origin(&self, size: ReachSize) -> ReachSize {
        size
    }
}

/// The owner of the L2's extension kinds: keeps their payloads beside the
/// L2 array, by the entry's index. A system's hardware module implements
/// it; `systems::TlbExtensions` names the one the simulated cores have.
pub trait TlbExtension: Clone + std::fmt::Debug {
    type Payload: ExtPayload;
    /// Bit `k` set when an entry of kind `k` may need resolution
    /// ([`TlbExtension::needs_resolution`]): the hit path asks only those
    /// (a constant test, so the other kinds' hits cost what they did).
    const RESOLVING_KINDS: u64 = 0;
    /// Keeps `p` for the entry just placed in L2 slot `slot` (of `slots`
    /// in all); returns the index the entry carries.
    fn store(&mut self, slot: usize, slots: usize, p: &Self::Payload) -> u32;
    /// The payload of the entry of kind `kind` carrying `index`.
    fn load(&self, kind: u8, index: u32) -> Self::Payload;
    /// An L2 hit on `p` for an access at byte `offset` into it: whether
    /// the entry alone cannot translate it (a perforated page whose filter
    /// says the 256 KiB region may hold holes). Then the lookup returns
    /// [`TlbLookup::Resolve`] without filling the L1, and the MMU finishes
    /// the translation through the kind's owner. Called on the L2 hit of
    /// an extension kind only (cold code); the owner may count it.
    fn needs_resolution(&mut self, _p: &Self::Payload, _offset: u64) -> bool {
        false
    }
    /// Zeroes whatever the owner counts (the end of warm-up).
    fn reset_stats(&mut self) {}
}

/// A TLB extension that holds one system's kinds (payload `P`) beside the
/// others', with that system's per-core state `S`: what a system's
/// hardware code is generic over, so that it names no other system and
/// not the registry that puts them together.
pub trait Holds<P: ExtPayload, S>: TlbExtension {
    /// The system's index among the owners (what its walks are counted
    /// by: `CoreStats::leaf_ext_walks`).
    const OWNER: usize;
    fn state(&self) -> &S;
    fn state_mut(&mut self) -> &mut S;
    /// `p` as this extension's payload.
    fn wrap(p: P) -> Self::Payload;
    /// An entry of the system's as this extension's.
    fn wrap_entry(e: TlbEntry<P>) -> TlbEntry<Self::Payload> {
        let kind = match e.kind {
            EntryKind::Page { pfn } => EntryKind::Page { pfn },
            EntryKind::Ext(p) => EntryKind::Ext(Self::wrap(p)),
        };
        TlbEntry { asid: e.asid, vbase: e.vbase, size: e.size, writable: e.writable, dirty: e.dirty, kind }
    }
}

/// A TLB without extension kinds: every entry is a plain page.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExtension;

/// The payload of [`NoExtension`]: there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoPayload {}

impl ExtPayload for NoPayload {
    fn kind(&self) -> u8 {
        match *self {}
    }
    fn frame_of(&self, _: u64) -> Pfn {
        match *self {}
    }
    fn l1_piece(&self) -> ReachSize {
        match *self {}
    }
}

impl TlbExtension for NoExtension {
    type Payload = NoPayload;
    fn store(&mut self, _: usize, _: usize, p: &NoPayload) -> u32 {
        match *p {}
    }
    fn load(&self, kind: u8, _: u32) -> NoPayload {
        unreachable!("an entry of kind {kind} in a TLB without extensions")
    }
}

/// What an L2 TLB entry translates, beyond its tag and permissions.
///
/// Later kinds are payloads of their systems' extensions:
/// - perforated pages (IV-B..D): a 2 MiB entry whose 8-bit filter says
///   which 256 KiB regions may hold holes; a hit in a filtered region
///   generates a 4 KiB L1 entry, otherwise the hole bitmap must be
///   consulted before filling. Hole entries are ordinary 4 KiB pages (they
///   win over the 2 MiB entry because smaller reaches are probed first);
///   hole-bitmap chunks go under key class `KEY_CLASS_HOLE_BITMAP`.
/// - coalesced translations (Elastic Translations' contiguous bit): plain
///   pages of reach 64 KiB or 32 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind<P = NoPayload> {
    /// A regular page of the entry's reach; `pfn` is its first frame.
    Page { pfn: Pfn },
    /// An extension kind, with what its owner keeps.
    Ext(P),
}

/// One L2 TLB entry (and what a walk returns to be cached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbEntry<P = NoPayload> {
    pub asid: Asid,
    /// First virtual page, aligned to `size`.
    pub vbase: Vpn,
    pub size: ReachSize,
    pub writable: bool,
    pub dirty: bool,
    pub kind: EntryKind<P>,
}

impl<P: ExtPayload> Default for TlbEntry<P> {
    fn default() -> Self {
        TlbEntry::page(0, Vpn::new(0), ReachSize::Size4K, Pfn::new(0), false, false)
    }
}

impl<P: ExtPayload> TlbEntry<P> {
    pub fn page(asid: Asid, vbase: Vpn, size: impl Into<ReachSize>, pfn: Pfn, writable: bool, dirty: bool) -> Self {
        let size = size.into();
        debug_assert!(vbase.is_aligned(size.nr_pages()), "{vbase:?} not aligned to {size:?}");
        debug_assert!(pfn.is_aligned(size.nr_pages()), "{pfn:?} not aligned to {size:?}");
        TlbEntry { asid, vbase, size, writable, dirty, kind: EntryKind::Page { pfn } }
    }

    /// Does this entry translate virtual page `vpn`?
    #[inline]
    pub fn covers(&self, vpn: Vpn) -> bool {
        vpn.raw() >= self.vbase.raw() && vpn.raw() - self.vbase.raw() < self.size.nr_pages()
    }

    /// Does this entry translate any page of `[start, end)`?
    pub fn overlaps(&self, start: Vpn, end: Vpn) -> bool {
        self.vbase.raw() < end.raw() && start.raw() < self.vbase.raw() + self.size.nr_pages()
    }

    /// The 4 KiB frame that backs `vaddr` (which the entry must cover).
    #[inline]
    pub fn frame_of(&self, vaddr: VirtAddr) -> Pfn {
        debug_assert!(self.covers(vaddr.vpn()), "{vaddr:?} outside {self:?}");
        match self.kind {
            EntryKind::Page { pfn } => pfn.add(vaddr.vpn().offset_from(self.vbase)),
            EntryKind::Ext(p) => p.frame_of(vaddr.raw() & (self.size.bytes() - 1)),
        }
    }

    /// The translation of `vaddr` by this entry.
    #[inline]
    pub fn translate(&self, vaddr: VirtAddr) -> Translation {
        Translation { pfn: self.frame_of(vaddr), size: self.size, writable: self.writable, dirty: self.dirty }
    }

    /// The origin an L1 piece built from this entry remembers.
    #[inline]
    pub fn l1_origin(&self) -> ReachSize {
        match self.kind {
            EntryKind::Page { .. } => self.size,
            EntryKind::Ext(p) => p.l1_origin(self.size),
        }
    }

    /// The reach of the L1 entry an access through this entry installs.
    #[inline]
    pub fn l1_piece(&self) -> ReachSize {
        match self.kind {
            EntryKind::Page { .. } => self.size,
            EntryKind::Ext(p) => p.l1_piece(),
        }
    }
}

/// What a walk found for a plain page, as the fill after the walk takes
/// it: the page's first frame, and its reach and permission bits packed in
/// one word. Two words pass in registers. A whole [`TlbEntry`] went through
/// memory, and the host could not forward the caller's stores of its small
/// fields to the fill's loads of them, which LLVM had merged at other
/// widths: a stall on every walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLeaf {
    pub pfn: Pfn,
    /// The reach (bits 0..7), then [`LEAF_WRITABLE`] and [`LEAF_DIRTY`].
    bits: u64,
}

const LEAF_WRITABLE: u64 = 1 << 8;
const LEAF_DIRTY: u64 = 1 << 9;

impl PageLeaf {
    #[inline]
    pub fn new(pfn: Pfn, reach: ReachSize, writable: bool, dirty: bool) -> Self {
        let bits = reach as u64 | if writable { LEAF_WRITABLE } else { 0 } | if dirty { LEAF_DIRTY } else { 0 };
        PageLeaf { pfn, bits }
    }
    #[inline]
    pub fn reach(self) -> ReachSize {
        ReachSize::from_index(self.bits as u8)
    }
    #[inline]
    pub fn writable(self) -> bool {
        self.bits & LEAF_WRITABLE != 0
    }
    #[inline]
    pub fn dirty(self) -> bool {
        self.bits & LEAF_DIRTY != 0
    }
    /// The 4 KiB frame that backs `vaddr` (in the page).
    #[inline]
    pub fn frame_of(self, vaddr: VirtAddr) -> Pfn {
        self.pfn.add(vaddr.vpn().raw() & (self.reach().nr_pages() - 1))
    }
    /// The entry an access to `vaddr` of address space `asid` caches.
    #[inline]
    pub fn entry<P: ExtPayload>(self, asid: Asid, vaddr: VirtAddr) -> TlbEntry<P> {
        let reach = self.reach();
        let vbase = vaddr.align_down(reach.bytes()).vpn();
        TlbEntry::page(asid, vbase, reach, self.pfn, self.writable(), self.dirty())
    }
}

/// What a TLB hit yields for one access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// The 4 KiB frame backing the accessed address.
    pub pfn: Pfn,
    /// Reach of the entry that hit (an L1 entry built from a larger page
    /// has the reach of its L1 array).
    pub size: ReachSize,
    pub writable: bool,
    pub dirty: bool,
}

impl Translation {
    #[inline]
    pub fn paddr(&self, vaddr: VirtAddr) -> PhysAddr {
        self.pfn.addr().add(vaddr.page_offset())
    }
}

/// Outcome of a TLB lookup: which level answered, and the translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlbLookup {
    L1(Translation),
    /// Missed every L1 array, hit the L2 (the L1 has already been filled).
    L2(Translation),
    /// Missed everywhere: walk, then `Tlb::fill_after_walk`.
    Miss,
    /// Hit an L2 entry of an extension kind that cannot translate this
    /// address alone ([`TlbExtension::needs_resolution`]); nothing is
    /// filled: the MMU finishes the translation (`systems::resolve_ext`).
    Resolve,
}

impl TlbLookup {
    pub fn translation(&self) -> Option<Translation> {
        match self {
            TlbLookup::L1(t) | TlbLookup::L2(t) => Some(*t),
            TlbLookup::Miss | TlbLookup::Resolve => None,
        }
    }
}
