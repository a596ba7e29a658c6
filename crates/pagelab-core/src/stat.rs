//! One statistic and the flat map of them (layer 1): every layer reports
//! its counters as `name -> Stat`, so the OS and the systems can name
//! their own statistics without knowing the engine that collects them.

use std::collections::BTreeMap;

/// One statistic: counts stay integers so sums are exact.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Stat {
    Int(u64),
    Float(f64),
}

impl Stat {
    pub fn as_f64(self) -> f64 {
        match self {
            Stat::Int(v) => v as f64,
            Stat::Float(v) => v,
        }
    }
}

/// Statistics by name, in name order (deterministic output).
pub type Stats = BTreeMap<String, Stat>;

/// Inserts integer counters under `prefix` (`prefix` + name).
pub fn put_ints(out: &mut Stats, prefix: &str, counters: &[(&str, u64)]) {
    for (name, v) in counters {
        out.insert(format!("{prefix}{name}"), Stat::Int(*v));
    }
}
