//! The Kronecker (R-MAT) generator of GAPBS and Graph500.
//!
//! Keeps: per edge, at each of `scale` levels one quadrant is chosen with
//! probabilities A=0.57, B=0.19, C=0.19, D=0.05, setting one bit of the
//! source and one of the destination; 2^scale x degree edges; vertex ids
//! randomly permuted afterwards (GAPBS `PermuteIDs`), so the hubs are
//! spread over the id space; edges generated in blocks each seeded by its
//! block number, as GAPBS does.
//!
//! Simplifies: each level's choice uses 16 random bits (probabilities
//! quantised to 1/65536) from xoshiro256++ instead of a float from
//! mt19937. The id permutation is a computed pseudo-random bijection
//! ([`Permutation`]) rather than a shuffled table (a table lookup per edge
//! end is a host cache miss at large scales). The edge list is never
//! stored: the CSR builder calls the generator twice (count, then fill),
//! which the block seeding makes deterministic, so host memory is the CSR
//! alone (plus two 32 MiB sort buffers).

use super::Csr;
use crate::workload::{mix64, rng_for, Permutation};
use rand::Rng;

/// Quadrant thresholds in 1/65536: A, A+B, A+B+C.
const A: u32 = (0.57 * 65536.0) as u32;
const AB: u32 = ((0.57 + 0.19) * 65536.0) as u32;
const ABC: u32 = ((0.57 + 0.19 + 0.19) * 65536.0) as u32;
const BLOCK_EDGES: u64 = 1 << 16;

/// The symmetrized, squished Kronecker graph of 2^scale vertices.
pub fn kronecker(scale: u32, degree: u32, seed: u64) -> Csr {
    debug_assert!((1..=30).contains(&scale));
    let vertices = 1u32 << scale;
    let edges = (vertices as u64) * degree as u64;
    let ids = Permutation::new(vertices as u64, mix64(seed ^ 0x7065_726d));
    Csr::from_relabelled_edges(
        vertices,
        |x| ids.apply(x as u64) as u32,
        |emit| {
            for block in 0..edges.div_ceil(BLOCK_EDGES) {
                let mut rng = rng_for(seed ^ 0x6b72_6f6e, block);
                let count = BLOCK_EDGES.min(edges - block * BLOCK_EDGES);
                for _ in 0..count {
                    let (u, v) = rmat_edge(scale, &mut rng);
                    emit(u, v);
                }
            }
        },
    )
}

#[inline]
fn rmat_edge(scale: u32, rng: &mut impl Rng) -> (u32, u32) {
    let (mut src, mut dst) = (0u32, 0u32);
    let mut bits = 0u64;
    for level in 0..scale {
        if level % 4 == 0 {
            bits = rng.next_u64();
        }
        let r = (bits & 0xffff) as u32;
        bits >>= 16;
        src <<= 1;
        dst <<= 1;
        if r < AB {
            dst |= (r >= A) as u32;
        } else {
            src |= 1;
            dst |= (r >= ABC) as u32;
        }
    }
    (src, dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadrant_frequencies_follow_rmat() {
        // One level: (0,0) A, (0,1) B, (1,0) C, (1,1) D.
        let mut rng = rng_for(5, 5);
        let mut counts = [0u32; 4];
        for _ in 0..100_000 {
            let (s, d) = rmat_edge(1, &mut rng);
            counts[(s * 2 + d) as usize] += 1;
        }
        let f: Vec<f64> = counts.iter().map(|&c| c as f64 / 100_000.0).collect();
        for (got, want) in f.iter().zip([0.57, 0.19, 0.19, 0.05]) {
            assert!((got - want).abs() < 0.01, "{f:?}");
        }
    }

    #[test]
    fn degrees_are_skewed() {
        let g = kronecker(12, 16, 1);
        let n = g.vertices() as u64;
        let avg = g.directed_edges() as f64 / n as f64;
        // Symmetrized: at most 32 per vertex on average, less after squish.
        assert!(avg > 16.0 && avg < 32.0, "avg {avg}");
        let max = g.max_degree() as f64;
        assert!(max > 20.0 * avg, "max {max} avg {avg}");
        // Many vertices are isolated, as in GAPBS's kron graphs.
        let isolated = (0..g.vertices()).filter(|&v| g.degree(v) == 0).count();
        assert!(isolated > 200, "{isolated}");
    }

    #[test]
    fn lists_are_sorted_unique_symmetric() {
        let g = kronecker(8, 8, 3);
        for u in 0..g.vertices() {
            let list = g.neighbours(u);
            assert!(list.windows(2).all(|w| w[0] < w[1]));
            for &v in list {
                assert_ne!(u, v);
                assert!(g.neighbours(v).binary_search(&u).is_ok());
            }
        }
    }

    #[test]
    fn same_seed_same_graph() {
        let (a, b, c) = (kronecker(8, 4, 9), kronecker(8, 4, 9), kronecker(8, 4, 10));
        assert_eq!(a.neigh, b.neigh);
        assert_ne!(a.neigh, c.neigh);
    }
}
