//! The registry's machinery: `registry!` turns the one list of systems in
//! `systems/mod.rs` (a line each) into what the centre uses, so that
//! adding a system is its folder and its line:
//!
//! - [`REGISTRY`](super::REGISTRY), every system's `Registration`;
//! - [`OsConfig`](super::OsConfig), the `os` table: the kernel's keys and
//!   each system's table under its registered name (`os.thp`, `os.chp`...),
//!   with their defaults, checks and machine defaults.
//!
//! - the cores' hardware extensions (`extensions.rs`): every system's L2
//!   TLB entry kinds numbered once, its software bit checked against the
//!   others', the walkers' dispatch to its steps.
//!
//! - the hypervisor's policies (`host_policies`), each built from its
//!   table under `virt.host`.
//!
//! A line is `system NAME = REGISTRATION` (an OS system: a
//! [`Registration`](super::Registration)) or `host NAME = REGISTRATION,
//! table TYPE` (a hypervisor's policy: a `virt::HostRegistration` and its
//! table). A system's line may add `, table TYPE` (its `os.NAME` table, a
//! [`SystemTable`](super::SystemTable)) and `, hw VARIANT = TYPE` (its
//! hardware, a `paging::leaf_ext::LeafExtension`, whose kinds' payloads
//! are `ExtKind::VARIANT`). A line may carry attributes (`#[cfg(test)]`
//! for a system defined in a test module).

