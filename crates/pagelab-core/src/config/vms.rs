//! Several VMs on one host: the `[[vms]]` tables.
//!
//! Each VM has its own guest OS (`os`, the keys of the top-level `os`
//! table), its guest-physical memory (`guest_mem`) and its vCPUs: one per
//! workload (`workload`, one vCPU, or `[[vms.workloads]]`). vCPUs take the
//! machine's cores in order: the first VM's workloads run on cores 0 to
//! n0 - 1, the second's on the next, and so on; `machine.cores`, when
//! given, must be their total. The hypervisor (`virt.host`) and the rest of
//! `virt` stay at the top level: one host for all VMs.
//!
//! Without `[[vms]]`, a virtualized run (`virt.enabled`) is one VM made of
//! the top-level `os`, `virt.guest_mem` and `workload`/`workloads`, exactly
//! as before; giving both forms is an error.

use serde::{Deserialize, Serialize};

use super::SimConfig;
use crate::error::{Error, Result};
use crate::systems::OsConfig;
use crate::units::ByteSize;
use crate::virt::{VirtConfig, VPID_SHIFT};
use crate::workload::WorkloadConfig;

/// One `[[vms]]` table.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    /// The guest's OS (as the top-level `os` of a one-VM run).
    #[serde(default)]
    pub os: OsConfig,
    /// Its guest-physical memory.
    #[serde(default = "default_guest_mem")]
    pub guest_mem: ByteSize,
    /// Its one vCPU's workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadConfig>,
    /// One workload per vCPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadConfig>,
}

fn default_guest_mem() -> ByteSize {
    VirtConfig::default().guest_mem
}

/// The most VMs one host runs: a VPID (1, 2...) must fit above the
/// guest's 12-bit address-space number in the 16-bit hardware tag.
pub const MAX_VMS: usize = (1 << (16 - VPID_SHIFT)) - 1;

/// What one guest is made of, whichever form the file used: its OS and
/// memory and the dotted keys that name them in errors.
#[derive(Debug, Clone)]
pub struct Guest<'a> {
    pub os: &'a OsConfig,
    pub os_key: String,
    pub guest_mem: ByteSize,
    pub guest_mem_key: String,
}

impl VmConfig {
    fn workload_list(&self) -> Vec<WorkloadConfig> {
        match &self.workload {
            Some(w) => vec![w.clone()],
            None => self.workloads.clone(),
        }
    }

    /// The dotted key of each of its workloads (`vms[1].workload`,
    /// `vms[1].workloads[0]`...).
    fn workload_keys(&self, vm: usize) -> Vec<String> {
        match &self.workload {
            Some(_) => vec![format!("vms[{vm}].workload")],
            None => (0..self.workloads.len()).map(|i| format!("vms[{vm}].workloads[{i}]")).collect(),
        }
    }
}

impl SimConfig {
    /// Whether the run is several VMs given as `[[vms]]` (else native, or
    /// one VM from the top-level tables).
    pub fn has_vm_tables(&self) -> bool {
        !self.vms.is_empty()
    }

