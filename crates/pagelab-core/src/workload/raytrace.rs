//! Raytrace: PARSEC's real-time ray tracer (`kind = "raytrace"`, rtview
//! on a triangle mesh), a throughput workload.
//!
//! Keeps (PARSEC 3.0's native input: `thai_statue.obj -automove -frames
//! 200 -res 1920 1080`): a static triangle mesh under a bounding volume
//! hierarchy (BVH), rendered frame after frame at 1920 x 1080 while the
//! camera moves (`-automove`), one primary ray per pixel, pixels in row
//! order. A ray walks the BVH from the root to the leaf it hits: at each
//! level it tests both children's boxes and descends into one (the
//! node's load, then its sibling's: a dependent chain, each level's
//! address known only once the parent is read), then tests the leaf's
//! triangles, then stores the pixel. The mesh and the BVH are allocated
//! once and never freed (static, as blackscholes).
//!
//! The scene's layout (pagelab's estimates: rtview's own structures are
//! not read here): 48-byte triangles (three vertices of three floats,
//! padded to 16 bytes each), 4 triangles per leaf, 32-byte nodes (a box of
//! six floats and a child index), stored depth first (a node's left child
//! follows it, its right child after the left subtree), leaves in the
//! order of a Z-order (Morton) curve over the screen, so neighbouring
//! pixels hit neighbouring leaves; the frame buffer is 1920 x 1080 pixels
//! of 4 bytes beside the scene. A pixel's leaf is its cell in a grid of
//! the leaves over the screen (cells past the last leaf wrap to the
//! first ones), shifted by one cell per frame (the moving
//! camera), with one of the 4 leaves around it drawn from the seed (the
//! mesh's surface is not a plane). The run is the budget's: one frame at
//! 24 MiB is about 80 M accesses.
//!
//! Sized by `footprint`: the scene (`footprint` / 256 leaves of 4
//! triangles and their 2 nodes; PARSEC's native mesh of 10 M triangles is
//! about 640 MB).
//!
//! Instructions per access (estimates, not measured): a box test 20, a
//! triangle test 40, a pixel's shading and store 100.

use super::driver::Generator;
use super::{rng_for, Access, Array, Layout, Site, WorkloadConfig};
use crate::units::VirtAddr;
use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

pub(crate) const WIDTH: u64 = 1920;
pub(crate) const HEIGHT: u64 = 1080;
const PIXEL_BYTES: u64 = 4;
pub(crate) const TRIANGLE_BYTES: u64 = 48;
pub(crate) const NODE_BYTES: u64 = 32;
pub(crate) const PER_LEAF: u64 = 4;
/// Bytes of the scene per leaf: its triangles and (about) two nodes.
pub(crate) const LEAF_BYTES: u64 = PER_LEAF * TRIANGLE_BYTES + 2 * NODE_BYTES;

const BOX_INSTRS: u32 = 20;
const TRIANGLE_INSTRS: u32 = 40;
const SHADE_INSTRS: u32 = 100;

const NODE_PC: u64 = 1;
const SIBLING_PC: u64 = 2;
const TRIANGLE_PC: u64 = 3;
const PIXEL_PC: u64 = 4;

pub(crate) struct Raytrace {
    arrays: Vec<Array>,
    nodes: VirtAddr,
    triangles: VirtAddr,
    frame_buffer: VirtAddr,
    leaves: u64,
    /// The leaves' grid over the screen: columns, rows (a power of two
    /// each, their product at least the leaves).
    grid: (u64, u64),
    rng: Xoshiro256PlusPlus,
    seed: u64,
    frame: u64,
    pixel: u64,
}

impl Raytrace {
    pub(crate) fn new(cfg: &WorkloadConfig) -> Self {
        let leaves = leaves_in(cfg.footprint.bytes());
        let mut layout = Layout::of(cfg);
        let nodes = layout.place("raytrace-bvh", (2 * leaves - 1) * NODE_BYTES);
        let triangles = layout.place("raytrace-triangles", leaves * PER_LEAF * TRIANGLE_BYTES);
        let frame_buffer = layout.place("raytrace-frame", WIDTH * HEIGHT * PIXEL_BYTES);
        Raytrace {
            arrays: layout.into_arrays(),
            nodes,
            triangles,
            frame_buffer,
            leaves,
            grid: grid_of(leaves),
            rng: rng_for(cfg.seed, 0),
            seed: cfg.seed,
            frame: 0,
            pixel: 0,
        }
    }

    /// The leaf pixel `p` of frame `frame` hits, before the jitter.
    fn leaf_of(&self, p: u64) -> u64 {
        let (cols, rows) = self.grid;
        let (x, y) = (p % WIDTH, p / WIDTH);
        let gx = (x * cols / WIDTH + self.frame) % cols;
        let gy = y * rows / HEIGHT;
        morton(gx, gy) % self.leaves
    }

    /// One ray: the walk from the root to `leaf`, its triangles, the pixel.
    fn trace(&self, out: &mut Vec<Access>, leaf: u64, p: u64) {
        let (mut lo, mut hi, mut node) = (0, self.leaves, 0);
        out.push(Access::load(self.node(node), 8, BOX_INSTRS).at(Site::pc(NODE_PC)));
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let (left, right) = (node + 1, node + 2 * (mid - lo));
            let (next, sibling) = if leaf < mid { (left, right) } else { (right, left) };
            out.push(Access::load(self.node(next), 8, BOX_INSTRS).at(Site::pc(NODE_PC).dependent()));
            out.push(Access::load(self.node(sibling), 8, BOX_INSTRS).at(Site::pc(SIBLING_PC).dependent()));
            if leaf < mid {
                hi = mid;
            } else {
                lo = mid;
            }
            node = next;
        }
        for t in 0..PER_LEAF {
            let addr = self.triangles.add((leaf * PER_LEAF + t) * TRIANGLE_BYTES);
            out.push(Access::load(addr, 8, TRIANGLE_INSTRS).at(Site::pc(TRIANGLE_PC)));
        }
        out.push(Access::store(self.frame_buffer.add(p * PIXEL_BYTES), 4, SHADE_INSTRS).at(Site::pc(PIXEL_PC)));
    }

    fn node(&self, i: u64) -> VirtAddr {
        self.nodes.add(i * NODE_BYTES)
    }
}

