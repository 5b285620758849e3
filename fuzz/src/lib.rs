//! Coverage-guided fuzz targets for every input ftlsim parses.
//!
//! Each target takes one byte string and must never panic, abort or hang:
//! whatever the bytes, the code under test either accepts them or refuses
//! them with an error, and an error must say what was wrong (a non-empty
//! one-line message naming the file or key). The same functions are driven
//! two ways: by AFL (`scripts/fuzz TARGET`, the `afl` feature's binaries),
//! and by `cargo test -p ftlsim-fuzz`, which replays the committed corpora
//! (`fuzz/corpus/TARGET`) and the crashes found so far
//! (`fuzz/regressions/TARGET`) without AFL.
//!
//! - [`traces`]: every trace reader, plain and gzip, given or detected.
//! - [`specs`]: config TOML, presets with `key=value` overrides, workload,
//!   precondition and power-cut specs.
//! - [`nbd`]: a client's byte stream through the NBD server's handshake and
//!   transmission phases, in-process over a socket pair.

mod nbd;
pub mod seeds;
mod specs;
mod traces;

pub use nbd::nbd;
pub use specs::specs;
pub use traces::traces;

/// A target: one input in, a panic for a bug.
pub type Target = fn(&[u8]);

/// Every target by name, as `scripts/fuzz` and the replay test know them.
pub const TARGETS: &[(&str, Target)] = &[("traces", traces), ("specs", specs), ("nbd", nbd)];

/// Checks that a refusal explains itself: a non-empty message on one line
/// (input quoted in it has its line breaks escaped). A violation is a bug
/// like a panic, and is reported as one (AFL records it as a crash).
fn check_message(msg: &str, input: &str) {
    assert!(!msg.trim().is_empty(), "empty error message for {input:?}");
    assert!(!msg.contains('\n') && !msg.contains('\r'), "multi-line error message for {input:?}: {msg:?}");
}
