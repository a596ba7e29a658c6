//! Configuration: one tree, validated once at the door.
//!
//! The tree mirrors the component tree (`machine.tlb`, `machine.cache.llc`,
//! `os.thp`, `workload`, `run`). Each component declares its own keys and
//! defaults beside the code that reads them (`TlbConfig` in `hw::tlb`,
//! `CacheHierarchyConfig` in `hw::cache`...); this module assembles them,
//! applies a machine preset and `--set` overrides, rejects unknown keys and
//! reports every error with the full dotted key.

mod load;
pub mod os;
mod presets;
#[cfg(test)]
mod range_tests;
mod sampling;
mod timing;
mod vms;

pub use load::{apply_override, parse_config};
pub use os::{FaultCosts, FragmentationConfig, OsConfig};
pub use presets::{preset_about, preset_names, preset_table};
pub use sampling::SamplingConfig;
pub use timing::{OooConfig, TimingModel};
pub use vms::{Guest, VmConfig, MAX_VMS};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hw::cache::CacheHierarchyConfig;
use crate::hw::dram::DramConfig;
use crate::hw::nested_tlb::NestedTlbConfig;
use crate::hw::prefetch::PrefetchConfig;
use crate::hw::pwc::PwcConfig;
use crate::hw::tlb::TlbConfig;
use crate::units::ByteSize;
pub use crate::virt::{Backing, VirtConfig, VirtCosts};
use crate::workload::WorkloadConfig;

/// The whole simulation: a machine, its OS, one workload per core, and how
/// to run it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    #[serde(default)]
    pub machine: MachineConfig,
    #[serde(default)]
    pub os: OsConfig,
    /// The single workload of a one-core run (`workload.kind = ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadConfig>,
    /// One workload per core (`[[workloads]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadConfig>,
    #[serde(default)]
    pub run: RunConfig,
    /// Virtualization: with `virt.enabled`, `os` is the guest's OS and
    /// `virt.host` the hypervisor's.
    #[serde(default)]
    pub virt: VirtConfig,
    /// Several VMs on one host (`[[vms]]`), each with its own `os`,
    /// `guest_mem` and `workload`/`workloads` (`config::vms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<VmConfig>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MachineConfig {
    /// Name of the preset the other keys were merged over (data only: the
    /// merge happens in `load`).
    pub preset: String,
    pub phys_mem: ByteSize,
    /// Cores; 0 means one per workload. Each core runs one workload.
    pub cores: u32,
    /// Clock, to turn daemon periods given in milliseconds into cycles.
    pub freq_ghz: f64,
    /// Largest buddy order (10 = 4 MiB blocks, as Linux; up to 18 = 1 GiB).
    pub max_order: u8,
    /// Radix page-table levels: 4, or 5 (LA57).
    pub paging_levels: u8,
    /// Physical-address bits that select cache sets and that page coloring
    /// can control (the CHP paper's Table II: "L2/L3 coloring bits").
    /// Empty = the LLC's set-index bits at or above bit 12.
    pub color_bits: Vec<u32>,
    pub tlb: TlbConfig,
    /// The paging-structure caches (of the guest's tables in a VM; its
    /// `enabled` switches off both dimensions').
    pub pwc: PwcConfig,
    /// The EPT's paging-structure caches (virtualized runs only).
    pub ept_pwc: PwcConfig,
    /// Guest-physical to host-physical translations (virtualized runs only).
    pub nested_tlb: NestedTlbConfig,
    pub walker: WalkerConfig,
    pub cache: CacheHierarchyConfig,
    pub memory: MemoryConfig,
    pub timing: TimingConfig,
    /// The out-of-order window of the interval timing model.
    pub ooo: OooConfig,
    /// The hardware data prefetchers.
    pub prefetch: PrefetchConfig,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            preset: String::new(),
            phys_mem: ByteSize(16 << 30),
            cores: 0,
            freq_ghz: 3.0,
            max_order: 10,
            paging_levels: 4,
            color_bits: Vec::new(),
            tlb: TlbConfig::default(),
            pwc: PwcConfig::default(),
            ept_pwc: PwcConfig::default(),
            nested_tlb: NestedTlbConfig::default(),
            walker: WalkerConfig::default(),
            cache: CacheHierarchyConfig::default(),
            memory: MemoryConfig::default(),
            timing: TimingConfig::default(),
            ooo: OooConfig::default(),
            prefetch: PrefetchConfig::default(),
        }
    }
}

