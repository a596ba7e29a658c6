//! The hardware extensions of the simulated cores, made by the registry
//! from the systems' lines that name one (`hw VARIANT = TYPE`, a
//! `paging::leaf_ext::LeafExtension`): `emit_hardware!` numbers every
//! system's L2 TLB entry kinds once and checks them and the systems'
//! page-table software bits for clashes (at compile time), and makes
//!
//! - `ExtKind`, the enum of every owner's payload, and `TlbExtensions`,
//!   the owners' per-core state side by side with one side table of
//!   `ExtKind` by L2 slot (a hit loads its payload with one indexed copy,
//!   whatever its kind);
//! - the walkers' one jump to a system's code for each software bit:
//!   `walk_leaf_ext` natively, and in a VM `walk2d_leaf_ext` at a guest
//!   table, `ept_leaf_ext` at an EPT entry, `combined_over_host_ext`,
//!   `dirty_assist_leaf_ext_2d`, `push_zeroed_leaf`; and what the MMU asks
//!   of a kind after a walk or an L2 hit (`fill_ext_after_walk`,
//!   `resolve_ext`, in a VM `resolve_ext_2d`).
//!
//! All of it is cold code: a plain page's path tests one kind tag (or one
//! set of software bits) and never comes here.

use crate::hw::tlb::{EntryKind, ExtPayload, TlbEntry, KIND_HOLE_BITMAP, KIND_PAGE};
use crate::paging::pte::{SoftBit, LEAF_EXT};

/// An owner's entry as the TLB holds it (`kind`: the owner's variant).
pub fn wrap<P: ExtPayload, Q: ExtPayload>(e: TlbEntry<P>, kind: impl Fn(P) -> Q) -> TlbEntry<Q> {
    let kind = match e.kind {
        EntryKind::Page { pfn } => EntryKind::Page { pfn },
        EntryKind::Ext(p) => EntryKind::Ext(kind(p)),
    };
    TlbEntry { asid: e.asid, vbase: e.vbase, size: e.size, writable: e.writable, dirty: e.dirty, kind }
}

/// The TLB kind number of owner `owner`'s first kind: after the plain
/// page's, the kinds of the owners before it, in the registry's order.
pub const fn kind_base(counts: &[u8], owner: usize) -> u8 {
    let mut base = KIND_PAGE + 1;
    let mut i = 0;
    while i < owner {
        base += counts[i];
        i += 1;
    }
    base
}

/// Every owner's kinds fit between the plain page's number and the hole
/// bitmap's, and below 64 (the TLB tests resolving kinds in a 64-bit
/// mask).
pub const fn check_kinds(counts: &[u8]) {
    let end = kind_base(counts, counts.len()) as u16;
    assert!(end <= KIND_HOLE_BITMAP as u16 && end <= 64, "too many TLB entry kinds");
}

/// The resolving kinds' mask: owner `i`'s local mask `resolving[i]` at its
/// kinds' numbers.
pub const fn resolving_kinds(counts: &[u8], resolving: &[u64]) -> u64 {
    let mut mask = 0;
    let mut i = 0;
    while i < counts.len() {
        assert!(resolving[i] >> counts[i] == 0, "a resolving kind an owner does not have");
        mask |= resolving[i] << kind_base(counts, i);
        i += 1;
    }
    mask
}

/// A software bit's mask (0 for none).
pub const fn soft_mask(bit: Option<SoftBit>) -> u64 {
    match bit {
        Some(b) => b.mask,
        None => 0,
    }
}

/// The owners' software bits are leaf-extension bits of a PMD entry
/// (`pte::LEAF_EXT`, the bits the walker tests), one each, and no two
/// owners share one.
pub const fn check_soft_bits(bits: &[Option<SoftBit>]) {
    let mut seen = 0u64;
    let mut i = 0;
    while i < bits.len() {
        if let Some(b) = bits[i] {
            assert!(b.mask.count_ones() == 1, "a leaf extension's software bit is one bit");
            assert!(b.mask & LEAF_EXT == b.mask, "not one of the leaf-extension bits (pte::LEAF_EXT)");
            assert!(b.leaf_ext && b.levels.len() == 1 && b.levels[0] == 2, "a leaf extension's bit is a PMD's");
            assert!(b.mask & seen == 0, "two systems with one software bit");
            seen |= b.mask;
        }
        i += 1;
    }
}

