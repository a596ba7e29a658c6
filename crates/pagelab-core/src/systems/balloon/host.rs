//! The balloon's policy (`virt.host.balloon`): a target per VM, inflated
//! once at a simulated time, as a management layer that resizes a VM's
//! balloon at a moment it chooses (e.g. `virsh setmem`). The mechanism
//! (the guest's free frames taken, their backing dropped) is the
//! hypervisor's (`virt::balloon`).
//!
//! Layer: hypervisor (a policy of the host).

use super::BalloonConfig;
use crate::error::Result;
use crate::virt::hypervisor::{HostBuild, HostCtx, HostPolicy, HostRegistration};

/// The balloon's policy as the registry knows it: built when some VM has
/// a target.
pub const POLICY: HostRegistration<BalloonConfig> = HostRegistration {
    name: "balloon",
    build: |cfg, b: &HostBuild| {
        let at = cfg.inflate_at_ms * b.freq_ghz * 1e6;
        let targets = cfg.targets.iter().map(|t| t.bytes()).collect();
        cfg.active().then(|| Box::new(Targets { targets, at, done: false }) as Box<dyn HostPolicy>)
    },
    stats: &[],
};

/// Inflate every VM's balloon to its target once the clock reaches `at`.
#[derive(Debug)]
struct Targets {
    /// Bytes, by VM.
    targets: Vec<u64>,
    /// Cycles of the simulated clock.
    at: f64,
    done: bool,
}

impl HostPolicy for Targets {
    fn name(&self) -> &'static str {
        "balloon"
    }

    fn run_due(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()> {
        if self.done || ctx.now < self.at {
            return Ok(());
        }
        self.done = true;
        for (vm, &bytes) in self.targets.iter().enumerate().take(ctx.guests.len()) {
            ctx.inflate_balloon(vm, bytes >> 12)?;
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
