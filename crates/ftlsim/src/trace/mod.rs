//! Host commands and where they come from: trace readers, one per format.
//!
//! Every reader streams (constant memory whatever the trace length), accepts
//! gzip-compressed input, and turns each record into a [`HostCmd`] with
//! 64-bit sector offsets. A line that cannot be parsed is an
//! [`Error::Trace`](crate::Error::Trace) naming file, line and reason, unless
//! the reader was opened with `skip_bad_lines`, in which case it is skipped
//! and counted. Offsets beyond the device are not the reader's business: the
//! host layer applies the out-of-range policy.
//!
//! Policies common to every reader:
//! - times are converted to ns and made relative to the first command; a
//!   timestamp earlier than its predecessor is kept as-is (the host layer
//!   clamps and counts), except one earlier than the first command, which
//!   the reader replays at its predecessor's time and counts
//!   ([`CmdSource::clamped_timestamps`]);
//! - a line longer than [`MAX_LINE_BYTES`](crate::limits::MAX_LINE_BYTES)
//!   is bad, refused before it is held; a UTF-8 byte order mark is ignored;
//! - a text trace that yields no command is an error (unless bad lines were
//!   skipped);
//! - byte offsets and sizes are widened to whole 512 B sectors;
//! - zero-length reads, writes and trims are skipped and counted apart
//!   ([`CmdSource::zero_length`]), not treated as errors: they move no data
//!   and real traces contain them;
//! - device / volume / ASU numbers are ignored: everything in one file
//!   shares one address space, offsets kept as recorded.
//!
//! Entry points: [`open`] (with [`detect()`] when no format is given),
//! [`write_trace`] and [`stats()`].

/// The [`CmdSource`] methods of a source wrapping another, forwarded to
/// the inner one (`forward_source!(|s| s.inner)`): its name, its counts of
/// what it skipped or clamped, and its progress.
macro_rules! forward_source {
    (|$s:ident| $inner:expr) => {
        fn name(&self) -> &str {
            let $s = self;
            $inner.name()
        }
        fn skipped_lines(&self) -> u64 {
            let $s = self;
            $inner.skipped_lines()
        }
        fn zero_length(&self) -> u64 {
            let $s = self;
            $inner.zero_length()
        }
        fn clamped_timestamps(&self) -> u64 {
            let $s = self;
            $inner.clamped_timestamps()
        }
        fn progress(&self) -> $crate::trace::Progress {
            let $s = self;
            $inner.progress()
        }
    };
}
pub(crate) use forward_source;

pub mod ahead;
pub mod alibaba;
pub mod batch;
pub mod blkparse;
pub mod blktrace;
pub mod csv;
pub mod detect;
pub mod disksim;
pub mod fiu;
pub mod format;
mod input;
pub mod list;
pub mod mqsim;
pub mod msr;
mod num;
pub mod spc;
pub mod ssdsim;
pub mod stats;
pub mod systor17;
pub mod tencent;
mod text;
pub mod wiscsee;
pub mod writer;

#[cfg(test)]
mod samples;

pub use csv::{CsvSpec, Header, NATIVE_HEADER, Sep, TimeUnit};
pub use detect::detect;
pub use format::{Format, formats};
pub use stats::{TraceStats, render_table as render_stats, stats};
pub use writer::{write_native_line, write_trace};

use crate::error::Result;
use crate::units::{Sector, SimTime};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a host command asks the drive to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    Trim,
    Flush,
}

/// One host command, as the drive's host interface receives it, or one
/// range of a multi-range TRIM.
///
/// `time` is the arrival time relative to the start of the source (the first
/// record of a trace arrives at zero). Closed-loop runs ignore it.
///
/// A TRIM (ATA DSM, NVMe Deallocate) may carry several LBA ranges. A source
/// yields such a command as consecutive records, one per range, all but the
/// last with `continued` set. A consumer that does not care about commands
/// sees the ranges as separate TRIMs, which trims the same sectors; the
/// host interface ([`crate::sim::Simulation::run`]) regroups them (see
/// [`crate::trim`]). Keeping one range per record keeps `HostCmd` `Copy`
/// and every reader allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCmd {
    pub time: SimTime,
    pub op: Op,
    pub start: Sector,
    /// Length in sectors; zero for FLUSH.
    pub sectors: u64,
    /// TRIM only: the next record of the source is another range of this
    /// same command. Always false for other ops.
    pub continued: bool,
}

impl HostCmd {
    pub fn end(&self) -> Sector {
        Sector(self.start.0 + self.sectors)
    }
}

/// How far a source has got, for progress bars: `done` of `total` units
/// (bytes of a trace file, commands of a synthetic workload).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: Option<u64>,
}

/// A stream of host commands: a trace reader or a synthetic workload.
pub trait CmdSource: Send {
    /// The next command, `Ok(None)` at the end of the stream.
    fn next_cmd(&mut self) -> Result<Option<HostCmd>>;

