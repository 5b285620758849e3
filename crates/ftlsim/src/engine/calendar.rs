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
//!
//! Most calendars hold about ten intervals (the page FTL's benchmark), and a
//! flat vector serves them fastest. Behind blocking GC or merges a calendar
//! holds over a thousand and bookings land hundreds from the back (`mu` on
//! `bench/mu.sh`: 1,300 and 300 on average; COFTL's merges alike), where
//! moving the intervals behind each booking took half the run: such a
//! calendar keeps its intervals in chunks instead, and goes back to a flat
//! vector once it is short again. Either holds the same intervals and
//! answers alike.
//!
//! Gaps shorter than any booking (a unit's shortest operation, a page's
//! transfer on a bus) can never be filled, so merging them into their
//! neighbours would answer every search alike with fewer intervals. It
//! would not shorten these calendars: counted on `bench/mu.sh`'s drive and
//! the page FTL's benchmark, at most 5% of gaps were that short; the long
//! calendars are long with usable gaps (a bus idles between transfers that
//! its planes' operations, booked far ahead, place apart).

use crate::units::{Nanos, SimTime};
use serde::{Deserialize, Serialize};
use std::cell::Cell;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Calendar {
    /// Busy intervals `[start, end)`, sorted, disjoint and not touching
    /// (touching intervals are merged).
    busy: Intervals,
    horizon: u64,
    /// The last interval's end (0 with none): most bookings land after it,
    /// and this settles them without looking at the intervals.
    tail: u64,
    /// Total time booked (utilization).
    pub busy_ns: u64,
}

/// Live intervals past which a calendar moves them into chunks, and below
/// which it moves them back (apart, so a calendar near one length does not
/// switch back and forth). Small in tests, so the property tests switch
/// often.
const CHUNKED_ABOVE: usize = if cfg!(test) { 40 } else { 256 };
const FLAT_BELOW: usize = if cfg!(test) { 12 } else { 64 };

#[derive(Clone, Debug)]
enum Intervals {
    Flat(Flat),
    // Boxed: most calendars are flat and stay a few words long.
    Chunked(Box<Chunked>),
}

impl Default for Intervals {
    fn default() -> Self {
        Intervals::Flat(Flat::default())
    }
}

impl Intervals {
    #[inline]
    fn last_end(&self) -> Option<u64> {
        match self {
            Intervals::Flat(f) => f.last().map(|(_, end)| end),
            Intervals::Chunked(c) => c.last_end(),
        }
    }

    /// The start of the first idle gap of `len` from `t` on (`t` before the
    /// last interval's end).
    #[inline]
    fn gap(&self, t: u64, len: u64) -> u64 {
        match self {
            Intervals::Flat(f) => f.gap(t, len),
            Intervals::Chunked(c) => c.gap(t, len),
        }
    }

    /// As [`gap`](Self::gap), with the start of the interval that ends the
    /// gap found (`u64::MAX`: none does).
    #[inline]
    fn gap_and_end(&self, t: u64, len: u64) -> (u64, u64) {
        match self {
            Intervals::Flat(f) => f.gap_and_end(t, len),
            Intervals::Chunked(c) => {
                let start = c.gap(t, len);
                // Remembered by the search: no second one.
                (start, c.get(c.first_ending_after(start)).map_or(u64::MAX, |(next, _)| next))
            }
        }
    }

    /// [`gap_and_end`](Self::gap_and_end), a flat calendar's search
    /// starting from `hint` (see [`Flat::first_ending_after_from`]), which
    /// is left at the interval that ends the gap found.
    #[inline(always)]
    fn gap_and_end_hinted(&self, hint: &Cell<usize>, t: u64, len: u64) -> (u64, u64) {
        match self {
            Intervals::Flat(f) => {
                let (start, end, at) = f.gap_after(f.first_ending_after_from(hint.get(), t), t, len);
                hint.set(at);
                (start, end)
            }
            Intervals::Chunked(_) => self.gap_and_end(t, len),
        }
    }

    /// Books `[t, end)`, idle and starting before the last interval ends;
    /// a flat calendar's place found from `hint` (see
    /// [`Flat::first_ending_after_from`]; `usize::MAX`: none), which is
    /// left at the interval booked.
    #[inline(always)]
    fn insert_before_last_hinted(&mut self, hint: &Cell<usize>, t: u64, end: u64) {
        match self {
            Intervals::Flat(f) => {
                let (added, at) = f.insert_at(f.first_ending_after_from(hint.get(), t), t, end);
                hint.set(at);
                if added && f.len() > CHUNKED_ABOVE {
                    *self = f.chunked();
                }
            }
            Intervals::Chunked(c) => c.insert_before_last(t, end),
        }
    }

    /// Whether a flat calendar's `[t, end)`, starting before its last
    /// interval ends, is idle, looked up from `hint` (see
    /// [`Flat::first_ending_after_from`]), which is left at the first
    /// interval ending after `t`. A chunked calendar answers `false`: its
    /// caller searches.
    #[inline(always)]
    fn idle_hinted(&self, hint: &Cell<usize>, t: u64, end: u64) -> bool {
        let Intervals::Flat(f) = self else { return false };
        let i = f.first_ending_after_from(hint.get(), t);
        hint.set(i);
        f.all.get(i).is_none_or(|&(start, _)| start >= end)
    }

    /// The first interval ending after `t`.
    #[inline]
    fn first_ending_after(&self, t: u64) -> Option<(u64, u64)> {
        match self {
            Intervals::Flat(f) => f.all.get(f.first_ending_after(t)).copied(),
            Intervals::Chunked(c) => c.get(c.first_ending_after(t)),
        }
    }

    /// Books `[t, end)` after every interval (touching the last when `t`
    /// is its end).
    #[inline(always)]
    fn append(&mut self, t: u64, end: u64) {
        match self {
            Intervals::Flat(f) => {
                if f.append(t, end) && f.len() > CHUNKED_ABOVE {
                    *self = f.chunked();
                }
            }
            Intervals::Chunked(c) => c.append(t, end),
        }
    }

    /// Drops the intervals ending at or before `t`.
    #[inline]
    fn drop_until(&mut self, t: u64) {
        match self {
            Intervals::Flat(f) => f.drop_until(t),
            Intervals::Chunked(_) => self.drop_chunked_until(t),
        }
    }

    /// [`drop_until`](Self::drop_until) on chunks. Out of line, as is
    /// every path of [`Calendar::advance_to`] but a flat calendar's: inlined
    /// there, they made every call save and restore six registers.
    #[inline(never)]
    fn drop_chunked_until(&mut self, t: u64) {
        let Intervals::Chunked(c) = self else { unreachable!("a chunked calendar") };
        c.drop_until(t);
        if c.len < FLAT_BELOW {
            *self = Intervals::Flat(Flat { all: c.to_vec(), ..Flat::default() });
        }
    }

    /// Frees `[t, end)`, booked (inside one interval).
    fn remove(&mut self, t: u64, end: u64) {
        match self {
            Intervals::Flat(f) => f.remove(t, end),
            Intervals::Chunked(c) => {
                let mut all = c.to_vec();
                let i = all.partition_point(|&(_, e)| e <= t);
                remove_from(&mut all, i, t, end);
                *self = Intervals::rebuilt(all);
            }
        }
    }

    /// A chunked calendar's intervals after bookings were taken back from
    /// them (rare: bookings taken back are few, and mostly on short
    /// calendars): rebuilt, which also drops every search hint.
    fn rebuilt(all: Vec<(u64, u64)>) -> Intervals {
        if all.len() < FLAT_BELOW {
            Intervals::Flat(Flat { all, ..Flat::default() })
        } else {
            Intervals::Chunked(Box::new(Chunked::from_sorted(&all)))
        }
    }

    /// Drops every interval, keeping a flat vector's allocation.
    fn clear(&mut self) {
        match self {
            Intervals::Flat(f) => {
                f.all.clear();
                f.head = 0;
                f.memo.set(None);
            }
            Intervals::Chunked(_) => self.unchunk(),
        }
    }

    /// An empty flat vector for chunks (out of line: see
    /// [`drop_chunked_until`](Self::drop_chunked_until)).
    #[inline(never)]
    fn unchunk(&mut self) {
        *self = Intervals::default();
    }