    /// The guests of a virtualized run, in VPID order; the one guest of
    /// the top-level form otherwise (also what a native run's OS is).
    pub fn guests(&self) -> Vec<Guest<'_>> {
        if self.vms.is_empty() {
            return vec![Guest {
                os: &self.os,
                os_key: "os".into(),
                guest_mem: self.virt.guest_mem,
                guest_mem_key: "virt.guest_mem".into(),
            }];
        }
        self.vms
            .iter()
            .enumerate()
            .map(|(i, vm)| Guest {
                os: &vm.os,
                os_key: format!("vms[{i}].os"),
                guest_mem: vm.guest_mem,
                guest_mem_key: format!("vms[{i}].guest_mem"),
            })
            .collect()
    }

    /// The OS of VM `vm` (the top-level `os` without `[[vms]]`).
    pub fn os_of_vm(&self, vm: usize) -> &OsConfig {
        self.vms.get(vm).map_or(&self.os, |v| &v.os)
    }

    /// The VM each core is a vCPU of (all 0 without `[[vms]]`).
    pub fn vm_of_cores(&self) -> Vec<usize> {
        let firsts = self.workload_list().into_iter().map(|w| w.after.is_none());
        self.vm_of_workloads().into_iter().zip(firsts).filter(|&(_, first)| first).map(|(vm, _)| vm).collect()
    }

    /// The VM each workload (each program) runs in, in `workload_list`
    /// order (all 0 without `[[vms]]`).
    pub fn vm_of_workloads(&self) -> Vec<usize> {
        if self.vms.is_empty() {
            return vec![0; self.workload_list().len()];
        }
        self.vms.iter().enumerate().flat_map(|(vm, v)| std::iter::repeat_n(vm, v.workload_list().len())).collect()
    }

    /// `workload.after`: a program starts after another on the same core,
    /// so the first of a VM's (or the run's) workloads cannot; and page
    /// contents are declared per core, so they do not mix with it.
    pub(super) fn validate_sequences(&self) -> Result<()> {
        let tables = self.workload_tables();
        let vms = self.vm_of_workloads();
        for (i, (key, w)) in tables.iter().enumerate() {
            if w.after.is_none() {
                continue;
            }
            if i == 0 || vms[i - 1] != vms[i] {
                let msg = "\"previous\" needs a workload before it on the same machine (or VM) to start after";
                return Err(Error::config(format!("{key}.after"), msg));
            }
            if let Some((k, _)) = tables.iter().find(|(_, w)| !w.contents.is_none()) {
                return Err(Error::config(format!("{k}.contents"), "not with programs in sequence (workload.after)"));
            }
        }
        Ok(())
    }

    /// Declared page contents (`workload.contents`) are compared by the
    /// hypervisor's services, so they need a VM; they follow a guest's
    /// stores through its 4 KiB, huge and colored huge pages, not yet
    /// through its perforated pages (their dirtying store leaves the
    /// frames' identities as the fault's zeros, so KSM would merge
    /// different data): refused together.
    pub(super) fn validate_contents(&self) -> Result<()> {
        let tables = self.workload_tables();
        let Some((key, _)) = tables.iter().find(|(_, w)| !w.contents.is_none()) else {
            return Ok(());
        };
        if !self.virt.enabled {
            let msg = "page contents are compared by the hypervisor's services: set virt.enabled = true";
            return Err(Error::config(format!("{key}.contents"), msg));
        }
        for ((key, w), vm) in tables.iter().zip(self.vm_of_workloads()) {
            let chain = self.os_of_vm(vm).chain();
            if !w.contents.is_none() && crate::systems::chain_has(&chain, |c| !c.follows_contents) {
                let msg = "not followed through a guest's perforated pages yet: give the guest another policy";
                return Err(Error::config(format!("{key}.contents"), msg));
            }
        }
        Ok(())
    }

    /// Every core's workload table, in core order, with its dotted key.
    pub(super) fn workload_tables(&self) -> Vec<(String, WorkloadConfig)> {
        if !self.vms.is_empty() {
            return self
                .vms
                .iter()
                .enumerate()
                .flat_map(|(i, vm)| vm.workload_keys(i).into_iter().zip(vm.workload_list()))
                .collect();
        }
        match &self.workload {
            Some(w) => vec![("workload".to_string(), w.clone())],
            None => self.workloads.iter().enumerate().map(|(i, w)| (format!("workloads[{i}]"), w.clone())).collect(),
        }
    }

    /// The checks of the `[[vms]]` form: not mixed with the top-level one,
    /// virtualized, each VM with its workloads, the vCPUs adding up to
    /// `machine.cores`.
    pub(super) fn validate_vms(&self) -> Result<()> {
        if self.vms.is_empty() {
            return Ok(());
        }
        if !self.virt.enabled {
            return Err(Error::config("vms", "[[vms]] are virtual machines: set virt.enabled = true"));
        }
        if self.vms.len() > MAX_VMS {
            return Err(Error::config("vms", format!("{} VMs: at most {MAX_VMS} fit in the VPID", self.vms.len())));
        }
        let both = |key: &str| {
            Error::config(
                key,
                format!(
                    "give either [[vms]] (each with its own os, guest_mem and workload) or a top-level {key}, not both"
                ),
            )
        };
        if self.workload.is_some() {
            return Err(both("workload"));
        }
        if !self.workloads.is_empty() {
            return Err(both("workloads"));
        }
        // (A table left at its defaults cannot be told from an absent one.)
        if toml::to_string(&self.os).ok() != toml::to_string(&OsConfig::default()).ok() {
            return Err(both("os"));
        }
        if self.virt.guest_mem != VirtConfig::default().guest_mem {
            return Err(both("virt.guest_mem"));
        }
        let mut vcpus = Vec::new();
        for (i, vm) in self.vms.iter().enumerate() {
            match (&vm.workload, vm.workloads.len()) {
                (None, 0) => {
                    return Err(Error::config(format!("vms[{i}]"), "no workload: give workload or [[vms.workloads]]"))
                }
                (Some(_), n) if n > 0 => {
                    return Err(Error::config(
                        format!("vms[{i}].workloads"),
                        "give either workload or [[vms.workloads]], not both",
                    ))
                }
                _ => vcpus.push(vm.workload_list().iter().filter(|w| w.after.is_none()).count()),
            }
        }
        let total: usize = vcpus.iter().sum();
        let cores = self.machine.cores as usize;
        if cores != 0 && cores != total {
            let each: Vec<String> = vcpus.iter().enumerate().map(|(i, n)| format!("vms[{i}]: {n}")).collect();
            return Err(Error::config(
                "machine.cores",
                format!(
                    "{cores} cores but the VMs have {total} vCPUs ({}): a core runs one vCPU, one per workload, \
                     the VMs' in order",
                    each.join(", ")
                ),
            ));
        }
        Ok(())
    }
}
