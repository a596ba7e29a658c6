//! `trident`: Trident's fault-time policy (Ram et al., ISCA 2021), the
//! Elastic Translations paper's baseline "1GiB -> 2MiB -> 4KiB": in the
//! chain of `os.policy = "trident"` it precedes `thp` and `base`, and backs
//! a fault with a 1 GiB page when the fault's aligned 1 GiB range lies
//! inside the VMA with nothing mapped there and an order-18 block is free
//! (`machine.max_order = 18`); otherwise it declines. Trident's 1 GiB
//! promotion daemon and its smart compaction are not built. A 1 GiB fault
//! costs `os.fault_cost.hugetlb_1g`.

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Order, PageSize};

/// Trident's statistics.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Faults,
    stats: &[
        StatDecl::count("os.faults.trident_1g", "Trident's 1 GiB faults").os(),
        StatDecl::count("os.trident.fallback", "faults whose empty 1 GiB range found no free order-18 block").os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "trident",
    policies: &[Policy {
        name: "trident",
        chain: &["trident", "thp", "base"],
        doc: "Trident at fault time: 1 GiB, else 2 MiB, else 4 KiB (needs machine.max_order = 18).",
    }],
    fault_kinds: &["trident_1g"],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| report_counters(0, out),
    build,
};

fn build(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Trident::default()));
    Ok(())
}

fn report_counters(fallback: u64, out: &mut Stats) {
    put_ints(out, "os.trident.", &[("fallback", fallback)]);
}

#[derive(Debug, Default)]
pub struct Trident {
    /// Faults whose empty 1 GiB range found no free order-18 block.
    fallback: u64,
}

impl System for Trident {
    fn name(&self) -> &'static str {
        "trident"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let size = PageSize::Size1G;
        let base = f.vaddr.align_down(size.bytes());
        if !f.vma.covers(base, size.bytes()) || !k.range_is_empty(f.asid, base, size) {
            return Ok(None);
        }
        let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
        let block = (size.order().get() <= k.mem.max_order())
            .then(|| k.mem.alloc(Order::new(size.order().get()), Migratetype::Movable, owner))
            .flatten();
        let Some(frame) = block else {
            self.fallback += 1;
            return Ok(None);
        };
        k.map_user(f.asid, base, frame, size, f.vma.writable)?;
        Ok(Some(FaultOutcome { kind: "trident_1g", size, cycles: k.costs.hugetlb_1g }))
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        report_counters(self.fallback, out);
    }

    fn reset_stats(&mut self) {
        self.fallback = 0;
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::{batch, config, mmap, simulate, stat, stores, BASE};

    #[test]
    fn a_1g_page_where_one_fits_else_2m_else_4k() {
        // A 1 GiB VMA at a 1 GiB-aligned address: one 1 GiB fault. A 4 MiB
        // one: two THP faults. A 12 KiB one: 4 KiB pages.
        let small = BASE.add(2 << 30);
        let tiny = BASE.add(3 << 30);
        let events = vec![mmap(BASE, 1 << 30), mmap(small, 4 << 20), mmap(tiny, 3 * 4096)];
        let mut accesses = stores(BASE, 2);
        accesses.extend(stores(small, 1));
        accesses.extend(stores(small.add(2 << 20), 1));
        accesses.extend(stores(tiny, 3));
        let overrides = [
            "machine.phys_mem=\"2GiB\"",
            "machine.max_order=18",
            "os.policy=\"trident\"",
            "run.check_translations=true",
        ];
        let sim = simulate(config(&overrides), vec![batch(events.clone(), accesses.clone())]).unwrap();
        assert_eq!(stat(&sim, "os.faults.trident_1g"), 1.0);
        assert_eq!(stat(&sim, "os.faults.thp"), 2.0);
        assert_eq!(stat(&sim, "os.faults.base"), 3.0);
        assert_eq!(stat(&sim, "mem.mapped.1g"), (1u64 << 30) as f64);
        // Without order-18 blocks every 1 GiB attempt falls back to THP.
        let overrides = ["machine.phys_mem=\"2GiB\"", "os.policy=\"trident\""];
        let sim = simulate(config(&overrides), vec![batch(events, accesses)]).unwrap();
        assert_eq!(stat(&sim, "os.faults.trident_1g"), 0.0);
        assert_eq!(stat(&sim, "os.trident.fallback"), 1.0);
        assert_eq!(stat(&sim, "os.faults.thp"), 3.0);
    }
}
