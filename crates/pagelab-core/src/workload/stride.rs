//! Strided sweep: `for (i = 0; i < n; i += stride) sum += a[i]`, repeated.
//!
//! Keeps: the classic TLB-reach / cache-geometry microbenchmark; with a
//! stride of 4 KiB every access touches a new page, with 64 B every access a
//! new line (libquantum's sweeps over its state array, zeusmp's stencil
//! planes, in reference/workloads.md, are strided sweeps too).
//!
//! Simplifies: one array; each pass restarts at offset 0 (so a stride that
//! does not divide the array touches the same offsets every pass); 8-byte
//! accesses; a store instead of a load with probability `write_fraction`.
//! A natural run is one pass.
//!
//! Instructions per access: 3 (load or store, index add, compare-branch).

use super::driver::Generator;
use super::{rng_for, Access, Array, Layout, Site, WorkloadConfig, WriteMix};
use crate::units::VirtAddr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub(crate) struct Stride {
    arrays: Vec<Array>,
    base: VirtAddr,
    /// Last offset an 8-byte access may start at.
    last_offset: u64,
    stride: u64,
    offset: u64,
    writes: WriteMix,
    rng: Xoshiro256PlusPlus,
}

impl Stride {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let bytes = cfg.footprint.bytes() & !7;
        let mut layout = Layout::of(cfg);
        let base = layout.place("stride-array", bytes);
        Stride {
            arrays: layout.into_arrays(),
            base,
            last_offset: bytes - 8,
            stride: cfg.stride.bytes(),
            offset: 0,
            writes: WriteMix::new(cfg.effective_write_fraction()),
            rng: rng_for(cfg.seed, 0x7374_7269),
        }
    }
}

impl Generator for Stride {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.offset > self.last_offset {
                return false;
            }
            let kind = self.writes.kind(&mut self.rng);
            out.push(Access { vaddr: self.base.add(self.offset), kind, size: 8, site: Site::pc(1), instrs: 3 });
            self.offset += self.stride;
        }
        true
    }

    fn restart(&mut self) {
        self.offset = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{AccessKind, InitMode, WorkloadKind};
    use crate::units::ByteSize;

    #[test]
    fn sweeps_at_the_stride_and_wraps_to_zero() {
        let mut cfg = small_config(WorkloadKind::Stride, 1);
        cfg.init = InitMode::None;
        cfg.footprint = ByteSize(10_000);
        cfg.stride = ByteSize(4096);
        cfg.write_fraction = None;
        cfg.accesses = 7;
        let all = collect(&cfg, usize::MAX);
        let base = all.accesses[0].vaddr.raw();
        let offsets: Vec<u64> = all.accesses.iter().map(|a| a.vaddr.raw() - base).collect();
        // 10000 bytes: offsets 0, 4096, 8192 fit (8192 + 8 <= 10000).
        assert_eq!(offsets, [0, 4096, 8192, 0, 4096, 8192, 0]);
        assert!(all.accesses.iter().all(|a| a.kind == AccessKind::Load));
    }

    #[test]
    fn write_fraction_makes_stores() {
        let mut cfg = small_config(WorkloadKind::Stride, 1);
        cfg.init = InitMode::None;
        cfg.write_fraction = Some(0.3);
        cfg.accesses = 20_000;
        let all = collect(&cfg, usize::MAX);
        let stores = all.count(AccessKind::Store);
        assert!((5_500..6_500).contains(&stores), "{stores}");
    }
}
