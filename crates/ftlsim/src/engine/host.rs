//! The host interface: when each command is issued, and where it lands.
//!
//! Open loop: a command arrives at its trace time (times `time_scale`).
//! A source's commands are put in time order within a window of
//! [`REORDER_WINDOW`] commands ([`TimeOrdered`]: blkparse output from a
//! multi-CPU host interleaves its CPUs' events by tens of commands); an
//! arrival earlier than one further back is replayed at the latest arrival's
//! time so far and counted, so a clock glitch cannot reorder the drive's work.
//! Nothing is buffered: an overloaded drive shows growing latency, never
//! growing memory. Closed loop: `queue_depth` commands are outstanding; the
//! next is issued when the earliest outstanding one completes.
//!
//! Commands addressing sectors beyond the logical space are refused, wrapped
//! (modulo the capacity) or scaled (offsets stretched by capacity / the
//! source's address span), per the out-of-range policy, and counted.

use crate::config::HostMode;
use crate::error::{Error, Result};
use crate::trace::{CmdSource, HostCmd, forward_source};
use crate::units::{Sector, SimTime};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Commands an open-loop replay may move an arrival ahead of, to replay a
/// source's commands in time order. The real YCSB blkparse trace's events
/// come up to 37 commands out of order (3,712 of its 9,887 requests, by
/// 12 ms at the median); a window this size costs 1,024 commands of memory.
pub const REORDER_WINDOW: usize = 1024;

/// A source's commands in time order within [`REORDER_WINDOW`] commands
/// (ties in the source's order). The ranges of one multi-range TRIM stay
/// together, ordered by the first's time. Commands in order pass through at
/// the cost of a comparison; one out of order is inserted where its time
/// puts it, among at most the window's commands.
pub struct TimeOrdered<'a> {
    src: &'a mut dyn CmdSource,
    /// Commands read, each with the time it is ordered by (its own, or its
    /// TRIM's first range's), in time order.
    window: VecDeque<(SimTime, HostCmd)>,
    /// Where the last command read went, while its TRIM has more ranges.
    open_chain: Option<usize>,
    done: bool,
    /// Commands replayed before one the source gave earlier.
    pub reordered: u64,
}

impl<'a> TimeOrdered<'a> {
    pub fn new(src: &'a mut dyn CmdSource) -> TimeOrdered<'a> {
        TimeOrdered {
            src,
            window: VecDeque::with_capacity(REORDER_WINDOW + 1),
            open_chain: None,
            done: false,
            reordered: 0,
        }
    }

    /// Reads the source's next command into the window, or notes its end.
    fn read(&mut self) -> Result<()> {
        let Some(cmd) = self.src.next_cmd()? else {
            self.done = true;
            return Ok(());
        };
        let at = match self.open_chain {
            // The next range of the TRIM just read goes right after it.
            Some(prev) => {
                let key = self.window[prev].0;
                self.window.insert(prev + 1, (key, cmd));
                prev + 1
            }
            None => {
                let later = self.window.iter().rev().take_while(|(t, _)| *t > cmd.time).count();
                if later > 0 {
                    self.reordered += 1;
                }
                let at = self.window.len() - later;
                self.window.insert(at, (cmd.time, cmd));
                at
            }
        };
        self.open_chain = cmd.continued.then_some(at);
        Ok(())
    }
}

impl CmdSource for TimeOrdered<'_> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        while !self.done && (self.window.len() <= REORDER_WINDOW || self.open_chain.is_some()) {
            self.read()?;
        }
        Ok(self.window.pop_front().map(|(_, cmd)| cmd))
    }

    forward_source!(|s| s.src);
}

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
    /// Closed loop: the slot last issued is still `outstanding`'s top,
    /// which its completion replaces in place (one sift, where a pop and
    /// a push were two).
    issued_on_top: bool,
    pub clamped: u64,
}

