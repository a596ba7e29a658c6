//! Memory tiers: host memory as nodes, each with its own capacity and read
//! and write latency (DRAM; NVM/PMem, whose writes cost more; CXL).
//!
//! `machine.memory.tiers` lists them; node i is tier i, and the nodes lie
//! in list order from pfn 0 ([`PhysMem::with_nodes`]). The allocator tries
//! the nodes in that order, Linux's default for a process on the first
//! node: the local node first, then the next when it is full. So the tier
//! listed first is the one filled first: list the fast tier first.
//!
//! [`PhysMem::with_nodes`]: super::PhysMem::with_nodes

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::units::ByteSize;

/// Most tiers a machine may have (the per-core counters are arrays of this
/// length, so that a run without tiers carries no allocation for them).
pub const MAX_TIERS: usize = 4;
/// The configuration key of the list.
pub const TIERS_KEY: &str = "machine.memory.tiers";

/// One tier, as configured.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Names the statistics (`tier.NAME.accesses`, `mem.tier.NAME.pages`).
    pub name: String,
    pub size: ByteSize,
    /// Load-to-use latency of a read served by this tier, in core cycles
    /// (as `machine.memory.latency`: the trip through the caches included).
    pub read_latency: u32,
    /// The same for a write to this tier.
    pub write_latency: u32,
}

/// Checks the list against the machine: sizes that add up to `phys_mem`,
/// every tier but the last a whole number of the largest buddy blocks (so
/// that no block straddles two tiers), names unique and usable inside a
/// statistic's name, latencies above 0. An empty list is one tier.
pub fn validate_tiers(tiers: &[TierConfig], phys_mem: u64, max_order: u8) -> Result<()> {
    if tiers.len() > MAX_TIERS {
        return Err(Error::config(TIERS_KEY, format!("{} tiers; at most {MAX_TIERS}", tiers.len())));
    }
    let block = 4096u64 << max_order;
    for (i, t) in tiers.iter().enumerate() {
        let key = |field: &str| format!("{TIERS_KEY}[{i}].{field}");
        let name_ok = !t.name.is_empty() && t.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            let msg = format!("`{}` must be non-empty ASCII letters, digits, `_` or `-` (it names statistics)", t.name);
            return Err(Error::config(key("name"), msg));
        }
        if tiers[..i].iter().any(|other| other.name == t.name) {
            return Err(Error::config(key("name"), format!("`{}` names two tiers", t.name)));
        }
        let last = i + 1 == tiers.len();
        if t.size.bytes() == 0 || (!last && !t.size.bytes().is_multiple_of(block)) {
            let msg = format!(
                "{} (tier `{}`) must be above 0 and, but for the last tier, a multiple of the largest buddy block \
                 ({}, machine.max_order), so that no block straddles two tiers",
                t.size,
                t.name,
                ByteSize(block)
            );
            return Err(Error::config(key("size"), msg));
        }
        for (field, v) in [("read_latency", t.read_latency), ("write_latency", t.write_latency)] {
            if v == 0 {
                return Err(Error::config(key(field), format!("tier `{}`: must be above 0 cycles", t.name)));
            }
        }
    }
    // Saturating: four sizes near 2^63 bytes must be an error, not a wrap.
    let total = tiers.iter().fold(0u64, |sum, t| sum.saturating_add(t.size.bytes()));
    if !tiers.is_empty() && total != phys_mem {
        let msg =
            format!("the tiers' sizes add up to {}, not machine.phys_mem = {}", ByteSize(total), ByteSize(phys_mem));
        return Err(Error::config(TIERS_KEY, msg));
    }
    Ok(())
}

