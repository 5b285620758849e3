//! The device API: flash operations with timing, counted by cause.
//!
//! Resources: one bus per channel, and one array unit per die (or per plane
//! when `timing.plane_parallel` is set), plus the host link. With
//! `timing.multi_plane` a die's planes overlap only in multi-plane
//! operations (see [`multi_plane`]). An array unit,
//! a bus and the host link each keep a [`Calendar`] of their future work,
//! so an operation or transfer takes the first idle gap rather than
//! queueing behind one booked for later (on the host link: a read's data
//! that waits for a busy plane does not hold up the data of the commands
//! that arrive after it, on other planes).
//! A read occupies its unit for tR and then the bus for the page transfer
//! (the unit stays busy until its page register drains); a program moves the
//! page over the bus once its unit is free and then occupies the unit for
//! tPROG; an erase occupies the unit for tBERS. Busy time is summed per
//! resource class (and per cause on the units) for the utilization report.
//!
//! A byte-addressable PCM (phase-change memory) holding an FTL's mapping
//! table, as in HAT, is one more resource, independent of the flash
//! channels, so its accesses overlap flash work. Writes (90 µs in HAT's
//! Table 4) queue behind each other; reads are served ahead of queued
//! writes, as PCM controllers do by pausing writes (Qureshi et al., HPCA
//! 2010) and as HAT's Figure 7 overlap of a lookup with a write-back
//! assumes, so reads queue only behind reads, and a paused write resumes
//! after the read: the PCM is busy for the sum of its accesses.

mod deferred;
mod multi_plane;
mod preempt;
mod suspend;
mod unit_times;

use super::calendar::Calendar;
use crate::error::Result;
use crate::nand::{Geometry, NandArray, PageOob, Payload, Timing};
use crate::units::{BlockId, Lpn, Nanos, PlaneId, Ppn, SimTime};
use multi_plane::Group;
use serde::{Deserialize, Serialize};
use std::cell::Cell;

pub use multi_plane::MultiPlaneCounters;

/// Why a flash operation happened; every counter is split by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// Serving a host command.
    Host,
    /// Garbage collection.
    Gc,
    /// Reading or writing the FTL's own mapping tables.
    Mapping,
    /// Hybrid-FTL log-block merges.
    Merge,
    /// Data-cache write-back.
    Cache,
    /// Data placed at no cost: preconditioning, or reads of never-written pages.
    Placement,
}

pub const CAUSES: [Cause; 6] = [Cause::Host, Cause::Gc, Cause::Mapping, Cause::Merge, Cause::Cache, Cause::Placement];

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Host => "host",
            Cause::Gc => "gc",
            Cause::Mapping => "mapping",
            Cause::Merge => "merge",
            Cause::Cache => "cache",
            Cause::Placement => "placement",
        }
    }
}

/// Flash operation counts, indexed by `Cause as usize`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlashCounters {
    pub reads: [u64; 6],
    pub programs: [u64; 6],
    pub erases: [u64; 6],
    /// Blocks whose first page was programmed (N_pb in the TRIM paper).
    pub blocks_opened: u64,
}

impl FlashCounters {
    /// Total over the causes that cost time (placement excluded).
    pub fn timed(counts: &[u64; 6]) -> u64 {
        counts.iter().sum::<u64>() - counts[Cause::Placement as usize]
    }
}

/// PCM accesses, counted for the energy model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcmCounters {
    pub reads: u64,
    pub writes: u64,
}

/// Time each resource class spent busy, ns (summed over its resources);
/// the buses' is in their calendars ([`Device::bus_busy_ns`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusyTime {
    /// Array units (dies, or planes with `timing.plane_parallel`), by cause.
    pub units: [u64; 6],
    pub host_link: u64,
    pub pcm: u64,
}

/// The page of a system-area operation, which never joins a group.
const NO_PAGE: u32 = u32::MAX;

/// When the drive started the current host command's own work (host link
/// transfers, flash and PCM work for the host or its mapping; `u64::MAX`
/// if none), and the longest wait of that work for a channel bus.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Served {
    from: SimTime,
    bus_waited: Nanos,
}

impl Default for Served {
    fn default() -> Served {
        Served { from: SimTime(u64::MAX), bus_waited: Nanos::ZERO }
    }
}

impl Served {
    #[inline]
    fn serve(&mut self, start: SimTime, cause: Cause) {
        if matches!(cause, Cause::Host | Cause::Mapping) && start < self.from {
            self.from = start;
        }
    }

    #[inline]
    fn bus_wait(&mut self, waited: Nanos, cause: Cause) {
        if matches!(cause, Cause::Host | Cause::Mapping) && waited > self.bus_waited {
            self.bus_waited = waited;
        }
    }

    /// A copy booked as `b`, its read's transfer due `read_before` after
    /// the read starts. (The program's start is after the read's: the
    /// read's is the one `serve` keeps.)
    #[inline(always)]
    fn copy(&mut self, b: &Booked, read_before: Nanos, cause: Cause) {
        self.serve(b.read_start, cause);
        self.bus_wait(b.read_bus - (b.read_start + read_before), cause);
        self.bus_wait(b.prog_bus - b.prog_start, cause);
    }
}

/// The earliest start at or after `earliest` at which `unit` is idle until
/// the operation ends, as `end_of` computes from its start (it waits for a
/// bus slot): a gap at least `min_len` long, or the next. Returns the start
/// and what `end_of` returned first (the bus slot).
#[inline(always)]
fn slot(
    unit: &Calendar,
    earliest: SimTime,
    min_len: Nanos,
    end_of: impl Fn(SimTime) -> (SimTime, SimTime),
) -> (SimTime, SimTime) {
    let mut start = unit.find(earliest, min_len);
    loop {
        let (slot, end) = end_of(start);
        // An operation ends after it starts: a plain subtraction (`SimTime`'s
        // saturates), on every booking.
        debug_assert!(end >= start);
        if Nanos(end.0 - start.0) <= min_len {
            // Within the gap `find` found: idle, no need to look again.
            return (start, slot);
        }
        match unit.fits(start, end) {
            Ok(()) => return (start, slot),
            Err(busy_until) => start = unit.find(busy_until, min_len),
        }
    }
}

/// Names the cause a GC copy is counted under from the copied page's LPN
/// (any `Fn(Lpn) -> Cause` does).
pub trait CauseOf {
    fn of(&self, lpn: Lpn) -> Cause;

    /// The cause of every copy, when it does not depend on the LPN: a
    /// run's copies that go straight on are then counted at once.
    #[inline(always)]
    fn uniform(&self) -> Option<Cause> {
        None
    }
}

impl<F: Fn(Lpn) -> Cause> CauseOf for F {
    #[inline(always)]
    fn of(&self, lpn: Lpn) -> Cause {
        self(lpn)
    }
}

/// Every copy counted under one cause.
#[derive(Clone, Copy, Debug)]
pub struct AllCopies(pub Cause);

impl CauseOf for AllCopies {
    #[inline(always)]
    fn of(&self, _: Lpn) -> Cause {
        self.0
    }

    #[inline(always)]
    fn uniform(&self) -> Option<Cause> {
        Some(self.0)
    }
}

/// The cause of GC's copy into `ppn`, named from the copied page's LPN.
#[inline(always)]
fn copy_cause(array: &NandArray, ppn: Ppn, cause_of: &impl CauseOf) -> Cause {
    cause_of.of(Lpn(array.oob_lpn_raw(ppn)))
}

/// Counts a GC copy's read and program (the page copied to `ppn`) under
/// the cause `cause_of` names for its LPN; returns that cause.
#[inline(always)]
fn count_copy(counters: &mut FlashCounters, array: &NandArray, ppn: Ppn, cause_of: &impl CauseOf) -> Cause {
    let cause = copy_cause(array, ppn, cause_of);
    counters.reads[cause as usize] += 1;
    counters.programs[cause as usize] += 1;
    cause
}

/// The resources (units or buses) a copy reads on and programs on: one,
/// or two apart. Monomorphized, so a copy within one unit compiles to the
/// loop it had before copies across units shared it.
trait Ends {
    /// Whether reading and programming share the one resource.
    const ONE: bool;
    fn from(&self) -> &Calendar;
    fn to(&self) -> &Calendar;
    /// [`Calendar::find_with_room`] on the source, and
    /// [`Calendar::find`] on the destination, each searching on from the
    /// run's last booking there (a run books at growing times).
    fn find_from(&self, earliest: SimTime, len: Nanos) -> (SimTime, Option<SimTime>);
    fn find_to(&self, earliest: SimTime, len: Nanos) -> SimTime;
    /// Books `read` on the source and `program` on the destination
    /// (`[start, end)` each, both idle): one interval on one resource
    /// where they touch.
    fn book(&mut self, read: (SimTime, SimTime), program: (SimTime, SimTime));
    /// [`Calendar::advance`] on each.
    fn advance(&mut self, horizon: SimTime);
    /// The one resource, if reading and programming share it, with its
    /// searches' hint.
    fn one(&mut self) -> Option<(&mut Calendar, &Cell<usize>)>;
}

/// The resources, each with where the run's searches on it go on from
/// ([`Calendar::find_with_room_hinted`]).
struct One<'a>(&'a mut Calendar, Cell<usize>);
struct Two<'a>(&'a mut Calendar, &'a mut Calendar, [Cell<usize>; 2]);

impl<'a> One<'a> {
    fn new(c: &'a mut Calendar) -> Self {
        One(c, Cell::new(usize::MAX))
    }
}

impl<'a> Two<'a> {
    fn new(from: &'a mut Calendar, to: &'a mut Calendar) -> Self {
        Two(from, to, [Cell::new(usize::MAX), Cell::new(usize::MAX)])
    }
}

impl Ends for One<'_> {
    const ONE: bool = true;

    #[inline(always)]
    fn from(&self) -> &Calendar {
        self.0
    }

    #[inline(always)]
    fn to(&self) -> &Calendar {
        self.0
    }

    #[inline(always)]
    fn find_from(&self, earliest: SimTime, len: Nanos) -> (SimTime, Option<SimTime>) {
        self.0.find_with_room_hinted(&self.1, earliest, len)
    }

    #[inline(always)]
    fn find_to(&self, earliest: SimTime, len: Nanos) -> SimTime {
        self.0.find_with_room_hinted(&self.1, earliest, len).0
    }

    #[inline(always)]
    fn book(&mut self, (r0, r1): (SimTime, SimTime), (p0, p1): (SimTime, SimTime)) {
        if p0 == r1 {
            self.0.insert_hinted(&self.1, r0, p1 - r0);
        } else {
            self.0.insert_hinted(&self.1, r0, r1 - r0);
            self.0.insert_hinted(&self.1, p0, p1 - p0);
        }
    }

    #[inline(always)]
    fn advance(&mut self, horizon: SimTime) {
        self.0.advance(horizon);
    }

    #[inline(always)]
    fn one(&mut self) -> Option<(&mut Calendar, &Cell<usize>)> {
        Some((self.0, &self.1))
    }
}