/// Where the page walker's references enter the data caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WalkerCacheLevel {
    L1d,
    L2,
    Llc,
    /// Walk references go straight to memory (no cache holds page tables).
    None,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalkerConfig {
    pub cache_level: WalkerCacheLevel,
    /// Cycles a walk costs beyond its references and the page-walk-cache
    /// lookup (`machine.pwc.latency`): the hand-over from the L2 TLB, the
    /// walker's own steps, the fill of the TLB and the replay of the
    /// access. Each preset says where its value comes from; 0 (the
    /// default) leaves them out.
    pub latency: u32,
}

impl Default for WalkerConfig {
    fn default() -> Self {
        // Intel's walker looks up the L1D first (Skylake), so do we.
        WalkerConfig { cache_level: WalkerCacheLevel::L1d, latency: 0 }
    }
}

/// The largest `machine.walker.latency` accepted: a walk's fixed part is
/// tens of cycles on the machines measured; thousands is a typo.
const MAX_WALKER_LATENCY: u32 = 1000;

impl MachineConfig {
    /// What every walk costs besides its references: the page-walk-cache
    /// lookup (nothing when they are switched off) and the walker's own
    /// latency. Charged once per walk (a 2D walk is one walk of the
    /// walker; its EPT steps add their own lookups).
    pub fn walk_latency(&self) -> u32 {
        self.pwc.lookup_latency() + self.walker.latency
    }
}

/// The memory behind the LLC: one tier of `latency`, or the `tiers`
/// (`phys::tiers`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Load-to-use latency of a DRAM access, in core cycles (without tiers).
    pub latency: u32,
    /// Memory tiers, fastest (filled first) first; their sizes add up to
    /// `machine.phys_mem`. Empty: one tier of `latency`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<crate::phys::TierConfig>,
    /// The DIMMs' banks and row buffers (`hw::dram`): with it on, a read
    /// that finds its row open costs less than `latency`, one that finds
    /// its bank closed a little less (`latency` is the third case, another
    /// row open); banks overlap under the interval model.
    #[serde(skip_serializing_if = "DramConfig::is_off")]
    pub dram: DramConfig,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { latency: 240, tiers: Vec::new(), dram: DramConfig::default() }
    }
}

impl MemoryConfig {
    /// The row-buffer model's table against the rest of the machine: one
    /// memory (tiers keep their own latencies), and a `latency` that holds
    /// the DIMMs' own part of a row conflict (the uncore's trip is the rest).
    fn validate_dram(&self, freq_ghz: f64) -> Result<()> {
        if !self.dram.enabled {
            return Ok(());
        }
        self.dram.validate()?;
        let key = format!("{}.enabled", crate::hw::dram::config::DRAM_KEY);
        if !self.tiers.is_empty() {
            let msg = "the row-buffer model is one memory's; with machine.memory.tiers each tier keeps its own \
                       latencies: set it to false";
            return Err(Error::config(key, msg));
        }
        let dimm = self.dram.conflict_cycles(freq_ghz);
        if f64::from(self.latency) < dimm {
            let msg = format!(
                "{} cycles, less than the DIMMs' tRP + tRCD + tCL + burst ({dimm:.1} cycles at machine.freq_ghz): \
                 the latency of a read that finds another row open includes them",
                self.latency
            );
            return Err(Error::config("machine.memory.latency", msg));
        }
        Ok(())
    }
}