    fn len(&self) -> usize {
        match self {
            Intervals::Flat(f) => f.len(),
            Intervals::Chunked(c) => c.len,
        }
    }

    fn to_vec(&self) -> Vec<(u64, u64)> {
        match self {
            Intervals::Flat(f) => f.live().to_vec(),
            Intervals::Chunked(c) => c.to_vec(),
        }
    }
}

/// Only the live intervals are saved (the sequence a `VecDeque` of them was
/// saved as), whichever way they are held.
impl Serialize for Intervals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_vec().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Intervals {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let all = Vec::<(u64, u64)>::deserialize(d)?;
        Ok(if all.len() > CHUNKED_ABOVE {
            Intervals::Chunked(Box::new(Chunked::from_sorted(&all)))
        } else {
            Intervals::Flat(Flat { all, ..Flat::default() })
        })
    }
}

/// The intervals in one vector whose first `head` entries are past
/// (dropped by [`Calendar::advance`] without moving the rest), so every
/// lookup is a plain slice index.
#[derive(Clone, Debug, Default)]
struct Flat {
    all: Vec<(u64, u64)>,
    head: usize,
    /// The last gap found, until the intervals change: its start and the
    /// index of the interval after it, which the booking's `fits` and
    /// insertion at that start look up again (a unit behind a GC copy run
    /// holds its later bookings, so each copy's read searches among them).
    memo: Cell<Option<(u64, usize)>>,
    /// The intervals a run of periodic bookings goes among, moved aside
    /// while they merge (kept to reuse the allocation).
    spare: Vec<(u64, u64)>,
}

impl Flat {
    #[inline]
    fn live(&self) -> &[(u64, u64)] {
        &self.all[self.head..]
    }

    /// The same intervals in chunks (a calendar grown past
    /// [`CHUNKED_ABOVE`]).
    #[cold]
    fn chunked(&self) -> Intervals {
        Intervals::Chunked(Box::new(Chunked::from_sorted(self.live())))
    }

    #[inline]
    fn len(&self) -> usize {
        self.all.len() - self.head
    }

    #[inline]
    fn last(&self) -> Option<(u64, u64)> {
        if self.head < self.all.len() { self.all.last().copied() } else { None }
    }

    /// The index (into `all`) of the first interval ending after `t`.
    /// Bookings mostly land near the end (a new one is rarely more than a
    /// few from the back), so the last few are walked back over, unless
    /// the one before them ends after `t` already: then the rest are
    /// bisected (behind COFTL's paced merges a bus's bookings land all
    /// over its few hundred intervals, and walking the last few first
    /// was wasted).
    #[inline]
    fn first_ending_after(&self, t: u64) -> usize {
        const NEAR_BACK: usize = 8;
        match self.memo.get() {
            Some((m, i)) if m == t => return i,
            _ => {}
        }
        let near = self.all.len().saturating_sub(NEAR_BACK).max(self.head);
        if near > self.head && self.all[near].1 > t {
            return self.bisect(near, t);
        }
        // The walk stops past `near` (which ends by `t`), or at the head.
        let mut i = self.all.len();
        while i > near && self.all[i - 1].1 > t {
            i -= 1;
        }
        i
    }

    /// The first interval ending after `t`, of those before `near` (or
    /// `near`); out of line, so the common case above stays small enough
    /// to inline.
    #[inline(never)]
    fn bisect(&self, near: usize, t: u64) -> usize {
        self.head + self.all[self.head..near].partition_point(|&(_, end)| end <= t)
    }

    #[inline]
    fn gap(&self, t: u64, len: u64) -> u64 {
        self.gap_and_end(t, len).0
    }

    /// [`first_ending_after`](Self::first_ending_after), walking on from
    /// `hint` where every interval before it ends by `t`: a run of bookings
    /// at growing times (a GC copy run's transfers on its bus) passes the
    /// hint from each to the next, a step or two apart, rather than search
    /// from the back each time. Any other hint (one past the end, or one
    /// an interval before it ends after `t`) falls back to the search, so
    /// no hint gives a wrong answer.
    #[inline(always)]
    fn first_ending_after_from(&self, hint: usize, t: u64) -> usize {
        let mut i = hint.max(self.head);
        if i > self.all.len() || (i > self.head && self.all[i - 1].1 > t) {
            return self.first_ending_after(t);
        }
        while i < self.all.len() && self.all[i].1 <= t {
            i += 1;
        }
        i
    }

    #[inline]
    fn gap_and_end(&self, t: u64, len: u64) -> (u64, u64) {
        let (start, end, _) = self.gap_after(self.first_ending_after(t), t, len);
        (start, end)
    }

    /// [`gap_and_end`](Self::gap_and_end) from `from`, the first interval
    /// ending after `t`; with the index of the interval ending the gap
    /// (the first to end after its start).
    #[inline(always)]
    fn gap_after(&self, from: usize, mut t: u64, len: u64) -> (u64, u64, usize) {
        for (i, &(start, end)) in self.all[from..].iter().enumerate() {
            if t + len <= start {
                // The interval at `from + i` is the first to end after `t`.
                self.memo.set(Some((t, from + i)));
                return (t, start, from + i);
            }
            t = t.max(end);
        }
        (t, u64::MAX, self.all.len())
    }

    /// Appends `[t, end)`; whether that added an interval (rather than
    /// extending the last).
    #[inline(always)]
    fn append(&mut self, t: u64, end: u64) -> bool {
        // The memo stays true: it names an interval after a gap, which an
        // interval added at the end, or the last one lengthened, leaves the
        // first to end after the gap's start.
        match self.last() {
            Some((_, last)) if last == t => {
                self.all.last_mut().expect("a last interval").1 = end;
                false
            }
            _ => {
                self.all.push((t, end));
                true
            }
        }
    }

    /// Books `[t, end)` before interval `i`, the first ending after `t`,
    /// merging it with those it touches; whether that added an interval,
    /// and the index of the one holding `[t, end)` now.
    #[inline(always)]
    fn insert_at(&mut self, i: usize, t: u64, end: u64) -> (bool, usize) {
        self.memo.set(None);
        let head = self.head;
        let all = &mut self.all;
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
            (false, false) => {
                all.insert(i, (t, end));
                return (true, i);
            }
        }
        (false, if joins_prev { i - 1 } else { i })
    }

    /// Books `[t, t + len)` for `t` = `first`, `first + period`, ... (at
    /// most `max`; `len < period`) while each is idle; how many it booked,
    /// and the index of the interval holding the last. `tail`: the last
    /// interval's end (0 with none). One pass over the intervals among
    /// them, not a search and a shift of the rest for each.
    fn book_periodic(
        &mut self,
        hint: usize,
        first: u64,
        (period, len): (u64, u64),
        max: usize,
        tail: u64,
    ) -> (usize, usize) {
        // Those starting before the tail go among the intervals, as long as
        // each is idle; from the tail on, all are.
        let n = self.all.len();
        let from = if first < tail { self.first_ending_after_from(hint, first) } else { n };
        let (mut i, mut among, mut t, mut touches) = (from, 0, first, false);
        // The first interval after the last booking among them: it and
        // those after it only move up, all at once.
        let mut after = from;
        while among < max && t < tail {
            // The last interval ends after `t`: `i` stays in bounds.
            while self.all[i].1 <= t {
                i += 1;
            }
            let next = self.all[i].0;
            if next < t + len {
                break;
            }
            touches |= next == t + len || (i > self.head && self.all[i - 1].1 == t);
            among += 1;
            after = i;
            t += period;
        }
        let booked = if among < max && t < tail { among } else { max };
        if booked == 0 {
            return (0, 0);
        }
        self.memo.set(None);
        let at = |k: usize| first + k as u64 * period;
        let mut held = 0;
        if touches {
            held = self.merge_touching(from, among, at, len);
        } else if among > 0 {
            // Merged from the back, each interval moved once: those after
            // the last booking in one block move.
            self.all.resize(n + among, (0, 0));
            let all = &mut self.all[..];
            all.copy_within(after..n, after + among);
            let (mut src, mut dst) = (after, after + among);
            for k in (0..among).rev() {
                let s = at(k);
                while src > from && all[src - 1].0 > s {
                    (src, dst) = (src - 1, dst - 1);
                    all[dst] = all[src];
                }
                dst -= 1;
                all[dst] = (s, s + len);
                if k == among - 1 {
                    held = dst;
                }
            }
        }
        if booked > among {
            // After every interval (the first may touch the last).
            self.append(at(among), at(among) + len);
            self.all.extend((among + 1..booked).map(|k| (at(k), at(k) + len)));
            held = self.all.len() - 1;
        }
        (booked, held)
    }

    /// [`book_periodic`](Self::book_periodic)'s first `among` bookings,
    /// `[at(k), at(k) + len)`, where some touch an interval (and merge with
    /// it): the intervals from `from` on moved aside and put back among
    /// them. The index of the interval holding the last.
    #[cold]
    #[inline(never)]
    fn merge_touching(&mut self, from: usize, among: usize, at: impl Fn(usize) -> u64, len: u64) -> usize {
        let mut rest = std::mem::take(&mut self.spare);
        rest.clear();
        rest.extend_from_slice(&self.all[from..]);
        self.all.truncate(from);
        let (mut r, mut held) = (0, 0);
        for k in 0..among {
            let s = at(k);
            while rest[r].0 < s {
                self.append(rest[r].0, rest[r].1);
                r += 1;
            }
            self.append(s, s + len);
            held = self.all.len() - 1;
        }
        for &(s, e) in &rest[r..] {
            self.append(s, e);
        }
        self.spare = rest;
        held
    }

    #[inline]
    fn drop_until(&mut self, t: u64) {
        self.memo.set(None);
        while self.head < self.all.len() && self.all[self.head].1 <= t {
            self.head += 1;
        }
        if reclaim_due(self.head, self.all.len()) {
            self.reclaim();
        }
    }

    /// Lets the passed intervals go (out of line: see
    /// [`Intervals::drop_chunked_until`]).
    #[cold]
    #[inline(never)]
    fn reclaim(&mut self) {
        self.all.drain(..self.head);
        self.head = 0;
    }

    fn remove(&mut self, t: u64, end: u64) {
        let i = self.first_ending_after(t);
        self.memo.set(None);
        remove_from(&mut self.all, i, t, end);
    }
}