impl Ends for Two<'_> {
    const ONE: bool = false;

    #[inline(always)]
    fn from(&self) -> &Calendar {
        self.0
    }

    #[inline(always)]
    fn to(&self) -> &Calendar {
        self.1
    }

    #[inline(always)]
    fn find_from(&self, earliest: SimTime, len: Nanos) -> (SimTime, Option<SimTime>) {
        self.0.find_with_room_hinted(&self.2[0], earliest, len)
    }

    #[inline(always)]
    fn find_to(&self, earliest: SimTime, len: Nanos) -> SimTime {
        self.1.find_with_room_hinted(&self.2[1], earliest, len).0
    }

    #[inline(always)]
    fn book(&mut self, (r0, r1): (SimTime, SimTime), (p0, p1): (SimTime, SimTime)) {
        self.0.insert_hinted(&self.2[0], r0, r1 - r0);
        self.1.insert_hinted(&self.2[1], p0, p1 - p0);
    }

    #[inline(always)]
    fn advance(&mut self, horizon: SimTime) {
        self.0.advance(horizon);
        self.1.advance(horizon);
    }

    #[inline(always)]
    fn one(&mut self) -> Option<(&mut Calendar, &Cell<usize>)> {
        None
    }
}

/// A page of [`Device::copy_paced`]: copied from `src` (read first) or,
/// without one, programmed with `lpn` alone (padding), not before `at`.
#[derive(Clone, Copy, Debug)]
pub struct PacedPage {
    pub src: Option<Ppn>,
    pub dst: Ppn,
    pub lpn: Lpn,
    pub at: SimTime,
}

/// A unit's time through [`Device::copy_paced`] in a fast-forward, booked on its
/// calendar once at the end: when it is free, its last booking (start and
/// length), and the time booked in all.
struct UnitRun {
    unit: usize,
    free: SimTime,
    last_start: SimTime,
    last_len: Nanos,
    busy: Nanos,
}

impl UnitRun {
    /// `unit`'s run in `runs`, started from its calendar if new; `slot`
    /// maps a unit to its run's index (`u32::MAX`: none yet).
    fn of<'a>(runs: &'a mut Vec<UnitRun>, slot: &mut [u32], calendars: &[Calendar], unit: usize) -> &'a mut UnitRun {
        if slot[unit] == u32::MAX {
            slot[unit] = runs.len() as u32;
            let free = calendars[unit].free_alone();
            runs.push(UnitRun { unit, free, last_start: SimTime::ZERO, last_len: Nanos::ZERO, busy: Nanos::ZERO });
        }
        &mut runs[slot[unit] as usize]
    }

    /// Books `len` as `book_alone` would, not before `ready`; returns its end.
    fn book(&mut self, ready: SimTime, len: Nanos) -> SimTime {
        let start = ready.max(self.free);
        self.free = start + len;
        (self.last_start, self.last_len) = (start, len);
        self.busy = self.busy + len;
        self.free
    }
}

/// One page copy's timeline: the read holds the unit from `read_start`
/// and the bus from `read_bus` until `read_done`; the program holds the
/// unit from `prog_start` and the bus from `prog_bus` on, until `done`.
#[derive(Clone, Copy, Debug)]
struct Booked {
    read_start: SimTime,
    read_bus: SimTime,
    read_done: SimTime,
    prog_start: SimTime,
    prog_bus: SimTime,
    done: SimTime,
}

impl Booked {
    /// The unit time the copy holds. Plain subtractions (a timeline's
    /// phases are in order), not `SimTime`'s saturating one: ~40
    /// instructions a request less where every copy is counted.
    #[inline(always)]
    fn held(&self) -> Nanos {
        debug_assert!(self.read_start <= self.read_done && self.prog_start <= self.done, "a copy's phases in order");
        Nanos((self.read_done.0 - self.read_start.0) + (self.done.0 - self.prog_start.0))
    }

    /// The `k`th copy after this one where each goes straight on as the
    /// one before ends: one period (read start to program end) apart.
    #[inline(always)]
    fn nth(&self, k: u32) -> Booked {
        let d = Nanos((self.done.0 - self.read_start.0) * k as u64);
        Booked {
            read_start: self.read_start + d,
            read_bus: self.read_bus + d,
            read_done: self.read_done + d,
            prog_start: self.prog_start + d,
            prog_bus: self.prog_bus + d,
            done: self.done + d,
        }
    }
}

/// What a copy run's booking keeps for a host read to take back
/// ([`preempt`]).
#[derive(Clone, Copy)]
enum Keep<'a> {
    Nothing,
    /// A new run, copying these source pages.
    Run(&'a [u32]),
    /// Copies taken back, booked again (already counted).
    Again(&'a [preempt::KeptCopy]),
}

/// When a block's booked programs end, enough to bound when any page's
/// did: programs on a block run in page order, each at least `tPROG` and
/// its command and transfer long (`min`), so page `p`'s ended at least
/// `(q - p) × min` before page `q`'s. Kept: the latest program's page and
/// end, and the same for the page before the latest idle gap between two
/// programs (a program booked far ahead, waiting for its data, would
/// otherwise bound every older page by its own end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct ProgTail {
    last: u32,
    run_first: u32,
    end: SimTime,
    before_run: SimTime,
}

impl ProgTail {
    /// Page `page` programmed from `start` to `done`: the page after the
    /// last, or page 0 of an erased block.
    #[inline(always)]
    fn programmed(&mut self, page: u32, start: SimTime, done: SimTime) {
        if page == 0 {
            *self = ProgTail { last: 0, run_first: 0, end: done, before_run: SimTime::ZERO };
        } else {
            // A kept GC run taken back restores the tail before its pages
            // are booked again.
            debug_assert!(page > self.last, "page {page} programmed again after page {}", self.last);
            if start > self.end {
                (self.run_first, self.before_run) = (page, self.end);
            }
            (self.last, self.end) = (page, self.end.max(done));
        }
    }

    /// Pages `first`.. of `n` copies going straight on from `start`, each
    /// `period` long, its program starting `program_after` into it, as
    /// [`programmed`](Self::programmed) for each would: each program
    /// starts after the one before it ends (the copy's read between
    /// them), so only the first and the last two decide the tail.
    #[inline(always)]
    fn programmed_straight_on(&mut self, first: u32, n: u32, start: SimTime, period: Nanos, program_after: Nanos) {
        let copy = |k: u32| {
            let start = start.0 + k as u64 * period.0;
            (first + k, SimTime(start + program_after.0), SimTime(start + period.0))
        };
        let mut program = |k: u32| {
            let (page, start, done) = copy(k);
            self.programmed(page, start, done);
        };
        program(0);
        if n >= 3 {
            program(n - 2);
        }
        if n >= 2 {
            program(n - 1);
        }
    }

    /// The latest program, page `page`, now ends at `done` (it joined a
    /// multi-plane group that grew).
    #[inline(always)]
    fn moved_later(&mut self, page: u32, done: SimTime) {
        if page == self.last {
            self.end = self.end.max(done);
        }
    }

    /// No earlier than when page `page`'s program ended; `None` if it is
    /// not among the programs booked (placed, or booked before the clock
    /// was reset).
    #[inline(always)]
    fn done_by(&self, page: u32, min: Nanos) -> Option<SimTime> {
        if page > self.last {
            return None;
        }
        let (end, last) =
            if page >= self.run_first { (self.end, self.last) } else { (self.before_run, self.run_first - 1) };
        Some(SimTime(end.0.saturating_sub((last - page) as u64 * min.0)))
    }
}

/// A run of page copies' timing: each read (`[before, transfer]`) then its
/// program (`[transfer, after]`), after `not_before` and the source's and
/// the destination block's last operations (`last`); no booking before
/// `horizon`.
#[derive(Clone, Copy)]
struct CopyRun {
    read: [Nanos; 2],
    program: [Nanos; 2],
    not_before: SimTime,
    last: (SimTime, SimTime),
    horizon: SimTime,
}

impl CopyRun {
    /// Books `n` copies, each as [`Device::time_op`] would the read and
    /// then the program, but together: the program's searches start where
    /// the read's bookings end, so they cannot see them, and where the two
    /// touch on one resource (mostly, within a unit: it goes straight on,
    /// the bus too) one interval is booked, not two. `account` is told of
    /// each (page index and timeline), or of a stretch at once (the first
    /// copy's index and timeline, and how many: each after the first starts
    /// as the one before ends, `done - read_start` later). Returns the
    /// source's and the destination block's last operations' ends (the last
    /// read's and the last program's), and when the reading and the
    /// programming unit are free.
    #[inline(always)]
    fn pages<U: Ends, B: Ends>(
        self,
        n: usize,
        mut units: U,
        mut buses: B,
        (tail, first_page): (&mut ProgTail, u32),
        mut account: impl FnMut(u32, &Booked, u32),
    ) -> ((SimTime, SimTime), (SimTime, SimTime)) {
        units.advance(self.horizon);
        buses.advance(self.horizon);
        let ([read_before, read_xfer], [prog_xfer, prog_after]) = (self.read, self.program);
        let (mut src_last, mut dst_last) = self.last;
        // Where the next read's search starts: after the source block's last
        // operation, or, on one unit, after the last copy's program when the
        // unit went straight on from its read (busy throughout, so the
        // search would only walk to the program's end; there it is after
        // everything).
        let mut read_from = src_last;
        // A copy going straight on holds its unit this long.
        let straight_on = read_before + read_xfer + prog_xfer + prog_after;
        let mut i = 0;
        while i < n as u32 {
            // Within one unit on one bus, a copy whose read finds the unit
            // free and the bus idle from its transfer's start until the
            // program's transfer has crossed it too (its destination
            // block's last operation over by then) goes straight on
            // without a wait: the searches below would find that, so it is
            // booked without them: 99% of the copies on the foundation
            // benchmark (92% before a unit busy through was taken as
            // free at its end, below).
            let earliest = self.not_before.max(read_from);
            // A unit busy from then until all it has booked ends (a run's
            // first copy, behind a host program booked ahead) is free only
            // then: the search would find that too.
            let start =
                if U::ONE && B::ONE { units.from().busy_through(earliest).unwrap_or(earliest) } else { earliest };
            let (read_bus, read_done) = (start + read_before, start + read_before + read_xfer);
            if U::ONE
                && B::ONE
                && dst_last <= read_done
                && let (Some((unit, _)), Some((bus, hint))) = (units.one(), buses.one())
                && unit.free_from(start)
                && bus.book_if_idle(hint, read_bus, read_xfer + prog_xfer)
            {
                // Its own copy of the loop's last lines (program tail,
                // accounting, where the next read starts): with the program
                // known to follow the read at once their tests fold away;
                // shared through one `Booked`, the foundation run cost ~100
                // instructions a request more (5,480 against 5,377).
                // The copies after it go straight on too while the bus is
                // idle for their transfers (each starts as the one before
                // ends: its unit is free, its destination's last operation
                // over): their transfers booked in one pass, the unit's
                // time as one interval, the program tail once (booked copy
                // by copy, each transfer landing among the other plane's
                // shifted those after it: 4,693 instructions a request on
                // the foundation run against 4,300).
                let after = n as u32 - 1 - i;
                let more = if after == 0 {
                    0
                } else {
                    let first = read_bus + straight_on;
                    bus.book_periodic_if_idle(hint, first, straight_on, read_xfer + prog_xfer, after as usize) as u32
                };
                unit.insert(start, Nanos(straight_on.0 * (more as u64 + 1)));
                tail.programmed_straight_on(first_page + i, more + 1, start, straight_on, read_before + read_xfer);
                let read_done = start + read_before + read_xfer;
                let b = Booked {
                    read_start: start,
                    read_bus: start + read_before,
                    read_done,
                    prog_start: read_done,
                    prog_bus: read_done,
                    done: start + straight_on,
                };
                account(i, &b, more + 1);
                let last = b.nth(more);
                (src_last, dst_last, read_from) = (last.read_done, last.done, last.done);
                i += more + 1;
                continue;
            }
            let b = self.searched(&mut units, &mut buses, earliest, dst_last);
            tail.programmed(first_page + i, b.prog_start, b.done);
            account(i, &b, 1);
            (src_last, dst_last) = (b.read_done, b.done);
            read_from = if U::ONE && b.prog_start == b.read_done { b.done } else { b.read_done };
            i += 1;
        }
        ((src_last, dst_last), (units.from().last_end(), units.to().last_end()))
    }

