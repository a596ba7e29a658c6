//! `base`: every fault gets one 4 KiB page from the buddy allocator
//! (MOVABLE, as Linux's GFP_HIGHUSER_MOVABLE anonymous pages). It never
//! declines, so it ends the chains of systems that try a huge page first.

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::{Error, Result};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Order, PageSize};

/// `base`'s statistic: its fault kind.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Faults,
    stats: &[StatDecl::count("os.faults.base", "faults `base` backed with a 4 KiB page").os()],
}];

pub const REGISTRATION: Registration = Registration {
    name: "base",
    policies: &[Policy { name: "base", chain: &["base"], doc: "4 KiB pages only, from the buddy allocator." }],
    fault_kinds: &["base"],
    terminal: true,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |_| {},
    build,
};

fn build(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Base));
    Ok(())
}

#[derive(Debug)]
pub struct Base;

impl System for Base {
    fn name(&self) -> &'static str {
        "base"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let page = f.vaddr.align_down(4096);
        let owner = FrameOwner::User { asid: f.asid, vpn: page.vpn() };
        let frame = k
            .mem
            .alloc(Order::BASE, Migratetype::Movable, owner)
            .ok_or_else(|| Error::OutOfMemory(format!("no 4 KiB frame for a fault at {}", f.vaddr)))?;
        k.map_user(f.asid, page, frame, PageSize::Size4K, f.vma.writable)?;
        Ok(Some(FaultOutcome { kind: "base", size: PageSize::Size4K, cycles: k.costs.base }))
    }
}
