//! Sampled measurement (`run.sampling.*`) and the pace of a functional
//! fast-forward (`run.fast_forward_cpi`). The mechanism is the engine's
//! (`engine::sampling`, `engine::functional`; docs/timing.md, "Sampled
//! measurement"); its keys sit here because the configuration layer comes
//! before the engine.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Periodic (systematic) sampling: after the lead-in (every workload's
/// init pass and fast-forward, run functionally), `windows` times a
/// warm-up, a measure window and a functional fast-forward, in core 0's
/// accesses. The statistics of the cores and the hardware are summed over
/// the measure windows.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SamplingConfig {
    /// Measure windows; 0 switches sampling off.
    pub windows: u32,
    /// Accesses fast-forwarded functionally after each measure window
    /// (not after the last: the run ends with it).
    pub fast_forward: u64,
    /// Accesses timed before each measure window, their statistics
    /// discarded: they warm the TLBs and caches the fast-forward left cold.
    pub warmup: u64,
    /// Accesses timed and counted in each window.
    pub measure: u64,
}

impl SamplingConfig {
    /// Whether sampling is on.
    pub fn enabled(&self) -> bool {
        self.windows > 0
    }

    /// Accesses from the start of one window to the start of the next.
    pub fn period(&self) -> u64 {
        self.warmup.saturating_add(self.measure).saturating_add(self.fast_forward)
    }

    /// The keys' own ranges and how they combine with `run.warmup`,
    /// `run.epoch` and virtualization (`virt_enabled`); `key` is `run`.
    pub fn validate(&self, key: &str, run_warmup: u64, run_epoch: u64, virt_enabled: bool) -> Result<()> {
        if !self.enabled() {
            for (name, value) in
                [("fast_forward", self.fast_forward), ("warmup", self.warmup), ("measure", self.measure)]
            {
                if value != 0 {
                    return Err(Error::config(
                        format!("{key}.sampling.{name}"),
                        format!(
                            "set to {value} but {key}.sampling.windows is 0 (sampling off): give the number of windows"
                        ),
                    ));
                }
            }
            return Ok(());
        }
        if self.measure == 0 {
            return Err(Error::config(format!("{key}.sampling.measure"), "a measure window needs at least 1 access"));
        }
        if run_warmup != 0 {
            return Err(Error::config(
                format!("{key}.warmup"),
                format!("{key}.warmup and {key}.sampling: each window has its own warm-up ({key}.sampling.warmup)"),
            ));
        }
        if run_epoch != 0 {
            return Err(Error::config(
                format!("{key}.epoch"),
                format!("{key}.epoch and {key}.sampling: the timeseries holds one record per measure window instead"),
            ));
        }
        if virt_enabled {
            return Err(Error::config(
                format!("{key}.sampling.windows"),
                "sampling needs a functional fast-forward, which virtualized runs (virt.enabled) do not have yet",
            ));
        }
        Ok(())
    }
}

/// `run.fast_forward_cpi`: 0 (measured) or a positive, finite CPI.
pub fn validate_fast_forward_cpi(key: &str, cpi: f64) -> Result<()> {
    if !(cpi >= 0.0 && cpi.is_finite()) {
        return Err(Error::config(key, format!("{cpi} is not a CPI: 0 (measured) or a positive number")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(r: Result<()>) -> String {
        match r {
            Err(Error::Config { key, .. }) => key,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn sampling_off_is_valid_and_keys_without_windows_are_refused() {
        assert!(SamplingConfig::default().validate("run", 5, 5, true).is_ok());
        let s = SamplingConfig { measure: 10, ..SamplingConfig::default() };
        assert_eq!(key_of(s.validate("run", 0, 0, false)), "run.sampling.measure");
    }

    #[test]
    fn combinations_that_make_no_sense_name_their_key() {
        let s = SamplingConfig { windows: 2, fast_forward: 100, warmup: 10, measure: 10 };
        assert!(s.validate("run", 0, 0, false).is_ok());
        assert_eq!(s.period(), 120);
        assert_eq!(key_of(s.validate("run", 1000, 0, false)), "run.warmup");
        assert_eq!(key_of(s.validate("run", 0, 1000, false)), "run.epoch");
        assert_eq!(key_of(s.validate("run", 0, 0, true)), "run.sampling.windows");
        let empty = SamplingConfig { measure: 0, ..s };
        assert_eq!(key_of(empty.validate("run", 0, 0, false)), "run.sampling.measure");
        assert_eq!(key_of(validate_fast_forward_cpi("run.fast_forward_cpi", -1.0)), "run.fast_forward_cpi");
        assert!(validate_fast_forward_cpi("run.fast_forward_cpi", 0.0).is_ok());
    }
}
