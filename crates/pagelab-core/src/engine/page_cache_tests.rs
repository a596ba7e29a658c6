//! The page cache through whole runs: a file read's interleaved frames,
//! pages that outlive their reader, hits of a second reader, reclaim of
//! the coldest clean pages before out of memory, and the invariant that a
//! frame has at most one role.

use super::testutil::*;
use super::*;
use crate::os::{FileWindow, ProcessSpec, PAGE_CACHE_POOL};
use crate::phys::{FrameOwner, Migratetype};
use crate::units::{Asid, Order, Pfn, VirtAddr};

const WINDOW: u64 = 0x7eff_ffa0_0000;
const ARRAY: u64 = 0x7eff_ffe0_0000;

fn frame_of(sim: &Simulation, asid: Asid, vaddr: u64) -> u64 {
    let pt = &sim.kernel.proc(asid).aspace.pt;
    pt.lookup(VirtAddr::new(vaddr)).unwrap_or_else(|| panic!("{vaddr:#x} of asid {asid} not mapped")).frame.raw()
}

/// A reader of a 4-page file (`file-read`, one page per read()), then
/// `then` after it on the same core.
fn reader_then(then: &str) -> String {
    format!(
        r#"
[machine]
phys_mem = "256MiB"
[run]
check_translations = true
[[workloads]]
kind = "file-read"
footprint = "16KiB"
accesses = 0
file = "data"
{then}"#
    )
}

const STREAM_AFTER: &str = r#"
[[workloads]]
kind = "stream"
footprint = "48KiB"
accesses = 1000
after = "previous"
"#;

#[test]
fn a_file_read_allocates_cache_and_array_frames_interleaved() {
    // One page per read(): the copy's first load faults the page-cache
    // page in (a fill), its first store the array page, and so on; the
    // buddy allocator hands out one split block lowest first, so with F
    // the first frame the cache holds F, F+2, F+4, F+6 and the array F+1,
    // F+3, F+5, F+7.
    let sim = run_toml(&reader_then(""), &["os.policy=\"base\""]);
    let f = frame_of(&sim, 1, WINDOW);
    for i in 0..4 {
        assert_eq!(frame_of(&sim, 1, WINDOW + i * 4096), f + 2 * i, "cache page {i}");
        assert_eq!(frame_of(&sim, 1, ARRAY + i * 4096), f + 2 * i + 1, "array page {i}");
        assert_eq!(sim.kernel.mem.owner(Pfn::new(f + 2 * i)), FrameOwner::Reserved { pool: PAGE_CACHE_POOL });
    }
    assert_eq!(stat(&sim, "pagecache.fills"), 4.0);
    assert_eq!(stat(&sim, "pagecache.hits"), 0.0);
    assert_eq!(stat(&sim, "pagecache.pages"), 4.0);
    assert_eq!(stat(&sim, "os.faults.pagecache"), 4.0);
}

#[test]
fn under_bin_hopping_the_cache_and_the_array_take_alternate_bins() {
    // Bin hopping gives consecutive allocations of the process consecutive
    // colors, page-cache pages included: cache page i gets color 2i, array
    // page i color 2i + 1 (mod the colors), from a cursor at 0.
    let sim = run_toml(&reader_then(""), &["os.policy=\"bin-hopping\""]);
    let colors = sim.kernel.color_map();
    let n = colors.nr_colors() as u64;
    assert!(n >= 8, "{n} colors");
    for i in 0..4 {
        let cache = colors.color_of(Pfn::new(frame_of(&sim, 1, WINDOW + i * 4096))) as u64;
        let array = colors.color_of(Pfn::new(frame_of(&sim, 1, ARRAY + i * 4096))) as u64;
        assert_eq!((cache, array), ((2 * i) % n, (2 * i + 1) % n), "page {i}");
    }
}

#[test]
fn after_the_reader_exits_its_array_is_free_the_cache_is_not_and_the_next_program_gets_the_array_frames() {
    // The reader's array frames F+1, F+3, F+5, F+7 come back as order-0
    // blocks (their buddies hold the cache), and the next program's first
    // faults take them lowest first; then the order-3 block at F+8.
    let first = run_toml(&reader_then(""), &["os.policy=\"base\""]);
    let f = frame_of(&first, 1, WINDOW);
    let sim = run_toml(&reader_then(STREAM_AFTER), &["os.policy=\"base\""]);
    assert_eq!(sim.cores[0].asid, 2);
    for i in 0..4 {
        assert_eq!(sim.kernel.mem.owner(Pfn::new(f + 2 * i)), FrameOwner::Reserved { pool: PAGE_CACHE_POOL });
    }
    // Stream's init pass touches a[0..4], b[0..4], c[0..4] in turn.
    let stream_a = ARRAY;
    let got: Vec<u64> = (0..4).map(|i| frame_of(&sim, 2, stream_a + i * 4096)).collect();
    assert_eq!(got, [f + 1, f + 3, f + 5, f + 7]);
    assert_eq!(frame_of(&sim, 2, stream_a - (4 << 20)), f + 8, "b[0]");
    assert_eq!(stat(&sim, "pagecache.pages"), 4.0);
    check_roles(&sim.kernel);
}

