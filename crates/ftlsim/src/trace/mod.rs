//! Host commands and where they come from: trace readers, one per format.
//!
//! Every reader streams (constant memory whatever the trace length), accepts
//! gzip-compressed input, and turns each record into a [`HostCmd`] with
//! 64-bit sector offsets. A line that cannot be parsed is an
//! [`Error::Trace`](crate::Error::Trace) naming file, line and reason, unless
//! the reader was opened with `skip_bad_lines`, in which case it is skipped
//! and counted. Offsets beyond the device are not the reader's business: the
//! host layer applies the out-of-range policy.

use crate::error::Result;
use crate::units::{Sector, SimTime};
use serde::{Deserialize, Serialize};

/// What a host command asks the drive to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    Trim,
    Flush,
}

/// One host command, as the drive's host interface receives it.
///
/// `time` is the arrival time relative to the start of the source (the first
/// record of a trace arrives at zero). Closed-loop runs ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCmd {
    pub time: SimTime,
    pub op: Op,
    pub start: Sector,
    /// Length in sectors; zero for FLUSH.
    pub sectors: u64,
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

    fn progress(&self) -> Progress {
        Progress::default()
    }
}
