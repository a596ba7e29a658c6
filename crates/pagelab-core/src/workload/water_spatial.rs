//! Water-spatial: SPLASH-2's molecular dynamics of liquid water over a 3-d
//! grid of boxes (`kind = "water-spatial"`), a throughput workload.
//!
//! Keeps (SPLASH-2's `water-spatial`, `mddata.H`, `interf.C`): a molecule
//! is a `link_type`, `VM[3]` and `F[MXOD2][NDIR][NATOM]` doubles (MXOD2 =
//! 9 orders: displacement, velocity, acceleration, the 3rd to 6th
//! derivatives, forces at `F[7]`, one spare; 3 directions; 3 atoms) and
//! its `next_mol` pointer: 680 bytes. Molecules are allocated once and
//! never freed (static, as blackscholes); each of the grid's boxes heads a
//! linked list of the molecules inside it, a `box_type` of the list's head
//! and a pthread mutex (48 bytes). A time step is, in order:
//!
//! - the predictor (`PREDIC`): every molecule's Taylor orders 0-6 read
//!   and rewritten;
//! - intramolecular forces (`INTRAF`): its displacements read, its forces
//!   written;
//! - intermolecular forces (`INTERF`), the kernel: for each box, for each
//!   of its 27 neighbours (itself included, periodic), the neighbour's
//!   list head, then for each molecule `q` in the neighbour and each
//!   molecule `p` in the box (`p != q`): both molecules' `VM` and
//!   `F[DISP]` (the nine site-site distances) and, when the pair is within
//!   the cutoff, `p`'s forces (`UPDATE_FORCES(curr_ptr, DEST, ...)`);
//! - the corrector (`CORREC`): each molecule's forces read, its orders 0-6
//!   rewritten.
//!
//! Steps repeat until the run's budget (a SPLASH input's NSTEP is the
//! program's, not the measured window's). One step of N molecules is
//! about N x 900 accesses, almost all in INTERF.
//!
//! The grid (`mdmain.C`): the box's side is at least the cutoff, so
//! BOX_PER_SIDE = floor(BOXL / CUTOFF), BOXL the side of the cube that
//! holds N molecules at water's density (0.03343 per cubic angstrom: 1
//! g/cm3, 18.015 g/mol), CUTOFF 6.212752 angstroms (SPLASH-2's supplied
//! input). Molecules are spread evenly over the boxes and stored in box
//! order (as the program's initial lattice lays them out; over a few steps
//! few molecules change boxes, and moving one relinks it, never copies it).
//! A pair is within the cutoff with the probability of the cutoff sphere
//! against the 27 boxes' volume, (4/3) pi CUTOFF^3 / (27 side^3), drawn
//! per pair from the seed: the positions themselves are not simulated.
//!
//! Sized by `footprint`: footprint / 680 molecules (the COPLACE paper gives
//! none: its experiments choose one against the LLC, common.py says which).
//!
//! Accesses are per cache line a loop reads or writes, 8 bytes each: a
//! molecule's `VM` and `F[DISP]` (bytes 0-96) are two, its forces (bytes
//! 528-600) two, its orders 0-6 (bytes 24-528) one per 64 bytes.
//! Instructions (estimates, not measured): a pair's distances 100 (27
//! differences, the periodic corrections, nine squares), carried by its
//! four loads; a force update 120 (sqrt, exp, fourteen products) on its
//! two stores; the predictor's and corrector's per line 20.

use super::driver::Generator;
use super::{rng_for, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Bytes of a `link_type`: 84 doubles and the list pointer.
pub(crate) const MOLECULE_BYTES: u64 = 84 * 8 + 8;
/// Bytes of a `box_type`: the list head and a `pthread_mutex_t` (40 on
/// x86-64 glibc).
const BOX_BYTES: u64 = 48;
/// SPLASH-2's supplied cutoff radius, angstroms.
const CUTOFF: f64 = 6.212752;
/// Water molecules per cubic angstrom at 1 g/cm3.
const DENSITY: f64 = 0.03343;
/// Offsets in a molecule: `F[DISP]` starts after `VM[3]`; the forces are
/// `F[7]`, 72 bytes each order.
const ORDER_BYTES: u64 = 72;
const FORCES_AT: u64 = 24 + 7 * ORDER_BYTES;
/// The predictor and corrector touch orders 0-6: bytes 24 to 528.
const TAYLOR: (u64, u64) = (24, 24 + 7 * ORDER_BYTES);

const DISTANCE_INSTRS: u32 = 25;
const FORCE_INSTRS: u32 = 60;
const STEP_LINE_INSTRS: u32 = 20;
const HEAD_INSTRS: u32 = 4;

const POSITION_PC: u64 = 1;
const NEIGHBOUR_PC: u64 = 2;
const FORCE_PC: u64 = 3;
const HEAD_PC: u64 = 4;
const PREDIC_PC: u64 = 5;
const INTRAF_PC: u64 = 6;
const CORREC_PC: u64 = 7;

/// Where a step is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Predic,
    Intraf,
    Interf,
    Correc,
}