/// Frees `[t, end)` from the sorted intervals `all`, inside the `i`-th
/// (the first to end after `t`).
fn remove_from(all: &mut Vec<(u64, u64)>, i: usize, t: u64, end: u64) {
    let Some(&(s, e)) = all.get(i) else {
        debug_assert!(false, "freeing [{t}, {end}), not booked");
        return;
    };
    debug_assert!(s <= t && end <= e, "freeing [{t}, {end}) beyond the booked [{s}, {e})");
    match (s >= t, e <= end) {
        (true, true) => {
            all.remove(i);
        }
        (true, false) => all[i].0 = end,
        (false, true) => all[i].1 = t,
        (false, false) => {
            all[i].1 = t;
            all.insert(i + 1, (end, e));
        }
    }
}

/// Intervals a chunk of [`Chunked`] holds at most: 64 (1 KiB) rather than
/// 32 halves the chunks a bus calendar with thousands of intervals holds
/// ahead (a `mu` run's buses, seconds deep), so finding one misses the
/// cache less, for a longer move when a booking splits one (`bench/mu.sh`
/// 3–5% faster, the foundation and COFTL benchmarks unchanged; 128 was no
/// better). Tests keep chunks small, so a few dozen intervals split them.
const CHUNK: usize = if cfg!(test) { 32 } else { 64 };

/// Passed entries (a flat calendar's intervals, a chunked one's chunks)
/// kept in front of the live ones before they are let go; few in tests, so
/// their property tests let them go.
const PASSED_KEPT: usize = if cfg!(test) { 2 } else { 32 };

/// Whether `passed` entries in front of a vector of `held` are let go: once
/// they outweigh the live part, so the vector stays about as long as the
/// work ahead, and moving the live part is paid once per as many drops.
#[inline]
fn reclaim_due(passed: usize, held: usize) -> bool {
    passed >= PASSED_KEPT && 2 * passed >= held
}

/// The longest idle gap between consecutive intervals of `part`.
#[inline]
fn longest_gap(part: &[(u64, u64)]) -> u64 {
    part.windows(2).map(|w| w[1].0 - w[0].1).max().unwrap_or(0)
}

/// The intervals, sorted, in chunks of at most [`CHUNK`] (none empty from
/// [`first`](Self::first) on), so a booking in the middle moves at most one
/// chunk's intervals.
#[derive(Clone, Debug, Default)]
struct Chunked {
    /// The chunks from `first` on hold the intervals; those before it
    /// ended before the horizon, emptied and left in place until they are
    /// half the vector (with thousands of intervals held, moving every
    /// chunk each time one left was a third of a COFTL run's
    /// instructions). Not a deque: indexing one wraps, which was a
    /// twentieth of a `mu` run's instructions. Positions ([`At`]) count
    /// from the vector's start.
    chunks: Vec<Vec<(u64, u64)>>,
    first: usize,
    /// Each chunk's last end, to bisect the chunks without loading them
    /// (a passed chunk's: at or before the horizon).
    ends: Vec<u64>,
    /// A bound on each chunk's longest idle gap between its own intervals,
    /// so a search for a gap skips the chunks that have none long enough
    /// (behind a long backlog a calendar holds many thousands of short
    /// gaps). Bookings only shrink or split gaps, so a bound stays one
    /// without looking at the chunk again; a search that walks a whole
    /// chunk makes it exact. Kept exact at every booking, finding it again
    /// (a booking often fills a chunk's longest gap when its gaps are all
    /// alike, as paced merges leave them) was a tenth of a COFTL run's
    /// instructions, while searches rarely walk past a chunk's first
    /// interval.
    gaps: Vec<Cell<u64>>,
    len: usize,
    /// Emptied chunks, to reuse their allocations.
    spare: Vec<Vec<(u64, u64)>>,
    /// The last [`first_ending_after`](Self::first_ending_after) answer,
    /// until the intervals change: a booking asks it for the same time up to
    /// three times (finding a gap, checking it, inserting).
    memo: Cell<Option<(u64, At)>>,
    /// What earlier searches proved: no idle gap of `len` starts in
    /// `[from, to)`. Bookings only fill gaps, so a finding stays true, and a
    /// search for `len` or longer from inside the span may start at its
    /// end. Behind a saturated backlog every operation searches from long
    /// before the calendar's end; without this each one walked the whole
    /// backlog again (quadratic in the run).
    /// Cells one by one: a search reads them in place, not a copy of all.
    known: [Cell<Known>; KNOWN],
    /// The earliest `from` and the latest `to` of the findings (`(0, 0)`
    /// with none): a search from outside it skips none of them.
    known_span: Cell<(u64, u64)>,
    /// Where the last two [`first_ending_after`](Self::first_ending_after)
    /// answers in different places were, the latest first (hints, checked
    /// before use): behind merges paced a copy apart a calendar holds
    /// thousands of intervals, and one resource's next booking is mostly
    /// at the same interval or the next (a program after the one before it
    /// in its block), else in the same chunk or the next, where bisecting
    /// missed the cache at every step. Lookups on a COFTL plane's calendar
    /// alternate between two such places, hundreds of chunks apart (of the
    /// bisections one finger left, 90% answered next to the answer before
    /// the last).
    fingers: Cell<[At; 2]>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Known {
    /// 0: no finding.
    len: u64,
    from: u64,
    to: u64,
}

/// Findings a [`Chunked`] calendar remembers: about one per transfer or
/// operation length booked on it, of which a resource has a few.
const KNOWN: usize = 4;

/// Where an interval is: chunk and index in it; `(chunks, 0)` is the end.
type At = (usize, usize);

impl Chunked {
    fn from_sorted(all: &[(u64, u64)]) -> Chunked {
        let mut c = Chunked::default();
        // Half-full chunks, so the first bookings among them split none.
        for part in all.chunks(CHUNK / 2) {
            let mut ch = Chunked::new_chunk(&mut c.spare);
            ch.extend_from_slice(part);
            c.chunks.push(ch);
            c.ends.push(part[part.len() - 1].1);
            c.gaps.push(Cell::new(longest_gap(part)));
        }
        c.len = all.len();
        c
    }

