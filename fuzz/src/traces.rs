//! The `traces` target: `[format, flags, file...]`.
//!
//! `format` picks how the file is opened: 0 detects the format from the
//! content, 1..=N gives the N-th name of [`formats`], and N+1 reads the
//! first line as a `csv:` column mapping (so mapping parsing is fuzzed
//! too) and the rest as the file. `flags`: bit 0 gzips the file (raw gzip
//! input reaches the decoder anyway, by its magic), bit 1 skips bad lines,
//! bit 2 splits the file in two blktrace per-CPU files (`t.blktrace.0` and
//! `.1`), whose records the binary reader merges.

use ftlsim::trace::{Format, OpenOptions, formats, open};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Commands read from one input at most (bounds an execution's time).
const MAX_COMMANDS: usize = 4096;

pub fn traces(data: &[u8]) {
    let [sel, flags, body @ ..] = data else { return };
    let names = formats();
    let (format, body) = match *sel as usize % (names.len() + 2) {
        0 => (None, body),
        i if i <= names.len() => (Some(names[i - 1].parse::<Format>().expect("a listed format name parses")), body),
        _ => {
            let (line, rest) = body.split_at(body.iter().position(|&b| b == b'\n').map_or(body.len(), |p| p + 1));
            let spec = format!("csv:{}", String::from_utf8_lossy(line).trim_end());
            match spec.parse::<Format>() {
                Ok(f) => (Some(f), rest),
                Err(e) => return super::check_message(&e.to_string(), &spec),
            }
        }
    };
    let (gzip, skip_bad_lines, split) = (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
    let dir = Scratch::new();
    let parts: Vec<(&str, &[u8])> = if split {
        let (a, b) = body.split_at(body.len() / 2);
        vec![("t.blktrace.0", a), ("t.blktrace.1", b)]
    } else {
        vec![("trace", body)]
    };
    for (name, bytes) in &parts {
        let bytes = if gzip { gzipped(bytes) } else { bytes.to_vec() };
        std::fs::write(dir.0.join(name), bytes).expect("scratch file written");
    }
    let path = dir.0.join(parts[0].0);
    read(&path, OpenOptions { format, skip_bad_lines });
}

fn read(path: &Path, opts: OpenOptions) {
    let refused = |e: ftlsim::Error| {
        let msg = e.to_string();
        super::check_message(&msg, &path.display().to_string());
        // A trace error names the file; a format error names the format.
        assert!(msg.contains("trace") || msg.contains("format") || msg.contains("blktrace"), "{msg}");
    };
    let mut opened = match open(path, &opts) {
        Ok(o) => o,
        Err(e) => return refused(e),
    };
    for _ in 0..MAX_COMMANDS {
        match opened.source.next_cmd() {
            // The end sector is computed everywhere downstream: it must not overflow.
            Ok(Some(cmd)) => drop(cmd.end()),
            Ok(None) => return,
            Err(e) => return refused(e),
        }
    }
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).expect("gzip into memory");
    z.finish().expect("gzip into memory")
}

/// A directory of its own for one execution, removed after it (AFL runs
/// many processes; blktrace reads every sibling CPU file in a directory).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ftlsim-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory created");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
