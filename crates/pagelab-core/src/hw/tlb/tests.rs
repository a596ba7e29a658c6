//! The TLB's unit tests; those of Colored Huge Pages' entries are in
//! `systems::chp::tlb`, and the property test runs with the extension
//! kinds the simulated cores have (`systems::TlbExtensions`).

use super::*;
use crate::error::Error;
use crate::hw::set_assoc::{Replacement, INVALID_KEY};
use crate::units::Pfn;
use key::{key_asid, VPN_BITS};
use l1::{RegionCounts, REGION_BUCKETS};

/// Without extension kinds unless a test says otherwise.
type Tlb = super::Tlb<NoExtension>;

const A: Asid = 1;
const KIB4: u64 = 4 << 10;
const MIB2: u64 = 2 << 20;
const GIB1: u64 = 1 << 30;

fn va(x: u64) -> VirtAddr {
    VirtAddr::new(x)
}

fn page4k(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
    TlbEntry::page(asid, va(vaddr).vpn(), ReachSize::Size4K, Pfn::new(pfn), true, false)
}

fn page2m(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
    TlbEntry::page(asid, va(vaddr).vpn(), ReachSize::Size2M, Pfn::new(pfn), true, false)
}

fn page1g(asid: Asid, vaddr: u64, pfn: u64) -> TlbEntry {
    TlbEntry::page(asid, va(vaddr).vpn(), ReachSize::Size1G, Pfn::new(pfn), true, false)
}

fn frame(outcome: TlbLookup) -> Option<u64> {
    outcome.translation().map(|t| t.pfn.raw())
}

/// A small machine: L1 4K 4 entries 2-way (2 sets), L1 2M 2 x 2-way,
/// L1 1G 1, L2 8 entries 2-way (4 sets), L2 1G 2.
pub(crate) fn small() -> TlbConfig {
    TlbConfig {
        l1_4k_entries: 4,
        l1_4k_ways: 2,
        l1_2m_entries: 2,
        l1_2m_ways: 2,
        l1_1g_entries: 1,
        l1_1g_ways: 1,
        l2_entries: 8,
        l2_ways: 2,
        l2_1g_entries: 2,
        l2_1g_ways: 2,
        ..TlbConfig::default()
    }
}

#[test]
fn defaults_are_skylake_and_valid() {
    let c = TlbConfig::default();
    c.validate("machine.tlb").unwrap();
    assert_eq!((c.l2_entries, c.l2_ways, c.l2_latency), (1536, 12, 9));
    let tlb = Tlb::new(&c, 0);
    assert_eq!(tlb.l2.arrays[l2::SHARED].sa.sets(), 128);
    assert_eq!(tlb.l1d.arrays[0].sa.sets(), 16);
    assert_eq!(tlb.l1d.arrays[2].sa.sets(), 1);
}

#[test]
fn validate_names_the_bad_key() {
    let err = |c: TlbConfig| match c.validate("machine.tlb") {
        Err(Error::Config { key, .. }) => key,
        other => panic!("expected a config error, got {other:?}"),
    };
    let c = TlbConfig { l2_entries: 1000, ..TlbConfig::default() };
    assert_eq!(err(c), "machine.tlb.l2_entries"); // not a multiple of 12
    let c = TlbConfig { l2_entries: 1200, ..TlbConfig::default() };
    assert_eq!(err(c), "machine.tlb.l2_entries"); // 100 sets
    let c = TlbConfig { l1i_2m_ways: 0, ..TlbConfig::default() };
    assert_eq!(err(c), "machine.tlb.l1i_2m_ways");
    // 0 entries disables the array; its ways are then irrelevant.
    TlbConfig { l2_1g_entries: 0, l2_1g_ways: 0, ..TlbConfig::default() }.validate("m").unwrap();
}

#[test]
fn config_keys_parse_and_unknown_keys_are_rejected() {
    let c: TlbConfig = toml::from_str("l2_entries = 2048\nl2_ways = 16\npolicy = \"random\"").unwrap();
    assert_eq!((c.l2_entries, c.l2_ways, c.policy), (2048, 16, Replacement::Random));
    assert_eq!(c.l1_4k_entries, 64);
    assert!(toml::from_str::<TlbConfig>("l2_entires = 2048").is_err());
}

