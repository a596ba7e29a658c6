//! What every generator shares: the Mmap events, the init pass, the access
//! budget, and cutting a generator's output at batch boundaries.
//!
//! A generator ([`Generator`]) only knows how to continue its program: it
//! appends accesses until the output reaches a target length, possibly
//! overshooting by one small step (a GUPS update is a load and a store; a
//! kv GET's value copy is many loads). The driver keeps the overshoot in a
//! spill buffer for the next batch, so batches are cut anywhere and no
//! generator needs to be resumable mid-step.
//!
//! A program that maps and unmaps memory as it runs (Xapian's per-query
//! buffers: glibc serves large mallocs with mmap and frees them with
//! munmap) hands its events over after each fill ([`Generator::take_events`]),
//! each tied to the access it precedes; the driver keeps that tie through
//! batch cuts, the spill buffer and a fast-forward (a dropped stretch's
//! events still reach the kernel, before the next access handed out).

use super::{Access, Array, Batch, InitMode, MapEvent, Site, Workload};
use crate::units::VirtAddr;
use std::collections::VecDeque;

/// The site of the init pass's first-touch stores: one loop of its own
/// (a tag no generator's measured loop uses), independent stores.
const INIT_SITE: Site = Site::pc(0x7fff);

/// A program whose accesses are generated step by step.
pub(crate) trait Generator: Send {
    /// The arrays the program allocates, in allocation order.
    fn arrays(&self) -> &[Array];
    /// Whether the init pass writes the page or line at `addr` (sparse only
    /// writes the pages it will use).
    fn init_touches(&mut self, _addr: VirtAddr) -> bool {
        true
    }
    /// Appends accesses until `out.len() >= target`. Returns false when the
    /// program's natural run has ended (the output may then be short).
    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool;
    /// Moves the mapping events the last `fill` made into `into`, each as
    /// `(i, event)`: the event applies before `out[i]` of that fill's
    /// `out` (`i == out.len()` when it pushed the event). Called after
    /// every fill; the default (a program that maps only at its start)
    /// has none.
    fn take_events(&mut self, _into: &mut Vec<(usize, MapEvent)>) {}
    /// Starts another natural run after one ended (when the budget needs it).
    fn restart(&mut self);
    /// Accesses of the program's own initialization loop before its kernel
    /// proper (a GAPBS kernel's sweep over its property arrays), which
    /// `workload.skip_kernel_init` fast-forwards; 0 when it has none.
    fn init_loop_accesses(&self) -> u64 {
        0
    }
    /// [`Workload::leave_untouched`]; the default does not honour it.
    fn leave_untouched(&mut self, _untouched: &super::UntouchedPages<'_>) -> bool {
        false
    }
    /// [`Workload::untouched_pages`]; the default: none.
    fn untouched_pages(&self) -> Vec<(u64, [u64; 8])> {
        Vec::new()
    }
    /// [`Workload::file_windows`]; the default: none.
    fn file_windows(&self) -> Vec<crate::os::FileWindow> {
        Vec::new()
    }
    /// [`Workload::request_site`]; the default: not request-structured.
    fn request_site(&self) -> Option<Site> {
        None
    }
}

/// The parts of the configuration the driver applies.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    pub name: String,
    pub init: InitMode,
    /// 0 = one natural run.
    pub accesses: u64,
    /// Accesses generated and dropped before the measured ones.
    pub fast_forward: u64,
    /// Drop the program's initialization loop too (`init_loop_accesses`).
    pub skip_kernel_init: bool,
    /// Hand the fast-forwarded accesses to the engine, flagged, instead of
    /// dropping them (`workload.fast_forward_mode = "functional"`).
    pub functional: bool,
    /// Instructions each generated access carries, in place of the
    /// generator's (`workload.instructions_per_access`).
    pub instructions_per_access: Option<u32>,
}

