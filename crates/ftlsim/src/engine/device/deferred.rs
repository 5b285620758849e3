//! Paced work issued to the flash at its own time: a COFTL cleaner merge
//! changes the array at once, but each of its copies is booked on the
//! calendars only when the engine's clock reaches the copy's time.
//!
//! Booking a whole paced merge when it starts (as the engine did) put
//! thousands of intervals, a copy's time apart, up to a second ahead on
//! every calendar of its lanes; with 30 merges in flight the calendars
//! outgrew the CPU's cache and booking them was 90% of a COFTL run. Booked
//! as the clock reaches them, copies are ordered with host operations as
//! their issue times are: a host operation issued before a copy takes the
//! planes first, one issued after finds the copy booked. So the host has
//! priority over merges, as with the page FTL's preemptible GC.
//!
//! A later operation on a block a merge has work on must come after that
//! work (programs in page order, an erase after the copies out of its
//! block, a read after its page's program): before it is booked, the
//! merge's remaining work is booked first, back to back from the present,
//! since something now waits for it (a host write taking a set the merge
//! erases, a read of a page it copies). Merges never share a block (one
//! touching another's block books that one first), so each is booked on
//! its own.
//!
//! Simplifications: work due is booked when the clock reaches it, at a host
//! command's issue ([`Device::advance`]), after the controller's own
//! background work due before then (a merge's copy and a write buffer's
//! destage due at the same moment are not ordered by time). Power cuts,
//! saving a drive and the end of a run book everything first.

use super::{Cause, Device, PacedPage};
use crate::error::Result;
use crate::units::{BlockId, Ppn, SimTime};
use std::collections::VecDeque;

/// What a merge does after its copies, booked once they all are.
#[derive(Clone, Copy, Debug)]
enum Tail {
    Program { ppn: Ppn, not_before: SimTime, cause: Cause },
    Erase { block: BlockId, not_before: SimTime, cause: Cause },
}

#[derive(Clone, Debug)]
struct Job {
    /// Numbered in the order recorded, from 1.
    seq: u64,
    pages: Vec<PacedPage>,
    /// The first page not yet booked.
    next: usize,
    cause: Cause,
    /// When the latest booked program ends.
    done: SimTime,
    tail: Vec<Tail>,
    /// The blocks it has work on.
    blocks: Vec<BlockId>,
}

/// Work recorded and not yet booked.
#[derive(Default)]
pub(super) struct Deferred {
    recording: Option<Job>,
    jobs: VecDeque<Job>,
    /// Per block, the job with work on it not yet booked (0: none); empty
    /// until a job is recorded.
    on_block: Vec<u64>,
    recorded: u64,
    /// Booking a job: its own operations do not book it again.
    booking: bool,
}

impl Deferred {
    #[inline]
    pub(super) fn recording(&self) -> bool {
        self.recording.is_some()
    }
}

impl Device {
    /// Reads, programs, erases and paced copies from here to
    /// [`end_deferred`](Self::end_deferred) change the array and the
    /// counters now and are booked as the clock reaches them (see the
    /// module's doc). In a fast-forward or with multi-plane groups they are
    /// booked at once, as without this.
    pub fn begin_deferred(&mut self) {
        if self.units_only || !self.groups.is_empty() {
            return;
        }
        let blocks = self.geometry().blocks as usize;
        let d = &mut self.deferred;
        debug_assert!(d.recording.is_none(), "deferred work does not nest");
        if d.on_block.len() != blocks {
            d.on_block = vec![0; blocks];
        }
        d.recorded += 1;
        d.recording = Some(Job {
            seq: d.recorded,
            pages: Vec::new(),
            next: 0,
            cause: Cause::Gc,
            done: SimTime::ZERO,
            tail: Vec::new(),
            blocks: Vec::new(),
        });
    }

    /// Ends what [`begin_deferred`](Self::begin_deferred) began, booking
    /// what is due already.
    pub fn end_deferred(&mut self) {
        let Some(job) = self.deferred.recording.take() else { return };
        if job.pages.is_empty() && job.tail.is_empty() {
            return;
        }
        self.deferred.jobs.push_back(job);
        self.book_due(self.horizon);
    }

    /// Books everything recorded, each page at its own time (a power cut,
    /// a saved drive, the end of a run), and keeps every copy run booked
    /// as it is ([`preempt`](super::preempt)).
    pub fn book_deferred(&mut self) {
        // Copy runs a read could still go before stay as booked too.
        self.preempt.confirm_all();
        self.book_through(u64::MAX, None);
    }

    /// Before an operation on `block` issued at `now` is booked: the work
    /// a job has on it (and the jobs recorded before that one) is booked
    /// first, what is not yet due from `now` on.
    #[inline]
    pub(super) fn book_work_on(&mut self, block: BlockId, now: SimTime) {
        let d = &self.deferred;
        if d.on_block.is_empty() || d.booking {
            return;
        }
        let seq = d.on_block[block.idx()];
        if seq != 0 && d.recording.as_ref().is_none_or(|j| j.seq != seq) {
            self.book_through(seq, Some(now));
        }
    }

