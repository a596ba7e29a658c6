//! The `os` table: the policy (or the chain of systems) and each
//! system's own table, beside the kernel's (`os::config`).

use serde::{Deserialize, Serialize};

use super::balloon::BalloonConfig;
use super::chp::ChpConfig;
use super::coloring::ColoringConfig;
use super::elastic::ElasticConfig;
use super::hawkeye::HawkeyeConfig;
use super::hugetlb::HugetlbConfig;
use super::ksm::KsmConfig;
use super::perforated::{HolesConfig, PerforatedConfig};
use super::thp::ThpConfig;
use super::REGISTRY;
use crate::error::{Error, Result};
use crate::os::{AutoVma, FaultCosts, FragmentationConfig};
use crate::phys::FaultyGranularity;

/// The paging policy: names a default chain of systems (`os.systems`
/// gives one explicitly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// 4 KiB pages only, from the buddy allocator.
    Base,
    /// Transparent huge pages at fault, plus khugepaged.
    Thp,
    /// A reserved pool of huge pages for chosen VMAs.
    Hugetlb,
    /// PALLOC-style page coloring of 4 KiB pages.
    Coloring,
    /// Consecutive faults get consecutive colors (Kessler and Hill).
    BinHopping,
    /// Colored Huge Pages: 2 MiB regions backed by strided colored
    /// sub-mappings (and the Scattered Superpages and SWAP baselines).
    Chp,
    /// THP with perforated pages where a region cannot be a huge page.
    Perforated,
    /// Gap-Tolerant Sequential Mapping: 2 MiB pages of 64 KiB sub-blocks
    /// of 4 MiB chunks, around faulty frames.
    Gtsm,
    /// Elastic Translations: CoalaPaging and the contiguous bit (64 KiB and
    /// 32 MiB coalesced translations on Arm-style machines).
    Elastic,
    /// Linux's multi-size THP: 2 MiB, else 64 KiB (contiguous), else 4 KiB
    /// at fault (the Elastic Translations paper's mTHP baseline).
    Mthp,
    /// Trident at fault time: 1 GiB, else 2 MiB, else 4 KiB (the Elastic
    /// Translations paper's baseline; needs `machine.max_order = 18`).
    Trident,
    /// HawkEye: huge pages at fault as THP, and promotion of the most
    /// accessed 2 MiB regions first, by access-bit sampling (the Elastic
    /// Translations paper's baseline).
    Hawkeye,
}

