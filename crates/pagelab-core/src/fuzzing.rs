//! Entry points for fuzzing the readers of files users give pagelab:
//! native, ChampSim and lackey traces (with Valgrind's system-call lines),
//! fragmentation snapshots, configurations and Leshy's hint files. Each takes arbitrary bytes
//! and must return, whatever they are: Ok or a clear error inside, never a
//! panic or a hang. Used by the property tests in `tests/fuzz_readers.rs`
//! (in `make test`) and by the cargo-fuzz targets in `fuzz/` (`make fuzz`).
//! Valid seeds for mutation are here too.

use std::path::PathBuf;

use crate::config::parse_config;
use crate::phys::snapshot::Snapshot;
use crate::phys::PhysMem;
use crate::systems::elastic::hints::Hints;
use crate::trace::{self, TraceFormat};

pub const LACKEY: &str = "==1234== Lackey, an example Valgrind tool\n\
SYSCALL[1234,1](9) sys_mmap ( 0x0, 8192, 3, 34, 4294967295, 0 ) --> [pre-success] Success(0x4a2a000)\n\
I  04222cac,3\n L 04a2a000,8\n S 04a2a008,8\n M 04a2b000,4\nI  04222caf,2\n\
SYSCALL[1234,1](11) sys_munmap ( 0x4a2a000, 8192 )[sync] --> Success(0x0)\n";

pub const SNAPSHOT: &str = "== /proc/buddyinfo
Node 0, zone   Normal    842   1511    705    184     97     22    623    448    148    227   1118
== /proc/pagetypeinfo
Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone   Normal, type    Unmovable    472    343    290      0     44     11      3      2      4      0      0
Node    0, zone   Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118
Node    0, zone   Normal, type  Reclaimable    370   1168    415    183     52     11      4      2      3      1      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate
Node 0, zone   Normal           44         2992          100            0            0
";

/// A hint file as the artifact's Leshy writes it: one aligned range a line.
pub const HINTS: &str = "0x7f0000000000-0x7f0002000000\n0x7f0002000000-0x7f0002200000\n# a comment\n\
0x7f0002200000-0x7f0002210000\n0x7f0002210000-0x7f0002211000\n";

pub const CONFIG: &str = "[machine]\nphys_mem = \"64MiB\"\n[os]\npolicy = \"thp\"\n\
[os.fragmentation]\ntarget = 0.5\n[workload]\nkind = \"gups\"\nfootprint = \"8MiB\"\naccesses = 1000\n";

/// ChampSim's 64-byte records: ip, branch flags, registers, then two
/// destination and four source memory addresses.
pub fn champsim_seed() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..8u64 {
        out.extend_from_slice(&(0x401000 + 4 * i).to_le_bytes());
        out.extend_from_slice(&[0, 0, 1, 0, 2, 3, 0, 0]);
        let addrs = [if i % 2 == 0 { 0x7fff_0000 + 64 * i } else { 0 }, 0, 0x6000_0000 + 8 * i, 0, 0, 0];
        for a in addrs {
            out.extend_from_slice(&a.to_le_bytes());
        }
    }
    out
}

/// A directory of this thread's own for the files the readers open (test
/// threads run side by side).
pub fn temp_dir() -> PathBuf {
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let dir = std::env::temp_dir().join(format!("pagelab-fuzz-{}-{thread}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A native trace converted from the lackey seed (the real writer's bytes).
pub fn native_seed() -> Vec<u8> {
    let dir = temp_dir();
    let (src, dst) = (dir.join("seed.lackey"), dir.join("seed.pgl"));
    std::fs::write(&src, LACKEY).unwrap();
    trace::convert(&src, &dst, Some(TraceFormat::Lackey)).unwrap();
    std::fs::read(&dst).unwrap()
}

/// Reads `bytes` as a trace of every format and as detected: each reader
/// either succeeds or says what is wrong.
pub fn read_as_trace(bytes: &[u8], name: &str) {
    let dir = temp_dir();
    let src = dir.join(name);
    std::fs::write(&src, bytes).unwrap();
    let formats = [
        None,
        Some(TraceFormat::Native),
        Some(TraceFormat::Champsim),
        Some(TraceFormat::ChampsimCloudsuite),
        Some(TraceFormat::Lackey),
    ];
    for format in formats {
        let _ = trace::info(&src, format);
        let _ = trace::map_events(&src, format);
        let dst = dir.join(format!("{name}.out"));
        let _ = std::fs::remove_file(&dst);
        if trace::convert(&src, &dst, format).is_err() {
            // A failed conversion leaves no output behind.
            assert!(!dst.exists(), "a failed conversion left {}", dst.display());
        }
    }
}

/// Parses `text` as a fragmentation snapshot and, if it parses, applies
/// it to a small machine (where the rounding of block counts once hung).
pub fn read_as_snapshot(text: &str) {
    if let Ok(s) = Snapshot::parse(text, "fuzz.txt") {
        let mut mem = PhysMem::new(64 * 512, 10).unwrap();
        let _ = s.apply(&mut mem, 1);
    }
}

/// Parses and validates `bytes` as a configuration (not run: a valid one
/// may legitimately run for hours), and estimates what it would take on
/// the host (the budget's arithmetic must not overflow).
pub fn read_as_config(bytes: &[u8]) {
    if let Ok(cfg) = parse_config(&String::from_utf8_lossy(bytes), "fuzz.toml", &[]) {
        let _ = crate::engine::host_budget::check_against(&cfg, 1 << 30);
    }
}

/// Reads `bytes` as a hint file (`os.elastic.hints`); hints that parse
/// must read back the same from the text they write.
pub fn read_as_hints(bytes: &[u8]) {
    let path = temp_dir().join("fuzz.hints");
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_string_lossy();
    if let Ok(hints) = Hints::read_file(&path, "os.elastic.hints") {
        let again = Hints::parse(hints.to_text().lines(), "again").expect("written hints read back");
        assert_eq!(again.regions().collect::<Vec<_>>(), hints.regions().collect::<Vec<_>>());
    }
}

/// Writes the valid seeds as a starting corpus: `dir/trace/`,
/// `dir/snapshot/`, `dir/config/`, `dir/hints/`, one directory per fuzz target.
pub fn write_seeds(dir: &std::path::Path) -> std::io::Result<()> {
    let seeds: [(&str, &str, Vec<u8>); 6] = [
        ("trace", "native.pgl", native_seed()),
        ("trace", "champsim.bin", champsim_seed()),
        ("trace", "lackey.txt", LACKEY.as_bytes().to_vec()),
        ("snapshot", "snapshot.txt", SNAPSHOT.as_bytes().to_vec()),
        ("config", "config.toml", CONFIG.as_bytes().to_vec()),
        ("hints", "hints.txt", HINTS.as_bytes().to_vec()),
    ];
    for (target, name, bytes) in seeds {
        std::fs::create_dir_all(dir.join(target))?;
        std::fs::write(dir.join(target).join(name), bytes)?;
    }
    Ok(())
}
