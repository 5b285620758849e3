//! Where the tests find their trace files.
//!
//! Two layers. The small samples in `tests/traces/` (one per text format, in
//! that format's own layout, kept in the repository) are always there, so a
//! fresh clone tests every reader. The real traces in `shared/traces/`
//! beside the repository are an extra layer: tests over them run when the
//! folder is present and return early when it is not. CI must have them, so
//! under `CI=true` a missing folder fails instead. `scripts/test` checks the
//! folder before compiling and says once whether that layer is skipped.
//! `FTLSIM_REAL_TRACES` points at another folder.

use std::path::PathBuf;

/// The repository root (two levels above this crate).
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A sample kept in the repository's `tests/traces/`, e.g. `msr_csv/msr-sample.csv`.
pub fn kept(rel: &str) -> PathBuf {
    let p = root().join("tests/traces").join(rel);
    assert!(p.is_file(), "kept sample trace {} is missing", p.display());
    p
}

/// Whether this is a CI run (`CI` set to anything but empty, `0` or `false`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The real traces folder, or `None` when it is absent outside CI.
///
/// # Panics
/// When the folder is absent under CI, or present without the file `rel`.
pub fn real(rel: &str) -> Option<PathBuf> {
    let dir =
        std::env::var_os("FTLSIM_REAL_TRACES").map(PathBuf::from).unwrap_or_else(|| root().join("../shared/traces"));
    if !dir.is_dir() {
        assert!(!in_ci(), "real traces folder {} is missing, and CI requires it", dir.display());
        return None;
    }
    let p = dir.join(rel);
    assert!(p.is_file(), "real trace {} is missing", p.display());
    Some(p)
}

/// The real trace `rel` when present, else the kept sample `fallback`.
pub fn real_or_kept(rel: &str, fallback: &str) -> PathBuf {
    real(rel).unwrap_or_else(|| kept(fallback))
}