    /// Notes that the job being recorded has work on `block` from `now`.
    fn mark(&mut self, block: BlockId, now: SimTime) {
        self.book_work_on(block, now);
        let job = self.deferred.recording.as_mut().expect("recording");
        let on = &mut self.deferred.on_block[block.idx()];
        if *on != job.seq {
            *on = job.seq;
            job.blocks.push(block);
        }
    }

    /// [`copy_paced`](Self::copy_paced) while recording: checked, applied
    /// and counted now.
    pub(super) fn record_copy_paced(&mut self, pages: &[PacedPage], cause: Cause) -> Result<()> {
        for p in pages {
            if let Some(src) = p.src {
                self.mark(self.geometry().block_of(src), p.at);
            }
            self.mark(self.geometry().block_of(p.dst), p.at);
            self.apply_paced(p, cause)?;
        }
        let job = self.deferred.recording.as_mut().expect("recording");
        job.cause = cause;
        job.pages.extend_from_slice(pages);
        Ok(())
    }

    /// A program the array has recorded (and counted), booked after the
    /// job's copies.
    pub(super) fn record_program(&mut self, ppn: Ppn, not_before: SimTime, cause: Cause) {
        self.mark(self.geometry().block_of(ppn), not_before);
        self.deferred.recording.as_mut().expect("recording").tail.push(Tail::Program { ppn, not_before, cause });
    }

    /// An erase the array has done (and counted), booked after the job's
    /// copies.
    pub(super) fn record_erase(&mut self, block: BlockId, not_before: SimTime, cause: Cause) {
        self.mark(block, not_before);
        self.deferred.recording.as_mut().expect("recording").tail.push(Tail::Erase { block, not_before, cause });
    }

    /// Books every job's pages due by `now`.
    pub(super) fn book_due(&mut self, now: SimTime) {
        if self.deferred.jobs.is_empty() {
            return;
        }
        let mut jobs = std::mem::take(&mut self.deferred.jobs);
        self.deferred.booking = true;
        jobs.retain_mut(|job| !self.book_job(job, now));
        self.deferred.booking = false;
        self.deferred.jobs = jobs;
    }

    /// Books the jobs up to `seq` whole; with `hurry`, their pages not yet
    /// due then (or at the horizon, if later) from then on, back to back.
    fn book_through(&mut self, seq: u64, hurry: Option<SimTime>) {
        self.deferred.booking = true;
        while self.deferred.jobs.front().is_some_and(|j| j.seq <= seq) {
            let mut job = self.deferred.jobs.pop_front().expect("checked");
            if let Some(now) = hurry {
                let now = now.max(self.horizon);
                job.pages[job.next..].iter_mut().for_each(|p| p.at = p.at.min(now));
            }
            self.book_job(&mut job, SimTime(u64::MAX));
        }
        self.deferred.booking = false;
    }