#[test]
fn a_second_reader_of_the_same_file_hits_every_page_and_another_file_fills() {
    let same = "\n[[workloads]]\nkind = \"file-read\"\nfootprint = \"16KiB\"\naccesses = 0\nfile = \"data\"\n\
                after = \"previous\"\n";
    let sim = run_toml(&reader_then(same), &["os.policy=\"base\""]);
    assert_eq!((stat(&sim, "pagecache.fills"), stat(&sim, "pagecache.hits")), (4.0, 4.0));
    assert_eq!(stat(&sim, "pagecache.pages"), 4.0);
    let other = sim_text_other();
    let sim = run_toml(&reader_then(&other), &["os.policy=\"base\""]);
    assert_eq!((stat(&sim, "pagecache.fills"), stat(&sim, "pagecache.hits")), (8.0, 0.0));
    check_roles(&sim.kernel);
}

fn sim_text_other() -> String {
    "\n[[workloads]]\nkind = \"file-read\"\nfootprint = \"16KiB\"\naccesses = 0\nfile = \"other\"\n\
     after = \"previous\"\n"
        .to_string()
}

/// Exhausts the buddy allocator (kernel allocations), leaving nothing free.
fn exhaust(k: &mut crate::os::Kernel) -> Vec<Pfn> {
    std::iter::from_fn(|| k.mem.alloc(Order::BASE, Migratetype::Unmovable, FrameOwner::Kernel)).collect()
}

#[test]
fn reclaim_under_pressure_takes_the_coldest_clean_pages_first() {
    // 40 file pages read in order 0..39 by process A, which exits; B maps
    // page 0 again (a hit: now the hottest) and stays. With memory
    // exhausted, C's fault finds no frame: reclaim frees the 32 coldest
    // unmapped pages (1..32, in that order; 0 is hot and mapped), and the
    // fault takes the lowest of them.
    let mut sim = simulate(config(&["os.policy=\"base\""]), vec![]).unwrap();
    let k = &mut sim.kernel;
    let window = |len| vec![FileWindow { start: BASE, len, file: "f".into() }];
    let a = k.spawn(ProcessSpec { files: window(40 << 12), ..Default::default() }).unwrap();
    for i in 0..40 {
        k.handle_fault(a, BASE.add(i << 12), false).unwrap();
    }
    let frames: Vec<u64> =
        (0..40).map(|i| k.proc(a).aspace.pt.lookup(BASE.add(i << 12)).unwrap().frame.raw()).collect();
    k.exit(a).unwrap();
    let b = k.spawn(ProcessSpec { files: window(4096), ..Default::default() }).unwrap();
    k.handle_fault(b, BASE, false).unwrap();
    let c = k.spawn(ProcessSpec::default()).unwrap();
    let heap = BASE.add(1 << 30);
    k.mmap(c, heap, 2 << 20, true, "heap").unwrap();
    // C's page-table pages first (a fault there and back), so that the
    // exhausted memory is only asked for the data frame.
    k.handle_fault(c, heap.add(4096), true).unwrap();
    let taken = exhaust(k);
    assert!(k.handle_fault(c, heap, true).is_ok());
    let cache = k.page_cache.as_ref().unwrap();
    assert_eq!(cache.stats.reclaimed, 32);
    let kept: Vec<u64> = cache.frames_by_age().iter().map(|p| p.raw()).collect();
    let mut expect: Vec<u64> = frames[33..40].to_vec();
    expect.push(frames[0]);
    assert_eq!(kept, expect, "pages 33..39, then 0 (the hottest)");
    let reclaimed_lowest = frames[1..33].iter().min().unwrap();
    assert_eq!(k.proc(c).aspace.pt.lookup(heap).unwrap().frame.raw(), *reclaimed_lowest);
    for p in taken {
        k.mem.free(p, Order::BASE);
    }
    check_roles(k);
}

