//! `hugetlb`: huge pages from a reserved pool (hugetlbfs). The pool is
//! either reserved at boot (`os.hugetlb.pool`, before fragmentation, like
//! `hugepages=` on the kernel command line) or, with pool 0, reserved when
//! a chosen VMA is mapped, as much as can be had. Where Linux would refuse
//! the mmap or deliver SIGBUS when the pool runs dry, pagelab falls back to
//! 4 KiB pages and counts it (`hugetlb.fallback`), so a run always finishes.
//!
//! Sizes: 2 MiB and 1 GiB (one leaf), and on Arm-style machines 64 KiB and
//! 32 MiB (Linux's contiguous-bit hugetlb sizes: 16 PTEs or 16 PMDs over an
//! aligned block of order 4 or 13, written at once with the contiguous bit,
//! `paging::contig`).

use serde::{Deserialize, Serialize};

use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::{Error, Result};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::pte::{ACCESSED, DIRTY};
use crate::paging::Vma;
use crate::paging::CONTIG_ENTRIES;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::stat::{put_ints, Stats};
use crate::stat::{Section, StatDecl, StatTable};
use crate::systems::{SystemTable, TableCheck};
use crate::units::{ByteSize, Order, PageSize, Pfn, VirtAddr};

const HUGETLB_POOL: u8 = 1;

/// hugetlb's statistics.
const STATS: &[StatTable] = &[StatTable {
    section: Section::Faults,
    stats: &[
        StatDecl::count("os.faults.hugetlb_2m", "faults backed by a 2 MiB page of the hugetlb pool").os(),
        StatDecl::count("os.faults.hugetlb_1g", "faults backed by a 1 GiB page of the pool").os(),
        StatDecl::count("os.faults.hugetlb_64k", "faults backed by a 64 KiB (contiguous) page of the pool").os(),
        StatDecl::count("os.faults.hugetlb_32m", "faults backed by a 32 MiB (contiguous) page of the pool").os(),
        StatDecl::count(
            "os.hugetlb.fallback",
            "hugetlb faults that found the pool empty (or the range partly mapped) and fell back to 4 KiB",
        )
        .os(),
    ],
}];

pub const REGISTRATION: Registration = Registration {
    name: "hugetlb",
    policies: &[Policy {
        name: "hugetlb",
        chain: &["hugetlb", "base"],
        doc: "A reserved pool of huge pages for chosen VMAs.",
    }],
    fault_kinds: &["hugetlb_2m", "hugetlb_1g", "hugetlb_64k", "hugetlb_32m"],
    terminal: false,
    caps: Caps { pins_huge_pages: true, ..Caps::NONE },
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |out| report_counters(0, out),
    build,
};

fn build(b: &Build, k: &mut Kernel) -> Result<()> {
    let pool = HugetlbPool::boot(&b.os.hugetlb, &mut k.mem)?;
    k.plug(Box::new(pool));
    Ok(())
}

fn report_counters(fallback: u64, out: &mut Stats) {
    put_ints(out, "os.hugetlb.", &[("fallback", fallback)]);
}

/// hugetlbfs: a pool of huge pages reserved from the buddy allocator.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbConfig {
    /// "64KiB", "2MiB", "32MiB" or "1GiB".
    pub size: ByteSize,
    /// Bytes reserved at boot, before fragmentation is injected (like
    /// hugepages= on the kernel command line). "0" reserves at mmap time,
    /// best effort, as much of the VMA as can be had.
    pub pool: ByteSize,
    /// Names of the VMAs backed from the pool; empty = every anonymous VMA
    /// at least one huge page long.
    pub vmas: Vec<String>,
}

impl Default for HugetlbConfig {
    fn default() -> Self {
        HugetlbConfig { size: ByteSize(2 << 20), pool: ByteSize(0), vmas: Vec::new() }
    }
}

impl HugetlbConfig {
    fn check_keys(&self, prefix: &str, phys_mem: u64, max_order: u8) -> Result<()> {
        let Some(shape) = Shape::of(self.size.bytes()) else {
            return Err(Error::config(
                format!("{prefix}.hugetlb.size"),
                "must be \"64KiB\", \"2MiB\", \"32MiB\" or \"1GiB\"",
            ));
        };
        if shape.block_order() > max_order && self.pool.bytes() > 0 {
            return Err(Error::config(
                format!("{prefix}.hugetlb.size"),
                format!("{} pages need machine.max_order >= {}", self.size, shape.block_order()),
            ));
        }
        if self.size.bytes() == 1 << 30 && max_order < 18 && self.pool.bytes() > 0 {
            // A boot-time 1 GiB pool comes from the buddy allocator, which
            // only has 1 GiB blocks with max_order 18.
            return Err(Error::config(format!("{prefix}.hugetlb.size"), "1GiB pages need machine.max_order = 18"));
        }
        if !self.pool.bytes().is_multiple_of(self.size.bytes()) || self.pool.bytes() > phys_mem {
            return Err(Error::config(
                format!("{prefix}.hugetlb.pool"),
                format!(
                    "{}: must be a multiple of hugetlb.size ({}) from 0 to machine.phys_mem ({})",
                    self.pool,
                    self.size,
                    ByteSize(phys_mem)
                ),
            ));
        }
        Ok(())
    }
}

