//! GUPS: HPCC RandomAccess.
//!
//! Keeps (reference/workloads.md, "GUPS"): a table of 64-bit words updated
//! at indices drawn from a random stream, uniform over the table with no
//! reuse structure; each update reads the word and writes it back
//! (`Table[i] ^= ran`); a natural run is HPCC's 4 x table-words updates.
//!
//! Simplifies: HPCC's table is 2^n words (about half of memory) indexed by
//! the low bits of a 64-bit LFSR (`ran = (ran << 1) ^ (ran < 0 ? 7 : 0)`);
//! here the table is `footprint / 8` words of any size and the index comes
//! from xoshiro256++ reduced by multiply-shift, equally uniform and
//! allowing footprints that are not powers of two. `write_fraction < 1`
//! drops the store of some updates (a read-only GUPS variant).
//!
//! Instructions per update: 6, the compiled HPCC loop body: shift, sign
//! test, conditional xor (the LFSR step), mask, and one `xor [mem], reg`
//! that loads and stores. The load carries 5, the store 1 (a load without
//! store carries all 6).
//!
//! Untouched pages ([`Workload::leave_untouched`](super::Workload)): the
//! table keeps its size and layout, and an index whose page is untouched
//! is drawn again, so the updates stay uniform over the pages touched (the
//! Perforated Pages paper's microbenchmark over unallocated holes, VII-B);
//! the init pass skips them too. Without untouched pages the random
//! stream is the one it always was.

use super::driver::Generator;
use super::{below, rng_for, Access, Array, Layout, Site, UntouchedPages, WorkloadConfig, WriteMix};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub(crate) struct Gups {
    arrays: Vec<Array>,
    table: VirtAddr,
    words: u64,
    writes: WriteMix,
    rng: Xoshiro256PlusPlus,
    updates_per_run: u64,
    updates_done: u64,
    /// Per 2 MiB region of the table, the mask of its untouched pages;
    /// empty when the program touches every page.
    untouched: Vec<[u64; 8]>,
}

impl Gups {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let words = cfg.footprint.bytes() / 8;
        let mut layout = Layout::of(cfg);
        let table = layout.place("gups-table", words * 8);
        Gups {
            arrays: layout.into_arrays(),
            table,
            words,
            writes: WriteMix::new(cfg.effective_write_fraction()),
            rng: rng_for(cfg.seed, 0x6775_7073),
            updates_per_run: 4 * words,
            updates_done: 0,
            untouched: Vec::new(),
        }
    }

    /// Whether the word at `index` lies on an untouched page.
    fn is_untouched(&self, index: u64) -> bool {
        let page = (self.table.raw() + index * 8 - self.table.align_down(2 << 20).raw()) >> 12;
        let mask = &self.untouched[(page / 512) as usize];
        let i = page % 512;
        mask[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    /// [`Generator::fill`] with untouched pages: the same steps, an index
    /// on an untouched page drawn again (kept apart so that the common
    /// case pays nothing per update).
    fn fill_touching(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.updates_done == self.updates_per_run {
                return false;
            }
            let mut index = below(self.rng.next_u64(), self.words);
            while self.is_untouched(index) {
                index = below(self.rng.next_u64(), self.words);
            }
            self.push_update(out, index);
        }
        true
    }

    /// One update's accesses. Always inlined: the loop of `fill` is the
    /// generator's per-access cost, which the bench cases measure.
    #[inline(always)]
    fn push_update(&mut self, out: &mut Vec<Access>, index: u64) {
        let addr = self.table.add(index * 8);
        if self.writes.is_store(&mut self.rng) {
            out.push(Access::load(addr, 8, 5).at(Site::pc(1)));
            out.push(Access::store(addr, 8, 1).at(Site::pc(2)));
        } else {
            out.push(Access::load(addr, 8, 6).at(Site::pc(1)));
        }
        self.updates_done += 1;
    }
}

