//! `pagelab._pagelab`: the Python bindings of pagelab-core. Each method is
//! one call into the core inside `call`, which releases the GIL, catches
//! panics (none may cross into Python) and converts the core's error enum
//! to the Python exception classes in one place.

mod output;
mod trace;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pagelab_core::config::{parse_config, preset_names, SimConfig};
use pagelab_core::engine::{Simulation as CoreSimulation, Stat, Stats};
use pagelab_core::Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(_pagelab, PagelabError, PyException, "Base class of pagelab's errors.");
create_exception!(_pagelab, ConfigError, PagelabError, "A configuration key is unknown, ill-typed or out of range.");
create_exception!(_pagelab, TraceError, PagelabError, "A trace or input file is corrupt or truncated.");
create_exception!(_pagelab, SimulationError, PagelabError, "The simulated workload or machine failed (exit status 1).");
create_exception!(_pagelab, InternalError, PagelabError, "A bug in pagelab (a Rust panic caught at the boundary).");

fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Config { .. } => ConfigError::new_err(msg),
        Error::Trace { .. } => TraceError::new_err(msg),
        Error::Io { .. } => PagelabError::new_err(msg),
        Error::OutOfMemory(_) | Error::Workload(_) => SimulationError::new_err(msg),
    }
}

/// Set to show where a caught panic happened (`pagelab --debug` sets it).
const DEBUG_ENV: &str = "PAGELAB_DEBUG";

thread_local! {
    /// The location of the last panic on this thread, kept by the hook.
    static PANIC_LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces Rust's default panic message (printed to stderr before the
/// exception, so a caught panic printed two messages) with a hook that only
/// keeps the location: the exception carries the message, and the location
/// when `PAGELAB_DEBUG` is set (which also prints Rust's own message).
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
        PANIC_LOCATION.with(|p| *p.borrow_mut() = at);
        if debug() {
            default(info);
        }
    }));
}

fn debug() -> bool {
    std::env::var_os(DEBUG_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `f` without the GIL, turning errors and panics into exceptions.
fn call<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    // The closure runs on this thread (detach only releases the GIL), so
    // the hook's thread-local location is this panic's.
    let result = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match result {
        Ok(r) => r.map_err(to_py),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            let what = what.lines().next().unwrap_or("").to_string();
            let at = PANIC_LOCATION.with(|p| p.borrow_mut().take());
            let msg = match at {
                Some(at) if debug() => format!("internal error (please report): {what} (at {at})"),
                _ => format!("internal error (please report): {what}"),
            };
            Err(InternalError::new_err(msg))
        }
    }
}

/// Panics inside the boundary, for the tests of the panic hook.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, msg: String) -> PyResult<()> {
    call(py, move || -> Result<(), Error> { panic!("{msg}") })
}

fn stats_dict<'py>(py: Python<'py>, stats: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in stats {
        match v {
            Stat::Int(i) => d.set_item(k, *i)?,
            Stat::Float(f) => d.set_item(k, *f)?,
        }
    }
    Ok(d)
}

/// A simulation built from a TOML configuration.
#[pyclass(module = "pagelab._pagelab")]
struct Simulation {
    /// Python objects may be shared between threads; the simulation is
    /// `Send` but not `Sync`, so a mutex serializes access.
    inner: Mutex<CoreSimulation>,
}

impl Simulation {
    fn sim(&self) -> MutexGuard<'_, CoreSimulation> {
        // A poisoned lock means a panic was caught mid-step; the state is
        // still memory-safe to read, and the caller already got the error.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Simulation {
    /// `Simulation(text, source, overrides)`: `source` names the file in
    /// error messages; `overrides` are `KEY=VALUE` strings.
    #[new]
    fn new(py: Python<'_>, text: String, source: String, overrides: Vec<String>) -> PyResult<Self> {
        let inner = call(py, move || CoreSimulation::new(parse_config(&text, &source, &overrides)?))?;
        Ok(Simulation { inner: Mutex::new(inner) })
    }

    /// Writes every physical reference to `path`: `format` is "pagelab",
    /// "ramulator2" or "dramsim3"; `memory_only` keeps the references
    /// served by memory (see ARCHITECTURE.md and docs/stats.md).
    #[pyo3(signature = (path, format = "pagelab", memory_only = false))]
    fn export_phys(&self, py: Python<'_>, path: PathBuf, format: &str, memory_only: bool) -> PyResult<()> {
        let Some(format) = pagelab_core::engine::ExportFormat::parse(format) else {
            return Err(ConfigError::new_err(format!(
                "unknown export format `{format}`: pagelab, ramulator2 or dramsim3"
            )));
        };
        let mut sim = self.sim();
        let sim = &mut *sim;
        call(py, move || sim.export_phys_as(&path, format, memory_only))
    }

    /// Runs at least `budget` more accesses (or to the end); returns
    /// whether the run finished.
    fn step(&self, py: Python<'_>, budget: u64) -> PyResult<bool> {
        let mut sim = self.sim();
        let sim = &mut *sim;
        call(py, move || sim.step(budget))
    }

    /// (accesses run, accesses expected or None when unknown).
    fn progress(&self) -> (u64, Option<u64>) {
        self.sim().progress()
    }

    fn done(&self) -> bool {
        self.sim().done()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.sim().stats())
    }

    fn timeseries<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.sim().timeseries().iter().map(|s| stats_dict(py, s)).collect()
    }

    /// The configuration with every default written out, as TOML.
    fn resolved_config(&self) -> String {
        self.sim().config().to_toml()
    }

    /// Drops an unfinished export: its temporary file is removed.
    fn discard_export(&self) {
        self.sim().discard_export();
    }

    /// Flushes and closes the physical-reference export.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        let mut sim = self.sim();
        let sim = &mut *sim;
        call(py, move || sim.finish())
    }
}