    /// A copy of [`pages`](Self::pages) that does not go straight on,
    /// read from `start` on and programmed after `dst_last`: its slots
    /// searched and booked. Out of line, and generic over the resources
    /// only, so every caller's copy loop shares it: inlined, each of
    /// `time_copy_run`'s eight instances was 35-40 KB for the 8% of
    /// copies that search (the binary is 210 KB smaller without them, the
    /// foundation run 30 instructions a request shorter; wall time the
    /// same within the machine's noise).
    #[inline(never)]
    fn searched<U: Ends, B: Ends>(&self, units: &mut U, buses: &mut B, start: SimTime, dst_last: SimTime) -> Booked {
        let ([read_before, read_xfer], [prog_xfer, prog_after]) = (self.read, self.program);
        // When the bus's idle gap that takes the read's transfer ends.
        let read_gap_end = Cell::new(None);
        let (read_start, read_bus) = slot(units.from(), start, read_before + read_xfer, |start| {
            let (on_bus, gap_end) = buses.find_from(start + read_before, read_xfer);
            read_gap_end.set(gap_end);
            (on_bus, on_bus + read_xfer)
        });
        let read_done = read_bus + read_xfer;
        let (prog_start, prog_bus) = slot(units.to(), read_done.max(dst_last), prog_xfer + prog_after, |start| {
            // On the read's bus, still inside its gap: idle, no search needed.
            let in_gap = B::ONE && read_gap_end.get().is_none_or(|end| start + prog_xfer <= end);
            let on_bus = if in_gap { start } else { buses.find_to(start, prog_xfer) };
            (on_bus, on_bus + prog_xfer + prog_after)
        });
        let done = prog_bus + prog_xfer + prog_after;
        buses.book((read_bus, read_done), (prog_bus, prog_bus + prog_xfer));
        units.book((read_start, read_done), (prog_start, done));
        Booked { read_start, read_bus, read_done, prog_start, prog_bus, done }
    }
}

#[derive(Serialize, Deserialize)]
pub struct Device {
    pub array: NandArray,
    timing: Timing,
    pcm_read: Nanos,
    pcm_write: Nanos,
    /// Writes the controller holds for the PCM beyond the one it is doing.
    pcm_write_queue: u64,
    pcm_read_free: SimTime,
    pcm_write_free: SimTime,
    pub pcm: PcmCounters,
    channels: Vec<Calendar>,
    /// Each array unit's booked operations: like a bus, a unit takes an
    /// operation into an idle gap, so time it spends waiting for another
    /// unit's read (a read-modify-write's old page) is not lost to the
    /// operations booked after.
    units: Vec<Calendar>,
    /// Each unit's [`Calendar::last_end`] as of its last booking, kept
    /// flat (with each group's soonest on big drives): dynamic allocation
    /// looks for the soonest before each host page. The unit is free at
    /// the later of this and `horizon`.
    unit_free: unit_times::UnitTimes,
    /// No booking starts before this (see [`advance`](Self::advance)). The
    /// calendars catch up with it when next touched, not at every advance.
    horizon: SimTime,
    /// When the latest operation booked on each block ends: programs,
    /// erases and copy runs keep their booking order on a block (programs
    /// in page order, an erase after the block's copies).
    block_last: Vec<SimTime>,
    /// Where each block's booked programs end, for a read, which waits for
    /// its own page's program only, not for programs booked after it.
    prog_tail: Vec<ProgTail>,
    /// The host link's booked transfers: like a bus, a transfer takes the
    /// first idle gap, so a read's data waiting for a busy plane does not
    /// hold the link from the commands behind it.
    host_link: Calendar,
    /// Channel and array unit of each plane (lookups beat divisions here).
    plane_channel: Vec<u32>,
    plane_unit: Vec<u32>,
    pub counters: FlashCounters,
    pub busy: BusyTime,
    /// Planes an FTL asked the engine to give background time (see
    /// [`Device::wake`]); the engine drains it.
    wakes: Vec<u32>,
    /// The current host command's own work (see
    /// [`begin_command`](Self::begin_command)).
    served: Served,
    /// Programs in flight for power cuts, when they are modelled.
    power: Option<super::power::PowerTrack>,
    /// Only the array units keep time (see [`set_units_only`](Self::set_units_only)).
    units_only: bool,
    /// `timing.multi_plane`: each die's latest operation, which others may
    /// join; empty when off.
    groups: Vec<Group>,
    /// The programs of the open batch ([`begin_batch`](Self::begin_batch)),
    /// each with when it ends (moved later as its group grows).
    batch_log: Vec<(Ppn, SimTime)>,
    /// The open batch's number (programs join only groups of their batch),
    /// and whether one is open.
    batch: u64,
    batch_open: bool,
    /// Batches begun and not yet ended (they nest).
    batch_depth: u32,
    /// The latest end of the batch's programs booked without a group
    /// (the batch's whole log when multi-plane groups are off).
    batch_done: SimTime,
    pub multi_plane: MultiPlaneCounters,
    /// Paced work applied to the array and booked as the clock reaches it
    /// (see [`deferred`]); booked whole before a drive is saved.
    #[serde(skip)]
    deferred: deferred::Deferred,
    /// GC copy runs a host read may still go before (see [`preempt`]),
    /// and how many copies each unit's next run may book.
    preempt: preempt::Preemptible,
    /// Per unit, the erase and the GC copy a read may suspend ([`suspend`]).
    suspendable: suspend::Suspendables,
    /// Reads served by suspending an erase, and a GC copy's program.
    pub erase_suspends: u64,
    pub program_suspends: u64,
}

impl Device {
    pub fn new(array: NandArray, timing: Timing) -> Device {
        let geo = array.geometry();
        let planes_per_unit = if timing.plane_parallel { 1 } else { geo.planes_per_die };
        Device {
            channels: vec![Calendar::default(); geo.channels as usize],
            units: vec![Calendar::default(); (geo.planes / planes_per_unit) as usize],
            unit_free: unit_times::UnitTimes::new((geo.planes / planes_per_unit) as usize),
            horizon: SimTime::ZERO,
            block_last: vec![SimTime::ZERO; geo.blocks as usize],
            prog_tail: vec![ProgTail::default(); geo.blocks as usize],
            host_link: Calendar::default(),
            plane_channel: (0..geo.planes).map(|p| geo.channel_of(PlaneId(p))).collect(),
            plane_unit: (0..geo.planes).map(|p| p / planes_per_unit).collect(),
            counters: FlashCounters::default(),
            busy: BusyTime::default(),
            wakes: Vec::new(),
            served: Served::default(),
            power: None,
            units_only: false,
            pcm_read: Nanos::ZERO,
            pcm_write: Nanos::ZERO,
            pcm_write_queue: 1,
            pcm_read_free: SimTime::ZERO,
            pcm_write_free: SimTime::ZERO,
            pcm: PcmCounters::default(),
            groups: if timing.multi_plane && geo.planes_per_die > 1 {
                vec![Group::default(); (geo.planes / planes_per_unit) as usize]
            } else {
                Vec::new()
            },
            batch_log: Vec::new(),
            batch: 0,
            batch_open: false,
            batch_depth: 0,
            batch_done: SimTime::ZERO,
            multi_plane: MultiPlaneCounters::default(),
            deferred: Default::default(),
            preempt: Default::default(),
            suspendable: suspend::Suspendables::new(
                (geo.planes / planes_per_unit) as usize,
                timing.erase_suspend,
                timing.program_suspend,
            ),
            erase_suspends: 0,
            program_suspends: 0,
            timing,
            array,
        }
    }

    /// Attaches a PCM with these access times and a write queue of
    /// `write_queue` entries in the controller (HAT's mapping store).
    pub fn with_pcm(mut self, read: Nanos, write: Nanos, write_queue: u32) -> Device {
        self.pcm_read = read;
        self.pcm_write = write;
        self.pcm_write_queue = write_queue.max(1) as u64;
        self
    }

    /// Keeps programs' completion times so a power cut can tear those in
    /// flight ([`cut_power`](Self::cut_power)).
    pub fn track_power_cuts(&mut self) {
        self.power.get_or_insert_with(Default::default);
    }

    /// Power fails at `at`: every program still in flight then is torn
    /// (see [`super::power`]). Returns the effective time of the cut and
    /// the pages torn.
    pub fn cut_power(&mut self, at: SimTime) -> Result<(SimTime, u64)> {
        let Some(p) = self.power.as_mut() else { return Ok((at, 0)) };
        let (cut, torn) = p.cut(at);
        for &ppn in &torn {
            self.array.tear(ppn)?;
        }
        Ok((cut, torn.len() as u64))
    }

    /// No power cut can fall before `t` any more.
    pub fn no_cut_before(&mut self, t: SimTime) {
        if let Some(p) = self.power.as_mut() {
            p.prune(t);
        }
    }

    /// Units-only timing, for fast-forwarding the drive to a state
    /// (preconditioning): every operation changes the array, the counters
    /// and the wear as it would, and occupies its array unit for as long,
    /// so allocation to the plane free soonest spreads writes as it does
    /// when timed; but the channel buses, the host link and the PCM are
    /// not modelled (a transfer takes its time on the unit, never waits for
    /// a bus), nothing is counted as busy, and no power cut can tear it.
    /// Cheap: a bus booking searches its calendar; a unit's is one addition.
    pub fn set_units_only(&mut self, units_only: bool) {
        self.preempt.confirm_all();
        self.units_only = units_only;
    }

    /// Whether only the array units keep time (a fast-forward).
    #[inline]
    pub fn units_only(&self) -> bool {
        self.units_only
    }

    /// Programs `pages` pages of the system area (outside the FTL's
    /// geometry: the TRIM log) on the first array unit and channel;
    /// returns when the last ends.
    pub fn system_program(&mut self, pages: u64, not_before: SimTime) -> SimTime {
        let mut done = not_before;
        for _ in 0..pages {
            self.counters.programs[Cause::Mapping as usize] += 1;
            done = self.time_program(0, 0, None, NO_PAGE, not_before, Cause::Mapping, false);
        }
        done
    }

    /// Reads `pages` pages of the system area, as [`system_program`](Self::system_program).
    pub fn system_read(&mut self, pages: u64, not_before: SimTime) -> SimTime {
        let mut done = not_before;
        for _ in 0..pages {
            self.counters.reads[Cause::Mapping as usize] += 1;
            done = done.max(self.time_read(0, 0, None, NO_PAGE, not_before, Cause::Mapping));
        }
        done
    }

    /// Reads one mapping entry from PCM; returns when it is known.
    #[inline]
    pub fn pcm_read(&mut self, not_before: SimTime) -> SimTime {
        self.pcm.reads += 1;
        if self.units_only {
            return not_before;
        }
        self.busy.pcm += self.pcm_read.0;
        let start = not_before.max(self.pcm_read_free);
        self.served.serve(start, Cause::Mapping);
        let done = start + self.pcm_read;
        self.pcm_read_free = done;
        if self.pcm_write_free > start {
            self.pcm_write_free += self.pcm_read;
        }
        done
    }

