//! Host-side TRIM batching: a transform on any command source that
//! coalesces TRIMs issued close together into multi-range commands, as Son
//! et al.'s change to ext4 does (up to 64 LBA ranges per TRIM instead of
//! one command per range).
//!
//! A batch opens at the first TRIM range that finds none pending and takes
//! every TRIM range arriving within `window` of it, up to `max_ranges`
//! ranges; a range that meets a listed one end to end at a multiple of the
//! device's discard granularity (`granularity` sectors, its page: Linux
//! exposes it as `discard_granularity`) is merged into it. Ranges meeting
//! inside a page are not merged: together they could cover a page neither
//! covers alone, and a drive that ignores partial pages would then trim
//! it. Other commands pass through in order while a batch is open. The
//! batch is issued (as one command, its ranges `continued` but the last)
//! when:
//! - it is full: at the arrival of its last range;
//! - a command arrives after the window: at the window's end, before it;
//! - a read or write overlapping a listed range, or a FLUSH, arrives: just
//!   before it, at its arrival, so it sees the TRIM done (a read of a
//!   trimmed sector reads zeros, a write lands after the TRIM);
//! - the source ends: at the last range's arrival.
//!
//! So a TRIM only ever moves later past commands that do not touch its
//! sectors: what every read returns is unchanged (the conformance suite
//! checks this with the transform on), and arrival times stay in order.
//! Closed-loop sources carry no times (all zero), so there the window never
//! expires and batches close on size, overlap, FLUSH or the end.

use super::{CmdSource, HostCmd, Op};
use crate::error::Result;
use crate::units::{Nanos, Sector, SimTime};
use std::collections::VecDeque;

/// What the batcher did, for a summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// TRIM ranges that came in, and merged into an adjacent listed one.
    pub ranges_in: u64,
    pub ranges_merged: u64,
    /// TRIM commands issued.
    pub commands_out: u64,
}

/// Coalesces the TRIMs of `inner`; see the module docs.
pub struct TrimBatcher<S> {
    inner: S,
    max_ranges: usize,
    window: Nanos,
    granularity: u64,
    /// Listed ranges, `[start, end)` sectors, in arrival order.
    pending: Vec<(u64, u64)>,
    opened: SimTime,
    last: SimTime,
    out: VecDeque<HostCmd>,
    stats: BatchStats,
}

impl<S: CmdSource> TrimBatcher<S> {
    /// `max_ranges` ≥ 1 ranges per command, batches open at most `window`,
    /// ranges merged where they meet at a multiple of `granularity` sectors.
    pub fn new(inner: S, max_ranges: u32, window: Nanos, granularity: u64) -> TrimBatcher<S> {
        TrimBatcher {
            inner,
            max_ranges: max_ranges.max(1) as usize,
            window,
            granularity: granularity.max(1),
            pending: Vec::new(),
            opened: SimTime::ZERO,
            last: SimTime::ZERO,
            out: VecDeque::new(),
            stats: BatchStats::default(),
        }
    }

    pub fn stats(&self) -> BatchStats {
        self.stats
    }

    /// Issues the pending ranges as one command at `time`.
    fn issue(&mut self, time: SimTime) {
        let n = self.pending.len();
        if n == 0 {
            return;
        }
        self.stats.commands_out += 1;
        for (i, &(s, e)) in self.pending.iter().enumerate() {
            self.out.push_back(HostCmd { time, op: Op::Trim, start: Sector(s), sectors: e - s, continued: i + 1 < n });
        }
        self.pending.clear();
    }

    fn add(&mut self, c: &HostCmd) {
        self.stats.ranges_in += 1;
        if self.pending.is_empty() {
            self.opened = c.time;
        }
        self.last = c.time;
        let (s, e) = (c.start.0, c.end().0);
        let g = self.granularity;
        let meets = |&&mut (ps, pe): &&mut (u64, u64)| (s == pe && s % g == 0) || (e == ps && e % g == 0);
        match self.pending.iter_mut().find(meets) {
            Some(r) => {
                self.stats.ranges_merged += 1;
                *r = (r.0.min(s), r.1.max(e));
            }
            None => self.pending.push((s, e)),
        }
        if self.pending.len() >= self.max_ranges {
            self.issue(c.time);
        }
    }

    fn overlaps(&self, c: &HostCmd) -> bool {
        let (s, e) = (c.start.0, c.end().0);
        self.pending.iter().any(|&(ps, pe)| s < pe && e > ps)
    }
}

