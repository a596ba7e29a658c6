//! Any text as a fragmentation snapshot, applied to a small machine.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pagelab_core::fuzzing::read_as_snapshot(&String::from_utf8_lossy(data)));
