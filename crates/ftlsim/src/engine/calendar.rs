//! A resource shared by short transfers, booked into its idle gaps.
//!
//! A channel bus carries a page for a few µs between array operations that
//! take tens to hundreds of µs. Booked as "next free at", a transfer booked
//! for the far end of a long read or program would hold the bus idle in
//! between, and every later transfer on the channel would queue behind it:
//! one plane's garbage collection would serialize its whole channel. The
//! calendar keeps the future busy intervals instead, so a transfer takes the
//! first idle gap long enough for it at or after its earliest start.
//!
//! Intervals ending at or before the horizon (a time no later booking may
//! precede; the engine advances it with the host's issue time) are dropped,
//! so the calendar holds only work still ahead: its length is bounded by the
//! transfers booked ahead of the host, not by the run.

use crate::units::{Nanos, SimTime};
use serde::{Deserialize, Serialize};
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Calendar {
    /// Busy intervals `[start, end)`, sorted, disjoint and not touching
    /// (touching intervals are merged).
    busy: Intervals,
    horizon: u64,
    /// Total time booked (utilization).
    pub busy_ns: u64,
}

/// The busy intervals: a vector whose first `head` entries are past
/// (dropped by [`Calendar::advance`] without moving the rest), so every
/// lookup is a plain slice index.
#[derive(Clone, Debug, Default)]
struct Intervals {
    all: Vec<(u64, u64)>,
    head: usize,
}

impl Intervals {
    #[inline]
    fn live(&self) -> &[(u64, u64)] {
        &self.all[self.head..]
    }

    #[inline]
    fn last(&self) -> Option<(u64, u64)> {
        if self.head < self.all.len() { self.all.last().copied() } else { None }
    }

    /// The index (into `all`) of the first interval ending after `t`.
    /// Bookings mostly land near the end (a calendar holds tens of
    /// intervals, and a new one is rarely more than a few from the back),
    /// so the last few are looked at first, then the rest by bisection
    /// (blocking GC books long runs ahead, and a host transfer then goes
    /// far from the back).
    #[inline]
    fn first_ending_after(&self, t: u64) -> usize {
        const NEAR_BACK: usize = 8;
        let near = self.all.len().saturating_sub(NEAR_BACK).max(self.head);
        let mut i = self.all.len();
        while i > near && self.all[i - 1].1 > t {
            i -= 1;
        }
        if i == near && near > self.head {
            // Every interval from `near` on ends after `t`.
            i = self.head + self.all[self.head..near].partition_point(|&(_, end)| end <= t);
        }
        i
    }