#[test]
fn reach_constants_are_the_reaches_own() {
    let shifts: Vec<u32> = ReachSize::ALL.iter().map(|r| r.shift()).collect();
    assert_eq!(shifts, [12, 16, 21, 25, 30]);
    let classes: Vec<u64> = ReachSize::ALL.iter().map(|r| r.key_class()).collect();
    assert_eq!(classes, [KEY_CLASS_4K, KEY_CLASS_64K, KEY_CLASS_2M, KEY_CLASS_32M, KEY_CLASS_1G]);
    for r in ReachSize::ALL {
        assert_eq!(ReachSize::of_key_class(r.key_class()), r);
        assert_eq!(ReachSize::from_index(r as u8), r);
    }
}

#[test]
fn a_page_leaf_keeps_its_fields_and_builds_the_entry() {
    for r in ReachSize::ALL {
        for (writable, dirty) in [(false, false), (true, false), (false, true), (true, true)] {
            let pfn = Pfn::new(0x4_0000 << r.pages_shift());
            let leaf = PageLeaf::new(pfn, r, writable, dirty);
            assert_eq!((leaf.pfn, leaf.reach(), leaf.writable(), leaf.dirty()), (pfn, r, writable, dirty));
            // An address 3 pages and 5 bytes into the page's last 4 KiB
            // piece (a 4 KiB page: into the page itself).
            let base = 0x7f00_0000_0000 & !(r.bytes() - 1);
            let x = va(base + r.bytes() - 3 * KIB4 + 5).max(va(base + 5));
            let e: TlbEntry = leaf.entry(A, x);
            assert_eq!(e, TlbEntry::page(A, va(base).vpn(), r, pfn, writable, dirty));
            assert_eq!(leaf.frame_of(x), e.frame_of(x));
        }
    }
}

#[test]
fn a_4k_entry_keeps_precedence_over_a_recently_used_2m_entry() {
    // A 2 MiB entry used recently is taken without probing the arrays,
    // but only while the 4 KiB array holds nothing in its 2 MiB page:
    // a 4 KiB entry filled inside that page (a perforated page's hole,
    // say) must win for its address, and the 2 MiB entry for the rest.
    let mut tlb = Tlb::new(&TlbConfig::default(), 0);
    let base = 0x4000_0000;
    tlb.fill_after_walk(page2m(A, base, 0x1000), va(base), false);
    for _ in 0..3 {
        assert_eq!(frame(tlb.lookup(A, va(base + 0x5000), false)), Some(0x1005));
    }
    let hole = base + 0x7000;
    tlb.fill_l1(&page4k(A, hole, 0x9999), va(hole), false);
    for _ in 0..3 {
        assert_eq!(frame(tlb.lookup(A, va(hole), false)), Some(0x9999));
        assert_eq!(frame(tlb.lookup(A, va(base + 0x5000), false)), Some(0x1005));
    }
    let s = tlb.stats();
    assert_eq!((s.l1d_4k.hits, s.l1d_2m.hits), (3, 6));
}

#[test]
fn l1_miss_l2_hit_fills_l1() {
    // Walk fills L2 and L1; evict the L1 copy with two conflicting pages;
    // the next access misses L1, hits L2, refills L1; then hits L1.
    let mut tlb = Tlb::new(&small(), 0);
    let x = 0x40_0000; // vpn 0x400: L1 4K set 0, L2 set 0
    assert_eq!(tlb.lookup(A, va(x), false), TlbLookup::Miss);
    tlb.fill_after_walk(page4k(A, x, 0x77), va(x), false);
    assert_eq!(frame(tlb.lookup(A, va(x + 0x123), false)), Some(0x77));
    // vpns 0x402 and 0x404 share L1 set 0 (2 sets) but not L2 set 0 (4 sets).
    for (v, p) in [(0x40_2000, 0x80), (0x40_4000, 0x81)] {
        tlb.fill_after_walk(page4k(A, v, p), va(v), false);
    }
    match tlb.lookup(A, va(x), false) {
        TlbLookup::L2(t) => {
            assert_eq!(t.pfn.raw(), 0x77);
            assert_eq!(t.size, ReachSize::Size4K);
            assert_eq!(tlb.peek_l2(A, va(x)), Some(page4k(A, x, 0x77)));
        }
        other => panic!("expected an L2 hit, got {other:?}"),
    }
    assert!(matches!(tlb.lookup(A, va(x), false), TlbLookup::L1(_)));
    let s = tlb.stats();
    assert_eq!(s.data, SideStats { accesses: 4, l1_misses: 2, l2_misses: 1 });
    assert_eq!(s.l1d_4k.hits, 2);
    assert_eq!(s.l1d_4k.fills, 4);
    assert_eq!(s.l1d_4k.evictions, 2); // 0x400 by 0x404, then 0x402 by the refill
    assert_eq!((s.l2.lookups, s.l2.hits, s.l2.misses, s.l2.fills), (2, 1, 1, 3));
    tlb.reset_stats();
    assert_eq!(tlb.stats(), TlbStats::default());
}

