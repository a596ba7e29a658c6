//! The balloon's policy (`virt.host.balloon`), as a management layer that
//! resizes VMs' balloons at moments it chooses (e.g. `virsh setmem`):
//! balloons held from boot, a target per VM inflated once at a simulated
//! time, a deflation per VM at another; inflations before deflations in a
//! round. The mechanism (the guest's free frames taken, their backing
//! dropped; frames given back) is the hypervisor's (`virt::balloon`).
//!
//! Layer: hypervisor (a policy of the host).

use super::BalloonConfig;
use crate::error::Result;
use crate::virt::balloon::Take;
use crate::virt::hypervisor::{HostBuild, HostCtx, HostPolicy, HostRegistration};

/// The balloon's policy as the registry knows it: built when some VM's
/// balloon inflates or deflates.
pub const POLICY: HostRegistration<BalloonConfig> = HostRegistration {
    name: "balloon",
    build: |cfg, b: &HostBuild| {
        let cycles = |ms: f64| ms * b.freq_ghz * 1e6;
        let pages = |l: &[crate::units::ByteSize]| l.iter().map(|t| t.bytes() >> 12).collect();
        let policy = Targets {
            at_boot: pages(&cfg.inflated_at_boot),
            inflate: Step { pages: pages(&cfg.targets), at: cycles(cfg.inflate_at_ms), done: false },
            deflate: Step { pages: pages(&cfg.deflate), at: cycles(cfg.deflate_at_ms), done: false },
            take: if cfg.even_colors { Take::EvenColors } else { Take::Largest },
            reports_colors: cfg.reports_colors(),
        };
        cfg.active().then(|| Box::new(policy) as Box<dyn HostPolicy>)
    },
    stats: &[],
};

/// One resizing of every VM's balloon, once the clock reaches `at`.
#[derive(Debug)]
struct Step {
    /// Guest pages, by VM.
    pages: Vec<u64>,
    /// Cycles of the simulated clock.
    at: f64,
    done: bool,
}

impl Step {
    /// The pages of each VM, once, when due.
    fn due(&mut self, now: f64) -> Option<&[u64]> {
        if self.done || now < self.at {
            return None;
        }
        self.done = true;
        Some(&self.pages)
    }
}

#[derive(Debug)]
struct Targets {
    /// Guest pages each VM's balloon holds from boot, by VM.
    at_boot: Vec<u64>,
    inflate: Step,
    deflate: Step,
    take: Take,
    reports_colors: bool,
}

impl HostPolicy for Targets {
    fn name(&self) -> &'static str {
        "balloon"
    }

    fn boot(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()> {
        ctx.hv.balloons.ebal = self.reports_colors;
        for (vm, &pages) in self.at_boot.iter().enumerate().take(ctx.guests.len()) {
            if pages > 0 {
                ctx.inflate_balloon_by(vm, pages, self.take)?;
            }
        }
        if self.at_boot.iter().any(|&p| p > 0) {
            // No vCPU has run: there is nothing to invalidate.
            ctx.hv.host.drain_shootdowns().for_each(drop);
        }
        Ok(())
    }

    fn run_due(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()> {
        if let Some(pages) = self.inflate.due(ctx.now) {
            for (vm, &n) in pages.iter().enumerate().take(ctx.guests.len()) {
                // (Zero pages: nothing taken, nothing notified.)
                ctx.inflate_balloon_by(vm, n, self.take)?;
            }
        }
        if let Some(pages) = self.deflate.due(ctx.now) {
            for (vm, &n) in pages.iter().enumerate().take(ctx.guests.len()) {
                ctx.deflate_balloon(vm, n);
            }
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
