//! SVM: liblinear's `train` on a sparse data set, as the Elastic
//! Translations artifact runs it (`./train kdd12`: the default solver,
//! L2-regularized L2-loss SVC by dual coordinate descent,
//! `solve_l2r_l1l2_svc` in `src/benchmarks/svm/linear.cpp`).
//!
//! Keeps (the artifact's source and its aarch64 binary, `benchmarks/train`,
//! read by hand): the arrays `read_problem` and `train` allocate, in their
//! order (the labels and instance pointers, `x_space` with each instance's
//! `nonzeros` feature nodes of 16 bytes and a terminator, the class
//! permutation, the subproblem's pointers and labels, the weight vector
//! `w` of `features` doubles, then the solver's `QD`, `index`, `alpha` and
//! `y`); and the solver's two loops over them:
//!
//! - its first sweep, in instance order: for each instance its label,
//!   pointer and nodes (`QD[i] = x_i . x_i`), `alpha[i]`, a store of
//!   `QD[i]`, then `w[f] += 0 * v` at each feature (a load and a store of
//!   `w`: a stream with random gathers and scatters into `w`), and
//!   `index[i] = i`;
//! - each outer iteration: a shuffle of `index` (per position a `rand()`
//!   and a swap with a later position), then one coordinate step per
//!   instance in the shuffled order: `index[s]`, the instance's label and
//!   pointer, the dot product `w . x_i` (per node its index and value,
//!   then a gather of `w` at the feature), `alpha[i]`, `QD[i]`, the new
//!   `alpha[i]`, and `w[f] += d * v` at each feature.
//!
//! A natural run is the first sweep and one outer iteration; a restart is
//! the next iteration, over a new order. `init_loop_accesses` (skipped by
//! `workload.skip_kernel_init`) is the first sweep and the first shuffle:
//! what the solver does before its first coordinate step.
//!
//! Dependence (`Access::site`): a node run's first node waits for the
//! instance's pointer and each gather of `w` for its node; the step's
//! label waits for `index[s]`. The pointer, `alpha[i]` and `QD[i]` also
//! depend on `index[s]`, which is not the most recent load when they issue
//! and is a sequential load (16 to a line) that has usually arrived: they
//! are marked independent, as are the nodes after the first (their
//! addresses follow the pointer, not each other). The compiled dot loop
//! loads node k+1's index before the gather of node k's feature; the
//! gather is emitted first so that its dependence names its own node.
//!
//! Instructions (the binary's loops, each access carrying those since the
//! access before it): the first sweep 19 + 13 per nonzero per instance, a
//! coordinate step 51 + 15 per nonzero, a shuffle position 13 plus
//! `rand()`, which is glibc's (not in the binary): 40, an estimate
//! (`random()`'s lock, `random_r`'s additive step, the PLT call).
//!
//! Shape: the artifact's data set is LIBSVM's kdd12: 149,639,105
//! instances (the rows of KDD Cup 2012 track 2's training set) and
//! 54,686,452 features (as public code reading kdd12 declares them). The
//! nonzeros per instance are not stated anywhere the artifact points to:
//! 11 (`workload.nonzeros`' default) is about what the artifact's
//! footprint leaves for `x_space` (`bin/frag.sh`: 38,000 MiB, less the
//! arrays above at 149.6 M instances and 54.7 M features: 12.4 nodes, 11.4
//! nonzeros and a terminator, per instance), an estimate; 38,000 MiB then
//! holds 153 M instances. A footprint gives the instance count, the features keeping
//! kdd12's ratio to the instances unless `workload.features` is set.
//!
//! Simplifies: an instance's feature k is drawn (from the instance and the
//! seed) uniformly in the k-th of `nonzeros` equal blocks of the feature
//! ids, as one-hot fields laid out one after another, so each instance's
//! features ascend as liblinear requires; kdd12's real field sizes and
//! feature popularity are not known here, and uniform gathers are the
//! case without reuse. Instances keep file order in `x_space` (train's
//! grouping by class, which makes the first sweep two sequential streams,
//! is left out). Every step updates (the first outer iteration's case,
//! where nothing is shrunk yet); later iterations' shrinking, the solver's
//! setup loops (the labels, the memsets) and `read_problem`'s parse of
//! the file are not generated; the arrays' first touches are the init
//! pass. The shuffled order is a seeded bijection per iteration, not the
//! swaps' own result (both are uniform permutations; the swaps' addresses
//! are generated as the program makes them). Stack and L1D-resident loads
//! (`QD`'s diagonal, the bounds) are left in the base CPI.