#[test]
fn shared_l2_keeps_4k_and_2m_entries_with_equal_index_apart() {
    // 4K vpn 0x10 and the 2 MiB page with index 0x10 (va 0x200_0000) have
    // the same set index and the same vpn-at-size field: only the size
    // class tells them apart.
    let mut cfg = small();
    cfg.l1_4k_entries = 0; // force every hit to come from the L2
    cfg.l1_2m_entries = 0;
    let mut tlb = Tlb::new(&cfg, 0);
    let small_va = 0x10 * KIB4;
    let huge_va = 0x10 * MIB2;
    tlb.fill_after_walk(page4k(A, small_va, 0x5), va(small_va), false);
    tlb.fill_after_walk(page2m(A, huge_va, 0x2000), va(huge_va), false);
    assert_eq!(tlb.occupancy().1, 2);
    assert_eq!(frame(tlb.lookup(A, va(small_va), false)), Some(0x5));
    assert_eq!(frame(tlb.lookup(A, va(huge_va + 3 * KIB4), false)), Some(0x2003));
}

#[test]
fn a_2m_entry_serves_every_4k_page_inside_and_none_outside() {
    let mut tlb = Tlb::new(&small(), 0);
    let base = 3 * MIB2;
    tlb.fill_after_walk(page2m(A, base, 0x1_0000), va(base), false);
    for i in [0u64, 1, 255, 511] {
        let t = tlb.lookup(A, va(base + i * KIB4 + 8), false);
        assert!(matches!(t, TlbLookup::L1(_)), "page {i}: {t:?}");
        let t = t.translation().unwrap();
        assert_eq!((t.pfn.raw(), t.size), (0x1_0000 + i, ReachSize::Size2M));
    }
    assert_eq!(tlb.lookup(A, va(base - KIB4), false), TlbLookup::Miss);
    assert_eq!(tlb.lookup(A, va(base + MIB2), false), TlbLookup::Miss);
}

#[test]
fn one_gib_entries_fill_their_arrays_and_translate() {
    let mut tlb = Tlb::new(&small(), 0);
    let base = 2 * GIB1;
    let x = base + 5 * MIB2 + 7 * KIB4;
    tlb.fill_after_walk(page1g(A, base, 0x40_0000), va(x), false);
    let t = tlb.lookup(A, va(x), false).translation().unwrap();
    assert_eq!((t.pfn.raw(), t.size), (0x40_0000 + 5 * 512 + 7, ReachSize::Size1G));
    assert_eq!(tlb.stats().l2_1g.fills, 1);
    assert_eq!(tlb.stats().l1d_1g.hits, 1);
    // Instruction side has no 1 GiB array: the L2 hit fills a 2 MiB piece.
    match tlb.lookup(A, va(x), true) {
        TlbLookup::L2(t) => assert_eq!(t.pfn.raw(), 0x40_0000 + 5 * 512 + 7),
        other => panic!("expected an L2 hit, got {other:?}"),
    }
    let t = tlb.lookup(A, va(base + 5 * MIB2), true);
    assert!(matches!(t, TlbLookup::L1(Translation { size: ReachSize::Size2M, .. })), "{t:?}");
    assert_eq!(frame(t), Some(0x40_0000 + 5 * 512));
    // Another 2 MiB of the same 1 GiB page is not in the L1I piece.
    assert!(matches!(tlb.lookup(A, va(base), true), TlbLookup::L2(..)));
}

#[test]
fn without_an_l2_1g_array_1g_pages_live_only_in_l1() {
    let mut cfg = small();
    cfg.l2_1g_entries = 0;
    cfg.l1_1g_entries = 0;
    let mut tlb = Tlb::new(&cfg, 0);
    tlb.fill_after_walk(page1g(A, 0, 0), va(MIB2 + 1), false);
    // Fractured into the 2 MiB L1 array; nothing in L2.
    assert_eq!(tlb.occupancy(), (1, 0));
    assert_eq!(frame(tlb.lookup(A, va(MIB2 + KIB4), false)), Some(513));
    assert_eq!(tlb.lookup(A, va(0), false), TlbLookup::Miss);
}