/// Parses and validates a configuration; returns it resolved, as TOML.
#[pyfunction]
fn resolve_config(py: Python<'_>, text: String, source: String, overrides: Vec<String>) -> PyResult<String> {
    call(py, move || parse_config(&text, &source, &overrides).map(|c: SimConfig| c.to_toml()))
}

/// A fragmentation snapshot (`pagelab frag capture`): free blocks per
/// order, by migratetype, the machine's size, and Linux's indices and F_i
/// for every order. `name` names the file in errors (default: `path`; a
/// capture is checked under its temporary name).
#[pyfunction]
#[pyo3(signature = (path, name = None))]
fn frag_snapshot<'py>(py: Python<'py>, path: String, name: Option<String>) -> PyResult<Bound<'py, PyDict>> {
    use pagelab_core::phys::{fragmentation as f, snapshot::Snapshot};
    let name = name.unwrap_or_else(|| path.clone());
    let snap = call(py, {
        let (path, name) = (path.clone(), name.clone());
        move || {
            let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&name, e))?;
            Snapshot::parse(&text, &name)
        }
    })?;
    let d = PyDict::new(py);
    d.set_item("path", path)?;
    d.set_item("frames", snap.frames())?;
    d.set_item("free", snap.free.clone())?;
    d.set_item("free_unmovable", snap.free_by_type[0].clone())?;
    d.set_item("free_movable", snap.free_by_type[1].clone())?;
    d.set_item("free_reclaimable", snap.free_by_type[2].clone())?;
    d.set_item("pageblocks", snap.pageblocks.to_vec())?;
    let orders = 0..snap.free.len() as u8;
    d.set_item(
        "fragmentation_index",
        orders.clone().map(|o| f::fragmentation_index(&snap.free, o)).collect::<Vec<_>>(),
    )?;
    d.set_item("unusable_index", orders.map(|o| f::unusable_free_index(&snap.free, o)).collect::<Vec<_>>())?;
    d.set_item("fi", f::fi_from(&snap.free, snap.frames()))?;
    Ok(d)
}

/// The speed benchmark's cases: (name, target accesses per second).
#[pyfunction]
fn bench_cases() -> Vec<(&'static str, f64)> {
    pagelab_core::engine::bench::CASES.iter().map(|(name, target, _)| (*name, *target)).collect()
}

/// Measured accesses per second of one benchmark case.
#[pyfunction]
fn bench_case(py: Python<'_>, name: String, footprint: u64, accesses: u64) -> PyResult<f64> {
    use pagelab_core::engine::bench::{run_case, CASES};
    let Some((_, _, overrides)) = CASES.iter().find(|c| c.0 == name) else {
        return Err(ConfigError::new_err(format!("unknown benchmark case `{name}`")));
    };
    call(py, move || run_case(overrides, footprint, accesses))
}

/// Student's t quantile for a two-sided 95% interval, `dof` degrees of
/// freedom (the one the sampled windows' `sample.*.ci95` use).
#[pyfunction]
fn student_t_975(dof: u64) -> f64 {
    pagelab_core::stat::student_t_975(dof)
}

#[pyfunction]
fn presets() -> Vec<&'static str> {
    preset_names()
}

/// `preset_about(name) -> (machine, source)`: what a preset models and
/// where its values come from; None for an unknown name.
#[pyfunction]
fn preset_about(name: &str) -> Option<(&'static str, &'static str)> {
    pagelab_core::config::preset_about(name)
}

/// The host memory a run may use (`PAGELAB_HOST_MEM`, else the host's
/// available memory), in bytes; None where neither is known.
#[pyfunction]
fn host_memory_limit(py: Python<'_>) -> PyResult<Option<u64>> {
    call(py, pagelab_core::engine::host_budget::host_limit)
}

/// Every statistic a run can emit, one per line (name, unit, what it
/// counts, tab-separated), or docs/stats.md with `markdown`.
#[pyfunction]
fn stat_list(markdown: bool) -> String {
    if markdown {
        pagelab_core::engine::stats_list::markdown()
    } else {
        pagelab_core::engine::stats_list::text()
    }
}

/// `parse_host_mem(text) -> bytes`: a limit as `--host-mem` takes it (a
/// size of at least 1 MiB); ValueError saying why otherwise.
#[pyfunction]
fn parse_host_mem(text: &str) -> PyResult<u64> {
    pagelab_core::engine::host_budget::parse_limit(text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(pagelab_core::error::cap_quoted(&e)))
}

/// `cap_value(text) -> str`: a user's value as error messages quote it,
/// cut past 60 characters with its length (the core's one rule, for the
/// messages the Python side makes).
#[pyfunction]
fn cap_value(text: &str) -> String {
    pagelab_core::error::cap_value(text)
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _pagelab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    install_panic_hook();
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_about, m)?)?;
    m.add_function(wrap_pyfunction!(student_t_975, m)?)?;
    m.add_function(wrap_pyfunction!(bench_cases, m)?)?;
    m.add_function(wrap_pyfunction!(frag_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(bench_case, m)?)?;
    m.add_function(wrap_pyfunction!(host_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(parse_host_mem, m)?)?;
    m.add_function(wrap_pyfunction!(cap_value, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(stat_list, m)?)?;
    trace::register(m)?;
    output::register(m)?;
    m.add("PagelabError", py.get_type::<PagelabError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
