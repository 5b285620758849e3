//! Multi-plane operations (`timing.multi_plane`): a die runs the same
//! operation on several of its planes together, at one page offset, for
//! one tR, tPROG or tBERS, as ONFI's multi-plane commands do and as
//! controllers use them when operations for several planes wait at one die
//! (SSDsim's and MQSim's multi-plane "advanced commands"). Without the
//! option a die's planes take turns; `timing.plane_parallel` makes them
//! fully independent, which a real die is not.
//!
//! The engine books an operation when it is asked for and returns its
//! completion at once, so an operation joins its die's latest one (the
//! die's last booking: nothing is booked after it) only where every time
//! already returned stays true:
//!
//! - A read joins a read group whose sensing had not begun when the read
//!   could have started (its `not_before` and its block's last operation
//!   are no later than the group's start): it shares the sensing, and its
//!   command cycles and data cross the bus after it, holding the die
//!   until they have. Earlier members keep their times.
//! - An erase joins an erase group in the same way, on a block of any
//!   other plane (ONFI's multi-plane erase takes a block address per
//!   plane; chips that require equal block indices are not modelled). It
//!   ends with the group.
//! - A program's data must be in its plane's register before the group's
//!   tPROG starts, so a program that joins moves the group's array start,
//!   and every member's end, later by its transfer. Only programs of one
//!   batch join each other ([`Device::begin_batch`]: the pages of one FTL
//!   write call, whose caller takes their completion from
//!   [`Device::end_batch`], not from each page), and only if the page's
//!   data was ready (and its block's previous page done) by the group's
//!   array start: the controller holds the group's confirm command for a
//!   page it already has. The write buffer's destages are batches of a
//!   die's worth of pages, and the page FTL's dynamic allocation steers a
//!   batch's pages to planes that can join ([`Device::join_start`]).
//!
//! A group holds its die once (busy time counts the hold once), each
//! member's block records the group's end as its last operation, and the
//! NAND array checks every page as before. Fast-forwarding
//! (units-only timing, used to precondition) forms no groups.

use super::{Cause, Device};
use crate::units::{BlockId, Nanos, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Kind {
    /// No group: nothing may join.
    #[default]
    None,
    Read,
    Program,
    Erase,
}

/// A die's latest operation and the others that joined it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Group {
    kind: Kind,
    /// Page offset in the block (0 for erases).
    offset: u32,
    /// The die's planes in the group, one bit each.
    planes: u64,
    /// When the die's hold began (reads and erases start their array work then).
    start: SimTime,
    /// Programs: when tPROG starts (the last member's data is in).
    array_start: SimTime,
    /// When the die is free again.
    end: SimTime,
    /// Programs: the batch they were booked in and their entries in its log.
    batch: u64,
    members: Vec<u32>,
    size: u32,
}

/// Multi-plane groups formed (two or more operations) and the operations
/// in them, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MultiPlaneCounters {
    pub read_groups: u64,
    pub reads: u64,
    pub program_groups: u64,
    pub programs: u64,
    pub erase_groups: u64,
    pub erases: u64,
}

impl Device {
    /// Opens a batch: until [`end_batch`](Self::end_batch), programs booked
    /// with [`program_batched`](Self::program_batched) may form multi-plane
    /// groups with each other (only without `timing.multi_plane` they
    /// never do). Batches nest: an inner one is part of the outermost.
    pub fn begin_batch(&mut self) {
        self.batch_depth += 1;
        if self.batch_depth > 1 {
            return;
        }
        self.batch_open = !self.groups.is_empty() && !self.units_only;
        self.batch += 1;
        self.batch_log.clear();
        self.batch_done = SimTime::ZERO;
    }

    /// Closes the batch; returns when its last program ends
    /// ([`SimTime::ZERO`] if it had none): final for the outermost batch,
    /// so far (provisional) for an inner one.
    #[inline(always)]
    pub fn end_batch(&mut self) -> SimTime {
        debug_assert!(self.batch_depth > 0, "end_batch without begin_batch");
        // Without multi-plane groups (the log empty) a host write's batch
        // ends here, inlined; else out of line.
        if self.batch_depth == 1 && self.batch_log.is_empty() {
            self.batch_depth = 0;
            self.batch_open = false;
            return self.batch_done;
        }
        self.end_batch_logged()
    }

