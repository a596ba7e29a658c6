//! Tests of the Xapian analogue (xapian.rs): its index's shape, the access
//! sequence of a query, one request site per query, the buffer freed and
//! mapped again per query, and a whole-engine run through the remaps.

use super::*;
use crate::units::ByteSize;
use crate::workload::testutil::{check_mapped, collect, collect_batches, no_init_config};
use crate::workload::{build_generator, AccessKind, InitMode, WorkloadKind};

fn config(footprint: u64, accesses: u64, seed: u64) -> WorkloadConfig {
    no_init_config(WorkloadKind::Xapian, footprint, accesses, seed)
}

#[test]
fn the_dictionary_is_a_btree_of_8k_blocks() {
    // 256 entries a block: 1 term needs one block; 257 a root and two leaves;
    // 65,537 three levels.
    assert_eq!(dictionary_blocks(1), [1]);
    assert_eq!(dictionary_blocks(256), [1]);
    assert_eq!(dictionary_blocks(257), [1, 2]);
    assert_eq!(dictionary_blocks(65_537), [1, 2, 257]);
}

#[test]
fn a_20mib_index_holds_its_parts_in_the_stated_proportions() {
    let x = Xapian::new(&config(20 << 20, 0, 1));
    let index = (20 << 20) - RING - QUERY_BUFFER;
    let len = |name: &str| x.arrays.iter().find(|a| a.name == name).unwrap().len;
    // 80,640 terms (an eighth of the index at 32 bytes): 315 leaves under 2 blocks under a root.
    assert_eq!(x.levels, [1, 2, 315]);
    assert_eq!(len("xapian-dictionary"), 318 * BLOCK);
    assert_eq!(len("xapian-doclens"), (index / 32 * 4).next_multiple_of(4096));
    // The posting lists fill their three quarters but the rounding: each
    // term's 1 + floor(p(r) (L - T)) lines add up to between L - T and L.
    let (lines_all, terms) = (index * 3 / 4 / LINE, 80_640);
    let postings = len("xapian-postings");
    assert!(postings <= (lines_all * LINE).next_multiple_of(4096), "{postings}");
    assert!(postings >= (lines_all - terms) * LINE, "{postings}");
    // The most popular term's list is the longest.
    let lines = |r: usize| x.list_start[r + 1] - x.list_start[r];
    assert!(lines(0) > lines(1) && lines(1) > lines(1000) && lines(80_639) >= 1);
    assert_eq!(len("xapian-query"), QUERY_BUFFER);
}

#[test]
fn a_query_reads_its_request_then_looks_up_and_reads_each_terms_postings() {
    let mut x = Xapian::new(&config(MIN_FOOTPRINT, 0, 3));
    let mut out = Vec::new();
    // The first query: the request load, then (buffer already mapped) no event.
    x.step(&mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].site, Site::pc(REQUEST_PC));
    assert_eq!(out[0].vaddr, x.ring);
    assert!(x.events.is_empty());
    let terms = x.query_terms.clone();
    assert!((1..=MAX_TERMS as usize).contains(&terms.len()));
    // The lookup: 8 dependent probes per level, in the dictionary.
    x.step(&mut out);
    let probes = 8 * x.levels.len();
    assert_eq!(out.len(), 1 + probes);
    assert!(out[1..].iter().all(|a| a.site == Site::pc(PROBE_PC).dependent() && a.kind == AccessKind::Load));
    // Then every posting line of the term: 4 accesses, the lines in order.
    let lines = x.list_start[terms[0] as usize + 1] - x.list_start[terms[0] as usize];
    for line in 0..lines {
        let before = out.len();
        x.step(&mut out);
        assert_eq!(out.len(), before + 4);
        let first = x.list_start[terms[0] as usize];
        assert_eq!(out[before].vaddr, x.postings.add((first + line) * LINE));
        assert_eq!(out[before + 1].kind, AccessKind::Store);
        assert!(x.buffer.contains(out[before + 1].vaddr, 8));
        assert!(out[before + 2].site.is_dependent());
    }
    // Through the other terms to the result, which frees the buffer.
    while x.phase != Phase::Result {
        x.step(&mut out);
    }
    let before = out.len();
    x.step(&mut out);
    assert_eq!(out.len(), before + TOP_K as usize);
    assert_eq!(x.events, [(out.len(), MapEvent::Munmap { start: x.buffer.start, len: QUERY_BUFFER })]);
    // The next query maps it again after its request load.
    x.events.clear();
    x.step(&mut out);
    assert_eq!(out.last().unwrap().site, Site::pc(REQUEST_PC));
    assert_eq!(out.last().unwrap().vaddr, x.ring.add(RING_SLOT));
    assert!(
        matches!(x.events.as_slice(), [(i, MapEvent::Mmap { start, .. })] if *i == out.len() && *start == x.buffer.start)
    );
}

