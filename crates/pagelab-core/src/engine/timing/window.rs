//! The interval core model: one core's reorder window, in the spirit of
//! Sniper's interval simulation. Instructions dispatch in order, one every
//! `base_cpi` cycles; what hits the L1 TLB and the L1D is inside that rate.
//! A long-latency access (an L2 TLB hit, a walk, a reference served below
//! the L1D) issues when it dispatches and finishes later; the core goes on
//! dispatching, so misses that are independent of each other overlap, until
//! one of these stops it:
//!
//! - the reorder buffer is full: instruction `k + rob` cannot dispatch
//!   before instruction `k` finished (in-order retirement);
//! - all `mshrs` fill buffers are busy: a data miss issues when the first
//!   of them frees;
//! - a dependent load (its address is the previous load's data) issues
//!   when that load finishes, so a chain of misses costs one latency each;
//! - a page walk needs one of `page_walkers` walkers; its references are
//!   serial (each reads the entry the previous one named), and the data
//!   access issues when the walk ends. With `walk_fill_buffers`, a walk
//!   with a reference that left the L1D also holds one fill buffer from
//!   its start to its end (serial references never need two at once; it
//!   is held through the walk's L1D hits too, a simplification);
//! - stores retire into the store buffer and drain in order when their
//!   line arrives; only their translation holds retirement, and a full
//!   buffer stalls dispatch;
//! - an instruction fetch that misses stalls the front end until it
//!   returns (nothing behind it dispatches);
//! - a serialising event (a page fault, a shootdown's interrupt, a mapping
//!   change, the end of the run) waits for everything in flight.
//!
//! Stall attribution, along the critical path: the core is stalled from the
//! time the blocked instruction would have dispatched until the access
//! blocking it finished. That stall is the part of the access's latency
//! (from its issue to its end) that the window did not hide. It is charged
//! by what would have removed it: the stall cycles that would vanish if the
//! access had translated at once (at most its translation: the L2 TLB
//! lookup, the wait for a walker, the walk) are translation, and of those
//! the ones that would vanish if its walk took no time (at most the walk)
//! are `cycles.walk`; the rest is data (the wait for a fill buffer, the
//! cache or memory access, and a dependent load's wait to issue). So the
//! latency that other work hid comes out of the access's data first. Thus
//! cycles = base + translation + data + faults + daemon holds exactly,
//! overlapped latency is charged once, to the access the core waited for,
//! and a run whose walks get shorter loses those cycles in translation.
//! (Charging the stall to what the access was doing during the stall's
//! own interval, the rule before, put a hidden walk's cost in data: on
//! gups the core stalls at the end of an access, after its walk.)

use std::collections::VecDeque;

use super::banks::Banks;
use crate::config::{MachineConfig, OooConfig};
use crate::hw::core_stats::CoreStats;

/// An access in flight that holds retirement.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Its instruction's number (instructions dispatched before it, plus 1).
    at: u64,
    /// When it could start (its address known): its translation begins.
    issue: f64,
    /// Its page walk, when it had one (else both equal its translation's end).
    walk_start: f64,
    walk_end: f64,
    /// When its result is there (for a store: when its translation is).
    done: f64,
}

/// What the two stages know of one access, handed to [`Window::access`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AccessTiming {
    /// Instructions since the previous access, this one's included.
    pub instrs: u32,
    pub kind: Kind,
    /// The address is the data of the previous load.
    pub dependent: bool,
    /// It missed the L1 TLB (an L2 TLB lookup).
    pub l2_tlb: bool,
    /// It missed the L2 TLB (a walk, with its page-walk-cache lookup).
    pub walk: bool,
    /// Latency of its walk references, one after the other (0 = none).
    pub walk_refs: f64,
    /// One of its walk references missed the L1D (read only when walks
    /// enter at the L1D).
    pub walk_left_l1d: bool,
    /// Latency of its data reference beyond an L1D hit.
    pub data: f64,
}

/// What an access is, for the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Load,
    Store,
    IFetch,
}

/// Flags that stage 1 records per access for stage 2 (see
/// [`Window::record`]).
pub const L2_TLB: u8 = 1;
pub const WALK: u8 = 2;
pub const FAULT: u8 = 4;

/// One core's window and its clock.
#[derive(Debug, Clone)]
pub struct Window {
    cpi: f64,
    rob: u64,
    l2_tlb_latency: f64,
    walk_latency: f64,
    /// Walks that leave the L1D take a fill buffer (`machine.ooo.walk_fill_buffers`).
    pub(super) walk_fill_buffers: bool,
    /// When the next instruction dispatches (cycles since the core began).
    now: f64,
    /// Instructions dispatched.
    dispatched: u64,
    /// Accesses that hold retirement, oldest first.
    in_flight: VecDeque<InFlight>,
    /// When each fill buffer frees.
    mshrs: Vec<f64>,
    /// When each page walker frees.
    walkers: Vec<f64>,
    /// When each store-buffer entry drains, as a ring (entry `store_pos` is
    /// the oldest, the next to reuse).
    stores: Vec<f64>,
    store_pos: usize,
    /// When the newest store drains (stores drain in order).
    last_store: f64,
    /// When the most recent load's data is there.
    last_load: f64,
    /// Stage 1's record of each access of the quantum (flags) and of the
    /// cycles of each fault, in order.
    pub flags: Vec<u8>,
    pub faults: Vec<f64>,
    /// The DRAM's banks (`machine.memory.dram`), fed by stage 2.
    pub banks: Option<Box<Banks>>,
}

