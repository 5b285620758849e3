//! GC copies a host read goes before: a background GC step may book all
//! the copies its plane owes as one run (booked together, as cheaply as
//! copies paid ahead of a write), keeping what it booked; a host read of
//! that array unit issued before some of those copies start takes them
//! back off the calendars, is booked, and books them again after itself.
//! So the read waits for the copy in progress only, as it would if each
//! copy were a step of its own booked when the unit came free (the
//! schedule of `gc.debt = "background"`), while a run no read interrupts
//! costs what one run costs: booking the owed copies a step at a time was
//! about twice the instructions of the whole simulation behind a write
//! buffer.
//!
//! A read of a page whose copy has not begun by the read's issue is timed
//! as a read of the copy's source, where the data still is (the victim is
//! erased only after the run, by a later step), as it would be read before
//! that copy's step.
//!
//! Any other operation booked on the unit (a program, an erase, a copy
//! outside such a run, a read for GC) keeps the run as booked: it comes
//! after the copies the plane owed, as it would after copies paid ahead.
//! Booking again uses the same timing as the first booking.
//!
//! Simplifications: only runs within one array unit are kept (the page
//! FTLs' GC); none in a fast-forward, with multi-plane groups, or on a
//! drive that models power cuts (payloads or sequence numbers recorded:
//! [`Device::can_keep_copy_runs`]); the FTL then steps a copy at a time,
//! timed alike at a step's cost. A saved drive or a restarted clock
//! forgets what runs may be taken back, keeping them booked.

use super::{Booked, Cause, Device, Keep, ProgTail};
use crate::units::{BlockId, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

/// A copy of a run, as booked.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeptCopy {
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) cause: Cause,
    pub(super) booked: Booked,
}

/// Copies of a run as booked, one after another straight on: the first
/// as `first`, each next one period later ([`Booked::nth`]), into
/// destination pages from `dst` on. A run is kept as its stretches (its
/// copies' sources beside them) and spelled out copy by copy only when a
/// read takes it back: most runs are never taken back, and a push a copy
/// was ~150 instructions a request behind a write buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stretch {
    pub(super) first: Booked,
    pub(super) dst: u32,
    pub(super) count: u32,
    pub(super) cause: Cause,
}

/// Copies of a run from one block into one (a run crosses into a new
/// destination block, or goes on from another source, in a new segment),
/// with the blocks' last operations' ends before them.
#[derive(Clone, Copy, Debug)]
struct Segment {
    first: usize,
    src: BlockId,
    dst: BlockId,
    before: (SimTime, SimTime),
    /// The destination's programs before the segment's.
    tail: ProgTail,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Run {
    /// The copies' sources, in copy order.
    srcs: Vec<u32>,
    stretches: Vec<Stretch>,
    segments: Vec<Segment>,
    /// The copies one by one, spelled out when the run is taken back.
    copies: Vec<KeptCopy>,
}

impl Run {
    /// Whether it holds no copy.
    fn is_empty(&self) -> bool {
        self.stretches.is_empty()
    }

    /// Empties it, keeping the vectors' room.
    fn clear(&mut self) {
        self.srcs.clear();
        self.stretches.clear();
        self.segments.clear();
        self.copies.clear();
    }

    /// Spells the stretches out into `copies`, one a copy.
    fn spell_out(&mut self) {
        self.copies.clear();
        let mut srcs = self.srcs.iter();
        for s in &self.stretches {
            for k in 0..s.count {
                let src = *srcs.next().expect("a kept run's sources, one a copy");
                self.copies.push(KeptCopy { src, dst: s.dst + k, cause: s.cause, booked: s.first.nth(k) });
            }
        }
        debug_assert!(srcs.next().is_none(), "a kept run's sources, one a copy");
    }
}

/// The runs a host read may still go before, per array unit. Saved with
/// the drive: the budgets only (a drive is saved between commands, its
/// runs as booked).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Preemptible {
    /// A background step is booking: its copy runs are kept.
    #[serde(skip)]
    pub(super) keeping: bool,
    /// Per array unit (empty until the first run is kept).
    #[serde(skip)]
    runs: Vec<Run>,
    /// Units with a run kept.
    #[serde(skip)]
    held: usize,
    /// An emptied run whose vectors the next [`take`](Self::take) puts in
    /// its unit's place (a read cuts into runs often: no allocation).
    #[serde(skip)]
    spare: Run,
    /// Per array unit, the copies its next kept run may book, and whether
    /// a read cut into its runs since it was set (see
    /// [`Device::copies_to_keep`]).
    budget: Vec<(u32, bool)>,
}