impl Arrivals {
    pub fn new(mode: HostMode, queue_depth: u32, time_scale: f64) -> Arrivals {
        let outstanding = match mode {
            HostMode::Closed => (0..queue_depth).map(|_| Reverse(SimTime::ZERO)).collect(),
            HostMode::Open => BinaryHeap::new(),
        };
        Arrivals { mode, time_scale, last_arrival: SimTime::ZERO, outstanding, issued_on_top: false, clamped: 0 }
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
            HostMode::Closed => {
                if std::mem::replace(&mut self.issued_on_top, true) {
                    self.outstanding.pop();
                }
                self.outstanding.peek().map_or(SimTime::ZERO, |&Reverse(t)| t)
            }
        }
    }

    /// Records when an issued command completed (frees its queue slot).
    #[inline]
    pub fn complete(&mut self, done: SimTime) {
        if self.mode == HostMode::Closed {
            if std::mem::take(&mut self.issued_on_top)
                && let Some(mut top) = self.outstanding.peek_mut()
            {
                *top = Reverse(done);
            } else {
                self.outstanding.push(Reverse(done));
            }
        }
    }
}

/// Applies the range policy. Returns the (possibly moved) command and whether
/// it was moved.
#[inline]
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
    move_into_range(cmd, capacity, policy, source, index)
}

/// [`fit_range`] for a command it moves or refuses (out of line: the
/// commands of almost every run are in range).
#[cold]
fn move_into_range(
    cmd: HostCmd,
    capacity: u64,
    policy: RangePolicy,
    source: &str,
    index: u64,
) -> Result<(HostCmd, bool)> {
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

    /// (time, start) of every command `TimeOrdered` gives for `cmds`, and
    /// how many it moved.
    fn time_ordered(cmds: Vec<HostCmd>) -> (Vec<(u64, u64)>, u64) {
        let mut list = crate::trace::list::CmdList::new("vec", cmds);
        let mut ordered = TimeOrdered::new(&mut list);
        let mut out = Vec::new();
        while let Some(c) = ordered.next_cmd().unwrap() {
            out.push((c.time.0, c.start.0));
        }
        (out, ordered.reordered)
    }

    #[test]
    fn commands_out_of_order_within_the_window_are_replayed_in_time_order() {
        // Two CPUs' events interleaved: times 0 10 20 5 15 30, start = rank.
        let cmds = [(0, 0), (10, 2), (20, 4), (5, 1), (15, 3), (30, 5)].map(|(t, s)| cmd(t, s, 8));
        let (out, moved) = time_ordered(cmds.to_vec());
        assert_eq!(out, vec![(0, 0), (5, 1), (10, 2), (15, 3), (20, 4), (30, 5)]);
        assert_eq!(moved, 2);
        // Ties keep the source's order.
        let (out, moved) = time_ordered([(7, 0), (7, 1), (3, 2), (7, 3)].map(|(t, s)| cmd(t, s, 8)).to_vec());
        assert_eq!((out, moved), (vec![(3, 2), (7, 0), (7, 1), (7, 3)], 1));
    }

    #[test]
    fn a_trims_ranges_stay_together_and_disorder_beyond_the_window_passes_through() {
        // A two-range TRIM at 10 (its second range stamped 40), then a
        // write at 20: the write may not split the TRIM.
        let mut trim = cmd(10, 100, 8);
        trim.op = Op::Trim;
        trim.continued = true;
        let mut second = cmd(40, 200, 8);
        second.op = Op::Trim;
        let (out, moved) = time_ordered(vec![cmd(0, 0, 8), trim, second, cmd(20, 1, 8), cmd(5, 2, 8)]);
        assert_eq!(out, vec![(0, 0), (5, 2), (10, 100), (40, 200), (20, 1)]);
        assert_eq!(moved, 1);
        // A command earlier than the whole window comes after the window's
        // first command, which left before it was read (the host clamps it).
        let n = REORDER_WINDOW as u64 + 1;
        let mut cmds: Vec<HostCmd> = (1..=n).map(|i| cmd(1000 + i, i, 8)).collect();
        cmds.push(cmd(0, 0, 8));
        let (out, _) = time_ordered(cmds);
        assert_eq!(out[0], (1001, 1));
        assert_eq!(out[1], (0, 0));
        assert!(out[1..].windows(2).skip(1).all(|w| w[0].0 < w[1].0));
    }

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
