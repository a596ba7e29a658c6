//! `machine.tlb`: the shape of each TLB array, its latencies and its
//! replacement policy, with Skylake's values as defaults. Kept beside the
//! model that reads it, as every component's configuration is.

use super::key::{ReachSet, ReachSize};
use crate::error::{Error, Result};
use crate::hw::set_assoc::Replacement;

/// `machine.tlb`. An `*_entries` of 0 disables that array.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    pub l1_4k_entries: u32,
    pub l1_4k_ways: u32,
    pub l1_2m_entries: u32,
    pub l1_2m_ways: u32,
    pub l1_1g_entries: u32,
    pub l1_1g_ways: u32,
    /// L1 data arrays of coalesced 64 KiB and 32 MiB translations (Arm's
    /// contiguous bit): 0 (the default, as on x86) fractures such a
    /// translation into the largest smaller array's pages. The L1 has three
    /// data arrays: at most three of the five sizes may be enabled.
    pub l1_64k_entries: u32,
    pub l1_64k_ways: u32,
    pub l1_32m_entries: u32,
    pub l1_32m_ways: u32,
    /// The shared 4 KiB + 2 MiB L2 TLB (STLB).
    pub l2_entries: u32,
    pub l2_ways: u32,
    /// The L2's separate 1 GiB array. With 0 entries (as on Haswell) 1 GiB
    /// translations are not kept in the L2 at all.
    pub l2_1g_entries: u32,
    pub l2_1g_ways: u32,
    /// Cycles every access pays for the L1 TLB lookup. 0 by default: the
    /// lookup is hidden under the (virtually indexed) L1D access.
    pub l1_latency: u32,
    /// Cycles added to an access that misses every L1 array (paid whether the
    /// L2 hits or misses; a miss pays the page walk on top).
    pub l2_latency: u32,
    pub policy: Replacement,
    /// With the L1 instruction TLB off, instruction fetches use the L1 data
    /// arrays (still counted as instruction accesses).
    pub l1i_enabled: bool,
    pub l1i_4k_entries: u32,
    pub l1i_4k_ways: u32,
    pub l1i_2m_entries: u32,
    pub l1i_2m_ways: u32,
    /// Whether the shared L2 array also holds coalesced 64 KiB and 32 MiB
    /// translations and 1 GiB ones (an Arm core's unified L2 TLB; then
    /// `l2_1g_*` must be 0). Off on x86: 4 KiB and 2 MiB only.
    pub l2_coalesced: bool,
    /// The reach sizes the shared L2 array (`l2_entries`) holds, derived
    /// from `l2_coalesced` ([`TlbConfig::shared_reach`]); tests set it.
    #[serde(skip)]
    pub l2_reach: ReachSet,
}

impl Default for TlbConfig {
    /// Skylake client, per core (Intel optimization manual, table 2-5).
    fn default() -> Self {
        TlbConfig {
            l1_4k_entries: 64,
            l1_4k_ways: 4,
            l1_2m_entries: 32,
            l1_2m_ways: 4,
            l1_1g_entries: 4,
            l1_1g_ways: 4,
            l1_64k_entries: 0,
            l1_64k_ways: 0,
            l1_32m_entries: 0,
            l1_32m_ways: 0,
            l2_entries: 1536,
            l2_ways: 12,
            l2_1g_entries: 16,
            l2_1g_ways: 4,
            l1_latency: 0,
            l2_latency: 9,
            policy: Replacement::Lru,
            l1i_enabled: true,
            l1i_4k_entries: 128,
            l1i_4k_ways: 8,
            l1i_2m_entries: 8,
            l1i_2m_ways: 8,
            l2_coalesced: false,
            l2_reach: ReachSet::of(&[ReachSize::Size4K, ReachSize::Size2M]),
        }
    }
}

/// Largest array we accept: beyond this a typo is likelier than intent.
const MAX_ENTRIES: u32 = 1 << 20;

