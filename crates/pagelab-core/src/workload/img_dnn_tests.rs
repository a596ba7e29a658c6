//! Tests of the Img-dnn analogue (img_dnn.rs): the network's shape from
//! the footprint, a request's accesses counted by hand, one request site
//! per request and first, weights read once per request.

use super::*;
use crate::workload::testutil::{collect, no_init_config};
use crate::workload::{AccessKind, WorkloadKind};

fn config(footprint: u64, accesses: u64) -> WorkloadConfig {
    no_init_config(WorkloadKind::ImgDnn, footprint, accesses, WorkloadConfig::default().seed)
}

/// A request's accesses for hidden width `h`, layer by layer.
fn per_request(h: u64) -> u64 {
    let image = 49; // 3,136 bytes of floats in 64-byte lines
    let conv1 = 8 * 24 * (6 + 1); // 5 input rows and the filter, then the store
    let pool1 = 8 * 12 * 3;
    let conv2 = 16 * 8 * (8 * 6 + 1);
    let pool2 = 16 * 4 * 3;
    let lines = |n: u64| (n * 4).div_ceil(64);
    let dense = h * (lines(256) + 1) + h * (lines(h) + 1) + 10 * (lines(h) + 1);
    image + conv1 + pool1 + conv2 + pool2 + dense + 2
}

#[test]
fn the_footprint_sets_the_largest_hidden_width_it_holds() {
    for fp in [least_footprint(), 6 << 20, 64 << 20] {
        let h = hidden_width(fp);
        assert!(footprint_of(h) <= fp && footprint_of(h + 1) > fp, "{fp}: {h}");
    }
    assert_eq!(hidden_width(least_footprint()), 16);
    // 6 MiB: the weights are a few MB.
    let h = hidden_width(6 << 20);
    assert_eq!(h, 1_096);
    let weights = (CONV_WEIGHTS + 256 * h + h * h + 10 * h) * 4;
    assert!((5 << 20..6 << 20).contains(&weights), "{weights}");
}

#[test]
fn a_request_reads_every_weight_once_and_begins_at_its_site() {
    let fp = footprint_of(16);
    let x = ImgDnn::new(&config(fp, 0));
    let all = collect(&config(fp, 0), usize::MAX);
    let n = per_request(16);
    assert_eq!(all.accesses.len() as u64, REQUESTS_PER_RUN * n);
    let site = Site::pc(REQUEST_PC);
    for (q, req) in all.accesses.chunks(n as usize).enumerate() {
        assert_eq!(req[0].site, site, "request {q} begins at its site");
        assert_eq!(req[0].vaddr, x.ring.add(q as u64 % SLOTS * SLOT));
        assert!(req[1..].iter().all(|a| a.site != site), "request {q}: a second request access");
        // The dense layers' weight lines: each read once.
        let dense: Vec<u64> = req.iter().filter(|a| a.site == Site::pc(DENSE_PC)).map(|a| a.vaddr.raw()).collect();
        let mut unique = dense.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), dense.len());
        assert_eq!(*req.last().map(|a| &a.kind).unwrap(), AccessKind::Store);
    }
    // Static arrays: the three mmaps at the start, nothing after.
    assert_eq!(all.events.len(), 3);
}

#[test]
fn a_footprint_below_the_least_names_the_key() {
    match crate::workload::build_generator(&config(least_footprint() - 4096, 0), "workload") {
        Err(crate::error::Error::Config { key, .. }) => assert_eq!(key, "workload.footprint"),
        other => panic!("{:?}", other.map(|w| w.name().to_string())),
    }
}
