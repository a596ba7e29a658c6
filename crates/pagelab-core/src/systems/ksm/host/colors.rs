//! eKSM (COPLACE, the paper's section IV): KSM that keeps the host
//! placement's colors. A page's color is its host frame's under the colors
//! the host places frames by (`Kernel::placement_colors`: COPLACE's host
//! colors, else the host's color map), so merging a page into a KSM page
//! of another color moves the guest page to another cache color.
//!
//! - `strict`: only pages of the same color merge (each color of a content
//!   gets its own KSM pages);
//! - `eksm`: same-color duplicates first; a page with none merges across
//!   colors while identical pages are scarce. Scarcity is judged per full
//!   scan from what ksmd itself saw: of the pages it examined (those
//!   compared with the trees, unchanged since their last scan, and those
//!   already mapping a KSM page), the fraction that were a KSM page's
//!   sharers or found an identical page of any color. Below
//!   `virt.host.ksm.scarce`, the next full scan may cross colors; a full
//!   scan that examined nothing leaves the verdict as it was (the first
//!   one crosses nothing).

use crate::hw::cache::ColorMap;
use crate::os::Kernel;
use crate::systems::ksm::KsmColors;
use crate::units::Pfn;

/// eKSM's counters (`ksm.color.*`).
#[derive(Debug, Default, Clone)]
pub(super) struct ColorCounters {
    /// Merges into a KSM page of another color than the page's frame.
    pub(super) across: u64,
    /// Pages left unmerged while an identical page with room existed in
    /// another color only.
    pub(super) refused: u64,
    /// Full scans that found identical pages scarce.
    pub(super) scarce_scans: u64,
}

/// What KSM knows of colors: the rule, the colors, this full scan's count
/// of identical pages.
#[derive(Debug)]
pub(super) struct ColorRule {
    pub(super) mode: KsmColors,
    scarce: f64,
    /// The host placement's colors, read at the first page scanned (the
    /// host's chain is built after its policies).
    map: Option<ColorMap>,
    /// This full scan: pages examined, and those among them that were a
    /// KSM page's sharers or found an identical page.
    examined: u64,
    identical: u64,
    /// Whether the last full scan that examined a page found identical
    /// pages scarce.
    scarce_now: bool,
    pub(super) counters: ColorCounters,
}

impl ColorRule {
    pub(super) fn new(mode: KsmColors, scarce: f64) -> ColorRule {
        ColorRule {
            mode,
            scarce,
            map: None,
            examined: 0,
            identical: 0,
            scarce_now: false,
            counters: ColorCounters::default(),
        }
    }

    /// Whether colors matter at all (not `ignore`).
    #[inline]
    pub(super) fn on(&self) -> bool {
        self.mode != KsmColors::Ignore
    }

    /// The color of host `frame` (0 for every frame under `ignore`).
    pub(super) fn color(&mut self, host: &Kernel, frame: Pfn) -> u32 {
        if !self.on() {
            return 0;
        }
        self.map.get_or_insert_with(|| host.placement_colors().clone()).color_of(frame)
    }

    /// Whether a page may merge into an identical page of another color
    /// now.
    pub(super) fn may_cross(&self) -> bool {
        self.mode == KsmColors::Eksm && self.scarce_now
    }

    /// A page examined this full scan, and whether it had an identical
    /// page (or was a KSM page's sharer).
    pub(super) fn examined(&mut self, identical: bool) {
        if self.on() {
            self.examined += 1;
            self.identical += u64::from(identical);
        }
    }

    /// The end of a full scan: the verdict for the next one.
    pub(super) fn end_full_scan(&mut self) {
        if self.examined > 0 {
            self.scarce_now = (self.identical as f64) < self.scarce * self.examined as f64;
            self.counters.scarce_scans += u64::from(self.scarce_now && self.mode == KsmColors::Eksm);
        }
        (self.examined, self.identical) = (0, 0);
    }
}