impl TlbConfig {
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let arrays = [
            ("l1_4k", self.l1_4k_entries, self.l1_4k_ways),
            ("l1_2m", self.l1_2m_entries, self.l1_2m_ways),
            ("l1_1g", self.l1_1g_entries, self.l1_1g_ways),
            ("l1_64k", self.l1_64k_entries, self.l1_64k_ways),
            ("l1_32m", self.l1_32m_entries, self.l1_32m_ways),
            ("l2", self.l2_entries, self.l2_ways),
            ("l2_1g", self.l2_1g_entries, self.l2_1g_ways),
            ("l1i_4k", self.l1i_4k_entries, self.l1i_4k_ways),
            ("l1i_2m", self.l1i_2m_entries, self.l1i_2m_ways),
        ];
        for (name, entries, ways) in arrays {
            validate_shape(prefix, name, entries, ways)?;
        }
        if self.l1_data_sizes().len() > 3 {
            return Err(Error::config(
                format!("{prefix}.l1_64k_entries"),
                "the L1 has three data arrays: enable at most three of l1_4k, l1_64k, l1_2m, l1_32m, l1_1g",
            ));
        }
        if self.l2_coalesced && self.l2_1g_entries > 0 {
            return Err(Error::config(
                format!("{prefix}.l2_1g_entries"),
                "with l2_coalesced the shared L2 array holds 1 GiB translations: l2_1g_entries must be 0",
            ));
        }
        Ok(())
    }

    /// The reaches of the L1 data arrays, smallest first: 4 KiB, 2 MiB and
    /// 1 GiB (x86, whatever their sizes, so that a disabled array keeps its
    /// place), or the enabled ones when a coalesced array is configured.
    pub fn l1_data_sizes(&self) -> Vec<(ReachSize, u32, u32)> {
        let all = [
            (ReachSize::Size4K, self.l1_4k_entries, self.l1_4k_ways),
            (ReachSize::Size64K, self.l1_64k_entries, self.l1_64k_ways),
            (ReachSize::Size2M, self.l1_2m_entries, self.l1_2m_ways),
            (ReachSize::Size32M, self.l1_32m_entries, self.l1_32m_ways),
            (ReachSize::Size1G, self.l1_1g_entries, self.l1_1g_ways),
        ];
        if self.l1_64k_entries == 0 && self.l1_32m_entries == 0 {
            return vec![all[0], all[2], all[4]];
        }
        all.into_iter().filter(|&(_, entries, _)| entries > 0).collect()
    }

    /// The reaches the shared L2 array holds.
    pub fn shared_reach(&self) -> ReachSet {
        if self.l2_coalesced {
            ReachSet::of(&[
                ReachSize::Size4K,
                ReachSize::Size64K,
                ReachSize::Size2M,
                ReachSize::Size32M,
                ReachSize::Size1G,
            ])
        } else {
            self.l2_reach
        }
    }
}

/// An array of `entries` in `ways`-way sets: `entries == 0` (disabled), or
/// `ways >= 1` dividing `entries` into a power-of-two number of sets.
pub(crate) fn validate_shape(prefix: &str, name: &str, entries: u32, ways: u32) -> Result<()> {
    let entries_key = format!("{prefix}.{name}_entries");
    let ways_key = format!("{prefix}.{name}_ways");
    if entries == 0 {
        return Ok(());
    }
    if entries > MAX_ENTRIES {
        return Err(Error::config(entries_key, format!("{entries} entries; at most {MAX_ENTRIES}")));
    }
    if ways == 0 || ways > entries {
        return Err(Error::config(ways_key, format!("{ways} ways; must be 1..={entries} (the entries)")));
    }
    if !entries.is_multiple_of(ways) {
        return Err(Error::config(entries_key, format!("{entries} entries are not a multiple of {ways} ways")));
    }
    let sets = entries / ways;
    if !sets.is_power_of_two() {
        return Err(Error::config(
            entries_key,
            format!("{entries} entries / {ways} ways = {sets} sets, not a power of two"),
        ));
    }
    Ok(())
}