#[test]
fn with_only_mapped_cache_pages_memory_still_runs_out_clearly() {
    let mut sim = simulate(config(&["os.policy=\"base\""]), vec![]).unwrap();
    let k = &mut sim.kernel;
    let files = vec![FileWindow { start: BASE, len: 4096, file: "f".into() }];
    let a = k.spawn(ProcessSpec { files, ..Default::default() }).unwrap();
    k.handle_fault(a, BASE, false).unwrap();
    let heap = BASE.add(1 << 30);
    k.mmap(a, heap, 2 << 20, true, "heap").unwrap();
    k.handle_fault(a, heap.add(4096), true).unwrap();
    let _taken = exhaust(k);
    let err = k.handle_fault(a, heap, true).unwrap_err();
    assert!(matches!(err, crate::Error::OutOfMemory(_)), "{err}");
    assert_eq!(k.page_cache.as_ref().unwrap().nr_pages(), 1, "a mapped page is not reclaimed");
}

#[test]
fn a_reader_then_a_program_runs_in_a_vm() {
    let text = r#"
[machine]
phys_mem = "512MiB"
[run]
check_translations = true
[virt]
enabled = true
guest_mem = "64MiB"
[os]
policy = "bin-hopping"
[[workloads]]
kind = "file-read"
footprint = "1MiB"
accesses = 0
[[workloads]]
kind = "stream"
footprint = "384KiB"
accesses = 20000
after = "previous"
"#;
    let sim = run_toml(text, &[]);
    assert_eq!(stat(&sim, "pagecache.pages"), 256.0);
    assert_eq!(stat(&sim, "pagecache.fills"), 256.0);
    check_roles(&sim.kernel);
}

#[test]
fn every_frame_has_at_most_one_role_over_policies_and_chunks() {
    for policy in ["base", "thp", "coloring", "bin-hopping"] {
        for chunk in ["4KiB", "8KiB", "64KiB"] {
            let then = STREAM_AFTER.to_string() + &sim_text_other().replace("\"other\"", "\"data\"");
            let text = reader_then(&then).replace("footprint = \"16KiB\"", "footprint = \"200KiB\"");
            let text = text.replacen("file = \"data\"", &format!("file = \"data\"\nchunk = \"{chunk}\""), 1);
            let sim = run_toml(&text, &[&format!("os.policy=\"{policy}\"")]);
            assert_eq!(stat(&sim, "pagecache.hits"), 50.0, "{policy} {chunk}");
            check_roles(&sim.kernel);
        }
    }
}