    /// Writes one mapping entry to PCM in place; returns when the
    /// controller's write queue has room for it and when it is durable.
    #[inline]
    pub fn pcm_write(&mut self, not_before: SimTime) -> (SimTime, SimTime) {
        self.pcm.writes += 1;
        if self.units_only {
            return (not_before, not_before);
        }
        self.busy.pcm += self.pcm_write.0;
        let start = not_before.max(self.pcm_write_free);
        self.served.serve(start, Cause::Mapping);
        // Reads booked past the write's start pause it until they are done
        // (reads go first), as a read arriving during a write does: the
        // PCM is one device.
        self.pcm_write_free = start.max(self.pcm_read_free) + self.pcm_write;
        // Room once no more than `queue` writes, this one included, are left.
        let queued = Nanos(self.pcm_write.0 * self.pcm_write_queue);
        let room = SimTime(self.pcm_write_free.0.saturating_sub(queued.0));
        (not_before.max(room), self.pcm_write_free)
    }

    #[inline]
    pub fn geometry(&self) -> &Geometry {
        self.array.geometry()
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    #[inline]
    fn resources(&self, block: BlockId) -> (usize, usize) {
        let plane = self.array.geometry().plane_of(block).idx();
        (self.plane_channel[plane] as usize, self.plane_unit[plane] as usize)
    }

    /// Reads a page; returns when its data has crossed the channel.
    #[inline]
    pub fn read(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> Result<SimTime> {
        self.array.read(ppn)?;
        self.counters.reads[cause as usize] += 1;
        if self.preempt.any() && matches!(cause, Cause::Host | Cause::Mapping) {
            return Ok(self.read_before_kept_copies(ppn, not_before, cause));
        }
        Ok(self.time_page_read(ppn, not_before, cause))
    }

    /// [`time_read`](Self::time_read) of page `ppn` on its own resources.
    #[inline(always)]
    fn time_page_read(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> SimTime {
        let block = self.geometry().block_of(ppn);
        let (ch, unit) = self.resources(block);
        self.time_read(ch, unit, Some(block), ppn.0, not_before, cause)
    }

    /// The timeline of a page read (page `ppn` of `block`) on `ch` and
    /// `unit`: the unit senses the page, then it crosses the bus; both are
    /// busy until it has. With multi-plane groups it may join the die's
    /// latest read instead.
    #[inline]
    fn time_read(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        ppn: u32,
        not_before: SimTime,
        cause: Cause,
    ) -> SimTime {
        let t = self.timing;
        // Work deferred on the block is booked first: it may program the page.
        let not_before = match block {
            Some(b) => {
                self.book_work_on(b, not_before);
                self.programmed_by(b, ppn).max(not_before)
            }
            None => not_before,
        };
        if !self.groups.is_empty()
            && let Some(block) = block
        {
            if let Some(done) = self.join_read(ch, unit, block, ppn, not_before, cause) {
                return done;
            }
            let (start, done) = self.time_op(
                ch,
                unit,
                Some(block),
                false,
                not_before,
                cause,
                [t.command + t.read, t.page_transfer, Nanos::ZERO],
            );
            self.opened(multi_plane::Kind::Read, unit, block, ppn, start, start, done);
            return done;
        }
        if self.suspendable.any()
            && !self.units_only
            && let Some(done) =
                self.read_suspending(ch, unit, block, not_before, cause, t.command + t.read, t.page_transfer)
        {
            return done;
        }
        self.time_op(ch, unit, block, false, not_before, cause, [t.command + t.read, t.page_transfer, Nanos::ZERO]).1
    }

    /// No earlier than when page `ppn` of `block` was programmed: a read
    /// waits for that, not for programs booked on its block after it (a
    /// program booked far ahead, its data waiting for a read elsewhere,
    /// would hold every read of its block until then). Pages no program
    /// was booked for since the clock was reset (placed, or written before)
    /// wait for the block's last operation, as everything did before.
    #[inline(always)]
    fn programmed_by(&self, block: BlockId, ppn: u32) -> SimTime {
        let t = self.timing;
        let page = self.geometry().page_in_block(Ppn(ppn));
        self.prog_tail[block.idx()]
            .done_by(page, t.command + t.page_transfer + t.program)
            .unwrap_or(self.block_last[block.idx()])
    }

    /// The timeline of an operation holding `unit` for `phases`: its own
    /// work before the transfer, the transfer on `ch`'s bus (waiting for a
    /// slot), its own work after. Returns when the unit's hold starts and
    /// when it is free again. `ordered`: after `block`'s last operation (a
    /// read waits for its page's program only, in `not_before`). The caller
    /// has booked the work deferred on `block` ([`Self::book_work_on`]).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn time_op(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        ordered: bool,
        not_before: SimTime,
        cause: Cause,
        phases: [Nanos; 3],
    ) -> (SimTime, SimTime) {
        if self.units_only {
            let [before, transfer, after] = phases;
            let took = before + transfer + after;
            let done = self.time_unit(unit, not_before, took);
            return (SimTime(done.0 - took.0), done);
        }
        self.time_op_booked(ch, unit, block, ordered, not_before, cause, phases)
    }

    /// [`time_op`](Self::time_op) with full timing: out of line, so the
    /// units-only path (every operation of a fast-forwarded
    /// preconditioning) does not pay this one's register saves.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn time_op_booked(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        ordered: bool,
        not_before: SimTime,
        cause: Cause,
        [before, transfer, after]: [Nanos; 3],
    ) -> (SimTime, SimTime) {
        self.catch_up(unit);
        self.channels[ch].advance(self.horizon);
        let order = if ordered { block } else { None };
        let (start, on_bus) = self.unit_slot(unit, order, not_before, before + transfer + after, |d, start| {
            let on_bus = d.channels[ch].find(start + before, transfer);
            (on_bus, on_bus + transfer + after)
        });
        self.served.serve(start, cause);
        self.channels[ch].insert(on_bus, transfer);
        self.served.bus_wait(on_bus - (start + before), cause);
        let done = on_bus + transfer + after;
        self.hold(unit, block, start, done, cause);
        (start, done)
    }

    /// The copies of a run (multi-plane groups off, full timing): page by
    /// page, the read of a page of `src` on `from` (channel, unit), then its
    /// program into `dst` from PPN `dst_page` (its `first_in_block`-th page) on, on `to`, timed exactly as
    /// [`time_op`](Self::time_op) for each would, but booked together (see
    /// [`CopyRun::pages`]). GC copies are most of a steady-state run's
    /// bookings; across units (a μ-Tree block's GC, a superblock's) they
    /// were each two whole [`time_op`](Self::time_op)s. Returns when the
    /// last read's data has left the plane.
    /// `KEEP`: whether `keep` is not [`Keep::Nothing`] (monomorphized, so
    /// the common run, kept for no read, pays nothing for keeping).
    #[allow(clippy::too_many_arguments)]
    fn time_copy_run<const KEEP: bool>(
        &mut self,
        (ch_r, unit_r): (usize, usize),
        (ch_w, unit_w): (usize, usize),
        (src, dst): (BlockId, BlockId),
        (dst_page, first_in_block): (u32, u32),
        n: usize,
        not_before: SimTime,
        cause_of: impl CauseOf,
        keep: Keep<'_>,
    ) -> SimTime {
        debug_assert!(src != dst, "a block's own pages would wait on each other");
        debug_assert!(n > 0, "the last read's end is the source's last operation's");
        debug_assert!(unit_r != unit_w || ch_r == ch_w, "a unit sits on one channel");
        let t = self.timing;
        let copy = CopyRun {
            read: [t.command + t.read, t.page_transfer],
            program: [t.command + t.page_transfer, t.program],
            not_before,
            last: (self.block_last[src.idx()], self.block_last[dst.idx()]),
            horizon: self.horizon,
        };
        debug_assert_eq!(KEEP, !matches!(keep, Keep::Nothing));
        let mut kept = KEEP.then(|| {
            self.preempt.open(self.units.len(), unit_w, (src, dst), copy.last, self.prog_tail[dst.idx()], keep)
        });
        let (array, counters, served, busy, power) =
            (&self.array, &mut self.counters, &mut self.served, &mut self.busy, &mut self.power);
        let tail = (&mut self.prog_tail[dst.idx()], first_in_block);
        // Per page, what `time_op` would do besides booking. Inlined: out
        // of line (as the compiler left it where runs are kept, with a
        // write buffer), each copy paid a call (buffered foundation run
        // 6,985 -> 6,796 instructions a request). Stable Rust takes an
        // attribute on a closure only as a call's argument, hence
        // `identity`.
        let uniform = cause_of.uniform();
        let account = std::convert::identity(
            #[inline(always)]
            |i: u32, b: &Booked, copies: u32| {
                // `copies` booked from `b` on, each straight on as the one
                // before ends. New copies under one cause, with no power cut
                // to tell, are counted at once (each waited for no bus, and
                // the first started first: what `serve` keeps); copies booked
                // again were counted when first booked.
                let mut keep_stretch = std::convert::identity(
                    #[inline(always)]
                    |k: u32, cause: Cause, first: Booked, count: u32| {
                        if KEEP && let Some(kept) = kept.as_mut() {
                            kept.push(preempt::Stretch { first, dst: dst_page + i + k, count, cause });
                        }
                    },
                );
                if power.is_none()
                    && !matches!(keep, Keep::Again(_))
                    && let Some(cause) = uniform
                {
                    counters.reads[cause as usize] += copies as u64;
                    counters.programs[cause as usize] += copies as u64;
                    served.copy(b, copy.read[0], cause);
                    busy.units[cause as usize] += copies as u64 * b.held().0;
                    keep_stretch(0, cause, *b, copies);
                    return;
                }
                for k in 0..copies {
                    let b = b.nth(k);
                    let ppn = Ppn(dst_page + i + k);
                    let cause = match keep {
                        Keep::Again(copies) if KEEP => copies[(i + k) as usize].cause,
                        _ => {
                            let cause = count_copy(counters, array, ppn, &cause_of);
                            served.copy(&b, copy.read[0], cause);
                            cause
                        }
                    };
                    busy.units[cause as usize] += b.held().0;
                    if let Some(p) = power.as_mut() {
                        p.programmed(ppn, b.done);
                    }
                    keep_stretch(k, cause, b, 1);
                }
            },
        );
        let (units, buses) = (&mut self.units, &mut self.channels);
        let ((src_last, dst_last), (free_r, free_w)) = if unit_r == unit_w {
            copy.pages(n, One::new(&mut units[unit_r]), One::new(&mut buses[ch_r]), tail, account)
        } else {
            let (u_r, u_w) = crate::mem::two_mut(units, unit_r, unit_w);
            if ch_r == ch_w {
                copy.pages(n, Two::new(u_r, u_w), One::new(&mut buses[ch_r]), tail, account)
            } else {
                let (b_r, b_w) = crate::mem::two_mut(buses, ch_r, ch_w);
                copy.pages(n, Two::new(u_r, u_w), Two::new(b_r, b_w), tail, account)
            }
        };
        self.unit_free.set(unit_r, free_r);
        self.unit_free.set(unit_w, free_w);
        self.block_last[src.idx()] = src_last;
        self.block_last[dst.idx()] = dst_last;
        if !KEEP && self.suspendable.programs() {
            // Suspendable from when its page programs (its data is in).
            let last = Ppn(dst_page + n as u32 - 1);
            let cause = copy_cause(&self.array, last, &cause_of);
            self.copy_booked(unit_w, last, cause, SimTime(dst_last.0 - self.timing.program.0), dst_last);
        }
        src_last
    }

    /// The earliest start at or after `not_before` (and the block's last
    /// operation; `unit` caught up with the horizon) at which `unit` is idle until the operation ends, as
    /// `end_of` computes from its start (it waits for a bus slot): a gap
    /// at least `min_len` long, or the next. Returns the start and what
    /// `end_of` returned first (the bus slot).
    #[inline]
    fn unit_slot(
        &self,
        unit: usize,
        block: Option<BlockId>,
        not_before: SimTime,
        min_len: Nanos,
        end_of: impl Fn(&Device, SimTime) -> (SimTime, SimTime),
    ) -> (SimTime, SimTime) {
        let earliest = block.map_or(not_before, |b| not_before.max(self.block_last[b.idx()]));
        slot(&self.units[unit], earliest, min_len, |start| end_of(self, start))
    }

    /// `unit`'s calendar forgets what ended before the horizon (done when a
    /// unit is next booked, not at every [`advance`](Self::advance)).
    #[inline]
    fn catch_up(&mut self, unit: usize) {
        self.units[unit].advance(self.horizon);
    }

    /// Books `unit` (and `block`) busy from `start` to `done`.
    #[inline(always)]
    fn hold(&mut self, unit: usize, block: Option<BlockId>, start: SimTime, done: SimTime, cause: Cause) {
        if self.preempt.any() {
            self.preempt.confirm(unit);
        }
        self.units[unit].insert(start, done - start);
        self.unit_free.set(unit, self.units[unit].last_end());
        if let Some(b) = block {
            // A read need not be after the block's last operation (see
            // `programmed_by`), nor move it earlier.
            let last = &mut self.block_last[b.idx()];
            *last = (*last).max(done);
        }
        self.busy.units[cause as usize] += (done - start).0;
    }

    /// Units-only timing: `unit` busy for `took` from when it is free,
    /// after all it has (fast-forwarding books nothing into gaps, so the
    /// calendar keeps only its last interval).
    #[inline]
    fn time_unit(&mut self, unit: usize, not_before: SimTime, took: Nanos) -> SimTime {
        let start = self.units[unit].book_alone(self.horizon, not_before, took);
        self.unit_free.set(unit, start + took);
        start + took
    }

    /// The timeline of a page program (page `ppn` of `block`) on `ch` and
    /// `unit`: once the unit is free the data crosses the bus, then the
    /// unit programs it. Returns when the program ends. A program of the
    /// open batch (`batched`) may join, or open, a multi-plane group.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn time_program(
        &mut self,
        ch: usize,
        unit: usize,
        block: Option<BlockId>,
        ppn: u32,
        not_before: SimTime,
        cause: Cause,
        batched: bool,
    ) -> SimTime {
        let t = self.timing;
        let phases = [Nanos::ZERO, t.command + t.page_transfer, t.program];
        let grouping = batched && !self.groups.is_empty();
        if grouping
            && let Some(block) = block
            && let Some(done) = self.join_program(ch, unit, block, ppn, not_before, cause)
        {
            return done;
        }
        if let Some(block) = block {
            self.book_work_on(block, not_before);
        }
        let (start, done) = self.time_op(ch, unit, block, true, not_before, cause, phases);
        if let Some(block) = block {
            let page = self.geometry().page_in_block(Ppn(ppn));
            self.prog_tail[block.idx()].programmed(page, start, done);
            if grouping {
                self.opened(multi_plane::Kind::Program, unit, block, ppn, start, SimTime(done.0 - t.program.0), done);
            }
        }
        done
    }

