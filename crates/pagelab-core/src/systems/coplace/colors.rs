//! COPLACE's host colors (its section IV) and the host color it wants for
//! a guest frame.
//!
//! A host color is a set of physical-address bits (`ColorMap`): the LLC's
//! set bits at or above bit 12 (the color inside a slice), the lowest page
//! bits the slice hash reads that are not already among them (pages
//! differing there "are usually mapped by hardware to different cache
//! slices"), and, when the LLC is non-inclusive, the L2's set bits at or
//! above bit 12 (an L2 line need not be in the LLC, so L2 conflicts go to
//! memory). Bits in both caches count once.

use crate::hw::cache::color::page_set_bits;
use crate::hw::cache::ColorMap;
use crate::os::HostView;
use crate::units::Pfn;

/// The address bits of COPLACE's host colors on `view`'s caches, lowest
/// first, with `slice_bits` slice-select bits (unset: log2 of the slice
/// count, rounded up).
pub fn host_color_bits(view: &HostView, slice_bits: Option<u32>) -> Vec<u32> {
    let mut bits: Vec<u32> = page_set_bits(&view.llc).collect();
    let wanted = slice_bits.unwrap_or_else(|| view.llc.slices.next_power_of_two().trailing_zeros());
    let slice: Vec<u32> =
        view.llc.slice_select_page_bits().into_iter().filter(|b| !bits.contains(b)).take(wanted as usize).collect();
    bits.extend(slice);
    if !view.llc_inclusive {
        bits.extend(page_set_bits(&view.l2));
    }
    bits.sort_unstable();
    bits.dedup();
    bits
}

/// The host color (of `host_colors`, a power of two) COPLACE backs guest
/// frame `gfn` with, from the guest's color of it under `guest`: pages of
/// different guest colors get different host colors while the host has as
/// many; with fewer host colors, the guest color's low bits. With more, the
/// guest color is the low bits and the guest frame's bits above the
/// guest's highest color bit fill the rest, so one VM spreads over every
/// host color (the paper's virtual LLC is the whole LLC, whose colors are
/// the host's; a guest coloring fewer bits leaves the rest to the host).
pub fn host_color_of_guest(guest: &ColorMap, host_colors: u32, gfn: u64) -> u32 {
    let color = guest.color_of(Pfn::new(gfn));
    let guest_colors = guest.nr_colors();
    if guest_colors >= host_colors {
        return color & (host_colors - 1);
    }
    let spare = u64::from(host_colors / guest_colors);
    let above = (gfn >> guest.span_order()) & (spare - 1);
    color | (above as u32) << guest_colors.trailing_zeros()
}
