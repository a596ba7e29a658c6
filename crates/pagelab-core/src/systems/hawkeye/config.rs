//! `os.hawkeye`: HawkEye's keys. Its promotions are khugepaged's, so they
//! wake and spend as `os.thp.scan_sleep_ms`, `os.thp.pages_to_scan` and
//! `os.thp.max_ptes_none` say (the artifact sets khugepaged's sysfs knobs
//! for HawkEye as for everyone: `HWK_SLEEP = KHUGE_SLEEP`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};

/// HawkEye (`os.policy = "hawkeye"`), with the ET artifact's settings as
/// defaults (`env/hwk.env`, `scripts/run-eval-base.sh`, the kernel's
/// `mm/hawkeye/ohp.c` in cslab-ntua/et-linux).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HawkeyeConfig {
    /// Huge pages at fault time where THP would take one (`HWK_THP=1`:
    /// `ohp_disable_thp = 0`); false leaves every huge page to promotion.
    pub fault: bool,
    /// How long the access bits of a process's candidate regions
    /// accumulate between their clearing and their count (kbinmanager's
    /// `kbinmanager_wait_scan_period(30000)` in the artifact's port; the
    /// paper's HawkEye sampled for 1 s).
    pub access_window_ms: f64,
    /// kbinmanager's sleep after each round of counts (the port's fixed
    /// `sleep_msecs = 1000`).
    pub rescan_sleep_ms: f64,
}

impl Default for HawkeyeConfig {
    fn default() -> Self {
        HawkeyeConfig { fault: true, access_window_ms: 30_000.0, rescan_sleep_ms: 1_000.0 }
    }
}

impl HawkeyeConfig {
    pub fn is_default(&self) -> bool {
        *self == HawkeyeConfig::default()
    }

    fn check_keys(&self, prefix: &str) -> Result<()> {
        for (key, ms) in [("access_window_ms", self.access_window_ms), ("rescan_sleep_ms", self.rescan_sleep_ms)] {
            if !ms.is_finite() || ms < 0.0 {
                return Err(Error::config(format!("{prefix}.hawkeye.{key}"), format!("{ms} is not a duration >= 0")));
            }
        }
        if self.access_window_ms == 0.0 {
            return Err(Error::config(
                format!("{prefix}.hawkeye.access_window_ms"),
                "must be a number of milliseconds above 0",
            ));
        }
        Ok(())
    }
}

impl SystemTable for HawkeyeConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix)
    }

    fn hidden(&self) -> bool {
        self.is_default()
    }
}
