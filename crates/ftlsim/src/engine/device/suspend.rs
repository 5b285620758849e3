//! Erase suspend (`timing.erase_suspend_us`): a read that would wait for
//! the erase its die (or plane) is doing goes in the middle of it. The die
//! suspends the erase the suspend latency after the read arrives, senses
//! the page and sends it over the bus, then resumes the erase with the time
//! it had left, so the erase ends later by the read's whole hold and the
//! latency. A read arriving while the erase is already suspended for an
//! earlier one follows that read, with no second latency (the die is in
//! its suspended state). Host reads and the map reads done for them
//! (`Cause::Host`, `Cause::Mapping`) suspend; GC's reads wait, as a
//! controller suspends for latency-critical reads only.
//!
//! The erase's end moves later only into idle time: the engine books an
//! operation once, at a fixed time, and what was booked on the unit after
//! the erase cannot move. Where the unit has work booked within the time
//! the extension needs, the read waits for the erase as without suspend.
//! An operation booked before the suspend to follow the erase on *another*
//! unit (a foreground GC's host write on another plane, booked for the
//! erase's first end) is not moved either.
//!
//! Simplifications: the unit's latest erase is the one a read may suspend
//! (an erase booked behind it ends the first's suspendability); no limit
//! on how often one erase is suspended (a die the reads never leave idle
//! has its erase pushed back read after read, as a controller without a
//! cap would); resuming costs nothing beyond the suspend latency; programs
//! are not suspended. Not with multi-plane groups (the config refuses it)
//! nor in a fast-forward (its units-only timing books no gaps).

use super::{Cause, Device};
use crate::units::{BlockId, Nanos, SimTime};
use serde::{Deserialize, Serialize};

/// The erase a read may suspend on a unit: its block, its cause, when it
/// started and (as its calendar holds it) ends, and from when it is
/// erasing again (its start, or the end of the last read it was suspended
/// for).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Erasing {
    block: BlockId,
    cause: Cause,
    start: SimTime,
    end: SimTime,
    resume: SimTime,
}

impl Device {
    /// Notes the erase of `block` just booked on `unit`, from `start` to
    /// `end`, as the one a read there may suspend.
    #[inline]
    pub(super) fn erase_booked(&mut self, unit: usize, block: BlockId, cause: Cause, start: SimTime, end: SimTime) {
        if self.timing.erase_suspend > Nanos::ZERO {
            self.erasing[unit] = Some(Erasing { block, cause, start, end, resume: start });
        }
    }

