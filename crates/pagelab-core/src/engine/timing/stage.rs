//! Stage 2 when it needs more than the fixed model's per-reference sums:
//! the interval model, the hardware prefetchers, or both. (The fixed model
//! without prefetchers keeps `cache_stage` and `memory_stage`, unchanged.)
//!
//! How the two stages feed the window: stage 1 translates the quantum's
//! accesses and, under the interval model, records per access what its
//! translation did (an L2 TLB lookup, a walk, a fault and its cycles:
//! `Window::record`). Stage 2 runs the references in program order: the
//! walk references of an access come before its data reference, so it sums
//! the walk references' latencies (served level by level), and at the data
//! reference, which ends the access, it hands the window the access's
//! instruction count and dependence (from `Access::site`), its translation
//! record and its data latency. A fault serialises the window before the
//! access; so do shootdowns and mapping events, between stages.

use super::dram::DramRef;
use super::window::{AccessTiming, Kind, FAULT, L2_TLB, WALK};
use super::MEMORY;
use crate::engine::{RefKind, Simulation, FLOW_CLASS};
use crate::phys::MAX_TIERS;
use crate::units::PhysAddr;
use crate::workload::AccessKind;

impl Simulation {
    /// Both stages over accesses [pos, end) of core `i`, stage 2 the timed
    /// stage in the variant the timing model, the prefetchers and the walks'
    /// fill buffers ask for, on a machine with memory tiers (`TIERS`) or
    /// the DRAM's row buffers (`DRAM`) or neither. Chosen once per quantum.
    /// (The fixed model without prefetchers, tiers or DRAM runs the stages
    /// of before instead: `run_stages`.)
    #[inline]
    pub(in crate::engine) fn timed_stages<const TIERS: bool, const DRAM: bool>(
        &mut self,
        i: usize,
        end: usize,
    ) -> crate::error::Result<()> {
        let prefetch = self.caches.as_ref().is_some_and(crate::hw::cache::CacheHierarchy::prefetching);
        let walk_fb = self.timing.walk_fill_buffers;
        if self.timing.model == crate::config::TimingModel::Fixed {
            self.translate::<false>(i, end)?;
            if prefetch {
                self.timed_stage::<false, true, TIERS, false, DRAM>(i);
            } else {
                self.timed_stage::<false, false, TIERS, false, DRAM>(i);
            }
            return Ok(());
        }
        self.translate::<true>(i, end)?;
        match (prefetch, walk_fb) {
            (false, false) => self.timed_stage::<true, false, TIERS, false, DRAM>(i),
            (false, true) => self.timed_stage::<true, false, TIERS, true, DRAM>(i),
            (true, false) => self.timed_stage::<true, true, TIERS, false, DRAM>(i),
            (true, true) => self.timed_stage::<true, true, TIERS, true, DRAM>(i),
        }
        Ok(())
    }

