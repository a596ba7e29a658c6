//! DRAM with banks and row buffers, under an open-page policy: the row a
//! bank last opened stays open until another row of the same bank is
//! needed. A read or write that reaches memory finds its bank's row buffer
//!
//! - holding its row: a **row hit** (a column command only: tCL);
//! - closed, as every bank is at power-up: a **row miss** (activate, then
//!   the column: tRCD + tCL);
//! - holding another row: a **row conflict** (precharge, activate,
//!   column: tRP + tRCD + tCL).
//!
//! This module is the state only: which row each bank holds, and the
//! mapping of a physical address to its bank and row ([`DramConfig`]'s
//! parity functions). What an outcome costs, and when a bank is free again,
//! is the timing model's (`engine::timing::dram`). The state is shared by
//! every core and changes in the order the engine presents the requests
//! (each core's references in program order, cores a quantum at a time).

pub mod config;
#[cfg(test)]
mod tests;

pub use config::DramConfig;

/// What a request found in its bank's row buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RowOutcome {
    Hit = 0,
    Miss = 1,
    Conflict = 2,
}

impl RowOutcome {
    pub const ALL: [RowOutcome; 3] = [RowOutcome::Hit, RowOutcome::Miss, RowOutcome::Conflict];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The statistic's word (`dram.reads.row_hits`...).
    pub const fn name(self) -> &'static str {
        match self {
            RowOutcome::Hit => "row_hits",
            RowOutcome::Miss => "row_misses",
            RowOutcome::Conflict => "row_conflicts",
        }
    }
}

/// One request's place and outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramAccess {
    /// The bank's number across the machine: channel, rank and bank bits
    /// concatenated (the channel's highest).
    pub bank: u32,
    pub outcome: RowOutcome,
}

/// Marks a bank whose row buffer is closed (precharged).
const CLOSED: u64 = u64::MAX;

/// The banks' open rows and the address mapping.
#[derive(Debug, Clone)]
pub struct Dram {
    /// The mapping as byte tables: for each byte of the address that some
    /// index function reads, its shift and, for each of its 256 values,
    /// the bank-number bits it flips. The bank is their XOR: one lookup per
    /// byte (a handful) instead of a parity per index bit, which costs a
    /// dozen instructions where the host has no population count.
    tables: Vec<(u32, Box<[u16; 256]>)>,
    row_shift: u32,
    /// The open row of each bank, or [`CLOSED`].
    open: Vec<u64>,
}

impl Dram {
    /// Every bank closed. `cfg` must have been validated.
    pub fn new(cfg: &DramConfig) -> Dram {
        // What each address bit flips in the bank number: function i (of n)
        // is the number's bit n - 1 - i.
        let n = cfg.index_functions().count();
        let mut flips = [0u16; 64];
        for (i, bits) in cfg.index_functions().enumerate() {
            for &b in bits {
                flips[b as usize] ^= 1 << (n - 1 - i);
            }
        }
        let tables = (0..8u32)
            .filter(|byte| flips[*byte as usize * 8..][..8].iter().any(|&f| f != 0))
            .map(|byte| {
                let flip = |value: usize| {
                    (0..8).filter(|j| value >> j & 1 == 1).fold(0, |b, j| b ^ flips[byte as usize * 8 + j])
                };
                (byte * 8, Box::new(std::array::from_fn(flip)))
            })
            .collect();
        Dram { tables, row_shift: cfg.row_shift, open: vec![CLOSED; cfg.nr_banks()] }
    }

    pub fn nr_banks(&self) -> usize {
        self.open.len()
    }

    /// The bank of physical byte address `addr`.
    #[inline]
    pub fn bank_of(&self, addr: u64) -> u32 {
        let bank = self.tables.iter().fold(0u16, |bank, (shift, t)| bank ^ t[(addr >> shift) as u8 as usize]);
        u32::from(bank)
    }

    /// The row of `addr` within its bank.
    #[inline]
    pub fn row_of(&self, addr: u64) -> u64 {
        addr >> self.row_shift
    }

    /// A read or a write of `addr`'s line: what its bank's row buffer held,
    /// and the bank left holding `addr`'s row (open-page policy).
    #[inline]
    pub fn access(&mut self, addr: u64) -> DramAccess {
        let bank = self.bank_of(addr);
        let row = self.row_of(addr);
        // (`bank` < nr_banks by construction: the tables flip only the
        // number's `index_functions` bits.)
        let open = &mut self.open[bank as usize];
        let outcome = if *open == row {
            RowOutcome::Hit
        } else if *open == CLOSED {
            RowOutcome::Miss
        } else {
            RowOutcome::Conflict
        };
        *open = row;
        DramAccess { bank, outcome }
    }

    /// The row `bank` holds open, if any.
    pub fn open_row(&self, bank: u32) -> Option<u64> {
        self.open.get(bank as usize).copied().filter(|&r| r != CLOSED)
    }
}
