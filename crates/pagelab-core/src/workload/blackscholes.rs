//! Blackscholes: PARSEC's option pricing (`kind = "blackscholes"`), a
//! throughput workload.
//!
//! Keeps (PARSEC 3.0's `blackscholes.c`): `fptype` is `float` (4 bytes);
//! the options are structure-of-arrays, five prices in one malloc
//! (`buffer`: `sptprice`, `strike`, `rate`, `volatility`, `otime`, each
//! `numOptions` floats, in that order, one after the other), the option
//! types in a second (`otype`, ints) and the results in a third
//! (`prices`); the kernel, `bs_thread`, runs `NUM_RUNS` = 100 passes, each
//! pricing every option in order: `BlkSchlsEqEuroNoDiv(sptprice[i],
//! strike[i], rate[i], volatility[i], otime[i], otype[i])` then
//! `prices[i] = price`. So per option six 4-byte loads from six streams
//! and one store to a seventh, and a natural run is 100 passes.
//!
//! The option count is `footprint / 28` (7 arrays x 4 bytes; 10,000,000
//! options, PARSEC's native input, is a 280 MB footprint: ten times the
//! 27.5 MiB LLC; simlarge's 65,536 options are 1.8 MB). The arrays are
//! static: allocated once, never freed, so a host placement made at their
//! first touch persists for the whole run (the paper's "scientific
//! computing applications using static arrays", section V).
//!
//! Simplifies: the input file's parse into the array of `OptionData` and
//! its copy into the five arrays are not generated (the init pass makes
//! the first touches), nor is the `OptionData` array itself (the kernel
//! never reads it). Accesses are per element, as the scalar build makes
//! them (PARSEC's SIMD build would make one per four or eight).
//!
//! Instructions per option: 200, an estimate (not measured): the price
//! takes a log, a square root, an exp and two CNDFs (each an exp and a
//! fifth-degree polynomial), about 50 floating-point operations and their
//! calls; carried by the store, the loads 2 each (an address and a load).

use super::driver::Generator;
use super::{Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;

/// PARSEC's `NUM_RUNS`.
pub(crate) const NUM_RUNS: u32 = 100;
/// Bytes per option: five float prices, an int type, a float result.
pub(crate) const BYTES_PER_OPTION: u64 = 7 * 4;
/// The five price streams of `buffer`, in its order.
const PRICE_STREAMS: u64 = 5;
const LOAD_INSTRS: u32 = 2;
const PRICE_INSTRS: u32 = 200;
/// Program-counter tags: the five prices, the type, the result.
const PRICE_PCS: [u64; 5] = [1, 2, 3, 4, 5];
const TYPE_PC: u64 = 6;
const RESULT_PC: u64 = 7;

pub(crate) struct Blackscholes {
    arrays: Vec<Array>,
    buffer: VirtAddr,
    otype: VirtAddr,
    prices: VirtAddr,
    options: u64,
    option: u64,
    pass: u32,
}

impl Blackscholes {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let options = options_in(cfg.footprint.bytes());
        let mut layout = Layout::of(cfg);
        let buffer = layout.place("blackscholes-buffer", PRICE_STREAMS * options * 4);
        let otype = layout.place("blackscholes-otype", options * 4);
        let prices = layout.place("blackscholes-prices", options * 4);
        Blackscholes { arrays: layout.into_arrays(), buffer, otype, prices, options, option: 0, pass: 0 }
    }

    /// One option's six loads and its store.
    #[inline(always)]
    fn price(&self, out: &mut Vec<Access>, i: u64) {
        for (stream, pc) in PRICE_PCS.iter().enumerate() {
            let addr = self.buffer.add((stream as u64 * self.options + i) * 4);
            out.push(Access::load(addr, 4, LOAD_INSTRS).at(Site::pc(*pc)));
        }
        out.push(Access::load(self.otype.add(i * 4), 4, LOAD_INSTRS).at(Site::pc(TYPE_PC)));
        out.push(Access::store(self.prices.add(i * 4), 4, PRICE_INSTRS).at(Site::pc(RESULT_PC)));
    }
}

/// Options a footprint holds (at least one).
pub(crate) fn options_in(footprint: u64) -> u64 {
    (footprint / BYTES_PER_OPTION).max(1)
}

impl Generator for Blackscholes {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.option == self.options {
                self.option = 0;
                self.pass += 1;
            }
            if self.pass == NUM_RUNS {
                return false;
            }
            self.price(out, self.option);
            self.option += 1;
        }
        true
    }

    fn restart(&mut self) {
        self.option = 0;
        self.pass = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil::{collect, no_init_config};
    use crate::workload::{AccessKind, WorkloadKind};

    fn config(footprint: u64, accesses: u64) -> WorkloadConfig {
        no_init_config(WorkloadKind::Blackscholes, footprint, accesses, WorkloadConfig::default().seed)
    }

    #[test]
    fn an_option_is_six_loads_from_six_streams_and_its_result() {
        // 4096 bytes: 146 options; the buffer's five streams 584 bytes apart.
        let b = Blackscholes::new(&config(4096, 0));
        assert_eq!(b.options, 146);
        let all = collect(&config(4096, 14), usize::MAX);
        let base = b.buffer.raw();
        let offsets: Vec<u64> = all.accesses[..5].iter().map(|a| a.vaddr.raw() - base).collect();
        assert_eq!(offsets, [0, 584, 1168, 1752, 2336]);
        assert_eq!(all.accesses[5].vaddr, b.otype);
        assert_eq!((all.accesses[6].vaddr, all.accesses[6].kind), (b.prices, AccessKind::Store));
        assert_eq!(all.accesses[6].instrs, PRICE_INSTRS);
        // The second option: each stream's next float.
        assert_eq!(all.accesses[7].vaddr.raw(), base + 4);
        assert_eq!(all.accesses[13].vaddr, b.prices.add(4));
        assert!(all.accesses.iter().all(|a| a.size == 4));
    }

    #[test]
    fn a_natural_run_is_100_passes_over_every_option() {
        let all = collect(&config(4096, 0), usize::MAX);
        assert_eq!(all.accesses.len() as u64, 146 * 7 * NUM_RUNS as u64);
        assert_eq!(all.count(AccessKind::Store) as u64, 146 * NUM_RUNS as u64);
        // Static arrays: the three mmaps at the start, nothing after.
        assert_eq!(all.events.len(), 3);
        assert!(all.events.iter().all(|(i, _)| *i == 0));
    }

    #[test]
    fn the_footprint_sets_the_option_count_as_parsec_native_does() {
        // PARSEC's native input: 10,000,000 options in 280 MB.
        assert_eq!(options_in(280_000_000), 10_000_000);
        let b = Blackscholes::new(&config(280_000_000, 1));
        let mapped: u64 = b.arrays.iter().map(|a| a.len).sum();
        assert!((280_000_000..280_000_000 + 3 * 4096).contains(&mapped));
    }
}
