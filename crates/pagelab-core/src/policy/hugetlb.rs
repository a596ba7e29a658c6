//! `hugetlb`: huge pages from a reserved pool (hugetlbfs). The pool is
//! either reserved at boot (`os.hugetlb.pool`, before fragmentation, like
//! `hugepages=` on the kernel command line) or, with pool 0, reserved when
//! a chosen VMA is mapped, as much as can be had. Where Linux would refuse
//! the mmap or deliver SIGBUS when the pool runs dry, pagelab falls back to
//! 4 KiB pages and counts it (`hugetlb.fallback`), so a run always finishes.

use super::{fault::FaultOutcome, FaultKind, Kernel, Policy};
use crate::config::HugetlbConfig;
use crate::error::{Error, Result};
use crate::paging::Vma;
use crate::phys::{FrameOwner, Migratetype, PhysMem};
use crate::units::{Asid, PageSize, Pfn, VirtAddr};

const HUGETLB_POOL: u8 = 1;

#[derive(Debug)]
pub struct HugetlbPool {
    size: PageSize,
    /// Free pages of the pool (their frames owned `Reserved`).
    free: Vec<Pfn>,
    /// Every frame the pool ever reserved (to recognise its pages on free).
    members: std::collections::BTreeSet<u64>,
    vmas: Vec<String>,
    reserve_at_mmap: bool,
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
        };
        let want = cfg.pool.bytes() / size.bytes();
        if pool.reserve(want, mem) < want {
            return Err(Error::config("os.hugetlb.pool", format!("only {} of {want} huge pages could be reserved", pool.free.len())));
        }
        Ok(pool)
    }

    /// Reserves up to `n` pages from the buddy allocator; returns how many.
    fn reserve(&mut self, n: u64, mem: &mut PhysMem) -> u64 {
        let mut got = 0;
        while got < n {
            let Some(frame) = mem.alloc(self.size.order(), Migratetype::Movable, FrameOwner::Reserved { pool: HUGETLB_POOL }) else {
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
            self.vmas.contains(&vma.name)
        }
    }

    /// With pool 0, reserves pages for a chosen VMA as it is mapped.
    pub fn reserve_for(&mut self, start: VirtAddr, end: VirtAddr, name: &str, mem: &mut PhysMem) {
        let vma = Vma { start, end, writable: true, name: name.to_string() };
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

impl Kernel {
    pub(super) fn fault_hugetlb(&mut self, asid: Asid, vaddr: VirtAddr, vma: &Vma) -> Result<Option<FaultOutcome>> {
        let Policy::Hugetlb(pool) = &mut self.policy else { return Ok(None) };
        let size = pool.size;
        let base = vaddr.align_down(size.bytes());
        if !pool.wants(vma) || !vma.covers(base, size.bytes()) {
            return Ok(None);
        }
        let Some(frame) = pool.free.pop() else {
            self.stats.hugetlb_fallback += 1;
            return Ok(None);
        };
        if !self.range_is_empty(asid, base, size) {
            // Part of the range is already mapped by 4 KiB fallbacks.
            if let Policy::Hugetlb(pool) = &mut self.policy {
                pool.free.push(frame);
            }
            self.stats.hugetlb_fallback += 1;
            return Ok(None);
        }
        for i in 0..size.nr_pages() {
            self.mem.set_owner(frame.add(i), FrameOwner::User { asid, vpn: base.vpn().add(i) });
        }
        self.map_user(asid, base, frame, size, vma.writable)?;
        let (kind, cycles) = match size {
            PageSize::Size1G => (FaultKind::Hugetlb1G, self.costs.hugetlb_1g),
            _ => (FaultKind::Hugetlb2M, self.costs.hugetlb_2m),
        };
        Ok(Some(FaultOutcome { kind, size, cycles }))
    }
}