/// The global indices of the accesses at the request site, and of the
/// munmap and mmap events.
fn requests_and_remaps(cfg: &WorkloadConfig) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let all = collect(cfg, usize::MAX);
    let site = build_generator(cfg, "workload").unwrap().request_site().unwrap();
    let requests = (0..all.accesses.len()).filter(|&i| all.accesses[i].site == site).collect();
    let at = |unmap: bool| {
        all.events
            .iter()
            .filter(|(_, e)| matches!(e, MapEvent::Munmap { .. }) == unmap && !matches!(e, MapEvent::Mprotect { .. }))
            .map(|(i, _)| *i)
            .collect::<Vec<_>>()
    };
    (requests, at(true), at(false))
}

#[test]
fn each_query_begins_with_its_one_request_access_and_ends_by_freeing_its_buffer() {
    let cfg = config(MIN_FOOTPRINT, 200_000, 5);
    let (requests, unmaps, maps) = requests_and_remaps(&cfg);
    assert!(requests.len() > 20, "{} queries", requests.len());
    assert_eq!(requests[0], 0, "the first access is a request");
    // Every query but the first is announced by the previous one's munmap
    // right before its request access, and maps its buffer right after it.
    assert_eq!(unmaps.len() + 1, requests.len().max(unmaps.len() + 1));
    for (q, &r) in requests.iter().enumerate().skip(1) {
        assert_eq!(unmaps[q - 1], r, "query {q}'s request follows the free");
        // The initial mmaps (the arrays) are at 0; the remaps follow.
        assert_eq!(maps[5 + q - 1], r + 1, "query {q} maps its buffer after its request");
    }
    // The stream is cut by the budget; no query has two request accesses
    // because none is at the site except those.
    assert_eq!(requests.len(), unmaps.len() + usize::from(unmaps.len() < requests.len()));
}

#[test]
fn remaps_stay_inside_mappings_with_any_batch_size_and_the_init_pass() {
    for init in [InitMode::Pages, InitMode::None] {
        for max in [1, 7, 4096] {
            let mut cfg = config(MIN_FOOTPRINT, 20_000, 2);
            cfg.init = init;
            check_mapped(&collect_batches(&cfg, max), &format!("xapian {init:?} {max}"));
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_queries_and_another_seed_others() {
    let cfg = config(2 << 20, 50_000, 9);
    let (a, b) = (collect(&cfg, usize::MAX), collect(&cfg, usize::MAX));
    assert_eq!((&a.accesses, &a.events), (&b.accesses, &b.events));
    let other = collect(&config(2 << 20, 50_000, 10), usize::MAX);
    assert_ne!(a.accesses, other.accesses);
}

#[test]
fn a_natural_run_is_its_queries() {
    let cfg = config(MIN_FOOTPRINT, 0, 4);
    let (requests, unmaps, _) = requests_and_remaps(&cfg);
    assert_eq!(requests.len() as u64, QUERIES_PER_RUN);
    assert_eq!(unmaps.len() as u64, QUERIES_PER_RUN);
}

#[test]
fn a_footprint_below_the_least_and_a_bad_theta_name_their_keys() {
    let mut cfg = config(MIN_FOOTPRINT - 4096, 0, 1);
    let key = |cfg: &WorkloadConfig| match build_generator(cfg, "workload") {
        Err(crate::error::Error::Config { key, .. }) => key,
        other => panic!("{:?}", other.map(|w| w.name().to_string())),
    };
    assert_eq!(key(&cfg), "workload.footprint");
    cfg.footprint = ByteSize(MIN_FOOTPRINT);
    cfg.zipf_theta = 1.0;
    assert_eq!(key(&cfg), "workload.zipf_theta");
}

#[test]
fn the_engine_frees_the_query_buffers_frames_and_reuses_them() {
    use crate::engine::testutil::{run_toml, stat};
    let text = format!(
        "[machine]\nphys_mem = \"256MiB\"\n[run]\ncheck_translations = true\n\
         [workload]\nkind = \"xapian\"\nfootprint = {MIN_FOOTPRINT}\naccesses = 100000\n"
    );
    let sim = run_toml(&text, &[]);
    // Every query after the first faults its buffer's touched pages in again.
    let pages = stat(&sim, "mem.mapped.4k") / 4096.0;
    let faults = stat(&sim, "os.faults.base");
    assert!(faults > (MIN_FOOTPRINT / 4096) as f64 + 64.0, "{faults} faults: the remapped buffer did not fault again");
    // The munmapped frames went back to the buddy allocator: the frames in
    // use are the pages mapped now and their page tables, not every fault's.
    let used = (256 << 20) as f64 - stat(&sim, "phys.free");
    assert_eq!(used, stat(&sim, "mem.mapped.4k") + stat(&sim, "mem.pagetables"), "{pages} pages mapped");
}
