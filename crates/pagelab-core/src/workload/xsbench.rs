//! XSBench: the macroscopic cross-section lookups of a Monte Carlo neutron
//! transport code, as the Elastic Translations artifact runs them
//! (`./XSBench -s XL -t 1 -l 128`: the history-based method over the
//! unionized energy grid, 500,000 particles of 128 lookups, one thread).
//!
//! Keeps (the artifact's aarch64 binary, `benchmarks/XSBench`, read by
//! hand; its source is not in the artifact): the Hoogenboom-Martin
//! problem's 355 nuclides and its 12 materials (their nuclide lists, and
//! how often a lookup picks each: `load_mats`, `load_num_nucs` and
//! `pick_mat`'s distribution, read from the binary), and three arrays,
//! allocated in this order:
//!
//! - the nuclide grids: G points of 48 bytes (an energy and five cross
//!   sections) per nuclide, the nuclides one after another;
//! - the unionized energy grid: 355 x G points of 16 bytes (an energy and
//!   a pointer to the point's row of the index grid);
//! - the index grid: per unionized point, 355 four-byte indices, one into
//!   each nuclide's grid.
//!
//! A lookup draws an energy and a material, binary-searches the unionized
//! grid (a chain of dependent loads, whose first steps visit the same few
//! points in every lookup), loads the found point's row pointer, and for
//! each nuclide of the material loads its index in the row and then the
//! nuclide grid's two points at that index (96 bytes: two or three lines).
//! The artifact's XL problem has G = 238,847; here G is what the footprint
//! holds (1,484 bytes per gridpoint of each nuclide). A natural run is the
//! artifact's 64,000,000 lookups.
//!
//! Dependence (`Access::site`): each search step after the first waits for
//! the one before (the first's address is the grid's middle), the row
//! pointer for the last step, the first nuclide's index for the pointer,
//! and each nuclide's first line for its index. The other nuclides'
//! indices are marked independent: their producers (the row pointer,
//! reloaded per nuclide, and the material's nuclide id) hit the L1D, and
//! they wait for the search only through them, which the one dependence
//! bit cannot name; so the two or three nuclides the reorder buffer holds
//! behind the search's end issue before it ends. A nuclide's second and
//! third lines are marked independent too: they wait for the same index as
//! its first line, which is no longer the most recent load.
//!
//! Instructions (the binary's `calculate_macro_xs` and its history loop):
//! 10 per search step, 39 per nuclide, 136 per lookup besides, and
//! `pick_mat`'s loop, which sums the distribution anew for each material it
//! tries: from 16 (material 1) to 367 (material 0, tried last).
//!
//! Simplifies: the energy draw is a uniform point of the unionized grid,
//! and a nuclide's index at it is drawn around its expected place (the
//! point's share of the grid times G) with the spread a binomial count of
//! G uniform energies has, from the point and the nuclide only, as the
//! program's index grid is a function of them. The particle loop's
//! per-particle setup (1 lookup in 128), the verification hash and the
//! stack's cross-section vectors (L1D-resident) are not generated; the
//! grids' generation, sorts and unionization (XSBench's initialization,
//! which the artifact does not time) are the init pass's first touches.
//! Scaling the footprint shrinks G, so each nuclide's grid is G x 48
//! bytes where XL's is 11.5 MB: below 2 MiB several nuclides share a huge
//! page, which XL's never do.

