//! Hashjoin: the probe of a hash join, as the Elastic Translations
//! artifact's `src/benchmarks/hashjoin/hashjoin.c` makes it.
//!
//! Keeps (the artifact's source and its aarch64 binary,
//! `benchmarks/hashjoin`, read by hand): a probe relation `table` of N
//! 32-byte elements whose key is at offset 0; a bucket array of N pointers;
//! the build relation's N 32-byte elements in four regions, bucket `b`
//! pointing at element `b / 4` of region `b % 4` (the program allocates
//! the elements as four arrays and fills the buckets round-robin). N is
//! both the key count and the hash size, as the artifact runs it (no
//! arguments: 10^9 each, 72 GB). A probe takes the next key of the table
//! in order (`idx = i % N`), hashes it (MurmurHash3_x64_128, a call), and
//! probes four buckets at `hash[0] % N`, `hash[1] % N`, `(hash[0] << 2) %
//! N` and `(hash[1] << 2) % N`: each a bucket load, then a load of the
//! element's key through the pointer. A natural run is N probes (the
//! artifact's 10^9 lookups over 10^9 keys).
//!
//! Dependence (`Access::site`): the first bucket load waits for the key
//! (its index is the key's hash), and each element load for its bucket.
//! Buckets 2-4 also wait for the key, which is not the most recent load
//! when they issue, so they are marked independent: the key is a
//! sequential load, two per line, usually in the L1D before they
//! dispatch.
//!
//! Instructions per probe: 127, from the binary's loop (56 in
//! `main._omp_fn.0`'s body, 71 in `MurmurHash3_x64_128` for an 8-byte
//! key: its tail reads the key's 8 bytes one by one), each access carrying
//! those since the access before it: the key 33, the first bucket 62 (the
//! rest of the hash), each element 2, buckets 2-4 8 each (the `matches++`
//! before them).
//!
//! The build (`init_loop_accesses`, skipped by `workload.skip_kernel_init`):
//! `table[i].key = i` over the table (5 instructions a store), then per
//! bucket its pointer and its element's key (6 and 4). Its first touches
//! are the program's memsets (`allocate` clears every array), which the
//! init pass makes, all arrays first; the program runs the table's key
//! loop before it allocates the others.
//!
//! Simplifies: the hash is splitmix64's finaliser of the key and the seed,
//! and `% N` is a multiply-shift (uniform, as a modulo of a good hash);
//! MurmurHash3's byte loads are one 8-byte access; the loop's stack,
//! `matches` and pointer-base loads hit the L1D and are left in the base
//! CPI. Every bucket is full and every probe matches, as in the artifact.

use super::driver::Generator;
use super::{below, mix64, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;

/// Bytes of the table and of the build relation per key: a 32-byte
/// element in each and an 8-byte bucket.
const BYTES_PER_KEY: u64 = 32 + 8 + 32;
/// The four element regions (`NUM_REGIONS`).
const REGIONS: u64 = 4;
const ELEMENT: u64 = 32;

/// Instructions each access of a probe carries (see the module comment).
const KEY_INSTRS: u32 = 33;
const FIRST_BUCKET_INSTRS: u32 = 62;
const BUCKET_INSTRS: u32 = 8;
const ELEMENT_INSTRS: u32 = 2;
/// The build's loops: a key store; a bucket store and its element's key.
const BUILD_KEY_INSTRS: u32 = 5;
const BUILD_BUCKET_INSTRS: u32 = 6;
const BUILD_ELEMENT_INSTRS: u32 = 4;

/// Program-counter tags: the key, then each probe's bucket and element.
const KEY_PC: u64 = 1;
const BUCKET_PCS: [u64; 4] = [2, 4, 6, 8];
const ELEMENT_PCS: [u64; 4] = [3, 5, 7, 9];
const BUILD_PCS: [u64; 3] = [10, 11, 12];

/// Where the program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The build's key loop at key i.
    Keys(u64),
    /// The build's bucket loop at bucket i.
    Buckets(u64),
    /// The probe loop at lookup i.
    Probe(u64),
}

pub(crate) struct HashJoin {
    arrays: Vec<Array>,
    table: VirtAddr,
    buckets: VirtAddr,
    regions: [VirtAddr; REGIONS as usize],
    /// N: keys of the table, buckets and elements.
    keys: u64,
    hash_seed: u64,
    phase: Phase,
}