    /// Programs a page with `lpn` in OOB; returns when the program finishes.
    #[inline]
    pub fn program(
        &mut self,
        ppn: Ppn,
        lpn: Lpn,
        not_before: SimTime,
        cause: Cause,
        payload: Payload<'_>,
    ) -> Result<SimTime> {
        self.array.program(ppn, lpn, payload)?;
        if self.deferred.recording() {
            self.count_program(ppn, cause);
            self.record_program(ppn, not_before, cause);
            return Ok(not_before);
        }
        Ok(self.programmed(ppn, not_before, cause))
    }

    /// Programs a page as [`program`](Self::program) does, as part of the
    /// open batch ([`begin_batch`](Self::begin_batch)): with
    /// `timing.multi_plane` it may form a multi-plane group with the
    /// batch's programs on other planes of its die, which moves their
    /// completions later, so the time returned is provisional until
    /// [`end_batch`](Self::end_batch). Without a batch open, or without
    /// multi-plane groups, it is [`program`](Self::program).
    #[inline(always)]
    pub fn program_batched(
        &mut self,
        ppn: Ppn,
        lpn: Lpn,
        not_before: SimTime,
        cause: Cause,
        payload: Payload<'_>,
    ) -> Result<SimTime> {
        self.array.program(ppn, lpn, payload)?;
        Ok(self.programmed_in_batch(ppn, not_before, cause))
    }

