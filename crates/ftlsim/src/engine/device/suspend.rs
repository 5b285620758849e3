//! Erase and program suspend (`timing.erase_suspend_us`,
//! `timing.program_suspend_us`): a read that would wait for the erase, or
//! the GC copy's program, its die (or plane) is doing goes in the middle
//! of it. The die suspends the operation the suspend latency after the
//! read arrives, senses the page and sends it over the bus, then resumes
//! the operation with the time it had left, so it ends later by the read's
//! whole hold and the latency. A read arriving while the operation is
//! already suspended for an earlier one follows that read, with no second
//! latency (the die is in its suspended state). Host reads and the map
//! reads done for them (`Cause::Host`, `Cause::Mapping`) suspend; GC's
//! reads wait, as a controller suspends for latency-critical reads only.
//! An erase is tried first, then a program.
//!
//! The operation's end moves later only into idle time: the engine books
//! an operation once, at a fixed time, and what was booked on the unit
//! after it cannot move. Where the unit has work booked within the time
//! the extension needs, the read waits as without suspend. An operation
//! booked before the suspend to follow it on *another* unit (a foreground
//! GC's host write on another plane, booked for the erase's first end) is
//! not moved either.
//!
//! Which programs: only GC's copies booked by [`Device::copy_run`] outside
//! a run a read may take back ([`super::preempt`]), the page FTLs'
//! background copies, whose ends no host command was told. A host write's
//! program, a destage, a merge's, a translation page's, are not suspended:
//! their ends were returned to the host or the controller when they were
//! booked. A copy of a kept run is not either (a read takes back the copies
//! not yet begun instead; the one in progress is waited for).
//!
//! Simplifications: per unit, the latest erase and the latest such program
//! booked are the ones a read may suspend (an erase or program booked
//! behind one ends its suspendability); no limit on how often one
//! operation is suspended (a die the reads never leave idle has it pushed
//! back read after read, as a controller without a cap would); resuming
//! costs nothing beyond the suspend latency. Not with multi-plane groups
//! (the config refuses it) nor in a fast-forward (its units-only timing
//! books no gaps).

use super::{Cause, Device, NO_PAGE};
use crate::units::{BlockId, Nanos, Ppn, SimTime};
use serde::{Deserialize, Serialize};

/// An operation a read may suspend on a unit: its block (and page, for a
/// program), its cause, when it started and (as its calendar holds it)
/// ends, and from when it is working again (its start, or the end of the
/// last read it was suspended for).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Suspendable {
    block: BlockId,
    page: u32,
    cause: Cause,
    start: SimTime,
    end: SimTime,
    resume: SimTime,
}

/// Per unit, the erase and the program a read may suspend; empty where the
/// setting is off.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Suspendables {
    erases: Vec<Option<Suspendable>>,
    programs: Vec<Option<Suspendable>>,
}

impl Suspendables {
    pub(super) fn new(units: usize, erase: Nanos, program: Nanos) -> Suspendables {
        let per_unit = |on: bool| if on { vec![None; units] } else { Vec::new() };
        Suspendables { erases: per_unit(erase > Nanos::ZERO), programs: per_unit(program > Nanos::ZERO) }
    }

    /// Whether any operation may be suspended.
    #[inline(always)]
    pub(super) fn any(&self) -> bool {
        !self.erases.is_empty() || !self.programs.is_empty()
    }

    /// Whether GC's copy programs may be suspended.
    #[inline(always)]
    pub(super) fn programs(&self) -> bool {
        !self.programs.is_empty()
    }

    /// The clock restarts: nothing is in progress.
    pub(super) fn clear(&mut self) {
        self.erases.fill(None);
        self.programs.fill(None);
    }
}

impl Device {
    /// Notes the erase of `block` just booked on `unit`, from `start` to
    /// `end`, as the one a read there may suspend.
    #[inline]
    pub(super) fn erase_booked(&mut self, unit: usize, block: BlockId, cause: Cause, start: SimTime, end: SimTime) {
        if let Some(e) = self.suspendable.erases.get_mut(unit) {
            *e = Some(Suspendable { block, page: NO_PAGE, cause, start, end, resume: start });
        }
    }

    /// Notes GC's copy into page `ppn` (of `cause`) just booked on `unit`, from `start`
    /// to `end`, as the program a read there may suspend.
    #[inline]
    pub(super) fn copy_booked(&mut self, unit: usize, ppn: Ppn, cause: Cause, start: SimTime, end: SimTime) {
        let geo = self.array.geometry();
        let (block, page) = (geo.block_of(ppn), geo.page_in_block(ppn));
        if let Some(p) = self.suspendable.programs.get_mut(unit) {
            *p = Some(Suspendable { block, page, cause, start, end, resume: start });
        }
    }