    /// Books `job`'s pages due by `now`, and its tail once they all are;
    /// true when it is done.
    fn book_job(&mut self, job: &mut Job, now: SimTime) -> bool {
        while let Some(&p) = job.pages.get(job.next) {
            if p.at > now {
                return false;
            }
            let ready = p.src.map_or(p.at, |src| self.time_page_read(src, p.at, job.cause));
            job.done = job.done.max(self.time_logged_program(p.dst, ready, job.cause));
            job.next += 1;
        }
        for &t in &job.tail {
            match t {
                Tail::Program { ppn, not_before, cause } => {
                    self.time_logged_program(ppn, not_before.max(job.done), cause);
                }
                Tail::Erase { block, not_before, cause } => {
                    self.time_erase(block, not_before, cause);
                }
            }
        }
        for &b in &job.blocks {
            if self.deferred.on_block[b.idx()] == job.seq {
                self.deferred.on_block[b.idx()] = 0;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{copy_page_by_page, device, other_work, paced_page, same_copies, write_sources};
    use super::*;
    use crate::nand::Payload;
    use crate::units::Lpn;
    use proptest::prelude::*;

    /// What is booked from the horizon on, and what was counted.
    fn ahead(d: &Device) -> impl PartialEq + std::fmt::Debug {
        let h = d.horizon.0;
        let live =
            |c: &crate::engine::Calendar| c.intervals().into_iter().filter(|&(_, end)| end > h).collect::<Vec<_>>();
        (
            d.units.iter().map(live).collect::<Vec<_>>(),
            d.channels.iter().map(live).collect::<Vec<_>>(),
            (d.block_last.clone(), d.counters.clone(), d.busy.clone(), d.horizon),
        )
    }

    /// Block 0's four pages (plane 0) and block 4's (plane 1), written.
    fn written(plane_parallel: bool) -> Device {
        let mut d = device(plane_parallel);
        write_sources(&mut d);
        d
    }

    /// Copies (or pads) into block 9 (channel 1), in page order, at their times.
    fn paced(run: &[(Option<u32>, u64)], base: u64) -> Vec<PacedPage> {
        let mut at = 0;
        run.iter()
            .enumerate()
            .map(|(i, &(src, gap))| {
                at += gap;
                paced_page(i, src, 9, SimTime(base + at))
            })
            .collect()
    }

    proptest! {
        /// A deferred merge books as its copies issued at their own times
        /// would, among host operations issued before and after them.
        #[test]
        fn deferred_copies_book_as_if_issued_at_their_times(
            plane_parallel: bool,
            run in proptest::collection::vec((proptest::option::of(0u32..8), 0u64..600_000), 1..=4),
            host in proptest::collection::vec((0u32..3, 1_000_000u64..3_000_000), 0..12),
        ) {
            let pages = paced(&run, 1_000_000);
            let mut host = host;
            host.sort_by_key(|&(_, at)| at);
            let (mut deferred, mut issued) = (written(plane_parallel), written(plane_parallel));
            let (mut n1, mut n2) = ([0u32; 3], [0u32; 3]);
            deferred.advance(SimTime(1_000_000));
            deferred.begin_deferred();
            deferred.copy_paced(&pages, Cause::Gc).unwrap();
            deferred.end_deferred();
            for &(k, at) in &host {
                deferred.advance(SimTime(at));
                other_work(&mut deferred, &[(k, at)], &mut n1);
            }
            let end = pages.last().unwrap().at.max(SimTime(host.last().map_or(0, |h| h.1)));
            deferred.advance(end);
            // The same, each copy issued when the clock reaches it (before
            // host operations issued at the same time).
            let mut events: Vec<(u64, bool, usize)> = pages.iter().enumerate().map(|(i, p)| (p.at.0, false, i)).collect();
            events.extend(host.iter().enumerate().map(|(i, h)| (h.1, true, i)));
            events.sort();
            for (at, is_host, i) in events {
                issued.advance(SimTime(at));
                if is_host {
                    other_work(&mut issued, &[host[i]], &mut n2);
                } else {
                    copy_page_by_page(&mut issued, &pages[i]);
                }
            }
            issued.advance(end);
            // Calendars forget what ended before the horizon when next
            // touched, so their pasts may differ.
            prop_assert_eq!(ahead(&deferred), ahead(&issued));
            prop_assert!(same_copies(&deferred, &issued, &pages));
        }
    }

    #[test]
    fn the_array_changes_at_once_and_a_page_waits_for_the_merges_work_on_its_block() {
        let mut d = written(false);
        // After the writes (8 programs on channel 0's die, ~2.1 ms).
        let now = 3_000_000;
        d.advance(SimTime(now));
        // Four copies a millisecond apart, then the source block erased.
        let pages = paced(&[(Some(0), 0), (Some(1), 1_000_000), (Some(2), 1_000_000), (Some(3), 1_000_000)], now);
        d.begin_deferred();
        d.copy_paced(&pages, Cause::Gc).unwrap();
        d.erase(BlockId(0), SimTime(now), Cause::Gc).unwrap();
        d.end_deferred();
        assert_eq!(d.array.oob_lpn_raw(Ppn(39)), 53, "the last copy is on the array");
        assert_eq!(d.array.written_pages(BlockId(0)), 0, "the source is erased");
        assert_eq!(d.counters.erases[Cause::Gc as usize], 1);
        // Only the first copy is booked (the rest are not due): plane 2 is
        // free after it.
        let t = *d.timing();
        let copy = t.command + t.read + t.page_transfer + t.command + t.page_transfer + t.program;
        let first = d.plane_free(crate::units::PlaneId(2));
        assert_eq!(first, SimTime(now) + copy);
        // A read of the last copy's page waits for the merge's remaining
        // copies, booked back to back from now rather than 1 ms apart.
        let read = d.read(Ppn(39), SimTime(now), Cause::Host).unwrap();
        assert!(read > SimTime(now) + copy + copy, "after the copies: {read:?}");
        assert!(read < SimTime(now + 2_000_000), "hurried: {read:?}");
        // The erase came after the last read out of block 0: a program there
        // ends after both.
        let p = d.program(Ppn(0), Lpn(9), SimTime(now), Cause::Host, Payload::None).unwrap();
        assert!(p >= SimTime(now) + copy + t.erase + t.program, "{p:?}");
    }

    #[test]
    fn a_fast_forward_books_at_once() {
        let mut d = written(false);
        d.set_units_only(true);
        d.begin_deferred();
        d.copy_paced(&paced(&[(Some(0), 0)], 0), Cause::Gc).unwrap();
        d.end_deferred();
        assert!(d.deferred.on_block.is_empty() && d.deferred.jobs.is_empty());
    }
}
