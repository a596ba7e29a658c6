//! ksmd's scan: guest frames in order, VM after VM, each backed 4 KiB page
//! compared by content with the stable tree and then the unstable one
//! (mm/ksm.c's `cmp_and_merge_page`), host huge pages split as
//! `virt.host.ksm.split` allows.

use super::{remap, Ksm, KsmPage, KsmSplit, KSM_POOL};
use crate::os::Kernel;
use crate::phys::FrameOwner;
use crate::units::{Gfn, Order, PageSize, Pfn, VirtAddr};
use crate::virt::contents::{ContentId, Contents};
use crate::virt::hypervisor::Vm;

/// Guest frames in one 2 MiB chunk: the scan lists the EPT's leaves a
/// chunk at a time.
const CHUNK: u64 = 512;

/// What a huge leaf's part found.
enum HugePart {
    /// Nothing to merge it with (recorded, counted as scanned).
    Alone,
    /// A duplicate: split the leaf and merge it as a 4 KiB page.
    Duplicate,
}

impl Ksm {
    /// One wake-up: `pages_to_scan` present pages from the cursor, or up to
    /// the end of the full scan (Linux's `ksm_do_scan` stops there too).
    pub(super) fn scan(&mut self, host: &mut Kernel, vms: &[Vm], contents: &Contents) {
        let mut budget = self.cfg.pages_to_scan as u64;
        while budget > 0 {
            let (vm, gfn) = self.cursor;
            if vm >= vms.len() {
                self.end_full_scan();
                break;
            }
            if gfn >= vms[vm].guest_frames {
                self.cursor = (vm + 1, 0);
                continue;
            }
            budget -= self.scan_chunk(host, vms, contents, budget);
        }
    }

    fn end_full_scan(&mut self) {
        self.cursor = (0, 0);
        self.counters.full_scans += 1;
        // Linux rebuilds the unstable tree every full scan.
        self.unstable.clear();
        self.colors.end_full_scan();
    }

    /// Scans from the cursor to the end of its 2 MiB chunk, or until
    /// `budget` pages are scanned, or until a split changes the chunk's
    /// leaves (the next call lists them again). Returns the pages scanned.
    fn scan_chunk(&mut self, host: &mut Kernel, vms: &[Vm], contents: &Contents, budget: u64) -> u64 {
        let (vm, gfn) = self.cursor;
        let v = vms[vm];
        let end = ((gfn / CHUNK + 1) * CHUNK).min(v.guest_frames);
        let aspace = &host.proc(v.host_asid).aspace;
        if let Some((base, size)) = aspace.table_only_split(frame_addr(gfn)) {
            // Split in the EPT only (HugeScope's fine phase): a huge page
            // to the host's metadata, skipped until it is collapsed.
            self.cursor.1 = (base.raw() + size.bytes()) >> 12;
            return 0;
        }
        let leaves = aspace.pt.leaves_in(frame_addr(gfn), frame_addr(end));
        let mut scanned = 0;
        for (va, m) in leaves {
            let first = va.vpn().raw();
            let from = gfn.max(first);
            if m.size == PageSize::Size4K {
                self.scan_page(host, vms, contents, vm, Gfn::new(first), m.frame);
                scanned += 1;
                self.cursor.1 = first + 1;
            } else if !self.may_split || m.size == PageSize::Size1G {
                // Never split: its parts cannot be write-protected alone.
                self.cursor.1 = first + m.size.nr_pages();
            } else if self.cfg.split == KsmSplit::All && self.split(host, &v, Gfn::new(from)) {
                return scanned;
            } else if self.cfg.split == KsmSplit::All {
                // No page-table page for the split: skipped this time.
                self.cursor.1 = first + m.size.nr_pages();
            } else {
                for part in from..first + m.size.nr_pages() {
                    if scanned == budget {
                        return scanned;
                    }
                    self.cursor.1 = part;
                    let part_gfn = Gfn::new(part);
                    let frame = m.frame.add(part - first);
                    if let HugePart::Duplicate = self.scan_huge_part(host, vms, contents, vm, part_gfn, frame) {
                        if self.break_huge(host, &v, part_gfn) {
                            return scanned;
                        }
                        self.count_scanned(host);
                    }
                    scanned += 1;
                    self.cursor.1 = part + 1;
                }
            }
            if scanned == budget {
                return scanned;
            }
        }
        self.cursor.1 = end;
        scanned
    }

