//! The page-fault handler: find the VMA (or make one, in automatic mode),
//! check permissions, then offer the fault to the chain of systems until
//! one backs it.

use super::Kernel;
use crate::error::{Error, Result};
use crate::paging::Vma;
use crate::units::{Asid, PageSize, VirtAddr};

/// One page fault as the chain sees it: the page table has no translation
/// for `vaddr`, which lies in `vma`, and the access is allowed.
#[derive(Debug, Clone, Copy)]
pub struct Fault<'a> {
    pub asid: Asid,
    pub vaddr: VirtAddr,
    pub write: bool,
    pub vma: &'a Vma,
}

/// The name of automatic VMAs (`os.auto_vma`): an mmap may replace them.
pub const AUTO_VMA_NAME: &str = "auto";

/// What a fault installed, by name: each system names its own kinds
/// (`base`, `thp`, `chp`...), counted as `os.faults.NAME`; the registry
/// lists every kind any system can install, so each run reports them all.
pub type FaultKind = &'static str;

/// What one fault did and what it cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultOutcome {
    pub kind: FaultKind,
    pub size: PageSize,
    pub cycles: f64,
}

impl Kernel {
    /// Handles a fault at `vaddr`: the page table has no translation for
    /// it. Errors are the workload's (an access outside every VMA with
    /// automatic VMAs off, a store to a read-only VMA).
    pub fn handle_fault(&mut self, asid: Asid, vaddr: VirtAddr, write: bool) -> Result<FaultOutcome> {
        let vma = match self.proc(asid).aspace.find_vma(vaddr) {
            Some(v) => v.clone(),
            None => self.auto_vma(asid, vaddr)?,
        };
        if write && !vma.writable {
            return Err(Error::Workload(format!("store to read-only mapping `{}` at {vaddr}", vma.name)));
        }
        if !self.proc(asid).files.is_empty() {
            if let Some((file, index)) = self.file_page_at(asid, vaddr) {
                let outcome = self.file_fault(asid, vaddr, file, index)?;
                self.stats.count_fault(outcome.kind);
                return Ok(outcome);
            }
        }
        let fault = Fault { asid, vaddr, write, vma: &vma };
        // Out of memory, clean page-cache pages are reclaimed and the
        // chain tried again (no page cache: the first error stands).
        // The outcome is written where it is declared, not returned through
        // the closures: each layer's copy of a `Result<Option<..>>` stalled
        // the host, its narrow stores loaded back at other widths.
        let mut outcome = None;
        self.with_reclaim(|k| {
            k.with_systems(|systems, k| {
                for s in systems.iter_mut() {
                    let opt_out = &k.proc(asid).opt_out;
                    if !opt_out.is_empty() && opt_out.contains(&s.name()) {
                        continue;
                    }
                    // Field by field, not the whole value: its padding
                    // bytes, copied at other widths, were the same stall.
                    match s.fault(k, &fault) {
                        Ok(Some(FaultOutcome { kind, size, cycles })) => {
                            outcome = Some(FaultOutcome { kind, size, cycles });
                            break;
                        }
                        Ok(None) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok::<_, Error>(())
            })
        })?;
        let outcome = outcome.ok_or_else(|| {
            Error::Workload(format!("no system of the chain ({}) backed the fault at {vaddr}", self.chain().join(", ")))
        })?;
        self.stats.count_fault(outcome.kind);
        Ok(outcome)
    }

    /// Whether nothing is mapped in the `size`-aligned range at `base`:
    /// no table below its entry at that level (Linux's pmd_none / pud_none).
    pub fn range_is_empty(&self, asid: Asid, base: VirtAddr, size: PageSize) -> bool {
        let pt = &self.proc(asid).aspace.pt;
        match pt.leaf_slot(base) {
            Some(slot) => slot.level >= size.leaf_level() && !pt.entry(slot).present(),
            None => false,
        }
    }

    /// Automatic VMAs (for raw address traces without mapping events): the
    /// 2 MiB-aligned region around the address becomes part of a VMA,
    /// merged with its neighbours, so huge pages remain possible.
    fn auto_vma(&mut self, asid: Asid, vaddr: VirtAddr) -> Result<Vma> {
        if !self.proc(asid).auto_vma {
            return Err(Error::Workload(format!("access at {vaddr} outside every mapping (segmentation fault)")));
        }
        let start = vaddr.align_down(2 << 20);
        let end = start.add(2 << 20);
        // Only the part of the region no VMA holds yet.
        let vmas = &self.proc(asid).aspace.vmas;
        let lo = vmas.iter().filter(|v| v.end <= vaddr && v.end > start).map(|v| v.end).max().unwrap_or(start);
        let hi = vmas.iter().filter(|v| v.start > vaddr && v.start < end).map(|v| v.start).min().unwrap_or(end);
        let p = self.proc_mut(asid);
        if p.unmapped.find(vaddr).is_some() {
            // The program touched what a munmap had unmapped (a trace
            // missing a mapping event, or a fault the program handled).
            p.unmapped.remove(lo, hi);
            self.stats.auto_vmas_after_munmap += 1;
        }
        let p = self.proc_mut(asid);
        p.aspace.vmas.insert(Vma { start: lo, end: hi, writable: true, name: AUTO_VMA_NAME.into() });
        self.stats.auto_vmas += 1;
        Ok(self.proc(asid).aspace.find_vma(vaddr).expect("just inserted").clone())
    }
}