impl Window {
    pub fn new(m: &MachineConfig) -> Window {
        let o: &OooConfig = &m.ooo;
        Window {
            cpi: m.timing.base_cpi,
            rob: o.rob as u64,
            l2_tlb_latency: m.tlb.l2_latency as f64,
            walk_latency: m.walk_latency() as f64,
            walk_fill_buffers: super::walks_hold_fill_buffers(m),
            now: 0.0,
            dispatched: 0,
            in_flight: VecDeque::with_capacity(o.rob as usize),
            mshrs: vec![0.0; o.mshrs as usize],
            walkers: vec![0.0; o.page_walkers as usize],
            stores: vec![0.0; o.store_buffer as usize],
            store_pos: 0,
            last_store: 0.0,
            last_load: 0.0,
            flags: Vec::new(),
            faults: Vec::new(),
            banks: super::dram::DramTiming::active(m).then(|| Box::new(Banks::new(m.memory.dram.nr_banks()))),
        }
    }

    /// The window's clock: when the next instruction dispatches.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Stage 1's record of one access: which of [`L2_TLB`], [`WALK`],
    /// [`FAULT`] happened, and the fault's cycles (already in
    /// `cycles.faults`).
    #[inline]
    pub fn record(&mut self, flags: u8, fault_cycles: f64) {
        self.flags.push(flags);
        if flags & FAULT != 0 {
            self.faults.push(fault_cycles);
        }
    }

    /// Forgets the records of the quantum just timed.
    pub fn clear_records(&mut self) {
        self.flags.clear();
        self.faults.clear();
    }

    /// Dispatches one access and charges the stalls it causes to `stats`.
    #[inline(always)]
    pub fn access(&mut self, a: &AccessTiming, stats: &mut CoreStats) {
        self.access_in::<false>(a, stats);
    }

    /// The same on a machine with the DRAM's banks: the references stage 2
    /// gave [`Window::banks`] wait for their banks.
    #[inline(always)]
    pub fn access_with_banks(&mut self, a: &AccessTiming, stats: &mut CoreStats) {
        self.access_in::<true>(a, stats);
    }

    /// (Always inlined: it runs once per access, and most accesses take
    /// its first few lines only.)
    #[inline(always)]
    fn access_in<const BANKS: bool>(&mut self, a: &AccessTiming, stats: &mut CoreStats) {
        let upto = self.dispatched + a.instrs as u64;
        if !self.in_flight.is_empty() {
            self.stall_for_rob(upto, stats);
        }
        self.now += a.instrs as f64 * self.cpi;
        self.dispatched = upto;
        if a.kind == Kind::Store {
            self.take_store_entry(stats);
        }
        if !(a.l2_tlb || a.walk || a.walk_refs > 0.0 || a.data > 0.0 || a.dependent) {
            // The common case: hits the L1 TLB and the L1D, nothing to wait for.
            if a.kind == Kind::Load {
                self.last_load = self.now;
            }
            if a.kind == Kind::Store {
                self.drain_store_at(self.now);
            }
            if BANKS {
                self.write_back_at(self.now);
            }
            return;
        }
        self.long_access::<BANKS>(a, stats);
    }

    /// Writebacks still waiting for their banks reach them at `at`.
    #[inline]
    fn write_back_at(&mut self, at: f64) {
        if let Some(b) = self.banks.as_mut().filter(|b| b.has_writes()) {
            b.write_back_at(at);
        }
    }

