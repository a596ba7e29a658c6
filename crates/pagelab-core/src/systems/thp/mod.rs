//! `thp`: transparent huge pages at fault time (do_huge_pmd_anonymous_page)
//! when the 2 MiB-aligned range lies inside the VMA, no page table exists
//! for it yet (pmd_none), and an order-9 block is free; otherwise the
//! fault is declined (the chain's next system, `base` by default, backs
//! it with 4 KiB) and khugepaged may collapse the range later.

mod config;
mod khugepaged;

pub use config::ThpConfig;
pub use khugepaged::{all_private, collapse_pmd, Khugepaged, ScanResult};

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Order, PageSize, VirtAddr};

/// THP's statistics at fault time (khugepaged's are its own).
const STATS: StatTable = StatTable {
    section: Section::Faults,
    stats: &[
        StatDecl::count("os.faults.thp", "faults that installed a 2 MiB page at fault time (THP's, HawkEye's)").os(),
        StatDecl::count("os.thp.fault_fallback", "THP faults that found no free order-9 block and fell back to 4 KiB")
            .os(),
    ],
};

pub const REGISTRATION: Registration = Registration {
    name: "thp",
    policies: &[Policy {
        name: "thp",
        chain: &["thp", "base"],
        doc: "Transparent huge pages at fault, plus khugepaged.",
    }],
    fault_kinds: &["thp"],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: &[STATS, khugepaged::STATS],
    idle_stats: |out| {
        Thp::default().report_counters(out);
        Khugepaged::idle_stats(out);
    },
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Thp { fault: b.os.thp.fault, fault_fallback: 0 }));
    if b.os.thp.khugepaged {
        k.add_daemon(Box::new(Khugepaged::new(&b.os.thp, b.freq_ghz)));
    }
    Ok(())
}

/// The 2 MiB range a fault would take a huge page for
/// (do_huge_pmd_anonymous_page's test): inside the VMA, nothing mapped.
pub fn huge_fault_range(k: &Kernel, f: &Fault) -> Option<VirtAddr> {
    let base = f.vaddr.align_down(2 << 20);
    (f.vma.covers(base, 2 << 20) && k.range_is_empty(f.asid, base, PageSize::Size2M)).then_some(base)
}

/// Maps an order-9 block at `base` for the fault (a `thp` fault), or
/// `None` when no order-9 block is free.
pub fn map_huge_at_fault(k: &mut Kernel, f: &Fault, base: VirtAddr) -> Result<Option<FaultOutcome>> {
    let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
    let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
        return Ok(None);
    };
    k.map_user(f.asid, base, frame, PageSize::Size2M, f.vma.writable)?;
    Ok(Some(FaultOutcome { kind: "thp", size: PageSize::Size2M, cycles: k.costs.thp }))
}

#[derive(Debug, Default)]
pub struct Thp {
    /// Allocate huge pages at fault time (`os.thp.fault`).
    fault: bool,
    /// Fault-time allocations that found no free order-9 block.
    fault_fallback: u64,
}

impl Thp {
    fn report_counters(&self, out: &mut Stats) {
        put_ints(out, "os.thp.", &[("fault_fallback", self.fault_fallback)]);
    }
}

impl System for Thp {
    fn name(&self) -> &'static str {
        "thp"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        if !self.fault {
            return Ok(None);
        }
        let Some(base) = huge_fault_range(k, f) else {
            return Ok(None);
        };
        let outcome = map_huge_at_fault(k, f, base)?;
        self.fault_fallback += outcome.is_none() as u64;
        Ok(outcome)
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        self.report_counters(out);
    }

    fn reset_stats(&mut self) {
        self.fault_fallback = 0;
    }
}
