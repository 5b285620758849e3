//! The fuzz targets' committed inputs, replayed without AFL: every file of
//! `fuzz/corpus/TARGET` (the seeds and what fuzzing found worth keeping)
//! and of `fuzz/regressions/TARGET` (inputs that once failed) must run
//! through its target without a panic. This is the short fuzz run of the
//! test suite; `scripts/fuzz TARGET` runs AFL itself.

use ftlsim_fuzz::{TARGETS, seeds};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = seeds::repo_root().join("fuzz").join(kind).join(target);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.map(|e| e.expect("entry").path()).filter(|p| p.is_file()));
        }
    }
    files.sort();
    files
}

fn replay(target: &str) {
    let run = TARGETS.iter().find(|(n, _)| *n == target).expect("a target").1;
    let files = inputs(target);
    assert!(!files.is_empty(), "no inputs for {target}");
    let failed: Vec<String> = files
        .iter()
        .filter(|f| catch_unwind(AssertUnwindSafe(|| run(&std::fs::read(f).expect("input")))).is_err())
        .map(|f| f.display().to_string())
        .collect();
    assert!(failed.is_empty(), "{target}: {} of {} inputs failed: {failed:#?}", failed.len(), files.len());
}

#[test]
fn traces_corpus_replays() {
    replay("traces");
}

#[test]
fn specs_corpus_replays() {
    replay("specs");
}

#[test]
fn nbd_corpus_replays() {
    replay("nbd");
}

/// The seeds in `fuzz/corpus` are the ones [`seeds::all`] builds from the
/// samples; `FTLSIM_FUZZ_WRITE_SEEDS=1` (re)writes them.
#[test]
fn seeds_are_in_the_corpus() {
    let write = std::env::var_os("FTLSIM_FUZZ_WRITE_SEEDS").is_some();
    for (target, name, bytes) in seeds::all() {
        let path = seeds::repo_root().join("fuzz/corpus").join(target).join(&name);
        if write {
            std::fs::create_dir_all(path.parent().expect("dir")).expect("corpus dir");
            std::fs::write(&path, &bytes).expect("seed written");
        } else {
            let got = std::fs::read(&path).unwrap_or_default();
            assert!(
                got == bytes,
                "{} is missing or stale: run FTLSIM_FUZZ_WRITE_SEEDS=1 cargo test -p ftlsim-fuzz",
                path.display()
            );
        }
    }
}
