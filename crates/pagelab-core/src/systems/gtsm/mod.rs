//! `gtsm`: Gap-Tolerant Sequential Mapping (Du et al., HPCA 2015), the
//! comparison of the Perforated Pages paper for faulty memory (VII-D).
//! Physical memory is cut into 4 MiB chunks; each chunk gives at most one
//! 2 MiB page, made of 32 sub-blocks of 64 KiB that avoid faulty frames
//! (`phys::faulty`), placed in the chunk in order (virtual sub-block `i`
//! in the chunk's `i`-th usable one). The rest of the chunk stays with the
//! buddy allocator and serves 4 KiB pages.
//!
//! - OS (this file): at a 2 MiB region's first fault, the next chunk with
//!   32 usable sub-blocks (each wholly free: no faulty frame, nothing
//!   allocated) gives the region a GTSM page; without one, the fault goes
//!   down the chain (`base`: 4 KiB pages). Chunks are taken in address
//!   order, each once (one 2 MiB page per chunk, as GTSM has it).
//! - Page table (`pagetable.rs`), walk step (`walk.rs`), L2 TLB kind
//!   (`tlb.rs`).
//!
//! munmap and mprotect of any part of a GTSM page make it ordinary 4 KiB
//! mappings of the same frames (the kernel's shootdown of the range drops
//! the 2 MiB entry); compaction leaves its frames in place.

pub mod pagetable;
#[cfg(test)]
mod tests;
pub mod tlb;
pub mod walk;

use std::collections::BTreeSet;

use self::pagetable::{clear_gtsm, gtsm_record, is_gtsm, set_gtsm, GtsmRecord};
use self::tlb::SUB_BLOCK_PAGES;
use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::PageTable;
use crate::phys::{FrameOwner, PhysMem};
use crate::stat::{put_ints, Stat, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr, Vpn};

const HUGE: u64 = 2 << 20;
/// Frames in a 4 MiB chunk.
pub const CHUNK_PAGES: u64 = 1024;
/// Sub-blocks of 64 KiB in a 2 MiB page.
const PAGE_SUB_BLOCKS: u32 = 32;

/// GTSM's statistics.
const STATS: &[StatTable] = &[
    StatTable {
        section: Section::Translation,
        stats: &[StatDecl::count(
            "walk.gtsm",
            "walks that ended at a GTSM page's PMD (one reference: the page's descriptor)",
        )],
    },
    StatTable {
        section: Section::Systems,
        stats: &[
            StatDecl::count("os.faults.gtsm", "faults that made a GTSM page").os(),
            StatDecl::count("os.gtsm.pages", "GTSM pages in the page tables at the end").os().contract(),
            StatDecl::count("os.gtsm.created", "GTSM pages made").os(),
            StatDecl::count(
                "os.gtsm.chunks_skipped",
                "4 MiB chunks passed over (fewer than 32 sub-blocks of 64 KiB free of faulty frames and allocations)",
            )
            .os(),
            StatDecl::count("os.gtsm.declined", "regions left to the chain (no chunk left)").os(),
            StatDecl::count(
                "mem.mapped.gtsm",
                "bytes of virtual memory GTSM pages map (2 MiB each; their sub-pages are 4 KiB leaves of their \
                 table, so they count under `4k` too)",
            )
            .bytes()
            .os()
            .contract(),
        ],
    },
];

pub const REGISTRATION: Registration = Registration {
    name: "gtsm",
    policies: &[Policy {
        name: "gtsm",
        chain: &["gtsm", "base"],
        doc: "Gap-Tolerant Sequential Mapping: 2 MiB pages of 64 KiB sub-blocks of 4 MiB chunks, around faulty frames.",
    }],
    fault_kinds: &["gtsm"],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| GtsmStats::default().report(out, 0),
    build: |_b: &Build, k| {
        k.plug(Box::new(Gtsm { next_chunk: 0, live: BTreeSet::new(), stats: GtsmStats::default() }));
        Ok(())
    },
};

/// What GTSM did.
#[derive(Debug, Default, Clone)]
pub struct GtsmStats {
    /// GTSM pages made.
    pub created: u64,
    /// Chunks passed over: fewer than 32 usable sub-blocks.
    pub chunks_skipped: u64,
    /// Regions left to the chain: no chunk left.
    pub declined: u64,
}

impl GtsmStats {
    fn report(&self, out: &mut Stats, live: u64) {
        out.insert("mem.mapped.gtsm".into(), Stat::Int(live * HUGE));
        put_ints(
            out,
            "os.gtsm.",
            &[
                ("pages", live),
                ("created", self.created),
                ("chunks_skipped", self.chunks_skipped),
                ("declined", self.declined),
            ],
        );
    }
}

#[derive(Debug)]
pub struct Gtsm {
    /// The next chunk to try (chunks are taken in order, each once).
    next_chunk: u64,
    /// GTSM pages, by process and 2 MiB region.
    live: BTreeSet<(Asid, u64)>,
    stats: GtsmStats,
}