impl HashJoin {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let keys = keys_in(cfg.footprint.bytes());
        let mut layout = Layout::of(cfg);
        let table = layout.place("hashjoin-table", keys * ELEMENT);
        let buckets = layout.place("hashjoin-buckets", keys * 8);
        let region_bytes = keys / REGIONS * ELEMENT;
        let regions = ["hashjoin-elements-0", "hashjoin-elements-1", "hashjoin-elements-2", "hashjoin-elements-3"]
            .map(|name| layout.place(name, region_bytes));
        HashJoin {
            arrays: layout.into_arrays(),
            table,
            buckets,
            regions,
            keys,
            hash_seed: mix64(cfg.seed ^ 0x6861_7368_6a6f_696e),
            phase: Phase::Keys(0),
        }
    }

    /// The element bucket `b` points at.
    #[inline]
    fn element(&self, b: u64) -> VirtAddr {
        self.regions[(b % REGIONS) as usize].add(b / REGIONS * ELEMENT)
    }

    /// The four buckets key `key` probes.
    #[inline]
    fn buckets_of(&self, key: u64) -> [u64; 4] {
        let h0 = mix64(key ^ self.hash_seed);
        let h1 = mix64(h0 ^ 0x9e37_79b9_7f4a_7c15);
        [below(h0, self.keys), below(h1, self.keys), below(h0 << 2, self.keys), below(h1 << 2, self.keys)]
    }

    /// One probe's nine accesses.
    #[inline(always)]
    fn push_probe(&self, out: &mut Vec<Access>, lookup: u64) {
        let key = lookup % self.keys;
        out.push(Access::load(self.table.add(key * ELEMENT), 8, KEY_INSTRS).at(Site::pc(KEY_PC)));
        for (probe, b) in self.buckets_of(key).into_iter().enumerate() {
            let bucket_site = Site::pc(BUCKET_PCS[probe]);
            let (site, instrs) =
                if probe == 0 { (bucket_site.dependent(), FIRST_BUCKET_INSTRS) } else { (bucket_site, BUCKET_INSTRS) };
            out.push(Access::load(self.buckets.add(b * 8), 8, instrs).at(site));
            let element_site = Site::pc(ELEMENT_PCS[probe]).dependent();
            out.push(Access::load(self.element(b), 8, ELEMENT_INSTRS).at(element_site));
        }
    }

    fn fill_keys(&mut self, out: &mut Vec<Access>, target: usize, mut i: u64) {
        while out.len() < target && i < self.keys {
            out.push(Access::store(self.table.add(i * ELEMENT), 8, BUILD_KEY_INSTRS).at(Site::pc(BUILD_PCS[0])));
            i += 1;
        }
        self.phase = if i == self.keys { Phase::Buckets(0) } else { Phase::Keys(i) };
    }

    fn fill_buckets(&mut self, out: &mut Vec<Access>, target: usize, mut b: u64) {
        while out.len() < target && b < self.keys {
            out.extend_from_slice(&[
                Access::store(self.buckets.add(b * 8), 8, BUILD_BUCKET_INSTRS).at(Site::pc(BUILD_PCS[1])),
                Access::store(self.element(b), 8, BUILD_ELEMENT_INSTRS).at(Site::pc(BUILD_PCS[2])),
            ]);
            b += 1;
        }
        self.phase = if b == self.keys { Phase::Probe(0) } else { Phase::Buckets(b) };
    }

    /// Probes until `target`; false when the run's N probes are done.
    fn fill_probes(&mut self, out: &mut Vec<Access>, target: usize, mut lookup: u64) -> bool {
        while out.len() < target {
            if lookup == self.keys {
                self.phase = Phase::Probe(lookup);
                return false;
            }
            self.push_probe(out, lookup);
            lookup += 1;
        }
        self.phase = Phase::Probe(lookup);
        true
    }
}

/// N for a footprint: a whole number of keys per region.
pub(crate) fn keys_in(footprint: u64) -> u64 {
    (footprint / BYTES_PER_KEY / REGIONS * REGIONS).max(REGIONS)
}