use super::driver::Generator;
use super::{below, mix64, rng_for, unit_f64, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The Hoogenboom-Martin problem's nuclides (`-s large` and larger).
const ISOTOPES: u64 = 355;
const POINT: u64 = 48;
const UNION_POINT: u64 = 16;
const INDEX: u64 = 4;
/// Bytes of the three arrays per gridpoint of each nuclide.
pub(crate) const BYTES_PER_GRIDPOINT: u64 = ISOTOPES * (POINT + UNION_POINT + ISOTOPES * INDEX);
/// 500,000 particles x 128 lookups (`-l 128`).
const LOOKUPS_PER_RUN: u64 = 500_000 * 128;

/// How often each material is looked up (`pick_mat`: it sums to 1.001,
/// and material 0 gets what the others leave, 0.139).
const DIST: [f64; 12] = [0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013];
/// The fuel's first 34 nuclides (the small problem's fuel); the large
/// problem's fuel adds nuclides 68 to 354.
const FUEL_SMALL: [u16; 34] = [
    58, 59, 60, 61, 40, 42, 43, 44, 45, 46, 1, 2, 3, 7, 8, 9, 10, 29, 57, 47, 48, 0, 62, 15, 33, 34, 52, 53, 54, 55,
    56, 18, 23, 41,
];
const CLADDING: [u16; 5] = [63, 64, 65, 66, 67];
const WATER: [u16; 4] = [24, 41, 4, 5];
const RPV: [u16; 27] =
    [19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 27, 28, 29, 30, 31, 32, 26, 49, 50, 51, 11, 12, 13, 14, 6, 16, 17];
const REFLECTOR: [u16; 21] = [24, 41, 4, 5, 19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 49, 50, 51, 11, 12, 13, 14];
const NOZZLE: [u16; 9] = [24, 41, 4, 5, 63, 64, 65, 66, 67];

/// Instructions of a lookup outside its search steps and nuclides: the
/// previous lookup's return (3), its verification and next energy (74)
/// and loop (4), the call (17) and the function's entry (16), carried by
/// the first search step with `pick_mat`'s loop; after the search, 22 and
/// the nuclide loop's entry (6) and the row pointer's load (1).
const LOOKUP_HEAD: u32 = 3 + 74 + 4 + 17 + 16;
const SEARCH_STEP: u32 = 10;
const AFTER_SEARCH: u32 = 22 + 6 + 1;
/// A nuclide's 39: its index (8 with the loop's top, 1 for the first,
/// whose top went with the row pointer), its first line (8), the rest (23).
const INDEX_FIRST: u32 = 1;
const INDEX_NEXT: u32 = 8;
const FIRST_LINE: u32 = 8;
const NUCLIDE_REST: u32 = 23;

/// Program-counter tags.
const SEARCH_PC: u64 = 1;
const ROW_PC: u64 = 2;
const INDEX_PC: u64 = 3;
const LINE_PCS: [u64; 3] = [4, 5, 6];

/// `pick_mat`'s instructions for the material it returns: the loop tries
/// materials 1, 2, ... summing `dist[1..=i]` anew each time (4 per term),
/// and returns 0 after trying all 11.
const fn pick_instrs(material: usize) -> u32 {
    let m = material as u32;
    match m {
        0 => 367,
        11 => 364,
        _ => 3 + 11 * m + 2 * m * m,
    }
}

/// The lookup under way: where the search ended and the next nuclide.
#[derive(Clone, Copy, Debug)]
struct Lookup {
    /// The unionized point found.
    point: u64,
    /// Its share of the grid, and the spread of a nuclide's index there.
    share: f64,
    spread: u64,
    material: usize,
    next: usize,
}

pub(crate) struct XsBench {
    arrays: Vec<Array>,
    grids: VirtAddr,
    union: VirtAddr,
    index: VirtAddr,
    /// G: points per nuclide grid.
    gridpoints: u64,
    materials: [Vec<u16>; 12],
    /// `pick_mat`'s running sums: material i (1..=11) when the draw is
    /// under `running[i]`, else 0.
    running: [f64; 12],
    rng: Xoshiro256PlusPlus,
    index_seed: u64,
    lookup: Option<Lookup>,
    lookups_done: u64,
}

impl XsBench {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let gridpoints = gridpoints_in(cfg.footprint.bytes());
        let points = ISOTOPES * gridpoints;
        let mut layout = Layout::of(cfg);
        let grids = layout.place("xsbench-nuclide-grids", points * POINT);
        let union = layout.place("xsbench-energy-grid", points * UNION_POINT);
        let index = layout.place("xsbench-index-grid", points * ISOTOPES * INDEX);
        let mut running = [0.0; 12];
        for i in 1..12 {
            running[i] = running[i - 1] + DIST[i];
        }
        XsBench {
            arrays: layout.into_arrays(),
            grids,
            union,
            index,
            gridpoints,
            materials: materials(),
            running,
            rng: rng_for(cfg.seed, 0x7873_6265),
            index_seed: mix64(cfg.seed ^ 0x696e_6465_7867),
            lookup: None,
            lookups_done: 0,
        }
    }

    /// `pick_mat` for a uniform draw in [0, 1).
    fn pick_material(&self, roll: f64) -> usize {
        (1..12).find(|&i| roll < self.running[i]).unwrap_or(0)
    }

    /// Draws a lookup (its material and energy), and makes its search and
    /// its row pointer's load.
    fn start_lookup(&mut self, out: &mut Vec<Access>) {
        let roll = unit_f64(self.rng.next_u64());
        let material = self.pick_material(roll);
        let points = ISOTOPES * self.gridpoints;
        let target = below(self.rng.next_u64(), points - 1);
        let point = self.push_search(out, target, material);
        let share = point as f64 / points as f64;
        let spread = (3.0 * self.gridpoints as f64 * share * (1.0 - share)).sqrt() as u64;
        self.lookup = Some(Lookup { point, share, spread, material, next: 0 });
    }

    /// The binary search of the unionized grid for the energy between
    /// points `target` and `target + 1`, then the found point's row
    /// pointer; returns the point (`target`).
    fn push_search(&self, out: &mut Vec<Access>, target: u64, material: usize) -> u64 {
        let (mut low, mut high) = (0, ISOTOPES * self.gridpoints - 1);
        let mut instrs = LOOKUP_HEAD + pick_instrs(material) + SEARCH_STEP;
        let mut site = Site::pc(SEARCH_PC);
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            out.push(Access::load(self.union.add(mid * UNION_POINT), 8, instrs).at(site));
            (instrs, site) = (SEARCH_STEP, Site::pc(SEARCH_PC).dependent());
            if mid > target {
                high = mid;
            } else {
                low = mid;
            }
        }
        let row = self.union.add(low * UNION_POINT + 8);
        out.push(Access::load(row, 8, AFTER_SEARCH).at(Site::pc(ROW_PC).dependent()));
        low
    }

    /// Nuclide `nuclide`'s index at the lookup's point: its expected place
    /// and a spread drawn from the point and the nuclide, within the grid
    /// less its last point (the program then takes the one before).
    #[inline]
    fn nuclide_index(&self, l: &Lookup, nuclide: u64) -> u64 {
        let centre = (l.share * self.gridpoints as f64) as u64;
        let draw = below(mix64((l.point * ISOTOPES + nuclide) ^ self.index_seed), 2 * l.spread + 1);
        (centre + draw).saturating_sub(l.spread).min(self.gridpoints - 2)
    }

    /// One nuclide's index load and the lines of its two grid points.
    #[inline]
    fn push_nuclide(&self, out: &mut Vec<Access>, l: &Lookup, j: usize) {
        let nuclide = self.materials[l.material][j] as u64;
        let entry = self.index.add((l.point * ISOTOPES + nuclide) * INDEX);
        let (instrs, site) =
            if j == 0 { (INDEX_FIRST, Site::pc(INDEX_PC).dependent()) } else { (INDEX_NEXT, Site::pc(INDEX_PC)) };
        out.push(Access::load(entry, 4, instrs).at(site));
        let first = self.grids.raw() + (nuclide * self.gridpoints + self.nuclide_index(l, nuclide)) * POINT;
        let end = first + 2 * POINT;
        // Two lines or three: the second carries the nuclide's rest but one
        // instruction for a third.
        let lines = (end - 1) / 64 - first / 64 + 1;
        let mut addr = first;
        for (n, pc) in LINE_PCS.into_iter().enumerate().take(lines as usize) {
            let line_end = ((addr | 63) + 1).min(end);
            let (instrs, site) = match n {
                0 => (FIRST_LINE, Site::pc(pc).dependent()),
                1 => (NUCLIDE_REST + 2 - lines as u32, Site::pc(pc)),
                _ => (1, Site::pc(pc)),
            };
            out.push(Access::load(VirtAddr::new(addr), (line_end - addr) as u8, instrs).at(site));
            addr = line_end;
        }
    }
}

