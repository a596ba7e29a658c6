//! STREAM triad: `a[i] = b[i] + scalar * c[i]`.
//!
//! Keeps: three arrays of 8-byte doubles, each a third of the footprint,
//! swept in order; per element a load of b, a load of c, a store to a (the
//! "linear sweeps" of libquantum and blackscholes in reference/workloads.md
//! look the same to the MMU). A natural run is ten passes (STREAM's NTIMES).
//!
//! Simplifies: STREAM times copy, scale, add and triad in turn; only triad
//! (the kernel with the most streams) is generated. Accesses are per
//! element (8 bytes), as the scalar loop makes them; a vectorised build
//! would make fewer, wider ones. STREAM's arrays are static (.bss), here
//! three mmaps.
//!
//! Instructions per element: 6 (load b; load c with the multiply-add; store
//! a; index increment, compare, branch), carried 1 / 2 / 3 by the three
//! accesses.

use super::driver::Generator;
use super::{Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;

/// STREAM's NTIMES.
const PASSES_PER_RUN: u32 = 10;

pub(crate) struct Stream {
    arrays: Vec<Array>,
    a: VirtAddr,
    b: VirtAddr,
    c: VirtAddr,
    elements: u64,
    index: u64,
    pass: u32,
}

impl Stream {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let elements = cfg.footprint.bytes() / 3 / 8;
        let mut layout = Layout::of(cfg);
        let a = layout.place("stream-a", elements * 8);
        let b = layout.place("stream-b", elements * 8);
        let c = layout.place("stream-c", elements * 8);
        Stream { arrays: layout.into_arrays(), a, b, c, elements, index: 0, pass: 0 }
    }
}

impl Generator for Stream {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.index == self.elements {
                self.index = 0;
                self.pass += 1;
            }
            if self.pass == PASSES_PER_RUN {
                return false;
            }
            let offset = self.index * 8;
            // One element's three accesses at once: one capacity check, not
            // three (with three, LLVM kept the addresses on the stack around
            // the growth call and reloaded them for every access).
            out.extend_from_slice(&[
                Access::load(self.b.add(offset), 8, 1).at(Site::pc(1)),
                Access::load(self.c.add(offset), 8, 2).at(Site::pc(2)),
                Access::store(self.a.add(offset), 8, 3).at(Site::pc(3)),
            ]);
            self.index += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.index = 0;
        self.pass = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{Access, InitMode, MapEvent, Site, WorkloadKind};
    use crate::units::{ByteSize, VirtAddr};

    #[test]
    fn first_accesses_by_hand() {
        // 6 MiB footprint: three 2 MiB arrays of 262144 doubles, top-down:
        // a at 0x7eff_ffe0_0000, b 2 MiB gap lower at 0x7eff_ffa0_0000,
        // c at 0x7eff_ff60_0000.
        let mut cfg = small_config(WorkloadKind::Stream, 1);
        cfg.init = InitMode::None;
        cfg.footprint = ByteSize(6 << 20);
        let all = collect(&cfg, 6);
        let (a, b, c) = (0x7eff_ffe0_0000u64, 0x7eff_ffa0_0000u64, 0x7eff_ff60_0000u64);
        let starts: Vec<u64> = all
            .events
            .iter()
            .map(|(i, e)| match e {
                MapEvent::Mmap { start, len, .. } => {
                    assert_eq!((*i, *len), (0, 2 << 20));
                    start.raw()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(starts, [a, b, c]);
        let v = VirtAddr::new;
        assert_eq!(
            all.accesses[..6],
            [
                Access::load(v(b), 8, 1).at(Site::pc(1)),
                Access::load(v(c), 8, 2).at(Site::pc(2)),
                Access::store(v(a), 8, 3).at(Site::pc(3)),
                Access::load(v(b + 8), 8, 1).at(Site::pc(1)),
                Access::load(v(c + 8), 8, 2).at(Site::pc(2)),
                Access::store(v(a + 8), 8, 3).at(Site::pc(3)),
            ]
        );
    }

    #[test]
    fn passes_wrap_and_the_natural_run_is_ten_passes() {
        let mut cfg = small_config(WorkloadKind::Stream, 1);
        cfg.init = InitMode::None;
        cfg.footprint = ByteSize(3 * 4096);
        cfg.accesses = 0;
        let all = collect(&cfg, usize::MAX);
        assert_eq!(all.accesses.len(), 10 * 512 * 3);
        // Element 0 of the second pass follows element 511 of the first.
        assert_eq!(all.accesses[512 * 3].vaddr, all.accesses[0].vaddr);
        assert_eq!(all.accesses[511 * 3].vaddr.raw(), all.accesses[0].vaddr.raw() + 511 * 8);
    }
}
