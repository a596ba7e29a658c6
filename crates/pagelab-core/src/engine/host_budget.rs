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
use crate::units::ByteSize;
use crate::workload::host_need;

/// The environment variable that sets the limit.
pub const HOST_MEM_VAR: &str = "PAGELAB_HOST_MEM";

/// The host bytes one 4 KiB frame of simulated memory takes.
const FRAME_TABLE_BYTES: u64 = 8;

/// Refuses `cfg` if what it builds on the host exceeds the host's limit.
pub fn check(cfg: &SimConfig) -> Result<()> {
    let Some(limit) = host_limit()? else { return Ok(()) };
    check_against(cfg, limit)
}

/// As `check`, with the limit given.
pub fn check_against(cfg: &SimConfig, limit: u64) -> Result<()> {
    let frames = cfg.machine.phys_mem.bytes() / 4096 * FRAME_TABLE_BYTES;
    let mut needs = vec![("machine.phys_mem".to_string(), frames, "the simulated machine's frame table".to_string())];
    if cfg.has_vm_tables() {
        // Each VM's guest kernel has a frame table of its own.
        for g in cfg.guests() {
            let bytes = g.guest_mem.bytes() / 4096 * FRAME_TABLE_BYTES;
            needs.push((g.guest_mem_key, bytes, "a VM's guest frame table".to_string()));
        }
    }
    for (w, table) in cfg.workload_list().iter().zip(cfg.workload_keys()) {
        if let Some(n) = host_need(w) {
            needs.push((format!("{table}.{}", n.key), n.bytes, n.what));
        }
    }
    let total: u64 = needs.iter().map(|n| n.1).fold(0, u64::saturating_add);
    if total <= limit {
        return Ok(());
    }
    let (key, bytes, what) = needs.iter().max_by_key(|n| n.1).expect("the frame table is always there");
    Err(Error::config(
        key.clone(),
        format!(
            "{what} needs about {} of host memory ({} in all for this run), more than this host allows \
             ({}; {HOST_MEM_VAR} or --host-mem sets it)",
            gib(*bytes),
            gib(total),
            gib(limit)
        ),
    ))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The limit: `PAGELAB_HOST_MEM`, else the host's available memory.
pub fn host_limit() -> Result<Option<u64>> {
    if let Ok(text) = std::env::var(HOST_MEM_VAR) {
        let size = ByteSize::parse(text.trim()).map_err(|e| Error::config(HOST_MEM_VAR, e))?;
        return Ok(Some(size.bytes()));
    }
    Ok(std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| mem_available(&m)))
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
    fn mem_available_is_read_in_kib() {
        let m = "MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(m), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }
}
