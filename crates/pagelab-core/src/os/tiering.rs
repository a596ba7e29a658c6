//! Migration between memory tiers: the mechanism tiering policies (e.g.
//! HugeScope's promotion and demotion) call; no policy here.
//!
//! [`Kernel::migrate_page`] moves the 4 KiB or 2 MiB page that maps a
//! virtual address of a process to a frame on another node, as Linux's
//! `migrate_pages` to a target node does: a block of the page's order is
//! taken on that node (`PhysMem::alloc_in_node`), the contents copied, the
//! leaf entry repointed (the contiguous range it belonged to broken), the
//! old block freed and the page's translation shot down. Under
//! virtualization the host kernel calls it on a VM's process, whose page
//! table is the EPT: its shootdown reaches the VM's cores as an INVEPT of
//! that guest-physical range, as every host change does.
//!
//! Cost, returned to the caller (the daemon or system that decided it) and
//! counted in `os.tier.migration_cycles`: the copy plus one shootdown
//! (`os.fault_cost.shootdown`). A 4 KiB copy costs `os.fault_cost.copy_4k`
//! (what compaction and collapse charge, a copy within DRAM) scaled by the
//! two tiers' latencies against `machine.memory.latency`: copy_4k x
//! (source read latency + target write latency) / (2 x memory.latency).
//! A copy streams lines, so its time follows the latencies of the reads
//! and the writes; from DRAM of memory.latency to itself it is copy_4k.
//! A 2 MiB page costs 512 such copies.

use super::{Kernel, Shootdown};
use crate::error::{Error, Result};
use crate::phys::{FrameOwner, TierConfig};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr, Vpn};

/// The nodes' latencies, as far as a copy between them needs them.
#[derive(Debug, Clone, Default)]
pub struct NodeLatencies {
    read: Vec<f64>,
    write: Vec<f64>,
    memory: f64,
}

impl NodeLatencies {
    pub fn new(tiers: &[TierConfig], memory_latency: u32) -> NodeLatencies {
        NodeLatencies {
            read: tiers.iter().map(|t| t.read_latency as f64).collect(),
            write: tiers.iter().map(|t| t.write_latency as f64).collect(),
            memory: memory_latency as f64,
        }
    }

    /// The copy of one 4 KiB page from node `from` to node `to`, given the
    /// DRAM copy's `copy_4k`.
    pub fn copy_4k(&self, copy_4k: f64, from: usize, to: usize) -> f64 {
        copy_4k * (self.read[from] + self.write[to]) / (2.0 * self.memory)
    }
}

/// What a migration did, or why it did not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Migration {
    /// Moved from frame `from` to frame `to`, costing `cycles`.
    Moved { from: Pfn, to: Pfn, size: PageSize, cycles: f64 },
    /// Already on the target node: nothing to do.
    AlreadyThere,
    /// Not moved: the address maps nothing movable (not mapped, a 1 GiB
    /// page, a frame that is not this page's alone), or a system of the
    /// chain keeps it in place (`System::may_migrate`).
    Refused,
    /// The target node has no free block of the page's size.
    NoMemory,
}

/// The kernel's migration counters (`os.tier.*`, reported on a machine
/// with several nodes only).
#[derive(Debug, Default, Clone)]
pub struct TierStats {
    pub migrations_4k: u64,
    pub migrations_2m: u64,
    pub refused: u64,
    pub no_memory: u64,
    pub cycles: f64,
}

impl Kernel {
    /// Migrates the page mapping `vaddr` in process `asid` to node `node`
    /// (see the module's doc). The caller delivers the queued shootdown.
    pub fn migrate_page(&mut self, asid: Asid, vaddr: VirtAddr, node: usize) -> Result<Migration> {
        if node >= self.mem.nr_nodes() {
            let msg = format!(
                "node {node} does not exist: nodes are 0 to {} (the memory tiers)",
                self.mem.nr_nodes().saturating_sub(1)
            );
            return Err(Error::config(crate::phys::tiers::TIERS_KEY, msg));
        }
        let outcome = self.try_migrate(asid, vaddr, node);
        let s = &mut self.tier_stats;
        match outcome {
            Migration::Moved { size, cycles, .. } => {
                if size == PageSize::Size2M {
                    s.migrations_2m += 1;
                } else {
                    s.migrations_4k += 1;
                }
                s.cycles += cycles;
            }
            Migration::Refused => s.refused += 1,
            Migration::NoMemory => s.no_memory += 1,
            Migration::AlreadyThere => {}
        }
        Ok(outcome)
    }

    fn try_migrate(&mut self, asid: Asid, vaddr: VirtAddr, node: usize) -> Migration {
        let Some(p) = self.procs.get_mut(asid as usize - 1) else { return Migration::Refused };
        // A huge page split in the EPT only moves whole: its leaf first.
        p.aspace.restore_table_only(vaddr, vaddr.add(1), &mut self.mem);
        let p = &self.procs[asid as usize - 1];
        let pt = &p.aspace.pt;
        let Some(slot) = pt.leaf_slot(vaddr).filter(|s| s.level <= 2 && pt.entry(*s).present()) else {
            return Migration::Refused;
        };
        let (pte, size) = (pt.entry(slot), if slot.level == 2 { PageSize::Size2M } else { PageSize::Size4K });
        let pages = size.bytes() >> 12;
        let first_vpn = Vpn::new(vaddr.vpn().raw() & !(pages - 1));
        let old = pte.pfn();
        // Only a page whose frames are its own (a plain user page) moves.
        if self.mem.owner(old) != (FrameOwner::User { asid, vpn: first_vpn })
            || !self.systems.iter().all(|s| s.may_migrate(pt, first_vpn))
        {
            return Migration::Refused;
        }
        let from = self.mem.node_of(old);
        if from == node {
            return Migration::AlreadyThere;
        }
        let order = Order::new(pages.trailing_zeros() as u8);
        let owner = FrameOwner::User { asid, vpn: first_vpn };
        let Some(new) = self.mem.alloc_in_node(order, node, owner) else { return Migration::NoMemory };
        let pt = &mut self.procs[asid as usize - 1].aspace.pt;
        pt.replace(slot, pte.with_pfn(new));
        self.mem.free(old, order);
        let end = Vpn::new(first_vpn.raw() + pages);
        self.stats.shootdowns += 1;
        self.stats.pages_copied += pages;
        self.queue_shootdown(Shootdown { asid, start: first_vpn, end });
        let copy = self.tiers.copy_4k(self.costs.copy_4k, from, node) * pages as f64;
        Migration::Moved { from: old, to: new, size, cycles: copy + self.costs.shootdown }
    }
}
