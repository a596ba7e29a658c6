//! The core's output helper (`pagelab_core::outfile`) for the Python
//! package, so that every file pagelab writes, from either side, is checked,
//! written whole or not at all, and cleaned up on a signal the same way:
//! `OutputFile`, `TempGuard` and `check_output`.

use std::path::PathBuf;
use std::sync::Mutex;

use pagelab_core::outfile::{self, cleanup, OutFile};
use pyo3::prelude::*;

use crate::call;

/// `OutputFile(path)`: refuses a target that is not absent or a regular
/// file, and creates a temporary file beside it (`.temp`), which Python
/// writes by name; `commit()` renames it over the target, `discard()` (or
/// dropping it) removes it.
#[pyclass(module = "pagelab._pagelab")]
struct OutputFile {
    inner: Mutex<Option<OutFile>>,
    temp: PathBuf,
}

#[pymethods]
impl OutputFile {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let out = call(py, move || OutFile::create(&path).map(|(out, _file)| out))?;
        Ok(OutputFile { temp: out.temp_path().to_path_buf(), inner: Mutex::new(Some(out)) })
    }

    #[getter]
    fn temp(&self) -> PathBuf {
        self.temp.clone()
    }

    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let out = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        match out {
            Some(out) => call(py, move || out.commit()),
            None => Ok(()),
        }
    }

    fn discard(&self) {
        drop(self.inner.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// `TempGuard(path, directory=False)`: registers a temporary path for
/// removal should a signal end the process; `release()` unregisters it.
#[pyclass(module = "pagelab._pagelab")]
struct TempGuard {
    inner: Mutex<Option<cleanup::Guard>>,
}

#[pymethods]
impl TempGuard {
    #[new]
    #[pyo3(signature = (path, directory = false))]
    fn new(path: PathBuf, directory: bool) -> Self {
        let guard = if directory { cleanup::Guard::dir(&path) } else { cleanup::Guard::file(&path) };
        TempGuard { inner: Mutex::new(Some(guard)) }
    }

    fn release(&self) {
        drop(self.inner.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// `check_output(path, inputs=[])`: raises what writing `path` would
/// (not a regular file, not writable, one of `inputs`) before any work is
/// done.
#[pyfunction]
#[pyo3(signature = (path, inputs = Vec::new()))]
fn check_output(py: Python<'_>, path: PathBuf, inputs: Vec<PathBuf>) -> PyResult<()> {
    call(py, move || {
        outfile::check_not_input(&path, &inputs.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
        outfile::check_target(&path).map(|_| ())
    })
}

/// `remove_temporary_files()`: removes every temporary file and directory
/// still registered (what a signal's handler does), for the command line's
/// way out on Ctrl-C, when a call it abandoned may still hold some.
#[pyfunction]
fn remove_temporary_files() {
    cleanup::remove_all();
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    cleanup::install();
    m.add_class::<OutputFile>()?;
    m.add_class::<TempGuard>()?;
    m.add_function(wrap_pyfunction!(check_output, m)?)?;
    m.add_function(wrap_pyfunction!(remove_temporary_files, m)?)?;
    Ok(())
}