pub(crate) struct Driven<G> {
    name: String,
    gen: G,
    /// Whether the last batch handed out was part of the init pass.
    last_batch_init: bool,
    init_step: u64,
    mapped: bool,
    init_array: usize,
    init_offset: u64,
    /// Measured accesses still to emit (u64::MAX for a natural run).
    remaining: u64,
    natural: bool,
    spill: Vec<Access>,
    spill_pos: usize,
    gen_ended: bool,
    produced_since_restart: u64,
    finished: bool,
    /// Init stores plus measured accesses, when the run length is set.
    total: Option<u64>,
    /// Accesses still to fast-forward past once the init pass is done.
    skip: u64,
    /// Whether they are handed out for a functional fast-forward.
    functional: bool,
    /// Whether the last batch handed out was fast-forwarded functionally.
    last_batch_ff: bool,
    instructions_per_access: Option<u32>,
    /// The generator's events of its last fill (a scratch buffer).
    gen_events: Vec<(usize, MapEvent)>,
    /// Events of spilled accesses, by index into `spill`.
    spill_events: VecDeque<(usize, MapEvent)>,
    /// Events of fast-forwarded (dropped) accesses, due before the next
    /// access handed out.
    pending_events: Vec<MapEvent>,
}

impl<G> std::fmt::Debug for Driven<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driven").field("name", &self.name).field("remaining", &self.remaining).finish()
    }
}

