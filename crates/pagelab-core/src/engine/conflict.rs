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
//!
//! `coreN.llc_conflict_level` and `coreN.l2_conflict_level` are the
//! paper's measure itself: the pages the core's data accesses touch, in
//! the order they are first touched, cut into batches of as many distinct
//! pages as the LLC holds; colors from the caches' geometry (the page-level
//! set-index bits of one LLC slice, of the L2), never from a policy's
//! table. The paper samples "periodically"; here every measured access is
//! sampled (a period of one), so two runs differ only by placement. Init
//! passes are not sampled, and a core's next program starts afresh, so
//! the level is its last program's. Read from the quantum's references
//! after its stages: the per-access path does no work for it.

use std::collections::HashSet;

use super::Simulation;
use crate::config::SimConfig;
use crate::error::Result;
use crate::hw::cache::color::page_set_bits;
use crate::hw::cache::{ColorMap, RefKind};
use crate::hw::refs::RefBuf;
use crate::stat::{Scope, Section, Stat, StatDecl, StatTable, Stats};
use crate::units::{Gfn, VirtAddr};

/// `run.conflict_level`'s statistic.
pub const STATS: &[StatTable] = &[StatTable {
    section: Section::Programs,
    stats: &[
        StatDecl::count(
            "conflict_level",
            "with `run.conflict_level`: COPLACE's conflict level of the core's process at the end (its last \
         program): its anonymous 4 KiB pages (file windows aside; a huge page as its 4 KiB pages) in \
         virtual-address order, cut into batches of the LLC's capacity in pages (fewer pages: one batch; a last \
         partial batch is left out), per batch the population standard deviation of its pages' counts per page \
         color of the OS's color map (`os.coloring.bits`, or `virt.host.coloring.bits` on the host frame in a VM, \
         unbacked guest frames left out; by default the LLC's page-level set-index bits), averaged over the \
         batches. 0: perfectly even; a process on half the colors has about its batch's pages / colors",
        )
        .ratio()
        .scope(Scope::PerCore),
        StatDecl::count(
            "llc_conflict_level",
            "with `run.conflict_level`: COPLACE's conflict level as its paper measures it (section III): the distinct \
         pages the core's data accesses touch after the init pass (host frames in a VM), in first-touch order, cut \
         into batches of the LLC's capacity in pages; per batch the population standard deviation of its pages' \
         counts per LLC color (the page-level set-index bits of one LLC slice), averaged over the batches (fewer \
         pages than a batch: that one partial batch). The core's last program",
        )
        .ratio()
        .scope(Scope::PerCore),
        StatDecl::count(
            "l2_conflict_level",
            "with `run.conflict_level`: the same batches as `llc_conflict_level`, counted per L2 color (the L2's \
         page-level set-index bits)",
        )
        .ratio()
        .scope(Scope::PerCore),
    ],
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
    for (id, sampler) in sim.conflict.iter().flatten().enumerate() {
        let (llc, l2) = sampler.levels();
        out.insert(format!("core{id}.llc_conflict_level"), Stat::Float(llc));
        out.insert(format!("core{id}.l2_conflict_level"), Stat::Float(l2));
    }
}

/// One core's batches of accessed pages and the deviations of the
/// batches closed so far, over LLC and L2 colors.
#[derive(Debug)]
pub(super) struct AccessedPages {
    batch: usize,
    llc: ColorMap,
    l2: ColorMap,
    /// The distinct frames of the open batch.
    open: HashSet<u64>,
    /// Sums of the closed batches' deviations (LLC, L2) and their count.
    sums: (f64, f64),
    closed: u64,
}

impl AccessedPages {
    /// One sampler per core when `run.conflict_level` is on.
    pub(super) fn for_run(cfg: &SimConfig, cores: usize) -> Result<Option<Vec<AccessedPages>>> {
        if !cfg.run.conflict_level {
            return Ok(None);
        }
        let cache = &cfg.machine.cache;
        let llc = ColorMap::from_llc(&cache.llc.geometry())?;
        let l2 = ColorMap::new(&page_set_bits(&cache.l2.geometry()).collect::<Vec<_>>(), "machine.cache.l2.size")?;
        let batch = (cache.llc.size.bytes() >> crate::units::PAGE_SHIFT).max(1) as usize;
        let new = || AccessedPages {
            batch,
            llc: llc.clone(),
            l2: l2.clone(),
            open: HashSet::new(),
            sums: (0.0, 0.0),
            closed: 0,
        };
        Ok(Some((0..cores).map(|_| new()).collect()))
    }

    /// Adds the frames of the data references in `refs`.
    pub(super) fn sample(&mut self, refs: &RefBuf) {
        for j in 0..refs.len() {
            let (addr, kind) = refs.get(j);
            if matches!(kind, RefKind::Load | RefKind::Store) {
                self.add(addr >> crate::units::PAGE_SHIFT);
            }
        }
    }

    fn add(&mut self, frame: u64) {
        if self.open.insert(frame) && self.open.len() == self.batch {
            self.sums.0 += deviation(self.open.iter().copied(), &self.llc);
            self.sums.1 += deviation(self.open.iter().copied(), &self.l2);
            self.closed += 1;
            self.open.clear();
        }
    }

    /// A new program on the core: its pages start afresh.
    pub(super) fn restart(&mut self) {
        self.open.clear();
        self.sums = (0.0, 0.0);
        self.closed = 0;
    }

    /// (LLC, L2) levels: the mean over closed batches, or the open batch's
    /// when none closed (0 with no page).
    fn levels(&self) -> (f64, f64) {
        if self.closed == 0 {
            let open = || self.open.iter().copied();
            return (deviation(open(), &self.llc), deviation(open(), &self.l2));
        }
        (self.sums.0 / self.closed as f64, self.sums.1 / self.closed as f64)
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
    let deviations: Vec<f64> =
        batches.iter().filter(|b| !b.is_empty()).map(|b| deviation(b.iter().copied(), colors)).collect();
    if deviations.is_empty() {
        return 0.0;
    }
    deviations.iter().sum::<f64>() / deviations.len() as f64
}

/// The population standard deviation of the counts of `frames` per color
/// (0 for no frame).
fn deviation(frames: impl Iterator<Item = u64>, colors: &ColorMap) -> f64 {
    let mut counts = vec![0u64; colors.nr_colors() as usize];
    for f in frames {
        counts[colors.color_of(crate::units::Pfn::new(f)) as usize] += 1;
    }
    crate::stat::population_stddev(&counts)
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

    fn sampler(batch: usize) -> AccessedPages {
        AccessedPages {
            batch,
            llc: ColorMap::new(&[12, 13], "llc").unwrap(),
            l2: ColorMap::new(&[12], "l2").unwrap(),
            open: HashSet::new(),
            sums: (0.0, 0.0),
            closed: 0,
        }
    }

    #[test]
    fn accessed_pages_close_batches_of_distinct_pages() {
        // Batches of 4 distinct pages; LLC colors pfn % 4, L2 colors pfn % 2.
        let mut s = sampler(4);
        assert_eq!(s.levels(), (0.0, 0.0), "no page");
        // Frames 0, 2, 4 (0 twice is one page), open: LLC counts 2, 0, 1, 0
        // around 0.75: variance (1.5625 + 0.5625 + 0.0625 + 0.5625) / 4 =
        // 0.6875; L2 counts 3, 0 around 1.5: 1.5.
        for f in [0, 2, 0, 4] {
            s.add(f);
        }
        assert_eq!(s.levels(), (0.6875f64.sqrt(), 1.5), "an open batch alone counts");
        // Frame 6 closes it: LLC 2, 0, 2, 0 around 1: deviation 1; L2 4, 0: 2.
        s.add(6);
        assert_eq!((s.closed, s.levels()), (1, (1.0, 2.0)));
        // Frames 8-11: one page per LLC color, two per L2 color: 0 and 0;
        // the mean over the two batches is (0.5, 1.0); frame 12 opens a
        // third batch that is left out.
        for f in [8, 9, 10, 11, 12] {
            s.add(f);
        }
        assert_eq!((s.closed, s.levels()), (2, (0.5, 1.0)));
        s.restart();
        assert_eq!((s.closed, s.levels()), (0, (0.0, 0.0)), "a new program starts afresh");
    }

    #[test]
    fn random_placement_of_the_papers_batch_over_32_colors() {
        // 7,040 pages (the paper's LLC in pages) placed at random over 32
        // colors: each color's count is binomial(7040, 1/32), whose standard
        // deviation is sqrt(213.1) = 14.6; the population deviation over 32
        // counts averages a little below it (about 14.4). Even placement
        // reads 0: the range fails a model with no skew.
        let colors: Vec<u32> = (12..17).collect();
        let mut s = AccessedPages { llc: ColorMap::new(&colors, "llc").unwrap(), ..sampler(7040) };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        while s.closed < 40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.add(x >> 36);
        }
        let (llc, _) = s.levels();
        assert!((13.9..15.0).contains(&llc), "random placement: {llc}");
        let mut even = AccessedPages { llc: ColorMap::new(&colors, "llc").unwrap(), ..sampler(7040) };
        (0..7040).for_each(|f| even.add(f));
        assert_eq!(even.levels().0, 0.0);
    }
}