    /// Counts and times, as part of the open batch if there is one, the
    /// program of `ppn` the array has just recorded.
    #[inline]
    fn programmed_in_batch(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> SimTime {
        if !self.batch_open {
            let done = self.programmed(ppn, not_before, cause);
            self.batch_done = self.batch_done.max(done);
            return done;
        }
        // The program's entry in the log, which its group keeps up to date;
        // `end_batch` logs it for power cuts once its end is final.
        let entry = self.batch_log.len();
        self.batch_log.push((ppn, not_before));
        let done = self.count_and_time_program(ppn, not_before, cause, true);
        self.batch_log[entry].1 = done;
        done
    }

    /// Counts and times the program of `ppn` the array has just recorded.
    #[inline]
    fn programmed(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> SimTime {
        self.count_program(ppn, cause);
        self.time_logged_program(ppn, not_before, cause)
    }

    /// Times the program of `ppn` (already counted) and logs its end for
    /// power cuts.
    #[inline(always)]
    fn time_logged_program(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> SimTime {
        let block = self.geometry().block_of(ppn);
        let (ch, unit) = self.resources(block);
        let done = self.time_program(ch, unit, Some(block), ppn.0, not_before, cause, false);
        self.log_program(ppn, done);
        done
    }

    #[inline(always)]
    fn count_and_time_program(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause, batched: bool) -> SimTime {
        self.count_program(ppn, cause);
        let block = self.geometry().block_of(ppn);
        let (ch, unit) = self.resources(block);
        self.time_program(ch, unit, Some(block), ppn.0, not_before, cause, batched)
    }

    /// Tells the power-cut model when the program of `ppn` ends (a cut
    /// before then tears it).
    #[inline]
    fn log_program(&mut self, ppn: Ppn, done: SimTime) {
        if self.units_only {
            return;
        }
        if let Some(p) = self.power.as_mut() {
            p.programmed(ppn, done);
        }
    }

    /// Copies programmed pages of one block into consecutive pages from
    /// `dst` on (GC): each is read and then programmed, in order, exactly as
    /// [`read`](Self::read) then [`program`](Self::program) page by page
    /// would time and count them; `cause_of` names each page's cause from its
    /// LPN. Returns when the last page's data has left the source's plane, so
    /// the source block may be erased from then on.
    pub fn copy_run(&mut self, src: &[u32], dst: Ppn, not_before: SimTime, cause_of: impl CauseOf) -> Result<SimTime> {
        let Some(placed) = self.array.copy_run(src, dst)? else { return Ok(not_before) };
        if placed.first_in_block == 0 {
            self.counters.blocks_opened += 1;
        }
        let (src_block, dst_block) = (placed.src, placed.dst);
        let (ch_r, unit_r) = self.resources(src_block);
        let (ch_w, unit_w) = self.resources(dst_block);
        let keep = if self.preempt.keeping && unit_r == unit_w { Keep::Run(src) } else { Keep::Nothing };
        if self.preempt.any() && matches!(keep, Keep::Nothing) {
            self.preempt.confirm(unit_r);
            self.preempt.confirm(unit_w);
        }
        if !self.units_only && self.groups.is_empty() && src_block != dst_block {
            let ends = ((ch_r, unit_r), (ch_w, unit_w), (src_block, dst_block));
            let dst = (dst.0, placed.first_in_block);
            return Ok(match keep {
                Keep::Nothing => {
                    self.time_copy_run::<false>(ends.0, ends.1, ends.2, dst, src.len(), not_before, cause_of, keep)
                }
                _ => self.time_copy_run::<true>(ends.0, ends.1, ends.2, dst, src.len(), not_before, cause_of, keep),
            });
        }
        // A run kept only when timed as one (keeping is off in fast-forwards
        // and with groups): a copy of a block onto itself is not.
        if self.preempt.any() {
            self.preempt.confirm(unit_r);
        }
        if self.units_only && self.groups.is_empty() && unit_r == unit_w {
            return Ok(self.time_copy_run_units_only(unit_r, dst, src.len(), not_before, cause_of));
        }
        let mut reads_done = not_before;
        for (i, &page) in src.iter().enumerate() {
            let cause = count_copy(&mut self.counters, &self.array, Ppn(dst.0 + i as u32), &cause_of);
            reads_done = self.time_read(ch_r, unit_r, Some(src_block), page, not_before, cause);
            let done = self.time_program(ch_w, unit_w, Some(dst_block), dst.0 + i as u32, reads_done, cause, false);
            self.log_program(Ppn(dst.0 + i as u32), done);
        }
        Ok(reads_done)
    }

    /// A copy run within one array unit, timing the unit only (a
    /// fast-forwarded preconditioning): each read and program starts as the
    /// one before it ends, so the run is booked as two spans, up to the
    /// last read's end and the last program, leaving the unit as
    /// page-by-page reads and programs would. Returns when the last read
    /// ends.
    fn time_copy_run_units_only(
        &mut self,
        unit: usize,
        dst: Ppn,
        pages: usize,
        not_before: SimTime,
        cause_of: impl CauseOf,
    ) -> SimTime {
        for i in 0..pages as u32 {
            count_copy(&mut self.counters, &self.array, Ppn(dst.0 + i), &cause_of);
        }
        let t = self.timing;
        let (read, program) = (t.read_op(), t.program_op());
        let reads_done = self.time_unit(unit, not_before, Nanos((read + program).0 * (pages as u64 - 1)) + read);
        self.time_unit(unit, reads_done, program);
        reads_done
    }

    /// Copies and pads `pages` in order (GC merging into a block), each
    /// copy a [`read`](Self::read) of its source and a
    /// [`program`](Self::program) once the read is done, each pad a program
    /// alone. Returns when the last program ends.
    pub fn copy_paced(&mut self, pages: &[PacedPage], cause: Cause) -> Result<SimTime> {
        if self.deferred.recording() {
            self.record_copy_paced(pages, cause)?;
            return Ok(SimTime::ZERO);
        }
        if self.times_units_alone() {
            return self.copy_paced_units_only(pages, cause);
        }
        let mut done = SimTime::ZERO;
        for p in pages {
            let (ready, payload) = match p.src {
                Some(src) => (self.read(src, p.at, cause)?, Payload::CopyFrom(src)),
                None => (p.at, Payload::None),
            };
            done = done.max(self.program(p.dst, p.lpn, ready, cause, payload)?);
        }
        Ok(done)
    }

    /// Only the array units keep time (a fast-forward) and no multi-plane
    /// group can form.
    fn times_units_alone(&self) -> bool {
        self.units_only && self.groups.is_empty()
    }

    /// [`copy_paced`](Self::copy_paced) while
    /// [`times_units_alone`](Self::times_units_alone): the same checks, counts and
    /// times, but each unit's time is kept here and the unit booked once
    /// at the end (a units-only calendar keeps only its last interval),
    /// not twice a page. A fast-forwarded COFTL merge is millions of pages.
    fn copy_paced_units_only(&mut self, pages: &[PacedPage], cause: Cause) -> Result<SimTime> {
        let t = self.timing;
        let (read, program) = (t.read_op(), t.program_op());
        let mut units: Vec<UnitRun> = Vec::new();
        let mut slot = vec![u32::MAX; self.units.len()];
        let mut done = SimTime::ZERO;
        for p in pages {
            self.apply_paced(p, cause)?;
            let mut ready = p.at;
            if let Some(src) = p.src {
                let unit = self.resources(self.geometry().block_of(src)).1;
                ready = UnitRun::of(&mut units, &mut slot, &self.units, unit).book(ready.max(self.horizon), read);
            }
            let unit = self.resources(self.geometry().block_of(p.dst)).1;
            let run = UnitRun::of(&mut units, &mut slot, &self.units, unit);
            done = done.max(run.book(ready.max(self.horizon), program));
        }
        for run in units {
            self.units[run.unit].booked_alone(run.last_start, run.last_len, run.busy);
            self.unit_free.set(run.unit, run.free);
        }
        Ok(done)
    }

    /// A paced page's change to the array, counted: its copy (the program
    /// checks the source is readable before it changes anything, as a
    /// read would) or its pad. Timed by the caller.
    fn apply_paced(&mut self, p: &PacedPage, cause: Cause) -> Result<()> {
        if p.src.is_some() {
            self.counters.reads[cause as usize] += 1;
        }
        self.array.program(p.dst, p.lpn, p.src.map_or(Payload::None, Payload::CopyFrom))?;
        self.count_program(p.dst, cause);
        Ok(())
    }

    /// Copies pages (source, destination), as one batch
    /// (multi-plane GC): every source is read first, then every
    /// destination programmed, so destinations at one page offset on
    /// different planes of a die form a multi-plane program group (the die
    /// senses the sources one after another either way; a group needs all
    /// its data in before its tPROG). Counted and checked as
    /// [`copy_run`](Self::copy_run) counts and checks each page; returns
    /// when the last source's data has left its plane.
    pub fn copy_scatter(
        &mut self,
        copies: &[(u32, Ppn)],
        not_before: SimTime,
        cause_of: impl CauseOf,
    ) -> Result<SimTime> {
        for &(from, to) in copies {
            self.array.copy_run(&[from], to)?;
        }
        let mut reads_done = not_before;
        for &(from, to) in copies {
            let cause = cause_of.of(Lpn(self.array.oob_lpn_raw(to)));
            self.counters.reads[cause as usize] += 1;
            let block = self.geometry().block_of(Ppn(from));
            let (ch, unit) = self.resources(block);
            reads_done = reads_done.max(self.time_read(ch, unit, Some(block), from, not_before, cause));
        }
        self.begin_batch();
        for &(_, to) in copies {
            let cause = cause_of.of(Lpn(self.array.oob_lpn_raw(to)));
            self.programmed_in_batch(to, reads_done, cause);
        }
        self.end_batch();
        Ok(reads_done)
    }

    /// Programs a page of sub-page mapping units, one OOB LPN per unit
    /// (see [`NandArray::program_units`]); timed as any program.
    pub fn program_units(
        &mut self,
        ppn: Ppn,
        lpns: &[u32],
        not_before: SimTime,
        cause: Cause,
        bytes: Option<&[u8]>,
    ) -> Result<SimTime> {
        self.array.program_units(ppn, lpns, bytes)?;
        Ok(self.programmed(ppn, not_before, cause))
    }

    /// Copies sub-page units (unit addresses, grouped by source page) packed
    /// into consecutive pages from `dst` on (GC): each source page is read
    /// once for its run of units, and each destination page is programmed
    /// once the reads of its units are done; `cause_of` names a page's cause
    /// from its first unit's LPN. `held` is the source page whose data the
    /// controller still holds from the job's previous copy (`u32::MAX`:
    /// none), which is not read again: a GC job copying a few units at a
    /// time would otherwise read a page once for each step that takes some
    /// of its units. It is left holding the last page read. Returns when the
    /// last read's data has left its plane.
    pub fn copy_units(
        &mut self,
        src: &[u32],
        dst: Ppn,
        not_before: SimTime,
        cause_of: impl CauseOf,
        held: &mut u32,
    ) -> Result<SimTime> {
        if src.is_empty() {
            return Ok(not_before);
        }
        self.array.copy_units(src, dst)?;
        let geo = self.array.geometry();
        if geo.page_in_block(dst) == 0 {
            self.counters.blocks_opened += 1;
        }
        let shift = self.array.units_per_page().trailing_zeros();
        let dst_block = geo.block_of(dst);
        let (ch_w, unit_w) = self.resources(dst_block);
        let (mut reads_done, mut last_read) = (not_before, *held);
        for (i, units) in src.chunks(1 << shift).enumerate() {
            let cause = cause_of.of(Lpn(self.array.oob_unit_raw(units[0])));
            let mut ready = not_before;
            for &u in units {
                let page = u >> shift;
                if page != last_read {
                    last_read = page;
                    self.counters.reads[cause as usize] += 1;
                    let block = self.geometry().block_of(Ppn(page));
                    let (ch_r, unit_r) = self.resources(block);
                    ready = ready.max(self.time_read(ch_r, unit_r, Some(block), page, not_before, cause));
                }
            }
            // A unit of the page read for the previous destination page.
            ready = ready.max(reads_done);
            reads_done = ready;
            self.counters.programs[cause as usize] += 1;
            let done = self.time_program(ch_w, unit_w, Some(dst_block), dst.0 + i as u32, ready, cause, false);
            self.log_program(Ppn(dst.0 + i as u32), done);
        }
        *held = last_read;
        Ok(reads_done)
    }

    /// Reads a page that may be erased, as crash recovery does to find
    /// where writing stopped: an erased page reads as all ones, which OOB
    /// shows as no LPN. Timed and counted as a read either way.
    pub fn probe(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> (Option<Lpn>, SimTime) {
        let lpn = self.array.oob_lpn(ppn);
        let (_, done) = self.scan_oob(ppn, not_before, cause);
        (lpn, done)
    }

    /// Reads a page's OOB whatever its state (crash recovery's scan), timed
    /// and counted as a read.
    pub fn scan_oob(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> (PageOob, SimTime) {
        let oob = self.array.oob(ppn);
        self.counters.reads[cause as usize] += 1;
        (oob, self.time_page_read(ppn, not_before, cause))
    }

    /// Erases a block; returns when the erase finishes.
    pub fn erase(&mut self, block: BlockId, not_before: SimTime, cause: Cause) -> Result<SimTime> {
        self.array.erase(block)?;
        self.counters.erases[cause as usize] += 1;
        if self.deferred.recording() {
            self.record_erase(block, not_before, cause);
            return Ok(not_before);
        }
        Ok(self.time_erase(block, not_before, cause))
    }

    fn time_erase(&mut self, block: BlockId, not_before: SimTime, cause: Cause) -> SimTime {
        self.book_work_on(block, not_before);
        // The block's next program may skip its first pages.
        self.prog_tail[block.idx()] = ProgTail::default();
        let (_, unit) = self.resources(block);
        if self.units_only {
            return self.time_unit(unit, not_before, self.timing.command + self.timing.erase);
        }
        let took = self.timing.command + self.timing.erase;
        self.catch_up(unit);
        if !self.groups.is_empty()
            && let Some(done) = self.join_erase(unit, block, not_before)
        {
            return done;
        }
        let (start, _) = self.unit_slot(unit, Some(block), not_before, took, |_, start| (start, start + took));
        if let Some(p) = self.power.as_mut() {
            p.erase_started(start);
        }
        let done = start + took;
        self.hold(unit, Some(block), start, done, cause);
        self.erase_booked(unit, block, cause, start, done);
        if !self.groups.is_empty() {
            let first = self.geometry().ppn(block, 0).0;
            self.opened(multi_plane::Kind::Erase, unit, block, first, start, start, done);
        }
        done
    }

    /// Leaves the next page of a block erased (no time: nothing is sent to
    /// the chip; the block's later pages are programmed past it).
    pub fn skip(&mut self, ppn: Ppn) -> Result<()> {
        self.array.skip(ppn)?;
        if self.geometry().page_in_block(ppn) == 0 {
            self.counters.blocks_opened += 1;
        }
        Ok(())
    }

    /// Programs a page at no cost in time (preconditioning, placed reads).
    pub fn place(&mut self, ppn: Ppn, lpn: Lpn, payload: Payload<'_>) -> Result<()> {
        self.array.program(ppn, lpn, payload)?;
        self.count_program(ppn, Cause::Placement);
        Ok(())
    }

    /// [`place`](Self::place) for a page of sub-page units, one LPN each.
    pub fn place_units(&mut self, ppn: Ppn, lpns: &[u32]) -> Result<()> {
        self.array.program_units(ppn, lpns, None)?;
        self.count_program(ppn, Cause::Placement);
        Ok(())
    }

    #[inline]
    fn count_program(&mut self, ppn: Ppn, cause: Cause) {
        self.counters.programs[cause as usize] += 1;
        if cause != Cause::Placement && self.geometry().page_in_block(ppn) == 0 {
            self.counters.blocks_opened += 1;
        }
    }

    /// Moves `bytes` over the host link, in its first idle gap at or after
    /// `not_before` (as a bus transfer is booked); returns when it ends.
    pub fn host_transfer(&mut self, bytes: u64, not_before: SimTime) -> SimTime {
        if self.units_only {
            return not_before;
        }
        let took = self.timing.host_transfer(bytes);
        self.host_link.advance(self.horizon);
        let start = self.host_link.book(not_before, took);
        self.served.serve(start, Cause::Host);
        self.busy.host_link += took.0;
        start + took
    }

    /// A host command starts: from now until the next call, the earliest
    /// start of its own work (host link transfers, and flash and PCM work
    /// for the host or its mapping) is noted, and the longest wait of that
    /// work for a channel bus. What it waits for before its work starts
    /// (busy units, GC copies it pays first) and for buses is queueing.
    #[inline]
    pub fn begin_command(&mut self) {
        if let Some(p) = self.power.as_mut() {
            p.next_command();
        }
        self.served = Served::default();
    }

    /// When the drive started the current command's own work (`u64::MAX`
    /// if it did none), and the longest it then waited for a channel bus.
    #[inline]
    pub fn served_from(&self) -> (SimTime, Nanos) {
        (self.served.from, self.served.bus_waited)
    }

    /// Puts back what [`served_from`](Self::served_from) said: work booked
    /// since then (a write buffer's destages started by a host write) was
    /// not the command's own.
    #[inline]
    pub fn restore_served(&mut self, (from, bus_waited): (SimTime, Nanos)) {
        self.served = Served { from, bus_waited };
    }

    /// When plane `plane`'s array unit has finished everything booked on it.
    #[inline]
    pub fn plane_free(&self, plane: PlaneId) -> SimTime {
        let unit = self.plane_unit[plane.idx()] as usize;
        let free = self.unit_free.get(unit).max(self.horizon);
        debug_assert_eq!(free, self.units[unit].last_end().max(self.horizon), "unit {unit}'s mirror");
        free
    }

    /// When each array unit has finished what is booked on it, by unit,
    /// where later than [`horizon`](Self::horizon) (a unit is free at the
    /// later of the two).
    #[inline]
    pub fn unit_free_times(&self) -> &[SimTime] {
        self.unit_free.as_slice()
    }

    /// When the array units free soonest are free (the horizon if some are
    /// idle), calling `each` with each of them in unit order; `None` when
    /// the drive has too few units to keep their minimum (the caller scans
    /// [`unit_free_times`](Self::unit_free_times)).
    #[inline]
    pub fn units_free_soonest(&self, each: impl FnMut(usize)) -> Option<SimTime> {
        self.unit_free.tracked().then(|| self.unit_free.free_by(self.horizon, each))
    }

    /// No booking starts before this time.
    #[inline]
    pub fn horizon(&self) -> SimTime {
        self.horizon
    }

    /// The planes of array unit `unit` (consecutive plane ids).
    #[inline]
    pub fn unit_planes(&self, unit: usize) -> std::ops::Range<u32> {
        let per_unit = self.plane_unit.len() as u32 / self.units.len() as u32;
        unit as u32 * per_unit..(unit as u32 + 1) * per_unit
    }

    /// When every array unit has finished what is booked on it.
    pub fn last_unit_end(&self) -> SimTime {
        self.unit_free.max().max(self.horizon)
    }

    /// When every resource (units, buses, host link, PCM) has finished
    /// what is booked on it.
    pub fn last_end(&self) -> SimTime {
        let buses = self.channels.iter().map(Calendar::last_end).max().unwrap_or(SimTime::ZERO);
        self.last_unit_end().max(buses).max(self.host_link.last_end()).max(self.pcm_read_free).max(self.pcm_write_free)
    }

    /// Array units: dies, or planes with `timing.plane_parallel`.
    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// Asks the engine for background time on `plane`: it will call the
    /// FTL's [`background`](crate::ftl::Ftl::background) for it whenever the
    /// plane would otherwise be idle, until the FTL says it has nothing left.
    #[inline]
    pub fn wake(&mut self, plane: PlaneId) {
        self.wakes.push(plane.0);
    }

    /// Whether a plane was woken since the last [`take_wakes`](Self::take_wakes).
    #[inline]
    pub fn has_wakes(&self) -> bool {
        !self.wakes.is_empty()
    }

    /// The planes woken since the last call.
    pub fn take_wakes(&mut self, into: &mut Vec<u32>) {
        into.append(&mut self.wakes);
    }

    /// Nothing will be booked before `t` from now on (the engine's clock
    /// has reached it): the buses and units forget their past, each when
    /// next touched (this is called at every host command).
    #[inline]
    pub fn advance(&mut self, t: SimTime) {
        // Merges' copies issued by then come before whatever is issued at `t`.
        self.book_due(t);
        self.horizon = self.horizon.max(t);
    }

    /// The time booked on each array unit (utilization).
    pub fn unit_busy_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.units.iter().map(|c| c.busy_ns)
    }

    /// The bus time booked on all channels (utilization).
    pub fn bus_busy_ns(&self) -> u64 {
        self.channel_busy_ns().sum()
    }

    /// Each channel's booked bus time, by channel.
    pub fn channel_busy_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.channels.iter().map(|c| c.busy_ns)
    }

    /// Forgets all timeline state and counters (after preconditioning), so
    /// the measured run starts at time zero on an idle drive.
    pub fn reset_time_and_counters(&mut self) {
        self.preempt.confirm_all();
        self.channels.iter_mut().for_each(Calendar::reset);
        self.units.iter_mut().for_each(Calendar::reset);
        self.unit_free.fill(SimTime::ZERO);
        self.horizon = SimTime::ZERO;
        self.block_last.fill(SimTime::ZERO);
        self.prog_tail.fill(ProgTail::default());
        self.host_link.reset();
        self.counters = FlashCounters::default();
        self.busy = BusyTime::default();
        self.wakes.clear();
        self.pcm_read_free = SimTime::ZERO;
        self.pcm_write_free = SimTime::ZERO;
        self.pcm = PcmCounters::default();
        self.groups.fill(Group::default());
        self.multi_plane = MultiPlaneCounters::default();
        self.suspendable.clear();
        self.erase_suspends = 0;
        self.program_suspends = 0;
        if let Some(p) = self.power.as_mut() {
            p.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{GeometryConfig, TimingConfig};
    use proptest::prelude::*;

    /// A read waits for its own page's program, not for one booked later
    /// on its block (a program far ahead, its data not yet in the
    /// controller); a program there still waits for it.
    #[test]
    fn a_read_waits_for_its_pages_program_not_for_later_ones() {
        let mut d = device(false);
        for i in 0..2 {
            d.program(Ppn(i), Lpn(i), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        }
        let far = SimTime(1_000_000_000);
        let late = d.program(Ppn(2), Lpn(2), far, Cause::Mapping, Payload::None).unwrap();
        assert!(late > far);
        let old = d.read(Ppn(1), SimTime::ZERO, Cause::Host).unwrap();
        assert!(old < SimTime(2_000_000), "{old:?}");
        let new = d.read(Ppn(2), SimTime::ZERO, Cause::Host).unwrap();
        assert!(new > late, "{new:?}: before its program's end {late:?}");
        let next = d.program(Ppn(3), Lpn(3), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert!(next > late, "{next:?}: before the page before it, {late:?}");
    }

    proptest! {
        /// However a block's programs are spread out in time (back to back,
        /// after idle gaps, longer than the least they take), the time a
        /// read of a page waits for is never before its program ended, and
        /// is that end for the latest page.
        #[test]
        fn a_blocks_program_tail_bounds_every_pages_end(steps in prop::collection::vec((0u8..3, 0u64..5_000), 1..40)) {
            let min = Nanos(1_000);
            let (mut tail, mut ends, mut end) = (ProgTail::default(), Vec::new(), SimTime::ZERO);
            for (page, &(kind, extra)) in steps.iter().enumerate() {
                let start = if kind == 1 { SimTime(end.0 + extra) } else { end };
                let done = SimTime(start.0 + min.0 + if kind == 2 { extra } else { 0 });
                tail.programmed(page as u32, start, done);
                (end, _) = (done, ends.push(done));
                for (p, &e) in ends.iter().enumerate() {
                    let bound = tail.done_by(p as u32, min).unwrap();
                    prop_assert!(bound >= e, "page {}: {:?} before its end {:?}", p, bound, e);
                }
                prop_assert_eq!(tail.done_by(page as u32, min), Some(done));
                prop_assert_eq!(tail.done_by(page as u32 + 1, min), None);
            }
        }
    }

    pub(super) fn device(plane_parallel: bool) -> Device {
        device_with(plane_parallel, false)
    }

    pub(super) fn device_with(plane_parallel: bool, multi_plane: bool) -> Device {
        device_timed(|t| (t.plane_parallel, t.multi_plane) = (plane_parallel, multi_plane))
    }

    /// The test drive (two channels, a die of two planes on each), its
    /// timing as `set` leaves it.
    pub(super) fn device_timed(set: impl FnOnce(&mut TimingConfig)) -> Device {
        let geo = Geometry::new(&GeometryConfig {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_size: 2048,
        });
        let mut t = TimingConfig {
            read_us: 20.0,
            program_us: 200.0,
            erase_us: 1500.0,
            bus_ns_per_byte: 25.0,
            command_ns: 0.0,
            plane_parallel: false,
            multi_plane: false,
            erase_suspend_us: 0.0,
            program_suspend_us: 0.0,
        };
        set(&mut t);
        let timing = Timing::new(&t, 2048, 1.0);
        Device::new(NandArray::new(geo, 10, false, false), timing)
    }

    pub(super) const XFER: u64 = 25 * 2048;

    #[test]
    fn same_die_queues_other_channel_overlaps() {
        let mut d = device(false);
        // Blocks 0..4 are plane 0 (channel 0); 4..8 plane 1 (same die); 8.. channel 1.
        let a = d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(a, SimTime(XFER + 200_000));
        let b = d.program(Ppn(16), Lpn(1), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(b, a + Nanos(XFER + 200_000), "plane 1 shares the die: queues");
        let c = d.program(Ppn(32), Lpn(2), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(c, a, "channel 1 is independent: overlaps");
    }

    #[test]
    fn plane_parallel_overlaps_array_time_but_shares_the_bus() {
        let mut d = device(true);
        let a = d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        let b = d.program(Ppn(16), Lpn(1), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(b, a + Nanos(XFER), "only the bus transfer serializes");
    }

    #[test]
    fn read_then_erase_timing_and_counters() {
        let mut d = device(false);
        d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        let r = d.read(Ppn(0), SimTime(1_000_000), Cause::Gc).unwrap();
        assert_eq!(r, SimTime(1_000_000 + 20_000 + XFER));
        let e = d.erase(BlockId(0), SimTime::ZERO, Cause::Gc).unwrap();
        assert_eq!(e, r + Nanos(1_500_000));
        assert_eq!(d.counters.reads[Cause::Gc as usize], 1);
        assert_eq!(d.counters.erases[Cause::Gc as usize], 1);
        assert_eq!(d.counters.blocks_opened, 1);
    }

    #[test]
    fn copy_run_times_and_counts_like_page_by_page_copies() {
        for plane_parallel in [false, true] {
            let (mut batch, mut single) = (device(plane_parallel), device(plane_parallel));
            for d in [&mut batch, &mut single] {
                for i in 0..4 {
                    d.program(Ppn(i), Lpn(i), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
                }
                // Other work on the destination's die and channel, to queue behind.
                d.program(Ppn(16), Lpn(9), SimTime(5_000), Cause::Host, Payload::None).unwrap();
            }
            let now = SimTime(100_000);
            let cause_of = |l: Lpn| if l.0 >= 2 { Cause::Mapping } else { Cause::Gc };
            let reads_done = batch.copy_run(&[1, 3, 2], Ppn(4), now, cause_of).unwrap();
            let mut expected = now;
            for (i, src) in [1, 3, 2].into_iter().enumerate() {
                let cause = cause_of(Lpn(src));
                let read = single.read(Ppn(src), now, cause).unwrap();
                expected = expected.max(read);
                single.program(Ppn(4 + i as u32), Lpn(src), read, cause, Payload::None).unwrap();
            }
            assert_eq!(reads_done, expected);
            assert_eq!(batch.counters, single.counters);
            assert_eq!(
                batch.units.iter().map(Calendar::last_end).collect::<Vec<_>>(),
                single.units.iter().map(Calendar::last_end).collect::<Vec<_>>()
            );
            for (b, s) in batch.channels.iter().zip(&single.channels) {
                assert_eq!((b.last_end(), b.len(), b.busy_ns), (s.last_end(), s.len(), s.busy_ns));
            }
        }
    }

    /// Everything a copy's timing leaves behind, to compare two devices.
    pub(super) fn timing_state(d: &Device) -> impl PartialEq + std::fmt::Debug {
        (
            d.units.iter().map(|c| (c.intervals(), c.busy_ns)).collect::<Vec<_>>(),
            d.channels.iter().map(|c| (c.intervals(), c.busy_ns)).collect::<Vec<_>>(),
            (d.unit_free.as_slice().to_vec(), d.block_last.clone(), d.counters.clone(), d.busy.clone()),
            (d.served_from(), d.horizon),
        )
    }

    /// Block 0's four pages (plane 0) and block 4's (plane 1, the same die
    /// and channel) written: the sources of [`paced_page`].
    pub(super) fn write_sources(d: &mut Device) {
        for i in (0..4).chain(16..20) {
            d.program(Ppn(i), Lpn(i), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        }
    }

    /// Page `i` of a test's paced run into block `dst_block`, at `at`: a copy
    /// of source `s` (0–3 block 0's pages, 4–7 block 4's) or a pad.
    pub(super) fn paced_page(i: usize, src: Option<u32>, dst_block: u32, at: SimTime) -> PacedPage {
        PacedPage {
            src: src.map(|s| Ppn(if s < 4 { s } else { 16 + s - 4 })),
            dst: Ppn(dst_block * 4 + i as u32),
            lpn: Lpn(50 + i as u32),
            at,
        }
    }

    /// Whether both devices hold the same LPN in each page `pages` wrote.
    pub(super) fn same_copies(a: &Device, b: &Device, pages: &[PacedPage]) -> bool {
        pages.iter().all(|p| a.array.oob_lpn_raw(p.dst) == b.array.oob_lpn_raw(p.dst))
    }

    /// A paced page as a [`Device::read`] of its source, if any, then a
    /// [`Device::program`]; returns when the program ends.
    pub(super) fn copy_page_by_page(d: &mut Device, p: &PacedPage) -> SimTime {
        let ready = match p.src {
            Some(src) => d.read(src, p.at, Cause::Gc).unwrap(),
            None => p.at,
        };
        let payload = p.src.map_or(Payload::None, Payload::CopyFrom);
        d.program(p.dst, p.lpn, ready, Cause::Gc, payload).unwrap()
    }

    /// Other work on blocks 2 and 6 (both planes of channel 0's die) and 8
    /// (channel 1): `(k, at)` works on the `k`th of them, a program while it
    /// has room (`next` counts its pages), else a read of its first page.
    pub(super) fn other_work(d: &mut Device, ops: &[(u32, u64)], next: &mut [u32; 3]) {
        for &(k, at) in ops {
            let first = [2u32, 6, 8][k as usize] * 4;
            if next[k as usize] < 4 {
                let ppn = Ppn(first + next[k as usize]);
                d.program(ppn, Lpn(100 + ppn.0), SimTime(at), Cause::Host, Payload::None).unwrap();
                next[k as usize] += 1;
            } else {
                d.read(Ppn(first), SimTime(at), Cause::Host).unwrap();
            }
        }
    }

    proptest! {
        /// GC's copy runs (booked read and program together where they
        /// touch) leave every calendar, block and counter exactly as page by
        /// page reads and programs do, among other operations on the same
        /// channel and unit booked before and after, at any horizon, with
        /// full timing and timing the units only.
        #[test]
        fn copy_runs_book_like_page_by_page_copies(
            plane_parallel: bool,
            before in proptest::collection::vec((0u32..3, 0u64..2_000_000), 0..12),
            after in proptest::collection::vec((0u32..3, 0u64..2_000_000), 0..6),
            order in proptest::sample::subsequence(vec![0u32, 1, 2, 3], 1..=4).prop_shuffle(),
            now in 0u64..2_000_000,
            horizon in 0u64..1_000_000,
            dst_block in proptest::sample::select(vec![1u32, 5]),
            units_only: bool,
            uniform: bool,
        ) {
            let (mut batch, mut single) = (device(plane_parallel), device(plane_parallel));
            // Units-only (a fast-forward) books a run within one unit as two spans.
            batch.set_units_only(units_only);
            single.set_units_only(units_only);
            // Block 0 (plane 0, channel 0) is the victim; block 1 is in its plane, block 5 in
            // the other plane of the die; blocks 2, 6 and 8 (channel 1) take other work.
            let mut next = [0u32; 3];
            for d in [&mut batch, &mut single] {
                for i in 0..4 {
                    d.program(Ppn(i), Lpn(i), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
                }
            }
            for (d, n) in [(&mut batch, &mut next.clone()), (&mut single, &mut next)] {
                other_work(d, &before, n);
                d.advance(SimTime(horizon));
            }
            // Causes by LPN, copy by copy; or one cause for all, named as
            // such, so straight-on copies are counted at once.
            let cause_of = |l: Lpn| if l.0 == 2 && !uniform { Cause::Mapping } else { Cause::Gc };
            let dst = Ppn(dst_block * 4);
            let reads_done = if uniform {
                batch.copy_run(&order, dst, SimTime(now), AllCopies(Cause::Gc)).unwrap()
            } else {
                batch.copy_run(&order, dst, SimTime(now), cause_of).unwrap()
            };
            let mut expected = SimTime(now);
            for (i, &src) in order.iter().enumerate() {
                let cause = cause_of(Lpn(src));
                let read = single.read(Ppn(src), SimTime(now), cause).unwrap();
                expected = expected.max(read);
                single.program(Ppn(dst.0 + i as u32), Lpn(src), read, cause, Payload::None).unwrap();
            }
            prop_assert_eq!(reads_done, expected);
            let mut n = next;
            other_work(&mut batch, &after, &mut n.clone());
            other_work(&mut single, &after, &mut n);
            prop_assert_eq!(timing_state(&batch), timing_state(&single));
        }

        /// A fast-forward's paced run (COFTL's merge lane: copies from pages
        /// of several blocks, pads between them, each page not before its
        /// own time) leaves every calendar, counter and page exactly as its
        /// reads and programs one by one do, among operations on the same
        /// units before and after, at any horizon.
        #[test]
        fn paced_runs_book_like_page_by_page_reads_and_programs(
            plane_parallel: bool,
            before in proptest::collection::vec((0u32..3, 0u64..2_000_000), 0..12),
            after in proptest::collection::vec((0u32..3, 0u64..2_000_000), 0..6),
            run in proptest::collection::vec((proptest::option::of(0u32..8), 0u64..600_000), 0..=4),
            now in 0u64..2_000_000,
            horizon in 0u64..3_000_000,
            dst_block in proptest::sample::select(vec![1u32, 5, 9]),
        ) {
            let (mut batch, mut single) = (device(plane_parallel), device(plane_parallel));
            // Sources: blocks 0 (plane 0) and 4 (plane 1, the same die and
            // channel); destinations in either plane or on channel 1; blocks
            // 2, 6 and 8 take other work.
            let mut next = [0u32; 3];
            for d in [&mut batch, &mut single] {
                write_sources(d);
            }
            for (d, n) in [(&mut batch, &mut next.clone()), (&mut single, &mut next)] {
                other_work(d, &before, n);
                d.advance(SimTime(horizon));
                d.set_units_only(true);
            }
            let pages: Vec<PacedPage> =
                run.iter().enumerate().map(|(i, &(src, delay))| paced_page(i, src, dst_block, SimTime(now + delay))).collect();
            prop_assert!(batch.times_units_alone());
            let done = batch.copy_paced(&pages, Cause::Gc).unwrap();
            let mut expected = SimTime::ZERO;
            for p in &pages {
                expected = expected.max(copy_page_by_page(&mut single, p));
            }
            prop_assert_eq!(done, expected);
            let mut n = next;
            other_work(&mut batch, &after, &mut n.clone());
            other_work(&mut single, &after, &mut n);
            prop_assert_eq!(timing_state(&batch), timing_state(&single));
            prop_assert!(same_copies(&batch, &single, &pages));
        }
    }

    #[test]
    fn a_paced_copy_from_an_unwritten_page_is_refused_and_programs_nothing() {
        let mut d = device(false);
        d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        d.set_units_only(true);
        let page =
            |src: u32, dst: u32| PacedPage { src: Some(Ppn(src)), dst: Ppn(dst), lpn: Lpn(src), at: SimTime::ZERO };
        // Page 1 of block 0 was never programmed.
        let err = d.copy_paced(&[page(0, 4), page(1, 5)], Cause::Gc).unwrap_err();
        assert!(err.to_string().contains("never programmed"), "{err}");
        assert_eq!(d.array.oob_lpn_raw(Ppn(4)), 0, "the copy before it landed");
        assert_eq!(d.array.oob_lpn_raw(Ppn(5)), crate::nand::NO_LPN, "the refused copy left its page erased");
    }

    #[test]
    fn a_host_transfer_takes_an_idle_gap_of_the_link() {
        let mut d = device(false);
        let took = d.timing().host_transfer(2048);
        // A read's data, ready only once its busy plane has sensed it.
        let late = d.host_transfer(2048, SimTime(1_000_000));
        assert_eq!(late, SimTime(1_000_000) + took);
        // A write's data arriving before then crosses the idle link at once.
        assert_eq!(d.host_transfer(2048, SimTime(10)), SimTime(10) + took, "not behind the later transfer");
        // One that would overlap the booked transfer goes after it.
        let overlapping = SimTime(1_000_000 - took.0 / 2);
        assert_eq!(d.host_transfer(2048, overlapping), late + took);
        assert_eq!(d.busy.host_link, 3 * took.0);
    }

    #[test]
    fn pcm_has_its_own_timeline() {
        let mut d = device(false).with_pcm(Nanos(115), Nanos(90_000), 1);
        let flash = d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(d.pcm_write(SimTime::ZERO), (SimTime::ZERO, SimTime(90_000)), "PCM does not wait for the flash");
        assert_eq!(
            d.pcm_write(SimTime(10)),
            (SimTime(90_000), SimTime(180_000)),
            "writes queue behind writes; with a queue of one, the second waits for room"
        );
        assert_eq!(d.pcm_read(SimTime(10)), SimTime(125), "reads go ahead of queued writes");
        assert_eq!(d.pcm_read(SimTime(20)), SimTime(240), "and queue behind reads");
        assert_eq!(d.pcm_write(SimTime(10)).1, SimTime(270_230), "paused writes resume after the reads");
        assert_eq!(
            d.program(Ppn(1), Lpn(1), SimTime::ZERO, Cause::Host, Payload::None).unwrap(),
            flash + Nanos(XFER + 200_000)
        );
        assert_eq!(d.pcm, PcmCounters { reads: 2, writes: 3 });
    }

    #[test]
    fn a_write_after_a_burst_of_reads_waits_for_them_on_the_one_pcm() {
        let mut d = device(false).with_pcm(Nanos(115), Nanos(90_000), 1);
        // A TRIM's lookups fill the map cache, then its evictions write:
        // both from the same moment.
        let reads = (0..10).map(|_| d.pcm_read(SimTime::ZERO)).last().unwrap();
        assert_eq!(reads, SimTime(1_150));
        assert_eq!(d.pcm_write(SimTime::ZERO).1, SimTime(1_150 + 90_000), "not overlapping the reads");
        assert_eq!(d.last_end(), SimTime(91_150));
        assert_eq!(d.busy.pcm, 91_150, "busy exactly until the last end");
    }

    #[test]
    fn pcm_write_queue_bounds_what_the_controller_holds() {
        let mut d = device(false).with_pcm(Nanos(115), Nanos(90_000), 3);
        let taken: Vec<SimTime> = (0..5).map(|_| d.pcm_write(SimTime::ZERO).0).collect();
        // Three fit at once; then each waits for the oldest write to finish.
        assert_eq!(taken, [0, 0, 0, 90_000, 180_000].map(SimTime));
    }
}