/// The sub-blocks of the chunk at `first` that are wholly free (in a free
/// block of order 4 or more: no faulty frame, nothing allocated), as a
/// vector, bit `j` for sub-block `j`.
pub fn usable_sub_blocks(mem: &PhysMem, first: Pfn) -> u64 {
    (0..64).filter(|&j| free_sub_block(mem, first.add(j * SUB_BLOCK_PAGES))).fold(0, |v, j| v | 1 << j)
}

fn free_sub_block(mem: &PhysMem, pfn: Pfn) -> bool {
    mem.free_block_containing(pfn).is_some_and(|(_, order)| order.get() >= 4)
}

/// The first 32 sub-blocks of `usable`, or `None` when it has fewer.
pub fn first_32(usable: u64) -> Option<u64> {
    if usable.count_ones() < PAGE_SUB_BLOCKS {
        return None;
    }
    let mut used = 0;
    let mut rest = usable;
    for _ in 0..PAGE_SUB_BLOCKS {
        let low = rest & rest.wrapping_neg();
        used |= low;
        rest &= !low;
    }
    Some(used)
}

impl Gtsm {
    /// The next chunk with 32 usable sub-blocks, from the cursor on: its
    /// first frame and the 32 it uses.
    fn next_usable_chunk(&mut self, mem: &PhysMem) -> Option<(Pfn, u64)> {
        let chunks = mem.nr_frames() / CHUNK_PAGES;
        while self.next_chunk < chunks {
            let first = Pfn::new(self.next_chunk * CHUNK_PAGES);
            self.next_chunk += 1;
            match first_32(usable_sub_blocks(mem, first)) {
                Some(used) => return Some((first, used)),
                None => self.stats.chunks_skipped += 1,
            }
        }
        None
    }

    /// Takes the 32 sub-blocks and maps the region at `base` onto them.
    fn create(&mut self, k: &mut Kernel, f: &Fault, base: VirtAddr, chunk: Pfn, used: u64) -> Result<()> {
        let mut rest = used;
        for i in 0..PAGE_SUB_BLOCKS as u64 {
            let j = rest.trailing_zeros() as u64;
            rest &= rest - 1;
            let block = chunk.add(j * SUB_BLOCK_PAGES);
            let vpn = Vpn::new(base.vpn().raw() + i * SUB_BLOCK_PAGES);
            let taken = k.mem.alloc_specific(block, Order::new(4), FrameOwner::User { asid: f.asid, vpn });
            debug_assert!(taken, "sub-block {j} of chunk {chunk:?} was usable");
            for p in 0..SUB_BLOCK_PAGES {
                let page = base.add((i * SUB_BLOCK_PAGES + p) * 4096);
                k.map_user(f.asid, page, block.add(p), PageSize::Size4K, f.vma.writable)?;
            }
        }
        set_gtsm(k.page_table_mut(f.asid), base, &GtsmRecord { chunk, used, writable: f.vma.writable });
        self.live.insert((f.asid, base.raw() >> 21));
        self.stats.created += 1;
        Ok(())
    }

    /// GTSM pages of `asid` overlapping [start, end) become 4 KiB mappings.
    fn demote_in(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        let (first, last) = (start.raw() >> 21, (end.raw() - 1) >> 21);
        let hit: Vec<u64> = self.live.range((asid, first)..=(asid, last)).map(|&(_, r)| r).collect();
        for r in hit {
            clear_gtsm(k.page_table_mut(asid), VirtAddr::new(r << 21));
            self.live.remove(&(asid, r));
        }
    }
}

impl System for Gtsm {
    fn name(&self) -> &'static str {
        "gtsm"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let base = f.vaddr.align_down(HUGE);
        if !f.vma.covers(base, HUGE) || !k.range_is_empty(f.asid, base, PageSize::Size2M) {
            return Ok(None);
        }
        let Some((chunk, used)) = self.next_usable_chunk(&k.mem) else {
            self.stats.declined += 1;
            return Ok(None);
        };
        self.create(k, f, base, chunk, used)?;
        Ok(Some(FaultOutcome { kind: "gtsm", size: PageSize::Size2M, cycles: k.costs.thp }))
    }

    fn before_unmap(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.demote_in(k, asid, start, end);
    }

    fn protect(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.demote_in(k, asid, start, end);
    }

    /// A GTSM page's frames must stay where its descriptor says.
    fn may_migrate(&self, pt: &PageTable, vpn: Vpn) -> bool {
        !is_gtsm(pt, vpn.addr())
    }

    fn report(&self, k: &Kernel, out: &mut Stats) {
        let live = self
            .live
            .iter()
            .filter(|&&(asid, r)| {
                let pt = &k.proc(asid).aspace.pt;
                let va = VirtAddr::new(r << 21);
                is_gtsm(pt, va) && pt.pmd_table_of(va).is_some_and(|(t, _)| gtsm_record(pt, t).used != 0)
            })
            .count() as u64;
        self.stats.report(out, live);
    }

    fn reset_stats(&mut self) {
        let live = std::mem::take(&mut self.live);
        self.stats = GtsmStats::default();
        self.live = live;
    }
}
