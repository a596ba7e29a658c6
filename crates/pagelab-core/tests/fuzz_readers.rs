//! The readers of files users give pagelab (`pagelab_core::fuzzing`), fed
//! arbitrary bytes and mutations of valid seeds. Each must answer Ok or a
//! clear error, never panic or hang (a hang fails the suite's time
//! budget). 2,048 cases per reader keep this to seconds in `make test`;
//! `make fuzz` (cargo-fuzz, fuzz/) runs the same readers for as long as it
//! is given.

use std::path::Path;

use pagelab_core::config::parse_config;
use pagelab_core::fuzzing::*;
use pagelab_core::phys::snapshot::Snapshot;
use pagelab_core::trace::{self, TraceFormat};
use proptest::prelude::*;

/// Mutations of a seed: overwrite, insert and delete bytes, truncate.
fn mutated(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = seed.len();
    (prop::collection::vec((0..len.max(1), any::<u8>(), 0u8..3), 1..8), 0..=len).prop_map(move |(edits, cut)| {
        let mut b = seed.clone();
        for (at, byte, op) in edits {
            let at = at.min(b.len());
            match op {
                0 if at < b.len() => b[at] = byte,
                1 => b.insert(at, byte),
                _ if at < b.len() => {
                    b.remove(at);
                }
                _ => {}
            }
        }
        b.truncate(cut.max(1).min(b.len()));
        b
    })
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_as_a_trace(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        read_as_trace(&bytes, "arbitrary");
    }

    #[test]
    fn mutated_native_traces(bytes in mutated(native_seed())) {
        read_as_trace(&bytes, "native.pgl");
    }

    #[test]
    fn mutated_champsim_traces(bytes in mutated(champsim_seed())) {
        read_as_trace(&bytes, "champsim.trace");
    }

    #[test]
    fn mutated_lackey_output(bytes in mutated(LACKEY.as_bytes().to_vec())) {
        read_as_trace(&bytes, "lackey.txt");
    }

    #[test]
    fn mutated_snapshots(bytes in mutated(SNAPSHOT.as_bytes().to_vec())) {
        read_as_snapshot(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_snapshot_text(text in "[ -~\n]{0,600}") {
        read_as_snapshot(&text);
    }

    #[test]
    fn mutated_configurations(bytes in mutated(CONFIG.as_bytes().to_vec())) {
        read_as_config(&bytes);
    }

    #[test]
    fn mutated_hint_files(bytes in mutated(HINTS.as_bytes().to_vec())) {
        read_as_hints(&bytes);
    }

    #[test]
    fn arbitrary_hint_text(text in "[0-9a-fx#\\- \n]{0,300}") {
        read_as_hints(text.as_bytes());
    }

    #[test]
    fn overrides_of_any_key(key in "[a-z_.]{1,30}", value in "[ -~]{0,20}") {
        let _ = parse_config(CONFIG, "fuzz.toml", &[format!("{key}={value}")]);
    }
}

#[test]
fn the_seeds_are_valid() {
    // So that mutations start from inputs the readers accept.
    let dir = temp_dir();
    for (name, bytes, format) in [
        ("s.pgl", native_seed(), TraceFormat::Native),
        ("s.champsim", champsim_seed(), TraceFormat::Champsim),
        ("s.lackey", LACKEY.as_bytes().to_vec(), TraceFormat::Lackey),
    ] {
        let path: &Path = &dir.join(name);
        std::fs::write(path, &bytes).unwrap();
        let info = trace::info(path, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(info.accesses > 0, "{name}");
        trace::info(path, Some(format)).unwrap();
    }
    Snapshot::parse(SNAPSHOT, "s.txt").unwrap();
    parse_config(CONFIG, "s.toml", &[]).unwrap();
    let hints_file = dir.join("s.hints");
    std::fs::write(&hints_file, HINTS).unwrap();
    let hints = pagelab_core::systems::elastic::hints::Hints::read_file(&hints_file.to_string_lossy(), "k").unwrap();
    assert_eq!(hints.len(), 3, "the 4 KiB range is skipped");
}