    fn end_batch_logged(&mut self) -> SimTime {
        self.batch_depth -= 1;
        let last = self.batch_log.iter().fold(self.batch_done, |last, &(_, done)| last.max(done));
        if self.batch_depth > 0 {
            return last;
        }
        self.batch_open = false;
        for i in 0..self.batch_log.len() {
            let (ppn, done) = self.batch_log[i];
            self.log_program(ppn, done);
        }
        self.batch_log.clear();
        last
    }

    /// Whether a batch is open in which programs may form multi-plane
    /// groups (so [`join_start`](Self::join_start) may answer).
    #[inline]
    pub fn grouping(&self) -> bool {
        self.batch_open
    }

    /// When a program of the open batch at page offset `offset` of `plane`
    /// could start sending its data to join the latest group of the
    /// plane's die (the group's array start), if it could join it (its
    /// data and block being ready by then, which the caller knows). The
    /// page FTL's dynamic allocation uses it to send a batch's pages to
    /// planes where they can join.
    pub fn join_start(&self, plane: PlaneId, offset: u32) -> Option<SimTime> {
        let unit = self.plane_unit[plane.idx()] as usize;
        let g = self.groups.get(unit)?;
        let bit = 1u64.checked_shl(plane.0 % self.geometry().planes_per_die)?;
        let joinable = self.batch_open
            && !self.units_only
            && g.kind == Kind::Program
            && g.batch == self.batch
            && g.end == self.unit_free.get(unit)
            && g.planes & bit == 0
            && g.offset == offset;
        joinable.then_some(g.array_start)
    }

    /// The plane bit of `block` in its die, if an operation of `kind` on
    /// page `ppn` of it, possible from `not_before`, may join the die's
    /// latest group: the same kind (programs: of the open batch), nothing
    /// booked on the die after it, not under way before the horizon,
    /// another plane, the same page offset (erases: any block), and the
    /// operation and its block's last one ready when the group's array work
    /// starts (programs: at its current array start).
    fn joinable(&self, kind: Kind, unit: usize, block: BlockId, ppn: u32, not_before: SimTime) -> Option<u64> {
        let g = &self.groups[unit];
        let in_batch = kind != Kind::Program || (self.batch_open && g.batch == self.batch);
        if self.units_only || g.kind != kind || !in_batch || g.end != self.unit_free.get(unit) || g.start < self.horizon
        {
            return None;
        }
        let array_start = if kind == Kind::Program { g.array_start } else { g.start };
        // A read's `not_before` holds its page's program already.
        let earliest = if kind == Kind::Read { not_before } else { not_before.max(self.block_last[block.idx()]) };
        if earliest > array_start {
            return None;
        }
        let geo = self.array.geometry();
        let plane = geo.plane_of(block).0 % geo.planes_per_die;
        let bit = 1u64.checked_shl(plane)?;
        let offset = if kind == Kind::Erase { 0 } else { geo.page_in_block(Ppn(ppn)) };
        (g.planes & bit == 0 && g.offset == offset).then_some(bit)
    }

    /// Joins a read to the die's latest read group if it may (see the
    /// module doc); returns when its data has crossed the bus.
    pub(super) fn join_read(
        &mut self,
        ch: usize,
        unit: usize,
        block: BlockId,
        ppn: u32,
        not_before: SimTime,
        cause: Cause,
    ) -> Option<SimTime> {
        let bit = self.joinable(Kind::Read, unit, block, ppn, not_before)?;
        let start = self.groups[unit].start;
        let t = self.timing;
        let (sensed, transfer) = (start + t.command + t.read, t.command + t.page_transfer);
        let on_bus = self.bus_slot(ch, sensed, transfer);
        self.take_bus(ch, on_bus, transfer, sensed, start, cause);
        let done = on_bus + transfer;
        self.extend(unit, done, cause);
        let last = &mut self.block_last[block.idx()];
        *last = (*last).max(done);
        self.grew(unit, bit);
        Some(done)
    }