/// Frames of each node, in list order (empty without tiers: one node).
pub fn node_frames(tiers: &[TierConfig]) -> Vec<u64> {
    tiers.iter().map(|t| t.size.bytes() >> 12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(name: &str, mib: u64, read: u32, write: u32) -> TierConfig {
        TierConfig { name: name.into(), size: ByteSize(mib << 20), read_latency: read, write_latency: write }
    }

    fn error_of(tiers: &[TierConfig], phys_mib: u64) -> String {
        validate_tiers(tiers, phys_mib << 20, 10).unwrap_err().to_string()
    }

    #[test]
    fn dram_and_nvm_adding_up_to_phys_mem_pass() {
        let tiers = [tier("dram", 64, 240, 240), tier("nvm", 62, 700, 2000)];
        validate_tiers(&tiers, 126 << 20, 10).unwrap();
        assert_eq!(node_frames(&tiers), vec![64 * 256, 62 * 256]);
        validate_tiers(&[], 126 << 20, 10).unwrap();
    }

    #[test]
    fn each_error_names_the_key_and_the_entry() {
        let e = error_of(&[tier("dram", 64, 240, 240), tier("nvm", 32, 700, 2000)], 128);
        assert!(e.contains("machine.memory.tiers") && e.contains("96MiB") && e.contains("128MiB"), "{e}");
        let e = error_of(&[tier("dram", 64, 240, 240), tier("dram", 64, 700, 2000)], 128);
        assert!(e.contains("tiers[1].name") && e.contains("two tiers"), "{e}");
        let e = error_of(&[tier("dr.am", 128, 240, 240)], 128);
        assert!(e.contains("tiers[0].name"), "{e}");
        let e = error_of(&[tier("dram", 64, 240, 240), tier("nvm", 64, 700, 0)], 128);
        assert!(e.contains("tiers[1].write_latency") && e.contains("nvm"), "{e}");
        // 2 MiB does not hold a 4 MiB block: the boundary would cut one.
        let e = error_of(&[tier("dram", 2, 240, 240), tier("nvm", 126, 700, 2000)], 128);
        assert!(e.contains("tiers[0].size") && e.contains("4MiB"), "{e}");
        let huge = |name: &str| TierConfig { size: ByteSize(1 << 62), ..tier(name, 0, 1, 1) };
        let e = error_of(&[tier("a", 4, 1, 1), huge("b"), huge("c"), huge("d")], 128);
        assert!(e.contains("add up to"), "{e}");
        let five: Vec<_> = (0..5).map(|i| tier(&format!("t{i}"), 4, 1, 1)).collect();
        assert!(error_of(&five, 20).contains("at most 4"));
    }

    use crate::phys::{FrameOwner, Migratetype, PhysMem};
    use crate::units::{Order, Pfn};

    fn take(mem: &mut PhysMem, order: u8, mt: Migratetype) -> u64 {
        mem.alloc(Order::new(order), mt, FrameOwner::Kernel).expect("memory left").raw()
    }

    #[test]
    fn the_first_node_fills_first_then_the_next() {
        // Given two nodes of one 4 MiB block each (1024 frames),
        let mut mem = PhysMem::with_nodes(&[1024, 1024], 10).unwrap();
        assert_eq!((mem.nr_nodes(), mem.node_range(1)), (2, 1024..2048));
        // all of node 0 goes before any of node 1,
        let first: Vec<u64> = (0..1024).map(|_| take(&mut mem, 0, Migratetype::Movable)).collect();
        assert!(first.iter().all(|&pfn| mem.node_of(Pfn::new(pfn)) == 0));
        assert_eq!(mem.used_pages_in_node(0), 1024);
        assert_eq!(take(&mut mem, 0, Migratetype::Movable), 1024);
        // and a frame freed in node 0 is the next one taken.
        mem.free(Pfn::new(77), Order::new(0));
        assert_eq!(take(&mut mem, 0, Migratetype::Movable), 77);
        assert_eq!((mem.used_pages_in_node(0), mem.used_pages_in_node(1)), (1024, 1));
        mem.check_invariants().unwrap();
    }

    #[test]
    fn a_node_is_used_up_stealing_included_before_the_next() {
        // Node 0: pageblock 0 taken by a movable 2 MiB block, pageblock 1
        // free and UNMOVABLE. Lowest-first over one list would give the
        // next movable 2 MiB block node 1's pfn 1024; Linux (and this
        // allocator) claims node 0's unmovable pageblock first.
        let mut mem = PhysMem::with_nodes(&[1024, 1024], 10).unwrap();
        assert_eq!(take(&mut mem, 9, Migratetype::Movable), 0);
        mem.set_pageblock_migratetype(Pfn::new(512), Migratetype::Unmovable);
        assert_eq!(take(&mut mem, 9, Migratetype::Movable), 512);
        assert_eq!(mem.stats().steals, 1);
        assert_eq!(take(&mut mem, 9, Migratetype::Movable), 1024);
    }

    #[test]
    fn no_block_straddles_two_nodes_and_a_cut_block_is_refused() {
        // A last node of 1.5 blocks: carved into an order-10 and an order-9
        // block; freeing everything merges nothing across the boundary.
        let mut mem = PhysMem::with_nodes(&[1024, 1536], 10).unwrap();
        assert_eq!(mem.free_blocks_per_order()[10], 2);
        let pfns: Vec<u64> = (0..2560).map(|_| take(&mut mem, 0, Migratetype::Movable)).collect();
        for pfn in pfns {
            mem.free(Pfn::new(pfn), Order::new(0));
        }
        assert_eq!((mem.free_blocks_per_order()[10], mem.free_blocks_per_order()[9]), (2, 1));
        mem.check_invariants().unwrap();
        let e = PhysMem::with_nodes(&[512, 1536], 10).unwrap_err().to_string();
        assert!(e.contains("node 0"), "{e}");
    }
}
