//! `bin-hopping` (Kessler and Hill): consecutive page faults get
//! consecutive colors ("bins"), whatever their virtual addresses. Shares
//! the per-color lists of `coloring`; only the choice of color differs.

use super::coloring::Coloring;
use super::{Build, Caps, Hooks, Policy, Registration};
use crate::error::Result;
use crate::os::Kernel;

pub const REGISTRATION: Registration = Registration {
    name: "bin-hopping",
    policies: &[Policy {
        name: "bin-hopping",
        chain: &["bin-hopping"],
        doc: "Consecutive faults get consecutive colors (Kessler and Hill).",
    }],
    fault_kinds: &["colored"],
    terminal: true,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: super::coloring::STATS,
    idle_stats: |_| {},
    build,
};

fn build(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Coloring { name: "bin-hopping", choose: next_bin }));
    Ok(())
}

/// The next bin after the previous fault's, among the process's allowed
/// colors (all when `allowed` is empty); skips colors with no free page
/// (`candidates`), so the cursor always advances.
fn next_bin(candidates: &[u32], allowed: &[u32], nr_colors: u32, cursor: &mut usize) -> u32 {
    let order: Vec<u32> = if allowed.is_empty() { (0..nr_colors).collect() } else { allowed.to_vec() };
    for _ in 0..order.len() {
        let color = order[*cursor % order.len()];
        *cursor = cursor.wrapping_add(1);
        if candidates.contains(&color) {
            return color;
        }
    }
    candidates[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_faults_get_consecutive_colors() {
        let mut cursor = 0;
        let all: Vec<u32> = (0..4).collect();
        let got: Vec<u32> = (0..6).map(|_| next_bin(&all, &[], 4, &mut cursor)).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 0, 1]);
    }

    #[test]
    fn an_empty_bin_is_skipped() {
        let mut cursor = 0;
        let got: Vec<u32> = (0..3).map(|_| next_bin(&[0, 2], &[], 4, &mut cursor)).collect();
        assert_eq!(got, vec![0, 2, 0]);
    }
}