    /// A read of `cause` on `ch` and `unit` (page of `block`), ready at
    /// `not_before`, holding the unit `before` and then the bus `transfer`,
    /// served by suspending the erase in progress on the unit; `None` if
    /// there is none to suspend, the read is not one that suspends, waiting
    /// would be as quick, or the erase cannot end later (see the module
    /// doc). Returns when the read's data has crossed the bus.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_suspending_erase(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        not_before: SimTime,
        cause: Cause,
        before: Nanos,
        transfer: Nanos,
    ) -> Option<SimTime> {
        let e = self.erasing.get(unit).copied().flatten()?;
        if !matches!(cause, Cause::Host | Cause::Mapping) || not_before < e.start || not_before >= e.end {
            return None;
        }
        // Suspended already: the read follows the last one, the erase's
        // remaining time as it was. Else the erase stops at the read's
        // arrival and the read starts a suspend latency later.
        let (start, left) = if not_before < e.resume {
            (e.resume, e.end - e.resume)
        } else {
            (not_before + self.timing.erase_suspend, e.end - not_before)
        };
        if start >= e.end {
            return None;
        }
        self.catch_up(unit);
        self.channels[ch].advance(self.horizon);
        let on_bus = self.channels[ch].find(start + before, transfer);
        let done = on_bus + transfer;
        let end = done + left;
        if self.units[unit].fits(e.end, end).is_err() {
            return None;
        }
        if self.preempt.any() {
            self.preempt.confirm(unit);
        }
        self.served.serve(start, cause);
        self.channels[ch].insert(on_bus, transfer);
        self.served.bus_wait(on_bus - (start + before), cause);
        self.units[unit].insert(e.end, end - e.end);
        self.unit_free.set(unit, self.units[unit].last_end());
        if let Some(b) = block {
            let last = &mut self.block_last[b.idx()];
            *last = (*last).max(done);
        }
        self.block_last[e.block.idx()] = self.block_last[e.block.idx()].max(end);
        // The read's hold is the read's; the latency, the erase's.
        self.busy.units[cause as usize] += (done - start).0;
        self.busy.units[e.cause as usize] += (end - e.end).0 - (done - start).0;
        self.erasing[unit] = Some(Erasing { end, resume: done, ..e });
        self.erase_suspends += 1;
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{XFER, device_timed};
    use super::*;
    use crate::nand::Payload;
    use crate::units::{Lpn, Ppn};

    const US: u64 = 1_000;
    const READ: u64 = 20 * US + XFER;
    const PROGRAM: u64 = XFER + 200 * US;
    const ERASE: u64 = 1_500 * US;
    const SUSPEND: u64 = 50 * US;

    /// A drive with 50 µs erase suspend: page 0 of block 0 programmed,
    /// then block 1 (the same plane) erased from when that ends. Returns
    /// the drive and the erase's end.
    fn erasing() -> (Device, SimTime) {
        let mut d = device_timed(|t| t.erase_suspend_us = 50.0);
        let p = d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(p, SimTime(PROGRAM));
        let e = d.erase(BlockId(1), SimTime::ZERO, Cause::Gc).unwrap();
        assert_eq!(e, SimTime(PROGRAM + ERASE));
        (d, e)
    }

    /// A host read arriving mid-erase starts a suspend latency later; the
    /// erase ends later by the latency and the read; a second read while
    /// the erase is suspended follows the first with no latency of its own.
    #[test]
    fn a_host_read_suspends_the_erase_and_the_erase_ends_later() {
        let (mut d, erase_end) = erasing();
        let t = SimTime(PROGRAM + 300 * US);
        let first = d.read(Ppn(0), t, Cause::Host).unwrap();
        assert_eq!(first, t + Nanos(SUSPEND + READ));
        let left = erase_end - t;
        assert_eq!(d.plane_free(crate::units::PlaneId(0)), first + left);
        let second = d.read(Ppn(0), t + Nanos(10 * US), Cause::Host).unwrap();
        assert_eq!(second, first + Nanos(READ), "follows the first read, no second latency");
        assert_eq!(d.plane_free(crate::units::PlaneId(0)), second + left);
        assert_eq!(d.erase_suspends, 2);
        // Busy time: the erase, its one latency, the two reads and the
        // program (the unit's share).
        let busy: u64 = d.busy.units.iter().sum();
        assert_eq!(busy, PROGRAM + ERASE + SUSPEND + 2 * READ);
        // The erased block's next program waits for the moved end.
        let p = d.program(d.geometry().ppn(BlockId(1), 0), Lpn(1), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(p, second + left + Nanos(PROGRAM));
    }

    /// Without the setting, and for GC's reads, a read waits out the erase.
    #[test]
    fn without_suspend_and_for_gc_reads_the_read_waits_for_the_erase() {
        let (mut d, erase_end) = erasing();
        let t = SimTime(PROGRAM + 300 * US);
        assert_eq!(d.read(Ppn(0), t, Cause::Gc).unwrap(), erase_end + Nanos(READ));
        assert_eq!(d.erase_suspends, 0);
        let mut d = device_timed(|_| {});
        d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        let erase_end = d.erase(BlockId(1), SimTime::ZERO, Cause::Gc).unwrap();
        assert_eq!(d.read(Ppn(0), t, Cause::Host).unwrap(), erase_end + Nanos(READ));
    }

    /// An erase with work booked right behind it on its unit cannot end
    /// later: the read waits for the erase and that work, as without
    /// suspend.
    #[test]
    fn an_erase_with_work_booked_behind_it_is_not_suspended() {
        let (mut d, erase_end) = erasing();
        let p = d.program(Ppn(1), Lpn(1), erase_end, Cause::Gc, Payload::None).unwrap();
        assert_eq!(p, erase_end + Nanos(PROGRAM));
        let t = SimTime(PROGRAM + 300 * US);
        assert_eq!(d.read(Ppn(0), t, Cause::Host).unwrap(), p + Nanos(READ));
        assert_eq!(d.erase_suspends, 0);
    }

    /// A read arriving so late in the erase that the suspend latency would
    /// outlast it waits for the end instead.
    #[test]
    fn a_read_near_the_erases_end_waits_for_it() {
        let (mut d, erase_end) = erasing();
        let t = SimTime(erase_end.0 - SUSPEND / 2);
        assert_eq!(d.read(Ppn(0), t, Cause::Host).unwrap(), erase_end + Nanos(READ));
        assert_eq!(d.erase_suspends, 0);
    }
}
