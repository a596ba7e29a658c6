//! `cargo bench -p pagelab-core`: accesses per second of the core issue's
//! three target cases (release build, one thread). `PAGELAB_BENCH_QUICK=1`
//! runs over 1 GiB instead of 16 GiB (2 M accesses instead of 20 M);
//! `PAGELAB_BENCH_GIB=n` sets the footprint to n GiB (to profile at the
//! full size with few accesses: walks miss the page-walk caches more over
//! 16 GiB than over 1 GiB); `PAGELAB_BENCH_ACCESSES=n` sets the timed
//! accesses (two counts under callgrind give the exact instructions per
//! timed access); `PAGELAB_BENCH_CASE=name` runs one case;
//! `PAGELAB_BENCH_SET='key=value;key=value'` adds overrides to every case
//! (`machine.timing.model="fixed"` measures the fixed model).
//! Prints; asserts nothing.

use pagelab_core::engine::bench::{run_case, CASES};

fn main() {
    let quick = std::env::var_os("PAGELAB_BENCH_QUICK").is_some();
    let (footprint, accesses) = if quick { (1u64 << 30, 2_000_000) } else { (16u64 << 30, 20_000_000) };
    let footprint =
        std::env::var("PAGELAB_BENCH_GIB").ok().and_then(|g| g.parse::<u64>().ok()).map_or(footprint, |g| g << 30);
    let accesses = std::env::var("PAGELAB_BENCH_ACCESSES").ok().and_then(|n| n.parse::<u64>().ok()).unwrap_or(accesses);
    let only = std::env::var("PAGELAB_BENCH_CASE").ok();
    let extra = std::env::var("PAGELAB_BENCH_SET").unwrap_or_default();
    for (name, target, overrides) in CASES.iter().filter(|c| only.as_deref().is_none_or(|o| c.0 == o)) {
        let mut all: Vec<&str> = overrides.to_vec();
        all.extend(extra.split(';').filter(|s| !s.is_empty()));
        match run_case(&all, footprint, accesses) {
            Ok(rate) if *target > 0.0 => {
                println!("{name:24} {:8.2} M accesses/s (target {:.0} M)", rate / 1e6, target / 1e6)
            }
            Ok(rate) => println!("{name:24} {:8.2} M accesses/s", rate / 1e6),
            Err(e) => println!("{name:24} failed: {e}"),
        }
    }
}
