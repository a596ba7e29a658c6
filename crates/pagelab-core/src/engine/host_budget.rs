//! The host's memory, checked before a run builds anything large: the
//! workloads' structures (`workload::host_need`) and the simulated
//! machine's frame table (one `u64` a 4 KiB frame) against the memory this
//! host lets a run have. Over it, the run is refused with one line naming
//! the key that makes it large.
//!
//! The limit belongs to the machine that runs pagelab, not to the run's
//! configuration (so it stays out of `config.resolved.toml` and the
//! results store's hash): `PAGELAB_HOST_MEM` (a size such as `16GiB`),
//! which the command line's `--host-mem` sets and a sweep divides among
//! its `--jobs`; else the host's available memory (`MemAvailable` in
//! /proc/meminfo); else (no /proc) no check.

use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::hw::cache::CacheHierarchy;
use crate::hw::nested_tlb::NestedTlb;
use crate::hw::pwc::Pwc;
use crate::hw::tlb::Tlb;
use crate::phys::PhysMem;
use crate::systems::TlbExtensions;
use crate::units::ByteSize;
use crate::workload::host_need;

/// The environment variable that sets the limit.
pub const HOST_MEM_VAR: &str = "PAGELAB_HOST_MEM";

/// The smallest limit accepted: a limit of 0 (or a few bytes) refuses
/// every run, which is a mistyped value, not a host.
const MIN_LIMIT: u64 = 1 << 20;

/// One table the run builds on the host: the key that sizes it, its bytes,
/// and what it is (for the message).
struct Need {
    key: String,
    bytes: u64,
    what: String,
}

/// Refuses `cfg` if what it builds on the host exceeds the host's limit.
pub fn check(cfg: &SimConfig) -> Result<()> {
    let Some(limit) = host_limit()? else { return Ok(()) };
    check_against(cfg, limit)
}

/// As `check`, with the limit given.
pub fn check_against(cfg: &SimConfig, limit: u64) -> Result<()> {
    let needs = needs(cfg);
    let total: u64 = needs.iter().map(|n| n.bytes).fold(0, u64::saturating_add);
    if total <= limit {
        return Ok(());
    }
    let need = needs.iter().max_by_key(|n| n.bytes).expect("the frame table is always there");
    Err(Error::config(
        need.key.clone(),
        format!(
            "{} would take about {} of host memory ({} in all for this run), more than this host allows \
             ({}; {HOST_MEM_VAR} or --host-mem sets it)",
            need.what,
            size(need.bytes),
            size(total),
            size(limit)
        ),
    ))
}

/// Every large table the configuration asks for: the frame tables (the
/// machine's, each VM's), each core's caches, TLBs, page-walk caches (and
/// a VM's vCPUs' nested TLBs and EPT caches), and the workloads'
/// structures. (Page tables grow with what is mapped, at most one 8-byte
/// entry per mapped frame, and are not counted.)
fn needs(cfg: &SimConfig) -> Vec<Need> {
    let need = |key: String, bytes: u64, what: &str| Need { key, bytes, what: what.to_string() };
    let m = &cfg.machine;
    let frames = |mem: u64| PhysMem::host_bytes(mem / 4096);
    let mut needs =
        vec![need("machine.phys_mem".into(), frames(m.phys_mem.bytes()), "the simulated machine's frame table")];
    if cfg.virt.enabled || cfg.has_vm_tables() {
        // Each VM's guest kernel has a frame table of its own (the one VM
        // of the top-level form, `virt.guest_mem`, too).
        for g in cfg.guests() {
            needs.push(need(g.guest_mem_key, frames(g.guest_mem.bytes()), "a VM's guest frame table"));
        }
    }
    let cores = cfg.nr_cores();
    if m.cache.enabled {
        for (key, bytes) in CacheHierarchy::host_bytes(&m.cache, cores) {
            needs.push(need(key, bytes, "the simulated caches' tags"));
        }
    }
    for (name, bytes) in Tlb::<TlbExtensions>::host_bytes(&m.tlb) {
        needs.push(need(format!("machine.tlb.{name}"), bytes.saturating_mul(cores as u64), "the simulated TLBs"));
    }
    let mut pwc = Pwc::host_bytes(&m.pwc);
    if cfg.virt.enabled {
        pwc = pwc.saturating_add(Pwc::host_bytes(&m.ept_pwc));
        let ntlb = NestedTlb::host_bytes(&m.nested_tlb).saturating_mul(cores as u64);
        needs.push(need("machine.nested_tlb.entries".into(), ntlb, "the simulated nested TLBs"));
    }
    needs.push(need("machine.pwc".into(), pwc.saturating_mul(cores as u64), "the simulated page-walk caches"));
    for (w, table) in cfg.workload_list().iter().zip(cfg.workload_keys()) {
        if let Some(n) = host_need(w) {
            needs.push(Need { key: format!("{table}.{}", n.key), bytes: n.bytes, what: n.what });
        }
    }
    needs
}

