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

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

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
}

impl PageData {
    pub fn is_none(&self) -> bool {
        *self == PageData::None
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
    pub fn written(&mut self, vm: usize, first: Gfn, count: u64, vbase: Vpn, data: PageData) {
        for i in 0..count {
            let id = match data {
                PageData::None => continue,
                PageData::Zero => ContentId::ZERO,
                PageData::Shared => ContentId::shared(Vpn::new(vbase.raw() + i)),
                PageData::Unique => {
                    self.last_unique += 1;
                    ContentId(self.last_unique)
                }
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
}
