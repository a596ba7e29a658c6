//! `chp`: Colored Huge Pages (Kostas, Gizopoulos and Karakostas), with the
//! two prior designs the paper compares against as configurations of the
//! same machinery (`os.chp.scheme`).
//!
//! A faulting 2 MiB region of a large anonymous VMA is backed by
//! `submappings` strided sub-mappings (8 by default, 64 pages each). With n
//! system colors, a frame's color is its low log2(n) pfn bits, so the pages
//! of one color in an aligned block are n frames apart: page i of a
//! sub-mapping whose first frame is `base` is `base | (i << log2(n))`. A
//! sub-mapping of p pages is carved from a buddy block of p x n pages (256
//! KiB x n for 8 sub-mappings); the block's other n - 1 strided mappings,
//! one per color, go to the *allocator cache*, which every later request
//! tries first and to which munmap returns whole colored huge pages.
//! Colors go to sub-mappings round-robin from the process's allowed set;
//! when a sub-mapping cannot be had, the fault is declined and the chain's
//! next system backs it (`coloring` by default: PALLOC's 4 KiB coloring,
//! the paper's best effort), and what was taken for it goes back to the
//! cache.
//!
//! The page table holds all 512 PTEs, as the paper's prototype installs
//! them, plus the colored-huge-page bit in the PMD entry; the modified
//! walker (`engine::mmu`) reads the 8 sub-mapping entries with one
//! cache-line reference and fills the L2 TLB with one entry.

mod cache;
mod config;
mod geometry;
mod leaf;
pub mod pagetable;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
mod tests;
pub mod tlb;
pub mod walk;
pub mod walk2d;

pub use cache::AllocatorCache;
use cache::Sharing;
pub use config::{ChpConfig, ChpScheme};
pub use geometry::ChpGeometry;
pub use leaf::ChpLeaf;

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::PageTable;
use crate::stat::{put_ints, Stat, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Asid, PageSize, Pfn, VirtAddr, Vpn};

const HUGE: u64 = 2 << 20;

/// CHP's statistics.
const STATS: &[StatTable] = &[
    StatTable {
        section: Section::Translation,
        stats: &[StatDecl::count(
            "walk.chp",
            "walks that ended at a colored-huge-page PMD (one page-table line read for the 8 sub-mappings; in a \
             VM, a guest's, its line read at its host address, whether the entry it gave was a combined colored \
             huge one or a 4 KiB splinter)",
        )],
    },
    StatTable {
        section: Section::Faults,
        stats: &[
            StatDecl::count("os.faults.chp", "faults that installed a whole colored huge page").os(),
            StatDecl::count("os.chp.attempts", "2 MiB regions colored huge pages were tried for").os(),
            StatDecl::count("os.chp.success", "regions backed by a colored huge page").os(),
            StatDecl::count("os.chp.fallback", "regions that fell back to 4 KiB coloring").os(),
            StatDecl::count(
                "os.chp.success_ratio",
                "`os.chp.success / os.chp.attempts` (0 when none was tried): the paper's allocation success ratio",
            )
            .ratio()
            .os(),
            StatDecl::count("os.chp.cache_hits", "sub-mappings served by the allocator cache").os(),
            StatDecl::count("os.chp.blocks", "blocks taken from the buddy allocator").os(),
            StatDecl::count("os.chp.returned", "sub-mappings munmap returned to the cache").os(),
            StatDecl::count(
                "os.chp.demoted",
                "colored huge pages a partial munmap/mprotect turned into plain 4 KiB mappings",
            )
            .os(),
            StatDecl::count(
                "os.chp.cached",
                "sub-mappings in the allocator cache at the end (only with `chp` in the chain)",
            )
            .os(),
            StatDecl::count(
                "os.chp.leftovers_offered",
                "with `os.chp.share_leftovers`: sub-mappings of colors the faulting process may not use offered to \
                 the color pool (64 frames each with 8 sub-mappings)",
            )
            .os(),
            StatDecl::count(
                "os.chp.leftovers_reclaimed",
                "offered sub-mappings a CHP process took back whole from the pool (0 when the option is off)",
            )
            .os(),
        ],
    },
];