    /// `cmp_and_merge_page` for a backed 4 KiB page: a KSM page of its
    /// content (and color, `colors.rs`) first, then the unstable tree.
    fn scan_page(&mut self, host: &mut Kernel, vms: &[Vm], contents: &Contents, vm: usize, gfn: Gfn, frame: Pfn) {
        self.count_scanned(host);
        if self.is_ksm_page(frame) {
            self.colors.examined(true);
            return;
        }
        let Some(id) = self.unchanged_since_last_scan(contents, vm, gfn) else { return };
        let color = self.colors.color(host, frame);
        let (kpage, stable_elsewhere) = self.stable_for(id, color);
        if let Some(kpage) = kpage {
            self.colors.examined(true);
            self.merge_into(host, &vms[vm], gfn, frame, color, kpage);
            return;
        }
        let same = self.unstable.insert((id, color), (vm, gfn)).filter(|&t| t != (vm, gfn));
        let elsewhere = if same.is_none() && self.colors.on() { self.unstable_elsewhere(id, color) } else { None };
        let identical = same.is_some() || elsewhere.is_some() || self.stable.contains_key(&id);
        self.colors.examined(identical);
        let tree_page = match (same, elsewhere) {
            (Some(t), _) => Some((t, color)),
            (None, Some((c, t))) if self.colors.may_cross() => Some((t, c)),
            _ => None,
        };
        let Some(((tvm, tgfn), tree_color)) = tree_page else {
            self.colors.counters.refused += u64::from(stable_elsewhere || elsewhere.is_some());
            return;
        };
        if !self.mergeable(host, vms, contents, tvm, tgfn, id) {
            return;
        }
        if let Some(kpage) = self.promote(host, &vms[tvm], tgfn, id) {
            self.unstable.remove(&(id, tree_color));
            self.unstable.remove(&(id, color));
            self.merge_into(host, &vms[vm], gfn, frame, color, kpage);
            self.stable.entry(id).or_default().push(kpage);
        }
    }

    /// A 4 KiB part of a host huge page (`split = any-duplicate`), in host
    /// `frame`: whether it has a duplicate to merge with once its page is
    /// split.
    fn scan_huge_part(
        &mut self,
        host: &mut Kernel,
        vms: &[Vm],
        contents: &Contents,
        vm: usize,
        gfn: Gfn,
        frame: Pfn,
    ) -> HugePart {
        let unchanged = match (contents.of(vm, gfn), self.last_seen.get(&(vm, gfn))) {
            (Some(id), Some(&seen)) if id == seen => Some(id),
            _ => None,
        };
        if let Some(id) = unchanged {
            let color = self.colors.color(host, frame);
            let in_unstable = self.unstable.get(&(id, color)).copied();
            let crossing = if self.colors.may_cross() { self.unstable_elsewhere(id, color) } else { None };
            let unstable_match = in_unstable.or(crossing.map(|(_, t)| t)).is_some_and(|(tvm, tgfn)| {
                (tvm, tgfn) != (vm, gfn) && self.mergeable(host, vms, contents, tvm, tgfn, id)
            });
            if self.stable_for(id, color).0.is_some() || unstable_match {
                // Scanned again, as a 4 KiB page, once split.
                return HugePart::Duplicate;
            }
            self.unstable.entry((id, color)).or_insert((vm, gfn));
        }
        self.count_scanned(host);
        if let Some(id) = contents.of(vm, gfn) {
            self.last_seen.insert((vm, gfn), id);
        }
        HugePart::Alone
    }

    fn count_scanned(&mut self, host: &Kernel) {
        self.counters.pages_scanned += 1;
        // The checksum reads the page: half a copy's time.
        self.counters.cpu_cycles += host.costs.copy_4k / 2.0;
    }

    /// The page's content, if it is the one it had at its last scan
    /// (recording it either way): a fresh or changing page is volatile.
    fn unchanged_since_last_scan(&mut self, contents: &Contents, vm: usize, gfn: Gfn) -> Option<ContentId> {
        let id = contents.of(vm, gfn)?;
        (self.last_seen.insert((vm, gfn), id) == Some(id)).then_some(id)
    }

    /// A KSM page of content `id` with room for one more sharer that a
    /// page of `color` may merge into: of its color first, of another only
    /// under `ignore` or while eKSM may cross colors. Also whether a page
    /// with room of another color exists (refused, or taken when crossing).
    fn stable_for(&self, id: ContentId, color: u32) -> (Option<Pfn>, bool) {
        let Some(frames) = self.stable.get(&id) else { return (None, false) };
        let mut with_room = frames.iter().copied().filter(|f| self.pages[f].sharers < self.cfg.max_page_sharing);
        if !self.colors.on() {
            return (with_room.next(), false);
        }
        let (mut same, mut other) = (None, None);
        for f in with_room {
            if self.pages[&f].color == color {
                same = Some(f);
                break;
            }
            other = other.or(Some(f));
        }
        match same {
            Some(f) => (Some(f), false),
            None if self.colors.may_cross() => (other, other.is_some()),
            None => (None, other.is_some()),
        }
    }