use super::driver::Generator;
use super::permute::Permutation;
use super::{below, mix64, rng_for, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// kdd12's instances and features (see the module comment).
pub(crate) const KDD12_INSTANCES: u64 = 149_639_105;
pub(crate) const KDD12_FEATURES: u64 = 54_686_452;
/// `workload.nonzeros`' default: an estimate (see the module comment).
pub(crate) const DEFAULT_NONZEROS: u32 = 11;
const NODE: u64 = 16;
/// Bytes per instance besides its nodes: `prob.y`, `prob.x`, `perm`,
/// train's `x`, the subproblem's `x` and `y`, `QD`, `index`, `alpha`, `y`.
const PER_INSTANCE: u64 = 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 1;
/// glibc's `rand()`: an estimate (see the module comment).
const RAND_INSTRS: u32 = 40;

/// Instances, nonzeros per instance and features of a footprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SvmShape {
    pub instances: u64,
    pub nonzeros: u64,
    pub features: u64,
}

impl SvmShape {
    /// The shape `cfg` asks for, if its footprint holds at least one
    /// instance and as many features as nonzeros.
    pub(crate) fn of(cfg: &WorkloadConfig) -> Option<Self> {
        let nonzeros = cfg.nonzeros.unwrap_or(DEFAULT_NONZEROS) as u64;
        let per_instance = NODE * (nonzeros + 1) + PER_INSTANCE;
        let footprint = cfg.footprint.bytes();
        let (instances, features) = match cfg.features {
            Some(n) => (footprint.saturating_sub(8 * n) / per_instance, n),
            None => {
                // 8 bytes of w per feature, kdd12's features per instance.
                let per = per_instance as f64 + 8.0 * KDD12_FEATURES as f64 / KDD12_INSTANCES as f64;
                let l = (footprint as f64 / per) as u64;
                (l, (l as f64 * KDD12_FEATURES as f64 / KDD12_INSTANCES as f64) as u64)
            }
        };
        (instances >= 1 && features >= nonzeros).then_some(SvmShape { instances, nonzeros, features })
    }

    /// The smallest footprint that holds `cfg`'s shape (its other keys as
    /// given), for the error that refuses a smaller one: found by bisection
    /// over [`SvmShape::of`] itself, which a larger footprint never turns
    /// from a shape to none. None if even 64 TiB does not.
    pub(crate) fn least_footprint(cfg: &WorkloadConfig) -> Option<u64> {
        let fits = |bytes: u64| {
            let mut c = cfg.clone();
            c.footprint = crate::units::ByteSize(bytes);
            Self::of(&c).is_some()
        };
        let most = 1u64 << 46;
        fits(most).then(|| super::first_true(0, most, fits))
    }
}

/// The arrays the solver reads and writes.
struct Solver {
    x: VirtAddr,
    x_space: VirtAddr,
    w: VirtAddr,
    qd: VirtAddr,
    index: VirtAddr,
    alpha: VirtAddr,
    y: VirtAddr,
}

/// Where the program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The first sweep, at instance i.
    Sweep(u64),
    /// An iteration's shuffle, at position s.
    Shuffle(u64),
    /// An iteration's coordinate steps, at position s.
    Steps(u64),
    /// The natural run is over.
    Done,
}