/// Bounds of [`Preemptible::budget`].
const FIRST_BUDGET: u32 = 16;
const MAX_BUDGET: u32 = 1 << 12;

impl Preemptible {
    /// Whether any unit has a run kept.
    #[inline(always)]
    pub(super) fn any(&self) -> bool {
        self.held > 0
    }

    /// `unit`'s run stays as booked: nothing can go before it any more.
    #[inline]
    pub(super) fn confirm(&mut self, unit: usize) {
        if let Some(run) = self.runs.get_mut(unit)
            && !run.is_empty()
        {
            run.clear();
            self.held -= 1;
        }
    }

    /// Every run stays as booked.
    pub(super) fn confirm_all(&mut self) {
        self.runs.iter_mut().for_each(Run::clear);
        self.held = 0;
    }

    /// `unit`'s run, no longer kept; `None` without one.
    fn take(&mut self, unit: usize) -> Option<Run> {
        let run = self.runs.get_mut(unit).filter(|run| !run.is_empty())?;
        self.held -= 1;
        let mut run = std::mem::replace(run, std::mem::take(&mut self.spare));
        run.spell_out();
        Some(run)
    }

    /// `run`, [taken](Self::take) and done with, lends its vectors to the next.
    fn give_back(&mut self, mut run: Run) {
        run.clear();
        self.spare = run;
    }

    /// A run of copies from `src` into `dst` is about to be kept on
    /// `unit` (of `units`), the blocks' last operations ending at
    /// `before`, its sources `keep`'s; returns where its stretches go
    /// (every copy in one, in order).
    pub(super) fn open(
        &mut self,
        units: usize,
        unit: usize,
        (src, dst): (BlockId, BlockId),
        before: (SimTime, SimTime),
        tail: ProgTail,
        keep: Keep<'_>,
    ) -> &mut Vec<Stretch> {
        if self.runs.is_empty() {
            self.runs = vec![Run::default(); units];
        }
        let run = &mut self.runs[unit];
        if run.is_empty() {
            self.held += 1;
        }
        run.segments.push(Segment { first: run.srcs.len(), src, dst, before, tail });
        match keep {
            Keep::Nothing => {}
            Keep::Run(srcs) => run.srcs.extend_from_slice(srcs),
            Keep::Again(copies) => run.srcs.extend(copies.iter().map(|c| c.src)),
        }
        &mut run.stretches
    }
}

impl Device {
    /// Whether background GC may book runs a host read can go before (see
    /// [`preempt`](self)): with full timing, no multi-plane groups, and no
    /// power cut to model (a cut tears every program booked to end after
    /// it, so copies booked ahead in a run would be torn where a drive
    /// taking a copy a step had not begun them: on the conformance suite's
    /// small drives, enough torn pages for GC to find no free page).
    pub fn can_keep_copy_runs(&self) -> bool {
        !self.units_only && self.groups.is_empty() && self.power.is_none()
    }

    /// How many of the `owed` copies on `plane` a background step should
    /// book as one kept run. Any number is timed alike (a read goes before
    /// the copies not begun either way); what differs is the cost: a run
    /// no read cuts into costs a fraction of a step per copy, and each cut
    /// books the rest again. So each unit's budget doubles after steps no
    /// read cut into and halves after one that was cut (write-heavy loads
    /// book whole debts, read-heavy ones a copy or two a step).
    pub fn copies_to_keep(&mut self, plane: PlaneId, owed: u32) -> u32 {
        let unit = self.plane_unit[plane.idx()] as usize;
        let budgets = &mut self.preempt.budget;
        if budgets.is_empty() {
            *budgets = vec![(FIRST_BUDGET, false); self.units.len()];
        }
        let (budget, cut) = &mut budgets[unit];
        *budget = if *cut { (*budget / 2).max(1) } else { (*budget * 2).min(MAX_BUDGET) };
        *cut = false;
        owed.min(*budget)
    }