    /// Joins a program of the open batch to the die's latest program group
    /// of the batch if it may (see the module doc); returns when the group
    /// now ends (every member's new end).
    pub(super) fn join_program(
        &mut self,
        ch: usize,
        unit: usize,
        block: BlockId,
        ppn: u32,
        not_before: SimTime,
        cause: Cause,
    ) -> Option<SimTime> {
        let bit = self.joinable(Kind::Program, unit, block, ppn, not_before)?;
        let (array_start, end) = (self.groups[unit].array_start, self.groups[unit].end);
        let t = self.timing;
        let transfer = t.command + t.page_transfer;
        let on_bus = self.bus_slot(ch, array_start, transfer);
        // A bus so busy that the data would come after the group's tPROG
        // ends: the page goes on its own after the group instead.
        if on_bus >= end {
            return None;
        }
        self.take_bus(ch, on_bus, transfer, array_start, on_bus, cause);
        let done = on_bus + transfer + t.program;
        self.extend(unit, done, cause);
        let Device { groups, batch_log, block_last, prog_tail, array, .. } = self;
        let geo = array.geometry();
        prog_tail[block.idx()].programmed(geo.page_in_block(Ppn(ppn)), on_bus, done);
        let g = &mut groups[unit];
        g.array_start = on_bus + transfer;
        g.members.push((batch_log.len() - 1) as u32);
        for &m in &g.members {
            let entry = &mut batch_log[m as usize];
            entry.1 = done;
            let b = geo.block_of(entry.0).idx();
            block_last[b] = done;
            prog_tail[b].moved_later(geo.page_in_block(entry.0), done);
        }
        self.grew(unit, bit);
        Some(done)
    }

    /// Joins an erase to the die's latest erase group if it may (see the
    /// module doc); returns when the group ends.
    pub(super) fn join_erase(&mut self, unit: usize, block: BlockId, not_before: SimTime) -> Option<SimTime> {
        let bit = self.joinable(Kind::Erase, unit, block, 0, not_before)?;
        let (start, end) = (self.groups[unit].start, self.groups[unit].end);
        if let Some(p) = self.power.as_mut() {
            p.erase_started(start);
        }
        self.block_last[block.idx()] = end;
        self.grew(unit, bit);
        Some(end)
    }