    /// Stage 2 for core `i` under the interval model (`INTERVAL`) or the
    /// fixed one, with the prefetchers (`PREFETCH`) or not, on a machine
    /// with memory tiers (`TIERS`: a reference served by memory is charged
    /// its tier's latency, and writebacks their tier's, `timing::tiers`) or
    /// one memory; noting the walks that miss the L1D (`WALK_FB`: they hold
    /// fill buffers, `Timing::walk_fill_buffers`) or not, so that the test
    /// per walk reference costs nothing when they do not; with the DRAM's
    /// row buffers (`DRAM`: a reference served by memory costs its row
    /// outcome's latency, `timing::dram`, and waits for its bank under the
    /// interval model) or not. (`TIERS` and `DRAM` never both.)
    #[inline(never)]
    pub(in crate::engine) fn timed_stage<
        const INTERVAL: bool,
        const PREFETCH: bool,
        const TIERS: bool,
        const WALK_FB: bool,
        const DRAM: bool,
    >(
        &mut self,
        i: usize,
    ) {
        let core = &mut self.cores[i];
        let t = &self.timing;
        let accesses = &core.batch.accesses[core.pos..];
        let mut caches = self.caches.as_mut();
        let mut window = core.window.take();
        let (mut next_access, mut next_fault) = (0usize, 0usize);
        let mut walk_refs = 0.0;
        // A walk reference missed the L1D (a fill buffer's work: walks
        // enter there when `WALK_FB`).
        let mut walk_left_l1d = false;
        // The interval model's writeback cycles since the last data reference.
        let mut writebacks = 0.0;
        let tiers = if TIERS { t.tiers.as_deref() } else { None };
        let mut dram = if DRAM { self.dram.as_deref_mut().zip(t.dram.as_deref()) } else { None };
        for j in 0..core.refs.len() {
            let (addr, kind) = core.refs.get(j);
            let entry = if kind == RefKind::Walk { t.walk_entry } else { 0 };
            let level = match caches {
                Some(ref mut c) if entry < MEMORY => {
                    if PREFETCH && kind != RefKind::Walk {
                        // A data reference: access `next_access`'s, made at its site.
                        let pc = accesses[next_access].site.pc_tag();
                        c.access_prefetching(i, PhysAddr::new(addr), kind, 0, pc).index()
                    } else {
                        c.access_from(i, PhysAddr::new(addr), kind, entry as u8).index()
                    }
                }
                _ => MEMORY,
            };
            core.stats.flow[entry & 3][level & 3][FLOW_CLASS[kind.index() & 3]] += 1;
            // The tier of a memory reference; whether it writes memory (a
            // store without caches).
            let mut tier = None;
            if let Some(tt) = tiers {
                let write = caches.is_none() && kind == RefKind::Store;
                if level == MEMORY {
                    let n = tt.tier_of(addr);
                    let counts = if write { &mut core.stats.tier_writes } else { &mut core.stats.tier_reads };
                    counts[n & (MAX_TIERS - 1)] += 1;
                    tier = Some((n, write));
                }
                if let Some(c) = caches.as_mut() {
                    while let Some(line) = c.take_writeback() {
                        let n = tt.tier_of(line);
                        core.stats.tier_writes[n & (MAX_TIERS - 1)] += 1;
                        if INTERVAL {
                            writebacks += tt.writeback_cycles(n, true);
                        } else {
                            core.stats.cycles_data += tt.writeback_cycles(n, false);
                        }
                    }
                }
            }
            // The row outcome of a reference served by memory (and the
            // writebacks its fill caused: they open their rows first).
            let mut row = None;
            if let Some((d, dt)) = dram.as_mut() {
                let banks = window.as_mut().and_then(|w| w.banks.as_deref_mut());
                let r = DramRef {
                    addr,
                    kind,
                    memory: level == MEMORY,
                    no_caches: caches.is_none(),
                    walk_offset: walk_refs,
                };
                row = dt.requests(d, caches.as_deref_mut(), banks, &mut core.stats, r);
            }
            let latency = match (tiers, tier, row) {
                (Some(tt), Some((n, write)), _) => tt.latency(n, write),
                (_, _, Some(o)) => dram.as_ref().map_or(t.latency[level], |(_, dt)| dt.read(o)),
                _ => t.latency[level],
            };
            if !INTERVAL {
                if let (Some(o), Some((_, dt))) = (row, dram.as_ref()) {
                    if kind == RefKind::Walk {
                        let cycles = dt.walk_cycles(o);
                        core.stats.cycles_translation += cycles;
                        // `walk_cycles_of` counts t.walk_cycles(MEMORY).
                        core.stats.cycles_walk += cycles - t.walk_cycles(MEMORY);
                    } else {
                        core.stats.cycles_data += dt.data_cycles(o);
                    }
                } else {
                    match (tiers, tier) {
                        (Some(tt), Some((n, _))) if kind == RefKind::Walk => {
                            let cycles = tt.walk_cycles(n);
                            core.stats.cycles_translation += cycles;
                            // `walk_cycles_of` counts t.walk_cycles(MEMORY).
                            core.stats.cycles_walk += cycles - t.walk_cycles(MEMORY);
                        }
                        (Some(tt), Some((n, write))) => core.stats.cycles_data += tt.data_cycles(n, write),
                        _ if kind == RefKind::Walk => core.stats.cycles_translation += t.walk_cycles(level),
                        _ => core.stats.cycles_data += t.data_cycles(level),
                    }
                }
            } else if kind == RefKind::Walk {
                walk_refs += latency;
                if WALK_FB {
                    walk_left_l1d |= level != 0;
                }
            } else if let Some(w) = window.as_mut() {
                // The data reference ends access `next_access`.
                let access = &accesses[next_access];
                let flags = w.flags.get(next_access).copied().unwrap_or(0);
                if flags & FAULT != 0 {
                    let cycles = w.faults.get(next_fault).copied().unwrap_or(0.0);
                    next_fault += 1;
                    w.serialize(&mut core.stats, cycles);
                }
                let a = AccessTiming {
                    instrs: access.instrs,
                    kind: match access.kind {
                        AccessKind::Load => Kind::Load,
                        AccessKind::Store => Kind::Store,
                        AccessKind::IFetch => Kind::IFetch,
                    },
                    dependent: access.site.is_dependent(),
                    l2_tlb: flags & L2_TLB != 0,
                    walk: flags & WALK != 0,
                    walk_refs,
                    walk_left_l1d,
                    data: if TIERS {
                        latency - t.latency[0] + writebacks
                    } else if DRAM {
                        latency - t.latency[0]
                    } else {
                        t.latency[level] - t.latency[0]
                    },
                };
                if DRAM {
                    w.access_with_banks(&a, &mut core.stats);
                } else {
                    w.access(&a, &mut core.stats);
                }
                walk_refs = 0.0;
                walk_left_l1d = false;
                writebacks = 0.0;
            }
            if kind != RefKind::Walk {
                next_access += 1;
            }
            if let Some(e) = &mut self.export {
                if !e.memory_only || level == MEMORY {
                    let clock = t.base_cpi * core.retired as f64 + core.stall_offset + core.stats.stall_cycles();
                    e.write(addr, kind, clock);
                }
            }
        }
        if let Some(w) = window.as_mut() {
            w.clear_records();
        }
        core.window = window;
    }
}