/// Leaves a scene of `footprint` bytes holds (at least one).
pub(crate) fn leaves_in(footprint: u64) -> u64 {
    (footprint / LEAF_BYTES).max(1)
}

/// A grid of powers of two, columns first, with at least `leaves` cells.
fn grid_of(leaves: u64) -> (u64, u64) {
    let bits = leaves.next_power_of_two().trailing_zeros() as u64;
    (1 << bits.div_ceil(2), 1 << (bits / 2))
}

/// The Z-order index of cell (x, y): their bits interleaved, x lowest.
pub(crate) fn morton(x: u64, y: u64) -> u64 {
    (0..32).fold(0, |m, b| m | ((x >> b) & 1) << (2 * b) | ((y >> b) & 1) << (2 * b + 1))
}

impl Generator for Raytrace {
    fn arrays(&self) -> &[Array] {
        &self.arrays
    }

    fn fill(&mut self, out: &mut Vec<Access>, target: usize) -> bool {
        while out.len() < target {
            let jitter = self.rng.random_range(0..4u64);
            let p = self.pixel;
            let leaf = (self.leaf_of(p) ^ jitter).min(self.leaves - 1);
            self.trace(out, leaf, p);
            self.pixel += 1;
            if self.pixel == WIDTH * HEIGHT {
                self.pixel = 0;
                self.frame += 1;
            }
        }
        true
    }

    fn restart(&mut self) {
        self.rng = rng_for(self.seed, 0);
        self.frame = 0;
        self.pixel = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil::{collect, no_init_config};
    use crate::workload::{AccessKind, WorkloadKind};

    fn config(footprint: u64, accesses: u64) -> WorkloadConfig {
        no_init_config(WorkloadKind::Raytrace, footprint, accesses, WorkloadConfig::default().seed)
    }

    #[test]
    fn the_scene_and_the_grid_follow_the_footprint() {
        // 24 MiB / 256 = 98,304 leaves, 196,607 nodes; 2^17 cells: 512 x 256.
        assert_eq!(leaves_in(24 << 20), 98_304);
        assert_eq!(grid_of(98_304), (512, 256));
        assert_eq!(grid_of(4), (2, 2));
        assert_eq!(grid_of(1), (1, 1));
        assert_eq!((morton(0b11, 0), morton(0, 0b11), morton(1, 1)), (0b0101, 0b1010, 0b11));
    }

    #[test]
    fn a_ray_walks_root_to_leaf_depth_first_then_its_triangles_and_pixel() {
        // Five leaves: the root's left subtree holds leaves 0-1 (3 nodes),
        // its right leaves 2-4. Leaf 3: root 0, right child 0 + 2 x 2 = 4
        // (sibling 1); in [2, 5) mid 3: right child 4 + 2 x 1 = 6 (sibling
        // 5); in [3, 5) mid 4: left child 7 (sibling 8).
        let r = Raytrace::new(&config(5 * LEAF_BYTES, 1));
        let mut out = Vec::new();
        r.trace(&mut out, 3, 10);
        let nodes: Vec<u64> = out[..7].iter().map(|a| (a.vaddr.raw() - r.nodes.raw()) / NODE_BYTES).collect();
        assert_eq!(nodes, [0, 4, 1, 6, 5, 7, 8]);
        assert!(out[1..7].iter().all(|a| a.site.is_dependent()));
        let tri: Vec<u64> = out[7..11].iter().map(|a| (a.vaddr.raw() - r.triangles.raw()) / TRIANGLE_BYTES).collect();
        assert_eq!(tri, [12, 13, 14, 15]);
        assert_eq!((out[11].kind, out[11].vaddr), (AccessKind::Store, r.frame_buffer.add(40)));
        assert_eq!(out.len(), 12);
        // The tree has 2 x 5 - 1 = 9 nodes: ids 0-8.
        assert_eq!(*nodes.iter().max().unwrap(), 8);
    }

    #[test]
    fn neighbouring_pixels_hit_neighbouring_leaves_and_the_camera_moves() {
        let mut r = Raytrace::new(&config(24 << 20, 1));
        // 512 columns over 1920 pixels: 3.75 pixels a column.
        assert_eq!((r.leaf_of(0), r.leaf_of(3), r.leaf_of(4)), (0, 0, 1));
        // The next frame shifts by one column.
        r.frame = 1;
        assert_eq!(r.leaf_of(0), 1);
    }

    #[test]
    fn the_scene_is_static_and_pixels_go_in_row_order() {
        let all = collect(&config(1 << 20, 20_000), usize::MAX);
        assert_eq!(all.events.len(), 3);
        let pixels: Vec<u64> =
            all.accesses.iter().filter(|a| a.kind == AccessKind::Store).map(|a| a.vaddr.raw()).collect();
        assert!(pixels.windows(2).all(|w| w[1] == w[0] + PIXEL_BYTES));
    }
}
