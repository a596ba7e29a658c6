//! `machine.memory.dram`: the DIMMs behind the memory controller, as the
//! row-buffer model reads them (`hw::dram`, `engine::timing::dram`).
//!
//! Timings are the DIMMs' speed bin, in their own clock (JEDEC gives a bin
//! as CL-tRCD-tRP in clocks of `tck_ns`: DDR4-3200AA is 22-22-22 at
//! 0.625 ns); the engine converts them at the core's clock
//! (`machine.freq_ghz`). The mapping gives each bit of a request's channel,
//! rank and bank as the parity (XOR) of a set of physical-address bits, the
//! form in which the reverse-engineered Intel mappings are published (Pessl
//! et al., DRAMA, USENIX Security 2016) and in which a linear mapping (one
//! bit each, gem5's and ChampSim's) is the special case of a set of one.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The configuration key of the table.
pub const DRAM_KEY: &str = "machine.memory.dram";
/// Most banks (channels x ranks x banks) the model tracks: 2^12.
pub const MAX_INDEX_BITS: usize = 12;

/// The DIMMs' timings and the controller's address mapping.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DramConfig {
    /// Off (the default): every read that reaches memory costs
    /// `machine.memory.latency`, as before.
    pub enabled: bool,
    /// The DIMMs' clock period in ns (half the transfer period: DDR4-3200
    /// transfers at 3200 MT/s on a 1600 MHz clock, 0.625 ns).
    pub tck_ns: f64,
    /// CAS latency: a column read to its data, in clocks.
    pub cl: u32,
    /// RAS-to-CAS delay: a row's activation to its first column command.
    pub rcd: u32,
    /// Row precharge: closing the open row before another can open.
    pub rp: u32,
    /// Clocks one 64-byte burst holds the bank and its bus (BL8: 4).
    pub burst: u32,
    /// Write recovery in ns: a write's last data to the precharge that may
    /// follow it (JEDEC DDR4: 15 ns at every speed).
    pub wr_ns: f64,
    /// One entry per channel-index bit: the physical-address bits whose
    /// parity gives it. Empty: one channel.
    pub channel: Vec<Vec<u32>>,
    /// The same for the rank within a channel.
    pub rank: Vec<Vec<u32>>,
    /// The same for the bank (bank group and bank) within a rank.
    pub bank: Vec<Vec<u32>>,
    /// The row within its bank: the physical address from this bit up.
    pub row_shift: u32,
}

impl Default for DramConfig {
    /// DDR4-3200AA (22-22-22, JESD79-4's speed bin) behind a generic
    /// linear mapping: 8 KiB rows (bits 6-12 the column), 16 banks at bits
    /// 13-16, one channel and rank. Not any machine's: presets set their own.
    fn default() -> Self {
        DramConfig {
            enabled: false,
            tck_ns: 0.625,
            cl: 22,
            rcd: 22,
            rp: 22,
            burst: 4,
            wr_ns: 15.0,
            channel: Vec::new(),
            rank: Vec::new(),
            bank: vec![vec![13], vec![14], vec![15], vec![16]],
            row_shift: 17,
        }
    }
}

impl DramConfig {
    /// The table as written when serialised: a disabled model is left out,
    /// so configurations that do not use it keep their text (and hashes).
    pub fn is_off(&self) -> bool {
        !self.enabled
    }

    /// The index bits in order: channel, then rank, then bank (the bank's
    /// number is their concatenation, the channel's bits the highest).
    pub fn index_functions(&self) -> impl Iterator<Item = &Vec<u32>> {
        self.channel.iter().chain(&self.rank).chain(&self.bank)
    }

    /// Banks of the machine: channels x ranks x banks per rank.
    pub fn nr_banks(&self) -> usize {
        1 << self.index_functions().count()
    }

    /// `clocks` of the DIMMs' clock in core cycles at `freq_ghz`.
    pub fn core_cycles(&self, clocks: u32, freq_ghz: f64) -> f64 {
        f64::from(clocks) * self.tck_ns * freq_ghz
    }

    /// The DIMMs' own part of a read that finds another row open (tRP +
    /// tRCD + tCL and the burst), in core cycles: the share of
    /// `machine.memory.latency` the row buffer decides; the rest is the
    /// uncore's fixed trip.
    pub fn conflict_cycles(&self, freq_ghz: f64) -> f64 {
        self.core_cycles(self.rp + self.rcd + self.cl + self.burst, freq_ghz)
    }

    /// Ranges and shapes; each error names its key.
    pub fn validate(&self) -> Result<()> {
        let key = |field: &str| format!("{DRAM_KEY}.{field}");
        if !(self.tck_ns > 0.0 && self.tck_ns < 100.0) {
            return Err(Error::config(key("tck_ns"), "must be a clock period in ns, above 0"));
        }
        if !(self.wr_ns >= 0.0 && self.wr_ns < 1000.0) {
            return Err(Error::config(key("wr_ns"), "must be a time in ns, 0 or more"));
        }
        if !(1..=1000).contains(&self.cl) {
            return Err(Error::config(key("cl"), format!("{} clocks: must be 1 to 1000", self.cl)));
        }
        // (0 is no DIMM's, but allowed: a model whose outcomes all cost
        // `machine.memory.latency` and hold no bank is the one memory of
        // before, which the tests check.)
        for (field, clocks) in [("rcd", self.rcd), ("rp", self.rp), ("burst", self.burst)] {
            if clocks > 1000 {
                return Err(Error::config(key(field), format!("{clocks} clocks: must be 0 to 1000")));
            }
        }
        if !(6..=48).contains(&self.row_shift) {
            return Err(Error::config(key("row_shift"), "must be a physical-address bit from 6 (a line) to 48"));
        }
        let total = self.index_functions().count();
        if total > MAX_INDEX_BITS {
            let msg = format!("{total} index bits in channel, rank and bank; at most {MAX_INDEX_BITS}");
            return Err(Error::config(key("bank"), msg));
        }
        for (field, list) in [("channel", &self.channel), ("rank", &self.rank), ("bank", &self.bank)] {
            for (i, bits) in list.iter().enumerate() {
                if bits.is_empty() || bits.iter().any(|&b| !(6..64).contains(&b)) {
                    let msg = format!("{bits:?}: one or more physical-address bits from 6 to 63");
                    return Err(Error::config(format!("{}[{i}]", key(field)), msg));
                }
            }
        }
        Ok(())
    }
}