pub(crate) struct Svm {
    arrays: Vec<Array>,
    at: Solver,
    shape: SvmShape,
    /// Feature ids per block (`features / nonzeros`).
    block: u64,
    feature_seed: u64,
    seed: u64,
    iteration: u64,
    order: Permutation,
    rng: Xoshiro256PlusPlus,
    phase: Phase,
}

impl Svm {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let shape = SvmShape::of(cfg).expect("validated: the footprint holds an instance");
        let (l, nodes) = (shape.instances, shape.nonzeros + 1);
        let mut layout = Layout::of(cfg);
        layout.place("svm-prob-y", 8 * l);
        layout.place("svm-prob-x", 8 * l);
        let x_space = layout.place("svm-x-space", NODE * nodes * l);
        layout.place("svm-perm", 4 * l);
        layout.place("svm-train-x", 8 * l);
        let x = layout.place("svm-sub-x", 8 * l);
        layout.place("svm-sub-y", 8 * l);
        let w = layout.place("svm-w", 8 * shape.features);
        let qd = layout.place("svm-qd", 8 * l);
        let index = layout.place("svm-index", 4 * l);
        let alpha = layout.place("svm-alpha", 8 * l);
        let y = layout.place("svm-y", l);
        Svm {
            arrays: layout.into_arrays(),
            at: Solver { x, x_space, w, qd, index, alpha, y },
            shape,
            block: shape.features / shape.nonzeros,
            feature_seed: mix64(cfg.seed ^ 0x6b64_6431_3266),
            seed: cfg.seed,
            iteration: 0,
            order: Permutation::new(l, iteration_seed(cfg.seed, 0)),
            rng: rng_for(cfg.seed, 0x7376_6d00),
            phase: Phase::Sweep(0),
        }
    }

    /// Node k of instance i (k = nonzeros: its terminator).
    #[inline]
    fn node(&self, i: u64, k: u64) -> VirtAddr {
        self.at.x_space.add((i * (self.shape.nonzeros + 1) + k) * NODE)
    }

    /// `w` at instance i's feature k.
    #[inline]
    fn weight(&self, i: u64, k: u64) -> VirtAddr {
        let pick = below(mix64((i * self.shape.nonzeros + k) ^ self.feature_seed), self.block);
        self.at.w.add((k * self.block + pick) * 8)
    }

    /// The first sweep's instance i (19 + 13 per nonzero instructions).
    fn push_sweep(&self, out: &mut Vec<Access>, i: u64) {
        let (a, nnz) = (&self.at, self.shape.nonzeros);
        out.push(Access::load(a.y.add(i), 1, 2).at(Site::pc(1)));
        out.push(Access::load(a.x.add(8 * i), 8, 1).at(Site::pc(2)));
        out.push(Access::load(self.node(i, 0), 16, 2).at(Site::pc(3).dependent()));
        for k in 1..=nnz {
            let instrs = if k == 1 { 10 } else { 5 };
            out.push(Access::load(self.node(i, k), 16, instrs).at(Site::pc(4)));
        }
        out.push(Access::load(a.alpha.add(8 * i), 8, 3).at(Site::pc(5)));
        out.push(Access::store(a.qd.add(8 * i), 8, 2).at(Site::pc(6)));
        for k in 0..nnz {
            let w = self.weight(i, k);
            out.extend_from_slice(&[Access::load(w, 8, 4).at(Site::pc(7)), Access::store(w, 8, 4).at(Site::pc(8))]);
        }
        out.push(Access::store(a.index.add(4 * i), 4, 4).at(Site::pc(9)));
    }

    /// A shuffle's position s: `rand()`, then the swap of `index[s]` with
    /// a later `index[j]` (53 instructions).
    fn push_swap(&mut self, out: &mut Vec<Access>, s: u64) {
        let j = s + below(self.rng.next_u64(), self.shape.instances - s);
        let index = self.at.index;
        out.extend_from_slice(&[
            Access::load(index.add(4 * s), 4, 3 + RAND_INSTRS).at(Site::pc(10)),
            Access::load(index.add(4 * j), 4, 5).at(Site::pc(11)),
            Access::store(index.add(4 * s), 4, 1).at(Site::pc(12)),
            Access::store(index.add(4 * j), 4, 4).at(Site::pc(13)),
        ]);
    }

    /// A coordinate step at position s (51 + 15 per nonzero instructions).
    fn push_step(&self, out: &mut Vec<Access>, s: u64) {
        let (a, nnz) = (&self.at, self.shape.nonzeros);
        let i = self.order.apply(s);
        out.push(Access::load(a.index.add(4 * s), 4, 5).at(Site::pc(14)));
        out.push(Access::load(a.y.add(i), 1, 2).at(Site::pc(15).dependent()));
        out.push(Access::load(a.x.add(8 * i), 8, 1).at(Site::pc(16)));
        out.push(Access::load(self.node(i, 0), 16, 2).at(Site::pc(17).dependent()));
        for k in 0..nnz {
            let instrs = if k == 0 { 8 } else { 4 };
            out.push(Access::load(self.weight(i, k), 8, instrs).at(Site::pc(18).dependent()));
            out.push(Access::load(self.node(i, k + 1), 16, 3).at(Site::pc(19)));
        }
        out.push(Access::load(a.alpha.add(8 * i), 8, 2).at(Site::pc(20)));
        out.push(Access::load(a.qd.add(8 * i), 8, 22).at(Site::pc(21)));
        out.push(Access::store(a.alpha.add(8 * i), 8, 8).at(Site::pc(22)));
        for k in 0..nnz {
            let w = self.weight(i, k);
            let (load, store) = (if k == 0 { 8 } else { 4 }, if k + 1 == nnz { 5 } else { 4 });
            out.extend_from_slice(&[
                Access::load(w, 8, load).at(Site::pc(23)),
                Access::store(w, 8, store).at(Site::pc(24)),
            ]);
        }
    }

    /// Runs the loop `phase` is in until `target` or its end, and moves
    /// to the next.
    fn fill_phase(&mut self, out: &mut Vec<Access>, target: usize) {
        let l = self.shape.instances;
        match self.phase {
            Phase::Sweep(mut i) => {
                while out.len() < target && i < l {
                    self.push_sweep(out, i);
                    i += 1;
                }
                self.phase = if i == l { Phase::Shuffle(0) } else { Phase::Sweep(i) };
            }
            Phase::Shuffle(mut s) => {
                while out.len() < target && s < l {
                    self.push_swap(out, s);
                    s += 1;
                }
                self.phase = if s == l { Phase::Steps(0) } else { Phase::Shuffle(s) };
            }
            Phase::Steps(mut s) => {
                while out.len() < target && s < l {
                    self.push_step(out, s);
                    s += 1;
                }
                self.phase = if s == l { Phase::Done } else { Phase::Steps(s) };
            }
            Phase::Done => {}
        }
    }
}

/// The seed of iteration `n`'s order.
fn iteration_seed(seed: u64, n: u64) -> u64 {
    mix64(seed ^ 0x6f72_6465_7200_0000 ^ n)
}

impl Generator for Svm {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target && self.phase != Phase::Done {
            self.fill_phase(out, target);
        }
        self.phase != Phase::Done
    }

    /// The first sweep and the first shuffle.
    fn init_loop_accesses(&self) -> u64 {
        self.shape.instances * (6 + 3 * self.shape.nonzeros + 4)
    }

    /// The next outer iteration, over a new order.
    fn restart(&mut self) {
        self.iteration += 1;
        self.order = Permutation::new(self.shape.instances, iteration_seed(self.seed, self.iteration));
        self.phase = Phase::Shuffle(0);
    }
}

#[cfg(test)]
#[path = "svm_tests.rs"]
mod tests;