    /// Copy runs booked from here to [`end_keeping`](Self::end_keeping),
    /// within one array unit, may be taken back by a host read issued
    /// before their copies start.
    pub fn begin_keeping(&mut self) {
        self.preempt.keeping = self.can_keep_copy_runs();
    }

    pub fn end_keeping(&mut self) {
        self.preempt.keeping = false;
    }

    /// A host (or mapping) read of `ppn` issued at `not_before`: the copies
    /// of its unit's run not yet begun are taken back, the read is booked,
    /// and they are booked again after it. Returns when the read's data has
    /// crossed the channel.
    pub(super) fn read_before_kept_copies(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) -> SimTime {
        let block = self.geometry().block_of(ppn);
        let (ch, unit) = self.resources(block);
        let Some(run) = self.preempt.take(unit) else { return self.time_page_read(ppn, not_before, cause) };
        // Nothing starts before the horizon: a copy booked before it has begun.
        let t = not_before.max(self.horizon);
        let first = run.copies.partition_point(|c| c.booked.read_start < t);
        // A page whose copy has not begun is read where it still is.
        let at = match run.copies[first..].iter().find(|c| c.dst == ppn.0) {
            Some(c) => Ppn(c.src),
            None => ppn,
        };
        let done = if first == run.copies.len() {
            // Every copy has begun: the read waits for the last, as booked.
            self.time_page_read(at, not_before, cause)
        } else {
            self.take_back(unit, ch, &run, first);
            let done = self.time_page_read(at, not_before, cause);
            self.book_again(unit, ch, &run, first, t);
            done
        };
        self.preempt.give_back(run);
        done
    }

    /// Frees what the copies of `run` from `first` on hold: their time on
    /// the unit and the bus and the busy time counted; the blocks' last
    /// operations go back to the last copy kept. (No run is kept where
    /// programs are tracked for power cuts.)
    fn take_back(&mut self, unit: usize, ch: usize, run: &Run, first: usize) {
        if let Some(b) = self.preempt.budget.get_mut(unit) {
            b.1 = true;
        }
        let prog_xfer = self.timing.command + self.timing.page_transfer;
        // The copies' own time is freed, not everything from the first
        // copy on: a run booked again after a read can hold another
        // operation among its copies (a copy's read took the idle gap
        // before a program booked ahead of the run, and its program went
        // after that program), and freeing from the first copy on freed
        // that program's time too, so the unit could be booked twice at
        // once. Freed last first, in spans of touching intervals (a run
        // goes straight on, so mostly one span at the calendar's end).
        let mut span: Option<(SimTime, SimTime)> = None;
        for c in run.copies[first..].iter().rev() {
            let b = c.booked;
            for (start, end) in [(b.prog_start, b.done), (b.read_start, b.read_done)] {
                span = match span {
                    Some((lo, hi)) if end == lo => Some((start, hi)),
                    Some((lo, hi)) => {
                        self.units[unit].remove(lo, hi - lo);
                        Some((start, end))
                    }
                    None => Some((start, end)),
                };
            }
            self.channels[ch].remove(b.read_bus, b.read_done - b.read_bus);
            self.channels[ch].remove(b.prog_bus, prog_xfer);
            self.busy.units[c.cause as usize] -= b.held().0;
        }
        if let Some((lo, hi)) = span {
            self.units[unit].remove(lo, hi - lo);
        }
        debug_assert!(self.power.is_none(), "a run kept where power cuts are modelled");
        for s in run.segments.iter().rev() {
            if s.first >= first {
                self.block_last[s.src.idx()] = s.before.0;
                self.block_last[s.dst.idx()] = s.before.1;
                self.prog_tail[s.dst.idx()] = s.tail;
            } else {
                let kept = run.copies[first - 1].booked;
                self.block_last[s.src.idx()] = kept.read_done;
                self.block_last[s.dst.idx()] = kept.done;
                let mut tail = s.tail;
                for c in &run.copies[s.first..first] {
                    tail.programmed(
                        self.array.geometry().page_in_block(Ppn(c.dst)),
                        c.booked.prog_start,
                        c.booked.done,
                    );
                }
                self.prog_tail[s.dst.idx()] = tail;
                break;
            }
        }
        self.unit_free.set(unit, self.units[unit].last_end());
    }