/// A hugetlb page: one leaf of `leaf`'s size, or 16 contiguous ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    leaf: PageSize,
    contiguous: bool,
}

impl Shape {
    fn of(bytes: u64) -> Option<Shape> {
        let (leaf, contiguous) = match bytes {
            b if b == 64 << 10 => (PageSize::Size4K, true),
            b if b == 2 << 20 => (PageSize::Size2M, false),
            b if b == 32 << 20 => (PageSize::Size2M, true),
            b if b == 1 << 30 => (PageSize::Size1G, false),
            _ => return None,
        };
        Some(Shape { leaf, contiguous })
    }
    fn leaves(self) -> u64 {
        if self.contiguous {
            CONTIG_ENTRIES as u64
        } else {
            1
        }
    }
    fn bytes(self) -> u64 {
        self.leaf.bytes() * self.leaves()
    }
    fn block_order(self) -> u8 {
        self.leaf.order().get() + self.leaves().trailing_zeros() as u8
    }
    fn nr_pages(self) -> u64 {
        self.bytes() / 4096
    }
}

#[derive(Debug)]
pub struct HugetlbPool {
    shape: Shape,
    /// Free pages of the pool (their frames owned `Reserved`).
    free: Vec<Pfn>,
    /// Every frame the pool ever reserved (to recognise its pages on free).
    members: std::collections::BTreeSet<u64>,
    vmas: Vec<String>,
    reserve_at_mmap: bool,
    /// Faults of chosen VMAs the pool could not serve (`os.hugetlb.fallback`).
    fallback: u64,
    /// Leaves of each contiguous page given back so far (by its first
    /// frame): the page returns to the pool when all 16 are.
    returned: std::collections::BTreeMap<u64, u64>,
}

impl HugetlbPool {
    pub fn boot(cfg: &HugetlbConfig, mem: &mut PhysMem) -> Result<HugetlbPool> {
        let shape = Shape::of(cfg.size.bytes())
            .ok_or_else(|| Error::config("os.hugetlb.size", "must be \"64KiB\", \"2MiB\", \"32MiB\" or \"1GiB\""))?;
        if shape.block_order() > mem.max_order() {
            let msg = format!("{} pages need machine.max_order >= {}", cfg.size, shape.block_order());
            return Err(Error::config("os.hugetlb.size", msg));
        }
        let mut pool = HugetlbPool {
            shape,
            free: Vec::new(),
            members: Default::default(),
            vmas: cfg.vmas.clone(),
            reserve_at_mmap: cfg.pool.bytes() == 0,
            fallback: 0,
            returned: Default::default(),
        };
        let want = cfg.pool.bytes() / shape.bytes();
        if pool.reserve(want, mem) < want {
            return Err(Error::config(
                "os.hugetlb.pool",
                format!("only {} of {want} huge pages could be reserved", pool.free.len()),
            ));
        }
        Ok(pool)
    }

    /// Reserves up to `n` pages from the buddy allocator; returns how many.
    fn reserve(&mut self, n: u64, mem: &mut PhysMem) -> u64 {
        let mut got = 0;
        while got < n {
            let Some(frame) = mem.alloc(
                Order::new(self.shape.block_order()),
                Migratetype::Movable,
                FrameOwner::Reserved { pool: HUGETLB_POOL },
            ) else {
                break;
            };
            self.free.push(frame);
            self.members.insert(frame.raw());
            got += 1;
        }
        // Hand out low addresses first, deterministically.
        self.free.sort_unstable_by(|a, b| b.cmp(a));
        got
    }

    fn wants(&self, vma: &Vma) -> bool {
        if self.vmas.is_empty() {
            vma.len() >= self.shape.bytes()
        } else {
            self.vmas.iter().any(|n| **n == *vma.name)
        }
    }

    /// With pool 0, reserves pages for a chosen VMA as it is mapped.
    pub fn reserve_for(&mut self, start: VirtAddr, end: VirtAddr, name: &str, mem: &mut PhysMem) {
        let vma = Vma { start, end, writable: true, name: name.into() };
        if self.reserve_at_mmap && self.wants(&vma) {
            let first = start.raw().div_ceil(self.shape.bytes());
            let last = end.raw() / self.shape.bytes();
            self.reserve(last.saturating_sub(first), mem);
        }
    }