    /// Drops the intervals ending at or before `t`.
    #[inline]
    fn drop_until(&mut self, t: u64) {
        while self.head < self.all.len() && self.all[self.head].1 <= t {
            self.head += 1;
        }
        // The dead prefix is reclaimed once it outweighs the live part, so
        // the vector stays about as long as the work ahead.
        if self.head >= 32 && 2 * self.head >= self.all.len() {
            self.all.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Only the live intervals are saved (the sequence a `VecDeque` of them was
/// saved as).
impl Serialize for Intervals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.live().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Intervals {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Intervals { all: Vec::deserialize(d)?, head: 0 })
    }
}

impl Calendar {
    /// Books `len` at the earliest idle gap starting at or after
    /// `earliest` (and the horizon); returns the start.
    #[inline]
    pub fn book(&mut self, earliest: SimTime, len: Nanos) -> SimTime {
        let start = self.find(earliest, len);
        self.insert(start, len);
        start
    }

    /// Where [`book`](Self::book) would put `len`, booking nothing.
    #[inline]
    pub fn find(&self, earliest: SimTime, len: Nanos) -> SimTime {
        let mut t = earliest.0.max(self.horizon);
        // The common case: after everything already booked.
        match self.busy.last() {
            None => return SimTime(t),
            Some(last) if t >= last.1 => return SimTime(t),
            Some(_) => {}
        }
        for &(start, end) in &self.busy.all[self.busy.first_ending_after(t)..] {
            if t + len.0 <= start {
                break;
            }
            t = t.max(end);
        }
        SimTime(t)
    }

    /// Whether `[from, to)` is idle; if not, the end of the first busy
    /// interval in it.
    #[inline]
    pub fn fits(&self, from: SimTime, to: SimTime) -> Result<(), SimTime> {
        if self.busy.last().is_none_or(|last| from.0 >= last.1) {
            return Ok(());
        }
        match self.busy.all.get(self.busy.first_ending_after(from.0)) {
            Some(&(start, end)) if start < to.0 => Err(SimTime(end)),
            _ => Ok(()),
        }
    }

    /// Books `[start, start + len)`, which must be idle ([`find`](Self::find),
    /// [`fits`](Self::fits)).
    #[inline]
    pub fn insert(&mut self, start: SimTime, len: Nanos) {
        let (t, end) = (start.0, start.0 + len.0);
        self.busy_ns += len.0;
        let busy = &mut self.busy;
        match busy.last() {
            None => {
                busy.all.push((t, end));
                return;
            }
            Some(last) if t >= last.1 => {
                if t == last.1 {
                    busy.all.last_mut().expect("a last interval").1 = end;
                } else {
                    busy.all.push((t, end));
                }
                return;
            }
            Some(_) => {}
        }
        let i = busy.first_ending_after(t);
        let head = busy.head;
        let all = &mut busy.all;
        debug_assert!(all.get(i).is_none_or(|&(s, _)| s >= end), "booking over a busy interval");
        let joins_prev = i > head && all[i - 1].1 == t;
        let joins_next = all.get(i).is_some_and(|&(s, _)| s == end);
        match (joins_prev, joins_next) {
            (true, true) => {
                all[i - 1].1 = all[i].1;
                all.remove(i);
            }
            (true, false) => all[i - 1].1 = end,
            (false, true) => all[i].0 = t,
            (false, false) => all.insert(i, (t, end)),
        }
    }

    /// No booking will start before `t` from now on: forgets the past.
    #[inline]
    pub fn advance(&mut self, t: SimTime) {
        if t.0 <= self.horizon {
            return;
        }
        self.horizon = t.0;
        self.busy.drop_until(t.0);
    }

    /// When everything booked so far has finished.
    pub fn last_end(&self) -> SimTime {
        SimTime(self.busy.last().map_or(self.horizon, |(_, end)| end))
    }

    /// Intervals held (a bound on memory; tests).
    pub fn len(&self) -> usize {
        self.busy.live().len()
    }

    pub fn is_empty(&self) -> bool {
        self.busy.live().is_empty()
    }

    pub fn reset(&mut self) {
        *self = Calendar::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_transfer_fills_a_gap_left_by_a_later_one() {
        let mut c = Calendar::default();
        assert_eq!(c.book(SimTime(100), Nanos(10)), SimTime(100));
        // Idle before 100: a transfer that fits goes there instead of after.
        assert_eq!(c.book(SimTime(0), Nanos(50)), SimTime(0));
        // Too long for the gap [50, 100): after the interval.
        assert_eq!(c.book(SimTime(40), Nanos(60)), SimTime(110));
        assert_eq!(c.book(SimTime(50), Nanos(50)), SimTime(50), "exactly fills the gap");
        assert_eq!(c.len(), 1, "touching intervals merge");
        assert_eq!(c.last_end(), SimTime(170));
        c.advance(SimTime(500));
        assert!(c.is_empty());
        assert_eq!(c.book(SimTime(0), Nanos(5)), SimTime(500), "nothing starts before the horizon");
    }

    proptest! {
        /// Against a plain model (a bitmap of busy nanoseconds): every
        /// booking starts at the earliest idle gap, and none overlap.
        #[test]
        /// Advancing the horizon now and then (it forgets the past) changes
        /// nothing but where bookings may start.
        fn bookings_take_the_earliest_gap(reqs in prop::collection::vec((0u64..400, 1u64..30, 0u8..8), 1..80)) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 3000];
            let mut horizon = 0;
            for (earliest, len, advance) in reqs {
                if advance == 0 {
                    horizon = horizon.max(earliest);
                    c.advance(SimTime(earliest));
                }
                let from = earliest.max(horizon) as usize;
                let start = c.book(SimTime(earliest), Nanos(len)).0 as usize;
                let expected = (from..).find(|&s| busy[s..s + len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(start, expected);
                busy[start..start + len as usize].iter_mut().for_each(|b| *b = true);
            }
        }

        /// `fits` against the same model: idle over the whole span, or the
        /// end of the first busy stretch in it.
        #[test]
        fn fits_finds_the_first_busy_interval(
            reqs in prop::collection::vec((0u64..400, 1u64..30), 1..40),
            probes in prop::collection::vec((0u64..500, 1u64..60), 1..20),
        ) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 2000];
            for (earliest, len) in reqs {
                let start = c.book(SimTime(earliest), Nanos(len)).0 as usize;
                busy[start..start + len as usize].iter_mut().for_each(|b| *b = true);
            }
            for (from, len) in probes {
                let (from, to) = (from as usize, (from + len) as usize);
                let expected = match (from..to).find(|&t| busy[t]) {
                    None => Ok(()),
                    Some(t) => Err(SimTime((t..).find(|&e| !busy[e]).unwrap() as u64)),
                };
                prop_assert_eq!(c.fits(SimTime(from as u64), SimTime(to as u64)), expected);
            }
        }
    }
}