#[test]
fn invalidate_page_drops_a_2m_entry_from_any_address_inside_it() {
    let mut tlb = Tlb::new(&small(), 0);
    let base = 7 * MIB2;
    tlb.fill_after_walk(page2m(A, base, 0x800), va(base), false);
    tlb.fill_after_walk(page4k(A, base + MIB2, 0x9), va(base + MIB2), false);
    assert_eq!(tlb.invalidate_page(A, va(base + 300 * KIB4)), 2); // L1 2M + L2 2M
    assert_eq!(tlb.lookup(A, va(base), false), TlbLookup::Miss);
    assert_eq!(frame(tlb.lookup(A, va(base + MIB2), false)), Some(0x9));
}

#[test]
fn invalidate_range_across_sizes() {
    // Entries: 4K at 0x1000 and 0xa000, 2M at [2M, 4M), 1G at [1G, 2G)
    // (no two in one 2-way L2 set: vpn 1 and 2M index 1 share set 1).
    // Range [0x8000, 2M + 4K) overlaps the 4K page at 0xa000 and the 2M
    // page, not the 4K page at 0x1000 nor the 1G page. It is 505 pages
    // long, so the L2 is scanned.
    let mut tlb = Tlb::new(&small(), 0);
    for e in [page4k(A, 0x1000, 1), page4k(A, 0xa000, 10), page2m(A, MIB2, 0x200), page1g(A, GIB1, 0x4_0000)] {
        tlb.fill_after_walk(e, e.vbase.addr(), false);
    }
    assert_eq!(tlb.occupancy(), (4, 4));
    let dropped = tlb.invalidate_range(A, va(0x8000).vpn(), va(MIB2 + KIB4).vpn());
    assert_eq!(dropped, 4); // 4K and 2M, each in L1 and L2
    assert_eq!(tlb.lookup(A, va(0xa000), false), TlbLookup::Miss);
    assert_eq!(tlb.lookup(A, va(MIB2 + MIB2 - 1), false), TlbLookup::Miss);
    assert_eq!(frame(tlb.lookup(A, va(0x1000), false)), Some(1));
    // Two pages in the middle of the 1G page (the L2 is probed): the 1G
    // entry goes from L1 and L2; a range just past the 4K page at 0x1000
    // and one of another asid drop nothing.
    let start = va(GIB1 + 5 * MIB2).vpn();
    assert_eq!(tlb.invalidate_range(A, start, start.add(2)), 2);
    assert_eq!(tlb.invalidate_range(A, Vpn::new(2), Vpn::new(3)), 0);
    assert_eq!(tlb.invalidate_range(2, Vpn::new(0), Vpn::new(4)), 0);
    assert_eq!(tlb.lookup(A, va(GIB1), false), TlbLookup::Miss);
    assert_eq!(tlb.invalidate_range(A, Vpn::new(0), va(2 * GIB1).vpn()), 2);
    assert_eq!(tlb.occupancy(), (0, 0));
}

#[test]
fn asids_are_isolated() {
    let mut tlb = Tlb::new(&small(), 0);
    let x = 0x7f00_0000_1000;
    tlb.fill_after_walk(page4k(1, x, 0x111), va(x), false);
    tlb.fill_after_walk(page4k(2, x, 0x222), va(x), false);
    assert_eq!(frame(tlb.lookup(1, va(x), false)), Some(0x111));
    assert_eq!(frame(tlb.lookup(2, va(x), false)), Some(0x222));
    assert_eq!(tlb.lookup(3, va(x), false), TlbLookup::Miss);
    assert_eq!(tlb.invalidate_asid(1), 2);
    assert_eq!(tlb.lookup(1, va(x), false), TlbLookup::Miss);
    assert_eq!(frame(tlb.lookup(2, va(x), false)), Some(0x222));
    assert_eq!(tlb.flush_all(), 2);
    assert_eq!(tlb.occupancy(), (0, 0));
}

