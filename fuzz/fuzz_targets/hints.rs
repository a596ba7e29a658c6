//! Any bytes as a Leshy hint file (`os.elastic.hints`), read back from the
//! text its hints write (pagelab_core::fuzzing).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pagelab_core::fuzzing::read_as_hints(data));
