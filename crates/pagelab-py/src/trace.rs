//! Python bindings of the trace tools: `trace_convert` and `trace_info`
//! (the `pagelab trace convert|info` commands call them).

use std::path::PathBuf;

use pagelab_core::trace;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::call;

/// `trace_convert(src, dst) -> dict`: any readable trace to the native
/// format; returns records, accesses, instructions and bytes written.
#[pyfunction]
fn trace_convert<'py>(py: Python<'py>, src: PathBuf, dst: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let s = call(py, || trace::convert(&src, &dst, None))?;
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    d.set_item("accesses", s.accesses)?;
    d.set_item("instructions", s.instructions)?;
    d.set_item("bytes", s.bytes)?;
    Ok(d)
}

/// `trace_info(path) -> dict`: counts, footprint, pages touched and the
/// reuse-distance summary (a nested dict under "reuse").
#[pyfunction]
fn trace_info<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let i = call(py, || trace::info(&path, None))?;
    let d = PyDict::new(py);
    d.set_item("format", &i.format)?;
    d.set_item("compression", &i.compression)?;
    for (k, v) in [
        ("instructions", i.instructions),
        ("accesses", i.accesses),
        ("loads", i.loads),
        ("stores", i.stores),
        ("modifies", i.modifies),
        ("ifetches", i.ifetches),
        ("map_events", i.map_events),
        ("footprint", i.footprint),
        ("pages_4k", i.pages_4k),
        ("pages_2m", i.pages_2m),
        ("ifetch_pages_4k", i.ifetch_pages_4k),
    ] {
        d.set_item(k, v)?;
    }
    let r = PyDict::new(py);
    r.set_item("sampled", i.reuse.sampled)?;
    r.set_item("cold", i.reuse.cold)?;
    r.set_item("median", i.reuse.median)?;
    r.set_item("p90", i.reuse.p90)?;
    d.set_item("reuse", r)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    Ok(())
}