#[test]
fn coalesced_64k_and_32m_entries_serve_16_pages_and_are_shot_down() {
    // No system makes coalesced translations yet; an L2 configured for
    // them keys, probes, fills and invalidates them like any reach. The L1
    // arrays are off so that every hit comes from the L2.
    let cfg = TlbConfig {
        l1_4k_entries: 0,
        l1_2m_entries: 0,
        l1_1g_entries: 0,
        l1i_enabled: false,
        l2_reach: ReachSet::of(&[ReachSize::Size4K, ReachSize::Size64K, ReachSize::Size2M, ReachSize::Size32M]),
        ..small()
    };
    cfg.validate("m").unwrap();
    let mut tlb = Tlb::new(&cfg, 0);
    let (b64, b32) = (0x10_0000u64, 3 * (32 << 20));
    for e in [
        TlbEntry::page(A, va(b64).vpn(), ReachSize::Size64K, Pfn::new(0x500), true, false),
        TlbEntry::page(A, va(b32).vpn(), ReachSize::Size32M, Pfn::new(0x4_0000), true, false),
    ] {
        tlb.fill_after_walk(e, e.vbase.addr(), false);
    }
    assert_eq!(tlb.occupancy(), (0, 2));
    for i in 0..16 {
        let t = tlb.lookup(A, va(b64 + i * KIB4 + 8), false);
        assert!(matches!(t, TlbLookup::L2(Translation { size: ReachSize::Size64K, .. })), "page {i}: {t:?}");
        assert_eq!(frame(t), Some(0x500 + i));
        let t = tlb.lookup(A, va(b32 + i * MIB2 + 5 * KIB4), false);
        assert!(matches!(t, TlbLookup::L2(Translation { size: ReachSize::Size32M, .. })), "pmd {i}: {t:?}");
        assert_eq!(frame(t), Some(0x4_0000 + i * 512 + 5));
    }
    assert_eq!(tlb.lookup(A, va(b64 + 16 * KIB4), false), TlbLookup::Miss);
    assert_eq!(tlb.lookup(A, va(b32 + 16 * MIB2), false), TlbLookup::Miss);
    // A short range (probed key by key) and a long one (the array scanned),
    // each inside one entry, take it out.
    assert_eq!(tlb.invalidate_range(A, va(b64 + 5 * KIB4).vpn(), va(b64 + 8 * KIB4).vpn()), 1);
    assert_eq!(tlb.lookup(A, va(b64), false), TlbLookup::Miss);
    assert_eq!(tlb.invalidate_range(A, va(b32 + 7 * MIB2).vpn(), va(b32 + 9 * MIB2).vpn()), 1);
    assert_eq!(tlb.lookup(A, va(b32), false), TlbLookup::Miss);
    assert_eq!(tlb.occupancy(), (0, 0));
    assert!(!tlb.l2.holds(ReachSize::Size64K) && !tlb.l2.holds(ReachSize::Size32M));
}

#[test]
fn instruction_fetches_use_the_l1i_and_count_separately() {
    let mut tlb = Tlb::new(&small(), 0);
    let x = 0x40_1000;
    tlb.fill_after_walk(page4k(A, x, 3), va(x), true);
    assert!(matches!(tlb.lookup(A, va(x), true), TlbLookup::L1(_)));
    assert!(matches!(tlb.lookup(A, va(x), false), TlbLookup::L2(..)));
    let s = tlb.stats();
    assert_eq!((s.instr.accesses, s.instr.l1_misses, s.data.l1_misses), (1, 0, 1));
    assert_eq!((s.l1i_4k.hits, s.l1d_4k.fills), (1, 1));
    let named = s.named();
    assert!(named.contains(&("dtlb.l1.misses".to_string(), 1)));
    assert!(named.contains(&("itlb.l2.misses".to_string(), 0)));
}

#[test]
fn lru_order_in_a_2_way_l1_set() {
    // L1 4K: 2 sets x 2 ways. vpns 0, 2, 4 map to set 0. Fill 0, 2; touch
    // 0; fill 4 -> 2 is evicted from L1 (still in L2).
    let mut tlb = Tlb::new(&small(), 0);
    for v in [0u64, 2] {
        tlb.fill_after_walk(page4k(A, v * KIB4, 100 + v), va(v * KIB4), false);
    }
    assert!(matches!(tlb.lookup(A, va(0), false), TlbLookup::L1(_)));
    tlb.fill_after_walk(page4k(A, 4 * KIB4, 104), va(4 * KIB4), false);
    assert!(matches!(tlb.peek(A, va(0), false), TlbLookup::L1(_)));
    assert!(matches!(tlb.peek(A, va(2 * KIB4), false), TlbLookup::L2(..)));
    assert!(matches!(tlb.peek(A, va(4 * KIB4), false), TlbLookup::L1(_)));
}

/// The invariant that matters most: whatever sequence of fills,
/// evictions and shootdowns happened, a hit never returns a translation
/// (frame or dirty bit) that differs from the current page table. The
/// model OS shoots down before changing a mapping, as Linux does, using
/// INVLPG at a random address inside each removed page, a range, the
/// asid, or a full flush.
mod no_stale_translations {
    use super::*;
    use crate::systems::chp::tlb::colored_huge;
    use proptest::prelude::*;