impl<G: Generator + 'static> Driven<G> {
    pub(crate) fn new(plan: RunPlan, gen: G) -> Self {
        let init_step = match plan.init {
            InitMode::Pages => 4096,
            InitMode::Lines => 64,
            InitMode::None => 0,
        };
        let natural = plan.accesses == 0;
        let footprint: u64 = gen.arrays().iter().map(|a| a.len).sum();
        let init_stores = footprint.checked_div(init_step).unwrap_or(0);
        let kernel_init = if plan.skip_kernel_init { gen.init_loop_accesses() } else { 0 };
        // A functional fast-forward's accesses reach the engine too.
        let handed_out = if plan.functional { plan.fast_forward + kernel_init } else { 0 };
        let total = (!natural).then_some(plan.accesses + init_stores + handed_out);
        Driven {
            total,
            name: plan.name,
            gen,
            last_batch_init: false,
            init_step,
            mapped: false,
            init_array: 0,
            init_offset: 0,
            remaining: if natural { u64::MAX } else { plan.accesses },
            natural,
            spill: Vec::new(),
            spill_pos: 0,
            gen_ended: false,
            produced_since_restart: 0,
            finished: false,
            skip: plan.fast_forward + kernel_init,
            functional: plan.functional,
            last_batch_ff: false,
            instructions_per_access: plan.instructions_per_access,
            gen_events: Vec::new(),
            spill_events: VecDeque::new(),
            pending_events: Vec::new(),
        }
    }

    pub(crate) fn boxed(plan: RunPlan, gen: G) -> Box<dyn Workload> {
        Box::new(Self::new(plan, gen))
    }

    fn emit_mmaps(&mut self, batch: &mut Batch) {
        let at = batch.accesses.len() as u32;
        for a in self.gen.arrays() {
            let event = MapEvent::Mmap { start: a.start, len: a.len, writable: true, name: a.name.to_string() };
            batch.events.push((at, event));
        }
        self.mapped = true;
    }

    /// The init pass: one store per `init_step` bytes of every array, each
    /// store standing for a 64-byte vector store per line it covers (so 64
    /// instructions per page in "pages" mode, 1 per line in "lines").
    /// Returns true once it is complete.
    fn fill_init(&mut self, out: &mut Vec<Access>, end: usize) -> bool {
        if self.init_step == 0 {
            return true;
        }
        let instrs = (self.init_step / 64) as u32;
        while out.len() < end {
            let Some(&array) = self.gen.arrays().get(self.init_array) else {
                self.init_step = 0;
                return true;
            };
            if self.init_offset >= array.len {
                self.init_array += 1;
                self.init_offset = 0;
                continue;
            }
            let addr = array.start.add(self.init_offset);
            self.init_offset += self.init_step;
            if self.gen.init_touches(addr) {
                out.push(Access::store(addr, 8, instrs).at(INIT_SITE));
            }
        }
        false
    }

    /// Generates and drops `skip` accesses: the program advances, nothing
    /// is simulated (no fault, no TLB or cache state, no instruction). A
    /// budgeted run restarts its program as measured accesses do; a natural
    /// run that ends while skipping measures nothing.
    fn fast_forward(&mut self) {
        const CHUNK: u64 = 1 << 16;
        let mut scratch = Vec::with_capacity(CHUNK as usize + 64);
        while self.skip > 0 && !self.gen_ended {
            scratch.clear();
            let target = self.skip.min(CHUNK) as usize;
            let more = self.gen.fill(&mut scratch, target);
            self.gen.take_events(&mut self.gen_events);
            for (i, event) in self.gen_events.drain(..) {
                match i.checked_sub(target) {
                    Some(after) if after > 0 => self.spill_events.push_back((self.spill.len() + after, event)),
                    _ => self.pending_events.push(event),
                }
            }
            self.produced_since_restart += scratch.len() as u64;
            if scratch.len() > target {
                self.spill.extend(scratch.drain(target..));
            }
            self.skip -= scratch.len() as u64;
            if !more {
                self.end_of_natural_run();
            }
        }
        self.skip = 0;
    }

    /// A functional fast-forward: the skipped accesses are handed out in
    /// batches of their own (flagged by `batch_is_fast_forward`), cut as
    /// measured ones are, the last one ending where the measured accesses
    /// begin. A natural run that ends inside it measures nothing, as when
    /// dropping. Returns whether more batches follow.
    fn fill_fast_forward(&mut self, batch: &mut Batch, end: usize) -> bool {
        self.last_batch_ff = true;
        let measured = std::mem::replace(&mut self.remaining, self.skip);
        self.fill_measured(batch, end);
        self.skip = self.remaining;
        self.remaining = measured;
        if self.gen_ended && self.spill_pos == self.spill.len() {
            self.skip = 0;
            self.finished = true;
            self.spill.clear();
        }
        !self.finished
    }

    /// The program's natural run ended: restart it if the budget needs
    /// more, else stop. A run that produced nothing would loop forever.
    fn end_of_natural_run(&mut self) {
        if self.natural || self.produced_since_restart == 0 {
            self.gen_ended = true;
        } else {
            self.gen.restart();
            self.produced_since_restart = 0;
        }
    }

    /// Moves spilled accesses into the batch, with the events due before
    /// each of them (and those due after the last when the spill empties).
    fn drain_spill(&mut self, batch: &mut Batch, end: usize) {
        let base = batch.accesses.len();
        let room = (end - base).min(self.remaining.min(usize::MAX as u64) as usize);
        let n = room.min(self.spill.len() - self.spill_pos);
        batch.accesses.extend_from_slice(&self.spill[self.spill_pos..self.spill_pos + n]);
        let last = self.spill_pos + n;
        while let Some((i, _)) = self.spill_events.front() {
            // An event after the last spilled access goes only once the spill is empty.
            if *i > last || (*i == last && last < self.spill.len()) {
                break;
            }
            let (i, event) = self.spill_events.pop_front().expect("front exists");
            batch.events.push(((base + i - self.spill_pos) as u32, event));
        }
        self.spill_pos = last;
        self.remaining -= n as u64;
        if self.spill_pos == self.spill.len() {
            self.spill.clear();
            self.spill_pos = 0;
        }
    }

    /// The generator's events of its last fill into `batch` (whose
    /// accesses from `target` on are about to spill).
    fn place_gen_events(&mut self, batch: &mut Batch, target: usize) {
        self.gen.take_events(&mut self.gen_events);
        for (i, event) in self.gen_events.drain(..) {
            if i <= target {
                batch.events.push((i as u32, event));
            } else {
                self.spill_events.push_back((i - target, event));
            }
        }
    }

    fn fill_measured(&mut self, batch: &mut Batch, end: usize) {
        let at = batch.accesses.len() as u32;
        batch.events.extend(self.pending_events.drain(..).map(|event| (at, event)));
        loop {
            self.drain_spill(batch, end);
            let out = &mut batch.accesses;
            if out.len() >= end || self.remaining == 0 || !self.spill.is_empty() || self.gen_ended {
                return;
            }
            let start = out.len();
            let target = start + (end - start).min(self.remaining.min(usize::MAX as u64) as usize);
            let more = self.gen.fill(out, target);
            if let Some(n) = self.instructions_per_access {
                out[start..].iter_mut().for_each(|a| a.instrs = n);
            }
            if out.len() > target {
                self.spill.extend(out.drain(target..));
            }
            self.place_gen_events(batch, target);
            let out = &batch.accesses;
            let produced = (out.len() - start) as u64;
            self.remaining -= produced;
            self.produced_since_restart += produced + self.spill.len() as u64;
            if !more {
                self.end_of_natural_run();
            }
        }
    }
}

