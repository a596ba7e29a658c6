//! Page contents: what a VM's guest frames hold, as an identity, for the
//! host services that compare pages (deduplication).
//!
//! Only workloads that declare their data (`workload.contents`) give their
//! pages an identity, and the identities live in this side table keyed by
//! (VM, guest frame), apart from the frame table's per-frame word: a run
//! without declarations has no table at all. Guest frames are the key
//! because they are what the host's scanner walks (the VM process's
//! addresses are guest-physical), and they stay put when the host migrates
//! the frame behind them.
//!
//! Contents change at transitions the hardware and the kernel already
//! see, never on every store:
//! - a guest page fault zeroes the frames of the new leaf: zero pages;
//! - the store that sets a guest leaf's dirty bit (a walk for a store, or
//!   the dirty-bit assist on a clean TLB entry) writes the declared data
//!   over the whole leaf. Later stores to a dirty page leave its identity
//!   as it is (as if they rewrote the same values): nothing clears guest
//!   dirty bits yet.
//!
//! A frame with no identity (never declared, or filled by a guest daemon's
//! copy) is unlike every other.
//!
//! `partly-shared` data mixes the two within one process, page by page:
//! which pages hold the shared data is [`SharedPages`]' scenario, a pure
//! function of the virtual page and `workload.shared.seed` (the process,
//! VM and fault order do not enter it), so two VMs running the same
//! program with the same seed hold the same data at the same pages.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::phys::holes::{is_hole, Distribution, HoleBits, HoleKind, HoleScenario, HolesConfig};
use crate::units::{Gfn, Vpn};

/// What a workload writes (`workload.contents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageData {
    /// Not declared: its pages carry no identity (the default; no cost).
    #[default]
    None,
    /// Data of its own: every page written differs from every other.
    Unique,
    /// Zeros: every page written stays a zero page.
    Zero,
    /// The same data as every other process or VM declaring `shared`, page
    /// for page at the same virtual address (two VMs initialising the same
    /// buffer; servers loaded with the same data set).
    Shared,
    /// `shared` data at the pages `workload.shared` picks, `unique` data
    /// at the rest (a program whose heap holds duplicates of another
    /// VM's here and there: the Perforated Pages paper's mcf under KSM).
    PartlyShared,
}

impl PageData {
    pub fn is_none(&self) -> bool {
        *self == PageData::None
    }
}

/// Which pages of a `partly-shared` process hold the shared data
/// (`workload.shared`), named as the `os.holes` scenario whose choice it
/// reuses: a share of the 2 MiB virtual regions (`portion`) hold shared
/// pages, a share of each such region's 512 pages (`degree`), one run at
/// a seeded place (`clustered`) or evenly spaced (`dispersed`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SharedPages {
    pub portion: f64,
    pub degree: f64,
    pub distribution: Distribution,
    /// Processes that should agree on which pages are shared (the same
    /// program in two VMs) give the same seed.
    pub seed: u64,
}

impl Default for SharedPages {
    fn default() -> Self {
        SharedPages { portion: 0.0, degree: 0.25, distribution: Distribution::Clustered, seed: 1 }
    }
}

impl SharedPages {
    /// The keys' ranges and their combination with `workload.contents`
    /// (`prefix` is the workload's, as `workload`).
    pub fn validate(shared: Option<&SharedPages>, data: PageData, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.shared.{k}");
        let Some(s) = shared else {
            if data == PageData::PartlyShared {
                let msg =
                    "contents = \"partly-shared\" needs workload.shared.portion and .degree (which pages are shared)";
                return Err(Error::config(key("portion"), msg));
            }
            return Ok(());
        };
        if data != PageData::PartlyShared {
            return Err(Error::config(format!("{prefix}.shared"), "only with contents = \"partly-shared\""));
        }
        for (name, v) in [("portion", s.portion), ("degree", s.degree)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(key(name), format!("{v} is not in [0, 1]")));
            }
        }
        if s.portion > 0.0 && s.scenario().pages_per_region() == 0 {
            return Err(Error::config(
                key("degree"),
                format!("{} rounds to no page of a region's 512: at least 1/512 (0.002) when portion > 0", s.degree),
            ));
        }
        Ok(())
    }

    fn scenario(&self) -> SharedScenario {
        let cfg = HolesConfig {
            portion: self.portion,
            degree: self.degree,
            distribution: self.distribution,
            kind: HoleKind::Allocated,
            spread: 0.0,
        };
        SharedScenario(HoleScenario::new(&cfg, self.seed), cfg.holes_per_region())
    }
}