/// A frame is at most one of: free, a live process's page, a page-cache
/// page; every page a window maps is the cache's, every anonymous page
/// its process's.
fn check_roles(k: &crate::os::Kernel) {
    let cache = k.page_cache.as_ref();
    let cached: std::collections::BTreeSet<u64> =
        cache.map(|c| c.frames_by_age().iter().map(|p| p.raw()).collect()).unwrap_or_default();
    for &pfn in &cached {
        assert!(!k.mem.is_free(Pfn::new(pfn)), "cached frame {pfn:#x} is free");
        assert_eq!(k.mem.owner(Pfn::new(pfn)), FrameOwner::Reserved { pool: PAGE_CACHE_POOL });
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in k.procs.iter().enumerate().filter(|(_, p)| !p.exited) {
        let asid = i as Asid + 1;
        for (va, m) in p.aspace.pt.leaves_in(VirtAddr::new(0), VirtAddr::new(1 << 47)) {
            let in_window = p.files.iter().any(|&(s, e, _)| va >= s && va < e);
            for j in 0..m.size.nr_pages() {
                let pfn = m.frame.raw() + j;
                assert!(!k.mem.is_free(Pfn::new(pfn)), "mapped frame {pfn:#x} is free");
                if in_window {
                    assert!(cached.contains(&pfn), "window page {va} is not the cache's");
                } else {
                    assert!(!cached.contains(&pfn), "anonymous page {va} is a cache page");
                    assert!(seen.insert(pfn), "frame {pfn:#x} mapped twice");
                    assert!(matches!(k.mem.owner(Pfn::new(pfn)), FrameOwner::User { asid: a, .. } if a == asid));
                }
            }
        }
    }
    assert!(k.procs.iter().filter(|p| p.exited).all(|p| p.aspace.pt.table_pages() == 0));
}

/// COPLACE's varying workload, tiny: in a VM (guest and host `base`: the
/// buddy allocator, Linux's default), a reader of a 4 MiB file, then a
/// stream of 768 KiB after it; against the stream alone on a fresh VM.
fn varying(reader_first: bool) -> Simulation {
    varying_with(reader_first, &[])
}

/// [`varying`] with configuration overrides.
fn varying_with(reader_first: bool, overrides: &[&str]) -> Simulation {
    let reader = "[[workloads]]\nkind = \"file-read\"\nfootprint = \"4MiB\"\naccesses = 0\n";
    let stream = "[[workloads]]\nkind = \"stream\"\nfootprint = \"768KiB\"\naccesses = 200000\n";
    let after = if reader_first { "after = \"previous\"\n" } else { "" };
    let text = format!(
        "[machine]\nphys_mem = \"512MiB\"\n[machine.cache.llc]\nsize = \"1MiB\"\nways = 16\nslices = 1\n\
         [virt]\nenabled = true\nguest_mem = \"64MiB\"\n[virt.host]\npolicy = \"base\"\n[os]\npolicy = \"base\"\n\
         [run]\nconflict_level = true\n{}{stream}{after}",
        if reader_first { reader } else { "" }
    );
    run_toml(&text, overrides)
}

#[test]
fn after_a_file_reader_the_next_program_gets_half_the_llc_colors() {
    // The LLC of 1 MiB, 16 ways, 64-byte lines, one slice: 1024 sets, 16
    // page colors (bits 12 to 15), 256 pages of capacity. The reader's cache and
    // array pages alternate in guest frames and, backed at first touch in
    // that order, in host frames; the stream's 192 pages land on freed
    // array frames: every other host frame, 8 of the 16 colors. One batch
    // (fewer pages than the LLC holds): 24 pages on 8 colors, none on the
    // other 8, mean 12: a deviation of 12. Fresh, the stream's frames are
    // consecutive: 12 on each color, 0.
    let after = varying(true);
    let fresh = varying(false);
    let (skewed, even) = (stat(&after, "core0.conflict_level"), stat(&fresh, "core0.conflict_level"));
    assert_eq!(skewed, 12.0, "after the reader");
    assert_eq!(even, 0.0, "fresh");
}

#[test]
fn the_papers_conflict_levels_sample_the_pages_the_stream_touches() {
    // The same 192 stream pages, now as the stream's measured accesses
    // touch them (one open batch: fewer than the LLC's 256 pages): over the
    // LLC slice's 16 colors 12.0 after the reader, 0 fresh, as above. The
    // L2's colors are its own page-level set bits: with the same bits 12-15
    // it reads the same; the test states which.
    let after = varying(true);
    let fresh = varying(false);
    assert_eq!(stat(&after, "core0.llc_conflict_level"), 12.0, "after the reader");
    assert_eq!(stat(&fresh, "core0.llc_conflict_level"), 0.0, "fresh");
    let l2 = after.config().machine.cache.l2.geometry();
    let l2_bits: Vec<u32> = crate::hw::cache::color::page_set_bits(&l2).collect();
    assert_eq!(l2_bits, [12, 13, 14, 15], "the default L2's colors");
    assert_eq!(stat(&after, "core0.l2_conflict_level"), 12.0);
    assert_eq!(stat(&fresh, "core0.l2_conflict_level"), 0.0);
}

#[test]
fn guest_and_host_each_read_their_own_coloring_bits() {
    // The host's colors come from `virt.host.coloring.bits`, the guest's
    // from `os.coloring.bits`. With host bits [12] (2 colors) the stream's
    // 192 pages, every other host frame after the reader, all share one
    // host color: counts 192 and 0, a deviation of 96. The guest's bits
    // [12] leave the host on the LLC's 16 colors: the 12 of the test above.
    let host = varying_with(true, &["virt.host.coloring.bits=[12]"]);
    assert_eq!(host.virt.as_ref().unwrap().hv.host.color_map().bits(), [12]);
    assert_eq!(host.kernel.color_map().bits(), [12, 13, 14, 15], "the guest keeps the LLC's colors");
    assert_eq!(stat(&host, "core0.conflict_level"), 96.0, "host bits [12]");
    let guest = varying_with(true, &["os.coloring.bits=[12]"]);
    assert_eq!(guest.kernel.color_map().bits(), [12]);
    assert_eq!(guest.virt.as_ref().unwrap().hv.host.color_map().bits(), [12, 13, 14, 15], "the host keeps its own");
    assert_eq!(stat(&guest, "core0.conflict_level"), 12.0, "guest bits [12]");
}
