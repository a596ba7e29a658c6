//! Sparse toucher: k of the 512 base pages of every 2 MiB region.
//!
//! Keeps (reference/workloads.md, "Skew inside huge pages"): no published
//! distribution of how many base pages of a huge page are hot exists, so
//! the skew is a parameter, as in HugeScope's microbenchmarks. With THP a
//! region touched at even one page is backed by a whole 2 MiB page: the
//! memory bloat and hot-bloat case (k small: most of each huge page is
//! never used, yet THP keeps it resident).
//!
//! Which k pages of each region is chosen per region by the seed (a
//! bijection of the 512 page indices tweaked by the region number). The init
//! pass writes only those pages (or their lines), since the program never
//! writes the others; then random loads (stores at `write_fraction`) go
//! uniformly to a region, one of its k pages, and a line of it. A natural
//! run is 64 accesses per touched page (each touched line once on average).
//!
//! Simplifies: every region has the same k (mixing hot-even, hot-skewed
//! and cold huge pages as HugeScope does means running several sparse
//! workloads or extending this one); accesses are uniform over the touched
//! pages. Instructions per access: 4 (random index arithmetic and the load).

use super::driver::Generator;
use super::permute::Permutation;
use super::{below, mix64, rng_for, Access, Array, Layout, Site, WorkloadConfig, WriteMix};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

const REGION: u64 = 2 << 20;
const PAGES_PER_REGION: u64 = 512;

pub(crate) struct Sparse {
    arrays: Vec<Array>,
    base: VirtAddr,
    regions: u64,
    touched: u64,
    /// Page `j < touched` of region r is `pages.apply_tweaked(j, tweak(r))`.
    pages: Permutation,
    seed: u64,
    writes: WriteMix,
    rng: Xoshiro256PlusPlus,
    done_in_run: u64,
    /// The init pass's cache: which pages of `mask_region` are touched.
    mask_region: u64,
    mask: [u64; 8],
}

impl Sparse {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let regions = cfg.footprint.bytes() / REGION;
        let mut layout = Layout::of(cfg);
        let base = layout.place("sparse-regions", regions * REGION);
        Sparse {
            arrays: layout.into_arrays(),
            base,
            regions,
            touched: cfg.touched_pages as u64,
            pages: Permutation::new(PAGES_PER_REGION, cfg.seed),
            seed: cfg.seed,
            writes: WriteMix::new(cfg.effective_write_fraction()),
            rng: rng_for(cfg.seed, 0x7370_6172),
            done_in_run: 0,
            mask_region: u64::MAX,
            mask: [0; 8],
        }
    }

    #[inline]
    fn tweak(&self, region: u64) -> u64 {
        mix64(region ^ self.seed.rotate_left(17))
    }

    /// The `j`-th touched page (0..512) of `region`.
    #[inline]
    fn touched_page(&self, region: u64, j: u64) -> u64 {
        self.pages.apply_tweaked(j, self.tweak(region))
    }
}

impl Generator for Sparse {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn init_touches(&mut self, addr: VirtAddr) -> bool {
        let offset = addr.offset_from(self.base);
        let region = offset / REGION;
        if region != self.mask_region {
            self.mask = [0; 8];
            for j in 0..self.touched {
                let page = self.touched_page(region, j);
                self.mask[(page / 64) as usize] |= 1 << (page % 64);
            }
            self.mask_region = region;
        }
        let page = (offset % REGION) >> 12;
        self.mask[(page / 64) as usize] & (1 << (page % 64)) != 0
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        let run = self.regions * self.touched * 64;
        while out.len() < target {
            if self.done_in_run == run {
                return false;
            }
            let region = below(self.rng.next_u64(), self.regions);
            let pick = self.rng.next_u64();
            let page = self.touched_page(region, below(pick, self.touched));
            let offset = region * REGION + (page << 12) + ((pick & 63) << 6);
            let kind = self.writes.kind(&mut self.rng);
            out.push(Access { vaddr: self.base.add(offset), kind, size: 8, site: Site::pc(1), instrs: 4 });
            self.done_in_run += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.done_in_run = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{InitMode, WorkloadKind};
    use crate::units::ByteSize;
    use std::collections::BTreeSet;

    fn pages_per_region(accesses: &[super::Access], base: u64) -> Vec<BTreeSet<u64>> {
        let mut sets = vec![BTreeSet::new(); 4];
        for a in accesses {
            let off = a.vaddr.raw() - base;
            sets[(off >> 21) as usize].insert((off >> 12) & 511);
        }
        sets
    }

    #[test]
    fn touches_exactly_k_pages_per_region() {
        for k in [1u32, 17, 300, 512] {
            let mut cfg = small_config(WorkloadKind::Sparse, 11);
            cfg.footprint = ByteSize(8 << 20);
            cfg.touched_pages = k;
            cfg.accesses = 200_000;
            let all = collect(&cfg, usize::MAX);
            let base = mapped_arrays(&all)[0].start.raw();
            let init = (4 * k) as usize;
            let from_init = pages_per_region(&all.accesses[..init], base);
            let measured = pages_per_region(&all.accesses[init..], base);
            for r in 0..4 {
                assert_eq!(from_init[r].len(), k as usize, "k={k} region {r}");
                assert_eq!(measured[r], from_init[r], "k={k} region {r}");
            }
            if k < 512 {
                assert_ne!(from_init[0], from_init[1], "regions share their choice");
            }
            // The init pass goes in address order.
            assert!(all.accesses[..init].windows(2).all(|w| w[0].vaddr < w[1].vaddr));
        }
    }

    #[test]
    fn lines_init_writes_every_line_of_touched_pages_only() {
        let mut cfg = small_config(WorkloadKind::Sparse, 2);
        cfg.footprint = ByteSize(2 << 20);
        cfg.touched_pages = 3;
        cfg.init = InitMode::Lines;
        cfg.accesses = 1;
        let all = collect(&cfg, usize::MAX);
        assert_eq!(all.accesses.len(), 3 * 64 + 1);
    }
}
