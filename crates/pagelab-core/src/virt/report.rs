//! The hypervisor's statistics (`STATS` in `virt/mod.rs`): its kernel's
//! under `host.`, its own counters, the balloons', its policies'.

use super::hypervisor::{HostCounters, Hypervisor};
use crate::stat::{put_ints, Stat, Stats};

impl Hypervisor {
    /// The host's statistics, each under `host.` (`host.mem.mapped.4k`,
    /// `host.os.faults.thp`...), and `host.faults`.
    pub fn report(&self, out: &mut Stats) {
        let mut host = Stats::new();
        self.host.report(&crate::systems::idle_stats(), &mut host);
        out.extend(host.into_iter().map(|(k, v)| (format!("host.{k}"), v)));
        out.insert("host.faults".into(), Stat::Int(self.counters.faults));
        let c = &self.counters;
        let restores: u64 = self.host.procs.iter().map(|p| p.aspace.table_only_restored()).sum();
        put_ints(
            out,
            "host.",
            &[
                ("ept_scans", c.ept_scans),
                ("ept_cleared", c.ept_cleared),
                ("ept_splits", c.ept_splits),
                ("ept_collapses", c.ept_collapses),
                ("ept_collapse_refused", c.ept_collapse_refused),
                ("ept_restores", restores),
            ],
        );
        // A restore is a collapse of the table, done for the host's work.
        let remap = c.ept_remap_cycles + restores as f64 * self.costs.ept_collapse;
        out.insert("host.ept_remap_cycles".into(), Stat::Float(remap));
        put_ints(out, "virt.", &[("invepts", self.counters.invepts)]);
        self.balloons.report(out);
        for p in &self.policies {
            p.report(out);
        }
    }

    pub fn reset_stats(&mut self) {
        self.host.reset_stats();
        self.host.procs.iter_mut().for_each(|p| p.aspace.reset_table_only_restored());
        self.counters = HostCounters::default();
        self.balloons.reset_stats();
        for p in self.policies.iter_mut() {
            p.reset_stats();
        }
    }
}
