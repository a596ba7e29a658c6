//! `hugetlb`: huge pages from a reserved pool (hugetlbfs). The pool is
//! either reserved at boot (`os.hugetlb.pool`, before fragmentation, like
//! `hugepages=` on the kernel command line) or, with pool 0, reserved when
//! a chosen VMA is mapped, as much as can be had. Where Linux would refuse
//! the mmap or deliver SIGBUS when the pool runs dry, pagelab falls back to
//! 4 KiB pages and counts it (`hugetlb.fallback`), so a run always finishes.

use serde::{Deserialize, Serialize};

use super::{Build, Registration};
use crate::error::{Error, Result};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::stat::{put_ints, Stats};
use crate::units::{ByteSize, PageSize, Pfn, VirtAddr};

const HUGETLB_POOL: u8 = 1;

pub const REGISTRATION: Registration = Registration {
    name: "hugetlb",
    fault_kinds: &["hugetlb_2m", "hugetlb_1g"],
    terminal: false,
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
    /// "2MiB" or "1GiB".
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
    pub fn validate(&self, prefix: &str, phys_mem: u64, max_order: u8) -> Result<()> {
        if self.size.bytes() != 2 << 20 && self.size.bytes() != 1 << 30 {
            return Err(Error::config(format!("{prefix}.hugetlb.size"), "must be \"2MiB\" or \"1GiB\""));
        }
        if self.size.bytes() == 1 << 30 && max_order < 18 && self.pool.bytes() > 0 {
            // A boot-time 1 GiB pool comes from the buddy allocator, which
            // only has 1 GiB blocks with max_order 18.
            return Err(Error::config(format!("{prefix}.hugetlb.size"), "1GiB pages need machine.max_order = 18"));
        }
        if !self.pool.bytes().is_multiple_of(self.size.bytes()) || self.pool.bytes() > phys_mem {
            return Err(Error::config(
                format!("{prefix}.hugetlb.pool"),
                "must be a multiple of hugetlb.size within phys_mem",
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct HugetlbPool {
    size: PageSize,
    /// Free pages of the pool (their frames owned `Reserved`).
    free: Vec<Pfn>,
    /// Every frame the pool ever reserved (to recognise its pages on free).
    members: std::collections::BTreeSet<u64>,
    vmas: Vec<String>,
    reserve_at_mmap: bool,
    /// Faults of chosen VMAs the pool could not serve (`os.hugetlb.fallback`).
    fallback: u64,
}

impl HugetlbPool {
    pub fn boot(cfg: &HugetlbConfig, mem: &mut PhysMem) -> Result<HugetlbPool> {
        let size = if cfg.size.bytes() == 1 << 30 { PageSize::Size1G } else { PageSize::Size2M };
        if size.order().get() > mem.max_order() {
            return Err(Error::config("os.hugetlb.size", "1GiB pages need machine.max_order = 18"));
        }
        let mut pool = HugetlbPool {
            size,
            free: Vec::new(),
            members: Default::default(),
            vmas: cfg.vmas.clone(),
            reserve_at_mmap: cfg.pool.bytes() == 0,
            fallback: 0,
        };
        let want = cfg.pool.bytes() / size.bytes();
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
            let Some(frame) =
                mem.alloc(self.size.order(), Migratetype::Movable, FrameOwner::Reserved { pool: HUGETLB_POOL })
            else {
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
            vma.len() >= self.size.bytes()
        } else {
            self.vmas.iter().any(|n| **n == *vma.name)
        }
    }

    /// With pool 0, reserves pages for a chosen VMA as it is mapped.
    pub fn reserve_for(&mut self, start: VirtAddr, end: VirtAddr, name: &str, mem: &mut PhysMem) {
        let vma = Vma { start, end, writable: true, name: name.into() };
        if self.reserve_at_mmap && self.wants(&vma) {
            let first = start.raw().div_ceil(self.size.bytes());
            let last = end.raw() / self.size.bytes();
            self.reserve(last.saturating_sub(first), mem);
        }
    }

    pub fn owns(&self, frame: Pfn, size: PageSize) -> bool {
        size == self.size && self.members.contains(&frame.raw())
    }

    /// A page comes back to the pool (munmap), not to the buddy allocator.
    pub fn give_back(&mut self, frame: Pfn, mem: &mut PhysMem) {
        for i in 0..self.size.nr_pages() {
            mem.set_owner(frame.add(i), FrameOwner::Reserved { pool: HUGETLB_POOL });
        }
        self.free.push(frame);
    }
}

impl System for HugetlbPool {
    fn name(&self) -> &'static str {
        "hugetlb"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let size = self.size;
        let base = f.vaddr.align_down(size.bytes());
        if !self.wants(f.vma) || !f.vma.covers(base, size.bytes()) {
            return Ok(None);
        }
        let Some(frame) = self.free.pop() else {
            self.fallback += 1;
            return Ok(None);
        };
        if !k.range_is_empty(f.asid, base, size) {
            // Part of the range is already mapped by 4 KiB fallbacks.
            self.free.push(frame);
            self.fallback += 1;
            return Ok(None);
        }
        for i in 0..size.nr_pages() {
            k.mem.set_owner(frame.add(i), FrameOwner::User { asid: f.asid, vpn: base.vpn().add(i) });
        }
        k.map_user(f.asid, base, frame, size, f.vma.writable)?;
        let (kind, cycles) = match size {
            PageSize::Size1G => ("hugetlb_1g", k.costs.hugetlb_1g),
            _ => ("hugetlb_2m", k.costs.hugetlb_2m),
        };
        Ok(Some(FaultOutcome { kind, size, cycles }))
    }

    fn mmap(&mut self, k: &mut Kernel, _asid: crate::units::Asid, start: VirtAddr, end: VirtAddr, name: &str) {
        self.reserve_for(start, end, name, &mut k.mem);
    }

    /// A page of the pool comes back to the pool, not to the buddy allocator.
    fn frame_freed(&mut self, k: &mut Kernel, _vaddr: VirtAddr, frame: Pfn, size: PageSize) -> bool {
        if !self.owns(frame, size) {
            return false;
        }
        self.give_back(frame, &mut k.mem);
        true
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        report_counters(self.fallback, out);
    }

    fn reset_stats(&mut self) {
        self.fallback = 0;
    }
}
