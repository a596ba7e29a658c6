//! The row buffers and the mapping, worked by hand.

use super::*;

/// 4 banks at bits 13 and 14, rows from bit 15 (a generic linear mapping).
fn linear() -> Dram {
    let cfg = DramConfig { bank: vec![vec![13], vec![14]], row_shift: 15, ..DramConfig::default() };
    cfg.validate().unwrap();
    Dram::new(&cfg)
}

#[test]
fn a_bank_opens_closed_then_hits_its_row_and_conflicts_with_another() {
    let mut d = linear();
    let (a, same_row, other_row) = (0x0000u64, 0x1fc0u64, 0x8000u64);
    assert_eq!(d.bank_of(a), d.bank_of(other_row), "bits 13-14 are 0 in both");
    assert_ne!(d.row_of(a), d.row_of(other_row));
    assert_eq!(d.access(a).outcome, RowOutcome::Miss, "every bank starts closed");
    assert_eq!(d.access(same_row).outcome, RowOutcome::Hit, "0x1fc0 is in row 0 of bank 0");
    assert_eq!(d.access(other_row).outcome, RowOutcome::Conflict);
    assert_eq!(d.open_row(0), Some(1), "the conflict left row 1 open");
    assert_eq!(d.access(a).outcome, RowOutcome::Conflict, "and row 0 must open again");
}

#[test]
fn banks_keep_their_own_rows() {
    let mut d = linear();
    // Bank 1 (bit 14 is the lower index bit, listed second) and bank 2.
    let (bank1, bank2) = (1u64 << 14, 1u64 << 13);
    assert_eq!(d.bank_of(bank1), 1);
    assert_eq!(d.bank_of(bank2), 2);
    d.access(bank1);
    d.access(bank2);
    assert_eq!(d.access(bank1).outcome, RowOutcome::Hit, "bank 2's activation left bank 1's row open");
    assert_eq!(d.open_row(3), None);
}

#[test]
fn xor_functions_spread_one_row_bit_over_the_banks() {
    // Blacksmith's Coffee Lake single-rank functions (bits 6^13, 14^17,
    // 15^18, 16^19): address 0 and address 1 << 17 are in different rows
    // and, by the 14^17 function, in different banks.
    let cfg = DramConfig {
        bank: vec![vec![6, 13], vec![14, 17], vec![15, 18], vec![16, 19]],
        row_shift: 17,
        ..DramConfig::default()
    };
    let d = Dram::new(&cfg);
    assert_eq!(d.nr_banks(), 16);
    assert_eq!(d.bank_of(0), 0);
    assert_eq!(d.bank_of(1 << 17), 0b0100, "bit 17 flips the second function (14^17)");
    assert_eq!(d.bank_of(1 << 17 | 1 << 14), 0, "and bit 14 flips it back");
    assert_eq!(d.bank_of(1 << 6), 0b1000, "bit 6 is the first function's, the bank number's highest bit");
}

#[test]
fn channel_rank_and_bank_bits_concatenate_channel_highest() {
    let cfg = DramConfig {
        channel: vec![vec![6]],
        rank: vec![vec![19]],
        bank: vec![vec![15], vec![16]],
        row_shift: 20,
        ..DramConfig::default()
    };
    let d = Dram::new(&cfg);
    assert_eq!(d.nr_banks(), 16);
    assert_eq!(d.bank_of(1 << 6), 0b1000);
    assert_eq!(d.bank_of(1 << 19), 0b0100);
    assert_eq!(d.bank_of(1 << 16 | 1 << 6), 0b1001);
}

#[test]
fn bad_tables_name_their_key() {
    let bad = |cfg: DramConfig| cfg.validate().unwrap_err().to_string();
    assert!(bad(DramConfig { bank: vec![vec![]], ..DramConfig::default() }).contains("machine.memory.dram.bank[0]"));
    assert!(bad(DramConfig { channel: vec![vec![70]], ..DramConfig::default() }).contains("dram.channel[0]"));
    assert!(bad(DramConfig { cl: 0, ..DramConfig::default() }).contains("dram.cl"));
    assert!(bad(DramConfig { tck_ns: 0.0, ..DramConfig::default() }).contains("dram.tck_ns"));
    assert!(bad(DramConfig { row_shift: 3, ..DramConfig::default() }).contains("dram.row_shift"));
    let too_many = DramConfig { bank: (6..19).map(|b| vec![b]).collect(), ..DramConfig::default() };
    assert!(bad(too_many).contains("at most 12"));
}

/// The definition: bit n - 1 - i of the bank is the parity of the address
/// bits function i lists.
fn bank_by_parity(cfg: &DramConfig, addr: u64) -> u32 {
    cfg.index_functions().fold(0, |bank, bits| bank << 1 | bits.iter().fold(0, |p, &b| p ^ (addr >> b & 1) as u32))
}

#[test]
fn the_byte_tables_give_each_bank_bit_its_parity() {
    // ChampSim's swizzled mapping (bits 6-33, five functions) and one with
    // a channel and a rank bit, over 100,000 pseudo-random addresses.
    let champsim = DramConfig {
        bank: vec![
            vec![6, 18, 23, 28, 33],
            vec![7, 19, 24, 29],
            vec![8, 20, 25, 30],
            vec![9, 21, 26, 31],
            vec![10, 22, 27, 32],
        ],
        row_shift: 18,
        ..DramConfig::default()
    };
    let mixed = DramConfig {
        channel: vec![vec![8, 9, 12, 13, 18, 19]],
        rank: vec![vec![7, 63]],
        bank: vec![vec![14, 18], vec![15, 19], vec![16, 20], vec![17, 21]],
        row_shift: 22,
        ..DramConfig::default()
    };
    for cfg in [champsim, mixed] {
        let d = Dram::new(&cfg);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(d.bank_of(x), bank_by_parity(&cfg, x), "{x:#x}");
        }
    }
}
