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

/// The population standard deviation of `counts` (e.g. pages per color;
/// 0 for none).
pub fn population_stddev(counts: &[u64]) -> f64 {
    if counts.is_empty() {
        return 0.0;
    }
    let n = counts.len() as f64;
    let mean = counts.iter().sum::<u64>() as f64 / n;
    let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / n;
    var.sqrt()
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

/// One statistic as declared beside the counter it reports: its name, its
/// unit, one line saying what it counts, where its copies appear, and
/// whether other tools rely on it. Every statistic a run can emit is
/// declared (`pagelab stats --list`, docs/stats.md); a test runs the
/// digest's runs and fails on a name emitted but not declared, or
/// declared but never emitted.
///
/// In a name, an upper-case part stands for what varies: `N` a number
/// (`coreN`, `sliceN`), `LEVEL` a cache level, `NAME` a memory tier,
/// `ARRAY` a TLB array, `KIND` a fault kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatDecl {
    pub name: &'static str,
    pub unit: Unit,
    pub what: &'static str,
    pub scope: Scope,
    /// Part of a contract other tools rely on (bold in docs/stats.md).
    pub contract: bool,
}

/// What a statistic counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Cycles,
    Bytes,
    /// 4 KiB pages (or frames).
    Pages,
    /// A ratio or share (dimensionless).
    Ratio,
    /// Per 1000 instructions.
    PerKilo,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Cycles => "cycles",
            Unit::Bytes => "bytes",
            Unit::Pages => "4 KiB pages",
            Unit::Ratio => "ratio",
            Unit::PerKilo => "per 1000 instructions",
        }
    }
}

/// Where a statistic's copies appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A core's counter: summed over the cores, and each core's own under
    /// `coreN.` (with several VMs, each VM's sum under `vmN.` and each
    /// vCPU's under `vmN.coreM.`).
    Core,
    /// A core's counter that the hypervisor's report (`host.`) also
    /// carries, at zero: the TLB extensions' counters, which every OS
    /// report lists so that the host's names match a native run's.
    CoreAndHost,
    /// A core's only: under `coreN.` (`vmN.coreM.`), with no sum.
    PerCore,
    /// Of the run (or, with several VMs, of each VM under `vmN.`): ratios
    /// and times worked out from the sums.
    Run,
    /// The OS's (a native run's kernel, a guest's): also the hypervisor's
    /// under `host.`, and with several VMs each guest's under `vmN.`.
    Os,
    /// Machine-wide, once.
    Machine,
}

impl StatDecl {
    /// A count of a core's (`Scope::Core`).
    pub const fn count(name: &'static str, what: &'static str) -> StatDecl {
        StatDecl { name, unit: Unit::Count, what, scope: Scope::Core, contract: false }
    }
    pub const fn unit(self, unit: Unit) -> StatDecl {
        StatDecl { unit, ..self }
    }
    pub const fn cycles(self) -> StatDecl {
        self.unit(Unit::Cycles)
    }
    pub const fn bytes(self) -> StatDecl {
        self.unit(Unit::Bytes)
    }
    pub const fn pages(self) -> StatDecl {
        self.unit(Unit::Pages)
    }
    pub const fn ratio(self) -> StatDecl {
        self.unit(Unit::Ratio)
    }
    pub const fn scope(self, scope: Scope) -> StatDecl {
        StatDecl { scope, ..self }
    }
    /// The OS's (`Scope::Os`).
    pub const fn os(self) -> StatDecl {
        self.scope(Scope::Os)
    }
    pub const fn machine(self) -> StatDecl {
        self.scope(Scope::Machine)
    }
    pub const fn contract(self) -> StatDecl {
        StatDecl { contract: true, ..self }
    }

    /// The full names its copies may have (patterns as its name is).
    pub fn forms(&self) -> Vec<String> {
        let n = self.name;
        match self.scope {
            Scope::Core => vec![n.into(), format!("coreN.{n}"), format!("vmN.{n}"), format!("vmN.coreN.{n}")],
            Scope::CoreAndHost => {
                vec![n.into(), format!("coreN.{n}"), format!("vmN.{n}"), format!("vmN.coreN.{n}"), format!("host.{n}")]
            }
            Scope::PerCore => vec![format!("coreN.{n}"), format!("vmN.coreN.{n}")],
            Scope::Run => vec![n.into(), format!("vmN.{n}")],
            Scope::Os => vec![n.into(), format!("host.{n}"), format!("vmN.{n}")],
            Scope::Machine => vec![n.into()],
        }
    }

    /// Whether `stat` (an emitted name) is one of its copies.
    pub fn matches(&self, stat: &str) -> bool {
        self.forms().iter().any(|form| name_matches(form, stat))
    }
}

/// Whether `name` fits `pattern`, part by part: an upper-case part (`N`,
/// `LEVEL`...) stands for any part, `N` and a trailing `N` (`sliceN`) for
/// digits.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let (p, s): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), name.split('.').collect());
    p.len() == s.len() && p.iter().zip(&s).all(|(p, s)| part_matches(p, s))
}

fn part_matches(p: &str, s: &str) -> bool {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if p == "N" {
        return digits(s);
    }
    if !p.is_empty() && p.bytes().all(|b| b.is_ascii_uppercase()) {
        return !s.is_empty();
    }
    match p.strip_suffix('N') {
        Some(head) if head.bytes().all(|b| b.is_ascii_lowercase()) && !head.is_empty() => {
            s.strip_prefix(head).is_some_and(digits)
        }
        _ => p == s,
    }
}

/// Statistics declared together, under one heading of docs/stats.md.
#[derive(Debug, Clone, Copy)]
pub struct StatTable {
    pub section: Section,
    pub stats: &'static [StatDecl],
}

/// The headings of docs/stats.md, in its order (their text is the
/// listing's: `engine::stats_list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Accesses,
    Translation,
    Faults,
    Systems,
    Caches,
    Time,
    Sampling,
    Virtualization,
    Contents,
    Ksm,
    Memory,
    Tiers,
    Dram,
    PageCache,
    Programs,
    Os,
}
