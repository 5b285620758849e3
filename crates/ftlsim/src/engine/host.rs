//! The host interface: when each command is issued, and where it lands.
//!
//! Open loop: a command arrives at its trace time (times `time_scale`);
//! an arrival earlier than its predecessor is replayed at the predecessor's
//! time and counted, so a clock glitch cannot reorder the drive's work.
//! Nothing is buffered: an overloaded drive shows growing latency, never
//! growing memory. Closed loop: `queue_depth` commands are outstanding; the
//! next is issued when the earliest outstanding one completes.
//!
//! Commands addressing sectors beyond the logical space are refused, wrapped
//! (modulo the capacity) or scaled (offsets stretched by capacity / the
//! source's address span), per the out-of-range policy, and counted.

use crate::config::HostMode;
use crate::error::{Error, Result};
use crate::trace::HostCmd;
use crate::units::{Sector, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How out-of-range commands are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangePolicy {
    Error,
    Wrap,
    /// Offsets multiplied by capacity / `source_sectors` (the source's span).
    Scale {
        source_sectors: u64,
    },
}

pub struct Arrivals {
    mode: HostMode,
    time_scale: f64,
    last_arrival: SimTime,
    outstanding: BinaryHeap<Reverse<SimTime>>,
    pub clamped: u64,
}

impl Arrivals {
    pub fn new(mode: HostMode, queue_depth: u32, time_scale: f64) -> Arrivals {
        let outstanding = match mode {
            HostMode::Closed => (0..queue_depth).map(|_| Reverse(SimTime::ZERO)).collect(),
            HostMode::Open => BinaryHeap::new(),
        };
        Arrivals { mode, time_scale, last_arrival: SimTime::ZERO, outstanding, clamped: 0 }
    }

    /// Issue time of the next command.
    #[inline]
    pub fn issue(&mut self, cmd: &HostCmd) -> SimTime {
        match self.mode {
            HostMode::Open => {
                let scaled = if self.time_scale == 1.0 {
                    cmd.time
                } else {
                    SimTime((cmd.time.0 as f64 * self.time_scale).round() as u64)
                };
                if scaled < self.last_arrival {
                    self.clamped += 1;
                } else {
                    self.last_arrival = scaled;
                }
                self.last_arrival
            }
            HostMode::Closed => self.outstanding.pop().map_or(SimTime::ZERO, |Reverse(t)| t),
        }
    }

    /// Records when an issued command completed (frees its queue slot).
    #[inline]
    pub fn complete(&mut self, done: SimTime) {
        if self.mode == HostMode::Closed {
            self.outstanding.push(Reverse(done));
        }
    }
}

/// Applies the range policy. Returns the (possibly moved) command and whether
/// it was moved.
pub fn fit_range(
    cmd: HostCmd,
    capacity: u64,
    policy: RangePolicy,
    source: &str,
    index: u64,
) -> Result<(HostCmd, bool)> {
    // Scaling stretches every offset, so the trace keeps its spatial shape.
    let scaling = matches!(policy, RangePolicy::Scale { source_sectors } if source_sectors > capacity);
    if cmd.end().0 <= capacity && !scaling {
        return Ok((cmd, false));
    }
    let out = |cmd: &HostCmd| Error::OutOfRange {
        source_name: source.to_string(),
        request: index,
        start: cmd.start.0,
        end: cmd.end().0,
        capacity,
    };
    if cmd.sectors > capacity {
        return Err(out(&cmd));
    }
    let start = match policy {
        RangePolicy::Error => return Err(out(&cmd)),
        RangePolicy::Wrap => cmd.start.0 % capacity,
        RangePolicy::Scale { source_sectors } => {
            ((cmd.start.0 as u128 * capacity as u128) / source_sectors.max(1) as u128) as u64
        }
    };
    // A command straddling the end after the move is slid back to fit.
    let start = start.min(capacity - cmd.sectors);
    Ok((HostCmd { start: Sector(start), ..cmd }, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Op;

    fn cmd(t: u64, start: u64, sectors: u64) -> HostCmd {
        HostCmd { time: SimTime(t), op: Op::Write, start: Sector(start), sectors, continued: false }
    }

    #[test]
    fn open_loop_clamps_backwards_time() {
        let mut a = Arrivals::new(HostMode::Open, 1, 1.0);
        assert_eq!(a.issue(&cmd(100, 0, 1)), SimTime(100));
        assert_eq!(a.issue(&cmd(50, 0, 1)), SimTime(100));
        assert_eq!(a.issue(&cmd(200, 0, 1)), SimTime(200));
        assert_eq!(a.clamped, 1);
        let mut half = Arrivals::new(HostMode::Open, 1, 0.5);
        assert_eq!(half.issue(&cmd(100, 0, 1)), SimTime(50));
    }

    #[test]
    fn closed_loop_issues_when_a_slot_frees() {
        let mut a = Arrivals::new(HostMode::Closed, 2, 1.0);
        assert_eq!(a.issue(&cmd(999, 0, 1)), SimTime(0));
        assert_eq!(a.issue(&cmd(999, 0, 1)), SimTime(0));
        a.complete(SimTime(30));
        a.complete(SimTime(10));
        assert_eq!(a.issue(&cmd(0, 0, 1)), SimTime(10));
        a.complete(SimTime(40));
        assert_eq!(a.issue(&cmd(0, 0, 1)), SimTime(30));
    }

    #[test]
    fn range_policies() {
        let e = fit_range(cmd(0, 95, 10), 100, RangePolicy::Error, "t", 3).unwrap_err().to_string();
        assert!(e.contains("request 3") && e.contains("95..105"), "{e}");
        assert_eq!(fit_range(cmd(0, 250, 8), 100, RangePolicy::Wrap, "t", 0).unwrap(), (cmd(0, 50, 8), true));
        assert_eq!(fit_range(cmd(0, 98, 8), 100, RangePolicy::Wrap, "t", 0).unwrap().0.start, Sector(92));
        let s = RangePolicy::Scale { source_sectors: 1000 };
        assert_eq!(fit_range(cmd(0, 500, 8), 100, s, "t", 0).unwrap().0.start, Sector(50));
        assert_eq!(fit_range(cmd(0, 10, 8), 100, s, "t", 0).unwrap(), (cmd(0, 1, 8), true));
        let fits = RangePolicy::Scale { source_sectors: 100 };
        assert_eq!(fit_range(cmd(0, 10, 8), 100, fits, "t", 0).unwrap(), (cmd(0, 10, 8), false));
        assert!(fit_range(cmd(0, 0, 101), 100, RangePolicy::Wrap, "t", 0).is_err());
    }
}
