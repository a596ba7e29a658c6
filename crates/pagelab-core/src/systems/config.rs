//! The `os` table's checks and its chain of systems. The table itself
//! (`OsConfig`: the kernel's keys, `os::config`, and each registered
//! system's own table) is made by the registry (`systems/mod.rs`).

use super::{Registration, TableCheck, REGISTRY};
use crate::error::{Error, Result};
use crate::phys::FaultyGranularity;

pub use super::OsConfig;

pub(super) fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

pub(super) fn is_default_granularity(g: &FaultyGranularity) -> bool {
    *g == FaultyGranularity::default()
}

/// The chain of systems the `os.policy` value `name` names, if a
/// registered system gives that policy.
pub fn policy_chain(name: &str) -> Option<&'static [&'static str]> {
    REGISTRY.iter().flat_map(|r| r.policies).find(|p| p.name == name).map(|p| p.chain)
}

/// The registration of system `name`.
pub fn registration(name: &str) -> Option<&'static Registration> {
    REGISTRY.iter().find(|r| r.name == name)
}

impl OsConfig {
    /// The chain of systems, by name, in order.
    pub fn chain(&self) -> Vec<&str> {
        match &self.systems {
            Some(systems) => systems.iter().map(String::as_str).collect(),
            None => policy_chain(&self.policy).unwrap_or_default().to_vec(),
        }
    }

    /// The registrations of the chain's systems, in order.
    pub fn chain_registrations(&self) -> Vec<&'static Registration> {
        self.chain().into_iter().filter_map(registration).collect()
    }

    /// Checks every key; `phys_mem` (bytes) and `max_order` are the
    /// machine's, which some pools must fit.
    pub fn validate(&self, prefix: &str, phys_mem: u64, max_order: u8) -> Result<()> {
        self.validate_chain(prefix)?;
        self.fragmentation.validate(prefix)?;
        if !(0.0..1.0).contains(&self.faulty_frames) {
            let msg = format!("{} is not a rate in [0, 1)", self.faulty_frames);
            return Err(Error::config(format!("{prefix}.faulty_frames"), msg));
        }
        // (The hypervisor's OS table is the only one validated under this name.)
        let check = TableCheck { prefix, phys_mem, max_order, in_chain: false, host: prefix == "virt.host" };
        self.validate_tables(check, &self.chain())?;
        self.fault_cost.validate(prefix)
    }

    fn validate_chain(&self, prefix: &str) -> Result<()> {
        if policy_chain(&self.policy).is_none() {
            let known: Vec<&str> = REGISTRY.iter().flat_map(|r| r.policies).map(|p| p.name).collect();
            let msg = format!("unknown policy `{}` (known: {})", self.policy, known.join(", "));
            return Err(Error::config(format!("{prefix}.policy"), msg));
        }
        let chain_key = if self.systems.is_none() { "policy" } else { "systems" };
        if let Some((name, why)) = super::chain_find(&self.chain(), |c| c.only_in_host) {
            if prefix != "virt.host" {
                return Err(Error::config(format!("{prefix}.{chain_key}"), format!("`{name}` {why}")));
            }
        }
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
        if !registration(last).is_some_and(|r| r.terminal) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::same_name;

    #[test]
    fn every_policy_names_a_chain_of_registered_systems_ending_with_one_that_backs_every_fault() {
        let mut names = Vec::new();
        for p in REGISTRY.iter().flat_map(|r| r.policies) {
            assert!(!names.contains(&p.name), "policy `{}` given twice", p.name);
            names.push(p.name);
            for s in p.chain {
                assert!(registration(s).is_some(), "policy `{}` names `{s}`, not a registered system", p.name);
            }
            assert!(registration(p.chain[p.chain.len() - 1]).unwrap().terminal, "policy `{}`", p.name);
        }
        assert!(policy_chain(&OsConfig::default().policy).is_some(), "the default policy is a registered one");
    }

    #[test]
    fn every_table_is_keyed_by_a_registered_name() {
        for key in OsConfig::TABLES {
            let registered = REGISTRY.iter().map(|r| r.name).chain(super::super::HOST_POLICY_NAMES.iter().copied());
            assert!(registered.into_iter().any(|name| same_name(key, name)), "os.{key} has no registered owner");
        }
    }
}
