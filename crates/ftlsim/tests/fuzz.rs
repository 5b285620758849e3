//! Fuzzing of every input parser on the stable toolchain: the trace readers
//! (each format, plain and gzip), the config loader, and the workload and
//! precondition specs.
//!
//! This is **not coverage-guided** (the AFL targets in `fuzz/` are; see the
//! README's Fuzzing section): proptest draws random mutations of the
//! sample traces and presets (byte flips, inserted bytes, deleted, repeated
//! and truncated lines, extreme numbers) and of spec strings, and checks
//! that each input is either read or refused with an error (never a panic,
//! an abort, or a hang), and that a refusal names the file. A shrunk
//! failure becomes a named regression test. The suite runs a bounded
//! number of cases; `FTLSIM_FUZZ_CASES=N` runs more for a long session.

use ftlsim::trace::{Format, OpenOptions, open};
use ftlsim::workload::WorkloadSpec;
use ftlsim::{Config, Precondition};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Commands read from one fuzzed trace at most (bounds a case's time).
const MAX_COMMANDS: usize = 10_000;

fn cases(default: u32) -> u32 {
    std::env::var("FTLSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runner(n: u32) -> TestRunner {
    TestRunner::new(PtConfig { cases: cases(n), failure_persistence: None, ..PtConfig::default() })
}

/// One edit of an input's bytes.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    RepeatLine(usize, u8),
    Truncate(usize),
    /// Replaces a run of digits with an extreme number.
    Number(usize, &'static str),
}

const NUMBERS: &[&str] =
    &["0", "-1", "4294967296", "18446744073709551616", "1e308", "NaN", "inf", "-0", "99999999999999999999"];

fn edit() -> impl Strategy<Value = Edit> {
    let pos = any::<prop::sample::Index>();
    prop_oneof![
        (pos.clone(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i.index(usize::MAX), b)),
        (pos.clone(), prop::collection::vec(prop_oneof![any::<u8>(), Just(b','), Just(b'\n'), Just(b' ')], 1..16))
            .prop_map(|(i, v)| Edit::Insert(i.index(usize::MAX), v)),
        (pos.clone(), 1..64usize).prop_map(|(i, n)| Edit::Delete(i.index(usize::MAX), n)),
        (pos.clone(), 1..8u8).prop_map(|(i, n)| Edit::RepeatLine(i.index(usize::MAX), n)),
        pos.clone().prop_map(|i| Edit::Truncate(i.index(usize::MAX))),
        (pos, prop::sample::select(NUMBERS)).prop_map(|(i, n)| Edit::Number(i.index(usize::MAX), n)),
    ]
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Flip(i, b) => {
                if !bytes.is_empty() {
                    let i = i % bytes.len();
                    bytes[i] ^= b | 1;
                }
            }
            Edit::Insert(i, v) => {
                let i = i % (bytes.len() + 1);
                bytes.splice(i..i, v.iter().copied());
            }
            Edit::Delete(i, n) => {
                let i = i % len;
                let end = (i + n).min(bytes.len());
                if i < end {
                    bytes.drain(i..end);
                }
            }
            Edit::RepeatLine(i, n) => {
                let i = i % len;
                let start = bytes[..i.min(bytes.len())].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                let end = bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| start + p + 1);
                let line = bytes[start..end].to_vec();
                for _ in 0..*n {
                    bytes.splice(end..end, line.iter().copied());
                }
            }
            Edit::Truncate(i) => bytes.truncate(i % len),
            Edit::Number(i, n) => {
                let i = i % len;
                if let Some(start) = bytes[i.min(bytes.len())..].iter().position(u8::is_ascii_digit).map(|p| p + i) {
                    let end =
                        bytes[start..].iter().position(|b| !b.is_ascii_digit()).map_or(bytes.len(), |p| start + p);
                    bytes.splice(start..end, n.bytes());
                }
            }
        }
    }
    bytes
}

/// The sample traces: (format directory, file).
fn samples() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        if let Some(f) = files.into_iter().find(|f| f.is_file()) {
            out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), f));
        }
    }
    out.sort();
    out
}

