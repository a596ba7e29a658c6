//! `elastic`: Elastic Translations (Psomadakis et al., MICRO 2024): 64 KiB
//! and 32 MiB coalesced translations through Arm's contiguous bit, made
//! transparent by CoalaPaging at fault time ([`coala`]) and by managing the
//! bit at fault time (`paging::contig`). Built so far: the native
//! mechanism with Leshy off (greedy ET, the VMA-size threshold choosing
//! 64 KiB or 32 MiB contiguity). Not yet: CoalaKhugepaged, Leshy, the
//! virtualized walk of contiguous entries (docs/systems/elastic.md).
//!
//! A fault in a VMA of at least `os.elastic.vma_threshold_32m` takes a
//! 2 MiB page where THP would (the range inside the VMA, nothing mapped
//! there), placed by CoalaPaging among the 16 PMDs of its 32 MiB range;
//! other faults take a 4 KiB page placed among the 16 PTEs of its 64 KiB
//! range. When CoalaPaging cannot place a page the fault is declined, and
//! the chain's next system (`base`) backs it with the normal allocator.
//! After each page is mapped the contiguous bit is tried on its range: set
//! when all 16 entries qualify. The other 15 are live then, so Arm's
//! break-before-make applies: the 15 are invalidated and the range shot
//! down before the bit is written (one shootdown, `os.fault_cost.shootdown`
//! cycles on the fault).

pub mod coala;
mod config;
#[cfg(test)]
mod tests;

pub use config::{ElasticConfig, LeshyMode};

use super::{Build, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Stats};
use crate::units::{Asid, Order, PageSize, VirtAddr};
use coala::{Fallback, Placement};

pub const REGISTRATION: Registration = Registration {
    name: "elastic",
    fault_kinds: &["elastic", "elastic_2m"],
    terminal: false,
    idle_stats: |out| Counters::default().report(out),
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Elastic { threshold_32m: b.os.elastic.vma_threshold_32m.bytes(), counters: Counters::default() }));
    Ok(())
}

/// What CoalaPaging and the bit management did, by outcome.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    anchored: u64,
    carved: u64,
    fallback_taken: u64,
    fallback_no_block: u64,
    /// Ranges whose bit a fault set on live entries (break-before-make).
    contig_sets: u64,
}

impl Counters {
    fn report(&self, out: &mut Stats) {
        put_ints(
            out,
            "elastic.",
            &[
                ("anchored", self.anchored),
                ("carved", self.carved),
                ("fallback.target_taken", self.fallback_taken),
                ("fallback.no_block", self.fallback_no_block),
                ("contig_sets", self.contig_sets),
                // CoalaKhugepaged's promotions: not built yet.
                ("promotions.64k", 0),
                ("promotions.2m", 0),
                ("promotions.32m", 0),
            ],
        );
        // Leshy's TLB-miss samples: not built yet.
        put_ints(out, "leshy.", &[("samples", 0)]);
    }
}

#[derive(Debug)]
pub struct Elastic {
    threshold_32m: u64,
    counters: Counters,
}

impl Elastic {
    /// Maps the page of `size` at aligned `page` where CoalaPaging places
    /// it, then tries the contiguous bit on its range; `None` when
    /// CoalaPaging falls back.
    fn map_placed(&mut self, k: &mut Kernel, f: &Fault, page: VirtAddr, size: PageSize) -> Result<Option<f64>> {
        let frame = match coala::place(k, f.asid, page, size) {
            Ok((frame, placement)) => {
                match placement {
                    Placement::Anchored => self.counters.anchored += 1,
                    Placement::Carved => self.counters.carved += 1,
                }
                frame
            }
            Err(reason) => {
                match reason {
                    Fallback::TargetTaken => self.counters.fallback_taken += 1,
                    Fallback::NoBlock => self.counters.fallback_no_block += 1,
                }
                return Ok(None);
            }
        };
        k.map_user(f.asid, page, frame, size, f.vma.writable)?;
        Ok(Some(self.try_contiguous(k, f.asid, page, size)))
    }

    /// CoalaPaging's fallback for a 2 MiB page: the normal allocator's
    /// order-9 block (as THP's fault), if one is free.
    fn map_plain_2m(&mut self, k: &mut Kernel, f: &Fault, huge: VirtAddr) -> Result<Option<f64>> {
        let owner = FrameOwner::User { asid: f.asid, vpn: huge.vpn() };
        let Some(frame) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else {
            return Ok(None);
        };
        k.map_user(f.asid, huge, frame, PageSize::Size2M, f.vma.writable)?;
        Ok(Some(self.try_contiguous(k, f.asid, huge, PageSize::Size2M)))
    }

    /// Sets the contiguous bit on `page`'s range if all 16 entries qualify;
    /// returns the cycles it cost (break-before-make on the 15 live ones).
    fn try_contiguous(&mut self, k: &mut Kernel, asid: Asid, page: VirtAddr, size: PageSize) -> f64 {
        if !k.page_table_mut(asid).set_contiguous(page, size) {
            return 0.0;
        }
        self.counters.contig_sets += 1;
        let start = page.align_down(CONTIG_ENTRIES as u64 * size.bytes());
        k.shoot(asid, start, start.add(CONTIG_ENTRIES as u64 * size.bytes()));
        k.costs.shootdown
    }
}

impl System for Elastic {
    fn name(&self) -> &'static str {
        "elastic"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let huge = f.vaddr.align_down(2 << 20);
        let vma_len = f.vma.end.raw() - f.vma.start.raw();
        if vma_len >= self.threshold_32m
            && f.vma.covers(huge, 2 << 20)
            && k.range_is_empty(f.asid, huge, PageSize::Size2M)
        {
            let extra = match self.map_placed(k, f, huge, PageSize::Size2M)? {
                Some(extra) => Some(extra),
                None => self.map_plain_2m(k, f, huge)?,
            };
            if let Some(extra) = extra {
                let cycles = k.costs.thp + extra;
                return Ok(Some(FaultOutcome { kind: "elastic_2m", size: PageSize::Size2M, cycles }));
            }
        }
        let page = f.vaddr.align_down(4096);
        match self.map_placed(k, f, page, PageSize::Size4K)? {
            Some(extra) => {
                let cycles = k.costs.base + extra;
                Ok(Some(FaultOutcome { kind: "elastic", size: PageSize::Size4K, cycles }))
            }
            None => Ok(None),
        }
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        self.counters.report(out);
    }

    fn reset_stats(&mut self) {
        self.counters = Counters::default();
    }
}