/// Splits the registry's lines into the lists the emitters take: the
/// registrations, the tables (key and type), the hardware extensions
/// (owner, `ExtKind` variant, `LeafExtension`). One arm per form of line:
/// a line's attributes then go with each of its parts.
macro_rules! registry {
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]) => {
        emit_registry!([$($regs)*]);
        emit_os_config!([$($tables)*]);
        emit_hardware!([$($hw)*]);
        emit_host_policies!([$($hosts)*]);
    };
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]
        $(#[$a:meta])* system $name:ident = $reg:path; $($rest:tt)*) => {
        registry!(@split [$($regs)* $(#[$a])* $reg,] [$($tables)*] [$($hw)*] [$($hosts)*] $($rest)*);
    };
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]
        $(#[$a:meta])* system $name:ident = $reg:path, table $table:ty; $($rest:tt)*) => {
        registry!(@name $(#[$a])* $name = $reg);
        registry!(@split [$($regs)* $(#[$a])* $reg,] [$($tables)* $(#[$a])* $name: $table,] [$($hw)*] [$($hosts)*] $($rest)*);
    };
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]
        $(#[$a:meta])* system $name:ident = $reg:path, hw $variant:ident = $leaf:ty; $($rest:tt)*) => {
        registry!(@name $(#[$a])* $name = $reg);
        registry!(@split [$($regs)* $(#[$a])* $reg,] [$($tables)*] [$($hw)* $(#[$a])* $name: $variant = $leaf,]
            [$($hosts)*] $($rest)*);
    };
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]
        $(#[$a:meta])* system $name:ident = $reg:path, table $table:ty, hw $variant:ident = $leaf:ty;
        $($rest:tt)*) => {
        registry!(@name $(#[$a])* $name = $reg);
        registry!(@split [$($regs)* $(#[$a])* $reg,] [$($tables)* $(#[$a])* $name: $table,]
            [$($hw)* $(#[$a])* $name: $variant = $leaf,] [$($hosts)*] $($rest)*);
    };
    (@split [$($regs:tt)*] [$($tables:tt)*] [$($hw:tt)*] [$($hosts:tt)*]
        $(#[$a:meta])* host $name:ident = $reg:path, table $table:ty; $($rest:tt)*) => {
        registry!(@name $(#[$a])* $name = $reg);
        registry!(@split [$($regs)*] [$($tables)* $(#[$a])* $name: $table,] [$($hw)*]
            [$($hosts)* $(#[$a])* $name: $reg,] $($rest)*);
    };
    // A table or hardware is keyed by its system's registered name.
    (@name $(#[$a:meta])* $name:ident = $reg:path) => {
        $(#[$a])*
        const _: () = assert!(
            $crate::systems::registry::same_name(stringify!($name), $reg.name),
            "a system's line is named by its registered name"
        );
    };
    ($($lines:tt)*) => {
        registry!(@split [] [] [] [] $($lines)*);
    };
}

/// A constant array of `$t` whose elements may carry attributes (a
/// `#[cfg(test)]` line's): `[ATTRS] EXPR` each. (An attribute on an array
/// element is not Rust; on a statement it is: the array is filled by
/// statements from `$fill`, in a constant.)
macro_rules! cfg_array {
    ($t:ty, $fill:expr, [$([$(#[$a:meta])*] $e:expr,)*]) => {
        &{
            const N: usize = {
                #[allow(unused_mut)]
                let mut n = 0;
                $($(#[$a])* { n += 1; })*
                n
            };
            #[allow(unused_mut)]
            let mut out: [$t; N] = [$fill; N];
            #[allow(unused_mut, unused_variables)]
            let mut i = 0;
            $($(#[$a])* { out[i] = $e; i += 1; })*
            out
        }
    };
}

/// `REGISTRY`: the registrations, in the registry's order.
macro_rules! emit_registry {
    ([$($(#[$a:meta])* $reg:path,)*]) => {
        /// Every system, in the registry's order (the chain's order is the
        /// configuration's).
        pub const REGISTRY: &[Registration] = cfg_array!(Registration, Registration::FILLER, [$([$(#[$a])*] $reg,)*]);
    };
}

/// `OsConfig`: the kernel's keys, then every registered table by name.
macro_rules! emit_os_config {
    ([$($(#[$a:meta])* $name:ident: $table:ty,)*]) => {
        /// The `os` table: the policy (or the chain of systems), the
        /// kernel's keys (`os::config`), and each registered system's own
        /// table under its name.
        #[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct OsConfig {
            /// The paging policy: the name of a default chain of systems
            /// (`os.systems` gives one explicitly). One of the registered
            /// systems' policies (`Registration::policies`).
            pub policy: String,
            /// The chain of systems, in order, when given: a fault goes to
            /// each until one backs it (the last must back every fault).
            /// Unset = the chain `policy` names; an empty list is an error.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub systems: Option<Vec<String>>,
            /// Create VMAs around touched addresses when the workload emits
            /// no mapping events: "auto" (on only then, or when its events
            /// are partial: `Workload::partial_mappings`), "on", "off".
            pub auto_vma: $crate::os::AutoVma,
            pub fragmentation: $crate::os::FragmentationConfig,
            /// The share of memory faulty (retired) from boot: the
            /// probability of each unit of `faulty_granularity`
            /// (`phys::faulty`).
            #[serde(skip_serializing_if = "is_zero")]
            pub faulty_frames: f64,
            /// What one fault takes out: a 4 KiB frame (`"4k"`) or an
            /// aligned 64 KiB block (`"64k"`).
            #[serde(skip_serializing_if = "is_default_granularity")]
            pub faulty_granularity: $crate::phys::FaultyGranularity,
            pub fault_cost: $crate::os::FaultCosts,
            $(
                $(#[$a])*
                #[serde(skip_serializing_if = "SystemTable::hidden")]
                pub $name: $table,
            )*
        }

        impl Default for OsConfig {
            fn default() -> Self {
                OsConfig {
                    policy: DEFAULT_POLICY.into(),
                    systems: None,
                    auto_vma: $crate::os::AutoVma::Auto,
                    fragmentation: Default::default(),
                    faulty_frames: 0.0,
                    faulty_granularity: Default::default(),
                    fault_cost: Default::default(),
                    $($(#[$a])* $name: Default::default(),)*
                }
            }
        }

        impl OsConfig {
            /// The keys of the registered tables, in the registry's order.
            pub const TABLES: &'static [&'static str] = cfg_array!(&str, "", [$([$(#[$a])*] stringify!($name),)*]);

            /// Checks every registered table; `check.in_chain` is set for
            /// each from `chain`.
            fn validate_tables(&self, check: TableCheck, chain: &[&str]) -> $crate::error::Result<()> {
                $(
                    $(#[$a])*
                    {
                        let in_chain = chain.iter().any(|s| same_name(stringify!($name), s));
                        SystemTable::validate(&self.$name, &TableCheck { in_chain, ..check })?;
                    }
                )*
                Ok(())
            }

            /// The files the systems' tables name that a run reads.
            pub fn system_input_files(&self) -> Vec<std::path::PathBuf> {
                let mut files = Vec::new();
                $($(#[$a])* files.extend(SystemTable::input_files(&self.$name));)*
                files
            }

            /// Fills every table's defaults that come from the machine.
            pub fn fill_machine_defaults(&mut self, l2_tlb_entries: u32) {
                $($(#[$a])* SystemTable::fill_machine_defaults(&mut self.$name, l2_tlb_entries);)*
            }
        }
    };
}

/// `host_policies`: the hypervisor's policies its OS table switches on, in
/// the registry's order; and their statistics.
macro_rules! emit_host_policies {
    ([$($(#[$a:meta])* $name:ident: $reg:path,)*]) => {
        /// The host's policies that its OS table `os` (`virt.host`) switches
        /// on, built in the registry's order.
        pub fn host_policies(
            os: &OsConfig,
            build: &$crate::virt::HostBuild,
        ) -> Vec<Box<dyn $crate::virt::HostPolicy>> {
            #[allow(unused_mut)]
            let mut out = Vec::new();
            $(
                $(#[$a])*
                if let Some(p) = ($reg.build)(&os.$name, build) {
                    out.push(p);
                }
            )*
            out
        }

        /// The names of the hypervisor's policies (their tables' keys under
        /// `virt.host`).
        pub const HOST_POLICY_NAMES: &[&str] = cfg_array!(&str, "", [$([$(#[$a])*] $reg.name,)*]);

        /// The statistics of the hypervisor's policies, each beside its
        /// counters.
        pub const HOST_POLICY_STATS: &[&[$crate::stat::StatTable]] =
            cfg_array!(&[$crate::stat::StatTable], &[], [$([$(#[$a])*] $reg.stats,)*]);
    };
}

/// Whether a table's key (an identifier) names the registration: the same
/// string, `_` in the key standing for `-` in the name.
pub const fn same_name(key: &str, name: &str) -> bool {
    let (k, n) = (key.as_bytes(), name.as_bytes());
    if k.len() != n.len() {
        return false;
    }
    let mut i = 0;
    while i < k.len() {
        if k[i] != n[i] && !(k[i] == b'_' && n[i] == b'-') {
            return false;
        }
        i += 1;
    }
    true
}
