//! Python bindings of the trace tools: `trace_convert`, `trace_info` and
//! `trace_events` (the `pagelab trace convert|info|events` commands call
//! them).

use std::path::PathBuf;

use pagelab_core::trace;
use pagelab_core::workload::MapEvent;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::types::PyList;

use crate::call;

/// `trace_convert(src, dst) -> dict`: any readable trace to the native
/// format; returns records, accesses (data and instruction fetches, a
/// modify as a load and a store), ifetches, instructions and bytes written.
#[pyfunction]
fn trace_convert<'py>(py: Python<'py>, src: PathBuf, dst: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let s = call(py, || trace::convert(&src, &dst, None))?;
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    d.set_item("accesses", s.accesses)?;
    d.set_item("ifetches", s.ifetches)?;
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
    d.set_item("partial_maps", i.partial_maps)?;
    let r = PyDict::new(py);
    r.set_item("sampled", i.reuse.sampled)?;
    r.set_item("cold", i.reuse.cold)?;
    r.set_item("median", i.reuse.median)?;
    r.set_item("p90", i.reuse.p90)?;
    d.set_item("reuse", r)?;
    Ok(d)
}

/// `trace_events(path) -> list[dict]`: the mapping events, in order: `at`
/// (accesses before it, fetches included), `kind` ("mmap", "munmap",
/// "mprotect"), `start`, `len`, `writable` (None for munmap), `name`
/// (mmap only, else None).
#[pyfunction]
fn trace_events<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let events = call(py, || trace::map_events(&path, None))?;
    let out = PyList::empty(py);
    for (at, e) in events {
        let d = PyDict::new(py);
        d.set_item("at", at)?;
        let (kind, start, len, writable, name) = match e {
            MapEvent::Mmap { start, len, writable, name } => ("mmap", start, len, Some(writable), Some(name)),
            MapEvent::Munmap { start, len } => ("munmap", start, len, None, None),
            MapEvent::Mprotect { start, len, writable } => ("mprotect", start, len, Some(writable), None),
        };
        d.set_item("kind", kind)?;
        d.set_item("start", start.raw())?;
        d.set_item("len", len)?;
        d.set_item("writable", writable)?;
        d.set_item("name", name)?;
        out.append(d)?;
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_events, m)?)?;
    Ok(())
}
