//! `ftlsim._native`: the Python binding of the ftlsim library.
//!
//! This crate only converts values, maps errors ([`error`]) and releases the
//! GIL while a simulation runs; every decision stays in the `ftlsim` crate.
//! The Python package (`python/ftlsim`) builds its API on these functions:
//! configs arrive as a preset name or path, TOML text or JSON text (a Python
//! dict), and results leave as the report's own JSON plus raw little-endian
//! columns that NumPy reads without copying element by element.

mod error;

use ftlsim::job::{Input, Job};
use ftlsim::{Config, Error, Precondition};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// Loads a config the way the CLI does; `text` (TOML) or `json` (a dict's
/// JSON) replace reading `name` as a preset or path, and `name` then only
/// labels errors.
fn load_config(name: &str, text: Option<&str>, json: Option<&str>, overrides: &[String]) -> Result<Config, Error> {
    match (text, json) {
        (Some(t), _) => Config::from_toml_str(t, name, overrides),
        (None, Some(j)) => {
            let table: toml::Table =
                serde_json::from_str(j).map_err(|e| Error::config(name, format!("not representable as TOML: {e}")))?;
            let text = toml::to_string(&table).map_err(|e| Error::config(name, e.to_string()))?;
            Config::from_toml_str(&text, name, overrides)
        }
        (None, None) => Config::load(name, overrides),
    }
}

/// The resolved config as TOML (what `ftlsim config show` prints).
#[pyfunction]
#[pyo3(signature = (name, overrides, text=None, json=None))]
fn resolve_config(name: &str, overrides: Vec<String>, text: Option<&str>, json: Option<&str>) -> PyResult<String> {
    load_config(name, text, json, &overrides).map(|c| c.to_toml_shown()).map_err(error::to_py)
}

/// Runs one job with the GIL released. Returns a dict: `summary` (the
/// report's JSON text), `latencies_ns` (op -> little-endian u64 bytes, or
/// None) and `erase_map` (column -> little-endian u32 bytes).
#[pyfunction]
#[pyo3(signature = (
    name, overrides, *, text=None, json=None, trace=None, format=None, skip_bad_lines=false,
    workload=None, precondition=None, keep_latencies=false, default_window_ms=None, snapshot_dir=None,
))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    name: &str,
    overrides: Vec<String>,
    text: Option<&str>,
    json: Option<&str>,
    trace: Option<std::path::PathBuf>,
    format: Option<&str>,
    skip_bad_lines: bool,
    workload: Option<String>,
    precondition: Option<&str>,
    keep_latencies: bool,
    default_window_ms: Option<f64>,
    snapshot_dir: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let job = (|| -> Result<Job, Error> {
        let mut config = load_config(name, text, json, &overrides)?;
        if let Some(ms) = default_window_ms.filter(|_| config.report.window_ms == 0.0) {
            config.report.window_ms = ms;
            config.validate()?;
        }
        let input = match (trace, workload) {
            (Some(path), None) => Input::Trace { path, format: format.map(str::parse).transpose()?, skip_bad_lines },
            (None, Some(w)) => Input::Workload(w),
            _ => return Err(Error::config("input", "give exactly one of trace= or workload=")),
        };
        let precondition = precondition.map(str::parse::<Precondition>).transpose()?;
        Ok(Job { config, input, precondition, snapshot_dir })
    })()
    .map_err(error::to_py)?;

    let mut interrupt: Option<PyErr> = None;
    let outcome = py.detach(|| {
        job.run_detailed(keep_latencies, &mut |_, _| {
            // Ctrl-C: Python's handler only sets a flag; look at it with the
            // GIL held for a moment, and stop the run if it fired.
            Python::attach(|py| py.check_signals()).map_err(|e| interrupt = Some(e)).is_ok()
        })
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let outcome = outcome.map_err(error::to_py)?;

    let out = PyDict::new(py);
    let summary = serde_json::to_string(&outcome.report).expect("report serializes");
    out.set_item("summary", summary)?;
    match &outcome.latencies {
        Some(l) => {
            let d = PyDict::new(py);
            for (op, v) in [("read", &l.read), ("write", &l.write), ("trim", &l.trim), ("flush", &l.flush)] {
                d.set_item(op, le_bytes(py, v, u64::to_le_bytes)?)?;
            }
            out.set_item("latencies_ns", d)?;
        }
        None => out.set_item("latencies_ns", py.None())?,
    }
    let m = &outcome.erase_map;
    let d = PyDict::new(py);
    for (col, v) in [
        ("channel", &m.channel),
        ("chip", &m.chip),
        ("die", &m.die),
        ("plane", &m.plane),
        ("block", &m.block),
        ("erase_count", &m.erase_count),
    ] {
        d.set_item(col, le_bytes(py, v, u32::to_le_bytes)?)?;
    }
    out.set_item("erase_map", d)?;
    Ok(out)
}

/// A column as little-endian bytes (NumPy's `frombuffer` reads it).
fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to_le: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |buf| {
        for (chunk, &v) in buf.chunks_exact_mut(N).zip(values) {
            chunk.copy_from_slice(&to_le(v));
        }
        Ok(())
    })
}

#[pyfunction]
fn presets() -> Vec<&'static str> {
    ftlsim::config::preset_names()
}

#[pyfunction]
fn ftls() -> Vec<&'static str> {
    ftlsim::ftl::FTL_NAMES.to_vec()
}

#[pyfunction]
fn formats() -> Vec<&'static str> {
    ftlsim::trace::formats().to_vec()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(ftls, m)?)?;
    m.add_function(wrap_pyfunction!(formats, m)?)?;
    Ok(())
}
