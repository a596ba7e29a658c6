//! The timing model's choice and the out-of-order core's window
//! (`machine.timing.model`, `machine.ooo.*`). The model itself is the
//! engine's (`engine::timing`); its parameters sit here because the
//! configuration layer comes before the engine.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How stall cycles are computed (`machine.timing.model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingModel {
    /// The interval core model: a reorder window of `machine.ooo.rob`
    /// instructions overlaps independent misses, up to `machine.ooo.mshrs`
    /// at once; a dependent load waits for the load it depends on.
    #[default]
    Interval,
    /// The first-order model of before: data latencies beyond the L1
    /// divided by `machine.timing.mlp`, walk references by `walk_mlp`.
    Fixed,
}

/// The out-of-order core's window (`machine.ooo`), read by the interval
/// model only. The defaults are Skylake's (Intel's optimization manual,
/// "Skylake microarchitecture": a 224-entry reorder buffer, 56 store-buffer
/// entries, two page walks in parallel; 10 L1D line fill buffers, the count
/// Intel gives for every core since Nehalem; see `docs/timing.md`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct OooConfig {
    /// Reorder-buffer entries: instructions in flight between the oldest
    /// unfinished one and the newest dispatched.
    pub rob: u32,
    /// Outstanding L1D misses at once (the L1D's fill buffers): a miss
    /// beyond them waits for the first to finish.
    pub mshrs: u32,
    /// Page walks in flight at once.
    pub page_walkers: u32,
    /// Store-buffer entries: a store retires into it and drains (in order)
    /// when its line arrives; a full buffer stalls dispatch.
    pub store_buffer: u32,
    /// A walk whose references leave the L1D holds one of its fill buffers
    /// (Intel counts page-walk reads among the fill buffers' demand reads;
    /// ChampSim's walks take L1D MSHRs). Off: walks take none, as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub walk_fill_buffers: bool,
}

impl Default for OooConfig {
    fn default() -> Self {
        OooConfig { rob: 224, mshrs: 10, page_walkers: 2, store_buffer: 56, walk_fill_buffers: false }
    }
}

impl OooConfig {
    /// Ranges: every size at least 1; at most 4096 ROB entries and 64 of
    /// the rest (the window's tables are scanned per miss).
    pub fn validate(&self, key: &str) -> Result<()> {
        let limits = [
            ("rob", self.rob, 4096),
            ("mshrs", self.mshrs, 64),
            ("page_walkers", self.page_walkers, 64),
            ("store_buffer", self.store_buffer, 4096),
        ];
        for (name, value, max) in limits {
            if !(1..=max).contains(&value) {
                return Err(Error::config(format!("{key}.{name}"), format!("{value} is not between 1 and {max}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_without_entries_is_refused_by_name() {
        let ooo = OooConfig { mshrs: 0, ..OooConfig::default() };
        let err = ooo.validate("machine.ooo").unwrap_err();
        assert!(matches!(err, Error::Config { ref key, .. } if key == "machine.ooo.mshrs"), "{err}");
        assert!(OooConfig::default().validate("machine.ooo").is_ok());
    }
}