/// [`SharedPages`] as the engine carries it: the scenario's choice of
/// pages (the process key is fixed, so every process with the same seed
/// gets the same choice) and its pages per chosen region.
#[derive(Debug, Clone, Copy)]
struct SharedScenario(HoleScenario, u32);

impl SharedScenario {
    fn pages_per_region(&self) -> u32 {
        self.1
    }

    /// The shared pages of 2 MiB virtual region `region` (vpn >> 9).
    fn region(&self, region: u64) -> Option<HoleBits> {
        self.0.holes(0, region)
    }
}

/// What one process writes, as [`Contents::written`] takes it: its
/// `workload.contents` and, for `partly-shared`, which pages are shared.
#[derive(Debug, Clone, Copy, Default)]
pub struct Writes {
    pub data: PageData,
    shared: Option<SharedScenario>,
}

impl Writes {
    /// A workload's declaration (`shared` is its `workload.shared`,
    /// validated).
    pub fn of(data: PageData, shared: Option<&SharedPages>) -> Writes {
        let shared = (data == PageData::PartlyShared).then(|| shared.copied().unwrap_or_default().scenario());
        Writes { data, shared }
    }

    pub fn is_none(&self) -> bool {
        self.data.is_none()
    }
}

impl From<PageData> for Writes {
    fn from(data: PageData) -> Writes {
        Writes::of(data, None)
    }
}

/// A page's content identity: equal identities mean equal 4 KiB of data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId(u64);

/// Shared data's identities carry this bit beside the virtual page number;
/// unique data's are a counter below it; the zero page is 0.
const SHARED: u64 = 1 << 63;

impl ContentId {
    pub const ZERO: ContentId = ContentId(0);

    /// The shared data at virtual page `vpn`.
    pub fn shared(vpn: Vpn) -> ContentId {
        ContentId(SHARED | vpn.raw())
    }
}

/// The identities of the guest frames that have one.
#[derive(Debug, Default)]
pub struct Contents {
    by_frame: HashMap<(usize, Gfn), ContentId>,
    /// The last unique identity handed out.
    last_unique: u64,
}

impl Contents {
    /// The identity of VM `vm`'s guest frame `gfn`, if it has one.
    pub fn of(&self, vm: usize, gfn: Gfn) -> Option<ContentId> {
        self.by_frame.get(&(vm, gfn)).copied()
    }

    /// A guest fault zeroed `count` frames from `first`.
    pub fn zeroed(&mut self, vm: usize, first: Gfn, count: u64) {
        for i in 0..count {
            self.by_frame.insert((vm, Gfn::new(first.raw() + i)), ContentId::ZERO);
        }
    }