pub(crate) struct WaterSpatial {
    arrays: Vec<Array>,
    molecules: VirtAddr,
    boxes: VirtAddr,
    count: u64,
    per_side: u64,
    within: f64,
    rng: Xoshiro256PlusPlus,
    seed: u64,
    phase: Phase,
    /// Predic/Intraf/Correc: the molecule; Interf: the box.
    at: u64,
    neighbour: usize,
    neighbours: Vec<u64>,
}

impl WaterSpatial {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let count = molecules_in(cfg.footprint.bytes());
        let per_side = boxes_per_side(count);
        let mut layout = Layout::of(cfg);
        let molecules = layout.place("water-molecules", count * MOLECULE_BYTES);
        let boxes = layout.place("water-boxes", per_side.pow(3) * BOX_BYTES);
        let mut w = WaterSpatial {
            arrays: layout.into_arrays(),
            molecules,
            boxes,
            count,
            per_side,
            within: within_cutoff(count, per_side),
            rng: rng_for(cfg.seed, 0),
            seed: cfg.seed,
            phase: Phase::Predic,
            at: 0,
            neighbour: 0,
            neighbours: Vec::with_capacity(27),
        };
        w.restart();
        w
    }

    fn molecule(&self, i: u64) -> VirtAddr {
        self.molecules.add(i * MOLECULE_BYTES)
    }

    /// Box `b`'s molecules: N spread evenly, in box order.
    fn members(&self, b: u64) -> std::ops::Range<u64> {
        let boxes = self.per_side.pow(3);
        (b * self.count / boxes)..((b + 1) * self.count / boxes)
    }

    /// One molecule's lines from `from` to `to` (bytes in it), loaded and
    /// stored back.
    fn rewrite(&self, out: &mut Vec<Access>, m: u64, (from, to): (u64, u64), pc: u64) {
        let base = self.molecule(m);
        for off in (from..to).step_by(64) {
            out.push(Access::load(base.add(off), 8, STEP_LINE_INSTRS).at(Site::pc(pc)));
            out.push(Access::store(base.add(off), 8, 2).at(Site::pc(pc)));
        }
    }

    fn positions(&self, out: &mut Vec<Access>, m: u64, pc: u64) {
        let base = self.molecule(m);
        out.push(Access::load(base, 8, DISTANCE_INSTRS).at(Site::pc(pc)));
        out.push(Access::load(base.add(64), 8, DISTANCE_INSTRS).at(Site::pc(pc)));
    }

    fn forces(&self, out: &mut Vec<Access>, m: u64, instrs: u32, pc: u64) {
        let base = self.molecule(m).add(FORCES_AT);
        out.push(Access::store(base, 8, instrs).at(Site::pc(pc)));
        out.push(Access::store(base.add(64), 8, instrs).at(Site::pc(pc)));
    }

    /// One molecule of a streaming phase.
    fn step_molecule(&self, out: &mut Vec<Access>, m: u64) {
        match self.phase {
            Phase::Predic => self.rewrite(out, m, TAYLOR, PREDIC_PC),
            Phase::Intraf => {
                self.positions(out, m, INTRAF_PC);
                self.forces(out, m, STEP_LINE_INSTRS, INTRAF_PC);
            }
            Phase::Correc => {
                let base = self.molecule(m).add(FORCES_AT);
                out.push(Access::load(base, 8, STEP_LINE_INSTRS).at(Site::pc(CORREC_PC)));
                self.rewrite(out, m, TAYLOR, CORREC_PC);
            }
            Phase::Interf => unreachable!("INTERF walks boxes"),
        }
    }

    /// One (box, neighbour) visit of INTERF: the neighbour's list head,
    /// then every pair.
    fn interf_visit(&mut self, out: &mut Vec<Access>) {
        let own = self.at;
        let other = self.neighbours[self.neighbour];
        out.push(Access::load(self.boxes.add(other * BOX_BYTES), 8, HEAD_INSTRS).at(Site::pc(HEAD_PC)));
        for q in self.members(other) {
            for p in self.members(own) {
                if p == q {
                    continue;
                }
                self.positions(out, q, NEIGHBOUR_PC);
                self.positions(out, p, POSITION_PC);
                if self.rng.random::<f64>() < self.within {
                    self.forces(out, p, FORCE_INSTRS, FORCE_PC);
                }
            }
        }
    }

    /// Box `b`'s 27 neighbours (periodic), each once when the grid is
    /// smaller than 3 boxes a side.
    fn neighbours_of(&self, b: u64) -> Vec<u64> {
        let n = self.per_side as i64;
        let (x, y, z) = ((b as i64) / (n * n), (b as i64 / n) % n, b as i64 % n);
        let mut out = Vec::with_capacity(27);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let c = ((x + dx).rem_euclid(n) * n + (y + dy).rem_euclid(n)) * n + (z + dz).rem_euclid(n);
                    if !out.contains(&(c as u64)) {
                        out.push(c as u64);
                    }
                }
            }
        }
        out
    }

    /// Moves to the next phase (or step) when the current one is done.
    fn advance(&mut self) {
        let boxes = self.per_side.pow(3);
        match self.phase {
            Phase::Interf => {
                self.neighbour += 1;
                if self.neighbour == self.neighbours.len() {
                    self.neighbour = 0;
                    self.at += 1;
                    if self.at == boxes {
                        self.enter(Phase::Correc);
                    } else {
                        self.neighbours = self.neighbours_of(self.at);
                    }
                }
            }
            _ => {
                self.at += 1;
                if self.at == self.count {
                    let next = match self.phase {
                        Phase::Predic => Phase::Intraf,
                        Phase::Intraf => Phase::Interf,
                        _ => Phase::Predic,
                    };
                    self.enter(next);
                }
            }
        }
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.at = 0;
        self.neighbour = 0;
        if phase == Phase::Interf {
            self.neighbours = self.neighbours_of(0);
        }
    }
}

