//! The crate's one error type.
//!
//! Every variant is something a user can act on: a bad configuration key, a
//! bad trace line, an I/O failure, a worn-out drive, or a violated physical
//! rule / invariant (which always means a bug in an FTL, never bad input). The CLI prints the
//! `Display` form as its one-line reason; the Python binding maps each variant
//! to its own exception class.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration key is unknown, missing, of the wrong type or out of range.
    #[error("config: {}: {}", one_line(.key), one_line(.reason))]
    Config { key: String, reason: String },

    /// A trace line could not be parsed or is not acceptable. `line` is
    /// 1-based; 0 means the file as a whole (its format could not be
    /// detected), and the message then names no line rather than a
    /// nonexistent line 0.
    #[error("{}{}: {}", one_line(.file), at_line(*.line), one_line(.reason))]
    Trace { file: String, line: u64, reason: String },

    /// A synthetic workload specification is malformed.
    #[error("workload: {}: {}", one_line(.key), one_line(.reason))]
    Workload { key: String, reason: String },

    /// A request addresses sectors beyond the device under the `error` policy.
    #[error(
        "{}: request {request} addresses sectors {start}..{end} beyond the device's {capacity} sectors (use --out-of-range wrap|scale)",
        one_line(.source_name)
    )]
    OutOfRange { source_name: String, request: u64, start: u64, end: u64, capacity: u64 },

    /// The NAND array refused an operation: an FTL asked for something impossible.
    #[error("NAND physics violated: {}", one_line(.0))]
    Physics(String),

    /// An FTL's internal invariant failed: a bug, reported instead of a wrong number.
    #[error("invariant violated in {ftl}: {}", one_line(.reason))]
    Invariant { ftl: &'static str, reason: String },

    /// The device cannot accept more data: every block is full of valid pages.
    #[error("device full: {}", one_line(.0))]
    DeviceFull(String),

    /// A block reached `nand.endurance` erases: the workload and the FTL's
    /// write amplification wore the drive out (a real drive turns
    /// read-only), which is not a bug unless the wear is far from even
    /// (`mean_erases` well below `endurance`).
    #[error(
        "drive worn out: block {block} reached nand.endurance ({endurance} erases; the drive's blocks average {mean_erases:.1}{}): the load and the FTL's write amplification wore it out, as they would a real drive; write less (a smaller --precondition overwrite=, fewer requests), raise nand.endurance, or use an FTL that amplifies writes less",
        if *.mean_erases < *.endurance as f64 / 2.0 { ", so the wear is uneven" } else { "" }
    )]
    WornOut { block: u64, endurance: u32, mean_erases: f64 },

    #[error("{}: {}", one_line(&.path.display().to_string()), one_line(&.source.to_string()))]
    Io { path: PathBuf, source: std::io::Error },

    /// Anything the user asked for that does not exist (an FTL, a preset, a format).
    #[error("{what} '{}' does not exist; available: {available}", one_line(.name))]
    Unknown { what: &'static str, name: String, available: String },

    #[error("interrupted")]
    Interrupted,
}

/// `text` with its line breaks and other control characters escaped (`\n`),
/// so that every message is one line even when it quotes input that is not
/// (a spec given as `$'rw=read\nbs=4k'`, a file name with a newline).
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return text.into();
    }
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { c.escape_default().to_string() } else { c.to_string() })
        .collect::<String>()
        .into()
}

fn at_line(line: u64) -> String {
    if line == 0 { String::new() } else { format!(":{line}") }
}

impl Error {
    pub fn config(key: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Config { key: key.into(), reason: reason.into() }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    pub fn invariant(ftl: &'static str, reason: impl Into<String>) -> Error {
        Error::Invariant { ftl, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quoting_line_breaks_stay_on_one_line() {
        let e = Error::Workload { key: "'rw=read\nbs=4k'".into(), reason: "a\r\u{1b}b\tc".into() };
        assert_eq!(e.to_string(), "workload: 'rw=read\\nbs=4k': a\\r\\u{1b}b\tc");
        let e = Error::io("dir\nname", std::io::Error::other("gone"));
        assert_eq!(e.to_string(), "dir\\nname: gone");
    }

    #[test]
    fn trace_errors_name_a_line_only_when_there_is_one() {
        let at = |line| Error::Trace { file: "t.csv".into(), line, reason: "why".into() }.to_string();
        assert_eq!(at(7), "t.csv:7: why");
        assert_eq!(at(0), "t.csv: why");
    }
}
