//! Processes' lives on a core: a core runs its first program from the
//! start, and each program that starts `after = "previous"` when the one
//! before it exits (`workload.after`). At exit the kernel frees the
//! process's memory and page tables and shoots its ranges down; the next
//! process gets a fresh address space with a new asid (a new PCID, as
//! Linux gives a new mm). The core's counters keep adding up over its
//! programs.

use std::collections::VecDeque;

use super::Simulation;
use crate::config::os::AutoVma;
use crate::config::SimConfig;
use crate::error::Result;
use crate::os::{Kernel, ProcessSpec};
use crate::systems;
use crate::units::{Asid, Gfn};
use crate::virt::Backing;
use crate::workload::{Workload, WorkloadConfig};

/// A program waiting for the one before it on its core to exit.
pub struct Program {
    pub workload: Box<dyn Workload>,
    pub config: WorkloadConfig,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("workload", &self.workload.name()).finish()
    }
}

/// The programs after a core's current one, in order.
pub type Queue = VecDeque<Program>;

/// Starts `workload` (described by `w`) as a new process of `kernel`,
/// running on a VM (or native machine) whose OS is VM `vm`'s: its
/// colors, its opted-out systems, its untouched pages and file windows.
pub(super) fn spawn_program(
    cfg: &SimConfig,
    vm: usize,
    kernel: &mut Kernel,
    w: &WorkloadConfig,
    workload: &mut Box<dyn Workload>,
) -> Result<Asid> {
    let os = cfg.os_of_vm(vm);
    let spec = ProcessSpec {
        colors: w.colors.clone(),
        auto_vma: os.auto_vma != AutoVma::Off,
        opt_out: w.opted_out_systems(),
        untouched: workload.untouched_pages(),
        files: workload.file_windows(),
    };
    let asid = kernel.spawn(spec)?;
    if let Some(untouched) = systems::untouched_pages(os, cfg.run.seed, asid) {
        workload.leave_untouched(&untouched);
    }
    Ok(asid)
}

impl Simulation {
    /// Core `i`'s program exited (its workload ended and its last batch
    /// ran): its process exits, the next program in its queue starts.
    pub(super) fn start_next_program(&mut self, i: usize) -> Result<()> {
        let (vm, old) = (self.cores[i].vm, self.cores[i].asid);
        let mut next = self.cores[i].queued.pop_front().expect("a queued program");
        self.guest_mut(vm).exit(old)?;
        // The exit's shootdowns reach this core while it still runs `old`.
        self.deliver_guest_shootdowns(vm, false);
        let cfg = &self.cfg;
        let kernel = match self.virt.as_deref_mut() {
            Some(v) if vm > 0 => &mut v.other_guests[vm - 1],
            _ => &mut self.kernel,
        };
        let asid = spawn_program(cfg, vm, kernel, &next.config, &mut next.workload)?;
        let root = Gfn::of_guest_kernel(kernel.page_table_mut(asid).root_frame());
        if let Some(v) = self.virt.as_deref_mut() {
            v.guest_asids[vm].push(asid);
            if cfg.virt.backing == Backing::Zeroing {
                v.hv.back_range(vm, root, 1)?;
            }
        }
        if let Some(pages) = self.conflict.as_mut() {
            pages[i].restart();
        }
        let core = &mut self.cores[i];
        let clock = core.clock(self.timing.base_cpi);
        if let Some(r) = core.requests.as_mut() {
            r.next_program(clock, &*next.workload);
        }
        core.asid = asid;
        core.workload = next.workload;
        core.exhausted = false;
        core.batch.clear();
        core.pos = 0;
        core.next_event = 0;
        Ok(())
    }
}
