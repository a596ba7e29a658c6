//! The OS side's shared counters, and the kernel's report of them.
//! Outcomes of policy decisions are named, as khugepaged's scan_result
//! values are in Linux, so a statistic tells why something did not happen;
//! each system counts its own (`System::report`).

use super::Kernel;
use crate::phys::fragmentation;
use crate::stat::{put_ints, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::PageSize;

/// What the kernel reports of itself ([`Kernel::report`]), by heading of
/// docs/stats.md; each system's and daemon's own are in its registration.
pub const STATS: &[StatTable] = &[
    StatTable {
        section: Section::Memory,
        stats: &[
            StatDecl::count(
                "mem.mapped.4k",
                "bytes mapped by 4 KiB leaves, over all processes (a contiguous range's 16 PTEs count under \
                 `64k` instead; a perforated or colored huge page's sub-pages are 4 KiB leaves of its table)",
            )
            .bytes()
            .os()
            .contract(),
            StatDecl::count("mem.mapped.64k", "bytes mapped by contiguous ranges of 16 PTEs (Arm's contiguous bit)")
                .bytes()
                .os()
                .contract(),
            StatDecl::count("mem.mapped.2m", "bytes mapped by 2 MiB leaves (a contiguous range's under `32m`)")
                .bytes()
                .os()
                .contract(),
            StatDecl::count("mem.mapped.32m", "bytes mapped by contiguous ranges of 16 PMDs").bytes().os().contract(),
            StatDecl::count("mem.mapped.1g", "bytes mapped by 1 GiB leaves").bytes().os().contract(),
            StatDecl::count("mem.pagetables", "bytes of page-table pages").bytes().os(),
            StatDecl::count(
                "phys.fi",
                "F_i as the Colored Huge Pages paper defines it: the fraction of physical memory that free 2 MiB \
                 blocks cannot back, `1 - (frames in free blocks of order >= 9) / frames`. Relative to *all* \
                 memory, so a fresh machine has 0 and a workload using a fraction f of memory is expected to lose \
                 huge pages beyond 1 - f",
            )
            .ratio()
            .os()
            .contract(),
            StatDecl::count(
                "phys.fragmentation_index.9",
                "Linux's fragmentation index for an order-9 request (`__fragmentation_index` / 1000; -1 means the \
                 allocation would succeed)",
            )
            .ratio()
            .os(),
            StatDecl::count(
                "phys.unusable_index.9",
                "Linux's unusable free space index at order 9: the fraction of *free* memory not in blocks of \
                 order >= 9",
            )
            .ratio()
            .os(),
            StatDecl::count("phys.free", "free bytes").bytes().os(),
            StatDecl::count(
                "elastic.contig_breaks",
                "contiguous ranges whose bit a change to one entry cleared on all 16 (munmap, mprotect, migration, \
                 split), over every page table; an unmap of a whole range counts once",
            )
            .os()
            .contract(),
        ],
    },
    StatTable {
        section: Section::Os,
        stats: &[
            StatDecl::count(
                "os.coloring.refills",
                "buddy blocks broken into the kernel's per-color lists (the color pool that `coloring`, \
                 `bin-hopping` and a declined `chp` fault share)",
            )
            .os(),
            StatDecl::count("os.splits", "huge mappings split (partial munmap or mprotect)").os(),
            StatDecl::count(
                "os.shootdowns",
                "TLB shootdowns (ranges invalidated in the TLBs and page-walk caches of the cores running that \
                 address space)",
            )
            .os(),
            StatDecl::count("os.pages_copied", "4 KiB pages copied (khugepaged collapses, compaction)").os(),
            StatDecl::count("os.compaction.runs", "explicit compaction runs").os(),
            StatDecl::count("os.compaction.migrated", "pages compaction moved").os(),
            StatDecl::count("os.compaction.failed", "pages compaction could not move").os(),
            StatDecl::count("os.auto_vmas", "VMAs created around touched addresses (automatic VMA mode)").os(),
            StatDecl::count(
                "os.auto_vmas_after_munmap",
                "of those, VMAs created where a munmap event had unmapped and nothing mapped since (a captured \
                 program touching memory it unmapped, or a mapping its trace did not record; \
                 docs/trace-format.md)",
            )
            .os(),
        ],
    },
    StatTable {
        section: Section::Tiers,
        stats: &[
            StatDecl::count("os.tier.migrations.4k", "4 KiB pages moved between tiers (`Kernel::migrate_page`)").os(),
            StatDecl::count("os.tier.migrations.2m", "2 MiB pages moved between tiers").os(),
            StatDecl::count(
                "os.tier.refused",
                "migrations refused: nothing movable mapped there, a 1 GiB page, a frame not the page's alone, or \
                 a system's veto (`System::may_migrate`)",
            )
            .os(),
            StatDecl::count("os.tier.no_memory", "migrations whose target tier had no free block of the page's size")
                .os(),
            StatDecl::count(
                "os.tier.migration_cycles",
                "what the migrations cost whoever asked for them: copies and one shootdown each; the cores \
                 interrupted pay their IPI (`cycles.daemon`) or INVEPT (`cycles.virt`)",
            )
            .cycles()
            .os(),
        ],
    },
    StatTable {
        section: Section::PageCache,
        stats: &[
            StatDecl::count(
                "pagecache.pages",
                "file pages cached at the end: each a frame of the OS's memory (a guest's in a VM) that is neither \
                 free nor any process's",
            )
            .pages()
            .os()
            .contract(),
            StatDecl::count(
                "pagecache.fills",
                "file pages read into the cache: a first read of the page, which allocated a frame through the \
                 reading process's 4 KiB allocation path",
            )
            .os(),
            StatDecl::count("pagecache.hits", "reads (window faults) that found the page cached: no allocation").os(),
            StatDecl::count(
                "pagecache.reclaimed",
                "clean cached pages freed from the LRU's cold end because an allocation found no free frame (only \
                 pages no window maps)",
            )
            .os(),
            StatDecl::count(
                "os.faults.pagecache",
                "faults in a file window (a fill or a hit; each costs `os.fault_cost.base`)",
            )
            .os(),
        ],
    },
];

#[derive(Debug, Default, Clone)]
pub struct OsStats {
    /// Faults by what they installed (`FaultOutcome::kind`), in order of
    /// first occurrence: a run has a few kinds, so a scan that compares
    /// the kinds' addresses first beats a map (once per fault).
    pub faults_by_kind: Vec<(&'static str, u64)>,
    pub splits: u64,
    pub shootdowns: u64,
    pub pages_copied: u64,
    pub compaction_runs: u64,
    pub compaction_migrated: u64,
    pub compaction_failed: u64,
    pub auto_vmas: u64,
    /// Automatic VMAs created where a munmap had unmapped.
    pub auto_vmas_after_munmap: u64,
}

impl OsStats {
    /// Counts one fault of `kind`.
    #[inline]
    pub fn count_fault(&mut self, kind: &'static str) {
        let same = |k: &&'static str| std::ptr::eq(*k, kind) || *k == kind;
        match self.faults_by_kind.iter_mut().find(|(k, _)| same(k)) {
            Some((_, n)) => *n += 1,
            None => self.faults_by_kind.push((kind, 1)),
        }
    }

    pub fn reset(&mut self) {
        *self = OsStats::default();
    }
}

impl Kernel {
    /// The OS side's statistics: memory, the kernel's counters, then each
    /// system's and daemon's over `idle` (the zeros of every registered
    /// system and fault kind, so that every run reports the same names).
    pub fn report(&self, idle: &Stats, out: &mut Stats) {
        out.extend(idle.iter().map(|(k, v)| (k.clone(), *v)));
        // Contiguous ranges (Arm's contiguous bit) count as 64 KiB and
        // 32 MiB, not as the 4 KiB and 2 MiB leaves they are made of.
        let contig = self
            .procs
            .iter()
            .map(|p| p.aspace.pt.contig_counts())
            .fold([0; 3], |a, c| [a[0] + c.ranges_64k, a[1] + c.ranges_32m, a[2] + c.breaks]);
        let (bytes_64k, bytes_32m) = (contig[0] << 16, contig[1] << 25);
        for (size, name, coalesced) in
            [(PageSize::Size4K, "4k", bytes_64k), (PageSize::Size2M, "2m", bytes_32m), (PageSize::Size1G, "1g", 0)]
        {
            let bytes: u64 = self.procs.iter().map(|p| p.aspace.mapped_bytes(size)).sum();
            out.insert(format!("mem.mapped.{name}"), Stat::Int(bytes - coalesced));
        }
        out.insert("mem.mapped.64k".into(), Stat::Int(bytes_64k));
        out.insert("mem.mapped.32m".into(), Stat::Int(bytes_32m));
        out.insert("elastic.contig_breaks".into(), Stat::Int(contig[2]));
        let tables: u64 = self.procs.iter().map(|p| p.aspace.pt.table_pages()).sum();
        out.insert("mem.pagetables".into(), Stat::Int(tables * 4096));
        let free = self.mem.free_blocks_per_order();
        out.insert("phys.fi".into(), Stat::Float(fragmentation::fi(&self.mem)));
        out.insert("phys.free".into(), Stat::Int(self.mem.free_pages() * 4096));
        out.insert("phys.fragmentation_index.9".into(), Stat::Float(fragmentation::fragmentation_index(&free, 9)));
        out.insert("phys.unusable_index.9".into(), Stat::Float(fragmentation::unusable_free_index(&free, 9)));
        let s = &self.stats;
        for (kind, n) in &s.faults_by_kind {
            out.insert(format!("os.faults.{kind}"), Stat::Int(*n));
        }
        put_ints(
            out,
            "os.",
            &[
                ("coloring.refills", self.color_pool.refills),
                ("splits", s.splits),
                ("shootdowns", s.shootdowns),
                ("pages_copied", s.pages_copied),
                ("compaction.runs", s.compaction_runs),
                ("compaction.migrated", s.compaction_migrated),
                ("compaction.failed", s.compaction_failed),
                ("auto_vmas", s.auto_vmas),
                ("auto_vmas_after_munmap", s.auto_vmas_after_munmap),
            ],
        );
        if self.mem.nr_nodes() > 1 {
            // Only a machine with tiers names them.
            let t = &self.tier_stats;
            let counts = [("migrations.4k", t.migrations_4k), ("migrations.2m", t.migrations_2m)];
            put_ints(out, "os.tier.", &counts);
            put_ints(out, "os.tier.", &[("refused", t.refused), ("no_memory", t.no_memory)]);
            out.insert("os.tier.migration_cycles".into(), Stat::Float(t.cycles));
        }
        if let Some(cache) = &self.page_cache {
            // Only a run whose programs read files has a page cache.
            let c = &cache.stats;
            let counts =
                [("pages", cache.nr_pages()), ("fills", c.fills), ("hits", c.hits), ("reclaimed", c.reclaimed)];
            put_ints(out, "pagecache.", &counts);
        }
        for system in &self.systems {
            system.report(self, out);
        }
        for daemon in &self.daemons {
            daemon.report(out);
        }
    }
}
