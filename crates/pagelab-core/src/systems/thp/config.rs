//! `os.thp`: Linux's THP knobs.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};

/// Linux's THP knobs (/sys/kernel/mm/transparent_hugepage).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpConfig {
    /// Run khugepaged.
    pub khugepaged: bool,
    /// khugepaged/scan_sleep_millisecs (Linux default 10000).
    pub scan_sleep_ms: f64,
    /// khugepaged/pages_to_scan: PTEs examined per wake-up (Linux 4096).
    pub pages_to_scan: u32,
    /// khugepaged/max_ptes_none: empty PTEs a range may have and still be
    /// collapsed (Linux 511: collapse even a range with one present page).
    pub max_ptes_none: u32,
    /// Allocate huge pages at fault time (enabled=always); false models
    /// enabled=madvise with no madvise: only khugepaged makes huge pages.
    pub fault: bool,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig { khugepaged: true, scan_sleep_ms: 10_000.0, pages_to_scan: 4096, max_ptes_none: 511, fault: true }
    }
}

impl ThpConfig {
    fn check_keys(&self, prefix: &str) -> Result<()> {
        if self.max_ptes_none > 511 {
            return Err(Error::config(format!("{prefix}.thp.max_ptes_none"), "must be at most 511"));
        }
        if self.scan_sleep_ms.is_nan() || self.scan_sleep_ms < 0.0 {
            return Err(Error::config(format!("{prefix}.thp.scan_sleep_ms"), "must be a number of milliseconds >= 0"));
        }
        if self.pages_to_scan == 0 {
            return Err(Error::config(format!("{prefix}.thp.pages_to_scan"), "must be at least 1"));
        }
        Ok(())
    }
}

impl SystemTable for ThpConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix)
    }
}