/// Molecules a footprint holds (at least two: a pair).
pub(crate) fn molecules_in(footprint: u64) -> u64 {
    (footprint / MOLECULE_BYTES).max(2)
}

/// floor(BOXL / CUTOFF), at least one box.
pub(crate) fn boxes_per_side(molecules: u64) -> u64 {
    let side = (molecules as f64 / DENSITY).cbrt();
    ((side / CUTOFF).floor() as u64).max(1)
}

/// The chance that a pair from neighbouring boxes is within the cutoff.
fn within_cutoff(molecules: u64, per_side: u64) -> f64 {
    let side = (molecules as f64 / DENSITY).cbrt() / per_side as f64;
    (4.0 / 3.0 * std::f64::consts::PI * CUTOFF.powi(3) / (27.0 * side.powi(3))).min(1.0)
}

impl Generator for WaterSpatial {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            if self.phase == Phase::Interf {
                self.interf_visit(out);
            } else {
                self.step_molecule(out, self.at);
            }
            self.advance();
        }
        true
    }

    fn restart(&mut self) {
        self.rng = rng_for(self.seed, 0);
        self.enter(Phase::Predic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil::{collect, no_init_config};
    use crate::workload::{AccessKind, WorkloadKind};

    fn config(footprint: u64, accesses: u64) -> WorkloadConfig {
        no_init_config(WorkloadKind::WaterSpatial, footprint, accesses, WorkloadConfig::default().seed)
    }

    fn pcs(accesses: &[Access]) -> Vec<u64> {
        accesses.iter().map(|a| a.site.pc_tag() as u64).collect()
    }

    #[test]
    fn the_grid_follows_the_cutoff_and_the_density() {
        // 24 MiB: 25,165,824 / 680 = 37,008 molecules; BOXL = (37,008 /
        // 0.03343)^(1/3) = 103.46 A, / 6.212752 = 16.65: 16 boxes a side.
        assert_eq!(molecules_in(24 << 20), 37_008);
        assert_eq!(boxes_per_side(37_008), 16);
        // SPLASH-2's 512 molecules: BOXL = 24.83 A, 3.997 cutoffs: 3.
        assert_eq!(boxes_per_side(512), 3);
        assert_eq!(boxes_per_side(2), 1);
        // 16 a side: side 6.466 A, (4/3) pi 6.2128^3 / (27 x 6.466^3) = 0.1375.
        assert!((within_cutoff(37_008, 16) - 0.1375).abs() < 5e-4, "{}", within_cutoff(37_008, 16));
    }

    #[test]
    fn a_box_has_27_neighbours_and_a_small_grid_fewer() {
        let mut w = WaterSpatial::new(&config(24 << 20, 1));
        let n = w.neighbours_of(0);
        assert_eq!(n.len(), 27);
        // (0,0,0)'s periodic neighbours reach the far corner (15,15,15).
        assert!(n.contains(&(16 * 16 * 16 - 1)) && n.contains(&0));
        w.per_side = 2;
        assert_eq!(w.neighbours_of(0).len(), 8);
        w.per_side = 1;
        assert_eq!(w.neighbours_of(0), vec![0]);
    }

    #[test]
    fn a_step_is_predictor_intraf_interf_corrector_in_order() {
        // 4 KiB: six molecules in one box. PREDIC 6 x 8 lines x (load,
        // store); INTRAF 6 x 4; INTERF the box's head and 30 pairs of 4
        // loads (and 2 stores each when within the cutoff); CORREC 6 x (1 +
        // 16); then the next step's PREDIC.
        let all = collect(&config(4096, 0), 1000);
        let p = pcs(&all.accesses);
        assert!(p[..96].iter().all(|&pc| pc == PREDIC_PC));
        assert!(p[96..120].iter().all(|&pc| pc == INTRAF_PC));
        assert_eq!(p[120], HEAD_PC);
        let interf_end = 121 + p[121..].iter().position(|&pc| pc == CORREC_PC).unwrap();
        let loads = p[121..interf_end].iter().filter(|&&pc| pc == POSITION_PC || pc == NEIGHBOUR_PC).count();
        assert_eq!(loads, 120);
        assert!(p[121..interf_end].iter().all(|&pc| [POSITION_PC, NEIGHBOUR_PC, FORCE_PC].contains(&pc)));
        assert!(p[interf_end..interf_end + 102].iter().all(|&pc| pc == CORREC_PC));
        assert_eq!(p[interf_end + 102], PREDIC_PC);
        // The predictor reads then writes molecule 0's orders from byte 24,
        // a line apart, then molecule 1's.
        let base = all.accesses[0].vaddr.raw();
        assert_eq!((all.accesses[0].kind, all.accesses[1].kind), (AccessKind::Load, AccessKind::Store));
        assert_eq!(all.accesses[2].vaddr.raw() - base, 64);
        assert_eq!(all.accesses[16].vaddr.raw() - base, MOLECULE_BYTES);
    }

    #[test]
    fn interf_reads_both_molecules_and_writes_its_own_within_the_cutoff() {
        // 4 MiB: 6,168 molecules, 9 boxes a side (side 6.325 A: 14.7% of
        // pairs within the cutoff).
        let w = WaterSpatial::new(&config(4 << 20, 1));
        let all = collect(&config(4 << 20, 2_000_000), usize::MAX);
        let interf: Vec<&Access> = all
            .accesses
            .iter()
            .filter(|a| [POSITION_PC, NEIGHBOUR_PC, FORCE_PC].contains(&(a.site.pc_tag() as u64)))
            .collect();
        let pairs = interf.iter().filter(|a| a.site.pc_tag() as u64 == POSITION_PC).count() / 2;
        let updates = interf.iter().filter(|a| a.kind == AccessKind::Store).count() / 2;
        assert!(pairs > 100_000, "{pairs}");
        let share = updates as f64 / pairs as f64;
        assert!((share - w.within).abs() < 0.01, "{share} vs {}", w.within);
        // A force update stores into the molecule whose positions came
        // just before it (curr_ptr), at F[7].
        let i = interf.iter().position(|a| a.kind == AccessKind::Store).unwrap();
        assert_eq!(interf[i].vaddr.raw(), interf[i - 2].vaddr.raw() + FORCES_AT);
    }

    #[test]
    fn the_molecules_are_static() {
        let all = collect(&config(1 << 20, 500_000), usize::MAX);
        assert_eq!(all.events.len(), 2);
        assert!(all.events.iter().all(|(i, _)| *i == 0));
    }
}
