//! Fingerprints the library's source (FNV-1a 64 over every file under
//! `src/`, paths and contents, in path order) as `FTLSIM_SOURCE_FNV`: a
//! preconditioned snapshot's key includes it, so a snapshot made by one
//! build is never loaded by a build whose simulation may differ, even at
//! the same crate version (see `src/snapshot.rs`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    walk(Path::new("src"), &mut files);
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for b in f.to_string_lossy().as_bytes().iter().chain(&[0]).chain(&bytes) {
            h = (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=FTLSIM_SOURCE_FNV={h:016x}");
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let path = e.expect("directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}
