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

/// Student's t quantile at 0.975 (a two-sided 95% interval) for `dof`
/// degrees of freedom (sampled windows; the experiments' `_ci95` columns
/// through the extension): the usual table to 30, then the Cornish-Fisher
/// expansion around the normal quantile (within 0.001 of the table at 30).
pub fn student_t_975(dof: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match dof {
        0 => f64::INFINITY,
        1..=30 => TABLE[dof as usize - 1],
        _ => {
            let (z, v) = (1.959_963_984_540_054_f64, dof as f64);
            z + (z.powi(3) + z) / (4.0 * v) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}