/// The timing model's parameters (see `engine::timing`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimingConfig {
    /// `"interval"` (default) or `"fixed"`; `mlp` and `walk_mlp` are the
    /// fixed model's only.
    pub model: TimingModel,
    /// Cycles per instruction when every access hits the L1 and the L1 TLB.
    pub base_cpi: f64,
    /// Memory-level parallelism: data-access latencies beyond the L1 are
    /// divided by it (out-of-order cores overlap independent misses).
    pub mlp: f64,
    /// The same for translation latency; walks of one core mostly serialize
    /// (Skylake has two walkers), so the default is 1.
    pub walk_mlp: f64,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { model: TimingModel::Interval, base_cpi: 0.5, mlp: 2.0, walk_mlp: 1.0 }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Instructions (per core) before statistics are reset; the warm-up
    /// still fills caches, TLBs and page tables.
    pub warmup: u64,
    /// Instructions (of core 0) between two statistics snapshots; 0 = none.
    pub epoch: u64,
    /// Accesses a core runs before the next core gets its turn (the
    /// deterministic interleaving granularity).
    pub quantum: u32,
    /// Seed of the OS side (fragmentation injection, random replacement).
    pub seed: u64,
    /// Check every TLB hit against the page table and fail on a stale
    /// translation (slow: for tests and debugging).
    pub check_translations: bool,
    /// Also wait for every workload's initialisation pass (its first-touch
    /// stores) to end before resetting statistics, so that they describe
    /// the measured accesses only.
    pub skip_init: bool,
    /// Sampled measurement: windows of warm-up and measurement between
    /// functional fast-forwards (`engine::sampling`).
    pub sampling: SamplingConfig,
    /// Cycles per instruction of a functional fast-forward's clock (beside
    /// its faults' costs); 0 = measured: the CPI of the core's last
    /// measure window without its fault and daemon cycles, else
    /// `machine.timing.base_cpi`.
    pub fast_forward_cpi: f64,
    /// Report each core's process's COPLACE conflict level at the end
    /// (`coreN.conflict_level`, `engine/conflict.rs`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub conflict_level: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            warmup: 0,
            epoch: 0,
            quantum: 512,
            seed: 1,
            check_translations: false,
            skip_init: false,
            sampling: SamplingConfig::default(),
            fast_forward_cpi: 0.0,
            conflict_level: false,
        }
    }
}

impl SimConfig {
    /// The workloads, one per core, whichever form the file used (the
    /// VMs' vCPUs in order with `[[vms]]`).
    pub fn workload_list(&self) -> Vec<WorkloadConfig> {
        self.workload_tables().into_iter().map(|(_, w)| w).collect()
    }

    /// Each core's workload table's dotted key (`workload`,
    /// `workloads[1]`, `vms[0].workloads[1]`), for errors.
    pub fn workload_keys(&self) -> Vec<String> {
        self.workload_tables().into_iter().map(|(k, _)| k).collect()
    }

    /// The files the run reads: the workloads' traces, and each OS's
    /// fragmentation snapshot and the files its systems' tables name (an output must not
    /// replace one of them: `outfile::check_not_input`).
    pub fn input_files(&self) -> Vec<std::path::PathBuf> {
        let mut files: Vec<std::path::PathBuf> = self.workload_list().into_iter().filter_map(|w| w.path).collect();
        let oses = self.guests().into_iter().map(|g| g.os).chain([&self.virt.host]);
        for os in oses {
            files.extend(os.fragmentation.snapshot.iter().map(Into::into));
            files.extend(os.system_input_files());
        }
        files
    }

    /// One core per workload, but for those that start after the one
    /// before them (`workload.after`), which share its core.
    pub fn nr_cores(&self) -> usize {
        self.workload_list().iter().filter(|w| w.after.is_none()).count()
    }

    /// Fills the defaults that come from the machine, each system's table
    /// its own (`SystemTable::fill_machine_defaults`; Leshy's budget is the
    /// L2 TLB's entries), in every OS: the native or guest one, each VM's,
    /// the hypervisor's. With `[[vms]]` the top-level `os` stays as given:
    /// it must be absent, and `validate_vms` tells so by its defaults.
    pub fn fill_machine_defaults(&mut self) {
        let entries = self.machine.tlb.l2_entries.max(1);
        let top = self.vms.is_empty().then_some(&mut self.os);
        let oses =
            top.into_iter().chain(std::iter::once(&mut self.virt.host)).chain(self.vms.iter_mut().map(|vm| &mut vm.os));
        for os in oses {
            os.fill_machine_defaults(entries);
        }
    }