    /// A store dirtied a guest leaf of `count` frames from `first`, mapped
    /// at virtual page `vbase`, of a process that writes `data`.
    pub fn written(&mut self, vm: usize, first: Gfn, count: u64, vbase: Vpn, data: impl Into<Writes>) {
        let writes = data.into();
        // The shared pages of the region last looked up (a 2 MiB leaf's
        // 512 pages are one region: one look-up).
        let mut region: Option<(u64, Option<HoleBits>)> = None;
        for i in 0..count {
            let vpn = vbase.raw() + i;
            let shared = match (writes.data, writes.shared) {
                (PageData::None, _) => continue,
                (PageData::Zero, _) => {
                    self.by_frame.insert((vm, Gfn::new(first.raw() + i)), ContentId::ZERO);
                    continue;
                }
                (PageData::Shared, _) => true,
                (PageData::PartlyShared, Some(s)) => {
                    let r = vpn >> 9;
                    if region.is_none_or(|(at, _)| at != r) {
                        region = Some((r, s.region(r)));
                    }
                    region.and_then(|(_, bits)| bits).is_some_and(|b| is_hole(&b, (vpn & 511) as usize))
                }
                (PageData::Unique | PageData::PartlyShared, _) => false,
            };
            let id = if shared {
                ContentId::shared(Vpn::new(vpn))
            } else {
                self.last_unique += 1;
                ContentId(self.last_unique)
            };
            self.by_frame.insert((vm, Gfn::new(first.raw() + i)), id);
        }
    }

    /// A store changed VM `vm`'s guest frame `gfn` other than by writing
    /// its declared data over it (the store that broke a copy-on-write
    /// KSM page): it now holds data of its own.
    pub fn rewritten(&mut self, vm: usize, gfn: Gfn) {
        self.last_unique += 1;
        self.by_frame.insert((vm, gfn), ContentId(self.last_unique));
    }