impl Generator for HashJoin {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            match self.phase {
                Phase::Keys(i) => self.fill_keys(out, target, i),
                Phase::Buckets(b) => self.fill_buckets(out, target, b),
                Phase::Probe(lookup) => return self.fill_probes(out, target, lookup),
            }
        }
        true
    }

    /// The build: one store per key, then two per bucket.
    fn init_loop_accesses(&self) -> u64 {
        3 * self.keys
    }

    /// Another N probes; the table is built once.
    fn restart(&mut self) {
        self.phase = Phase::Probe(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{AccessKind, InitMode, WorkloadConfig, WorkloadKind};
    use super::*;
    use crate::units::ByteSize;

    fn config(footprint: u64, seed: u64) -> WorkloadConfig {
        WorkloadConfig {
            kind: WorkloadKind::HashJoin,
            footprint: ByteSize(footprint),
            seed,
            init: InitMode::None,
            ..WorkloadConfig::default()
        }
    }

    #[test]
    fn the_arrays_are_the_programs_by_hand() {
        // 72 MiB / 72 B = 1 Mi keys: a 32 MiB table, 8 MiB of buckets and
        // four 8 MiB element regions, top-down 2 MiB apart.
        let j = HashJoin::new(&config(72 << 20, 1));
        assert_eq!(j.keys, 1 << 20);
        let lens: Vec<u64> = j.arrays.iter().map(|a| a.len >> 20).collect();
        assert_eq!(lens, [32, 8, 8, 8, 8, 8]);
        assert_eq!(j.table.raw(), 0x7f00_0000_0000 - (32 << 20));
        assert_eq!(j.buckets.raw(), j.table.raw() - (2 << 20) - (8 << 20));
        assert_eq!(j.regions[0].raw(), j.buckets.raw() - (10 << 20));
        // Bucket 6 points at element 1 of region 2, as hashtable[6] =
        // &htelms[6 % 4][6 / 4].
        assert_eq!(j.element(6), j.regions[2].add(32));
        assert_eq!(keys_in(100), 4, "at least one key per region");
    }

    #[test]
    fn a_probe_is_a_key_then_four_buckets_and_their_elements_by_hand() {
        let mut j = HashJoin::new(&config(72 << 20, 7));
        j.phase = Phase::Probe(5);
        let mut out = Vec::new();
        assert!(j.fill(&mut out, 9));
        assert_eq!(out.len(), 9);
        // Key 5 of the table: 5 x 32 bytes in.
        assert_eq!(out[0], Access::load(j.table.add(160), 8, 33).at(Site::pc(1)));
        let buckets = j.buckets_of(5);
        for (p, &b) in buckets.iter().enumerate() {
            let (bucket, element) = (out[1 + 2 * p], out[2 + 2 * p]);
            assert_eq!(bucket.vaddr, j.buckets.add(b * 8));
            assert_eq!(element.vaddr, j.regions[(b % 4) as usize].add(b / 4 * 32));
            assert_eq!(bucket.site.is_dependent(), p == 0, "only the first bucket follows the key");
            assert!(element.site.is_dependent(), "an element follows its bucket");
            assert_eq!((bucket.instrs, element.instrs), (if p == 0 { 62 } else { 8 }, 2));
            assert!(bucket.kind == AccessKind::Load && element.kind == AccessKind::Load);
        }
        assert_eq!(out.iter().map(|a| a.instrs).sum::<u32>(), 127, "the binary's loop and hash");
        // A key's buckets are a function of the key and the seed only.
        assert_eq!(j.buckets_of(5), HashJoin::new(&config(72 << 20, 7)).buckets_of(5));
        assert_ne!(j.buckets_of(5), HashJoin::new(&config(72 << 20, 8)).buckets_of(5));
        assert_eq!(j.phase, Phase::Probe(6));
    }

    #[test]
    fn the_build_comes_first_then_n_probes_over_the_keys_in_order() {
        // The smallest footprint, a page: 56 keys, 56 key stores, 56
        // bucket-and-element pairs, 56 probes.
        let cfg = WorkloadConfig { accesses: 0, ..config(4096, 3) };
        let all = collect(&cfg, usize::MAX);
        let j = HashJoin::new(&cfg);
        assert_eq!(j.keys, 56);
        assert_eq!(all.accesses.len(), 56 + 112 + 56 * 9);
        let (build, probes) = all.accesses.split_at(168);
        assert!(build.iter().all(|a| a.kind == AccessKind::Store));
        assert_eq!(build[55].vaddr, j.table.add(55 * 32));
        assert_eq!((build[56].vaddr, build[57].vaddr), (j.buckets, j.regions[0]));
        assert_eq!((build[58].vaddr, build[59].vaddr), (j.buckets.add(8), j.regions[1]));
        for (i, probe) in probes.chunks(9).enumerate() {
            assert_eq!(probe[0].vaddr, j.table.add(i as u64 * 32));
        }
        let mut skipping = cfg.clone();
        skipping.skip_kernel_init = true;
        assert_eq!(collect(&skipping, usize::MAX).accesses, probes, "skip_kernel_init drops the build");
    }

    #[test]
    fn buckets_are_uniform_over_the_table() {
        // 4096 keys, 4096 probes: 16,384 bucket loads over 8 pages of buckets.
        let cfg = WorkloadConfig { accesses: 0, skip_kernel_init: true, ..config(4096 * 72, 5) };
        let all = collect(&cfg, usize::MAX);
        let base = HashJoin::new(&cfg).buckets.raw();
        let mut pages = [0f64; 8];
        for a in all.accesses.iter().filter(|a| a.site.pc_tag() % 2 == 0 && a.site.pc_tag() <= 8) {
            pages[((a.vaddr.raw() - base) >> 12) as usize] += 1.0;
        }
        let expected = 16_384.0 / 8.0;
        let chi2: f64 = pages.iter().map(|c| (c - expected).powi(2) / expected).sum();
        // 7 degrees of freedom: P(chi2 > 24.3) is about 1e-3.
        assert!(chi2 < 24.3, "chi2 = {chi2}, {pages:?}");
    }
}
