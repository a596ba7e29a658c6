//! Any bytes as a trace of every format (pagelab_core::fuzzing).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pagelab_core::fuzzing::read_as_trace(data, "fuzz.trace"));