    type Tlb = super::super::Tlb<crate::systems::TlbExtensions>;
    type TlbEntry = super::TlbEntry<<crate::systems::TlbExtensions as TlbExtension>::Payload>;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Access { asid: Asid, addr: u64, write: bool, instr: bool },
        Map { asid: Asid, addr: u64, kind: u8 },
        Unmap { asid: Asid, addr: u64, how: u8 },
    }

    /// Addresses concentrated on 2 GiB x 4 (2 MiB) x 16 (4 KiB) slots so
    /// that mappings of different sizes overlap often.
    fn addr(seed: u64) -> u64 {
        (seed & 1) * GIB1 + ((seed >> 1) & 3) * MIB2 + ((seed >> 3) & 15) * KIB4 + ((seed >> 7) & 0xfff)
    }

    fn op() -> impl Strategy<Value = Op> {
        let asid = 1..3u16;
        prop_oneof![
            6 => (asid.clone(), any::<u64>(), any::<bool>(), prop::bool::weighted(0.2))
                .prop_map(|(asid, a, write, instr)| Op::Access { asid, addr: addr(a), write, instr }),
            2 => (asid.clone(), any::<u64>(), 0..10u8).prop_map(|(asid, a, kind)| Op::Map { asid, addr: addr(a), kind }),
            1 => (asid, any::<u64>(), 0..8u8).prop_map(|(asid, a, how)| Op::Unmap { asid, addr: addr(a), how }),
        ]
    }

    struct Model {
        tlb: Tlb,
        maps: Vec<TlbEntry>,
        next_pfn: u64,
    }

    impl Model {
        fn find(&self, asid: Asid, vaddr: VirtAddr) -> Option<usize> {
            self.maps.iter().position(|e| e.asid == asid && e.covers(vaddr.vpn()))
        }

        fn access(&mut self, asid: Asid, vaddr: VirtAddr, write: bool, instr: bool) {
            let current = self.find(asid, vaddr);
            // The same lookup without the L1's recent entries must give
            // the same translation, counters and replacement state.
            let mut plain = self.tlb.clone();
            plain.l1d.keys_changed();
            plain.l1i.keys_changed();
            let expected = plain.lookup(asid, vaddr, instr);
            let got = self.tlb.lookup(asid, vaddr, instr);
            assert_eq!(got.translation(), expected.translation(), "{vaddr:?}: the recent entries changed the lookup");
            assert_eq!(self.tlb.stats(), plain.stats());
            for (a, b) in [(&self.tlb.l1d, &plain.l1d), (&self.tlb.l1i, &plain.l1i)] {
                assert_eq!(format!("{:?}", a.arrays), format!("{:?}", b.arrays));
            }
            match (got.translation(), current) {
                (Some(t), Some(i)) => {
                    let e = self.maps[i];
                    assert_eq!(t.pfn, e.frame_of(vaddr), "{vaddr:?}: stale frame");
                    assert_eq!(t.dirty, e.dirty, "{vaddr:?}: stale dirty bit");
                }
                (Some(t), None) => panic!("{vaddr:?} asid {asid}: hit {t:?} on an unmapped page"),
                (None, Some(i)) => {
                    let e = self.maps[i];
                    let mut by_leaf = self.tlb.clone();
                    self.tlb.fill_after_walk(e, vaddr, instr);
                    // The MMU's path for a plain page fills exactly as the
                    // general one.
                    if let EntryKind::Page { pfn } = e.kind {
                        let leaf = PageLeaf::new(pfn, e.size, e.writable, e.dirty);
                        by_leaf.fill_page_after_walk(asid, vaddr, leaf, instr);
                        assert_eq!(format!("{by_leaf:?}"), format!("{:?}", self.tlb), "{vaddr:?}: the fills differ");
                    }
                }
                (None, None) => {} // a page fault; the model maps on Map only
            }
            if let (true, Some(i)) = (write, current) {
                if !self.maps[i].dirty {
                    self.maps[i].dirty = true;
                    self.tlb.mark_dirty(asid, vaddr);
                }
            }
        }

        fn map(&mut self, asid: Asid, vaddr: VirtAddr, kind: u8) {
            let size = match kind {
                0..=5 => ReachSize::Size4K,
                6..=8 => ReachSize::Size2M,
                _ => ReachSize::Size1G,
            };
            let base = vaddr.align_down(size.bytes()).vpn();
            let end = base.add(size.nr_pages());
            // Remove what overlaps, then shoot the range down.
            self.maps.retain(|e| !(e.asid == asid && e.overlaps(base, end)));
            self.tlb.invalidate_range(asid, base, end);
            self.next_pfn += 2 * size.nr_pages();
            let pfn = self.next_pfn & !(size.nr_pages() - 1);
            let entry = if kind == 8 {
                // A colored huge page: 8 colors (stride_shift 3).
                let sub = std::array::from_fn(|s| Pfn::new(pfn + (s as u64 % 8)));
                crate::systems::extensions::wrap(
                    colored_huge(asid, base, sub, 3, true, false),
                    crate::systems::ExtKind::ColoredHuge,
                )
            } else {
                TlbEntry::page(asid, base, size, Pfn::new(pfn), true, false)
            };
            self.maps.push(entry);
        }

        fn unmap(&mut self, asid: Asid, vaddr: VirtAddr, how: u8) {
            match how {
                0..=4 => {
                    // INVLPG at the accessed address, wherever it is in the page.
                    if let Some(i) = self.find(asid, vaddr) {
                        self.maps.swap_remove(i);
                        self.tlb.invalidate_page(asid, vaddr);
                    }
                }
                5 | 6 => {
                    let start = vaddr.vpn();
                    let end = start.add(if how == 5 { 3 } else { 700 });
                    self.maps.retain(|e| !(e.asid == asid && e.overlaps(start, end)));
                    // The OS flushes the whole of every page it removed.
                    let (lo, hi) = (start.align_down(1 << 18), end.add(1 << 18).align_down(1 << 18));
                    self.tlb.invalidate_range(asid, lo, hi);
                }
                _ => {
                    self.maps.retain(|e| e.asid != asid);
                    self.tlb.invalidate_asid(asid);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn hits_always_match_the_page_table(
            ops in prop::collection::vec(op(), 1..300),
            policy in prop_oneof![Just(Replacement::Lru), Just(Replacement::Fifo), Just(Replacement::Random)],
            no_l1_2m in any::<bool>(),
        ) {
            let mut cfg = TlbConfig { policy, ..small() };
            if no_l1_2m {
                cfg.l1_2m_entries = 0; // 2 MiB pages fracture into 4 KiB L1 entries
                cfg.l1_1g_entries = 0;
            }
            let mut m = Model { tlb: Tlb::new(&cfg, 1), maps: Vec::new(), next_pfn: 1 << 20 };
            for op in ops {
                match op {
                    Op::Access { asid, addr, write, instr } => m.access(asid, va(addr), write, instr),
                    Op::Map { asid, addr, kind } => m.map(asid, va(addr), kind),
                    Op::Unmap { asid, addr, how } => m.unmap(asid, va(addr), how),
                }
                // The L2's count of entries of each reach (which lets
                // lookups skip a probe) stays exact through fills,
                // evictions and shootdowns.
                let l2 = &m.tlb.l2;
                for r in ReachSize::ALL {
                    let counted: usize = l2.arrays.iter().map(|a| a.sa.iter().filter(|(key, _)| key >> VPN_BITS & 7 == r.key_class()).count()).sum();
                    prop_assert_eq!(l2.live[r as usize] as usize, counted);
                    prop_assert_eq!(l2.holds(r), counted > 0);
                }
                // The keys recorded as absent (for the fill after a
                // miss) are absent, from the set recorded with them.
                for a in l2.absent.iter().filter(|a| a.key != INVALID_KEY) {
                    let sa = &l2.arrays[if ReachSize::of_key_class(a.key >> VPN_BITS & 7) == ReachSize::Size1G { l2::GIANT } else { l2::SHARED }].sa;
                    prop_assert_eq!(sa.set_of(a.key & VPN_MASK), a.set);
                    prop_assert_eq!(sa.find(a.set, a.key), None);
                }
                // So is every L1 key of a page recorded as missed.
                for side in [&m.tlb.l1d, &m.tlb.l1i].into_iter().filter(|s| s.missed != NO_MISS) {
                    let (asid, mvpn) = (key_asid(side.missed), side.missed & VPN_MASK);
                    for array in &side.arrays {
                        let (set, key) = array.set_and_key(asid, mvpn);
                        prop_assert_eq!(array.sa.find(set, key), None);
                    }
                }
                // Each L1 array's region counts equal a recount of its
                // keys (a count too low would skip a probe that hits).
                for array in m.tlb.l1d.arrays.iter().chain(&m.tlb.l1i.arrays) {
                    let mut recount = [0u32; REGION_BUCKETS];
                    for (key, _) in array.sa.iter() {
                        recount[RegionCounts::bucket(key)] += 1;
                    }
                    prop_assert_eq!(array.regions.0, recount);
                }
            }
        }
    }
}

/// Throughput of the L1-hit path (run: cargo test --release -- --ignored
/// --nocapture tlb_lookup_speed).
#[test]
#[ignore]
fn tlb_lookup_speed() {
    let mut tlb = Tlb::new(&TlbConfig::default(), 0);
    let pages = 48u64; // fits the 64-entry L1
    for p in 0..pages {
        tlb.fill_after_walk(page4k(A, p * KIB4, p), va(p * KIB4), false);
    }
    let n = 20_000_000u64;
    let t0 = std::time::Instant::now();
    let mut sum = 0u64;
    let mut x = 0u64;
    for i in 0..n {
        x = x.wrapping_add(0x9e37_79b9) ^ i;
        let vaddr = va((x % pages) * KIB4 + (i & 0xfff));
        if let TlbLookup::L1(t) = tlb.lookup(A, std::hint::black_box(vaddr), false) {
            sum = sum.wrapping_add(t.pfn.raw());
        }
    }
    let dt = t0.elapsed();
    println!("L1 hits: {:.2} ns/lookup (sum {sum})", dt.as_nanos() as f64 / n as f64);
    // L2-hit path: 1024 pages spread over the L2, L1 thrashes.
    let mut tlb = Tlb::new(&TlbConfig::default(), 0);
    let pages = 1024u64;
    for p in 0..pages {
        tlb.fill_after_walk(page4k(A, p * KIB4, p), va(p * KIB4), false);
    }
    let n = 5_000_000u64;
    let t0 = std::time::Instant::now();
    for i in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let vaddr = va(((x >> 33) % pages) * KIB4);
        sum = sum.wrapping_add(frame(tlb.lookup(A, std::hint::black_box(vaddr), false)).unwrap_or(0) + i);
    }
    let dt = t0.elapsed();
    println!("mostly L2 hits: {:.2} ns/lookup (sum {sum}) {:?}", dt.as_nanos() as f64 / n as f64, tlb.stats().data);
}

#[test]
fn hole_bitmap_entries_take_l2_slots_but_no_lookup_for_an_address_finds_them() {
    // 8-entry 2-way L2: 4 sets. A bitmap entry covers 32 pages.
    let mut tlb: Tlb = Tlb::new(&small(), 0);
    let base = 4 << 21;
    tlb.insert_bitmap(1, va(base), 0b1010);
    assert_eq!(tlb.lookup_bitmap(1, va(base + 31 * 4096)), Some(0b1010), "the same 32-page chunk");
    assert_eq!(tlb.lookup_bitmap(1, va(base + 32 * 4096)), None, "the next chunk");
    assert_eq!(tlb.lookup_bitmap(2, va(base)), None, "another address space");
    assert_eq!(tlb.lookup(1, va(base), false), TlbLookup::Miss, "not a translation");
    assert_eq!(tlb.occupancy().1, 1);
    assert_eq!(tlb.l2_kinds().collect::<Vec<_>>(), vec![(KIND_HOLE_BITMAP, ReachSize::Size4K)]);
    // A one-page shootdown inside the chunk drops it; a 4 KiB translation
    // filled after it is found as before.
    assert_eq!(tlb.invalidate_range(1, va(base + 5 * 4096).vpn(), va(base + 6 * 4096).vpn()), 1);
    assert_eq!(tlb.lookup_bitmap(1, va(base)), None);
    tlb.insert_bitmap(1, va(base), 1);
    tlb.fill_after_walk(page4k(1, base, 7), va(base), false);
    assert_eq!(frame(tlb.lookup(1, va(base), false)), Some(7));
    // INVLPG and a whole-address-space flush drop bitmaps too.
    assert_eq!(tlb.invalidate_page(1, va(base + 4096)), 1);
    tlb.insert_bitmap(1, va(base), 1);
    assert_eq!(tlb.invalidate_asid(1), 3, "the 4 KiB page's L1 and L2 entries and the bitmap");
    assert_eq!(tlb.occupancy(), (0, 0));
    // Bitmaps evict translations as any entry does, and the live counts
    // stay right: fill every set with bitmaps, then translations again.
    for c in 0..16u64 {
        tlb.insert_bitmap(1, va(base + c * 32 * 4096), c as u32);
    }
    assert_eq!(tlb.occupancy().1, 8);
    for i in 0..64u64 {
        tlb.fill_after_walk(page4k(1, base + i * 4096, 100 + i), va(base + i * 4096), false);
    }
    assert!(tlb.l2_kinds().all(|(k, _)| k == KIND_PAGE));
    let (l1, l2) = tlb.occupancy();
    assert_eq!(l2, 8);
    assert_eq!(tlb.invalidate_asid(1), l1 + 8);
}
