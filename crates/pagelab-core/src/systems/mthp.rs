//! `mthp`: Linux's multi-size THP at its 64 KiB size, the Elastic
//! Translations paper's mTHP baseline ("2MiB -> 64KiB -> 4KiB" at fault).
//! In the chain of `os.policy = "mthp"` it follows `thp` (a 2 MiB page
//! where one fits) and precedes `base`: a fault whose aligned 64 KiB range
//! lies inside the VMA with none of its 16 PTEs present gets an order-4
//! block, mapped by 16 PTEs written at once with the contiguous bit (no
//! live entry, so no break-before-make: Linux's contpte_set_ptes); else
//! the fault is declined. A 64 KiB fault costs `os.fault_cost.base` (no
//! measured figure of its own).

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Order, PageSize};

/// mTHP's statistics.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Faults,
    stats: &[
        StatDecl::count("os.faults.mthp_64k", "mTHP's 64 KiB faults (16 contiguous PTEs)").os(),
        StatDecl::count("os.mthp.fallback", "faults whose empty 64 KiB range found no free order-4 block").os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "mthp",
    policies: &[Policy {
        name: "mthp",
        chain: &["thp", "mthp", "base"],
        doc: "Linux's multi-size THP: 2 MiB, else 64 KiB (contiguous), else 4 KiB at fault.",
    }],
    fault_kinds: &["mthp_64k"],
    terminal: false,
    caps: Caps { samples_l2_occupancy: true, ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| report_counters(0, out),
    build,
};

fn build(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Mthp::default()));
    Ok(())
}

fn report_counters(fallback: u64, out: &mut Stats) {
    put_ints(out, "os.mthp.", &[("fallback", fallback)]);
}

const RANGE: u64 = CONTIG_ENTRIES as u64 * 4096;

#[derive(Debug, Default)]
pub struct Mthp {
    /// Faults whose empty 64 KiB range found no free order-4 block.
    fallback: u64,
}

impl System for Mthp {
    fn name(&self) -> &'static str {
        "mthp"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let base = f.vaddr.align_down(RANGE);
        let pt = &k.proc(f.asid).aspace.pt;
        let empty = (0..CONTIG_ENTRIES as u64).all(|i| pt.lookup(base.add(i * 4096)).is_none());
        if !f.vma.covers(base, RANGE) || !empty {
            return Ok(None);
        }
        let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
        let Some(block) = k.mem.alloc(Order::new(4), Migratetype::Movable, owner) else {
            self.fallback += 1;
            return Ok(None);
        };
        for i in 0..CONTIG_ENTRIES as u64 {
            k.map_user(f.asid, base.add(i * 4096), block.add(i), PageSize::Size4K, f.vma.writable)?;
        }
        let pt = k.page_table_mut(f.asid);
        let set = pt.set_contiguous(base, PageSize::Size4K);
        debug_assert!(set, "16 fresh entries over an aligned block qualify");
        if f.vma.writable {
            // Young and dirty, as Linux's do_anonymous_page for VM_WRITE.
            pt.mark_range(base, PageSize::Size4K, ACCESSED | DIRTY);
        }
        Ok(Some(FaultOutcome { kind: "mthp_64k", size: PageSize::Size4K, cycles: k.costs.base }))
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        report_counters(self.fallback, out);
    }

    fn reset_stats(&mut self) {
        self.fallback = 0;
    }
}