/// Reads `path` as `format` (or detected) to the end or [`MAX_COMMANDS`]:
/// any error must name the file.
fn read_all(path: &Path, format: Option<Format>, skip_bad_lines: bool) -> Result<(), String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let check = |e: ftlsim::Error| {
        let msg = e.to_string();
        if msg.contains(&name) || msg.contains("trace format") || msg.contains("format") {
            Ok(())
        } else {
            Err(format!("{}: error does not name the file: {msg}", path.display()))
        }
    };
    let mut opened = match open(path, &OpenOptions { format, skip_bad_lines }) {
        Ok(o) => o,
        Err(e) => return check(e),
    };
    for _ in 0..MAX_COMMANDS {
        match opened.source.next_cmd() {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(()),
            Err(e) => return check(e),
        }
    }
    Ok(())
}

#[test]
fn trace_readers_read_or_refuse_mutated_samples() {
    let dir = tempfile::TempDir::new().unwrap();
    for (fmt_dir, sample) in samples() {
        let original = std::fs::read(&sample).unwrap();
        let format: Format = fmt_dir.parse().ok().unwrap_or_else(Format::native);
        let ext = sample.extension().map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
        let strategy = (prop::collection::vec(edit(), 0..6), any::<bool>(), any::<bool>(), any::<bool>());
        let result = runner(24).run(&strategy, |(edits, gzip, given, skip)| {
            let bytes = apply(original.clone(), &edits);
            let path = dir.path().join(format!("fuzz{ext}{}", if gzip { ".gz" } else { "" }));
            let mut f = std::fs::File::create(&path).unwrap();
            if gzip {
                let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
                z.write_all(&bytes).unwrap();
                z.finish().unwrap();
            } else {
                f.write_all(&bytes).unwrap();
            }
            read_all(&path, given.then(|| format.clone()), skip).map_err(TestCaseError::fail)
        });
        if let Err(e) = result {
            panic!("{fmt_dir} ({}): {e}", sample.display());
        }
    }
}

#[test]
fn config_loading_accepts_or_refuses_mutated_presets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut presets: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    presets.sort();
    for preset in presets.into_iter().filter(|p| p.extension().is_some_and(|e| e == "toml")) {
        let text = std::fs::read(&preset).unwrap();
        let result = runner(64).run(&prop::collection::vec(edit(), 1..6), |edits| {
            let bytes = apply(text.clone(), &edits);
            let text = String::from_utf8_lossy(&bytes);
            // Either a config or an error; the error names a key or the file.
            if let Err(e) = Config::from_toml_str(&text, "fuzz.toml", &[]) {
                let msg = e.to_string();
                prop_assert!(!msg.is_empty() && !msg.contains('\n') || msg.contains("fuzz.toml"), "{msg}");
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{}: {e}", preset.display());
        }
    }
}

const SPEC_WORDS: &[&str] = &[
    "rw=",
    "randwrite",
    "randread",
    "write",
    "read",
    "randrw",
    "delete",
    "bs=",
    "4k",
    "1m",
    "0",
    "ios=",
    "10",
    "iodepth=",
    "4294967295",
    "size=",
    "fill=",
    "overwrite=",
    "1e30",
    "0.5",
    "-1",
    "NaN",
    ",",
    ",,",
    "=",
    "k",
    "x",
    "rwmixread=",
    "offset=",
    "seed=",
    "zipf:1.2",
    "random_distribution=",
];

#[test]
fn workload_and_precondition_specs_parse_or_refuse() {
    let spec = prop::collection::vec(prop::sample::select(SPEC_WORDS), 0..12).prop_map(|w| w.concat());
    let result = runner(2048).run(&spec, |s| {
        for msg in [
            s.parse::<WorkloadSpec>().err().map(|e| e.to_string()),
            s.parse::<Precondition>().err().map(|e| e.to_string()),
        ]
        .into_iter()
        .flatten()
        {
            prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{s:?}: {msg}");
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
