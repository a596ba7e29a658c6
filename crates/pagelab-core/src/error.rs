//! The one error type of the core. Every fallible public function returns
//! [`Result`]; the Python bindings convert each variant to one exception
//! class in one place (`crates/pagelab-py`).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration key is unknown, ill-typed or out of range. `key` is the
    /// dotted path (`machine.tlb.l2_ways`).
    #[error("configuration error at `{key}`: {msg}")]
    Config { key: String, msg: String },

    /// A trace or input file is corrupt or truncated. `offset` is a byte
    /// offset (or a line number, as `msg` says).
    #[error("{}: at {offset}: {msg}", path.display())]
    Trace { path: PathBuf, offset: u64, msg: String },

    /// The simulated machine ran out of physical memory.
    #[error("simulated machine out of memory: {0} (raise machine.phys_mem or lower workload.footprint)")]
    OutOfMemory(String),

    /// A workload did something the simulated OS refuses (an access outside
    /// every VMA with automatic VMAs off, an overlapping mmap...).
    #[error("workload error: {0}")]
    Workload(String),

    #[error("I/O error on {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn config(key: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Config { key: key.into(), msg: msg.into() }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}