impl PolicyKind {
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Base => "base",
            PolicyKind::Thp => "thp",
            PolicyKind::Hugetlb => "hugetlb",
            PolicyKind::Coloring => "coloring",
            PolicyKind::BinHopping => "bin-hopping",
            PolicyKind::Chp => "chp",
            PolicyKind::Perforated => "perforated",
            PolicyKind::Gtsm => "gtsm",
            PolicyKind::Elastic => "elastic",
            PolicyKind::Mthp => "mthp",
            PolicyKind::Trident => "trident",
            PolicyKind::Hawkeye => "hawkeye",
        }
    }

    /// The chain of systems this policy means: a huge-page system first,
    /// then the one that backs what it declines.
    pub fn chain(self) -> &'static [&'static str] {
        match self {
            PolicyKind::Base => &["base"],
            PolicyKind::Thp => &["thp", "base"],
            PolicyKind::Hugetlb => &["hugetlb", "base"],
            PolicyKind::Coloring => &["coloring"],
            PolicyKind::BinHopping => &["bin-hopping"],
            PolicyKind::Chp => &["chp", "coloring"],
            PolicyKind::Perforated => &["perforated", "thp", "base"],
            PolicyKind::Gtsm => &["gtsm", "base"],
            PolicyKind::Elastic => &["elastic", "base"],
            PolicyKind::Mthp => &["thp", "mthp", "base"],
            PolicyKind::Trident => &["trident", "thp", "base"],
            PolicyKind::Hawkeye => &["hawkeye", "base"],
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct OsConfig {
    pub policy: PolicyKind,
    /// The chain of systems, in order, when given: a fault goes to each
    /// until one backs it (the last must back every fault: `base`,
    /// `coloring` or `bin-hopping`). Unset = the chain `policy` names
    /// ([`PolicyKind::chain`]); an empty list is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub systems: Option<Vec<String>>,
    /// Create VMAs around touched addresses when the workload emits no
    /// mapping events: "auto" (on only then, or when its events are
    /// partial: `Workload::partial_mappings`), "on", "off".
    pub auto_vma: AutoVma,
    pub fragmentation: FragmentationConfig,
    pub thp: ThpConfig,
    pub hugetlb: HugetlbConfig,
    pub coloring: ColoringConfig,
    pub chp: ChpConfig,
    pub perforated: PerforatedConfig,
    /// The fragmentation scenario perforated pages are evaluated under
    /// (read by the `perforated` and `holes` systems).
    pub holes: HolesConfig,
    /// The share of memory faulty (retired) from boot: the probability of
    /// each unit of `faulty_granularity` (`phys::faulty`).
    #[serde(skip_serializing_if = "is_zero")]
    pub faulty_frames: f64,
    /// What one fault takes out: a 4 KiB frame (`"4k"`) or an aligned
    /// 64 KiB block (`"64k"`).
    #[serde(skip_serializing_if = "is_default_granularity")]
    pub faulty_granularity: FaultyGranularity,
    pub elastic: ElasticConfig,
    /// HawkEye's table: written out only when changed, so that every
    /// other configuration's text (and hash) stays what it was.
    #[serde(skip_serializing_if = "HawkeyeConfig::is_default")]
    pub hawkeye: HawkeyeConfig,
    pub fault_cost: FaultCosts,
    /// Kernel Samepage Merging: only the hypervisor's (`virt.host.ksm`).
    #[serde(skip_serializing_if = "KsmConfig::is_default")]
    pub ksm: KsmConfig,
    /// The virtio balloon's policy: only the hypervisor's (`virt.host.balloon`).
    #[serde(skip_serializing_if = "BalloonConfig::is_default")]
    pub balloon: BalloonConfig,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_default_granularity(g: &FaultyGranularity) -> bool {
    *g == FaultyGranularity::default()
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            policy: PolicyKind::Base,
            systems: None,
            auto_vma: AutoVma::Auto,
            fragmentation: FragmentationConfig::default(),
            thp: ThpConfig::default(),
            hugetlb: HugetlbConfig::default(),
            coloring: ColoringConfig::default(),
            chp: ChpConfig::default(),
            perforated: PerforatedConfig::default(),
            holes: HolesConfig::default(),
            faulty_frames: 0.0,
            faulty_granularity: FaultyGranularity::default(),
            elastic: ElasticConfig::default(),
            hawkeye: HawkeyeConfig::default(),
            fault_cost: FaultCosts::default(),
            ksm: KsmConfig::default(),
            balloon: BalloonConfig::default(),
        }
    }
}

impl OsConfig {
    /// The chain of systems, by name, in order.
    pub fn chain(&self) -> Vec<&str> {
        match &self.systems {
            Some(systems) => systems.iter().map(String::as_str).collect(),
            None => self.policy.chain().to_vec(),
        }
    }

    /// Checks every key; `phys_mem` (bytes) and `max_order` are the
    /// machine's, which some pools must fit.
    pub fn validate(&self, prefix: &str, phys_mem: u64, max_order: u8) -> Result<()> {
        self.validate_chain(prefix)?;
        self.fragmentation.validate(prefix)?;
        self.thp.validate(prefix)?;
        self.hugetlb.validate(prefix, phys_mem, max_order)?;
        self.chp.validate(prefix)?;
        self.perforated.validate(prefix)?;
        self.holes.validate(prefix)?;
        if !(0.0..1.0).contains(&self.faulty_frames) {
            let msg = format!("{} is not a rate in [0, 1)", self.faulty_frames);
            return Err(Error::config(format!("{prefix}.faulty_frames"), msg));
        }
        self.elastic.validate(prefix, self.chain().contains(&"elastic"))?;
        self.hawkeye.validate(prefix)?;
        // The hypervisor's OS table is the only one validated under this name.
        self.ksm.validate(prefix, prefix == "virt.host")?;
        self.balloon.validate(prefix, prefix == "virt.host")?;
        self.fault_cost.validate(prefix)
    }

    fn validate_chain(&self, prefix: &str) -> Result<()> {
        let key = format!("{prefix}.systems");
        let known: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        let terminal: Vec<&str> = REGISTRY.iter().filter(|r| r.terminal).map(|r| r.name).collect();
        let systems = self.systems.as_deref().unwrap_or_default();
        if self.systems.is_some() && systems.is_empty() {
            let msg = format!(
                "an empty chain backs no fault: name the systems, the last one of {}, or leave the key out \
                 for the chain `{prefix}.policy` names",
                terminal.join(", ")
            );
            return Err(Error::config(key, msg));
        }
        for (i, name) in systems.iter().enumerate() {
            if !known.contains(&name.as_str()) {
                return Err(Error::config(key, format!("unknown system `{name}` (known: {})", known.join(", "))));
            }
            if systems[..i].contains(name) {
                return Err(Error::config(key, format!("`{name}` is in the chain twice")));
            }
        }
        let last = self.chain().last().copied().unwrap_or("");
        if !REGISTRY.iter().any(|r| r.name == last && r.terminal) {
            return Err(Error::config(
                key,
                format!(
                    "the chain must end with a system that backs every fault ({}), not `{last}`",
                    terminal.join(", ")
                ),
            ));
        }
        Ok(())
    }
}