    /// The unstable tree's page of content `id` in another color than
    /// `color` (the lowest such color), if any.
    fn unstable_elsewhere(&self, id: ContentId, color: u32) -> Option<(u32, (usize, Gfn))> {
        self.unstable.range((id, 0)..=(id, u32::MAX)).find(|((_, c), _)| *c != color).map(|(&(_, c), &t)| (c, t))
    }

    /// Whether the unstable tree's page `gfn` of `vm` still holds `id` in a
    /// frame of its own that KSM may write-protect (Linux compares the
    /// pages' bytes again here).
    fn mergeable(&self, host: &Kernel, vms: &[Vm], contents: &Contents, vm: usize, gfn: Gfn, id: ContentId) -> bool {
        if contents.of(vm, gfn) != Some(id) {
            return false;
        }
        let aspace = &host.proc(vms[vm].host_asid).aspace;
        if aspace.table_only_split(frame_addr(gfn.raw())).is_some() {
            return false; // split in the EPT only: see scan_chunk
        }
        match aspace.pt.lookup(frame_addr(gfn.raw())) {
            Some(m) if m.size == PageSize::Size4K => !self.is_ksm_page(m.frame),
            Some(m) => m.size == PageSize::Size2M && self.may_split,
            None => false,
        }
    }

    /// The unstable tree's page becomes a KSM page: its own frame,
    /// write-protected (its host huge page split first).
    /// (None: its huge page could not be split.)
    fn promote(&mut self, host: &mut Kernel, vm: &Vm, gfn: Gfn, id: ContentId) -> Option<Pfn> {
        let m = host.proc(vm.host_asid).aspace.pt.lookup(frame_addr(gfn.raw())).expect("a mergeable page is backed");
        if m.size != PageSize::Size4K && !self.break_huge(host, vm, gfn) {
            return None;
        }
        let frame = m.frame.add(gfn.raw() & (m.size.nr_pages() - 1));
        remap(host, vm, gfn, frame, false);
        host.mem.set_owner(frame, FrameOwner::Reserved { pool: KSM_POOL });
        let color = self.colors.color(host, frame);
        self.pages.insert(frame, KsmPage { content: id, sharers: 1, color });
        self.counters.cpu_cycles += host.costs.copy_4k;
        Some(frame)
    }

    /// Maps `gfn` of `vm` to KSM page `kpage` read-only and frees its own
    /// `frame`, of `color` (after comparing the two: a copy's time).
    fn merge_into(&mut self, host: &mut Kernel, vm: &Vm, gfn: Gfn, frame: Pfn, color: u32, kpage: Pfn) {
        remap(host, vm, gfn, kpage, false);
        host.mem.free(frame, Order::BASE);
        let page = self.pages.get_mut(&kpage).expect("a KSM page");
        page.sharers += 1;
        self.colors.counters.across += u64::from(page.color != color);
        self.counters.merges += 1;
        self.counters.cpu_cycles += host.costs.copy_4k;
    }

    /// Splits the host huge page over `gfn`, or (`split = "punch"`) makes
    /// it a perforated page; false when it could not.
    fn break_huge(&mut self, host: &mut Kernel, vm: &Vm, gfn: Gfn) -> bool {
        if self.cfg.split == KsmSplit::Punch {
            return self.perforate(host, vm, gfn);
        }
        self.split(host, vm, gfn)
    }

    /// Splits the host huge page (2 MiB) mapping `gfn` of `vm` into 4 KiB
    /// leaves of the same frames, as THP's split does, and queues its
    /// INVEPT. False when no frame was left for the page table (Linux's
    /// `split_huge_page` fails too, and KSM leaves the page as it is).
    fn split(&mut self, host: &mut Kernel, vm: &Vm, gfn: Gfn) -> bool {
        let base = frame_addr(gfn.raw()).align_down(PageSize::Size2M.bytes());
        let asid = vm.host_asid as usize;
        if host.procs[asid - 1].aspace.split(base, PageSize::Size2M, &mut host.mem).is_err() {
            return false;
        }
        host.stats.splits += 1;
        host.shoot(vm.host_asid, base, base.add(PageSize::Size2M.bytes()));
        self.counters.splits += 1;
        self.counters.cpu_cycles += host.costs.split;
        true
    }
}

/// The VM process's address of guest frame `gfn`.
fn frame_addr(gfn: u64) -> VirtAddr {
    Gfn::new(gfn).addr().as_host_virt()
}