    /// An access that waits for something: its translation and data times,
    /// then what it holds (retirement, the store buffer, the front end).
    #[inline(never)]
    fn long_access<const BANKS: bool>(&mut self, a: &AccessTiming, stats: &mut CoreStats) {
        let dispatch = self.now;
        let issue = if a.dependent { dispatch.max(self.last_load) } else { dispatch };
        let mut t = issue;
        if a.l2_tlb {
            t += self.l2_tlb_latency;
        }
        let (mut walk_start, mut walk_end) = (t, t);
        if a.walk || a.walk_refs > 0.0 {
            let w = argmin(&self.walkers);
            walk_start = t.max(self.walkers[w]);
            let fill_buffer = (self.walk_fill_buffers && a.walk_left_l1d).then(|| argmin(&self.mshrs));
            if let Some(m) = fill_buffer {
                walk_start = walk_start.max(self.mshrs[m]);
            }
            // (The walk's fixed cost is taken before its references: where
            // in the walk the walker spends it is not modelled.)
            let refs_start = walk_start + if a.walk { self.walk_latency } else { 0.0 };
            walk_end = refs_start + a.walk_refs;
            if BANKS {
                if let Some(b) = self.banks.as_mut() {
                    walk_end += b.walk_delay(refs_start, stats);
                }
            }
            self.walkers[w] = walk_end;
            if let Some(m) = fill_buffer {
                // Held to the walk's end: its references are serial.
                self.mshrs[m] = walk_end;
            }
            t = walk_end;
        }
        let mut done = t;
        if a.data > 0.0 {
            let m = argmin(&self.mshrs);
            let mut start = t.max(self.mshrs[m]);
            if BANKS {
                if let Some(b) = self.banks.as_mut() {
                    start += b.data_wait(start, stats);
                }
            }
            done = start + a.data;
            self.mshrs[m] = done;
        }
        if BANKS {
            self.write_back_at(done);
        }
        let op = InFlight { at: self.dispatched, issue, walk_start, walk_end, done };
        match a.kind {
            Kind::Load => {
                self.last_load = done;
                if done > dispatch {
                    self.in_flight.push_back(op);
                }
            }
            Kind::Store => {
                // Retirement waits for the translation only; the line
                // arrives while the store sits in the store buffer.
                if walk_end > dispatch {
                    self.in_flight.push_back(InFlight { done: walk_end, ..op });
                }
                self.drain_store_at(done);
            }
            Kind::IFetch => {
                if done > dispatch {
                    self.stall_until(&op, stats);
                }
            }
        }
    }

    /// Before instruction `upto` dispatches: the accesses it would pass in
    /// a full reorder buffer must finish; those that finished retire.
    #[inline]
    fn stall_for_rob(&mut self, upto: u64, stats: &mut CoreStats) {
        while let Some(&head) = self.in_flight.front() {
            if head.at + self.rob <= upto {
                // Instruction head.at + rob dispatches at `blocked` without
                // the stall.
                let blocked = self.now + (head.at + self.rob - self.dispatched) as f64 * self.cpi;
                if head.done > blocked {
                    let stall = head.done - blocked;
                    charge(&head, blocked, head.done, stats);
                    self.now += stall;
                }
            } else if head.done > self.now {
                return;
            }
            self.in_flight.pop_front();
        }
    }

    /// The front end or a serialising event waits for `op`.
    fn stall_until(&mut self, op: &InFlight, stats: &mut CoreStats) {
        if op.done > self.now {
            charge(op, self.now, op.done, stats);
            self.now = op.done;
        }
    }

    /// A store takes the oldest store-buffer entry, waiting for it to drain.
    #[inline]
    fn take_store_entry(&mut self, stats: &mut CoreStats) {
        let free_at = self.stores[self.store_pos];
        if free_at > self.now {
            stats.cycles_data += free_at - self.now;
            self.now = free_at;
        }
    }

    /// The store just given an entry drains when its line is there, and
    /// after the stores before it.
    #[inline]
    fn drain_store_at(&mut self, line_there: f64) {
        self.last_store = self.last_store.max(line_there);
        self.stores[self.store_pos] = self.last_store;
        self.store_pos = if self.store_pos + 1 == self.stores.len() { 0 } else { self.store_pos + 1 };
    }

    /// A serialising event: everything in flight finishes and every store
    /// drains before the next instruction. The event's own cycles follow
    /// (`then`, already counted by whoever caused it).
    pub fn serialize(&mut self, stats: &mut CoreStats, then: f64) {
        while let Some(op) = self.in_flight.pop_front() {
            self.stall_until(&op, stats);
        }
        if self.last_store > self.now {
            stats.cycles_data += self.last_store - self.now;
            self.now = self.last_store;
        }
        self.now += then;
    }
}

/// Charges the stall from `from` to `to`, spent waiting for `op`, along
/// `op`'s critical path (see the module's comment): the stall cycles that
/// would vanish if `op` had translated at once are translation, at most its
/// translation's length (`issue` to `walk_end`); of those, the ones that
/// would vanish if its walk took no time are the walk, at most the walk's
/// length. The rest is data, as is the time before `op` could issue (a
/// dependent load waiting for the load before it).
#[inline]
fn charge(op: &InFlight, from: f64, to: f64, stats: &mut CoreStats) {
    let stall = to - from;
    let own = overlap(from, to, op.issue, op.done);
    let translation = own.min(op.walk_end - op.issue);
    let walk = translation.min(op.walk_end - op.walk_start);
    stats.cycles_translation += translation;
    stats.cycles_walk += walk;
    stats.cycles_data += stall - translation;
}

/// Length of the intersection of [a, b] and [c, d].
#[inline]
fn overlap(a: f64, b: f64, c: f64, d: f64) -> f64 {
    (b.min(d) - a.max(c)).max(0.0)
}

/// The index of the smallest value (the first of equals).
#[inline]
fn argmin(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate().skip(1) {
        if x < v[best] {
            best = i;
        }
    }
    best
}
