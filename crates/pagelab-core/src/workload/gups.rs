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

use super::driver::Generator;
use super::{below, rng_for, Access, Array, Layout, Site, WorkloadConfig, WriteMix};
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
}

impl Gups {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let words = cfg.footprint.bytes() / 8;
        let mut layout = Layout::new();
        let table = layout.place("gups-table", words * 8);
        Gups {
            arrays: layout.into_arrays(),
            table,
            words,
            writes: WriteMix::new(cfg.effective_write_fraction()),
            rng: rng_for(cfg.seed, 0x6775_7073),
            updates_per_run: 4 * words,
            updates_done: 0,
        }
    }
}

impl Generator for Gups {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.updates_done == self.updates_per_run {
                return false;
            }
            let index = below(self.rng.next_u64(), self.words);
            let addr = self.table.add(index * 8);
            if self.writes.is_store(&mut self.rng) {
                out.push(Access::load(addr, 8, 5).at(Site::pc(1)));
                out.push(Access::store(addr, 8, 1).at(Site::pc(2)));
            } else {
                out.push(Access::load(addr, 8, 6).at(Site::pc(1)));
            }
            self.updates_done += 1;
        }
        true
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
}