    /// Checks everything serde could not: ranges, and how keys relate.
    pub fn validate(&self) -> Result<()> {
        let m = &self.machine;
        self.validate_vms()?;
        match (&self.workload, self.workloads.len()) {
            (None, 0) if self.vms.is_empty() => {
                return Err(Error::config("workload", "no workload: give [workload] or [[workloads]]"))
            }
            (Some(_), n) if n > 0 => {
                return Err(Error::config("workloads", "give either [workload] or [[workloads]], not both"))
            }
            _ => {}
        }
        let n = self.nr_cores() as u32;
        if m.cores != 0 && m.cores != n {
            return Err(Error::config(
                "machine.cores",
                format!(
                    "{} cores but {} workloads: each core runs one workload (and those that start after it)",
                    m.cores, n
                ),
            ));
        }
        let frames = m.phys_mem.bytes() >> 12;
        if !m.phys_mem.bytes().is_multiple_of(2 << 20) || frames < 1024 || m.phys_mem.bytes() > (1 << 40) {
            return Err(Error::config(
                "machine.phys_mem",
                format!("{} is not a multiple of 2MiB between 4MiB and 1TiB", m.phys_mem),
            ));
        }
        if !(9..=18).contains(&m.max_order) {
            return Err(Error::config("machine.max_order", "must be between 9 and 18"));
        }
        crate::phys::tiers::validate_tiers(&m.memory.tiers, m.phys_mem.bytes(), m.max_order)?;
        if m.paging_levels != 4 && m.paging_levels != 5 {
            return Err(Error::config("machine.paging_levels", "must be 4 or 5"));
        }
        if !(m.freq_ghz > 0.0 && m.freq_ghz < 100.0) {
            return Err(Error::config("machine.freq_ghz", "must be a clock in GHz above 0 and below 100"));
        }
        m.memory.validate_dram(m.freq_ghz)?;
        let t = &m.timing;
        for (key, v) in [("base_cpi", t.base_cpi), ("mlp", t.mlp), ("walk_mlp", t.walk_mlp)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::config(format!("machine.timing.{key}"), "must be a finite number above 0"));
            }
        }
        if self.run.quantum == 0 {
            return Err(Error::config("run.quantum", "must be at least 1"));
        }
        self.run.sampling.validate("run", self.run.warmup, self.run.epoch, self.virt.enabled)?;
        sampling::validate_fast_forward_cpi("run.fast_forward_cpi", self.run.fast_forward_cpi)?;
        m.tlb.validate("machine.tlb")?;
        m.pwc.validate("machine.pwc")?;
        if m.walker.latency > MAX_WALKER_LATENCY {
            return Err(Error::config(
                "machine.walker.latency",
                format!("{} cycles: must be at most {MAX_WALKER_LATENCY}", m.walker.latency),
            ));
        }
        m.ept_pwc.validate("machine.ept_pwc")?;
        m.nested_tlb.validate("machine.nested_tlb")?;
        if self.virt.enabled {
            self.virt.validate(m.phys_mem.bytes(), m.max_order)?;
            for guest in self.guests() {
                self.virt.validate_guest(&guest.os_key, guest.os, &guest.guest_mem_key, guest.guest_mem)?;
            }
            let most = self.vm_of_workloads().iter().fold(vec![0usize; self.guests().len()], |mut n, &vm| {
                n[vm] += 1;
                n
            });
            if most.iter().any(|&n| n >= 1 << crate::virt::VPID_SHIFT) {
                return Err(Error::config("workloads", "a VM runs fewer than 4096 processes"));
            }
        }
        m.cache.validate("machine.cache")?;
        m.ooo.validate("machine.ooo")?;
        m.prefetch.validate("machine.prefetch")?;
        // A guest's pools come out of guest memory.
        for guest in self.guests() {
            let os_mem = if self.virt.enabled { guest.guest_mem } else { m.phys_mem };
            guest.os.validate(&guest.os_key, os_mem.bytes(), m.max_order)?;
        }
        self.validate_sequences()?;
        self.validate_contents()?;
        for (prefix, w) in self.workload_tables() {
            w.validate(&prefix)?;
            if self.virt.enabled && w.fast_forward_mode == crate::workload::FastForwardMode::Functional {
                return Err(Error::config(
                    format!("{prefix}.fast_forward_mode"),
                    "a functional fast-forward is not built for virtualized runs (virt.enabled) yet",
                ));
            }
        }
        Ok(())
    }

    /// The resolved configuration as TOML (every default written out).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# could not serialize: {e}\n"))
    }
}

impl SimConfig {
    /// The page colors the OS uses: `os.coloring.bits`, else the machine's
    /// `color_bits`, else the LLC's set-index bits at or above bit 12.
    pub fn color_map(&self) -> Result<crate::hw::cache::ColorMap> {
        self.color_map_of(&self.os, "os")
    }

    /// The same for the OS `os` (a VM's), its keys under `os_key`.
    pub fn color_map_of(&self, os: &OsConfig, os_key: &str) -> Result<crate::hw::cache::ColorMap> {
        use crate::hw::cache::ColorMap;
        if !os.coloring.bits.is_empty() {
            ColorMap::new(&os.coloring.bits, &format!("{os_key}.coloring.bits"))
        } else if !self.machine.color_bits.is_empty() {
            ColorMap::new(&self.machine.color_bits, "machine.color_bits")
        } else {
            ColorMap::from_llc(&self.machine.cache.llc.geometry())
        }
    }
}