impl<S: CmdSource> CmdSource for TrimBatcher<S> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        loop {
            if let Some(c) = self.out.pop_front() {
                return Ok(Some(c));
            }
            let Some(c) = self.inner.next_cmd()? else {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                self.issue(self.last);
                continue;
            };
            let window_end = SimTime(self.opened.0.saturating_add(self.window.0));
            if !self.pending.is_empty() && c.time > window_end {
                self.issue(window_end);
            }
            match c.op {
                Op::Trim => self.add(&c),
                Op::Flush => {
                    self.issue(c.time);
                    self.out.push_back(c);
                }
                _ => {
                    if self.overlaps(&c) {
                        self.issue(c.time);
                    }
                    self.out.push_back(c);
                }
            }
        }
    }

    forward_source!(|s| s.inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: u64, op: Op, s: u64, n: u64) -> HostCmd {
        HostCmd { time: SimTime(t), op, start: Sector(s), sectors: n, continued: false }
    }

    /// (time, op, start, sectors, continued) of an output command.
    type Out = (u64, Op, u64, u64, bool);

    fn batch(cmds: Vec<HostCmd>, max: u32, window: u64) -> (Vec<Out>, BatchStats) {
        let mut b = TrimBatcher::new(crate::trace::list::CmdList::new("vec", cmds), max, Nanos(window), 8);
        let mut out = Vec::new();
        while let Some(c) = b.next_cmd().unwrap() {
            out.push((c.time.0, c.op, c.start.0, c.sectors, c.continued));
        }
        (out, b.stats())
    }

    #[test]
    fn trims_within_the_window_become_one_command_and_adjacent_ranges_merge() {
        let (out, stats) = batch(
            vec![
                c(0, Op::Trim, 0, 8),
                c(10, Op::Write, 100, 8),
                c(20, Op::Trim, 8, 8), // adjacent to the first
                c(30, Op::Trim, 64, 8),
                c(2000, Op::Trim, 200, 8), // after the window
            ],
            64,
            1000,
        );
        assert_eq!(
            out,
            vec![
                (10, Op::Write, 100, 8, false),
                (1000, Op::Trim, 0, 16, true),
                (1000, Op::Trim, 64, 8, false),
                (2000, Op::Trim, 200, 8, false),
            ]
        );
        assert_eq!(stats, BatchStats { ranges_in: 4, ranges_merged: 1, commands_out: 2 });
        // Meeting inside a page, or overlapping: listed apart.
        let (out, _) = batch(vec![c(0, Op::Trim, 0, 12), c(1, Op::Trim, 12, 4), c(2, Op::Trim, 10, 8)], 64, 10);
        assert_eq!(out, vec![(2, Op::Trim, 0, 12, true), (2, Op::Trim, 12, 4, true), (2, Op::Trim, 10, 8, false)]);
    }

    #[test]
    fn a_full_batch_an_overlapping_command_or_a_flush_closes_it() {
        let (out, _) = batch(vec![c(0, Op::Trim, 0, 8), c(1, Op::Trim, 16, 8), c(2, Op::Trim, 32, 8)], 2, 1000);
        assert_eq!(out, vec![(1, Op::Trim, 0, 8, true), (1, Op::Trim, 16, 8, false), (2, Op::Trim, 32, 8, false)]);
        let (out, _) = batch(vec![c(0, Op::Trim, 0, 8), c(5, Op::Read, 4, 1), c(6, Op::Read, 0, 1)], 64, 1000);
        assert_eq!(out, vec![(5, Op::Trim, 0, 8, false), (5, Op::Read, 4, 1, false), (6, Op::Read, 0, 1, false)]);
        let (out, _) = batch(vec![c(0, Op::Trim, 0, 8), c(5, Op::Read, 8, 8), c(7, Op::Flush, 0, 0)], 64, 1000);
        assert_eq!(out, vec![(5, Op::Read, 8, 8, false), (7, Op::Trim, 0, 8, false), (7, Op::Flush, 0, 0, false)]);
    }

    #[test]
    fn arrival_times_stay_in_order() {
        let mut cmds = Vec::new();
        for i in 0..500u64 {
            let op = [Op::Trim, Op::Trim, Op::Write, Op::Read, Op::Trim][(i * 7 % 5) as usize];
            cmds.push(c(i * 37, op, (i * 7919) % 4096, 8));
        }
        let (out, stats) = batch(cmds, 8, 300);
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(stats.commands_out < stats.ranges_in);
        let ranges_out = out.iter().filter(|o| o.1 == Op::Trim).count() as u64;
        assert_eq!(ranges_out, stats.ranges_in - stats.ranges_merged);
    }
}