    /// An operation of `kind` on page `ppn` of `block` was booked on
    /// `unit` from `start` (its array work from `array_start`) to `end`:
    /// if nothing on the die ends later, it is the group others may join.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn opened(
        &mut self,
        kind: Kind,
        unit: usize,
        block: BlockId,
        ppn: u32,
        start: SimTime,
        array_start: SimTime,
        end: SimTime,
    ) {
        if self.units_only || end != self.unit_free.get(unit) {
            return;
        }
        let geo = self.array.geometry();
        let plane = geo.plane_of(block).0 % geo.planes_per_die;
        let g = &mut self.groups[unit];
        g.kind = kind;
        g.offset = if kind == Kind::Erase { 0 } else { geo.page_in_block(Ppn(ppn)) };
        g.planes = 1u64.checked_shl(plane).unwrap_or(0);
        (g.start, g.array_start, g.end) = (start, array_start, end);
        g.batch = self.batch;
        g.members.clear();
        if kind == Kind::Program {
            g.members.push((self.batch_log.len() - 1) as u32);
        }
        g.size = 1;
    }

    /// The first idle slot of `len` on `ch`'s bus from `from`.
    fn bus_slot(&mut self, ch: usize, from: SimTime, len: Nanos) -> SimTime {
        self.channels[ch].advance(self.horizon);
        self.channels[ch].find(from, len)
    }

    /// Books `ch`'s bus at `at` for `len` for a joining operation that
    /// could have used it from `from` and whose own work began at `began`.
    fn take_bus(&mut self, ch: usize, at: SimTime, len: Nanos, from: SimTime, began: SimTime, cause: Cause) {
        self.channels[ch].insert(at, len);
        self.served.serve(began, cause);
        self.served.bus_wait(at - from, cause);
    }

    /// The die's hold lasts until `end` if that is later (the group is its
    /// last booking, so the time after it is free).
    fn extend(&mut self, unit: usize, end: SimTime, cause: Cause) {
        let g = &mut self.groups[unit];
        if end > g.end {
            self.units[unit].insert(g.end, end - g.end);
            self.unit_free.set(unit, end);
            self.busy.units[cause as usize] += (end - g.end).0;
            g.end = end;
        }
    }

    /// Counts an operation joining `unit`'s group on plane `bit`.
    fn grew(&mut self, unit: usize, bit: u64) {
        let g = &mut self.groups[unit];
        g.planes |= bit;
        g.size += 1;
        let c = &mut self.multi_plane;
        let (groups, ops) = match g.kind {
            Kind::Read => (&mut c.read_groups, &mut c.reads),
            Kind::Program => (&mut c.program_groups, &mut c.programs),
            Kind::Erase => (&mut c.erase_groups, &mut c.erases),
            Kind::None => unreachable!("only a group is joined"),
        };
        if g.size == 2 {
            *groups += 1;
            *ops += 1;
        }
        *ops += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{XFER, device_with};
    use super::*;
    use crate::nand::Payload;
    use crate::units::{Lpn, PlaneId};

    const PROG: u64 = 200_000;
    const READ: u64 = 20_000;
    const ERASE: u64 = 1_500_000;

    // The test device: blocks 0..4 are plane 0, 4..8 plane 1 (the same die,
    // channel 0), 4 pages a block: page p of plane 1's first block is Ppn(16 + p).

    fn batch(d: &mut Device, pages: &[(u32, u64)]) -> (Vec<SimTime>, SimTime) {
        d.begin_batch();
        let provisional = pages
            .iter()
            .map(|&(ppn, at)| d.program_batched(Ppn(ppn), Lpn(ppn), SimTime(at), Cause::Host, Payload::None).unwrap())
            .collect();
        (provisional, d.end_batch())
    }

    #[test]
    fn programs_on_two_planes_at_one_offset_take_one_tprog() {
        let mut d = device_with(false, true);
        let (_, done) = batch(&mut d, &[(0, 0), (16, 0)]);
        assert_eq!(done, SimTime(2 * XFER + PROG), "both transfers, then one tPROG");
        assert_eq!(d.multi_plane, MultiPlaneCounters { program_groups: 1, programs: 2, ..Default::default() });
        assert_eq!(d.busy.units.iter().sum::<u64>(), 2 * XFER + PROG, "the group holds the die once");
        assert_eq!(d.plane_free(PlaneId(1)), done);
    }

    #[test]
    fn join_start_names_the_planes_that_can_join() {
        let mut d = device_with(false, true);
        assert_eq!(d.join_start(PlaneId(1), 0), None, "no batch");
        d.begin_batch();
        assert!(d.grouping());
        d.program_batched(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        assert_eq!(d.join_start(PlaneId(1), 0), Some(SimTime(XFER)), "once plane 0's data is in");
        assert_eq!(d.join_start(PlaneId(1), 1), None, "another offset");
        assert_eq!(d.join_start(PlaneId(0), 1), None, "plane 0 is in the group");
        assert_eq!(d.join_start(PlaneId(2), 0), None, "another die");
        d.end_batch();
        assert!(!d.grouping());
        assert_eq!(d.join_start(PlaneId(1), 0), None, "the batch is over");
    }

    #[test]
    fn nested_batches_are_one() {
        let mut d = device_with(false, true);
        d.begin_batch();
        let (_, inner) = batch(&mut d, &[(0, 0)]);
        assert_eq!(inner, SimTime(XFER + PROG), "so far");
        let (_, inner) = batch(&mut d, &[(16, 0)]);
        assert_eq!(inner, SimTime(2 * XFER + PROG), "joined the outer batch's group");
        assert_eq!(d.end_batch(), SimTime(2 * XFER + PROG));
        assert_eq!(d.multi_plane.program_groups, 1);
    }

    #[test]
    fn programs_at_different_offsets_take_two() {
        let mut d = device_with(false, true);
        let first = d.program(Ppn(16), Lpn(9), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        let (_, done) = batch(&mut d, &[(0, first.0), (17, first.0)]);
        assert_eq!(done, first + Nanos(2 * (XFER + PROG)), "offsets 0 and 1: the die programs them in turn");
        assert_eq!(d.multi_plane, MultiPlaneCounters::default());
    }

    #[test]
    fn without_multi_plane_a_batch_is_plain_programs() {
        let mut d = device_with(false, false);
        let (provisional, done) = batch(&mut d, &[(0, 0), (16, 0)]);
        assert_eq!(provisional, [SimTime(XFER + PROG), SimTime(2 * (XFER + PROG))]);
        assert_eq!(done, SimTime(2 * (XFER + PROG)));
    }

    #[test]
    fn a_returned_program_completion_is_never_moved() {
        let mut d = device_with(false, true);
        // Outside a batch the first program's time is final: nothing joins it.
        let a = d.program(Ppn(0), Lpn(0), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        let (_, done) = batch(&mut d, &[(16, 0)]);
        assert_eq!(done, a + Nanos(XFER + PROG));
        // Nor does a later batch join an earlier one's group.
        let (_, first) = batch(&mut d, &[(1, 0)]);
        let (_, second) = batch(&mut d, &[(17, 0)]);
        assert_eq!((first, second), (done + Nanos(XFER + PROG), done + Nanos(2 * (XFER + PROG))));
        assert_eq!(d.multi_plane.program_groups, 0);
    }

    #[test]
    fn a_page_ready_after_the_group_started_programming_goes_alone() {
        let mut d = device_with(false, true);
        let (_, done) = batch(&mut d, &[(0, 0), (16, XFER + 1)]);
        assert_eq!(done, SimTime(2 * (XFER + PROG)));
        assert_eq!(d.multi_plane.program_groups, 0);
    }

    #[test]
    fn reads_share_the_sensing_and_keep_earlier_times() {
        let mut d = device_with(false, true);
        for ppn in [0, 1, 16] {
            d.program(Ppn(ppn), Lpn(ppn), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        }
        let t = SimTime(10_000_000);
        let first = d.read(Ppn(0), t, Cause::Host).unwrap();
        assert_eq!(first, t + Nanos(READ + XFER));
        let joined = d.read(Ppn(16), t, Cause::Host).unwrap();
        assert_eq!(joined, first + Nanos(XFER), "one tR; the second page's data follows the first's");
        // Plane 0 is in the group already: its next page is sensed after.
        let third = d.read(Ppn(1), t, Cause::Host).unwrap();
        assert_eq!(third, joined + Nanos(READ + XFER));
        assert_eq!(d.multi_plane, MultiPlaneCounters { read_groups: 1, reads: 2, ..Default::default() });
    }

    #[test]
    fn a_read_issued_after_the_sensing_began_does_not_join() {
        let mut d = device_with(false, true);
        for ppn in [0, 16] {
            d.program(Ppn(ppn), Lpn(ppn), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
        }
        let t = SimTime(10_000_000);
        let first = d.read(Ppn(0), t, Cause::Host).unwrap();
        let later = d.read(Ppn(16), t + Nanos(1), Cause::Host).unwrap();
        assert_eq!(later, first + Nanos(READ + XFER));
        assert_eq!(d.multi_plane.read_groups, 0);
    }

    #[test]
    fn erases_of_two_planes_take_one_tbers() {
        let mut d = device_with(false, true);
        let first = d.erase(BlockId(0), SimTime::ZERO, Cause::Gc).unwrap();
        assert_eq!(d.erase(BlockId(6), SimTime::ZERO, Cause::Gc).unwrap(), first, "any block of the other plane");
        assert_eq!(d.erase(BlockId(1), SimTime::ZERO, Cause::Gc).unwrap(), first + Nanos(ERASE), "plane 0 again");
        assert_eq!(d.busy.units.iter().sum::<u64>(), 2 * ERASE);
        assert_eq!(d.multi_plane, MultiPlaneCounters { erase_groups: 1, erases: 2, ..Default::default() });
    }
}
