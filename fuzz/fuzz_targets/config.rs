//! Any text as a configuration, parsed and validated.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pagelab_core::fuzzing::read_as_config(data));
