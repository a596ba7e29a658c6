//! Stage 1 of a virtualized run: each access through the two-dimensional
//! walker (`walk2d`), recorded for the interval model and sampled for a
//! guest's Leshy as the native stage (`translate_stage`) does.

use super::mmu::Request;
use super::walk2d::Walker2d;
use super::Simulation;
use crate::error::Result;
use crate::hw::tlb::MissSample;

impl Simulation {
    /// Stage 1 of a virtualized run: core `i`'s accesses [pos, end) through
    /// the 2D walker (no host prefetching: a first version); with `RECORD`
    /// (the interval model), what each translation did, for the window, as
    /// the native stage does (VM exits serialise, like faults); with
    /// `SAMPLE` (Leshy online in some guest), one data-side L2 TLB miss in
    /// the guest's sample period goes to its kernel's sample buffer, with
    /// the guest-virtual address and the walk's references of both
    /// dimensions, as the native stage samples.
    #[inline(never)]
    pub(super) fn translate_stage_virt<const RECORD: bool, const SAMPLE: bool>(
        &mut self,
        i: usize,
        end: usize,
    ) -> Result<()> {
        let virt = self.virt.as_deref_mut().expect("a virtualized run");
        let core = &mut self.cores[i];
        core.refs.clear();
        let asid = core.asid;
        // The core's VM and its guest kernel: once per quantum.
        let vm = virt.cores[i].vm;
        let guest = if vm == 0 { &mut self.kernel } else { &mut virt.other_guests[vm - 1] };
        let guest_asids = &virt.guest_asids[vm];
        let page_data = virt.page_data[i];
        // (Unfiltered: a copy-on-write changes a page's content whatever
        // the process declares.)
        let contents = virt.contents.as_deref_mut();
        // One walker for the quantum: the core's MMU, buffer and counters
        // are reached through it.
        let mut w = Walker2d {
            mmu: &mut core.mmu,
            nested: &mut virt.cores[i],
            guest,
            hv: &mut virt.hv,
            refs: &mut core.refs,
            stats: &mut core.stats,
            guest_asids,
            contents: contents.map(|c| (c, page_data)),
        };
        for j in core.pos..end {
            let a = core.batch.accesses[j];
            core.ran += 1;
            w.stats.instructions += a.instrs as u64;
            core.retired += a.instrs as u64;
            let (write, instr, kind) = super::request_of(a.kind);
            super::count_kind(w.stats, a.kind);
            let before = RECORD.then(|| super::translation_marks::<true>(w.stats));
            let miss_marks = SAMPLE.then_some((w.stats.dtlb_l2_misses, w.stats.walk_mem_refs));
            let frame = w.translate(Request { asid, vaddr: a.vaddr, write, instr })?;
            if let Some((misses, walk_refs)) = miss_marks {
                if w.stats.dtlb_l2_misses != misses && w.guest.miss_samples.on_miss(i) {
                    let walk_refs = (w.stats.walk_mem_refs - walk_refs) as u32;
                    w.guest.miss_samples.push(MissSample { asid, vaddr: a.vaddr, walk_refs });
                }
            }
            w.refs.push(frame.addr().add(a.vaddr.page_offset()), kind);
            if RECORD {
                super::record_translation::<true>(core.window.as_mut(), before, w.stats);
            }
        }
        Ok(())
    }
}