    /// An empty chunk: a spare one, else one with room for the most it
    /// holds and the interval that splits it, so it does not grow (growing
    /// chunks were 2% of a `mu` run's instructions).
    fn new_chunk(spare: &mut Vec<Vec<(u64, u64)>>) -> Vec<(u64, u64)> {
        spare.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK + 1))
    }

    #[inline]
    fn last_end(&self) -> Option<u64> {
        self.ends.last().copied()
    }

    #[inline]
    fn get(&self, (c, i): At) -> Option<(u64, u64)> {
        self.chunks.get(c).map(|ch| ch[i])
    }

    /// The first interval ending after `t`: at or next to a
    /// [finger](Self::fingers), in the last chunk, else by bisecting the
    /// chunks' ends.
    #[inline(always)]
    fn first_ending_after(&self, t: u64) -> At {
        match self.memo.get() {
            Some((m, at)) if m == t => at,
            _ => self.search(t),
        }
    }

    /// [`first_ending_after`](Self::first_ending_after) past its memo: out
    /// of line, so the memo's answer (over half of them) costs no call.
    #[inline(never)]
    fn search(&self, t: u64) -> At {
        let [f0, f1] = self.fingers.get();
        let at = match self.at_finger(f0, t).or_else(|| self.at_finger(f1, t)) {
            Some(at) => at,
            None => {
                let n = self.chunks.len();
                let c = match n - self.first {
                    0 => return (n, 0),
                    live if live >= 2 && self.ends[n - 2] > t => self.chunk_before_last(t, f0.0, f1.0),
                    _ => n - 1,
                };
                let i = self.chunks[c].partition_point(|&(_, end)| end <= t);
                if i == self.chunks[c].len() { (c + 1, 0) } else { (c, i) }
            }
        };
        self.memo.set(Some((t, at)));
        self.point(at);
        at
    }

    /// Moves the [fingers](Self::fingers) to an answer: the latest there,
    /// the other kept when the answer is next to the latest's chunk (the
    /// same place, moved on), else the latest becomes the other.
    #[inline]
    fn point(&self, at: At) {
        let [f0, f1] = self.fingers.get();
        let near = at.0.abs_diff(f0.0) <= 1;
        self.fingers.set([at, if near { f1 } else { f0 }]);
    }

    /// The first interval ending after `t` when it is finger `(c, i)`'s or
    /// the next in its chunk.
    #[inline]
    fn at_finger(&self, (c, i): At, t: u64) -> Option<At> {
        let ch = self.chunks.get(c)?;
        let before = match i {
            0 if c == 0 => 0,
            0 => self.ends[c - 1],
            _ => ch.get(i - 1)?.1,
        };
        if before > t {
            return None;
        }
        let &(_, end) = ch.get(i)?;
        if end > t {
            return Some((c, i));
        }
        ch.get(i + 1).is_some_and(|&(_, next)| next > t).then_some((c, i + 1))
    }

    /// The first chunk ending after `t`, which is not the last: a finger's
    /// chunk (`f0`, `f1`) or the next, else by bisection between what the
    /// fingers' chunks bound.
    #[inline]
    fn chunk_before_last(&self, t: u64, f0: usize, f1: usize) -> usize {
        let ends = &self.ends;
        // A finger on a passed chunk finds its end before `t`, and moves `lo` on.
        let (mut lo, mut hi) = (self.first, ends.len() - 2);
        for f in [f0, f1] {
            let f = f.min(ends.len() - 2);
            if ends[f] > t {
                if f == 0 || ends[f - 1] <= t {
                    return f;
                }
                hi = hi.min(f - 1);
            } else if ends[f + 1] > t {
                return f + 1;
            } else {
                lo = lo.max(f + 2);
            }
        }
        self.first_chunk_ending_after(t, lo, hi)
    }

    /// The first chunk of `lo..=hi` ending after `t` (`hi` does).
    #[inline]
    fn first_chunk_ending_after(&self, t: u64, mut lo: usize, mut hi: usize) -> usize {
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.ends[mid] <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// As [`Flat::gap`], skipping what earlier searches proved
    /// ([`known`](Self::known)) and recording what this one proves.
    #[inline]
    fn gap(&self, t: u64, len: u64) -> u64 {
        let (found, far) = self.gap_from(self.skip_known(t, len), len);
        // Only searches that walked past a chunk are recorded, so the few
        // slots hold the long spans that make a search quadratic, not the
        // short ones most searches (ending in the chunk they start in) find.
        if far {
            self.learn(t, len, found);
        }
        found
    }

    /// Where a search for `len` from `t` may start: past every finding
    /// for `len` or shorter that `t` falls in.
    #[inline(always)]
    fn skip_known(&self, t: u64, len: u64) -> u64 {
        let (from, to) = self.known_span.get();
        if t < from || t >= to {
            return t;
        }
        self.skip_known_in_span(t, len)
    }

    /// [`skip_known`](Self::skip_known) for a `t` inside the findings' span.
    #[inline(never)]
    fn skip_known_in_span(&self, mut t: u64, len: u64) -> u64 {
        loop {
            let mut to = t;
            for k in &self.known {
                let k = k.get();
                if k.len != 0 && k.len <= len && k.from <= t && t < k.to {
                    to = to.max(k.to);
                }
            }
            if to == t {
                return t;
            }
            t = to;
        }
    }

    /// Records that no gap of `len` starts in `[t, found)`: extends the
    /// finding for `len` when the two meet, else replaces it (searches move
    /// on with time) or the stalest finding.
    #[inline(never)]
    fn learn(&self, t: u64, len: u64, found: u64) {
        let known = self.known.each_ref().map(Cell::get);
        let slot = match known.iter().position(|k| k.len == len) {
            Some(i) => i,
            None => (0..KNOWN).min_by_key(|&i| known[i].to).expect("KNOWN > 0"),
        };
        let k = known[slot];
        self.known[slot].set(if k.len == len && t <= k.to && k.from <= found {
            Known { len, from: k.from.min(t), to: k.to.max(found) }
        } else {
            Known { len, from: t, to: found }
        });
        let known = self.known.each_ref().map(Cell::get);
        let live = known.iter().filter(|k| k.len != 0);
        let from = live.clone().map(|k| k.from).min().unwrap_or(0);
        self.known_span.set((from, live.map(|k| k.to).max().unwrap_or(0)));
    }

    /// The first idle gap of `len` from `t` on, and whether the search
    /// went past the chunk it started in; remembers which interval follows
    /// the gap, for the booking's `fits` and `insert` at that start.
    #[inline]
    fn gap_from(&self, mut t: u64, len: u64) -> (u64, bool) {
        let (mut c, mut i) = self.first_ending_after(t);
        let first = c;
        while let Some(ch) = self.chunks.get(c) {
            // From a chunk's first interval on, the walk measures the
            // chunk's longest gap (`t` is the previous interval's end).
            let whole = i == 0;
            let mut longest = 0;
            while let Some(&(start, end)) = ch.get(i) {
                if t + len <= start {
                    // The interval at (c, i) is the first to end after `t`.
                    self.memo.set(Some((t, (c, i))));
                    self.point((c, i));
                    return (t, c > first);
                }
                if i == 0 && self.gaps[c].get() < len {
                    // No gap inside the chunk is long enough: past its end.
                    t = t.max(self.ends[c]);
                    break;
                }
                if whole && i > 0 {
                    longest = longest.max(start - t);
                }
                t = t.max(end);
                i += 1;
            }
            if whole && i == ch.len() {
                self.gaps[c].set(longest);
            }
            (c, i) = (c + 1, 0);
        }
        self.memo.set(Some((t, (c, 0))));
        (t, c > first)
    }

    /// Appends `[t, end)` after every interval, extending the last when it
    /// ends at `t`.
    #[inline]
    fn append(&mut self, t: u64, end: u64) {
        self.memo.set(None);
        if self.last_end() == Some(t) {
            let ch = self.chunks.last_mut().expect("a last interval");
            ch.last_mut().expect("chunks are not empty").1 = end;
            *self.ends.last_mut().expect("an end per chunk") = end;
            return;
        }
        self.len += 1;
        match self.chunks.last_mut() {
            Some(ch) if ch.len() < CHUNK => {
                // The last end from `ends`, not the chunk: a long calendar's
                // last interval is seldom in cache (a load that missed was a
                // quarter of appending).
                let last = self.ends.last_mut().expect("an end per chunk");
                let gap = t - *last;
                *last = end;
                ch.push((t, end));
                let g = self.gaps.last().expect("a gap per chunk");
                g.set(g.get().max(gap));
            }
            _ => {
                let mut ch = Chunked::new_chunk(&mut self.spare);
                ch.push((t, end));
                self.chunks.push(ch);
                self.ends.push(end);
                self.gaps.push(Cell::new(0));
            }
        }
    }

    /// As [`Flat::insert_at`] where `t` falls. A booking only fills a gap, so a
    /// chunk's [bound](Self::gaps) on its longest gap stays one, but when
    /// the chunk gains a first interval, and with it a gap.
    fn insert_before_last(&mut self, t: u64, end: u64) {
        let at = self.first_ending_after(t);
        self.memo.set(None);
        let (c, i) = at;
        let next = self.chunks[c][i];
        debug_assert!(next.0 >= end, "booking over a busy interval");
        if i == 0 {
            // Between chunks: the gap filled is in neither.
            let joins_prev = c > self.first && self.ends[c - 1] == t;
            match (joins_prev, next.0 == end) {
                (true, true) => {
                    self.set_last_end(c - 1, next.1);
                    self.remove_first(c);
                }
                (true, false) => self.set_last_end(c - 1, end),
                (false, true) => self.chunks[c][0].0 = t,
                (false, false) => {
                    let g = &self.gaps[c];
                    g.set(g.get().max(next.0 - end));
                    self.insert(at, (t, end));
                }
            }
            return;
        }
        let prev = self.chunks[c][i - 1];
        let ch = &mut self.chunks[c];
        match (prev.1 == t, next.0 == end) {
            (true, true) => {
                ch[i - 1].1 = next.1;
                ch.remove(i);
                self.len -= 1;
                self.ends[c] = ch[ch.len() - 1].1;
            }
            (true, false) => ch[i - 1].1 = end,
            (false, true) => ch[i].0 = t,
            (false, false) => self.insert(at, (t, end)),
        }
    }

    /// Sets chunk `c`'s last interval's end (a booking joined it).
    #[inline]
    fn set_last_end(&mut self, c: usize, end: u64) {
        let ch = &mut self.chunks[c];
        let last = ch.len() - 1;
        ch[last].1 = end;
        self.ends[c] = end;
    }

    /// Inserts an interval before the one at `at` (touching neither
    /// neighbour); the caller keeps chunk `c`'s gap bound, which bounds
    /// both halves when the chunk splits.
    fn insert(&mut self, (c, i): At, iv: (u64, u64)) {
        self.len += 1;
        if c > self.first && 2 * i < self.chunks[c].len() && self.chunks[c - 1].len() < CHUNK {
            self.insert_near_front(c, i, iv);
            return;
        }
        let ch = &mut self.chunks[c];
        ch.insert(i, iv);
        if ch.len() > CHUNK {
            let mut right = Chunked::new_chunk(&mut self.spare);
            right.extend(ch.drain(CHUNK / 2..));
            self.ends.insert(c, ch[CHUNK / 2 - 1].1);
            self.gaps.insert(c, self.gaps[c].clone());
            self.chunks.insert(c + 1, right);
        }
    }

    /// As [`insert`](Self::insert), into the front half of chunk `c`
    /// when the chunk before has room: the intervals before the new one
    /// move back a place, the first onto that chunk's end, instead of the
    /// more after it moving on (a bus calendar's bookings split chunks
    /// anywhere; moving the intervals was a twentieth of a `mu` run).
    /// Chunk `c`'s gaps are pieces of its old ones, so its bound holds;
    /// the gap the chunk before gains is bounded there.
    fn insert_near_front(&mut self, c: usize, i: usize, iv: (u64, u64)) {
        let moved = if i == 0 { iv } else { self.chunks[c][0] };
        let g = &self.gaps[c - 1];
        g.set(g.get().max(moved.0 - self.ends[c - 1]));
        self.chunks[c - 1].push(moved);
        self.ends[c - 1] = moved.1;
        if i > 0 {
            let ch = &mut self.chunks[c];
            ch.copy_within(1..i, 0);
            ch[i - 1] = iv;
        }
    }

    /// Removes chunk `c`'s first interval (its gap to the next goes too;
    /// the chunk's gap bound stays one).
    fn remove_first(&mut self, c: usize) {
        self.len -= 1;
        let ch = &mut self.chunks[c];
        ch.remove(0);
        if ch.is_empty() {
            let ch = self.chunks.remove(c);
            self.ends.remove(c);
            self.gaps.remove(c);
            self.spare.push(ch);
        }
    }

    #[inline]
    fn drop_until(&mut self, t: u64) {
        self.memo.set(None);
        while let Some(first) = self.chunks.get_mut(self.first) {
            // From the front, not by bisection: the horizon mostly passes a
            // few intervals, on the chunk's first lines, and each interval
            // is passed once (a bisection's steps across the chunk missed
            // the cache: a third of advancing in a `mu` run).
            let k = first.iter().position(|&(_, end)| end > t).unwrap_or(first.len());
            if k == 0 {
                return;
            }
            self.len -= k;
            if k < first.len() {
                // Gaps go with them: the chunk's gap bound stays one.
                first.drain(..k);
                return;
            }
            let mut ch = std::mem::take(first);
            ch.clear();
            self.spare.push(ch);
            self.first += 1;
            if reclaim_due(self.first, self.chunks.len()) {
                let passed = self.first;
                self.chunks.drain(..passed);
                self.ends.drain(..passed);
                self.gaps.drain(..passed);
                self.first = 0;
                let fingers = self.fingers.get().map(|(c, i)| (c.saturating_sub(passed), i));
                self.fingers.set(fingers);
            }
        }
    }

    fn to_vec(&self) -> Vec<(u64, u64)> {
        self.chunks[self.first..].iter().flatten().copied().collect()
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

    // The public methods are a few instructions in the common case (after
    // everything booked) and call out for the rest: inlined whole, the
    // engine's booking code grew past what the compiler would inline.

    /// Where [`book`](Self::book) would put `len`, booking nothing.
    #[inline(always)]
    pub fn find(&self, earliest: SimTime, len: Nanos) -> SimTime {
        let t = earliest.0.max(self.horizon);
        // The common case: after everything already booked.
        if t >= self.tail {
            return SimTime(t);
        }
        self.find_gap(t, len.0)
    }

    #[inline(never)]
    fn find_gap(&self, t: u64, len: u64) -> SimTime {
        SimTime(self.busy.gap(t, len))
    }

    /// As [`find`](Self::find), with when the idle gap found ends (the
    /// next booking's start; `None`: nothing is booked after it), so a
    /// caller with a second operation to place right after the first knows
    /// without a second search whether it fits there too.
    #[inline(always)]
    pub fn find_with_room(&self, earliest: SimTime, len: Nanos) -> (SimTime, Option<SimTime>) {
        let t = earliest.0.max(self.horizon);
        if t >= self.tail {
            return (SimTime(t), None);
        }
        self.find_gap_and_end(t, len.0)
    }

    /// [`find_with_room`](Self::find_with_room) for one of a run of
    /// bookings at growing times, `hint` passed from each of the run's
    /// searches and bookings on this calendar to the next (start it at
    /// `usize::MAX`; a hint that does not hold only costs the search it
    /// would have saved: `Flat::first_ending_after_from`).
    #[inline(always)]
    pub fn find_with_room_hinted(
        &self,
        hint: &Cell<usize>,
        earliest: SimTime,
        len: Nanos,
    ) -> (SimTime, Option<SimTime>) {
        let t = earliest.0.max(self.horizon);
        if t >= self.tail {
            return (SimTime(t), None);
        }
        let (start, end) = self.busy.gap_and_end_hinted(hint, t, len.0);
        (SimTime(start), (end != u64::MAX).then_some(SimTime(end)))
    }

    #[inline(never)]
    fn find_gap_and_end(&self, t: u64, len: u64) -> (SimTime, Option<SimTime>) {
        let (start, end) = self.busy.gap_and_end(t, len);
        (SimTime(start), (end != u64::MAX).then_some(SimTime(end)))
    }

    /// Whether `[from, to)` is idle; if not, the end of the first busy
    /// interval in it.
    #[inline(always)]
    pub fn fits(&self, from: SimTime, to: SimTime) -> Result<(), SimTime> {
        if from.0 >= self.tail {
            return Ok(());
        }
        self.fits_among(from, to)
    }

    #[inline(never)]
    fn fits_among(&self, from: SimTime, to: SimTime) -> Result<(), SimTime> {
        match self.busy.first_ending_after(from.0) {
            Some((start, end)) if start < to.0 => Err(SimTime(end)),
            _ => Ok(()),
        }
    }

    /// Whether a booking at `t` starts there: nothing booked ends after
    /// it, and it is not before the horizon ([`find`](Self::find) returns
    /// `t` for any length).
    #[inline(always)]
    pub fn free_from(&self, t: SimTime) -> bool {
        t.0 >= self.horizon && t.0 >= self.tail
    }

    /// Books `[start, start + len)` if it is idle and not before the
    /// horizon, as [`find_with_room_hinted`](Self::find_with_room_hinted)
    /// from `start` and [`insert_hinted`](Self::insert_hinted) there would;
    /// whether it did. (A chunked calendar books nothing here: its caller
    /// searches.)
    #[inline(always)]
    pub fn book_if_idle(&mut self, hint: &Cell<usize>, start: SimTime, len: Nanos) -> bool {
        let t = start.0;
        if t < self.horizon || (t < self.tail && !self.busy.idle_hinted(hint, t, t + len.0)) {
            return false;
        }
        self.insert_hinted(hint, start, len);
        true
    }

    /// Books `[t, t + len)` for `t` = `first`, `first + period`, ... (at
    /// most `max`) while each is idle and not before the horizon, as that
    /// many [`book_if_idle`](Self::book_if_idle)s in turn would (`len <
    /// period`: each ends before the next starts, so booking it leaves the
    /// next as idle as it was); how many it booked. `hint` as
    /// `book_if_idle`'s. (A chunked calendar books none here: its caller
    /// books each by search.) A GC copy run going straight on books its
    /// transfers so.
    pub fn book_periodic_if_idle(
        &mut self,
        hint: &Cell<usize>,
        first: SimTime,
        period: Nanos,
        len: Nanos,
        max: usize,
    ) -> usize {
        debug_assert!(len < period, "periodic bookings apart");
        if first.0 < self.horizon {
            return 0;
        }
        let Intervals::Flat(f) = &mut self.busy else { return 0 };
        let (booked, held) = f.book_periodic(hint.get(), first.0, (period.0, len.0), max, self.tail);
        if booked > 0 {
            hint.set(held);
            self.busy_ns += booked as u64 * len.0;
            self.tail = self.tail.max(first.0 + (booked as u64 - 1) * period.0 + len.0);
            if f.len() > CHUNKED_ABOVE {
                self.busy = f.chunked();
            }
        }
        debug_assert_eq!(self.tail, self.busy.last_end().unwrap_or(0), "the tail mirrors the last interval");
        booked
    }

    /// Books `[start, start + len)`, which must be idle ([`find`](Self::find),
    /// [`fits`](Self::fits)).
    #[inline(always)]
    pub fn insert(&mut self, start: SimTime, len: Nanos) {
        let (t, end) = (start.0, start.0 + len.0);
        self.busy_ns += len.0;
        if t < self.tail {
            self.insert_among(t, end);
        } else {
            self.busy.append(t, end);
            self.tail = end;
        }
        debug_assert_eq!(self.tail, self.busy.last_end().unwrap_or(0), "the tail mirrors the last interval");
    }

    #[inline(never)]
    fn insert_among(&mut self, t: u64, end: u64) {
        self.busy.insert_before_last_hinted(&Cell::new(usize::MAX), t, end);
    }

    /// [`insert`](Self::insert) in a run of bookings, as
    /// [`find_with_room_hinted`](Self::find_with_room_hinted) searches.
    /// (Its body and `insert`'s shared through a closure cost a GC copy
    /// run ~117 instructions a host request on the foundation benchmark.)
    #[inline(always)]
    pub fn insert_hinted(&mut self, hint: &Cell<usize>, start: SimTime, len: Nanos) {
        let (t, end) = (start.0, start.0 + len.0);
        self.busy_ns += len.0;
        if t < self.tail {
            self.busy.insert_before_last_hinted(hint, t, end);
        } else {
            self.busy.append(t, end);
            self.tail = end;
        }
        debug_assert_eq!(self.tail, self.busy.last_end().unwrap_or(0), "the tail mirrors the last interval");
    }

    /// Frees `[start, start + len)`, which was booked and ends after the
    /// horizon: a booking taken back (a GC copy a host read goes before,
    /// booked again after it: `engine::device::preempt`).
    pub fn remove(&mut self, start: SimTime, len: Nanos) {
        if len.0 == 0 {
            return;
        }
        self.busy.remove(start.0, start.0 + len.0);
        self.busy_ns -= len.0;
        self.tail = self.busy.last_end().unwrap_or(0);
    }

    /// Units-only timing's booking (fast-forwarding, which books nothing
    /// into gaps): `len` from the later of `earliest`, `horizon` and
    /// everything booked, all of which is forgotten; returns the start.
    /// The same as [`advance`](Self::advance) to `horizon`, then to the
    /// start, and [`insert`](Self::insert), in a few instructions: it is
    /// every operation of a fast-forwarded preconditioning.
    #[inline]
    pub fn book_alone(&mut self, horizon: SimTime, earliest: SimTime, len: Nanos) -> SimTime {
        let start = earliest.0.max(horizon.0).max(self.horizon).max(self.tail);
        self.busy.clear();
        self.busy.append(start, start + len.0);
        (self.horizon, self.tail) = (start, start + len.0);
        self.busy_ns += len.0;
        SimTime(start)
    }

    /// When a [`book_alone`](Self::book_alone) could start at the earliest
    /// (the horizon aside): after everything booked.
    #[inline]
    pub fn free_alone(&self) -> SimTime {
        SimTime(self.horizon.max(self.tail))
    }

    /// The state a run of [`book_alone`](Self::book_alone)s leaves, booked
    /// at once: its last booking `[start, start + len)` the only interval,
    /// `busy` the run's total time. The caller computed the run's starts as
    /// `book_alone` would, from [`free_alone`](Self::free_alone) on.
    pub fn booked_alone(&mut self, start: SimTime, len: Nanos, busy: Nanos) {
        debug_assert!(start >= self.free_alone(), "a run books after everything");
        self.busy.clear();
        self.busy.append(start.0, start.0 + len.0);
        (self.horizon, self.tail) = (start.0, start.0 + len.0);
        self.busy_ns += busy.0;
    }

    /// No booking will start before `t` from now on: forgets the past.
    #[inline(always)]
    pub fn advance(&mut self, t: SimTime) {
        if t.0 <= self.horizon {
            return;
        }
        self.advance_to(t);
    }

    #[inline(never)]
    fn advance_to(&mut self, t: SimTime) {
        self.horizon = t.0;
        if self.tail <= t.0 {
            // All past: nothing to look at.
            self.busy.clear();
            self.tail = 0;
        } else {
            self.busy.drop_until(t.0);
        }
    }

    /// When everything booked ends, if the last booking is under way at
    /// `t` (so nothing can start from `t` on until then); `None` otherwise,
    /// and on a chunked calendar.
    #[inline(always)]
    pub fn busy_through(&self, t: SimTime) -> Option<SimTime> {
        let Intervals::Flat(f) = &self.busy else { return None };
        f.last().and_then(|(start, end)| (start <= t.0 && t.0 < end).then_some(SimTime(end)))
    }

    /// When everything booked so far has finished.
    #[inline]
    pub fn last_end(&self) -> SimTime {
        SimTime(if self.tail == 0 { self.busy.last_end().unwrap_or(self.horizon) } else { self.tail })
    }

    /// Intervals held (a bound on memory; tests).
    pub fn len(&self) -> usize {
        self.busy.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The busy intervals still ahead (tests).
    #[cfg(test)]
    pub(crate) fn intervals(&self) -> Vec<(u64, u64)> {
        self.busy.to_vec()
    }

    /// Whether the intervals are held in chunks (tests).
    #[cfg(test)]
    fn is_chunked(&self) -> bool {
        matches!(self.busy, Intervals::Chunked(_))
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

    #[test]
    fn busy_through_answers_for_the_last_booking_under_way() {
        let mut c = Calendar::default();
        c.book(SimTime(10), Nanos(10));
        c.book(SimTime(30), Nanos(10));
        assert_eq!(c.busy_through(SimTime(30)), Some(SimTime(40)));
        assert_eq!(c.busy_through(SimTime(35)), Some(SimTime(40)));
        assert_eq!(c.busy_through(SimTime(40)), None, "over by then");
        assert_eq!(c.busy_through(SimTime(25)), None, "idle until the last starts");
        assert_eq!(c.busy_through(SimTime(15)), None, "a gap follows");
    }

    #[test]
    fn a_long_calendar_moves_into_chunks_and_back() {
        let n = 2 * CHUNKED_ABOVE as u64;
        let mut c = Calendar::default();
        // Every other 10 ns busy, from the back forwards: each booking lands
        // before the last interval, as behind blocking GC.
        c.book(SimTime(20 * n), Nanos(10));
        for i in (0..n).rev() {
            assert_eq!(c.book(SimTime(20 * i), Nanos(10)), SimTime(20 * i));
        }
        assert!(c.is_chunked(), "{} intervals held flat", c.len());
        assert_eq!(c.len() as u64, n + 1);
        // The gaps are still found, in chunks.
        assert_eq!(c.book(SimTime(0), Nanos(11)), SimTime(20 * n + 10));
        assert_eq!(c.book(SimTime(5), Nanos(10)), SimTime(10), "fills a gap exactly");
        c.advance(SimTime(20 * (n - 3)));
        assert!(!c.is_chunked(), "{} intervals left in chunks", c.len());
        assert_eq!(c.len(), 4);
        assert_eq!(c.book(SimTime(0), Nanos(10)), SimTime(20 * (n - 3) + 10));
        assert_eq!(c.last_end(), SimTime(20 * n + 21));
    }

    /// A booking at the horizon, where the chunk the horizon passed ended,
    /// starts an interval of its own (the passed chunk, emptied, takes
    /// none), however many chunks have passed before it.
    #[test]
    fn a_booking_at_the_horizon_stays_apart_from_passed_chunks() {
        let n = 8 * CHUNK as u64;
        let mut c = Calendar::default();
        for i in 0..n {
            c.book(SimTime(20 * i), Nanos(10));
        }
        assert!(c.is_chunked());
        // Each interval's end in turn, so some are a chunk's last.
        for k in 0..n - 2 * FLAT_BELOW as u64 {
            let h = 20 * k + 10;
            c.advance(SimTime(h));
            assert_eq!(c.book(SimTime(h), Nanos(5)), SimTime(h));
            let mut expected = vec![(h, h + 5)];
            expected.extend((k + 1..n).map(|i| (20 * i, 20 * i + 10)));
            assert_eq!(c.intervals(), expected, "horizon {h}");
            assert!(c.is_chunked(), "{} intervals held flat", c.len());
        }
    }

    /// The bitmap model's busy nanoseconds from `horizon` on, as intervals.
    fn model_intervals(busy: &[bool], horizon: u64) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = Vec::new();
        for (t, _) in busy.iter().enumerate().skip(horizon as usize).filter(|(_, b)| **b) {
            match v.last_mut() {
                Some(last) if last.1 == t as u64 => last.1 += 1,
                _ => v.push((t as u64, t as u64 + 1)),
            }
        }
        v
    }

    /// `c`'s intervals from `horizon` on (what lies before it is past).
    fn held_after(c: &Calendar, horizon: u64) -> Vec<(u64, u64)> {
        c.intervals().into_iter().filter(|&(_, e)| e > horizon).map(|(s, e)| (s.max(horizon), e)).collect()
    }

    proptest! {
        /// `book_alone` leaves a calendar as catching up with the horizon,
        /// advancing to after everything booked and booking there would,
        /// from any state (long calendars, in chunks, included).
        #[test]
        fn booking_alone_is_booking_after_everything(
            before in prop::collection::vec((0u64..2000, 1u64..20), 0..120),
            horizon in 0u64..3000, earliest in 0u64..3000, len in 1u64..50,
        ) {
            let mut c = Calendar::default();
            for (t, l) in before {
                c.book(SimTime(t), Nanos(l));
            }
            let mut expected = c.clone();
            expected.advance(SimTime(horizon));
            let start = SimTime(earliest).max(expected.last_end());
            expected.advance(start);
            expected.insert(start, Nanos(len));
            prop_assert_eq!(c.book_alone(SimTime(horizon), SimTime(earliest), Nanos(len)), start);
            prop_assert_eq!(c.intervals(), expected.intervals());
            prop_assert_eq!((c.horizon, c.tail, c.busy_ns), (expected.horizon, expected.tail, expected.busy_ns));
        }

        /// `book_if_idle` books exactly when a search from its start finds
        /// it idle there for the whole length (and the calendar is flat),
        /// leaving the calendar as that search and a booking there would,
        /// over a run of bookings at growing times sharing one hint; a
        /// chunked calendar books nothing.
        #[test]
        fn booking_if_idle_is_searching_and_booking_there(
            before in prop::collection::vec((0u64..2000, 1u64..20), 0..80),
            horizon in 0u64..1000,
            run in prop::collection::vec((0u64..40, 1u64..30), 1..20),
        ) {
            let mut c = Calendar::default();
            for (t, l) in before {
                c.book(SimTime(t), Nanos(l));
            }
            c.advance(SimTime(horizon));
            let mut expected = c.clone();
            let (hint, mut t) = (Cell::new(usize::MAX), horizon.saturating_sub(100));
            for (step, len) in run {
                t += step;
                let idle = expected.find_with_room(SimTime(t), Nanos(len)).0 == SimTime(t);
                let searched = c.is_chunked() && t < c.tail;
                let booked = c.book_if_idle(&hint, SimTime(t), Nanos(len));
                prop_assert_eq!(booked, idle && !searched, "at {}", t);
                if booked {
                    expected.insert(SimTime(t), Nanos(len));
                    t += len;
                }
                prop_assert_eq!(c.intervals(), expected.intervals());
                prop_assert_eq!((c.tail, c.busy_ns), (expected.tail, expected.busy_ns));
            }
        }

        /// `book_periodic_if_idle` books what a search from each period's
        /// time in turn would find idle there, up to the first that finds
        /// it busy (a flat calendar; a chunked one books nothing), leaving
        /// the same intervals (merged where they touch: the times are on a
        /// grid, so bookings often touch) and a hint the next booking can
        /// use.
        #[test]
        fn periodic_bookings_are_bookings_if_idle_in_turn(
            before in prop::collection::vec((0u64..400, 1u64..5), 0..90),
            horizon in 0u64..600,
            first in 0u64..700,
            (period, len) in (2u64..40).prop_flat_map(|p| (Just(p), 1..p)),
            max in 1usize..30,
            next in 0u64..400,
        ) {
            let mut c = Calendar::default();
            for (t, l) in before {
                c.book(SimTime(5 * t), Nanos(5 * l));
            }
            c.advance(SimTime(horizon));
            let (first, period, len) = (SimTime(5 * first), Nanos(5 * period), Nanos(5 * len));
            let mut expected = c.clone();
            let chunked = c.is_chunked();
            let hint = Cell::new(usize::MAX);
            let booked = c.book_periodic_if_idle(&hint, first, period, len, max);
            // Each booked where a search from its time finds it idle (as
            // `book_if_idle` would, or a search once the calendar turns
            // chunked on the way).
            let mut expected_booked = 0;
            while !chunked && expected_booked < max {
                let t = SimTime(first.0 + expected_booked as u64 * period.0);
                if expected.find_with_room(t, len).0 != t {
                    break;
                }
                expected.insert(t, len);
                expected_booked += 1;
            }
            prop_assert_eq!(booked, expected_booked);
            prop_assert_eq!(c.intervals(), expected.intervals());
            prop_assert_eq!((c.tail, c.busy_ns), (expected.tail, expected.busy_ns));
            // The hint left serves the run's next booking.
            let t = SimTime(first.0 + booked as u64 * period.0 + 5 * next);
            prop_assert_eq!(c.book_if_idle(&hint, t, len), expected.book_if_idle(&Cell::new(usize::MAX), t, len));
            prop_assert_eq!(c.intervals(), expected.intervals());
        }

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
                // The next operation of the same resource, from this one's end.
                let end = start + len as usize;
                let next = (end..).find(|&s| busy[s..s + 10].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(c.find(SimTime(end as u64), Nanos(10)).0 as usize, next);
            }
        }

        /// Bookings taken back (short calendars and long ones in chunks)
        /// leave the calendar as if they had never been made: the same busy
        /// time, the same answers to every search, against the bitmap model.
        #[test]
        fn bookings_taken_back_are_as_never_made(
            reqs in prop::collection::vec((0u64..3000, 1u64..20, any::<bool>()), 1..200),
            horizon in 0u64..1500,
        ) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 8000];
            let mut taken = Vec::new();
            for (earliest, len, take_back) in reqs {
                let start = c.book(SimTime(earliest), Nanos(len));
                busy[start.0 as usize..(start.0 + len) as usize].iter_mut().for_each(|b| *b = true);
                if take_back {
                    taken.push((start, len));
                }
            }
            c.advance(SimTime(horizon));
            let booked_ns = c.busy_ns;
            let mut freed = 0;
            for (start, len) in taken.into_iter().rev() {
                if start.0 + len <= horizon {
                    continue; // forgotten with the past
                }
                // What lies before the horizon is past; only the rest is freed.
                let from = start.0.max(horizon);
                c.remove(SimTime(from), Nanos(start.0 + len - from));
                busy[from as usize..(start.0 + len) as usize].iter_mut().for_each(|b| *b = false);
                freed += start.0 + len - from;
            }
            prop_assert_eq!(c.busy_ns, booked_ns - freed);
            let expected = model_intervals(&busy, horizon);
            prop_assert_eq!(&held_after(&c, horizon), &expected);
            prop_assert_eq!(c.last_end().max(SimTime(horizon)), SimTime(expected.last().map_or(horizon, |&(_, e)| e)));
            for len in [1u64, 5, 17] {
                let t = horizon as usize;
                let gap = (t..).find(|&s| busy[s..s + len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(c.find(SimTime(horizon), Nanos(len)).0 as usize, gap);
            }
        }

        /// Hinted searches and bookings (a GC copy run's, passing the hint
        /// on at growing times, now and then from elsewhere, and hints
        /// spoilt at random) answer as the plain ones: against the bitmap
        /// model, on short calendars and long ones in chunks, the horizon
        /// moving now and then.
        #[test]
        fn hinted_runs_agree_with_the_model(
            reqs in prop::collection::vec((0u64..300, 1u64..12, 0u8..30, 0u16..400), 1..400),
        ) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 20_000];
            let (mut horizon, mut t) = (0, 0);
            let hint = Cell::new(usize::MAX);
            for (step, len, what, spoil) in reqs {
                match what {
                    0 => {
                        horizon = horizon.max(t / 2);
                        c.advance(SimTime(t / 2));
                    }
                    1 => t = step * 20, // a run starting elsewhere, earlier or later
                    2 => hint.set(spoil as usize),
                    _ => {}
                }
                t += step % 40;
                let from = t.max(horizon) as usize;
                let (start, room) = c.find_with_room_hinted(&hint, SimTime(t), Nanos(len));
                let expected = (from..).find(|&s| busy[s..s + len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(start.0 as usize, expected);
                prop_assert_eq!(room, (expected..busy.len()).find(|&u| busy[u]).map(|u| SimTime(u as u64)));
                if what == 3 {
                    hint.set(spoil as usize);
                }
                c.insert_hinted(&hint, start, Nanos(len));
                busy[expected..expected + len as usize].iter_mut().for_each(|b| *b = true);
                t = start.0 + len;
            }
            prop_assert_eq!(held_after(&c, horizon), model_intervals(&busy, horizon));
        }

        /// Long calendars (many chunks of intervals, some dropped as the
        /// horizon moves) against the model, asked as the engine asks: a
        /// gap (and how long it lasts), whether it fits, a probe elsewhere,
        /// the booking, then a gap from its end.
        #[test]
        fn long_calendars_agree_with_the_model(
            reqs in prop::collection::vec((0u64..6000, 1u64..12, 0u8..40, 0u64..6000, 1u64..40), 1..700),
        ) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 20_000];
            let mut horizon = 0;
            for (earliest, len, advance, probe, probe_len) in reqs {
                if advance == 0 {
                    horizon = horizon.max(earliest / 2);
                    c.advance(SimTime(earliest / 2));
                }
                let from = earliest.max(horizon) as usize;
                let (start, room) = c.find_with_room(SimTime(earliest), Nanos(len));
                prop_assert_eq!(start, c.find(SimTime(earliest), Nanos(len)));
                let expected = (from..).find(|&s| busy[s..s + len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(start.0 as usize, expected);
                // The gap found lasts until the next busy nanosecond.
                prop_assert_eq!(room, (expected..busy.len()).find(|&t| busy[t]).map(|t| SimTime(t as u64)));
                prop_assert_eq!(c.fits(start, SimTime(start.0 + len)), Ok(()));
                let (p, q) = (probe.max(horizon) as usize, (probe.max(horizon) + probe_len) as usize);
                let model = match (p..q).find(|&t| busy[t]) {
                    None => Ok(()),
                    Some(t) => Err(SimTime((t..).find(|&e| !busy[e]).unwrap() as u64)),
                };
                prop_assert_eq!(c.fits(SimTime(p as u64), SimTime(q as u64)), model);
                c.insert(start, Nanos(len));
                busy[expected..expected + len as usize].iter_mut().for_each(|b| *b = true);
                // The next operation of the same resource, from this one's end.
                let end = expected + len as usize;
                let next = (end..).find(|&s| busy[s..s + probe_len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(c.find(SimTime(end as u64), Nanos(probe_len)).0 as usize, next);
            }
            // Every busy stretch still running after the horizon, merged.
            let h = horizon as usize;
            let live = (h + 1..busy.len()).filter(|&t| busy[t] && !busy[t - 1]).count() + usize::from(busy[h]);
            prop_assert_eq!(c.len(), live);
        }

        /// Bookings from two places moving on through a long calendar,
        /// taken in turns (as COFTL's copies and a plane's other work land:
        /// the lookups the two fingers serve), against the model; long
        /// searches from far back walk whole chunks and tighten their gap
        /// bounds, which later searches then skip by.
        #[test]
        fn bookings_from_two_places_in_turn_agree_with_the_model(
            steps in prop::collection::vec((0u64..40, 1u64..20, 0u8..6), 1..400),
            gap in 12u64..40,
        ) {
            let mut c = Calendar::default();
            let mut busy = vec![false; 40_000];
            // A long paced backlog: 4 ns busy every `gap`.
            for k in 0..300u64 {
                let s = k * gap;
                c.insert(SimTime(s), Nanos(4));
                busy[s as usize..s as usize + 4].iter_mut().for_each(|b| *b = true);
            }
            let mut at = [0u64, 150 * gap];
            for (n, (step, len, far)) in steps.into_iter().enumerate() {
                let w = n % 2;
                at[w] += step;
                // Now and then a search from the start, for a long gap.
                let (earliest, len) = if far == 0 { (0, len + gap) } else { (at[w], len) };
                let start = c.book(SimTime(earliest), Nanos(len)).0 as usize;
                let expected = (earliest as usize..).find(|&s| busy[s..s + len as usize].iter().all(|b| !b)).unwrap();
                prop_assert_eq!(start, expected);
                busy[start..start + len as usize].iter_mut().for_each(|b| *b = true);
            }
            prop_assert!(c.is_chunked() || c.len() <= CHUNKED_ABOVE);
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
