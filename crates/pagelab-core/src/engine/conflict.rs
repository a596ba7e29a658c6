//! COPLACE's conflict level of each core's process at the end of the run
//! (`run.conflict_level`, `coreN.conflict_level`): how unevenly its pages
//! spread over the LLC's page colors, in the machine's (host-)physical
//! addresses.
//!
//! The paper samples batches of 7040 accessed pages (the LLC's capacity in
//! pages), counts the pages of each LLC color in a batch, takes the
//! standard deviation of the counts, and averages it over the batches.
//! Here the batches are the process's mapped anonymous 4 KiB pages (file
//! windows aside; a huge page counts as its 4 KiB pages), in virtual
//! address order, cut into runs of the LLC's capacity in pages; a process
//! with fewer pages than that is one batch; a last, partial batch is left
//! out (its counts would read as skew). The deviation is the population
//! one (divided by the number of colors). In a VM a page's color is its
//! host frame's; a guest frame not yet backed is left out.

use super::Simulation;
use crate::hw::cache::ColorMap;
use crate::stat::{Scope, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::{Gfn, VirtAddr};

/// `run.conflict_level`'s statistic.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Programs,
    stats: &[StatDecl::count(
        "conflict_level",
        "with `run.conflict_level`: COPLACE's conflict level of the core's process at the end (its last \
         program): its anonymous 4 KiB pages (file windows aside; a huge page as its 4 KiB pages) in \
         virtual-address order, cut into batches of the LLC's capacity in pages (fewer pages: one batch; a last \
         partial batch is left out), per batch the population standard deviation of its pages' counts per LLC \
         page color (the host frame's color in a VM, unbacked guest frames left out), averaged over the \
         batches. 0: perfectly even; a process on half the colors has about its batch's pages / colors",
    )
    .ratio()
    .scope(Scope::PerCore)],
}];

/// Adds `coreN.conflict_level` for every core.
pub(super) fn report(out: &mut Stats, sim: &Simulation) {
    let colors = match &sim.virt {
        Some(v) => v.hv.host.color_map(),
        None => sim.kernel.color_map(),
    };
    let batch = (sim.cfg.machine.cache.llc.size.bytes() / 4096).max(1) as usize;
    for core in &sim.cores {
        let frames = host_frames(sim, core.vm, core.asid);
        out.insert(format!("core{}.conflict_level", core.id), Stat::Float(conflict_level(&frames, colors, batch)));
    }
}

/// The (host-)physical frames of the anonymous pages of `asid` in VM `vm`,
/// in virtual address order.
fn host_frames(sim: &Simulation, vm: usize, asid: crate::units::Asid) -> Vec<u64> {
    let kernel = sim.guest(vm);
    let p = kernel.proc(asid);
    let leaves = p.aspace.pt.leaves_in(VirtAddr::new(0), VirtAddr::new(u64::MAX >> 7));
    let anonymous = leaves.into_iter().filter(|(va, _)| !p.files.iter().any(|&(s, e, _)| *va >= s && *va < e));
    let frames = anonymous.flat_map(|(_, m)| (0..m.size.nr_pages()).map(move |i| m.frame.raw() + i));
    match &sim.virt {
        None => frames.collect(),
        Some(v) => frames.filter_map(|gfn| v.hv.backing_of(vm, Gfn::new(gfn)).map(|(pfn, _)| pfn.raw())).collect(),
    }
}

/// The mean over batches of `batch` frames of the standard deviation of
/// their counts per color (see the module comment).
pub(crate) fn conflict_level(frames: &[u64], colors: &ColorMap, batch: usize) -> f64 {
    let batches: Vec<&[u64]> = if frames.len() <= batch { vec![frames] } else { frames.chunks_exact(batch).collect() };
    let n = colors.nr_colors() as usize;
    let deviations: Vec<f64> = batches
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| {
            let mut counts = vec![0u64; n];
            for &f in b.iter() {
                counts[colors.color_of(crate::units::Pfn::new(f)) as usize] += 1;
            }
            let mean = b.len() as f64 / n as f64;
            let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            var.sqrt()
        })
        .collect();
    if deviations.is_empty() {
        return 0.0;
    }
    deviations.iter().sum::<f64>() / deviations.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_pages_have_no_conflict_and_half_the_colors_read_by_hand() {
        // Colors from address bits 12 and 13: 4 colors, color = pfn % 4.
        let colors = ColorMap::new(&[12, 13], "t").unwrap();
        assert_eq!(colors.nr_colors(), 4);
        // 8 frames over all 4 colors, 2 each: deviation 0.
        assert_eq!(conflict_level(&(0..8).collect::<Vec<_>>(), &colors, 8), 0.0);
        // 8 even frames: colors 0 and 2 hold 4 each, 1 and 3 none; mean 2,
        // deviation sqrt((4 + 4 + 4 + 4) / 4) = 2.
        let even: Vec<u64> = (0..8).map(|i| 2 * i).collect();
        assert_eq!(conflict_level(&even, &colors, 8), 2.0);
        // Two batches of 4: the even ones (2.0 / 2 = 1.0 per batch:
        // counts 2, 0, 2, 0 around a mean of 1) and 4 consecutive (0):
        // mean 0.5; a partial third batch is left out.
        let mixed: Vec<u64> = [0, 2, 4, 6, 8, 9, 10, 11, 100].to_vec();
        assert_eq!(conflict_level(&mixed, &colors, 4), 0.5);
    }
}
