//! The one place where each [`ftlsim::Error`] kind becomes its own Python
//! exception class. The classes live in `ftlsim/errors.py` (so they can also
//! inherit from `OSError`, `FileNotFoundError`, `ValueError` or `LookupError`); each carries
//! the variant's fields as attributes, and its message is the CLI's line.

use ftlsim::Error;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| build(py, &e).unwrap_or_else(|failed| failed))
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let attrs = PyDict::new(py);
    let msg = e.to_string();
    let class = match e {
        Error::Config { key, reason } => {
            attrs.set_item("key", key)?;
            attrs.set_item("reason", reason)?;
            "ConfigError"
        }
        Error::Trace { file, line, reason } => {
            attrs.set_item("file", file)?;
            attrs.set_item("line", line)?;
            attrs.set_item("reason", reason)?;
            "TraceError"
        }
        Error::Workload { key, reason } => {
            attrs.set_item("key", key)?;
            attrs.set_item("reason", reason)?;
            "WorkloadError"
        }
        Error::OutOfRange { source_name, request, start, end, capacity } => {
            attrs.set_item("source", source_name)?;
            attrs.set_item("request", request)?;
            attrs.set_item("start", start)?;
            attrs.set_item("end", end)?;
            attrs.set_item("capacity", capacity)?;
            "OutOfRangeError"
        }
        Error::Physics(_) => "PhysicsError",
        Error::Invariant { ftl, reason } => {
            attrs.set_item("ftl", ftl)?;
            attrs.set_item("reason", reason)?;
            "InvariantError"
        }
        Error::DeviceFull(_) => "DeviceFullError",
        Error::WornOut { block, endurance, mean_erases } => {
            attrs.set_item("block", block)?;
            attrs.set_item("endurance", endurance)?;
            attrs.set_item("mean_erases", mean_erases)?;
            "WornOutError"
        }
        Error::Io { path, source } => {
            // OSError's own constructor (errno, strerror, filename) sets its
            // attributes, so `except FileNotFoundError` code sees a normal one.
            let class = if source.kind() == std::io::ErrorKind::NotFound { "NotFoundError" } else { "IoError" };
            let args = (source.raw_os_error().unwrap_or(0), source.to_string(), path.display().to_string());
            return instantiate(py, class, args.into_pyobject(py)?, &attrs);
        }
        Error::Unknown { what, name, available } => {
            attrs.set_item("what", what)?;
            attrs.set_item("name", name)?;
            attrs.set_item("available", available.split(", ").collect::<Vec<_>>())?;
            "UnknownNameError"
        }
        Error::Interrupted => "InterruptedRunError",
        // Kinds added after this file was written surface as the base class
        // until they get their own.
        #[allow(unreachable_patterns)]
        _ => "FtlsimError",
    };
    instantiate(py, class, PyTuple::new(py, [msg])?, &attrs)
}

fn instantiate(py: Python<'_>, class: &str, args: Bound<'_, PyTuple>, attrs: &Bound<'_, PyDict>) -> PyResult<PyErr> {
    let cls = py.import("ftlsim.errors")?.getattr(class)?;
    let exc = cls.call1(args)?;
    for (k, v) in attrs.iter() {
        exc.setattr(k.cast::<PyString>()?, v)?;
    }
    Ok(PyErr::from_value(exc))
}
