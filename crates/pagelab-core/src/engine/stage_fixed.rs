//! Stage 2 of the fixed model without prefetchers, tiers or DRAM: the
//! stages of before, kept bit for bit (`Simulation::run_stages` picks
//! them; `timing::stage` holds the general one).

use super::timing::MEMORY;
use super::{RefKind, Simulation, FLOW_CLASS, PREFETCH_DISTANCE, PREFETCH_MISS_SHARE};

impl Simulation {
    /// Stage 2: run core `i`'s references through the caches, in order.
    /// (Out of line, like stage 1, so that its loop's code does not depend
    /// on what else `step` holds.)
    #[inline(never)]
    pub(super) fn cache_stage(&mut self, i: usize) {
        let core = &mut self.cores[i];
        let t = &self.timing;
        let refs = &core.refs;
        let prefetch = core.prefetch_caches;
        // Walk references enter at `walk_entry`; the rest at the L1. A
        // reference entering at memory does not reach the caches at all.
        let mut caches = self.caches.as_mut();
        let mut l1_misses = 0;
        for j in 0..refs.len() {
            let (addr, kind) = refs.get(j);
            let entry = if kind == RefKind::Walk { t.walk_entry } else { 0 };
            let level = match caches {
                Some(ref mut c) if entry < MEMORY => {
                    if let Some(ahead) = prefetch.then(|| refs.addr_at(j + PREFETCH_DISTANCE)).flatten() {
                        c.prefetch(i, crate::units::PhysAddr::new(ahead));
                    }
                    c.access_from(i, crate::units::PhysAddr::new(addr), kind, entry as u8).index()
                }
                _ => MEMORY,
            };
            // (Masks the compiler can see through: no bounds checks.)
            core.stats.flow[entry & 3][level & 3][FLOW_CLASS[kind.index() & 3]] += 1;
            l1_misses += (level > 0) as u64;
            if kind == RefKind::Walk {
                core.stats.cycles_translation += t.walk_cycles(level);
            } else {
                core.stats.cycles_data += t.data_cycles(level);
            }
            if let Some(e) = &mut self.export {
                if !e.memory_only || level == MEMORY {
                    let clock = t.base_cpi * core.retired as f64 + core.stall_offset + core.stats.stall_cycles();
                    e.write(addr, kind, clock);
                }
            }
        }
        core.prefetch_caches = l1_misses * PREFETCH_MISS_SHARE >= refs.len() as u64;
    }

    /// Stage 2 without caches (and without an export to write): every
    /// reference is served by memory, so only the counts and the cycles
    /// remain. The cycles are added one reference at a time, in order, as
    /// the general stage does (the same sums, to the last bit).
    #[inline(never)]
    pub(super) fn memory_stage(&mut self, i: usize) {
        let core = &mut self.cores[i];
        let t = &self.timing;
        let (walk_cycles, data_cycles) = (t.walk_cycles(MEMORY), t.data_cycles(MEMORY));
        let mut counts = [0u64; 4];
        for kind in core.refs.kinds() {
            counts[kind.index() & 3] += 1;
            if kind == RefKind::Walk {
                core.stats.cycles_translation += walk_cycles;
            } else {
                core.stats.cycles_data += data_cycles;
            }
        }
        for (kind, n) in counts.into_iter().enumerate() {
            let entry = if kind == RefKind::Walk.index() { t.walk_entry } else { 0 };
            core.stats.flow[entry & 3][MEMORY][FLOW_CLASS[kind]] += n;
        }
    }
}