impl Generator for Gups {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        if !self.untouched.is_empty() {
            return self.fill_touching(out, target);
        }
        while out.len() < target {
            if self.updates_done == self.updates_per_run {
                return false;
            }
            let index = below(self.rng.next_u64(), self.words);
            self.push_update(out, index);
        }
        true
    }

    fn init_touches(&mut self, addr: VirtAddr) -> bool {
        self.untouched.is_empty() || !self.is_untouched((addr.raw() - self.table.raw()) / 8)
    }

    /// Takes the masks of the table's regions; declines (touching every
    /// page) when they would leave no page to touch.
    fn leave_untouched(&mut self, untouched: &UntouchedPages<'_>) -> bool {
        let first = self.table.raw() >> 21;
        let last = (self.table.raw() + self.words * 8 - 1) >> 21;
        self.untouched = (first..=last).map(|r| untouched(r).unwrap_or([0; 8])).collect();
        let none = self.untouched.iter().all(|m| *m == [0; 8]);
        if none || (0..self.words).step_by(512).all(|i| self.is_untouched(i)) {
            self.untouched.clear();
        }
        !self.untouched.is_empty()
    }

    fn restart(&mut self) {
        self.updates_done = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{AccessKind, InitMode, WorkloadKind};
    use crate::units::ByteSize;

    #[test]
    fn updates_load_then_store_the_same_word() {
        let mut cfg = small_config(WorkloadKind::Gups, 1);
        cfg.init = InitMode::None;
        let all = collect(&cfg, usize::MAX);
        assert_eq!(all.accesses.len(), 30_000);
        for pair in all.accesses.chunks(2) {
            assert_eq!(pair[0].kind, AccessKind::Load);
            assert_eq!(pair[1].kind, AccessKind::Store);
            assert_eq!(pair[0].vaddr, pair[1].vaddr);
            assert_eq!(pair[0].vaddr.raw() % 8, 0);
            assert_eq!(pair[0].instrs + pair[1].instrs, 6);
        }
    }

    #[test]
    fn indices_are_roughly_uniform() {
        // 64 KiB table = 16 pages; 160k updates: 10k per page expected.
        let mut cfg = small_config(WorkloadKind::Gups, 9);
        cfg.init = InitMode::None;
        cfg.footprint = ByteSize(64 << 10);
        cfg.write_fraction = Some(0.0);
        cfg.accesses = 160_000;
        let all = collect(&cfg, usize::MAX);
        let base = all.accesses.iter().map(|a| a.vaddr.raw()).min().unwrap() & !0xfff;
        let mut counts = [0f64; 16];
        for a in &all.accesses {
            counts[((a.vaddr.raw() - base) >> 12) as usize] += 1.0;
        }
        let expected = 10_000.0;
        let chi2: f64 = counts.iter().map(|c| (c - expected).powi(2) / expected).sum();
        // 15 degrees of freedom: P(chi2 > 45) is about 1e-4.
        assert!(chi2 < 45.0, "chi2 = {chi2}, counts = {counts:?}");
    }

    #[test]
    fn natural_run_is_four_updates_per_word() {
        let mut cfg = small_config(WorkloadKind::Gups, 1);
        cfg.init = InitMode::None;
        cfg.footprint = ByteSize(8192);
        cfg.accesses = 0;
        let all = collect(&cfg, usize::MAX);
        assert_eq!(all.accesses.len(), 4 * 1024 * 2);
    }

    /// Runs `cfg` (4 MiB, two regions, init by pages) with region 1's
    /// pages 0..256 and 300 untouched, through the driver.
    fn run_untouched(cfg: &super::super::WorkloadConfig, untouched: bool) -> Vec<super::super::Access> {
        use super::super::{build_generator, Batch};
        let mut w = build_generator(cfg, "workload").unwrap();
        if untouched {
            // The table's regions are asked for in order: the first one
            // asked is region 0 of the table.
            let first = std::cell::Cell::new(None::<u64>);
            let honoured = w.leave_untouched(&|r| {
                let r0 = first.get().unwrap_or(r);
                first.set(Some(r0));
                (r == r0 + 1).then(|| {
                    let mut m = [0u64; 8];
                    m[..4].fill(u64::MAX);
                    m[300 / 64] |= 1 << (300 % 64);
                    m
                })
            });
            assert!(honoured);
        }
        let mut out = Vec::new();
        loop {
            let mut b = Batch::default();
            let more = w.next_batch(&mut b, 4096);
            out.extend(b.accesses);
            if !more {
                return out;
            }
        }
    }

    #[test]
    fn untouched_pages_are_never_accessed_and_skipped_by_the_init_pass() {
        let mut cfg = small_config(WorkloadKind::Gups, 3);
        cfg.footprint = ByteSize(4 << 20);
        cfg.write_fraction = Some(0.0);
        cfg.accesses = 20_000;
        let all = run_untouched(&cfg, true);
        let base = all.iter().map(|a| a.vaddr.raw()).min().unwrap() & !0x1f_ffff;
        let page = |a: &super::super::Access| (a.vaddr.raw() - base) >> 12;
        let untouched = |p: u64| (512..768).contains(&p) || p == 812;
        // The init pass: 1024 pages less the 257 untouched, then 20,000 loads.
        let (init, measured) = all.split_at(1024 - 257);
        assert!(init.iter().all(|a| a.kind == AccessKind::Store && !untouched(page(a))));
        assert_eq!(measured.len(), 20_000);
        assert!(measured.iter().all(|a| a.kind == AccessKind::Load && !untouched(page(a))));
        // Still uniform over the touched pages: region 1 keeps 255 of its
        // 512 pages, so about 255 / 767 of the loads (6,650 expected).
        let in_region_1 = measured.iter().filter(|a| page(a) >= 512).count();
        assert!((6_300..7_000).contains(&in_region_1), "{in_region_1}");
    }

    #[test]
    fn without_untouched_pages_the_stream_is_unchanged() {
        let mut cfg = small_config(WorkloadKind::Gups, 3);
        cfg.footprint = ByteSize(4 << 20);
        let plain = run_untouched(&cfg, false);
        let mut w = super::super::build_generator(&cfg, "workload").unwrap();
        assert!(!w.leave_untouched(&|_| None), "a mask of nothing is declined");
        let mut masked = Vec::new();
        loop {
            let mut b = super::super::Batch::default();
            let more = w.next_batch(&mut b, 4096);
            masked.extend(b.accesses);
            if !more {
                break;
            }
        }
        assert_eq!(plain, masked);
    }
}
