//! The controller's firmware cores (`controller.cores`,
//! `controller.command_us`): every host command takes core time before its
//! data moves, on whichever core is free soonest, so commands queue for a
//! core when all are busy and the drive serves at most `cores /
//! command_us` commands a second, however many dies it has. A TRIM's core
//! work (`trim.command_us`, its ranges and its map RAM accesses:
//! [`crate::trim`]) runs on the same cores.
//!
//! With `controller.command_us = 0` (the default) a command takes no core
//! time and waits for none, and only TRIMs' work occupies the cores (one by
//! default, so TRIMs queue behind TRIMs).
//!
//! Simplifications: a command's core time is one slice at its start (the
//! completion entry's share included), the same for every command kind
//! and size; cores take commands first come, first served.

use crate::units::{Nanos, SimTime};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cores {
    /// When each core has finished the work booked on it.
    free: Vec<SimTime>,
    /// Core time of each host command but TRIM.
    command: Nanos,
    /// Core time booked since the last restart, all cores together.
    busy: Nanos,
}

impl Cores {
    pub fn new(cores: u32, command: Nanos) -> Cores {
        Cores { free: vec![SimTime::ZERO; cores.max(1) as usize], command, busy: Nanos::ZERO }
    }

    /// A host command (not a TRIM) arriving at `at` takes its core time;
    /// returns when that ends and the command's own work may start.
    #[inline]
    pub fn command(&mut self, at: SimTime) -> SimTime {
        if self.command == Nanos::ZERO {
            return at;
        }
        let (core, start) = self.soonest(at);
        self.occupy(core, start, start + self.command)
    }

    /// The core free soonest (the lowest-numbered of those free by `at`)
    /// and when work arriving at `at` may start on it.
    #[inline]
    pub fn soonest(&self, at: SimTime) -> (usize, SimTime) {
        let (core, free) = self.free.iter().enumerate().min_by_key(|&(i, &t)| (t.max(at), i)).expect("a core");
        (core, (*free).max(at))
    }

    /// Books `core` busy from `start` to `end`; returns `end`.
    #[inline]
    pub fn occupy(&mut self, core: usize, start: SimTime, end: SimTime) -> SimTime {
        debug_assert!(start >= self.free[core] && end >= start, "core {core} booked twice");
        self.free[core] = end;
        self.busy = self.busy + (end - start);
        end
    }

    /// Core time of one host command.
    pub fn command_time(&self) -> Nanos {
        self.command
    }

    /// When every core has finished what is booked on it.
    pub fn last_end(&self) -> SimTime {
        self.free.iter().copied().max().unwrap_or(SimTime::ZERO)
    }

    pub fn count(&self) -> usize {
        self.free.len()
    }

    /// Core time booked since the last restart, all cores together.
    pub fn busy(&self) -> Nanos {
        self.busy
    }

    /// Time and counters restart from zero (between measurement phases).
    pub fn restart(&mut self) {
        self.free.fill(SimTime::ZERO);
        self.busy = Nanos::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(x: u64) -> SimTime {
        SimTime(x * 1000)
    }

    #[test]
    fn commands_take_the_core_free_soonest_and_queue_when_all_are_busy() {
        let mut c = Cores::new(2, Nanos(5_000));
        // Four commands at once on two cores: two start at once, two wait.
        let ends: Vec<_> = (0..4).map(|_| c.command(us(10))).collect();
        assert_eq!(ends, [us(15), us(15), us(20), us(20)]);
        // A command after both are free waits for nothing.
        assert_eq!(c.command(us(100)), us(105));
        assert_eq!(c.busy(), Nanos(25_000));
        c.restart();
        assert_eq!((c.busy(), c.command(us(0))), (Nanos::ZERO, us(5)));
    }

    #[test]
    fn without_command_time_a_command_neither_takes_nor_waits_for_a_core() {
        let mut c = Cores::new(1, Nanos::ZERO);
        let (core, start) = c.soonest(us(0));
        c.occupy(core, start, us(50)); // a TRIM's work
        assert_eq!(c.command(us(10)), us(10));
        assert_eq!(c.busy(), Nanos(50_000));
        // Another TRIM queues behind it.
        assert_eq!(c.soonest(us(10)), (0, us(50)));
    }
}