    /// Books the copies of `run` from `first` on again, from `t` on (after
    /// the read booked since), kept as a run again.
    fn book_again(&mut self, unit: usize, ch: usize, run: &Run, first: usize, t: SimTime) {
        for (k, s) in run.segments.iter().enumerate() {
            let end = run.segments.get(k + 1).map_or(run.copies.len(), |next| next.first);
            if end <= first {
                continue;
            }
            let copies = &run.copies[s.first.max(first)..end];
            self.time_copy_run::<true>(
                (ch, unit),
                (ch, unit),
                (s.src, s.dst),
                (copies[0].dst, self.array.geometry().page_in_block(Ppn(copies[0].dst))),
                copies.len(),
                t,
                |_| Cause::Gc,
                Keep::Again(copies),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::device;
    use super::*;
    use crate::nand::Payload;
    use crate::units::Lpn;
    use proptest::prelude::*;

    proptest! {
        /// A kept run and a host read issued during it leave the device as
        /// the same copies booked a step at a time (each when its unit is
        /// free, the read first once it is issued: the controller's order)
        /// would, the read included: when it ends, every calendar, block,
        /// counter and busy time. The read is of another block's page, or
        /// of a page the run copies (read from its source until its copy
        /// begins).
        #[test]
        fn a_read_cuts_into_a_kept_run_as_into_copy_steps(
            n in 1usize..=4, now in 0u64..400_000, issue in 0u64..1_500_000, of_copy in prop::option::of(0usize..4),
            uniform: bool,
        ) {
            let (mut kept, mut steps) = (device(true), device(true));
            for d in [&mut kept, &mut steps] {
                // Block 0 (plane 0): the run's sources; block 2 (plane 0): another page.
                for i in (0..4).chain([8]) {
                    d.program(Ppn(i), Lpn(i), SimTime::ZERO, Cause::Host, Payload::None).unwrap();
                }
            }
            let (now, issue) = (SimTime(now), SimTime(issue));
            let src: Vec<u32> = (0..n as u32).collect();
            let dst = |i: usize| 4 + i as u32;
            let of_copy = of_copy.filter(|&k| k < n);
            kept.begin_keeping();
            // Under one cause named as such, the run's straight-on copies
            // are counted at once; named page by page, one by one.
            if uniform {
                kept.copy_run(&src, Ppn(dst(0)), now, crate::engine::AllCopies(Cause::Gc)).unwrap();
            } else {
                kept.copy_run(&src, Ppn(dst(0)), now, |_| Cause::Gc).unwrap();
            }
            kept.end_keeping();
            let target = of_copy.map_or(Ppn(8), |k| Ppn(dst(k)));
            let read_kept = kept.read(target, issue, Cause::Host).unwrap();

            let plane = PlaneId(0);
            let mut read_steps = None;
            for (i, &s) in src.iter().enumerate() {
                let mut at = now.max(steps.plane_free(plane));
                if read_steps.is_none() && at >= issue {
                    // Copy `k` not yet begun: its page is still at its source.
                    let page = of_copy.map_or(Ppn(8), |k| if k >= i { Ppn(src[k]) } else { Ppn(dst(k)) });
                    read_steps = Some(steps.read(page, issue, Cause::Host).unwrap());
                    at = now.max(steps.plane_free(plane));
                }
                steps.copy_run(&[s], Ppn(dst(i)), at, |_| Cause::Gc).unwrap();
            }
            let read_steps = match read_steps {
                Some(done) => done,
                None => steps.read(of_copy.map_or(Ppn(8), |k| Ppn(dst(k))), issue, Cause::Host).unwrap(),
            };
            prop_assert_eq!(read_kept, read_steps);
            prop_assert_eq!(super::super::tests::timing_state(&kept), super::super::tests::timing_state(&steps));
        }
    }
}