/// The fuel and the other materials' nuclide lists.
fn materials() -> [Vec<u16>; 12] {
    let fuel: Vec<u16> = FUEL_SMALL.iter().copied().chain(68..ISOTOPES as u16).collect();
    let reflector = REFLECTOR.to_vec();
    [
        fuel,
        CLADDING.to_vec(),
        WATER.to_vec(),
        WATER.to_vec(),
        RPV.to_vec(),
        reflector.clone(),
        reflector.clone(),
        reflector.clone(),
        reflector.clone(),
        reflector,
        NOZZLE.to_vec(),
        NOZZLE.to_vec(),
    ]
}

/// G for a footprint (at least 2: a search needs two points per nuclide).
pub(crate) fn gridpoints_in(footprint: u64) -> u64 {
    footprint / BYTES_PER_GRIDPOINT
}

impl Generator for XsBench {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            let Some(mut l) = self.lookup else {
                if self.lookups_done == LOOKUPS_PER_RUN {
                    return false;
                }
                self.start_lookup(out);
                continue;
            };
            let nuclides = self.materials[l.material].len();
            while out.len() < target && l.next < nuclides {
                self.push_nuclide(out, &l, l.next);
                l.next += 1;
            }
            if l.next == nuclides {
                self.lookup = None;
                self.lookups_done += 1;
            } else {
                self.lookup = Some(l);
            }
        }
        true
    }

    fn restart(&mut self) {
        self.lookups_done = 0;
    }
}

#[cfg(test)]
#[path = "xsbench_tests.rs"]
mod tests;
