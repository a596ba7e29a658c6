//! Writes the fuzz targets' starting corpus (valid seeds) under the
//! directory given: `make fuzz` runs it before cargo-fuzz.
fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus".into());
    pagelab_core::fuzzing::write_seeds(std::path::Path::new(&dir))
}