/// A size in the largest binary unit that keeps it at 1 or more (so that
/// a small limit reads "64.0 MiB", not "0.1 GiB").
fn size(bytes: u64) -> String {
    let units = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|(_, shift)| bytes >= 1u64 << shift) {
        Some((unit, shift)) => format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} B"),
    }
}

/// The limit: `PAGELAB_HOST_MEM`, else the host's available memory.
pub fn host_limit() -> Result<Option<u64>> {
    if let Ok(text) = std::env::var(HOST_MEM_VAR) {
        return parse_limit(&text).map(Some).map_err(|e| Error::config(HOST_MEM_VAR, e));
    }
    Ok(std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| mem_available(&m)))
}

/// A limit as `PAGELAB_HOST_MEM` or `--host-mem` gives it: a size of at
/// least 1 MiB.
pub fn parse_limit(text: &str) -> std::result::Result<u64, String> {
    let bytes = ByteSize::parse(text.trim())?.bytes();
    if bytes < MIN_LIMIT {
        return Err(format!("{text:?} is below {}, the smallest limit accepted", size(MIN_LIMIT)));
    }
    Ok(bytes)
}

/// `MemAvailable` of a /proc/meminfo text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_config;

    fn cfg(text: &str) -> SimConfig {
        parse_config(text, "<test>", &[]).unwrap()
    }

    #[test]
    fn a_graph_too_large_for_the_host_is_refused_naming_its_key() {
        let c = cfg("[machine]\nphys_mem = \"1GiB\"\n[workload]\nkind = \"graph\"\nscale = 30\n");
        let e = check_against(&c, 16 << 30).unwrap_err().to_string();
        assert!(e.contains("workload.scale"), "{e}");
        assert!(e.contains("a graph of scale 30"), "{e}");
        // Well within: accepted.
        let small = cfg("[machine]\nphys_mem = \"1GiB\"\n[workload]\nkind = \"graph\"\nscale = 10\n");
        check_against(&small, 16 << 30).unwrap();
    }

    #[test]
    fn the_frame_table_counts_too() {
        // 1 TiB of simulated memory: a 2 GiB frame table.
        let c = cfg("[machine]\nphys_mem = \"1TiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1GiB\"\n");
        check_against(&c, 3 << 30).unwrap();
        let e = check_against(&c, 1 << 30).unwrap_err().to_string();
        assert!(e.contains("machine.phys_mem"), "{e}");
    }

    #[test]
    fn a_guests_frame_table_counts_in_either_form() {
        // 1 TiB of host (2.1 GiB of frame table) and a 768 GiB guest (1.6
        // GiB more) under 3 GiB: the guest's table tips it over.
        let host = "[machine]\nphys_mem = \"1TiB\"\n[workload]\nkind = \"gups\"\n";
        check_against(&cfg(host), 3 << 30).unwrap();
        let one_vm = cfg(&format!("{host}[virt]\nenabled = true\nguest_mem = \"768GiB\"\n"));
        let e = check_against(&one_vm, 3 << 30).unwrap_err().to_string();
        assert!(e.contains("machine.phys_mem") && e.contains("3.6 GiB in all"), "{e}");
        let keys: Vec<String> = needs(&one_vm).into_iter().map(|n| n.key).collect();
        assert!(keys.contains(&"virt.guest_mem".to_string()), "{keys:?}");
    }

    #[test]
    fn a_simulated_cache_larger_than_the_host_is_refused_naming_its_key() {
        // The probe: a 64 GiB LLC under a 2 GiB limit (it ran at
        // several GiB of RSS, and died of a failed allocation under a ulimit).
        let c =
            cfg("[machine]\nphys_mem = \"1GiB\"\n[machine.cache.llc]\nsize = \"64GiB\"\n[workload]\nkind = \"gups\"\n");
        let e = check_against(&c, 2 << 30).unwrap_err().to_string();
        assert!(e.contains("machine.cache.llc.size") && e.contains("caches"), "{e}");
        // Switched off, the caches are not built, so not counted.
        let off = cfg("[machine]\nphys_mem = \"1GiB\"\n[machine.cache]\nenabled = false\n\
                       [machine.cache.llc]\nsize = \"64GiB\"\n[workload]\nkind = \"gups\"\n");
        check_against(&off, 2 << 30).unwrap();
    }

    #[test]
    fn tlbs_and_page_walk_caches_count_per_core() {
        // The largest L2 TLB there may be (2^20 entries), under 64 MiB.
        let text = "[machine]\nphys_mem = \"1GiB\"\n[machine.tlb]\nl2_entries = 1048576\nl2_ways = 16\n\
                    [workload]\nkind = \"gups\"\n";
        let e = check_against(&cfg(text), 64 << 20).unwrap_err().to_string();
        assert!(e.contains("machine.tlb.l2_entries"), "{e}");
        let one = needs(&cfg("[workload]\nkind = \"gups\"\n"));
        let two = needs(&cfg("[[workloads]]\nkind = \"gups\"\n[[workloads]]\nkind = \"gups\"\n"));
        let bytes = |n: &[Need], key: &str| n.iter().find(|n| n.key == key).map(|n| n.bytes).unwrap();
        for key in ["machine.tlb.l2_entries", "machine.pwc", "machine.cache.l1d.size"] {
            assert_eq!(bytes(&two, key), 2 * bytes(&one, key), "{key}");
        }
        assert_eq!(bytes(&two, "machine.cache.llc.size"), bytes(&one, "machine.cache.llc.size"), "one LLC");
    }

    #[test]
    fn the_frame_table_estimate_bounds_what_memory_takes() {
        for frames in [1 << 16, 3 * 512 + 17, 1 << 20] {
            let mem = PhysMem::new(frames, 10).unwrap();
            let (est, real) = (PhysMem::host_bytes(frames), mem.metadata_bytes());
            // A bound, and a close one but for the bitmaps' rounding (5 KiB).
            assert!(est >= real && est <= real + real / 20 + (5 << 10), "{frames} frames: estimate {est}, held {real}");
        }
    }

    #[test]
    fn a_limit_below_one_mib_is_refused_and_sizes_read_in_their_unit() {
        // `--host-mem 0` once said "needs 0.0 GiB, more than 0.0 GiB".
        assert!(parse_limit("0").unwrap_err().contains("below 1.0 MiB"));
        assert!(parse_limit("1KiB").is_err());
        assert_eq!(parse_limit("1MiB"), Ok(1 << 20));
        assert_eq!(size(64 << 20), "64.0 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
        assert_eq!(size(100), "100 B");
    }

    #[test]
    fn mem_available_is_read_in_kib() {
        let m = "MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(m), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }
}
