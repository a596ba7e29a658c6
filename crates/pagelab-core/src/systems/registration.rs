//! What a system tells the registry about itself (its [`Registration`]),
//! and what a system's configuration table is ([`SystemTable`]). The
//! centre asks a system only through these: its name and the `os.policy`
//! values that name a chain with it, its capabilities as flags, its hooks,
//! its statistics, its build. Nothing outside the system's folder and the
//! registry (`systems/mod.rs`) names a system.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Result;
use crate::os::Kernel;
use crate::stat::{StatTable, Stats};
use crate::units::Asid;

use super::OsConfig;

/// One system as the registry knows it.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    /// Its name in `os.systems` (and its table's key, `os.NAME`, if it has
    /// one).
    pub name: &'static str,
    /// The `os.policy` values that name a chain beginning with it.
    pub policies: &'static [Policy],
    /// The fault kinds it can install (`os.faults.NAME`).
    pub fault_kinds: &'static [&'static str],
    /// Whether it backs every fault it is offered, so it can end a chain.
    pub terminal: bool,
    /// What the centre asks about it.
    pub caps: Caps,
    /// What the centre calls it for outside the chain's hooks.
    pub hooks: Hooks,
    /// Its statistics, declared beside the counters it reports (its
    /// fault kinds' `os.faults.KIND` among them).
    pub stats: &'static [StatTable],
    /// Its statistics at zero: every run reports the statistics of every
    /// registered system, in the chain or not, so that tables of runs have
    /// the same columns.
    pub idle_stats: fn(&mut Stats),
    /// Plugs it (and its daemons) into the kernel.
    pub build: fn(&Build, &mut Kernel) -> Result<()>,
}

impl Registration {
    /// What the registry's array is filled from before its entries are
    /// written (never read).
    pub const FILLER: Registration = Registration {
        name: "",
        policies: &[],
        fault_kinds: &[],
        terminal: false,
        caps: Caps::NONE,
        hooks: Hooks::NONE,
        stats: &[],
        idle_stats: |_| {},
        build: |_, _| Ok(()),
    };
}

/// An `os.policy` value: a name for a chain of systems.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub name: &'static str,
    /// The systems, in order; the last backs every fault.
    pub chain: &'static [&'static str],
    /// One line for the documentation of `os.policy`.
    pub doc: &'static str,
}

/// What the centre asks about a system, as flags: never its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The cores sample their L2 TLB's contents by kind
    /// (`dtlb.l2.share.*`) when it is in the chain: it makes kinds or
    /// sizes other than 4 KiB and 2 MiB pages.
    pub samples_l2_occupancy: bool,
    /// In the hypervisor's chain, it may make EPT leaves leaf extensions
    /// (the 2D walker then looks for combined entries over them).
    pub ept_leaf_ext: bool,
    /// The hypervisor follows a guest's page contents (`workload.contents`)
    /// through the pages it makes.
    pub follows_contents: bool,
    /// It cannot back a guest in the hypervisor's chain, and why.
    pub not_in_host: Option<&'static str>,
    /// It cannot run in a guest, and why.
    pub not_in_guest: Option<&'static str>,
    /// Its huge pages are not the host's to split (hugetlb's pool): KSM
    /// never splits a huge page of a host whose chain has it.
    pub pins_huge_pages: bool,
    /// It places a VM's memory in the hypervisor and means nothing
    /// elsewhere: only `virt.host` may name it, and why.
    pub only_in_host: Option<&'static str>,
}

impl Caps {
    /// A system that needs nothing special.
    pub const NONE: Caps = Caps {
        samples_l2_occupancy: false,
        ept_leaf_ext: false,
        follows_contents: true,
        not_in_host: None,
        not_in_guest: None,
        pins_huge_pages: false,
        only_in_host: None,
    };
}

/// The pages a process never touches, by 2 MiB region (the region's
/// virtual address shifted right by 21): a 512-bit mask, or `None` when it
/// may touch them all (`workload::UntouchedPages`).
pub type Untouched = Box<dyn Fn(u64) -> Option<[u64; 8]>>;

/// A hook giving the pages process `asid` of an OS configured `os` (seed
/// `u64`) never touches ([`Hooks::untouched_pages`]).
pub type UntouchedHook = fn(&OsConfig, u64, Asid) -> Option<Untouched>;

/// What the centre calls a system for, beyond the kernel's hooks.
#[derive(Debug, Clone, Copy)]
pub struct Hooks {
    /// The pages process `asid` of an OS configured `os` (seed `u64`)
    /// never touches, whatever the chain (a scenario every kernel runs
    /// alike): its workload leaves them alone.
    pub untouched_pages: Option<UntouchedHook>,
    /// One L2 TLB miss in how many the cores sample for it, when it is in
    /// the chain of an OS configured `os` (`None`: no sampling).
    pub miss_sample_period: Option<fn(&OsConfig) -> Option<u64>>,
}

impl Hooks {
    pub const NONE: Hooks = Hooks { untouched_pages: None, miss_sample_period: None };
}

/// What a system's build reads.
#[derive(Debug)]
pub struct Build<'a> {
    pub os: &'a OsConfig,
    /// The clock, to turn daemon periods in milliseconds into cycles.
    pub freq_ghz: f64,
    /// The run's seed (a scenario's random choices).
    pub seed: u64,
    /// A hypervisor's kernel only: the real caches and the guests' colors
    /// (`os::HostView`).
    pub host_view: Option<&'a crate::os::HostView>,
}

/// A system's configuration table (`os.NAME`): parsed by serde (unknown
/// keys refused), defaulted by `Default`, documented on its fields, and
/// checked by the system.
pub trait SystemTable: Default + Clone + std::fmt::Debug + Serialize + DeserializeOwned {
    /// Checks its keys, named under `check.prefix` (`os`, `virt.host`,
    /// `vms[0].os`).
    fn validate(&self, _check: &TableCheck) -> Result<()> {
        Ok(())
    }

    /// Whether the resolved configuration leaves it out: a table added
    /// after others was written only when changed, so that every other
    /// configuration's text stays what it was.
    fn hidden(&self) -> bool {
        false
    }

    /// Fills the defaults that come from the machine (`l2_tlb_entries`:
    /// its L2 TLB's entries).
    fn fill_machine_defaults(&mut self, _l2_tlb_entries: u32) {}

    /// The files its keys name that a run reads (an output must not
    /// replace one: `outfile::check_not_input`).
    fn input_files(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
}

/// What a table's check knows of the OS it is in.
#[derive(Debug, Clone, Copy)]
pub struct TableCheck<'a> {
    /// The OS table's key: `os`, `virt.host`, `vms[N].os`.
    pub prefix: &'a str,
    /// The machine's memory (bytes) and largest buddy order, which some
    /// pools must fit.
    pub phys_mem: u64,
    pub max_order: u8,
    /// Whether the system that owns the table is in this OS's chain.
    pub in_chain: bool,
    /// Whether this is the hypervisor's OS (`virt.host`).
    pub host: bool,
}