/// The software bits of the owners for which `with[i]` holds.
pub const fn bits_where(bits: &[Option<SoftBit>], with: &[bool]) -> u64 {
    let mut mask = 0;
    let mut i = 0;
    while i < bits.len() {
        if with[i] {
            mask |= soft_mask(bits[i]);
        }
        i += 1;
    }
    mask
}

/// Makes the cores' hardware extensions from the registry's list of
/// owners: `NAME: VARIANT = TYPE` (the system's name, its `ExtKind`
/// variant, its `LeafExtension`).
macro_rules! emit_hardware {
    ([$($(#[$a:meta])* $name:ident: $variant:ident = $hw:ty,)*]) => {
        /// The payload of an L2 entry of an extension kind, by owner.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ExtKind {
            $($(#[$a])* $variant(<$hw as LeafExtension>::Payload),)*
        }

        /// The owners of extension kinds, in the registry's order.
        #[derive(Debug, Clone, Copy)]
        enum Owner {
            $($(#[$a])* $variant,)*
        }

        /// By owner: its number of kinds, its resolving kinds, its
        /// software bit, whether it has a guest step, an EPT step, its own
        /// zeroed frames.
        const KIND_COUNTS: &[u8] =
            cfg_array!(u8, 0, [$([$(#[$a])*] <$hw as LeafExtension>::KINDS.len() as u8,)*]);
        const OWNER_RESOLVING: &[u64] = cfg_array!(u64, 0, [$([$(#[$a])*] <$hw as LeafExtension>::RESOLVING,)*]);
        const OWNER_BITS: &[Option<$crate::paging::pte::SoftBit>] = cfg_array!(
            Option<$crate::paging::pte::SoftBit>,
            None,
            [$([$(#[$a])*] <$hw as LeafExtension>::SOFT_BIT,)*]
        );
        const OWNER_GUEST: &[bool] = cfg_array!(bool, false, [$([$(#[$a])*] <$hw as LeafExtension>::GUEST_STEP,)*]);
        const OWNER_EPT: &[bool] = cfg_array!(bool, false, [$([$(#[$a])*] <$hw as LeafExtension>::EPT_STEP,)*]);
        const OWNER_ZEROED: &[bool] =
            cfg_array!(bool, false, [$([$(#[$a])*] <$hw as LeafExtension>::OWN_ZEROED_FRAMES,)*]);
        const _: () = assert!(
            KIND_COUNTS.len() <= $crate::hw::core_stats::MAX_LEAF_EXTENSIONS,
            "more systems with hardware than CoreStats counts walks for"
        );
        const _: () = extensions::check_kinds(KIND_COUNTS);

        /// The core statistic each owner's walks are counted in (by owner,
        /// `CoreStats::leaf_ext_walks`), for the owners that count them.
        pub const LEAF_WALK_STATS: &[(usize, Option<&str>)] =
            cfg_array!((usize, Option<&str>), (0, None), [$([$(#[$a])*] (Owner::$variant as usize, <$hw as LeafExtension>::WALK_STAT),)*]);
        const _: () = extensions::check_soft_bits(OWNER_BITS);

        /// The guest leaf-extension bits the 2D walker has a step for: its
        /// one test at a guest table.
        pub const GUEST_LEAF_STEPS: u64 = extensions::bits_where(OWNER_BITS, OWNER_GUEST);
        /// The bits of an EPT PMD entry that make it a leaf extension,
        /// which the EPT walk tests beside the huge bit.
        pub const EPT_LEAF_STEPS: u64 = extensions::bits_where(OWNER_BITS, OWNER_EPT);
        /// The bits of a guest PTE page whose fault zeroes the owner's own
        /// frames.
        const ZEROED_STEPS: u64 = extensions::bits_where(OWNER_BITS, OWNER_ZEROED);

        impl Owner {
            /// Its software bit's mask (0: none).
            const fn bits(self) -> u64 {
                extensions::soft_mask(OWNER_BITS[self as usize])
            }
            /// The TLB's number of its first kind.
            const fn first_kind(self) -> u8 {
                extensions::kind_base(KIND_COUNTS, self as usize)
            }
        }

        impl ExtPayload for ExtKind {
            fn kind(&self) -> u8 {
                match self {
                    $($(#[$a])* ExtKind::$variant(p) => (const { Owner::$variant.first_kind() }) + p.kind(),)*
                }
            }
            #[inline]
            fn frame_of(&self, offset: u64) -> Pfn {
                match self {
                    $($(#[$a])* ExtKind::$variant(p) => p.frame_of(offset),)*
                }
            }
            fn l1_piece(&self) -> ReachSize {
                match self {
                    $($(#[$a])* ExtKind::$variant(p) => p.l1_piece(),)*
                }
            }
            fn l1_origin(&self, size: ReachSize) -> ReachSize {
                match self {
                    $($(#[$a])* ExtKind::$variant(p) => p.l1_origin(size),)*
                }
            }
        }

        /// The owners of the L2's extension kinds, with their state, and
        /// the side table of every kind's payload by L2 slot.
        #[derive(Debug, Clone, Default)]
        pub struct TlbExtensions {
            $($(#[$a])* pub $name: <$hw as LeafExtension>::State,)*
            /// The payload of the extension entry in each L2 slot (stale
            /// for other slots; empty until the first extension entry is
            /// cached).
            slots: Vec<ExtKind>,
        }

        impl TlbExtension for TlbExtensions {
            type Payload = ExtKind;
            const RESOLVING_KINDS: u64 = extensions::resolving_kinds(KIND_COUNTS, OWNER_RESOLVING);

            fn store(&mut self, slot: usize, slots: usize, p: &ExtKind) -> u32 {
                if self.slots.is_empty() {
                    self.slots = vec![*p; slots];
                }
                self.slots[slot] = *p;
                slot as u32
            }

            #[inline]
            fn load(&self, kind: u8, index: u32) -> ExtKind {
                let p = self.slots[index as usize];
                debug_assert_eq!(p.kind(), kind, "the payload of another kind in the slot");
                p
            }

            fn needs_resolution(&mut self, p: &ExtKind, offset: u64) -> bool {
                match p {
                    $($(#[$a])* ExtKind::$variant(q) => <$hw as LeafExtension>::needs_resolution(&mut self.$name, q, offset),)*
                }
            }

            fn reset_stats(&mut self) {
                $($(#[$a])* <$hw as LeafExtension>::reset_stats(&mut self.$name);)*
            }
        }

        $(
            $(#[$a])*
            impl Holds<<$hw as LeafExtension>::Payload, <$hw as LeafExtension>::State> for TlbExtensions {
                const OWNER: usize = Owner::$variant as usize;
                #[inline]
                fn state(&self) -> &<$hw as LeafExtension>::State {
                    &self.$name
                }
                #[inline]
                fn state_mut(&mut self) -> &mut <$hw as LeafExtension>::State {
                    &mut self.$name
                }
                #[inline]
                fn wrap(p: <$hw as LeafExtension>::Payload) -> ExtKind {
                    ExtKind::$variant(p)
                }
            }
        )*

        /// What an extension kind's walk hands the TLB.
        pub type ExtEntry = TlbEntry<ExtKind>;

        /// The hardware extensions of a core of a machine with these page
        /// colors; `sampling`: its L2 contents are sampled by kind (a
        /// system of the chain has `Caps::samples_l2_occupancy`).
        pub fn tlb_extensions(colors: &$crate::hw::cache::ColorMap, sampling: bool) -> TlbExtensions {
            TlbExtensions {
                $($(#[$a])* $name: <$hw as LeafExtension>::state(colors, sampling),)*
                slots: Vec::new(),
            }
        }

        /// The walk step of the leaf extension whose software bits (`bits`,
        /// of `pte::LEAF_EXT`) the PMD entry above `w.table` carries: the
        /// walker's one jump to a system's code. Returns the entry to cache.
        #[cold]
        #[inline(never)]
        pub fn walk_leaf_ext(bits: u64, w: &mut LeafWalk<'_, TlbExtensions>) -> ExtEntry {
            $(
                $(#[$a])*
                if bits == Owner::$variant.bits() {
                    return extensions::wrap(<$hw as LeafExtension>::walk(w), ExtKind::$variant);
                }
            )*
            unreachable!("no walk step for software bits {bits:#x}")
        }

        /// A store through a clean TLB entry of a leaf extension (its PTE's
        /// D bit is set already): what else the locked update sets.
        #[cold]
        #[inline(never)]
        pub fn dirty_assist_leaf_ext(bits: u64, pt: &mut PageTable, table: NodeId) {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::DIRTY_ASSIST && bits == Owner::$variant.bits() {
                    <$hw as LeafExtension>::dirty_assist(pt, table);
                }
            )*
        }

        /// The 2D walk step of the guest leaf extension whose software bits
        /// (`bits`, of [`GUEST_LEAF_STEPS`]) the guest PMD entry above
        /// `w.table` carries: the 2D walker's one jump to a system's code.
        #[cold]
        #[inline(never)]
        pub fn walk2d_leaf_ext<W: NestedWalk>(bits: u64, w: &mut LeafWalk2d<'_, W, TlbExtensions>) -> Step2d<ExtKind> {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::GUEST_STEP && bits & Owner::$variant.bits() != 0 {
                    let step = <$hw as LeafExtension>::walk2d(w);
                    return step.map_leaf(|e| extensions::wrap(e, ExtKind::$variant));
                }
            )*
            unreachable!("no 2D walk step for software bits {bits:#x}")
        }

        /// The EPT walk's step at an EPT PMD entry with bits `bits` (of
        /// [`EPT_LEAF_STEPS`]; `table` its table): the 4 KiB translation of
        /// `gfn`, or `None` for an EPT violation.
        #[cold]
        #[inline(never)]
        pub fn ept_leaf_ext(
            bits: u64,
            ept: &mut PageTable,
            table: NodeId,
            gfn: Gfn,
            write: bool,
            refs: &mut RefBuf,
            stats: &mut CoreStats,
        ) -> Option<NestedHit> {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::EPT_STEP && bits & Owner::$variant.bits() != 0 {
                    return <$hw as LeafExtension>::ept_leaf(ept, table, gfn, write, refs, stats);
                }
            )*
            unreachable!("no EPT step for software bits {bits:#x}")
        }

        /// A guest huge page whose data frame's EPT translation is 4 KiB,
        /// when the host's chain has leaf extensions on EPT leaves: the
        /// combined entry over a host page of such a kind (`perms`: its
        /// permission and dirtiness), or `None`.
        #[cold]
        #[inline(never)]
        pub fn combined_over_host_ext<W: NestedWalk>(
            w: &W,
            tag: Asid,
            vaddr: VirtAddr,
            data_gfn: Gfn,
            perms: (bool, bool),
        ) -> Option<ExtEntry> {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::EPT_STEP {
                    if let Some(e) = <$hw as LeafExtension>::combined_over_host(w, tag, vaddr, data_gfn, perms) {
                        return Some(extensions::wrap(e, ExtKind::$variant));
                    }
                }
            )*
            None
        }

        /// An access whose L2 entry `r.entry` cannot translate it alone
        /// (its lookup returned `TlbLookup::Resolve`, or
        /// `fill_ext_after_walk` `None`): the kind's owner finishes it.
        /// Returns the frame, or `None` for a fault.
        #[cold]
        #[inline(never)]
        pub fn resolve_ext(r: &mut Resolve<'_, TlbExtensions>) -> Option<Pfn> {
            match r.entry.kind {
                $(
                    $(#[$a])*
                    EntryKind::Ext(ExtKind::$variant(_)) if <$hw as LeafExtension>::RESOLVING != 0 => {
                        <$hw as LeafExtension>::resolve(r)
                    }
                )*
                _ => unreachable!("an entry that needs no resolution"),
            }
        }

        /// In a VM, an access whose combined L2 entry cannot translate it
        /// alone: the kind's owner finishes it, the EPT side lent as `r.w`.
        #[cold]
        #[inline(never)]
        pub fn resolve_ext_2d<W: NestedWalk>(r: &mut Resolve2d<'_, W, TlbExtensions>) -> Resolved2d<ExtKind> {
            match r.entry.kind {
                $(
                    $(#[$a])*
                    EntryKind::Ext(ExtKind::$variant(_)) if <$hw as LeafExtension>::RESOLVING != 0 => {
                        let resolved = <$hw as LeafExtension>::resolve_2d(r);
                        resolved.map_leaf(|e| extensions::wrap(e, ExtKind::$variant))
                    }
                )*
                _ => unreachable!("an entry that needs no resolution"),
            }
        }

        /// A store through a clean TLB entry of a guest leaf extension (the
        /// guest PTE's D bit is set already; `table` is its PTE page, whose
        /// software bits are `bits`): what else the locked update sets, in
        /// the guest's table and the EPT. Tagged `tag`, the entry may still
        /// be in `tlb`'s L2.
        #[cold]
        #[inline(never)]
        #[allow(clippy::too_many_arguments)] // one store's state, given to the owner as one context
        pub fn dirty_assist_leaf_ext_2d<W: NestedWalk>(
            bits: u64,
            w: &mut W,
            tlb: &Tlb<TlbExtensions>,
            pt: &mut PageTable,
            table: NodeId,
            tag: Asid,
            vaddr: VirtAddr,
        ) {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::DIRTY_ASSIST && bits & Owner::$variant.bits() != 0 {
                    let l2 = tlb.peek_l2(tag, vaddr);
                    let combined = l2.is_some_and(|e| matches!(e.kind, EntryKind::Ext(ExtKind::$variant(_))));
                    let state = &tlb.extensions().$name;
                    let mut d = DirtyAssist2d { w: &mut *w, pt: &mut *pt, table, vaddr, state, combined };
                    <$hw as LeafExtension>::dirty_assist_2d(&mut d);
                }
            )*
        }

        /// Adds the guest frames of the leaf a guest fault at `vaddr` made,
        /// which its handler zeroed, to `out`: the leaf's range, or a leaf
        /// extension's own frames. `table` is the last table on `vaddr`'s
        /// path: one array lookup of its bits for any other fault.
        #[inline]
        pub fn push_zeroed_leaf(pt: &PageTable, table: NodeId, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
            let bits = pt.table_leaf_ext(table);
            if bits & ZEROED_STEPS != 0 {
                push_zeroed_ext(bits, pt, vaddr, out);
            } else if let Some(m) = pt.lookup(vaddr) {
                out.push((Gfn::of_guest_kernel(m.frame), m.size.nr_pages()));
            }
        }

        #[cold]
        #[inline(never)]
        fn push_zeroed_ext(bits: u64, pt: &PageTable, vaddr: VirtAddr, out: &mut Vec<(Gfn, u64)>) {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::OWN_ZEROED_FRAMES && bits & Owner::$variant.bits() != 0 {
                    return <$hw as LeafExtension>::push_zeroed(pt, vaddr, out);
                }
            )*
        }

        /// After a walk gave `entry` (an extension kind's) for an access to
        /// `vaddr`: caches it and returns the frame, or `None` when the
        /// access needs [`resolve_ext`] (an owner's kind that may need
        /// resolution, which this access does: the entry is in the L2, the
        /// L1 is not filled).
        #[inline]
        pub fn fill_ext_after_walk(
            tlb: &mut Tlb<TlbExtensions>,
            entry: ExtEntry,
            vaddr: VirtAddr,
            instr: bool,
        ) -> Option<Pfn> {
            if let EntryKind::Ext(p) = entry.kind {
                if owner_resolves(&p) {
                    tlb.insert_l2(&entry);
                    let offset = vaddr.raw() & (entry.size.bytes() - 1);
                    if tlb.extensions_mut().needs_resolution(&p, offset) {
                        return None;
                    }
                    tlb.fill_l1(&entry, vaddr, instr);
                    return Some(entry.frame_of(vaddr));
                }
            }
            tlb.fill_after_walk(entry, vaddr, instr);
            Some(entry.frame_of(vaddr))
        }

        /// Whether `p`'s owner has kinds that may need resolution.
        #[inline]
        fn owner_resolves(p: &ExtKind) -> bool {
            match p {
                $($(#[$a])* ExtKind::$variant(_) => <$hw as LeafExtension>::RESOLVING != 0,)*
            }
        }

        /// One sample of the L2's contents for each owner that samples
        /// them (once per quantum: never per access).
        #[inline]
        pub fn sample_tlb(tlb: &mut Tlb<TlbExtensions>) {
            $(
                $(#[$a])*
                if <$hw as LeafExtension>::samples(&tlb.extensions().$name) {
                    sample_owner::<$hw>(tlb, Owner::$variant, |x| &mut x.$name);
                }
            )*
        }

        #[cold]
        #[inline(never)]
        fn sample_owner<H: LeafExtension>(
            tlb: &mut Tlb<TlbExtensions>,
            owner: Owner,
            state: fn(&mut TlbExtensions) -> &mut H::State,
        ) {
            let (first, count) = (owner.first_kind(), KIND_COUNTS[owner as usize]);
            let kinds: Vec<(u8, ReachSize)> = tlb.l2_kinds().collect();
            let mut own = kinds.into_iter().map(|(k, reach)| {
                let local = (first..first + count).contains(&k).then(|| k - first);
                (local, k == $crate::hw::tlb::KIND_HOLE_BITMAP, reach)
            });
            H::sample(state(tlb.extensions_mut()), &mut own);
        }

        /// The extensions' statistics over the cores given (one core's, or
        /// all of them).
        pub fn tlb_ext_stats<'a>(cores: impl Iterator<Item = &'a TlbExtensions>) -> Stats {
            let cores: Vec<&TlbExtensions> = cores.collect();
            let mut out = Stats::new();
            $(
                $(#[$a])*
                out.extend(<$hw as LeafExtension>::report(&cores.iter().map(|x| &x.$name).collect::<Vec<_>>()));
            )*
            out
        }
    };
}