pub const REGISTRATION: Registration = Registration {
    name: "chp",
    policies: &[Policy { name: "chp", chain: &["chp", "coloring"], doc: "Colored Huge Pages: 2 MiB regions backed by strided colored sub-mappings (and the Scattered Superpages and SWAP baselines)." }],
    fault_kinds: &["chp"],
    terminal: false,
    caps: Caps { not_in_host: Some("the EPT walk is the base walker"), ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| ChpStats::default().report(out),
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    let geometry = ChpGeometry::new(k.color_map(), b.os.chp.nr_submappings())?;
    k.plug(Box::new(Chp {
        geometry,
        scheme: b.os.chp.scheme,
        min_vma: b.os.chp.min_vma.bytes(),
        cache: AllocatorCache::new(geometry, b.os.chp.share_leftovers),
        unmapping: Vec::new(),
        stats: ChpStats::default(),
    }));
    Ok(())
}

/// Colored huge pages: 2 MiB regions tried, backed, declined for want of
/// sub-mappings; sub-mappings served by the allocator cache; blocks taken
/// from the buddy allocator; sub-mappings returned by munmap; colored huge
/// pages demoted to 4 KiB by a partial munmap or mprotect; sub-mappings
/// of colors the process may not use offered to the color pool, and taken
/// back from it (`os.chp.share_leftovers`).
#[derive(Debug, Default, Clone)]
pub struct ChpStats {
    pub attempts: u64,
    pub success: u64,
    pub fallback: u64,
    pub cache_hits: u64,
    pub blocks: u64,
    pub returned: u64,
    pub demoted: u64,
    pub leftovers_offered: u64,
    pub leftovers_reclaimed: u64,
}

impl ChpStats {
    fn report(&self, out: &mut Stats) {
        put_ints(
            out,
            "os.chp.",
            &[
                ("attempts", self.attempts),
                ("success", self.success),
                ("fallback", self.fallback),
                ("cache_hits", self.cache_hits),
                ("blocks", self.blocks),
                ("returned", self.returned),
                ("demoted", self.demoted),
                ("leftovers_offered", self.leftovers_offered),
                ("leftovers_reclaimed", self.leftovers_reclaimed),
            ],
        );
        let ratio = self.success as f64 / self.attempts.max(1) as f64;
        out.insert("os.chp.success_ratio".into(), Stat::Float(ratio));
    }
}

#[derive(Debug)]
pub struct Chp {
    geometry: ChpGeometry,
    scheme: ChpScheme,
    min_vma: u64,
    cache: AllocatorCache,
    /// During an unmap: the colored huge pages wholly inside the range, in
    /// address order, with their sub-mappings' first frames (they go back
    /// to the allocator cache, not to the buddy allocator).
    unmapping: Vec<(VirtAddr, Vec<Pfn>)>,
    stats: ChpStats,
}

impl Chp {
    /// The colors of the next region's sub-mappings: round-robin over the
    /// allowed set, per sub-mapping (chp, scattered) or per region (swap).
    fn colors(&self, k: &mut Kernel, asid: Asid) -> Vec<u32> {
        let (n, nr_colors) = (self.geometry.submappings as usize, self.geometry.nr_colors());
        let p = k.proc_mut(asid);
        let allowed: Vec<u32> = if p.colors.is_empty() { (0..nr_colors).collect() } else { p.colors.clone() };
        let mut next = || {
            let c = allowed[p.color_cursor % allowed.len()];
            p.color_cursor = p.color_cursor.wrapping_add(1);
            c
        };
        match self.scheme {
            ChpScheme::Swap => vec![next(); n],
            ChpScheme::Chp | ChpScheme::Scattered => (0..n).map(|_| next()).collect(),
        }
    }

    /// One sub-mapping per color, or none at all (what was taken goes back).
    fn take_submappings(&mut self, k: &mut Kernel, asid: Asid, colors: &[u32]) -> Option<Vec<Pfn>> {
        let mut subs = Vec::with_capacity(colors.len());
        let allowed = &k.procs[asid as usize - 1].colors;
        for &c in colors {
            let sharing = Sharing { pool: &mut k.color_pool, allowed };
            match self.cache.take(&mut k.mem, sharing, c, &mut self.stats) {
                Some(b) => subs.push(b),
                None => {
                    for b in subs {
                        self.cache.give_back(&mut k.mem, b);
                    }
                    return None;
                }
            }
        }
        Some(subs)
    }

    /// Installs the 512 PTEs of a colored huge page and sets its PMD bit.
    fn install(&self, k: &mut Kernel, asid: Asid, base: VirtAddr, subs: &[Pfn], writable: bool) -> Result<()> {
        let geo = self.geometry;
        let per = geo.pages_per_sub();
        for (j, &sub) in subs.iter().enumerate() {
            for i in 0..per {
                let page = base.add((j as u64 * per + i) * 4096);
                let frame = geo.frame(sub, i);
                k.mem.set_owner(frame, crate::phys::FrameOwner::User { asid, vpn: page.vpn() });
                k.map_user(asid, page, frame, PageSize::Size4K, writable)?;
            }
        }
        pagetable::set_colored_huge(k.page_table_mut(asid), base, true);
        Ok(())
    }

    /// Colored huge pages wholly inside [start, end) are listed with their
    /// sub-mappings; those the range cuts lose their PMD bit and become
    /// ordinary 4 KiB mappings, since a TLB entry's permission covers all
    /// of it.
    fn regions_in(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) -> Vec<(VirtAddr, Vec<Pfn>)> {
        let geo = self.geometry;
        let mut whole = Vec::new();
        let mut region = start.align_down(HUGE);
        while region < end {
            let pt = k.page_table_mut(asid);
            if pagetable::is_colored_huge(pt, region) {
                if region >= start && region.add(HUGE) <= end {
                    let per = geo.pages_per_sub();
                    let subs = (0..geo.submappings as u64)
                        .map(|j| {
                            pt.lookup(region.add(j * per * 4096)).expect("a colored huge page is fully mapped").frame
                        })
                        .collect();
                    whole.push((region, subs));
                } else {
                    pagetable::set_colored_huge(pt, region, false);
                    self.stats.demoted += 1;
                }
            }
            region = region.add(HUGE);
        }
        whole
    }
}

impl System for Chp {
    fn name(&self) -> &'static str {
        "chp"
    }

    /// The whole 2 MiB region around the address, or declined.
    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let (asid, vma) = (f.asid, f.vma);
        let base = f.vaddr.align_down(HUGE);
        if vma.len() < self.min_vma || !vma.covers(base, HUGE) || !k.range_is_empty(asid, base, PageSize::Size2M) {
            return Ok(None);
        }
        self.stats.attempts += 1;
        let colors = self.colors(k, asid);
        let Some(subs) = self.take_submappings(k, asid, &colors) else {
            self.stats.fallback += 1;
            return Ok(None);
        };
        self.install(k, asid, base, &subs, vma.writable)?;
        self.stats.success += 1;
        Ok(Some(FaultOutcome { kind: "chp", size: PageSize::Size2M, cycles: k.costs.chp }))
    }

    fn before_unmap(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.unmapping = self.regions_in(k, asid, start, end);
    }

    /// Whether a 4 KiB frame freed by munmap belongs to a colored huge page
    /// being reclaimed (so it must not go to the buddy allocator).
    fn frame_freed(&mut self, _: &mut Kernel, vaddr: VirtAddr, _: Pfn, _: PageSize) -> bool {
        let regions = &self.unmapping;
        let after = regions.partition_point(|(r, _)| *r <= vaddr);
        after > 0 && vaddr < regions[after - 1].0.add(HUGE)
    }

    /// munmap's end: the sub-mappings of whole colored huge pages go back
    /// to the allocator cache.
    fn after_unmap(&mut self, k: &mut Kernel, _: Asid, _: VirtAddr, _: VirtAddr) {
        for (_, subs) in std::mem::take(&mut self.unmapping) {
            for b in subs {
                self.cache.give_back(&mut k.mem, b);
                self.stats.returned += 1;
            }
        }
    }

    /// Colored huge pages the range cuts lose their bit; whole ones keep it.
    fn protect(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.regions_in(k, asid, start, end);
    }

    /// A colored huge page's frames must keep their stride.
    fn may_migrate(&self, pt: &PageTable, vpn: Vpn) -> bool {
        !pagetable::is_colored_huge(pt, vpn.addr())
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        self.stats.report(out);
        out.insert("os.chp.cached".into(), Stat::Int(self.cache.cached()));
    }

    fn reset_stats(&mut self) {
        self.stats = ChpStats::default();
    }
}