impl<G: Generator + 'static> Workload for Driven<G> {
    fn name(&self) -> &str {
        &self.name
    }

    fn next_batch(&mut self, batch: &mut Batch, max_accesses: usize) -> bool {
        if self.finished {
            return false;
        }
        let end = batch.accesses.len().saturating_add(max_accesses);
        if !self.mapped {
            self.emit_mmaps(batch);
        }
        let was_init = self.init_step != 0;
        self.last_batch_init = true;
        if !self.fill_init(&mut batch.accesses, end) {
            return true;
        }
        if was_init && !batch.accesses.is_empty() {
            // The init pass ended in this batch: end the batch there too.
            return true;
        }
        self.last_batch_init = false;
        self.last_batch_ff = false;
        if self.skip > 0 {
            if self.functional {
                return self.fill_fast_forward(batch, end);
            }
            self.fast_forward();
        }
        self.fill_measured(batch, end);
        let spill_empty = self.spill_pos == self.spill.len();
        if self.remaining == 0 || (self.gen_ended && spill_empty) {
            self.finished = true;
            self.spill.clear();
        }
        !self.finished
    }

    fn footprint(&self) -> u64 {
        self.gen.arrays().iter().map(|a| a.len).sum()
    }

    fn batch_is_init(&self) -> bool {
        self.last_batch_init
    }

    fn batch_is_fast_forward(&self) -> bool {
        self.last_batch_ff
    }

    fn total_accesses(&self) -> Option<u64> {
        self.total
    }

    fn leave_untouched(&mut self, untouched: &super::UntouchedPages<'_>) -> bool {
        self.gen.leave_untouched(untouched)
    }

    fn untouched_pages(&self) -> Vec<(u64, [u64; 8])> {
        self.gen.untouched_pages()
    }

    fn file_windows(&self) -> Vec<crate::os::FileWindow> {
        self.gen.file_windows()
    }

    fn request_site(&self) -> Option<Site> {
        self.gen.request_site()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Layout;

    /// Emits `steps` steps of 3 loads each per run, so every fill overshoots
    /// unless the target is a multiple of 3.
    struct Triples {
        arrays: Vec<Array>,
        step: u64,
        steps: u64,
        runs: u64,
    }

    impl Generator for Triples {
        fn arrays(&self) -> &[Array] {
            &self.arrays
        }
        fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
            while out.len() < target {
                if self.step == self.steps {
                    return false;
                }
                for k in 0..3 {
                    let addr = self.arrays[0].start.add(8 * (self.runs * 1000 + self.step * 3 + k));
                    out.push(Access::load(addr, 8, 1));
                }
                self.step += 1;
            }
            true
        }
        fn restart(&mut self) {
            self.step = 0;
            self.runs += 1;
        }
        /// As if its first 4 accesses were the program's own init loop.
        fn init_loop_accesses(&self) -> u64 {
            4
        }
    }

    fn triples(steps: u64, accesses: u64, init: InitMode) -> Driven<Triples> {
        triples_skipping(steps, accesses, init, 0)
    }

    fn triples_skipping(steps: u64, accesses: u64, init: InitMode, fast_forward: u64) -> Driven<Triples> {
        let mut layout = Layout::new();
        layout.place("t", 3 * 4096);
        let gen = Triples { arrays: layout.into_arrays(), step: 0, steps, runs: 0 };
        let plan = RunPlan {
            name: "t".into(),
            init,
            accesses,
            fast_forward,
            skip_kernel_init: false,
            functional: false,
            instructions_per_access: None,
        };
        Driven::new(plan, gen)
    }

    fn offsets(batch: &Batch) -> Vec<u64> {
        batch.accesses.iter().map(|a| (a.vaddr.raw() & 0xf_ffff) / 8).collect()
    }

    #[test]
    fn overshoot_spills_into_the_next_batch() {
        let mut w = triples(10, 7, InitMode::None);
        let mut b = Batch::default();
        assert!(w.next_batch(&mut b, 2));
        assert_eq!(offsets(&b), [0, 1]);
        assert_eq!(b.events.len(), 1);
        b.clear();
        assert!(w.next_batch(&mut b, 4));
        assert_eq!(offsets(&b), [2, 3, 4, 5]);
        b.clear();
        // The budget of 7 cuts the third step after its first load.
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [6]);
        b.clear();
        assert!(!w.next_batch(&mut b, 100));
        assert!(b.accesses.is_empty());
    }

    #[test]
    fn fast_forward_drops_accesses_after_init_and_keeps_the_budget() {
        // Skipping 4 ends inside the second step: its last load is the
        // first measured one; the budget of 5 is then counted in full.
        let mut w = triples_skipping(10, 5, InitMode::Pages, 4);
        let mut b = Batch::default();
        assert!(w.next_batch(&mut b, 100));
        assert_eq!(b.accesses.len(), 3, "the init pass, unskipped");
        b.clear();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [4, 5, 6, 7, 8]);
        // Skipping past the end of a run restarts it (budgeted) ...
        let mut w = triples_skipping(2, 3, InitMode::None, 7);
        let mut b = Batch::default();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [1000 + 1, 1000 + 2, 1000 + 3]);
        // ... or ends a natural one with nothing measured.
        let mut w = triples_skipping(2, 0, InitMode::None, 7);
        let mut b = Batch::default();
        assert!(!w.next_batch(&mut b, 100));
        assert!(b.accesses.is_empty());
    }

    #[test]
    fn a_functional_fast_forward_hands_out_the_skipped_accesses_flagged() {
        // The same cut as `fast_forward_drops_accesses_after_init...`:
        // skipping 4 of steps of 3, then 5 measured; now the 4 come out.
        let mut w = triples_skipping(10, 5, InitMode::Pages, 4);
        w.functional = true;
        let mut b = Batch::default();
        assert!(w.next_batch(&mut b, 100));
        assert!(w.batch_is_init() && !w.batch_is_fast_forward());
        b.clear();
        assert!(w.next_batch(&mut b, 3));
        assert_eq!(offsets(&b), [0, 1, 2]);
        assert!(w.batch_is_fast_forward() && !w.batch_is_init());
        b.clear();
        assert!(w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [3], "the fast-forward's last batch ends at its end");
        assert!(w.batch_is_fast_forward());
        b.clear();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [4, 5, 6, 7, 8], "then the budget, in full, as when dropping");
        assert!(!w.batch_is_fast_forward());
    }

    #[test]
    fn skip_kernel_init_fast_forwards_the_generators_init_loop() {
        let gen = triples_skipping(10, 5, InitMode::None, 0).gen;
        let plan = RunPlan {
            name: "t".into(),
            init: InitMode::None,
            accesses: 5,
            fast_forward: 1,
            skip_kernel_init: true,
            functional: false,
            instructions_per_access: None,
        };
        let mut w = Driven::new(plan, gen);
        let mut b = Batch::default();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [5, 6, 7, 8, 9], "4 of the init loop plus 1 fast-forwarded");
    }

    #[test]
    fn instructions_per_access_replaces_the_generators_count_after_the_init_pass() {
        let mut w = triples(10, 7, InitMode::Pages);
        w.instructions_per_access = Some(9);
        let mut b = Batch::default();
        assert!(w.next_batch(&mut b, 100));
        assert!(b.accesses.iter().all(|a| a.instrs == 64), "the init pass keeps its own");
        b.clear();
        // Batches of 3 spill the generator's overshoot: every access is rewritten.
        while w.next_batch(&mut b, 3) {}
        assert_eq!(b.accesses.len(), 7);
        assert!(b.accesses.iter().all(|a| a.instrs == 9));
    }

    #[test]
    fn natural_run_ends_and_budget_restarts() {
        let mut w = triples(2, 0, InitMode::None);
        let mut b = Batch::default();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [0, 1, 2, 3, 4, 5]);
        let mut w = triples(2, 8, InitMode::None);
        let mut b = Batch::default();
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [0, 1, 2, 3, 4, 5, 1000, 1001]);
    }

    #[test]
    fn init_comes_first_and_is_not_budgeted() {
        let mut w = triples(5, 4, InitMode::Pages);
        let mut b = Batch::default();
        assert!(w.next_batch(&mut b, 2));
        assert_eq!(b.events[0].0, 0);
        assert!(b.accesses.iter().all(|a| a.kind == super::super::AccessKind::Store && a.instrs == 64));
        assert!(w.batch_is_init());
        b.clear();
        // One more init store (3 pages): the init pass ends the batch.
        assert!(w.next_batch(&mut b, 100));
        assert_eq!(b.accesses.len(), 1);
        assert!(w.batch_is_init());
        b.clear();
        // Then the 4 measured loads.
        assert!(!w.next_batch(&mut b, 100));
        assert_eq!(offsets(&b), [0, 1, 2, 3]);
        assert!(!w.batch_is_init());
    }

    /// Triples that remap their page before every step but the first (a
    /// munmap then an mmap, as a freed and reallocated buffer).
    struct Remapping(Triples, Vec<(usize, MapEvent)>);

    impl Generator for Remapping {
        fn arrays(&self) -> &[Array] {
            &self.0.arrays
        }
        fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
            while out.len() < target {
                let step = self.0.step;
                let a = self.0.arrays[0];
                if step > 0 && step < self.0.steps {
                    self.1.push((out.len(), MapEvent::Munmap { start: a.start, len: a.len }));
                    let mmap = MapEvent::Mmap { start: a.start, len: a.len, writable: true, name: format!("{step}") };
                    self.1.push((out.len(), mmap));
                }
                let target = out.len() + 1;
                if !self.0.fill(out, target) {
                    return false;
                }
            }
            true
        }
        fn restart(&mut self) {
            self.0.restart();
        }
        fn take_events(&mut self, into: &mut Vec<(usize, MapEvent)>) {
            into.append(&mut self.1);
        }
    }

    /// Every access and every event of a run cut in batches of `max`,
    /// events by global index (the mmaps of the start dropped).
    fn remapping_run(steps: u64, accesses: u64, fast_forward: u64, max: usize) -> (Vec<u64>, Vec<(usize, String)>) {
        let gen = Remapping(triples_skipping(steps, accesses, InitMode::None, 0).gen, Vec::new());
        let plan = RunPlan {
            name: "t".into(),
            init: InitMode::None,
            accesses,
            fast_forward,
            skip_kernel_init: false,
            functional: false,
            instructions_per_access: None,
        };
        let mut w = Driven::new(plan, gen);
        let (mut offs, mut events) = (Vec::new(), Vec::new());
        loop {
            let mut b = Batch::default();
            let more = w.next_batch(&mut b, max);
            for (i, e) in &b.events {
                let label = match e {
                    MapEvent::Mmap { name, .. } if name != "t" => format!("mmap {name}"),
                    MapEvent::Munmap { .. } => "munmap".to_string(),
                    _ => continue,
                };
                events.push((offs.len() + *i as usize, label));
            }
            offs.extend(offsets(&b));
            if !more {
                return (offs, events);
            }
        }
    }

    #[test]
    fn mid_run_events_keep_their_access_through_any_cut_and_the_spill() {
        // 4 steps of 3 loads: the remaps come before accesses 3, 6 and 9.
        let whole = remapping_run(4, 12, 0, 1000);
        let expect: Vec<(usize, String)> =
            [(3, "munmap"), (3, "mmap 1"), (6, "munmap"), (6, "mmap 2"), (9, "munmap"), (9, "mmap 3")]
                .into_iter()
                .map(|(i, l)| (i, l.to_string()))
                .collect();
        assert_eq!(whole.1, expect);
        // Batches of 1, 2, 4 and 5 cut steps and spill their remaps.
        for max in [1, 2, 4, 5] {
            assert_eq!(remapping_run(4, 12, 0, max), whole, "batches of {max}");
        }
    }

    #[test]
    fn a_dropped_stretchs_events_reach_the_next_access_handed_out() {
        // Skipping 7 drops the remaps before 3 and 6: they come before the
        // first measured access (global 7, offset 7); the one before 9 stays.
        let (offs, events) = remapping_run(4, 5, 7, 1000);
        assert_eq!(offs, [7, 8, 9, 10, 11]);
        let labels: Vec<(usize, &str)> = events.iter().map(|(i, l)| (*i, l.as_str())).collect();
        assert_eq!(labels, [(0, "munmap"), (0, "mmap 1"), (0, "munmap"), (0, "mmap 2"), (2, "munmap"), (2, "mmap 3")]);
    }

    #[test]
    fn the_total_is_the_init_stores_plus_the_measured_accesses_when_set() {
        use crate::workload::{build_generator as build, testutil::small_config, WorkloadConfig, WorkloadKind};
        let mut cfg = small_config(WorkloadKind::Gups, 1);
        let total = |cfg: &WorkloadConfig| build(cfg, "workload").unwrap().total_accesses();
        cfg.init = InitMode::Pages;
        let footprint = build(&cfg, "workload").unwrap().footprint();
        assert_eq!(total(&cfg), Some(30_000 + footprint / 4096));
        cfg.init = InitMode::Lines;
        assert_eq!(total(&cfg), Some(30_000 + footprint / 64));
        cfg.accesses = 0;
        assert_eq!(total(&cfg), None, "a natural run's length is not known");
    }
}
