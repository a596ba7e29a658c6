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
    /// Zero of the same kind.
    pub fn zero_like(self) -> Stat {
        match self {
            Stat::Int(_) => Stat::Int(0),
            Stat::Float(_) => Stat::Float(0.0),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Stat::Int(v) => v as f64,
            Stat::Float(v) => v,
        }
    }
}

/// Statistics by name, in name order (deterministic output).
pub type Stats = BTreeMap<String, Stat>;

/// Adds `v` to `sums[key]` (absent: zero): integers stay exact; a float
/// on either side makes the sum a float. (Per-core sums, sampled windows.)
pub fn accumulate(sums: &mut Stats, key: &str, v: Stat) {
    let sum = match (sums.get(key), v) {
        (None, v) => v,
        (Some(&Stat::Int(a)), Stat::Int(b)) => Stat::Int(a + b),
        (Some(&a), b) => Stat::Float(a.as_f64() + b.as_f64()),
    };
    sums.insert(key.to_string(), sum);
}

/// Inserts integer counters under `prefix` (`prefix` + name).
pub fn put_ints(out: &mut Stats, prefix: &str, counters: &[(&str, u64)]) {
    for (name, v) in counters {
        out.insert(format!("{prefix}{name}"), Stat::Int(*v));
    }
}