    /// The first frame of the pool's page holding leaf `frame` of `size`.
    fn page_of(&self, frame: Pfn, size: PageSize) -> Option<Pfn> {
        let head = Pfn::new(frame.raw() & !(self.shape.nr_pages() - 1));
        (size == self.shape.leaf && self.members.contains(&head.raw())).then_some(head)
    }

    pub fn owns(&self, frame: Pfn, size: PageSize) -> bool {
        self.page_of(frame, size).is_some()
    }

    /// A leaf of a pool page comes back (munmap), not to the buddy
    /// allocator; the page returns to the pool with its last leaf.
    pub fn give_back(&mut self, frame: Pfn, size: PageSize, mem: &mut PhysMem) {
        let Some(head) = self.page_of(frame, size) else {
            return;
        };
        for i in 0..size.nr_pages() {
            mem.set_owner(frame.add(i), FrameOwner::Reserved { pool: HUGETLB_POOL });
        }
        let returned = self.returned.entry(head.raw()).or_insert(0);
        *returned += 1;
        if *returned == self.shape.leaves() {
            self.returned.remove(&head.raw());
            self.free.push(head);
        }
    }

    /// Whether nothing is mapped in the page-sized range at `base`.
    fn range_is_empty(&self, k: &Kernel, asid: crate::units::Asid, base: VirtAddr) -> bool {
        let leaf = self.shape.leaf;
        (0..self.shape.leaves()).all(|i| k.range_is_empty(asid, base.add(i * leaf.bytes()), leaf))
    }
}

impl System for HugetlbPool {
    fn name(&self) -> &'static str {
        "hugetlb"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let (shape, leaf) = (self.shape, self.shape.leaf);
        let base = f.vaddr.align_down(shape.bytes());
        if !self.wants(f.vma) || !f.vma.covers(base, shape.bytes()) {
            return Ok(None);
        }
        let Some(frame) = self.free.pop() else {
            self.fallback += 1;
            return Ok(None);
        };
        if !self.range_is_empty(k, f.asid, base) {
            // Part of the range is already mapped by 4 KiB fallbacks.
            self.free.push(frame);
            self.fallback += 1;
            return Ok(None);
        }
        for i in 0..shape.nr_pages() {
            k.mem.set_owner(frame.add(i), FrameOwner::User { asid: f.asid, vpn: base.vpn().add(i) });
        }
        for i in 0..shape.leaves() {
            let (va, pfn) = (base.add(i * leaf.bytes()), frame.add(i * leaf.nr_pages()));
            k.map_user(f.asid, va, pfn, leaf, f.vma.writable)?;
        }
        if shape.contiguous {
            // Written at once: no live entry, no break-before-make; young
            // and dirty when writable, as Linux's make_huge_pte.
            let pt = k.page_table_mut(f.asid);
            let set = pt.set_contiguous(base, leaf);
            debug_assert!(set, "16 fresh leaves over an aligned block qualify");
            if f.vma.writable {
                pt.mark_range(base, leaf, ACCESSED | DIRTY);
            }
        }
        // 64 KiB: a 4 KiB fault's cost (no measured figure of its own);
        // 32 MiB: sixteen 2 MiB ones, as 1 GiB is THP's scaled.
        let (kind, cycles) = match (leaf, shape.contiguous) {
            (PageSize::Size4K, _) => ("hugetlb_64k", k.costs.base),
            (PageSize::Size2M, true) => ("hugetlb_32m", 16.0 * k.costs.hugetlb_2m),
            (PageSize::Size1G, _) => ("hugetlb_1g", k.costs.hugetlb_1g),
            _ => ("hugetlb_2m", k.costs.hugetlb_2m),
        };
        Ok(Some(FaultOutcome { kind, size: leaf, cycles }))
    }

    fn mmap(&mut self, k: &mut Kernel, _asid: crate::units::Asid, start: VirtAddr, end: VirtAddr, name: &str) {
        self.reserve_for(start, end, name, &mut k.mem);
    }

    /// A page of the pool comes back to the pool, not to the buddy allocator.
    fn frame_freed(&mut self, k: &mut Kernel, _vaddr: VirtAddr, frame: Pfn, size: PageSize) -> bool {
        if !self.owns(frame, size) {
            return false;
        }
        self.give_back(frame, size, &mut k.mem);
        true
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        report_counters(self.fallback, out);
    }

    fn reset_stats(&mut self) {
        self.fallback = 0;
    }
}

impl SystemTable for HugetlbConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        self.check_keys(check.prefix, check.phys_mem, check.max_order)
    }
}