    /// A read of `cause` on `ch` and `unit` (page of `block`), ready at
    /// `not_before`, holding the unit `before` and then the bus `transfer`,
    /// served by suspending the erase or program in progress on the unit;
    /// `None` if there is none to suspend, the read is not one that
    /// suspends, waiting would be as quick, or the operation cannot end
    /// later (see the module doc). Returns when the read's data has crossed
    /// the bus.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_suspending(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        not_before: SimTime,
        cause: Cause,
        before: Nanos,
        transfer: Nanos,
    ) -> Option<SimTime> {
        if !matches!(cause, Cause::Host | Cause::Mapping) {
            return None;
        }
        let t = self.timing;
        let erase = self.suspendable.erases.get(unit).copied().flatten();
        let program = self.suspendable.programs.get(unit).copied().flatten();
        let (op, latency, is_erase) = match (erase, program) {
            (Some(e), _) if e.start <= not_before && not_before < e.end => (e, t.erase_suspend, true),
            (_, Some(p)) if p.start <= not_before && not_before < p.end => (p, t.program_suspend, false),
            _ => return None,
        };
        // A program is moved only as its block's latest (reads of its page
        // wait for its end through the block's program tail).
        if !is_erase && self.prog_tail[op.block.idx()].last != op.page {
            return None;
        }
        // Suspended already: the read follows the last one, the
        // operation's remaining time as it was. Else the operation stops at
        // the read's arrival and the read starts a suspend latency later.
        let (start, left) = if not_before < op.resume {
            (op.resume, op.end - op.resume)
        } else {
            (not_before + latency, op.end - not_before)
        };
        if start >= op.end {
            return None;
        }
        self.catch_up(unit);
        self.channels[ch].advance(self.horizon);
        let on_bus = self.channels[ch].find(start + before, transfer);
        let done = on_bus + transfer;
        let end = done + left;
        if self.units[unit].fits(op.end, end).is_err() {
            return None;
        }
        self.served.serve(start, cause);
        self.channels[ch].insert(on_bus, transfer);
        self.served.bus_wait(on_bus - (start + before), cause);
        // The unit holds the operation longer; of that, the read's hold is
        // the read's, the latency the operation's.
        self.hold(unit, Some(op.block), op.end, end, op.cause);
        let read = (done - start).0;
        self.busy.units[op.cause as usize] -= read;
        self.busy.units[cause as usize] += read;
        if let Some(b) = block {
            let last = &mut self.block_last[b.idx()];
            *last = (*last).max(done);
        }
        let moved = Some(Suspendable { end, resume: done, ..op });
        if is_erase {
            self.suspendable.erases[unit] = moved;
            self.erase_suspends += 1;
        } else {
            self.prog_tail[op.block.idx()].moved_later(op.page, end);
            if let Some(p) = self.power.as_mut() {
                p.moved_later(self.array.geometry().ppn(op.block, op.page), end);
            }
            self.suspendable.programs[unit] = moved;
            self.program_suspends += 1;
        }
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

    /// A GC copy's program is suspended for a host read, the copied page's
    /// readers wait for its moved end; a host write's program is not.
    #[test]
    fn a_host_read_suspends_a_gc_copys_program_not_a_host_writes() {
        let mut d = device_timed(|t| t.program_suspend_us = 50.0);
        let host = |d: &mut Device, page: u32| {
            d.program(Ppn(page), Lpn(page), SimTime::ZERO, Cause::Host, Payload::None).unwrap()
        };
        assert_eq!(host(&mut d, 0), SimTime(PROGRAM));
        assert_eq!(host(&mut d, 1), SimTime(2 * PROGRAM));
        // A host read during page 1's (host) program waits for it.
        let t = SimTime(PROGRAM + 100 * US);
        assert_eq!(d.read(Ppn(0), t, Cause::Host).unwrap(), SimTime(2 * PROGRAM + READ));
        let dst = d.geometry().ppn(BlockId(1), 0);
        d.copy_run(&[1], dst, SimTime::ZERO, |_| Cause::Gc).unwrap();
        // The copy reads once the host read of its block is done.
        let copy_start = 2 * PROGRAM + READ;
        let copy_end = SimTime(copy_start + READ + PROGRAM);
        assert_eq!(d.plane_free(crate::units::PlaneId(0)), copy_end);
        let t = SimTime(copy_start + READ + 100 * US);
        let read = d.read(Ppn(0), t, Cause::Host).unwrap();
        assert_eq!(read, t + Nanos(SUSPEND + READ));
        let moved = read + (copy_end - t);
        assert_eq!(d.plane_free(crate::units::PlaneId(0)), moved);
        assert_eq!((d.program_suspends, d.erase_suspends), (1, 0));
        // The copy's page is read once its program has ended.
        assert_eq!(d.read(dst, SimTime::ZERO, Cause::Host).unwrap(), moved + Nanos(READ));
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
