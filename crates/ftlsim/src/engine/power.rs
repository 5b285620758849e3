//! What a power cut does to the flash operations in flight.
//!
//! The engine books operations eagerly: when a command is served, its
//! programs and erases are already applied to the array with completion
//! times that may lie after the moment power fails. [`PowerTrack`] keeps
//! the recent programs' completion times so a cut can undo what had not
//! finished: a program that ends after the cut leaves its page *torn*
//! (consumed, unreadable; see `NandArray::tear`).
//!
//! An erase cannot be undone (its data is gone from the model), and the
//! FTLs book a command's work in an order a drive would not: a host write
//! invalidates the old copy, may erase its block in a GC, and only then
//! programs the new copy. So an erase is taken as a barrier: the drive
//! finishes every program booked by the command that erased (or before it)
//! before erasing. The cut therefore falls no earlier than the last erase's
//! start and the end of those programs; only programs of later commands can
//! tear. A cut moved so is reported (`RecoveryReport::at_s` is the
//! effective time). An erase in progress at the cut is taken as finished.
//!
//! Simplification: the barrier is not timed (the erase does not wait for
//! programs on other units); it only decides what a cut may tear.

use crate::units::{Ppn, SimTime};
use serde::{Deserialize, Serialize};

/// Programs kept before old ones are pruned (see [`PowerTrack::prune`]).
const KEEP: usize = 1 << 16;

#[derive(Default, Serialize, Deserialize)]
pub struct PowerTrack {
    /// Programs, when each ends, and the command that booked it, in
    /// booking order.
    programs: Vec<(u32, SimTime, u64)>,
    /// The host command being served (background work counts as the last).
    command: u64,
    /// The latest start of any erase booked, and the command that booked
    /// the last one.
    last_erase_start: SimTime,
    last_erase_command: Option<u64>,
}

impl PowerTrack {
    #[inline]
    pub fn programmed(&mut self, ppn: Ppn, done: SimTime) {
        self.programs.push((ppn.0, done, self.command));
    }

    /// The program of `ppn` now ends at `done` (suspended for a read).
    pub fn moved_later(&mut self, ppn: Ppn, done: SimTime) {
        if let Some(p) = self.programs.iter_mut().rev().find(|p| p.0 == ppn.0) {
            p.1 = p.1.max(done);
        }
    }

    #[inline]
    pub fn erase_started(&mut self, start: SimTime) {
        self.last_erase_start = self.last_erase_start.max(start);
        self.last_erase_command = Some(self.command);
    }

    /// A host command starts.
    #[inline]
    pub fn next_command(&mut self) {
        self.command += 1;
    }

    /// Forgets programs that ended by `t`, once there are many: no cut can
    /// fall before `t` any more (the host has issued a command at `t`).
    pub fn prune(&mut self, t: SimTime) {
        if self.programs.len() >= KEEP {
            self.programs.retain(|&(_, done, _)| done > t);
        }
    }

    /// Power fails at `at`: returns the effective time of the cut and the
    /// pages whose programs had not ended by then (to be torn), and
    /// forgets them.
    pub fn cut(&mut self, at: SimTime) -> (SimTime, Vec<Ppn>) {
        let barrier = |c: u64| self.last_erase_command.is_some_and(|e| c <= e);
        let before_erase = self.programs.iter().filter(|p| barrier(p.2)).map(|p| p.1).max();
        let cut = at.max(self.last_erase_start).max(before_erase.unwrap_or(SimTime::ZERO));
        let torn =
            self.programs.iter().filter(|&&(_, done, c)| done > cut && !barrier(c)).map(|&(p, ..)| Ppn(p)).collect();
        self.programs.clear();
        (cut, torn)
    }

    /// The clock restarts at zero (after preconditioning).
    pub fn reset(&mut self) {
        let command = self.command;
        *self = PowerTrack { command, ..PowerTrack::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_ending_after_the_cut_are_torn_and_erases_move_the_cut() {
        let mut p = PowerTrack::default();
        p.next_command();
        p.programmed(Ppn(1), SimTime(100));
        p.programmed(Ppn(2), SimTime(300));
        p.programmed(Ppn(3), SimTime(500));
        assert_eq!(p.cut(SimTime(200)), (SimTime(200), vec![Ppn(2), Ppn(3)]));
        // An erase is a barrier for its command's programs and earlier ones.
        p.programmed(Ppn(4), SimTime(1000));
        p.next_command();
        p.programmed(Ppn(5), SimTime(2000));
        p.erase_started(SimTime(1500));
        p.programmed(Ppn(6), SimTime(2500));
        p.next_command();
        p.programmed(Ppn(7), SimTime(1800));
        p.programmed(Ppn(8), SimTime(3000));
        assert_eq!(p.cut(SimTime(900)), (SimTime(2500), vec![Ppn(8)]));
    }
}