    /// A short human-readable name: the trace path or the workload spec.
    fn name(&self) -> &str;

    /// Lines skipped as malformed (only ever non-zero with `skip_bad_lines`).
    fn skipped_lines(&self) -> u64 {
        0
    }

    /// Zero-length reads, writes and trims skipped (they are not errors).
    fn zero_length(&self) -> u64 {
        0
    }

    /// Timestamps earlier than the first command's, replayed at their
    /// predecessor's time (later ones going backwards are the host's).
    fn clamped_timestamps(&self) -> u64 {
        0
    }

    fn progress(&self) -> Progress {
        Progress::default()
    }
}

impl<T: CmdSource + ?Sized> CmdSource for Box<T> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        (**self).next_cmd()
    }
    forward_source!(|s| (**s));
}

/// Wraps `source` in the host-side TRIM batching `cfg` asks for
/// (`host.trim_batch` > 1; the page is the discard granularity), or
/// returns it as it is.
pub fn with_trim_batching(source: Box<dyn CmdSource>, cfg: &crate::config::Config) -> Box<dyn CmdSource> {
    let host = &cfg.host;
    if host.trim_batch <= 1 {
        return source;
    }
    let window = crate::units::Nanos::from_us_f64(host.trim_batch_window_us);
    let granularity = cfg.geometry.page_size as u64 / crate::units::SECTOR_BYTES;
    Box::new(batch::TrimBatcher::new(source, host.trim_batch, window, granularity))
}

/// How to open a trace.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The format; `None` detects it from the file's content.
    pub format: Option<Format>,
    /// Skip and count malformed lines instead of failing on the first one.
    pub skip_bad_lines: bool,
}

/// An opened trace.
pub struct Opened {
    pub source: Box<dyn CmdSource>,
    pub format: Format,
    /// True if the format was detected rather than given.
    pub detected: bool,
    /// Doubts about a detected format ([`detect::doubts`]), one line each.
    pub warnings: Vec<String>,
}

/// Opens a trace file (plain or gzip) as a command source.
pub fn open(path: &Path, opts: &OpenOptions) -> Result<Opened> {
    let (format, detected) = match &opts.format {
        Some(f) => (f.clone(), false),
        None => (detect(path)?, true),
    };
    let skip = opts.skip_bad_lines;
    fn text<P: text::LineParser + 'static>(i: input::Input, p: P, skip: bool) -> Box<dyn CmdSource> {
        Box::new(NonEmpty::new(text::TextSource::new(i, p, skip)))
    }
    let i = || input::open_input(path);
    let source: Box<dyn CmdSource> = match &format {
        Format::Spc => text(i()?, spc::SpcParser, skip),
        Format::Msr => text(i()?, msr::MsrParser, skip),
        Format::Blkparse => {
            let event = blkparse::choose_event(path)?;
            text(i()?, blkparse::BlkparseParser { event }, skip)
        }
        Format::Blktrace => blktrace::open_capture(path, skip)?,
        Format::Disksim => text(i()?, disksim::DisksimParser, skip),
        Format::Ssdsim => text(i()?, ssdsim::SsdsimParser, skip),
        Format::Mqsim => text(i()?, mqsim::MqsimParser, skip),
        Format::Fiu => text(i()?, fiu::FiuParser, skip),
        Format::Systor17 => text(i()?, systor17::Systor17Parser::default(), skip),
        Format::Tencent => text(i()?, tencent::TencentParser, skip),
        Format::Alibaba => text(i()?, alibaba::AlibabaParser, skip),
        Format::Wiscsee => text(i()?, wiscsee::WiscseeParser, skip),
        Format::Csv(spec) => text(i()?, csv::CsvParser::new(spec.clone()), skip),
    };
    let warnings = if detected { detect::doubts(path, &format)? } else { Vec::new() };
    Ok(Opened { source, format, detected, warnings })
}

/// A trace that ends without a single command is refused (unless bad lines
/// were skipped, which the report counts): an empty file, a header alone or
/// a wrong `--format` would otherwise report nothing.
pub(crate) struct NonEmpty<S> {
    inner: S,
    yielded: bool,
}

impl<S: CmdSource> NonEmpty<S> {
    pub(crate) fn new(inner: S) -> Self {
        NonEmpty { inner, yielded: false }
    }
}

impl<S: CmdSource> CmdSource for NonEmpty<S> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        let next = self.inner.next_cmd()?;
        if next.is_none() && !self.yielded && self.inner.skipped_lines() == 0 {
            let zero = match self.inner.zero_length() {
                0 => String::new(),
                n => format!(": only {n} zero-length"),
            };
            let file = self.inner.name().to_string();
            return Err(crate::Error::Trace { file, line: 0, reason: format!("no requests{zero}") });
        }
        self.yielded |= next.is_some();
        Ok(next)
    }

    forward_source!(|s| s.inner);
}