    /// Frames with an identity, zero pages among them, and duplicates: the
    /// frames whose identity an earlier frame has (what merging every
    /// identical page would free).
    pub fn census(&self) -> (u64, u64, u64) {
        let mut distinct: HashMap<ContentId, u64> = HashMap::new();
        for id in self.by_frame.values() {
            *distinct.entry(*id).or_default() += 1;
        }
        let pages = self.by_frame.len() as u64;
        let zero = distinct.get(&ContentId::ZERO).copied().unwrap_or(0);
        (pages, zero, pages - distinct.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_data_is_equal_at_equal_virtual_pages_and_unique_data_never() {
        let mut c = Contents::default();
        // Two VMs write 4 shared pages at the same virtual pages, a third
        // process 2 unique pages, a fourth 2 zero pages.
        c.written(0, Gfn::new(10), 4, Vpn::new(100), PageData::Shared);
        c.written(1, Gfn::new(50), 4, Vpn::new(100), PageData::Shared);
        c.written(1, Gfn::new(60), 2, Vpn::new(100), PageData::Unique);
        c.written(2, Gfn::new(60), 2, Vpn::new(7), PageData::Zero);
        assert_eq!(c.of(0, Gfn::new(11)), c.of(1, Gfn::new(51)));
        assert_ne!(c.of(0, Gfn::new(11)), c.of(1, Gfn::new(52)));
        assert_ne!(c.of(1, Gfn::new(60)), c.of(1, Gfn::new(61)));
        assert_eq!(c.of(2, Gfn::new(61)), Some(ContentId::ZERO));
        assert_eq!(c.of(0, Gfn::new(14)), None);
        // 12 pages: 4 shared duplicates, 1 zero duplicate.
        assert_eq!(c.census(), (12, 2, 5));
        // Undeclared data leaves frames as they were.
        c.written(0, Gfn::new(10), 1, Vpn::new(5), PageData::None);
        assert_eq!(c.of(0, Gfn::new(10)), Some(ContentId::shared(Vpn::new(100))));
        c.zeroed(0, Gfn::new(10), 4);
        assert_eq!(c.census(), (12, 6, 5));
    }

    fn partly(portion: f64, degree: f64, distribution: Distribution, seed: u64) -> Writes {
        Writes::of(PageData::PartlyShared, Some(&SharedPages { portion, degree, distribution, seed }))
    }

    /// The pages of the 512 from virtual page `vbase` (a region's first)
    /// that `writes` makes shared, written by VM 0 at guest frame 0.
    fn shared_pages(writes: Writes, vbase: u64) -> Vec<u64> {
        let mut c = Contents::default();
        c.written(0, Gfn::new(0), 512, Vpn::new(vbase), writes);
        (0..512).filter(|&i| c.of(0, Gfn::new(i)) == Some(ContentId::shared(Vpn::new(vbase + i)))).collect()
    }

    #[test]
    fn partly_shared_pages_follow_portion_degree_and_distribution() {
        // Degree 1/4 dispersed: 128 pages, page floor((512 j + phase) / 128)
        // with phase < 128: every fourth page from the first, whatever the
        // seed (each of the 8 filter regions holds 16).
        for seed in [1, 2] {
            assert_eq!(
                shared_pages(partly(1.0, 0.25, Distribution::Dispersed, seed), 512),
                (0..128).map(|j| 4 * j).collect::<Vec<_>>()
            );
        }
        // Degree 8/512 dispersed: one page in each 64-page filter region.
        assert_eq!(
            shared_pages(partly(1.0, 8.0 / 512.0, Distribution::Dispersed, 1), 0),
            (0..8).map(|j| 64 * j).collect::<Vec<_>>()
        );
        // Clustered: one run of 128 consecutive pages at a seeded place;
        // the same seed, the same run, in any VM and at any frame.
        let run = shared_pages(partly(1.0, 0.25, Distribution::Clustered, 1), 512);
        assert_eq!(run.len(), 128);
        assert_eq!(run[127] - run[0], 127);
        assert_eq!(run, shared_pages(partly(1.0, 0.25, Distribution::Clustered, 1), 512));
        let other_seed: Vec<Vec<u64>> =
            (0..4).map(|r| shared_pages(partly(1.0, 0.25, Distribution::Clustered, 9), 512 * r)).collect();
        let same_seed: Vec<Vec<u64>> =
            (0..4).map(|r| shared_pages(partly(1.0, 0.25, Distribution::Clustered, 1), 512 * r)).collect();
        assert_ne!(other_seed, same_seed);
        // Portion 1/2: about half the regions hold shared pages (the
        // scenario's low-discrepancy choice: within one of 100).
        let holding = (0..100)
            .filter(|r| !shared_pages(partly(0.5, 0.25, Distribution::Clustered, 1), 512 * r).is_empty())
            .count();
        assert!((49..=51).contains(&holding), "{holding} of 100 regions");
        // Portion 0: no page shared; the rest is unique data.
        let mut c = Contents::default();
        c.written(0, Gfn::new(0), 512, Vpn::new(0), partly(0.0, 0.25, Distribution::Clustered, 1));
        assert_eq!(c.census(), (512, 0, 0));
    }

    #[test]
    fn two_vms_with_the_same_seed_duplicate_exactly_their_shared_pages() {
        // Two VMs write the same two regions (vpn 1024..2048) at different
        // guest frames, a 2 MiB leaf each, then 4 KiB leaves one by one:
        // the same pages are shared; each shared page's identity is in
        // both VMs once: 256 duplicates among 2048 pages.
        let w = partly(1.0, 0.25, Distribution::Dispersed, 3);
        let mut c = Contents::default();
        c.written(0, Gfn::new(0), 512, Vpn::new(1024), w);
        c.written(0, Gfn::new(512), 512, Vpn::new(1536), w);
        for i in 0..1024 {
            c.written(1, Gfn::new(5000 + i), 1, Vpn::new(1024 + i), w);
        }
        assert_eq!(c.census(), (2048, 0, 256));
        assert_eq!(c.of(0, Gfn::new(4)), c.of(1, Gfn::new(5004)));
        assert_ne!(c.of(0, Gfn::new(5)), c.of(1, Gfn::new(5005)));
        // A third VM shares a clustered run of 128 pages of the first
        // region: a run of 128 holds 32 multiples of 4, so 32 of its pages
        // duplicate the others' and 96 are shared data no one else has.
        c.written(2, Gfn::new(0), 512, Vpn::new(1024), partly(1.0, 0.25, Distribution::Clustered, 4));
        assert_eq!(c.census(), (2560, 0, 256 + 32));
    }
}
