//! Compaction as an explicit operation: the physical-memory scanners live
//! in `phys::compaction`; this module gives them the one thing they may not
//! do themselves (layer rule): move a mapping. A movable frame is a process's
//! 4 KiB page; its PTE is repointed to the new frame and the page shot down.
//! Pages inside a huge mapping are left alone (Linux would split or migrate
//! the whole folio; counted as failed), and so are pages a system of the
//! chain vetoes (`System::may_migrate`: a colored huge page's frames must
//! keep their stride).

use super::system::System;
use super::{Kernel, Shootdown};
use crate::phys::{compaction, FrameOwner};
use crate::units::{Order, Vpn};

pub(super) fn compact(k: &mut Kernel, systems: &[Box<dyn System>], order: Order) -> f64 {
    let mut shootdowns = Vec::new();
    let procs = &mut k.procs;
    let result = compaction::compact(&mut k.mem, order, &mut |old, new, owner| {
        let FrameOwner::User { asid, vpn } = owner else { return false };
        let Some(p) = procs.get_mut(asid as usize - 1) else { return false };
        if p.aspace.table_only_split(vpn.addr()).is_some() {
            return false; // a huge page the table alone shows split (HugeScope's EPT-only split)
        }
        let pt = &mut p.aspace.pt;
        if !systems.iter().all(|s| s.may_migrate(pt, vpn)) {
            return false;
        }
        match pt.leaf_slot(vpn.addr()) {
            Some(slot) if slot.level == 1 && pt.entry(slot).present() && pt.entry(slot).pfn() == old => {
                let pte = pt.entry(slot).with_pfn(new);
                pt.replace(slot, pte);
                shootdowns.push(Shootdown { asid, start: vpn, end: Vpn::new(vpn.raw() + 1) });
                true
            }
            _ => false,
        }
    });
    k.stats.compaction_runs += 1;
    k.stats.compaction_migrated += result.pages_migrated;
    k.stats.compaction_failed += result.migrate_failed;
    k.stats.pages_copied += result.pages_migrated;
    k.stats.shootdowns += shootdowns.len() as u64;
    let cycles = result.pages_migrated as f64 * k.costs.copy_4k + shootdowns.len() as f64 * k.costs.shootdown;
    for s in shootdowns {
        k.queue_shootdown(s);
    }
    cycles
}
