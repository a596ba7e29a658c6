//! KSM, Kernel Samepage Merging: a policy of the hypervisor. This file
//! holds its table (`virt.host.ksm`: Linux's knobs, with Linux's defaults,
//! /sys/kernel/mm/ksm), at the systems' layer with the OS table that
//! carries it; the scanner, its pages and their copy-on-write are [`host`],
//! at the hypervisor's layer (it merges guest memory by the page contents
//! the VMs' workloads declare). Only the hypervisor's OS may switch it on.

pub mod host;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::systems::{SystemTable, TableCheck};

/// Which host huge pages KSM may split to merge one of their 4 KiB parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KsmSplit {
    /// Never: only guest memory the host maps with 4 KiB EPT leaves is
    /// scanned; huge leaves are skipped (not counted as scanned).
    Never,
    /// Every huge leaf the scanner meets is split first (HugeScope's "base
    /// page only"): all guest memory becomes 4 KiB-mapped.
    All,
    /// A huge leaf is split when one of its 4 KiB parts has a duplicate
    /// (Linux: `try_to_merge_one_page` splits a THP it merges into).
    #[default]
    AnyDuplicate,
    /// Perforated Pages' answer (the paper's II-B): a huge leaf with a
    /// duplicate part becomes a perforated page of the same frames, and
    /// each merged part a hole remapped to its KSM page, so the rest of
    /// the leaf keeps its 2 MiB reach (`systems/ksm/host/punch.rs`).
    Punch,
}

/// Whether KSM keeps the host placement's colors (COPLACE's eKSM, the
/// paper's section IV): a page's color is its host frame's, under the
/// colors the host places frames by (`Kernel::placement_colors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KsmColors {
    /// Linux's KSM: any identical pages merge.
    #[default]
    Ignore,
    /// Only identical pages of the same color merge.
    Strict,
    /// Same-color duplicates first; across colors too while identical
    /// pages are scarce (`scarce`).
    Eksm,
}

/// `virt.host.ksm`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct KsmConfig {
    /// ksmd runs (`run` = 1).
    pub enabled: bool,
    /// Present 4 KiB pages scanned per wake-up (Linux's default 100).
    pub pages_to_scan: u32,
    /// Simulated milliseconds between wake-ups (`sleep_millisecs`, 20).
    pub sleep_ms: f64,
    pub split: KsmSplit,
    /// Sharers of one KSM page at most; more duplicates start another KSM
    /// page of the same content (Linux's default 256).
    pub max_page_sharing: u32,
    /// Whether merges keep the host placement's colors.
    pub colors: KsmColors,
    /// `colors = "eksm"`: identical pages are scarce after a full scan in
    /// which fewer than this fraction of the pages examined were a KSM
    /// page's sharers or found an identical page (any color); the next
    /// full scan may then merge across colors. pagelab's choice (the paper
    /// gives no value): docs/systems/coplace.md.
    pub scarce: f64,
}

impl Default for KsmConfig {
    fn default() -> Self {
        KsmConfig {
            enabled: false,
            pages_to_scan: 100,
            sleep_ms: 20.0,
            split: KsmSplit::default(),
            max_page_sharing: 256,
            colors: KsmColors::Ignore,
            scarce: 0.1,
        }
    }
}

impl KsmConfig {
    /// Whether it is all defaults (then the OS table does not show it).
    pub fn is_default(&self) -> bool {
        *self == KsmConfig::default()
    }

    /// `host`: whether this is the hypervisor's OS table (the only one
    /// that may switch KSM on).
    fn check_keys(&self, prefix: &str, host: bool) -> Result<()> {
        if self.enabled && !host {
            return Err(Error::config(
                format!("{prefix}.ksm.enabled"),
                "KSM merges VMs' guest memory: switch it on for the hypervisor (virt.host.ksm.enabled) in a \
                 virtualized run",
            ));
        }
        if self.pages_to_scan == 0 {
            return Err(Error::config(format!("{prefix}.ksm.pages_to_scan"), "must be at least 1"));
        }
        if !(self.sleep_ms >= 0.0 && self.sleep_ms.is_finite()) {
            return Err(Error::config(format!("{prefix}.ksm.sleep_ms"), "must be a number of milliseconds >= 0"));
        }
        if !(0.0..=1.0).contains(&self.scarce) {
            return Err(Error::config(
                format!("{prefix}.ksm.scarce"),
                format!("{}: a fraction of the pages scanned, from 0 to 1", self.scarce),
            ));
        }
        if self.max_page_sharing < 2 {
            return Err(Error::config(format!("{prefix}.ksm.max_page_sharing"), "must be at least 2"));
        }
        Ok(())
    }
}

impl SystemTable for KsmConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix, check.host)
    }

    fn hidden(&self) -> bool {
        self.is_default()
    }
}
