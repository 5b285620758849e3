//! `page`: the classic page-mapping FTL, with TRIM as described by Kim, Kim,
//! Lee and Won, "FTL Design for TRIM Command".
//!
//! Any LPN maps to any PPN. The forward map (LPN → PPN, 4 B per logical
//! page) lives in controller RAM; the backward map (PPN → LPN) is the OOB
//! LPN array the NAND model already keeps. TRIM updates the forward map at
//! once and the backward map lazily: a physical page is valid exactly when
//! the forward map still points at it, so GC, checking that, never copies a
//! trimmed page, and the per-block valid counts GC ranks victims by are
//! decremented at trim time.
//!
//! A write goes to the plane whose array is free soonest
//! (`ftl.allocation = "dynamic"`, ties broken in stripe order; with
//! `timing.multi_plane`, a busy die's plane that can join the die's
//! multi-plane group counts as free a tPROG early) or rotates
//! over the planes in the configured stripe order (`"static"`), one active
//! block per plane shared by host writes and GC copies (with
//! `gc.frontier = "separate"`, a preemptible job's copies go to a second
//! active block of the plane, so copies made between host pages still
//! cluster data that survived GC, as blocking GC's runs of copies do). Each plane keeps a
//! reserve of free blocks for GC's copies (`gc.threshold` of its spare
//! blocks, at least `gc.min_free_blocks`). GC reclaims victims chosen by the
//! shared [`BlockPool`] policy, copying valid pages within the plane
//! (but see multi-plane GC below):
//!
//! - `gc.mode = "blocking"`: before the host opens a new block in a plane
//!   holding no more free blocks than its reserve, GC reclaims victims until
//!   the plane has one free block more, ahead of that host write.
//! - `gc.mode = "preemptible"` (default): once the host has opened a block
//!   leaving fewer than the reserve free, the plane has a GC *job*: one
//!   victim, emptied a page copy at a time. The engine runs its steps when
//!   the plane would otherwise be idle ([`Ftl::background`]); and each host
//!   page written to the plane pays for `v / (pages per block − v)` copies
//!   first (v: the victim's live pages) and, once they are made, for the
//!   erase, so the job is done before the host's block is full and a host
//!   write waits for a few copies or an erase, never a whole victim. Only if
//!   the reserve is gone all the same does a host write wait for the job to
//!   finish, and for the jobs after it only until it may take a block
//!   (for whole victims, as in blocking mode, if there is no job). With
//!   several map streams the reserve holds a block per stream for GC's
//!   copies, and the host may take those, and a job starts while the host
//!   can still open a block: each stream opens blocks of its own, sooner
//!   than the job's pace foresees (a job's copies then go to whichever
//!   open block of the plane has room).
//!   With `gc.debt = "background"` (with dynamic allocation) the order is
//!   turned round: a written (or destaged) page goes to a plane whose job
//!   is owed nothing and leaves its copies owed, which background steps
//!   then pay, each booked when the plane can start it; the controller
//!   holds destages back while every plane is owed copies
//!   ([`Ftl::destage_must_wait`]), and without a write buffer a host write
//!   then pays its plane's copies ahead. A host read then waits for at
//!   most the step in progress on its plane, not for copies booked ahead
//!   of a write. A fast-forward has no background steps and pays ahead.
//!
//! The host never takes a plane's last free block (that only happens when GC
//! could not restore the reserve): with one free block GC can always make
//! progress, since reclaiming a victim never consumes more free blocks than
//! its erase returns. Partial-page writes read the old page first
//! (read-modify-write).
//!
//! **Multi-plane GC** (`timing.multi_plane`, preemptible GC, whole-page
//! units, one map stream): a die's jobs copy into a stripe of GC blocks,
//! one per plane, a row (page offset) at a time, each row programmed as
//! one multi-plane group; a row's pages come from the victim of the die's
//! plane with the fewest free blocks, so copies may cross planes (see
//! [`PageCore::stripe_row`] for when the copies stay in their plane).
//!
//! Simplifications: no wear levelling beyond the pool's oldest-erased-first
//! free queue, GC copies go through the bus (no copy-back).
//!
//! **Mapping units smaller than the page** (`ftl.map_unit_bytes`, e.g. 4 KiB
//! units in 16 KiB pages, as drives that map 4 KiB in larger pages do): the
//! forward map holds one entry per unit, a unit address
//! `PPN × units per page + slot`; the OOB holds one LPN per unit (the
//! backward map); pool valid counts are in units. A write call's units (or a batch the write buffer
//! destages) are staged and packed, units of any LPNs, into a page that is
//! programmed whole once full; the last partial page of a call is padded
//! (`units_padded`). A partial unit is read-modify-written. A read reads the
//! whole page holding each unit (tR plus a whole-page transfer: the timing
//! model has no partial data-out, so this is the cost of the page path, an
//! upper bound), once for consecutive units of one page. GC scans a victim's
//! units, reads each source page once and packs the live units into
//! destination pages. TRIM drops the units of the whole pages it covers, as
//! with page units. With one unit a page (the default) none of this runs.
//!
//! The data path (allocation, striping, GC, partial-page writes, TRIM,
//! placed reads) is [`PageMapped`], generic over where the forward map lives
//! ([`MapTable`]): `page` keeps it whole in RAM ([`DramMap`]); `dftl` and
//! `hat` cache it and pay to reach the rest, with the same data side.
//!
//! The functions a timed host write runs through, from `write_page` down to
//! a GC run's `move_live`, are `#[inline(always)]` (each has one or two
//! callers; `alloc_host_page`, a one-line wrapper, is inlined anyway): the
//! simulator's hot code is about the size of the CPU's instruction cache,
//! and called out of line they took ~140 instructions a request more and
//! about a quarter more instruction-cache misses (valgrind's model of a
//! 32 KiB L1i, which swings by ±5 misses a request with unrelated layout
//! changes; docs/benchmarks.md, session 65).

use super::pool::{BlockPool, BlockState};
use super::recovery::{self, RecoveryReport, TrimJournal};
use super::{Ftl, FtlStats, PageChunk, Span, page_chunks, whole_pages};
use crate::config::{Allocation, Config, GcDebt, GcFrontier, GcMode, StripeUnit, ThresholdOf, UnwrittenReads};
use crate::engine::{Cause, CauseOf, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, Nanos, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};
use std::ops::Range;

mod functional;
mod units;

pub use functional::{Conditioning, unsupported as functional_unsupported};

/// Forward-map value of a logical page never written (and never trimmed).
pub(super) const NEVER: u32 = u32::MAX;
/// Forward-map value of a trimmed logical page.
pub(super) const TRIMMED: u32 = u32::MAX - 1;
const NO_BLOCK: u32 = u32::MAX;

#[inline]
pub(super) fn is_mapped(v: u32) -> bool {
    v < TRIMMED
}

/// Where a page-mapped FTL keeps its forward map, and what reaching it costs.
///
/// Entries are numbered like the OOB LPNs of the flash pages they locate:
/// `0..logical pages` for host data, and above that any pages the table
/// keeps on flash itself (DFTL's translation pages), which the core
/// allocates, garbage-collects and checks like data.
pub trait MapTable: Send + Sized + serde::Serialize + serde::de::DeserializeOwned {
    const NAME: &'static str;
    /// A write's data waits for its translation (DFTL, as HAT describes it),
    /// instead of only the bookkeeping of the old page doing so.
    const SERIAL_WRITES: bool;
    /// The table keeps pages of its own on flash (entries past the logical
    /// pages: DFTL's translation pages), whose GC copies count as mapping
    /// work. Without them every copy is GC's, known without reading the
    /// copied page's OOB.
    const TABLE_PAGES: bool;

    /// Entries, data and table pages.
    fn entries(&self) -> u32;

    /// The current value of entry `x`, at no cost (GC validity, invariants).
    fn get(&self, x: u32) -> u32;

    /// Whether flash page `ppn` holds the current copy of entry `x`; `x` may
    /// be any OOB value. Kept branch-free: GC calls it on every page.
    #[inline]
    fn is_live(&self, x: u32, ppn: u32) -> bool {
        x < self.entries() && self.get(x) == ppn
    }

    /// Whether flash unit `ppn` holds the current copy of the entry its
    /// OOB names ([`is_live`](Self::is_live)); a map keeping a bit per
    /// unit answers without the OOB.
    #[inline]
    fn unit_is_live(&self, dev: &Device, ppn: u32) -> bool {
        self.is_live(dev.array.oob_unit_raw(ppn), ppn)
    }

    /// Translates host page `lpn` at `now`, making its entry ready for
    /// [`set`](Self::set); returns the value and when it is known.
    fn lookup(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<(u32, SimTime)>;

    /// Updates a looked-up host entry (host write or TRIM).
    fn set(&mut self, lpn: Lpn, value: u32);

    /// Entries a TRIM may drop a whole group at a time, without looking
    /// each one up ([`trim_group`](Self::trim_group)); 0: none, every
    /// trimmed entry is looked up and set.
    #[inline]
    fn trim_group_size(&self) -> u32 {
        0
    }

    /// A TRIM covers group `g` (entries `g × trim_group_size ..`, host
    /// entries only) whole: every entry becomes `TRIMMED`, its data already
    /// made stale by the caller. Returns when the table has done the work
    /// that needs (DFTL: its translation page read, to learn the old pages).
    fn trim_group(&mut self, _core: &mut PageCore, _dev: &mut Device, g: u32, _now: SimTime) -> Result<SimTime> {
        Err(Error::invariant(Self::NAME, format!("map group {g} trimmed whole by a table without groups")))
    }

    /// Work the table left for later (DFTL: GC's deferred rewrites), done
    /// from `now` as a drive left idle would; returns when it ends, `None`
    /// when there was none.
    fn settle(&mut self, _core: &mut PageCore, _dev: &mut Device, _now: SimTime) -> Result<Option<SimTime>> {
        Ok(None)
    }

    /// One piece of the work the table defers to the drive's idle time
    /// (DFTL: a translation rewrite GC's batch updates queued), on
    /// `plane`'s background time from `now`; returns when it ends, `None`
    /// when none is left. The engine calls it as it calls GC steps (see
    /// [`Ftl::background`](super::Ftl::background)), so the work goes a
    /// piece a plane at a time between host operations, not all at once.
    fn background(
        &mut self,
        _core: &mut PageCore,
        _dev: &mut Device,
        _plane: PlaneId,
        _now: SimTime,
    ) -> Result<Option<SimTime>> {
        Ok(None)
    }

    /// Pieces of [`background`](Self::background) work left.
    #[inline]
    fn background_backlog(&self) -> usize {
        0
    }

    /// A host request starts: its lookups may share what an earlier lookup
    /// of the same request fetched (DFTL: a translation page read once).
    #[inline]
    fn begin_request(&mut self) {}

    /// The request's map work is issued; returns the time until which that
    /// work holds the request open (HAT: its PCM write-backs), if any.
    #[inline]
    fn end_request(&mut self) -> SimTime {
        SimTime::ZERO
    }

    /// A host FLUSH: writes every cached update back to the backing store
    /// (the cache is volatile); returns when they are durable.
    fn flush(&mut self, _core: &mut PageCore, _dev: &mut Device, now: SimTime) -> Result<SimTime> {
        Ok(now)
    }

    /// A hint that `lpn` will be looked up soon (see [`Ftl::prefetch`]).
    #[inline]
    fn prefetch(&self, _lpn: Lpn) {}

    /// A hint that `lpn`, [`prefetch`](Self::prefetch)ed a few commands
    /// ago, is about to be overwritten (see [`Ftl::prefetch_mapped`]).
    #[inline]
    fn prefetch_mapped(&self, _lpn: Lpn) {}

    /// GC copied entry `x`'s page (unit) from `from`, its current value,
    /// to `dst`.
    fn moved(&mut self, dev: &mut Device, x: u32, from: u32, dst: Ppn, now: SimTime);

    /// [`moved`](Self::moved) for each unit of `run` (a GC run), the
    /// `i`-th to unit `first + i`, whose OOB names its entry.
    fn moved_run(&mut self, dev: &mut Device, run: &[u32], first: u32, now: SimTime) {
        for (i, &from) in run.iter().enumerate() {
            let to = first + i as u32;
            self.moved(dev, dev.array.oob_unit_raw(to), from, Ppn(to), now);
        }
    }

    /// [`moved_run`](Self::moved_run) of a run that is every unit of
    /// `span` still live (the victim's units it was taken from): a map
    /// keeping live bits clears the span's at once, not a unit at a time.
    fn moved_span(&mut self, dev: &mut Device, run: &[u32], first: u32, now: SimTime, _span: Range<u32>) {
        self.moved_run(dev, run, first, now);
    }

    /// Whether [`moved`](Self::moved) only changes tables in controller
    /// RAM (no flash or PCM operation): then a background GC step may
    /// book many copies as one run a host read can go before
    /// (`engine::device::preempt`), the map's work the same as copy by
    /// copy.
    fn moves_in_ram(&self) -> bool {
        false
    }

    /// A bit per physical unit, set while an entry maps to it, where the
    /// map keeps them ([`DramMap`]) and keeps no pages of its own on flash:
    /// GC lists a victim's live units from them, a word at a time.
    /// `None`: each unit is asked [`is_live`](Self::is_live).
    fn live_bits(&self) -> Option<&[u64]> {
        None
    }

    /// GC has copied every live page of a victim and booked its erase
    /// (blocking GC's whole victim, or a preemptible job's last step).
    fn victim_done(&mut self, _plane: PlaneId) {}

    /// Data of `lpn` placed on flash as if written before the run.
    fn placed(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, ppn: Ppn, now: SimTime) -> Result<()>;

    fn stats(&self, stats: &mut FtlStats);

    fn reset_stats(&mut self);

    /// Modelled controller RAM of the table, bytes.
    fn ram_bytes(&self, geo: &Geometry) -> u64;

    /// Checks the table's own invariants (cache against backing store).
    fn check(&self, _dev: &Device) -> Result<()> {
        Ok(())
    }

    /// Power failed: the table takes `values` (per entry, a page, or
    /// `NEVER` or `TRIMMED`), found by crash recovery's scan, and drops
    /// what it cached; a backing store that differs is brought up to date.
    /// Returns when the table can serve again.
    fn recover(&mut self, core: &mut PageCore, dev: &mut Device, values: &[u32], now: SimTime) -> Result<SimTime>;

    /// Write streams, each with its own active block per plane (DAC's
    /// regions); 1 for the others.
    fn streams(&self) -> usize {
        1
    }

    /// The stream a host write of `lpn` goes to; `old` is its current entry.
    #[inline]
    fn host_stream(&mut self, _lpn: Lpn, _old: u32) -> usize {
        0
    }

    /// The stream GC copies entry `x`'s page into.
    #[inline]
    fn gc_stream(&mut self, _x: u32) -> usize {
        0
    }

    /// The map as the page FTL's own, for what only it supports
    /// (functional preconditioning).
    fn as_dram(&mut self) -> Option<&mut DramMap> {
        None
    }
}

/// The whole forward map in DRAM: every access is a hit and costs nothing.
#[derive(Serialize, Deserialize)]
pub struct DramMap {
    fwd: crate::mem::BigVec<u32>,
    /// A bit per physical unit: set while an entry maps to it. What GC asks
    /// of every page of a victim, and again before each copy, is answered
    /// here instead of by the forward map: the map's entries are cache
    /// misses at random places (most of GC's time at high WA), these bits
    /// a few hundred KiB per 16 GiB, read a victim's worth per cache line.
    /// Simulator state, not the modelled controller's (not in `ram_bytes`).
    live: crate::mem::BigVec<u64>,
    ram_accesses: u64,
    /// Backward-map entries per physical page (mapping units per page).
    units_per_page: u32,
}

impl DramMap {
    /// A map of `entries`, over `units` physical mapping units.
    pub(super) fn new(entries: u32, units: u64) -> DramMap {
        DramMap {
            fwd: crate::mem::big_vec(entries as usize, NEVER),
            live: crate::mem::big_vec(units.div_ceil(64) as usize, 0),
            ram_accesses: 0,
            units_per_page: 1,
        }
    }

    /// Entry `x` now maps to `value` (a unit address or a sentinel): the
    /// unit it left is no longer live, the one it maps to is.
    #[inline]
    fn assign(&mut self, x: usize, value: u32) {
        let old = std::mem::replace(&mut self.fwd[x], value);
        if is_mapped(old) {
            self.set_live(old, false);
        }
        if is_mapped(value) {
            self.set_live(value, true);
        }
    }

    #[inline]
    fn set_live(&mut self, u: u32, live: bool) {
        set_unit(&mut self.live, u, live);
    }

    /// The entries of `run`'s units (GC's copies, the `i`-th to unit
    /// `first + i`, whose OOB names its entry) moved to their copies.
    #[inline(always)]
    fn move_entries(&mut self, dev: &Device, run: &[u32], first: u32) {
        self.ram_accesses += run.len() as u64;
        let to = first..first + run.len() as u32;
        for ((&from, &x), dst) in run.iter().zip(dev.array.oob_units_raw(to.clone())).zip(to) {
            debug_assert_eq!(self.fwd[x as usize], from, "entry {x} moved from a unit it does not map to");
            self.fwd[x as usize] = dst;
        }
    }

    /// The live bits anew from the entries.
    fn mark_live(&mut self) {
        self.live.fill(0);
        for x in 0..self.fwd.len() {
            if is_mapped(self.fwd[x]) {
                self.set_live(self.fwd[x], true);
            }
        }
    }

    /// Whether an entry maps to unit `u`.
    #[inline]
    fn unit_live(&self, u: u32) -> bool {
        unit_live(&self.live, u)
    }
}

/// The soonest free time offered so far, and the least tie key among the
/// planes offered at it (see [`PageCore::soonest_by_unit_where`]).
struct Soonest {
    time: u64,
    key: u64,
}

impl Soonest {
    const NONE: Soonest = Soonest { time: u64::MAX, key: u64::MAX };

    /// A plane free at `t`, its tie key computed only if `t` is the soonest yet.
    #[inline(always)]
    fn offer(&mut self, t: u64, key: impl FnOnce() -> u64) {
        if t > self.time {
            return;
        }
        if t < self.time {
            *self = Soonest { time: t, key: u64::MAX };
        }
        self.key = self.key.min(key());
    }

    /// The least key at the soonest time; `None` if nothing was offered.
    fn key(&self) -> Option<u64> {
        (self.key != u64::MAX).then_some(self.key)
    }
}

/// The words of `live` over `units`, each as the unit its bit 0 stands
/// for and its bits of `units` (shifted down, the others cleared): a
/// victim's 256 pages are four words.
#[inline(always)]
fn live_words(live: &[u64], units: Range<u32>) -> impl Iterator<Item = (u32, u64)> + '_ {
    let mut p = units.start;
    std::iter::from_fn(move || {
        (p < units.end).then(|| {
            let (w, bit) = (p as usize / 64, p % 64);
            let n = (64 - bit).min(units.end - p);
            let first = p;
            p += n;
            (first, live[w] >> bit & (u64::MAX >> (64 - n)))
        })
    })
}

/// Appends the units among `pages` whose bits are set in `live`
/// ([`DramMap`]'s live bits) to `out`, in order, a word at a time
/// (blocking GC's and functional preconditioning's lists of live units).
fn live_in(live: &[u64], pages: Range<u32>, out: &mut Vec<u32>) {
    // Room for every page first, cut to the live after: a store a unit,
    // not a push's capacity check.
    let from = out.len();
    out.resize(from + pages.len(), 0);
    let (slots, mut found) = (&mut out[from..], 0);
    for (p, mut bits) in live_words(live, pages) {
        while bits != 0 {
            slots[found] = p + bits.trailing_zeros();
            found += 1;
            bits &= bits - 1;
        }
    }
    out.truncate(from + found);
}

/// How many of `pages` have their bit set in `live`, and one past the
/// last of them (`pages.start` if none): a GC job's span of its victim.
fn live_span(live: &[u64], pages: Range<u32>) -> (u32, u32) {
    let (mut count, mut end) = (0, pages.start);
    for (p, bits) in live_words(live, pages).filter(|&(_, bits)| bits != 0) {
        count += bits.count_ones();
        end = p + 64 - bits.leading_zeros();
    }
    (count, end)
}

/// Appends the units from `*next` up to `end` whose bits are set in
/// `live`, in order, until `out` holds `limit`; `*next` moves past the
/// last taken, or to `end` if they ran out first (untouched if `out` was
/// full already).
fn take_live(live: &[u64], next: &mut usize, end: usize, limit: usize, out: &mut Vec<u32>) {
    if out.len() >= limit {
        return;
    }
    for (p, mut bits) in live_words(live, *next as u32..end as u32) {
        while bits != 0 {
            let u = p + bits.trailing_zeros();
            out.push(u);
            if out.len() == limit {
                *next = u as usize + 1;
                return;
            }
            bits &= bits - 1;
        }
    }
    *next = end;
}

/// The first unit from `*next` up to `end` whose bit is set in `live`,
/// taken (`*next` moves past it, or to `end`).
fn next_set(live: &[u64], next: &mut usize, end: usize) -> Option<u32> {
    let found = live_words(live, *next as u32..end as u32).find(|&(_, bits)| bits != 0);
    let u = found.map(|(p, bits)| p + bits.trailing_zeros());
    *next = u.map_or(end, |u| u as usize + 1);
    u
}

/// Sets (`on`) or clears unit `u`'s bit in `live`.
#[inline(always)]
pub(super) fn set_unit(live: &mut [u64], u: u32, on: bool) {
    let (word, bit) = (&mut live[u as usize / 64], 1 << (u % 64));
    *word = if on { *word | bit } else { *word & !bit };
}

/// Sets (`on`) or clears the bits of `pages`.
#[inline]
pub(super) fn set_range(live: &mut [u64], pages: std::ops::Range<u32>, on: bool) {
    if pages.len() == 1 {
        // A host page's (the loop below cost ~20 instructions an overwrite more).
        return set_unit(live, pages.start, on);
    }
    let mut p = pages.start;
    while p < pages.end {
        let (w, bit) = (p as usize / 64, p % 64);
        let n = (64 - bit).min(pages.end - p);
        let mask = (u64::MAX >> (64 - n)) << bit;
        live[w] = if on { live[w] | mask } else { live[w] & !mask };
        p += n;
    }
}

/// Whether unit `u`'s bit is set in `live` ([`DramMap`]'s live bits).
#[inline]
fn unit_live(live: &[u64], u: u32) -> bool {
    live.get(u as usize / 64).is_some_and(|w| w >> (u % 64) & 1 == 1)
}

impl MapTable for DramMap {
    const NAME: &'static str = "page";
    const TABLE_PAGES: bool = false;
    const SERIAL_WRITES: bool = false;

    fn entries(&self) -> u32 {
        self.fwd.len() as u32
    }

    #[inline]
    fn get(&self, x: u32) -> u32 {
        self.fwd[x as usize]
    }

    /// From the unit's bit: `x` is the unit's OOB entry at every caller,
    /// so "an entry maps to it" is "`x` maps to it" (checked by
    /// [`check`](MapTable::check)).
    #[inline]
    fn is_live(&self, x: u32, ppn: u32) -> bool {
        let live = self.unit_live(ppn);
        debug_assert_eq!(live, self.fwd.get(x as usize).is_some_and(|&m| m == ppn), "unit {ppn}'s bit, entry {x}");
        live
    }

    #[inline]
    fn unit_is_live(&self, dev: &Device, ppn: u32) -> bool {
        let live = self.unit_live(ppn);
        debug_assert_eq!(live, self.is_live(dev.array.oob_unit_raw(ppn), ppn), "unit {ppn}'s live bit against the map");
        live
    }

    #[inline]
    fn lookup(&mut self, _: &mut PageCore, _: &mut Device, lpn: Lpn, now: SimTime) -> Result<(u32, SimTime)> {
        self.ram_accesses += 1;
        Ok((self.fwd[lpn.idx()], now))
    }

    #[inline]
    fn prefetch(&self, lpn: Lpn) {
        crate::mem::prefetch(&self.fwd, lpn.idx());
    }

    /// The live bit an overwrite of `lpn` clears: a cache miss at a random
    /// place, which held up every host write.
    #[inline]
    fn prefetch_mapped(&self, lpn: Lpn) {
        if let Some(&old) = self.fwd.get(lpn.idx()).filter(|&&m| is_mapped(m)) {
            crate::mem::prefetch(&self.live, old as usize / 64);
        }
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, value: u32) {
        self.ram_accesses += 1;
        self.assign(lpn.idx(), value);
    }

    fn moves_in_ram(&self) -> bool {
        true
    }

    fn live_bits(&self) -> Option<&[u64]> {
        Some(&self.live)
    }

    /// The source's bit from `from`, not from the entry: the entry is a
    /// cache miss, which a store alone does not wait for.
    #[inline]
    fn moved(&mut self, _: &mut Device, x: u32, from: u32, dst: Ppn, _: SimTime) {
        self.ram_accesses += 1;
        debug_assert_eq!(self.fwd[x as usize], from, "entry {x} moved from a unit it does not map to");
        self.fwd[x as usize] = dst.0;
        self.set_live(from, false);
        self.set_live(dst.0, true);
    }

    /// The destination's live bits a word at a time, as their units are
    /// consecutive.
    fn moved_run(&mut self, dev: &mut Device, run: &[u32], first: u32, _: SimTime) {
        self.move_entries(dev, run, first);
        for &from in run {
            self.set_live(from, false);
        }
        set_range(&mut self.live, first..first + run.len() as u32, true);
    }

    fn moved_span(&mut self, dev: &mut Device, run: &[u32], first: u32, _: SimTime, span: Range<u32>) {
        debug_assert_eq!(
            live_span(&self.live, span.clone()).0 as usize,
            run.len(),
            "a run of all the span's live units"
        );
        self.move_entries(dev, run, first);
        set_range(&mut self.live, span, false);
        set_range(&mut self.live, first..first + run.len() as u32, true);
    }

    fn placed(&mut self, _: &mut PageCore, _: &mut Device, lpn: Lpn, ppn: Ppn, _: SimTime) -> Result<()> {
        self.assign(lpn.idx(), ppn.0);
        Ok(())
    }

    fn stats(&self, stats: &mut FtlStats) {
        stats.ram_accesses = self.ram_accesses;
    }

    fn reset_stats(&mut self) {
        self.ram_accesses = 0;
    }

    fn ram_bytes(&self, geo: &Geometry) -> u64 {
        // Forward map, backward map, and a 16-bit valid counter per block.
        self.fwd.len() as u64 * 4 + geo.pages as u64 * self.units_per_page as u64 * 4 + geo.blocks as u64 * 2
    }

    fn as_dram(&mut self) -> Option<&mut DramMap> {
        Some(self)
    }

    fn recover(&mut self, _: &mut PageCore, _: &mut Device, values: &[u32], now: SimTime) -> Result<SimTime> {
        self.fwd.copy_from_slice(values);
        self.mark_live();
        Ok(now)
    }

    /// The live bits against the map: an entry's unit has its bit (the
    /// core checks the unit's OOB names the entry), and no other unit has.
    fn check(&self, _: &Device) -> Result<()> {
        let mapped = self.fwd.iter().filter(|&&m| is_mapped(m)).count() as u64;
        let set: u64 = self.live.iter().map(|w| w.count_ones() as u64).sum();
        match self.fwd.iter().position(|&m| is_mapped(m) && !self.unit_live(m)) {
            Some(x) => {
                Err(Error::invariant(Self::NAME, format!("entry {x} maps to unit {}, not marked live", self.fwd[x])))
            }
            None if set != mapped => {
                Err(Error::invariant(Self::NAME, format!("{set} units marked live, {mapped} entries mapped")))
            }
            None => Ok(()),
        }
    }
}

/// The page-mapping FTL: the page-mapped data path over a DRAM forward map.
pub type PageFtl = PageMapped<DramMap>;

impl PageFtl {
    pub fn new(cfg: &Config, dev: &Device) -> Result<PageFtl> {
        let upp = cfg.units_per_page();
        let mut map = DramMap::new((cfg.logical_pages() * upp as u64) as u32, dev.geometry().pages as u64 * upp as u64);
        map.units_per_page = upp;
        PageMapped::with_map(cfg, dev, map)
    }
}

/// A page-mapped FTL: the shared data path over forward map `M`.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct PageMapped<M: MapTable> {
    core: PageCore,
    map: M,
}

/// A plane's rank that bars a map's own page from it (see
/// [`PageCore::alloc_stream_page`]).
pub(super) const BARRED: u64 = u64::MAX;

/// The page-mapped data path, apart from the forward map.
#[derive(Serialize, Deserialize)]
pub struct PageCore {
    pub(super) geo: Geometry,
    pub(super) pool: BlockPool,
    /// Active block of each plane and stream (`plane × streams + stream`),
    /// or `NO_BLOCK`.
    active: Vec<u32>,
    streams: usize,
    /// The stream allocations write to now (0 but while DAC places a page
    /// or GC copies).
    stream: usize,
    stripe: Vec<PlaneId>,
    /// Each plane's position in `stripe`.
    stripe_pos: Vec<u32>,
    cursor: usize,
    /// Free blocks per plane GC keeps in hand.
    reserve: u32,
    /// With preemptible GC, the free blocks below which a host page waits
    /// for the plane's job (at least 2: never the last): the reserve less
    /// its block per map stream beyond the first. Each stream (DAC's regions, DFTL's translation
    /// blocks) fills a block of its own and may open the next long before
    /// the job, paced by the block the host writes into, is done: held to
    /// the whole reserve, the host waited for whole victims (DAC with 4
    /// regions on modern-tlc: 37% of the array units busy, write p99 1.3 s).
    host_floor: u32,
    /// GC runs on a plane with fewer free blocks than this (the reserve,
    /// unless `gc.threshold_of = "free-space"`; with preemptible GC and
    /// several map streams, at least a block above `host_floor`).
    trigger: u32,
    /// Above the reserve, GC takes only victims with at most this many
    /// valid units (all of them, unless `gc.threshold_of = "free-space"`).
    worth_valid: u32,
    /// `gc.reclaim_empty`, and the closed blocks this call left without a
    /// valid unit, erased when it is done.
    reclaim_empty: bool,
    empties: Vec<BlockId>,
    /// Logical pages: OOB values above are the map's own pages.
    logical: u32,
    unwritten: UnwrittenReads,
    /// One page of bytes, for assembling payloads of partial writes.
    scratch: Vec<u8>,
    /// Live pages of the GC victim being reclaimed (reused allocation).
    live_scratch: Vec<u32>,
    gc_mode: GcMode,
    allocation: Allocation,
    /// `gc.debt = "background"`: a host page goes to a plane owing its job
    /// no copy, and the copies it owes are left to background steps.
    debt_behind: bool,
    /// Preemptible GC: each plane's job.
    jobs: Vec<GcJob>,
    /// With `debt_behind` behind a write buffer (whose destagers ask
    /// [`every_plane_owes`](Self::every_plane_owes); without one nothing
    /// does): per plane, whether its job is owed copies
    /// ([`owes_copies`](Self::owes_copies) as last noted), and how many are.
    count_owing: bool,
    owing: Vec<bool>,
    owing_count: u32,
    /// With `debt_behind` where planes are the array units: a bit per
    /// stripe position, set while its plane takes host pages owing nothing
    /// ([`takes_pages`](Self::takes_pages)), noted as jobs and free blocks
    /// change, so a host page's search visits only those planes rather
    /// than testing every one (the benchmark drive's host pages found none
    /// half the time, after 16 tests). Built when first needed, and again
    /// after a load or a power cut (`takes_known` false).
    #[serde(skip)]
    takes: Vec<u64>,
    #[serde(skip)]
    takes_known: bool,
    /// TRIMs not yet durable (see `recovery`).
    journal: TrimJournal,
    stats: FtlStats,
    /// log2 of the mapping units per page: 0 (whole pages) unless
    /// `ftl.map_unit_bytes` is below the page size. Map values, OOB
    /// indices, GC's lists and valid counts are then unit addresses and
    /// unit counts.
    unit_shift: u32,
    /// Multi-plane GC (`timing.multi_plane`, preemptible GC, dies of
    /// several planes, whole-page units, one map stream): jobs copy into
    /// their die's stripe (see [`PageCore::stripe_row`]) when it has room.
    multi_plane_gc: bool,
    /// A die of several planes is the array unit (`timing.plane_parallel`
    /// off; see [`PageCore::share_key`]).
    die_unit: bool,
    /// The sources and destinations of the stripe row being copied (reused
    /// allocation).
    #[serde(skip)]
    row_scratch: Vec<(u32, Ppn)>,
    /// Units staged for the next page (their LPNs; the page's bytes in
    /// `scratch`), and when the last one's data is ready.
    staged: Vec<u32>,
    staged_ready: SimTime,
}

/// Fixed-point unit of [`GcJob::debt`] and [`GcJob::rate`]: one page copy.
const COPY: u32 = 256;

/// A plane's preemptible GC job: one victim, emptied a copy at a time.
#[derive(Serialize, Deserialize)]
struct GcJob {
    /// The victim, or `NO_BLOCK` when the plane has no job.
    victim: u32,
    /// Pages of the victim live when the job began, where the map keeps
    /// no live bits; each is checked again when its turn comes, as the
    /// host may have overwritten or trimmed it.
    pages: Vec<u32>,
    /// The next of `pages` to look at; where the map keeps live bits
    /// ([`MapTable::live_bits`]), the next of the victim's units, the bits
    /// saying which are live (a scanned victim's bits are only ever
    /// cleared, so they list what `pages` would, without a list made at
    /// the scan or a unit looked up that is no longer live).
    next: usize,
    /// Where `next` runs out: `pages`' length, or one past the last unit
    /// live when the job began.
    end: usize,
    /// How far (as `next` counts) GC's steps have prefetched map entries.
    prefetched: usize,
    /// The erase's cause (see `reclaim`).
    cause: Option<Cause>,
    /// Copies host writes to the plane have paid for and GC not yet made,
    /// and copies per host page, in 1/[`COPY`] units.
    debt: u32,
    rate: u32,
    /// The owed copies were booked as one run ([`PageCore::background_step`]),
    /// not yet over: the plane counts as owing until its next step, so host
    /// writes keep going elsewhere, as while it paid a copy a step.
    run_booked: bool,
    /// With sub-page units, the victim page whose data the controller holds
    /// from the job's last copy (`u32::MAX`: none): steps of a few units
    /// each read a page once, as one run over them all would.
    held: u32,
}

impl Default for GcJob {
    /// No job.
    fn default() -> Self {
        GcJob {
            victim: NO_BLOCK,
            pages: Vec::new(),
            next: 0,
            end: 0,
            prefetched: 0,
            cause: None,
            debt: 0,
            rate: 0,
            run_booked: false,
            held: u32::MAX,
        }
    }
}

impl<M: MapTable> PageMapped<M> {
    #[cfg(test)]
    pub(crate) fn map_mut(&mut self) -> &mut M {
        &mut self.map
    }

    pub fn with_map(cfg: &Config, dev: &Device, map: M) -> Result<PageMapped<M>> {
        let core = PageCore::new(cfg, dev, map.streams())?;
        debug_assert!(
            M::TABLE_PAGES || map.entries() <= core.logical,
            "{}: {} entries past {} logical ones, yet TABLE_PAGES is false",
            M::NAME,
            map.entries(),
            core.logical
        );
        Ok(PageMapped { core, map })
    }

    /// Free blocks per plane that GC keeps in hand.
    pub fn reserve_blocks(&self) -> u32 {
        self.core.reserve
    }

    /// Free (erased) blocks over all planes.
    pub fn free_blocks(&self) -> u32 {
        (0..self.core.geo.planes).map(|p| self.core.pool.free_count(PlaneId(p))).sum()
    }

    pub fn map(&self) -> &M {
        &self.map
    }
}

/// Host pages before a GC episode over which its first victim's mapping
/// entries are prefetched (GC's later victims are prefetched while the
/// previous one copies).
const EARLY_PREFETCH: u32 = 16;

impl PageCore {
    fn new(cfg: &Config, dev: &Device, map_streams: usize) -> Result<PageCore> {
        let geo = dev.geometry().clone();
        // `gc.frontier = "separate"`: a job's copies, made a few at a time
        // between host pages, get a block of their own (see `GcFrontier`).
        let unit_shift = cfg.units_per_page().trailing_zeros();
        // Multi-plane GC copies into a stripe of GC blocks, one per plane
        // of the die: a frontier of GC's own.
        let multi_plane_gc = cfg.timing.multi_plane
            && cfg.gc.mode == GcMode::Preemptible
            && geo.planes_per_die > 1
            && map_streams == 1
            && unit_shift == 0;
        let gc_frontier = multi_plane_gc
            || (cfg.gc.mode == GcMode::Preemptible && cfg.gc.frontier == GcFrontier::Separate && map_streams == 1);
        let streams = map_streams + gc_frontier as usize;
        if dev.array.units_per_page() != cfg.units_per_page() {
            return Err(Error::invariant("page", "the NAND array's OOB does not hold one LPN per mapping unit"));
        }
        let logical = cfg.logical_pages() as usize;
        let data_blocks_per_plane = (logical as u64).div_ceil(geo.pages_per_block as u64 * geo.planes as u64);
        let spare = (geo.blocks_per_plane as u64).saturating_sub(data_blocks_per_plane);
        let units_per_block = geo.pages_per_block << unit_shift;
        // The free blocks `gc.threshold` keeps per plane.
        let kept = match cfg.gc.threshold_of {
            ThresholdOf::SpareBlocks => ((cfg.gc.threshold * spare as f64).ceil() as u32).max(cfg.gc.min_free_blocks),
            ThresholdOf::FreeSpace => cfg.gc.min_free_blocks,
        };
        // GC may open a block in every stream.
        let reserve = kept.max(streams as u32);
        let (trigger, worth_valid) = match cfg.gc.threshold_of {
            ThresholdOf::SpareBlocks => (reserve, units_per_block),
            ThresholdOf::FreeSpace => {
                let free_space = (cfg.gc.threshold * geo.blocks_per_plane as f64).ceil() as u32;
                let worth = ((1.0 - cfg.gc.threshold) * units_per_block as f64).floor() as u32;
                (free_space.max(reserve), worth)
            }
        };
        // Without the reserve's block per stream: a running job's copies go
        // where they fit on the plane (another stream's open block at
        // worst). Never the last free block: with one, GC can go on.
        let host_floor = kept.max(2);
        // A job is paced to end before the block the host writes into is
        // full, the next block it opens with one stream. With several, any
        // may open its next block long before: the job starts while the
        // host can still open one without waiting for it (DFTL, whose
        // reserve is its floor: `coftl-mt29f64g08` at QD 256 kept 44% of
        // its array units busy, translation reads queued behind planes
        // finishing jobs; 98% now, at 9% more write amplification).
        let trigger = match cfg.gc.mode {
            GcMode::Preemptible if map_streams > 1 => trigger.max(host_floor + 1),
            _ => trigger,
        };
        // The host needs one block beyond GC's reserve to write into.
        if spare < reserve as u64 + streams as u64 {
            return Err(Error::config(
                "overprovisioning",
                format!(
                    "leaves {spare} spare blocks per plane; the page FTL needs at least {} (GC reserve {reserve} from \
                     gc.min_free_blocks (or gc.threshold of the spare blocks), plus one to write into per stream)",
                    reserve as usize + streams
                ),
            ));
        }
        let stripe = stripe_sequence(&geo, &cfg.ftl.stripe_order);
        Ok(PageCore {
            pool: BlockPool::counting_units(&geo, &cfg.gc, cfg.seed, 1 << unit_shift),
            active: vec![NO_BLOCK; geo.planes as usize * streams],
            streams,
            stream: 0,
            stripe_pos: stripe_positions(&stripe),
            stripe,
            cursor: 0,
            reserve,
            host_floor,
            trigger,
            worth_valid,
            reclaim_empty: cfg.gc.reclaim_empty,
            empties: Vec::new(),
            logical: (logical << unit_shift) as u32,
            unwritten: cfg.host.unwritten_reads,
            scratch: if dev.array.stores_payloads() { vec![0; geo.page_size as usize] } else { Vec::new() },
            live_scratch: Vec::new(),
            gc_mode: cfg.gc.mode,
            allocation: cfg.ftl.allocation,
            // What it needs (a buffer, preemptible GC, dynamic allocation)
            // the config's validation checked.
            debt_behind: cfg.gc_debt() == GcDebt::Background,
            count_owing: cfg.gc_debt() == GcDebt::Background && cfg.cache.bytes > 0,
            jobs: (0..geo.planes).map(|_| GcJob::default()).collect(),
            owing: vec![false; geo.planes as usize],
            owing_count: 0,
            takes: Vec::new(),
            takes_known: false,
            journal: TrimJournal::new(dev),
            stats: FtlStats::default(),
            unit_shift,
            multi_plane_gc,
            die_unit: !cfg.timing.plane_parallel && geo.planes_per_die > 1,
            row_scratch: Vec::new(),
            staged: Vec::with_capacity(1 << unit_shift),
            staged_ready: SimTime::ZERO,
            geo,
        })
    }

    /// The next programmable page of `plane`, opening a block if needed.
    /// Host allocations first let GC restore the plane's reserve plus the
    /// block the host takes; GC's own copies draw on that reserve. `None`:
    /// the plane has no room left for the host.
    fn next_page<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
        for_gc: bool,
    ) -> Result<Option<Ppn>> {
        let mut collected = for_gc;
        if !for_gc && self.pool.free_count(plane) == 0 {
            // GC's copies hold the plane's last block (a job's, or, after a
            // power cut, those of the victim it was reclaiming): host pages
            // in it could leave GC nowhere to copy to. GC goes first.
            self.finish_jobs(map, dev, plane, now, 1)?;
            if self.pool.free_count(plane) == 0 {
                self.collect(map, dev, plane, now)?;
            }
        }
        let slot = plane.idx() * self.streams + self.stream;
        loop {
            if let Some((ppn, left)) = self.active_page(dev, slot, now) {
                if !for_gc
                    && left <= EARLY_PREFETCH
                    && self.pool.free_count(plane) <= self.trigger
                    && self.jobs[plane.idx()].victim == NO_BLOCK
                {
                    // GC runs on this plane once this block is full: load
                    // its first victim's entries over the last few host pages.
                    self.prefetch_victim_share(map, dev, plane, EARLY_PREFETCH - left);
                }
                return Ok(Some(ppn));
            }
            if !collected {
                collected = true;
                let free = self.pool.free_count(plane);
                match self.gc_mode {
                    GcMode::Blocking if free <= self.reserve || free < self.trigger => {
                        self.collect(map, dev, plane, now)?
                    }
                    GcMode::Preemptible if free < self.host_floor => {
                        // The job fell behind the host: the host waits for it
                        // (one GC process per plane at a time), then for more.
                        self.finish_jobs(map, dev, plane, now, self.host_floor)?;
                        // Only if finishing it did not restore the reserve:
                        // a whole blocking victim more would be seconds of GC
                        // the job's pace did not call for.
                        if self.pool.free_count(plane) < self.host_floor {
                            self.collect(map, dev, plane, now)?;
                        }
                    }
                    _ => {}
                }
                continue;
            }
            // GC could not restore the reserve (a plane full of live data):
            // the last free block stays GC's, or the plane could never be
            // collected again once its data is overwritten elsewhere.
            if !for_gc && self.pool.free_count(plane) <= 1 {
                return Ok(None);
            }
            let Some(b) = self.take_free(plane) else {
                if !for_gc {
                    return Ok(None);
                }
                return Ok(self.other_stream_page(dev, plane).or_else(|| self.other_plane_page(dev, plane, now)));
            };
            self.active[slot] = b.0;
            // Blocking GC holds `reserve` free blocks while a block fills; a
            // job started once the host has dipped below it, and done about
            // when the block is full, holds as many on average (fewer would
            // lower write amplification, more raise it).
            if !for_gc && self.gc_mode == GcMode::Preemptible && self.pool.free_count(plane) < self.trigger {
                self.start_job(map, dev, plane, now);
            }
            return Ok(Some(self.geo.ppn(b, 0)));
        }
    }

    /// The stripe position after the cursor.
    #[inline(always)]
    fn next_cursor(&self) -> usize {
        let at = self.cursor + 1;
        if at == self.stripe.len() { 0 } else { at }
    }

    /// The next page of block `a`, if it has room, and the pages left in
    /// it (that one included).
    fn room_in(&self, dev: &Device, a: u32) -> Option<(Ppn, u32)> {
        let written = dev.array.written_pages(BlockId(a));
        (written < self.geo.pages_per_block)
            .then(|| (self.geo.ppn(BlockId(a), written), self.geo.pages_per_block - written))
    }

    /// The next page of stream slot `slot`'s active block, and the pages
    /// left in it; a full one is closed (the slot then has none).
    fn active_page(&mut self, dev: &Device, slot: usize, now: SimTime) -> Option<(Ppn, u32)> {
        let a = self.active[slot];
        if a == NO_BLOCK {
            return None;
        }
        let page = self.room_in(dev, a);
        if page.is_none() {
            self.pool.close(BlockId(a), now);
            self.active[slot] = NO_BLOCK;
        }
        page
    }

    /// `plane`'s active blocks, one a stream at most.
    fn open_blocks(&self, plane: PlaneId) -> impl Iterator<Item = u32> + '_ {
        let slots = &self.active[plane.idx() * self.streams..(plane.idx() + 1) * self.streams];
        slots.iter().copied().filter(|&a| a != NO_BLOCK)
    }

    /// With write streams, GC may need a new block in each stream before
    /// its victim's erase returns one; a plane out of free blocks (after a
    /// power cut, or a plane GC could not keep above its reserve) takes
    /// GC's copies into another stream's active block instead, so GC can
    /// always finish a victim, as with one stream: a victim's live pages
    /// fit in the room its streams' blocks had plus the one block the host
    /// leaves GC.
    fn other_stream_page(&self, dev: &Device, plane: PlaneId) -> Option<Ppn> {
        self.open_blocks(plane).find_map(|a| self.room_in(dev, a).map(|(ppn, _)| ppn))
    }

    /// GC's last resort, a page in another plane (a page-mapped FTL may map
    /// a page anywhere; the copy is a read, transfers and a program rather
    /// than one plane's). A power cut can leave a plane with no free page at
    /// all: no free block, no partly written one, and some live data in
    /// each block (drawn by the power-cut conformance tests with random
    /// victims); or too few for the victim GC was copying when it fell, as
    /// the copy it tore took a page and left its source live (drawn with
    /// FIFO victims). The page comes from the plane with the most free
    /// blocks, one that keeps a free block for its own GC: the rest of its
    /// open block in this stream (its GC can always finish a victim in the
    /// block it keeps, as when its host writes fill that block), or a block
    /// of its own if it has two free.
    fn other_plane_page(&mut self, dev: &Device, plane: PlaneId, now: SimTime) -> Option<Ppn> {
        let slot_of = |q: PlaneId| q.idx() * self.streams + self.stream;
        let has_open_page = |q: PlaneId| {
            let a = self.active[slot_of(q)];
            a != NO_BLOCK && self.room_in(dev, a).is_some()
        };
        let other = (0..self.geo.planes)
            .map(PlaneId)
            .filter(|&q| q != plane)
            .filter(|&q| match self.pool.free_count(q) {
                0 => false,
                1 => has_open_page(q),
                _ => true,
            })
            .max_by_key(|&q| (self.pool.free_count(q), std::cmp::Reverse(q.0)))?;
        let slot = slot_of(other);
        if let Some((ppn, _)) = self.active_page(dev, slot, now) {
            return Some(ppn);
        }
        let b = self.take_free(other)?;
        self.active[slot] = b.0;
        Some(self.geo.ppn(b, 0))
    }

    /// A page for host data (`paced`: a timed write, which pays its share
    /// of the plane's GC job first): on the plane free soonest, or the next
    /// in stripe order; failing that, any plane with room.
    pub(super) fn alloc_host_page<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        now: SimTime,
        paced: bool,
    ) -> Result<Ppn> {
        self.alloc_page_ranked(map, dev, now, paced, None)
    }

    /// [`alloc_host_page`](Self::alloc_host_page); with dynamic allocation
    /// and each plane's `rank`, as [`alloc_stream_page`](Self::alloc_stream_page).
    fn alloc_page_ranked<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        now: SimTime,
        paced: bool,
        rank: Option<&[u64]>,
    ) -> Result<Ppn> {
        if self.allocation == Allocation::Dynamic {
            // `gc.debt = "background"`: only a plane whose GC is owed
            // nothing, and the copies this page owes are made after it, a
            // step at a time; if there is none, the soonest plane, paying
            // ahead. (A fast-forward has no background steps: it pays ahead.)
            let mut behind = paced && self.debt_behind && !dev.units_only();
            if behind && !self.takes_known && !self.die_unit {
                self.know_takes();
            }
            let free_of_debt = if behind { self.soonest_in_stripe_owing_nothing(dev, rank) } else { None };
            behind &= free_of_debt.is_some();
            let ranked = || rank.and_then(|rank| self.soonest_ranked(dev, |_| true, rank));
            let best = match free_of_debt.or_else(ranked) {
                Some(best) => best,
                // The fast path knows only the dies' free times, not which
                // planes could join a multi-plane group: every plane is scanned.
                None if dev.grouping() => self.soonest_in_stripe_by_scan(dev),
                None => {
                    let best = self.soonest_in_stripe(dev);
                    debug_assert_eq!(best, self.soonest_in_stripe_by_scan(dev));
                    best
                }
            };
            self.cursor = if best + 1 == self.stripe.len() { 0 } else { best + 1 };
            let plane = self.stripe[best];
            if behind {
                self.accrue_gc_debt(plane);
            } else if paced {
                self.pay_gc_debt(map, dev, plane, now)?;
            }
            if let Some(ppn) = self.next_page(map, dev, plane, now, false)? {
                return Ok(ppn);
            }
        }
        for _ in 0..self.stripe.len() {
            let plane = self.stripe[self.cursor];
            self.cursor = self.next_cursor();
            if paced && self.allocation == Allocation::Static {
                self.pay_gc_debt(map, dev, plane, now)?;
            }
            if let Some(ppn) = self.next_page(map, dev, plane, now, false)? {
                return Ok(ppn);
            }
        }
        Err(Error::DeviceFull("page FTL: no plane has a free page and GC cannot reclaim one".into()))
    }

    /// As [`alloc_host_page`](Self::alloc_host_page), into write stream
    /// `stream` of the map's (DFTL's translation blocks); with dynamic
    /// allocation, among the planes whose `rank` (by plane) is not
    /// [`BARRED`], the soonest, and among those free at once the one of
    /// lowest rank.
    pub(super) fn alloc_stream_page<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        now: SimTime,
        paced: bool,
        (stream, rank): (usize, &[u64]),
    ) -> Result<Ppn> {
        let host_stream = std::mem::replace(&mut self.stream, stream);
        let ppn = self.alloc_page_ranked(map, dev, now, paced, Some(rank));
        self.stream = host_stream;
        ppn
    }

    /// Dynamic allocation's plane, as its stripe position: the plane free
    /// soonest; among planes free at once, the one with the lowest
    /// [`share_key`](Self::share_key), so no plane takes more than its
    /// share of the data and GCs fuller victims; among those, the first in
    /// stripe order from the cursor. On a drive of many planes the device
    /// names the planes free soonest ([`Device::units_free_soonest`]) and
    /// only theirs are compared; otherwise one pass over the planes in
    /// stripe order from the cursor looks keys up only for planes as soon
    /// as the soonest so far. Neither compares every plane's key as
    /// [`soonest_in_stripe_by_scan`](Self::soonest_in_stripe_by_scan)
    /// does.
    #[inline(always)]
    fn soonest_in_stripe(&self, dev: &Device) -> usize {
        // Units are dies only where `die_unit` says so; otherwise a plane
        // is its own unit (the common case), found without a division.
        if self.die_unit {
            let per_die = self.geo.planes_per_die as usize;
            debug_assert_eq!(per_die, self.stripe.len() / dev.units());
            self.soonest_by_unit(dev, |plane| plane / per_die)
        } else {
            debug_assert_eq!(self.stripe.len(), dev.units());
            // The planes free soonest (rarely more than one), where the
            // device keeps them; else the scan.
            let n = self.stripe.len();
            let mut best = u64::MAX;
            let found = dev.units_free_soonest(|plane| {
                let pos = self.stripe_pos[plane] as usize;
                let from_cursor = if pos >= self.cursor { pos - self.cursor } else { pos + n - self.cursor };
                best = best.min(self.tie_key(PlaneId(plane as u32), from_cursor));
            });
            match found {
                Some(_) => self.stripe_index(best),
                None => self.soonest_by_unit(dev, |plane| plane),
            }
        }
    }

    /// Among planes free at once, the order dynamic allocation prefers
    /// them in, as one word: the share key, then the distance from the
    /// cursor (both below 2^32; the distance names the plane).
    #[inline(always)]
    fn tie_key(&self, plane: PlaneId, from_cursor: usize) -> u64 {
        let share = self.share_key(plane);
        debug_assert!(share >> 32 == 0, "share key {share} takes more than 32 bits");
        share << 32 | from_cursor as u64
    }

    /// The stripe position a [`tie_key`](Self::tie_key) names.
    #[inline(always)]
    fn stripe_index(&self, key: u64) -> usize {
        let at = self.cursor + (key as u32) as usize;
        if at >= self.stripe.len() { at - self.stripe.len() } else { at }
    }

    #[inline(always)]
    fn soonest_by_unit(&self, dev: &Device, unit_of: impl Fn(usize) -> usize) -> usize {
        self.soonest_by_unit_where(dev, unit_of, |_| true).unwrap_or(self.cursor)
    }

    /// [`soonest_in_stripe`](Self::soonest_in_stripe) among the planes whose
    /// GC is owed nothing and that can take host pages; `None` if none can.
    /// With planes' ranks, as [`soonest_ranked`](Self::soonest_ranked).
    /// Inlined so host pages (no ranks) pay nothing for them: called, it
    /// cost 26 instructions a request on the page FTL's benchmark.
    #[inline(always)]
    fn soonest_in_stripe_owing_nothing(&self, dev: &Device, rank: Option<&[u64]>) -> Option<usize> {
        // A plane below its trigger without a job has no victim worth its
        // copies yet (it holds the most live data): host pages there would
        // take it down to its reserve, where whole victims are collected
        // for a page or two each. Sent there because it owed nothing, a
        // 4-plane drive behind a buffer had WA 6.1 against 2.2 paying ahead.
        // Where a die is the unit, its planes are free at once and the one
        // with the least live data takes its pages (`share_key`); passing
        // over it when it owes copies sent them to a sibling with more, and
        // the planes' live data swung apart (286 to 466 pages of 512; WA 2.9
        // against 2.2): a die whose plane of least live data owes copies
        // takes none. (Its other planes still take pages when it does not:
        // with `timing.multi_plane` a page joins its die's group there.)
        let takes_pages = |plane: PlaneId| self.takes_pages(plane);
        if self.die_unit {
            return self.soonest_die_owing_nothing(dev, takes_pages, rank);
        }
        if let Some(rank) = rank {
            return self.soonest_ranked(dev, takes_pages, rank);
        }
        if self.takes_known && !dev.grouping() {
            let best = self.soonest_taking(dev);
            debug_assert_eq!(best, self.soonest_by_unit_where(dev, |plane| plane, takes_pages));
            return best;
        }
        self.soonest_eligible(dev, |plane| plane, takes_pages)
    }

    /// Whether `plane` takes host pages while owing its GC nothing (see
    /// [`soonest_in_stripe_owing_nothing`](Self::soonest_in_stripe_owing_nothing)).
    #[inline(always)]
    fn takes_pages(&self, plane: PlaneId) -> bool {
        !self.owes_copies(plane)
            && (self.jobs[plane.idx()].victim != NO_BLOCK || self.pool.free_count(plane) >= self.trigger)
    }

    /// Sets [`takes`](Self::takes) from every plane, and keeps it from now on.
    fn know_takes(&mut self) {
        self.takes = vec![0; self.stripe.len().div_ceil(64)];
        self.takes_known = true;
        for i in 0..self.stripe.len() {
            self.note_takes(self.stripe[i]);
        }
    }

    /// Notes whether `plane` [`takes_pages`](Self::takes_pages), after its
    /// job or free blocks changed.
    #[inline]
    fn note_takes(&mut self, plane: PlaneId) {
        if !self.takes_known {
            return;
        }
        let pos = self.stripe_pos[plane.idx()] as usize;
        let (word, bit) = (pos / 64, 1u64 << (pos % 64));
        if self.takes_pages(plane) {
            self.takes[word] |= bit;
        } else {
            self.takes[word] &= !bit;
        }
    }

    /// [`soonest_by_unit_where`](Self::soonest_by_unit_where) (planes the
    /// units) among the planes [`takes`](Self::takes) holds: the same
    /// answer, as it depends on no visiting order.
    #[inline(always)]
    fn soonest_taking(&self, dev: &Device) -> Option<usize> {
        let (free_at, horizon, n) = (dev.unit_free_times(), dev.horizon().0, self.stripe.len());
        let mut soonest = Soonest::NONE;
        for (w, &word) in self.takes.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let pos = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let plane = self.stripe[pos];
                let from_cursor = if pos >= self.cursor { pos - self.cursor } else { pos + n - self.cursor };
                soonest.offer(free_at[plane.idx()].0.max(horizon), || self.tie_key(plane, from_cursor));
            }
        }
        soonest.key().map(|key| self.stripe_index(key))
    }

    /// Takes a free block of `plane` from the pool.
    fn take_free(&mut self, plane: PlaneId) -> Option<BlockId> {
        let b = self.pool.take_free(plane);
        self.note_takes(plane);
        b
    }

    /// Returns an erased block to the pool.
    fn release(&mut self, b: BlockId) -> Result<()> {
        self.pool.release(b)?;
        self.note_takes(self.geo.plane_of(b));
        Ok(())
    }

    /// The soonest plane that is `eligible`, as a stripe position: by the
    /// free times of units (`unit_of` a plane) or, where multi-plane groups
    /// form, by scanning the planes (which knows which could join one).
    #[inline(always)]
    fn soonest_eligible(
        &self,
        dev: &Device,
        unit_of: impl Fn(usize) -> usize,
        eligible: impl Fn(PlaneId) -> bool + Copy,
    ) -> Option<usize> {
        let best = if dev.grouping() {
            self.soonest_in_stripe_where(dev, eligible)
        } else {
            self.soonest_by_unit_where(dev, unit_of, eligible)
        };
        debug_assert_eq!(best, self.soonest_in_stripe_where(dev, eligible));
        best
    }

    /// [`soonest_in_stripe_owing_nothing`](Self::soonest_in_stripe_owing_nothing)
    /// where a die is the unit: among the planes that `takes_pages`, those
    /// of dies whose plane of least live data owes nothing. Apart, as inlined
    /// the die's case cost the planes' case 3% of the hot path's
    /// instructions where it is never taken.
    #[inline(never)]
    fn soonest_die_owing_nothing(
        &self,
        dev: &Device,
        takes_pages: impl Fn(PlaneId) -> bool + Copy,
        rank: Option<&[u64]>,
    ) -> Option<usize> {
        let per = self.geo.planes_per_die;
        let die_lead_owes = |plane: PlaneId| {
            let first = plane.0 / per * per;
            let lead = (first..first + per).min_by_key(|&q| self.share_key(PlaneId(q))).unwrap_or(first);
            self.owes_copies(PlaneId(lead))
        };
        let eligible = |plane: PlaneId| takes_pages(plane) && !die_lead_owes(plane);
        match rank {
            Some(rank) => self.soonest_ranked(dev, eligible, rank),
            None => self.soonest_eligible(dev, |plane| plane / per as usize, eligible),
        }
    }

    #[inline(always)]
    fn soonest_by_unit_where(
        &self,
        dev: &Device,
        unit_of: impl Fn(usize) -> usize,
        eligible: impl Fn(PlaneId) -> bool,
    ) -> Option<usize> {
        let (free_at, horizon) = (dev.unit_free_times(), dev.horizon().0);
        // The soonest time so far, and the best tie key among its planes.
        // Visited from the cursor, the planes
        // rotation wrote last come last, busiest: the soonest is usually
        // found first and the branches on later times predicted. (From
        // plane 0, the soonest came anywhere and a fill spent a third of
        // its time here.)
        let mut soonest = Soonest::NONE;
        let mut visit = |from_cursor: usize, plane: PlaneId| {
            if eligible(plane) {
                let t = free_at[unit_of(plane.idx())].0.max(horizon);
                soonest.offer(t, || self.tie_key(plane, from_cursor));
            }
        };
        let (ahead, behind) = self.stripe.split_at(self.cursor);
        for (d, &plane) in behind.iter().enumerate() {
            visit(d, plane);
        }
        for (d, &plane) in ahead.iter().enumerate() {
            visit(behind.len() + d, plane);
        }
        soonest.key().map(|key| self.stripe_index(key))
    }

    /// Dynamic allocation's preference among planes free at once (lower
    /// first). Where planes are array units they tie only while idle, and
    /// the plane with the most free blocks is taken. Where a die is the
    /// unit its planes tie at every write, so this is how the die spreads
    /// its data: by free blocks their fill drifted apart (88% to 97% on
    /// k9lag08u0m-4ch, WA 14.0 against 10.0 with static allocation), so
    /// the plane holding the least valid data is taken.
    #[inline]
    fn share_key(&self, plane: PlaneId) -> u64 {
        if self.die_unit { self.pool.plane_valid(plane) } else { (u32::MAX - self.pool.free_count(plane)) as u64 }
    }

    /// When dynamic allocation takes `plane` to be free: when its die is;
    /// but in a batch forming multi-plane groups (`timing.multi_plane`), a
    /// plane whose next page can join its die's group counts as free tPROG
    /// before the group's array start (joining costs the die a page
    /// transfer, a page of its own a transfer and a tPROG), though never as
    /// soon as an idle die (at low load a page alone on an idle die ends
    /// sooner, and the dies have time to spare).
    fn plane_ready(&self, dev: &Device, plane: PlaneId) -> SimTime {
        let free = dev.plane_free(plane);
        if !dev.grouping() {
            return free;
        }
        let a = self.active[plane.idx() * self.streams + self.stream];
        let written = if a == NO_BLOCK { 0 } else { dev.array.written_pages(BlockId(a)) };
        // A full active block is replaced by a fresh one, written from page 0.
        let offset = if written < self.geo.pages_per_block { written } else { 0 };
        let Some(join) = dev.join_start(plane, offset) else { return free };
        let credited = SimTime(join.0.saturating_sub(dev.timing().program.0));
        credited.max(dev.horizon() + Nanos(1)).min(free)
    }

    /// [`soonest_in_stripe`](Self::soonest_in_stripe) as its definition
    /// says: every plane's key compared in stripe order from the cursor
    /// (the reference the fast path is checked against in tests, and the
    /// path taken while multi-plane groups may form, with the planes' times
    /// from [`plane_ready`](Self::plane_ready)).
    fn soonest_in_stripe_by_scan(&self, dev: &Device) -> usize {
        self.soonest_in_stripe_where(dev, |_| true).expect("a stripe has planes")
    }

    /// The scan of [`soonest_in_stripe_by_scan`](Self::soonest_in_stripe_by_scan)
    /// over the planes `eligible` accepts; `None` if it accepts none.
    fn soonest_in_stripe_where(&self, dev: &Device, eligible: impl Fn(PlaneId) -> bool) -> Option<usize> {
        self.soonest_in_stripe_keyed(dev, eligible, |plane| self.share_key(plane))
    }

    /// [`soonest_in_stripe_where`](Self::soonest_in_stripe_where) among the
    /// planes not [`BARRED`] by `rank`, ties going to the lowest rank.
    fn soonest_ranked(&self, dev: &Device, eligible: impl Fn(PlaneId) -> bool, rank: &[u64]) -> Option<usize> {
        let unbarred = |plane: PlaneId| rank[plane.idx()] != BARRED && eligible(plane);
        self.soonest_in_stripe_keyed(dev, unbarred, |plane| rank[plane.idx()])
    }

    /// The plane `eligible` accepts that is free soonest, as a stripe
    /// position; among those free at once, the one of lowest `tie` key,
    /// then the first from the cursor. `None` if it accepts none.
    fn soonest_in_stripe_keyed(
        &self,
        dev: &Device,
        eligible: impl Fn(PlaneId) -> bool,
        tie: impl Fn(PlaneId) -> u64,
    ) -> Option<usize> {
        let n = self.stripe.len();
        let mut best: Option<(usize, (SimTime, u64))> = None;
        for i in (self.cursor..n).chain(0..self.cursor) {
            let plane = self.stripe[i];
            if !eligible(plane) {
                continue;
            }
            let key = (self.plane_ready(dev, plane), tie(plane));
            if best.is_none_or(|(_, soonest)| key < soonest) {
                best = Some((i, key));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Whether `plane`'s GC job is owed a copy (or its erase, all copies
    /// made) by the host pages written there.
    #[inline]
    fn owes_copies(&self, plane: PlaneId) -> bool {
        let job = &self.jobs[plane.idx()];
        job.victim != NO_BLOCK && (job.debt >= COPY || job.run_booked)
    }

    /// Keeps [`every_plane_owes`](Self::every_plane_owes)'s count (only
    /// where it is asked) and [`takes`](Self::takes), after `plane`'s job
    /// or debt changed.
    #[inline]
    fn note_owing(&mut self, plane: PlaneId) {
        self.note_takes(plane);
        if !self.count_owing {
            return;
        }
        let owes = self.owes_copies(plane);
        if std::mem::replace(&mut self.owing[plane.idx()], owes) != owes {
            if owes {
                self.owing_count += 1;
            } else {
                self.owing_count -= 1;
            }
        }
    }

    /// Whether every plane's GC is owed copies: with `gc.debt =
    /// "background"` behind a write buffer, where a destage would have to
    /// pay them first.
    pub(super) fn every_plane_owes(&self) -> bool {
        if !self.count_owing {
            return false;
        }
        debug_assert_eq!(
            self.owing_count as usize,
            self.stripe.iter().filter(|&&plane| self.owes_copies(plane)).count(),
            "a change of a job's debt or victim not noted"
        );
        self.owing_count as usize == self.stripe.len()
    }

    /// Foreground GC before the host opens a block: reclaims victims until
    /// the plane has more free blocks than its reserve, and below the
    /// trigger until it has gained one (victims worth it only).
    fn collect<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, plane: PlaneId, now: SimTime) -> Result<()> {
        self.collect_by(dev, plane, now, |core, dev, victim| core.reclaim(map, dev, victim, now))
    }

    /// [`collect`](Self::collect)'s choice of victims, each emptied and
    /// erased by `reclaim` (the timed path's, or functional
    /// preconditioning's, `page::functional`).
    fn collect_by(
        &mut self,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
        mut reclaim: impl FnMut(&mut PageCore, &mut Device, BlockId) -> Result<()>,
    ) -> Result<()> {
        // FIFO, random and d-choices may pick full blocks (the models count
        // that waste too); bound the work per call. Past that budget, a plane
        // still at its last free block would refuse the host a page while
        // closed blocks hold stale ones (a random policy on a plane of
        // mostly full blocks, its own copies making more): greedy picks
        // then, as many times again at most.
        let mut budget = self.geo.blocks_per_plane;
        let mut greedy_budget = self.geo.blocks_per_plane;
        let start = self.pool.free_count(plane);
        let (reserve, trigger) = (self.reserve, self.trigger);
        let due = |free: u32| free <= reserve || (free < trigger && free <= start);
        while due(self.pool.free_count(plane)) {
            let victim = if budget > 0 {
                budget -= 1;
                if !self.worth_collecting(plane) {
                    break;
                }
                self.select_victim(dev, plane, now)
            } else if greedy_budget > 0 && self.pool.free_count(plane) <= 1 {
                greedy_budget -= 1;
                self.pool.greedy(plane)
            } else {
                None
            };
            let Some(victim) = victim else { break };
            if self.no_gain(self.pool.valid(victim)) && self.pool.fewest_valid(plane).is_none_or(|v| self.no_gain(v)) {
                break; // the plane is full of live data: nothing to gain
            }
            reclaim(self, dev, victim)?;
        }
        Ok(())
    }

    /// The configured policy's victim in `plane`, one whose live pages fit
    /// in the room GC has there: its free blocks and the rest of its open ones.
    fn select_victim(&mut self, dev: &Device, plane: PlaneId, now: SimTime) -> Option<BlockId> {
        let ppb = self.geo.pages_per_block;
        let open: u32 = self.open_blocks(plane).map(|a| ppb - dev.array.written_pages(BlockId(a))).sum();
        let room = (self.pool.free_count(plane) * ppb + open) << self.unit_shift;
        self.pool.select_victim_fitting(plane, now, room)
    }

    /// Whether `plane` has a victim worth collecting now: any at or below
    /// the reserve, above it only one at most `worth_valid` valid.
    fn worth_collecting(&self, plane: PlaneId) -> bool {
        self.pool.free_count(plane) <= self.reserve
            || self.pool.fewest_valid(plane).is_some_and(|v| v <= self.worth_valid)
    }

    /// A unit of `block` no longer holds valid data. A closed block left
    /// with none is erased once the call is done (`gc.reclaim_empty`): not
    /// at once, as GC inside this call may be holding it as its victim.
    pub(super) fn stale(&mut self, block: BlockId, now: SimTime) {
        self.pool.invalidate(block, now);
        if self.reclaim_empty && self.pool.valid(block) == 0 && self.pool.state(block) == BlockState::Closed {
            self.empties.push(block);
        }
    }

    /// Host entry `x`, whose value was `old`, is trimmed: its data, if
    /// any, becomes stale and the TRIM is journalled.
    fn trimmed(&mut self, dev: &mut Device, x: u32, old: u32, now: SimTime) {
        if is_mapped(old) {
            self.stale(self.geo.block_of(Ppn(old >> self.unit_shift)), now);
            self.stats.trimmed_pages += 1;
            self.journal.trimmed(dev, x);
        }
    }

    /// Erases the blocks [`stale`](Self::stale) found empty, those still
    /// closed and empty (GC may have taken one meanwhile). The test is
    /// inlined: every host write asks, and mostly there are none.
    #[inline(always)]
    fn reclaim_empties(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        if self.empties.is_empty() {
            return Ok(());
        }
        self.reclaim_empties_found(dev, now)
    }

    fn reclaim_empties_found(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        while let Some(block) = self.empties.pop() {
            if self.pool.valid(block) != 0 || self.pool.state(block) != BlockState::Closed {
                continue;
            }
            // Trimmed pages of the block must stay trimmed after a power cut.
            let journalled = self.journal.before_erase(dev, now);
            dev.erase(block, journalled, Cause::Gc)?;
            self.release(block)?;
        }
        Ok(())
    }

    /// Whether reclaiming a block with `valid` live pages (units) frees
    /// nothing: its live data fills as many pages as the block has (with
    /// sub-page units, packed; a victim one unit short of full would
    /// otherwise be copied forever).
    #[inline]
    fn no_gain(&self, valid: u32) -> bool {
        (valid + (1 << self.unit_shift) - 1) >> self.unit_shift >= self.geo.pages_per_block
    }

    fn reclaim<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, victim: BlockId, now: SimTime) -> Result<()> {
        self.stats.gc_invocations += 1;
        self.pool.start_reclaim(victim);
        let plane = self.geo.plane_of(victim);
        let mut reads_done = now;
        let mut live = std::mem::take(&mut self.live_scratch);
        let cause = self.scan_live(map, dev, victim, &mut live);
        let result = if map.streams() == 1 {
            // GC may run inside a host allocation: its stream comes back
            // after. (A map of one stream sends every entry alike.)
            let gc_stream = self.gc_stream(map, 0);
            let host_stream = std::mem::replace(&mut self.stream, gc_stream);
            let copied = self.copy_live(map, dev, victim, plane, &live, now, &mut reads_done);
            self.stream = host_stream;
            copied
        } else {
            self.copy_streams(map, dev, victim, plane, &live, now, &mut reads_done)
        };
        self.live_scratch = live;
        result?;
        self.erase_victim(map, dev, victim, now, reads_done, cause)
    }

    /// Erases GC's `victim`, every live page copied (its last read done by
    /// `reads_done`), once the TRIMs pending at `now` are journalled; the
    /// map hears that the victim is done.
    fn erase_victim<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        victim: BlockId,
        now: SimTime,
        reads_done: SimTime,
        cause: Cause,
    ) -> Result<()> {
        let journalled = self.journal.before_erase(dev, now);
        dev.erase(victim, reads_done.max(journalled), cause)?;
        let plane = self.geo.plane_of(victim);
        map.victim_done(plane);
        if map.background_backlog() > 0 {
            dev.wake(plane);
        }
        self.release(victim)
    }

    /// Fills `live` with the victim's live pages; returns the cause its
    /// erase is counted under: a block written mostly with the map's own
    /// pages is the map's cost.
    fn scan_live<M: MapTable>(&self, map: &M, dev: &Device, victim: BlockId, live: &mut Vec<u32>) -> Cause {
        let units = self.written_units(dev, victim);
        if let Some(bits) = map.live_bits() {
            live.clear();
            live_in(bits, units.clone(), live);
            if cfg!(debug_assertions) {
                let by_entry = self.live_by_entry(map, dev, victim, units);
                assert_eq!(live[..], by_entry[..], "{victim}: live units by bit and by entry");
            }
            return Cause::Gc;
        }
        self.scan_live_by_entry(map, dev, units, live)
    }

    /// The unit addresses `victim` has written (with one unit a page, PPNs).
    fn written_units(&self, dev: &Device, victim: BlockId) -> Range<u32> {
        let first = self.geo.ppn(victim, 0).0 << self.unit_shift;
        first..first + (dev.array.written_pages(victim) << self.unit_shift)
    }

    /// The live units among `units` of `victim` asked entry by entry, for
    /// debug builds to check a map's live bits against (such a map keeps
    /// no pages of its own, so the erase is GC's).
    fn live_by_entry<M: MapTable>(&self, map: &M, dev: &Device, victim: BlockId, units: Range<u32>) -> Vec<u32> {
        let mut by_entry = Vec::new();
        let cause = self.scan_live_by_entry(map, dev, units, &mut by_entry);
        assert_eq!(cause, Cause::Gc, "{victim}: a map with live bits holds pages of its own");
        by_entry
    }

    /// A new job's scan of `victim`: the span of its live units in the
    /// map's live bits, or their list; sets the job's cause, `next` and
    /// `end`. Returns how many units are live.
    fn scan_job<M: MapTable>(&self, map: &M, dev: &Device, victim: BlockId, job: &mut GcJob) -> u32 {
        job.pages.clear();
        let Some(bits) = map.live_bits() else {
            job.cause = Some(self.scan_live(map, dev, victim, &mut job.pages));
            (job.next, job.end) = (0, job.pages.len());
            return job.pages.len() as u32;
        };
        let units = self.written_units(dev, victim);
        let (live, end) = live_span(bits, units.clone());
        if cfg!(debug_assertions) {
            let by_entry = self.live_by_entry(map, dev, victim, units.clone());
            let by_entry_span = (by_entry.len() as u32, by_entry.last().map_or(units.start, |&u| u + 1));
            assert_eq!((live, end), by_entry_span, "{victim}: live units by bit and by entry");
        }
        job.cause = Some(Cause::Gc);
        (job.next, job.end) = (units.start as usize, end as usize);
        live
    }

    /// [`scan_live`](Self::scan_live) of units `units`, each asked
    /// [`MapTable::is_live`].
    fn scan_live_by_entry<M: MapTable>(&self, map: &M, dev: &Device, units: Range<u32>, live: &mut Vec<u32>) -> Cause {
        // A branch-free pass: the forward-map lookups are independent cache
        // misses the CPU can overlap, where a branch on each would serialize
        // them (this loop dominated run time).
        let (first, written) = (units.start, units.len() as u32);
        live.resize(written as usize, 0);
        let (mut n, mut table_pages) = (0, 0);
        for src in first..first + written {
            let lpn = dev.array.oob_unit_raw(src);
            // Stale or trimmed pages fail this test: the lazy backward map says so.
            let is_live = map.is_live(lpn, src);
            live[n] = src;
            n += is_live as usize;
            table_pages += (lpn >= self.logical && lpn != u32::MAX) as u32;
        }
        live.truncate(n);
        if 2 * table_pages > written { Cause::Mapping } else { Cause::Gc }
    }

    /// The stream GC copies entry `x` into: the core's own GC frontier (the
    /// stream it adds after the map's, `gc.frontier = "separate"`), else
    /// the map's choice (stream 0 for a map without streams).
    fn gc_stream<M: MapTable>(&self, map: &mut M, x: u32) -> usize {
        self.own_gc_stream(map).unwrap_or_else(|| map.gc_stream(x))
    }

    /// The core's own GC frontier, if it adds one.
    fn own_gc_stream<M: MapTable>(&self, map: &M) -> Option<usize> {
        (self.streams > map.streams()).then_some(self.streams - 1)
    }

    /// `plane`'s active-block slot of GC's own stream (the last).
    #[inline]
    fn gc_slot(&self, plane: PlaneId) -> usize {
        plane.idx() * self.streams + self.streams - 1
    }

    /// The cause a GC copy of a page holding `lpn` is counted under: the
    /// map's own pages are its cost.
    #[inline]
    fn copy_cause<M: MapTable>(&self) -> CopyCauses {
        CopyCauses { logical: self.logical, table_pages: M::TABLE_PAGES }
    }

    /// Multi-plane GC's next row on the die of `plane`: the die's stripe is
    /// its planes' GC blocks, filled a row (one page offset across the
    /// planes, in plane order) at a time, so a row's copies can be one
    /// multi-plane program. Returns the row's page offset and the first
    /// plane (in the die) whose page in it is not yet written. Once every
    /// block is full, or the blocks are out of step (after a power cut's
    /// recovery, or copies GC made in its own plane meanwhile), a new row
    /// of blocks is opened (unaligned blocks are closed with their last
    /// pages unwritten), only if every plane of the die has two free blocks
    /// or more: it takes one from each, leaving each plane a block for its
    /// own GC. `None` when the stripe cannot take a copy; the copies then
    /// stay in the victim's plane, which keeps the guarantee that GC with
    /// one free block can always finish its victim.
    fn stripe_row<M: MapTable>(
        &mut self,
        map: &M,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
    ) -> Option<(u32, u32)> {
        let ppd = self.geo.planes_per_die;
        let first = plane.0 - plane.0 % ppd;
        let (slot0, streams) = (self.gc_slot(PlaneId(first)), self.streams);
        let slot = |q: u32| slot0 + q as usize * streams;
        let written = |a: u32| if a == NO_BLOCK { u32::MAX } else { dev.array.written_pages(BlockId(a)) };
        // In step: the die's first planes at `row`, the rest one page behind.
        let row = written(self.active[slot(0)]);
        let mut behind = None;
        let in_step = (1..ppd).all(|q| {
            let w = written(self.active[slot(q)]);
            if behind.is_none() && w == row {
                return true;
            }
            behind = behind.or(Some(q));
            w.wrapping_add(1) == row
        });
        match behind {
            Some(q) if in_step => return Some((row - 1, q)),
            None if in_step && row < self.geo.pages_per_block => return Some((row, 0)),
            _ => {}
        }
        if (0..ppd).any(|q| self.pool.free_count(PlaneId(first + q)) < 2) {
            return None;
        }
        for q in 0..ppd {
            if self.active[slot(q)] != NO_BLOCK {
                self.pool.close(BlockId(self.active[slot(q)]), now);
            }
            self.active[slot(q)] = self.take_free(PlaneId(first + q))?.0;
        }
        // The blocks came out of the planes' free space as a host block
        // would: below the trigger, their own GC is due.
        for q in 0..ppd {
            if self.pool.free_count(PlaneId(first + q)) < self.trigger {
                self.start_job(map, dev, PlaneId(first + q), now);
            }
        }
        Some((0, 0))
    }

    /// Multi-plane GC: copies live pages into the die's stripe of `plane`,
    /// a row a batch, at least `want` copies (fewer if the sources run out
    /// or the stripe cannot take them) and on to the end of the row.
    /// Returns the steps made (copies, and erases of victims emptied).
    fn stripe_copies<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        want: usize,
        now: SimTime,
    ) -> Result<usize> {
        let ppd = self.geo.planes_per_die;
        let first = plane.0 - plane.0 % ppd;
        let mut steps = 0;
        // (An error ends the run: the scratch need not come back then.)
        let mut row = std::mem::take(&mut self.row_scratch);
        while steps < want.max(1) {
            let Some((offset, from)) = self.stripe_row(map, dev, plane, now) else { break };
            row.clear();
            let mut emptied = 0u64;
            for q in from..ppd {
                let to = self.geo.ppn(BlockId(self.active[self.gc_slot(PlaneId(first + q))]), offset);
                let Some(src) = self.urgent_job_page(map, dev, first, q, &mut emptied) else { break };
                row.push((src, to));
            }
            if !row.is_empty() {
                dev.copy_scatter(&row, now, self.copy_cause::<M>())?;
                for &(src, to) in row.iter() {
                    map.moved(dev, dev.array.oob_unit_raw(to.0), src, to, now);
                    self.pool.transfer_valid(self.geo.block_of(Ppn(src)), self.geo.block_of(to), 1, now);
                }
                self.stats.gc_pages_copied += row.len() as u64;
                steps += row.len();
            }
            // Victims emptied are erased once their last copies are read.
            for q in 0..ppd {
                if emptied & (1 << q) != 0 {
                    self.end_job(map, dev, PlaneId(first + q), now)?;
                    steps += 1;
                }
            }
            if row.len() < (ppd - from) as usize && emptied == 0 {
                break; // the sources ran out
            }
        }
        self.row_scratch = row;
        Ok(steps)
    }

    /// The next live page of the die's GC jobs for the stripe's page in
    /// plane `slot` (of the die), taken from the victim of the plane with
    /// the fewest free blocks (so a plane the host avoids, having few, is
    /// not left waiting for copies only its own host pages would pay for;
    /// copies leave fuller planes for emptier ones). A plane with no free
    /// block takes its own copies only: its GC block's room is all it has
    /// to finish a victim in (after a power cut, one half copied whose job
    /// was lost; drawn by the conformance grid). Planes whose victim has no
    /// live page left are marked in `emptied`.
    fn urgent_job_page<M: MapTable>(
        &mut self,
        map: &M,
        dev: &Device,
        first: u32,
        slot: u32,
        emptied: &mut u64,
    ) -> Option<u32> {
        let ppd = self.geo.planes_per_die;
        let own_only = self.pool.free_count(PlaneId(first + slot)) == 0;
        loop {
            let q = (0..ppd)
                .filter(|&q| *emptied & (1 << q) == 0 && self.jobs[(first + q) as usize].victim != NO_BLOCK)
                .filter(|&q| !own_only || q == slot)
                .min_by_key(|&q| (self.pool.free_count(PlaneId(first + q)), q != slot))?;
            let job = &mut self.jobs[(first + q) as usize];
            if let Some(src) = next_live(map, dev, job) {
                return Some(src);
            }
            *emptied |= 1 << q;
        }
    }

    /// Gives `plane` a preemptible GC job if it has none and a victim worth
    /// reclaiming, and asks the engine for background time for it.
    fn start_job<M: MapTable>(&mut self, map: &M, dev: &mut Device, plane: PlaneId, now: SimTime) {
        let ppb = self.geo.pages_per_block << self.unit_shift;
        if self.jobs[plane.idx()].victim != NO_BLOCK || !self.worth_collecting(plane) {
            return;
        }
        let Some(victim) = self.select_victim(dev, plane, now) else { return };
        if self.no_gain(self.pool.valid(victim)) && self.pool.fewest_valid(plane).is_none_or(|v| self.no_gain(v)) {
            return; // the plane is full of live data: nothing to gain
        }
        self.stats.gc_invocations += 1;
        self.pool.start_reclaim(victim);
        let mut job = std::mem::take(&mut self.jobs[plane.idx()]);
        let live = self.scan_job(map, dev, victim, &mut job);
        job.victim = victim.0;
        job.prefetched = 0;
        job.debt = 0;
        job.run_booked = false;
        job.held = u32::MAX;
        // Enough copies per host page that the copies are done one host page
        // before the host has filled what the victim frees, and that page
        // pays for the erase (in units: a host page is that many units).
        // Done exactly then, the erase would come a page late, and the
        // plane's free blocks drift down a block per victim to the reserve.
        let room = ppb.saturating_sub(live).saturating_sub(1 << self.unit_shift).max(1);
        job.rate = ((COPY * live) << self.unit_shift).div_ceil(room);
        self.jobs[plane.idx()] = job;
        self.note_owing(plane);
        dev.wake(plane);
    }

    /// Up to `max` steps of `plane`'s GC job at `now`: the next live pages
    /// copied as one run into the plane's active block (as many as fit),
    /// or the victim erased once none is left. Returns the steps taken
    /// (0: the plane has no job). Its callers off the timed host write's
    /// path are left to the compiler (forced out of line, the buffered
    /// foundation run took 12 instructions a request more).
    fn gc_steps<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
        max: u32,
    ) -> Result<u32> {
        self.gc_steps_inline(map, dev, plane, now, max)
    }

    /// [`gc_steps`](Self::gc_steps)'s body, inlined into the timed host
    /// write's path (`pay_gc_debt`), where the call cost ~28 instructions a
    /// request.
    #[inline(always)]
    fn gc_steps_inline<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
        max: u32,
    ) -> Result<u32> {
        let p = plane.idx();
        if self.jobs[p].victim == NO_BLOCK {
            return Ok(0);
        }
        let victim = BlockId(self.jobs[p].victim);
        if self.multi_plane_gc {
            let steps = self.stripe_copies(map, dev, plane, max as usize, now)?;
            if steps > 0 {
                return Ok(steps as u32);
            }
        }
        // No stripe to copy into: the plane's own runs.
        let mut run = std::mem::take(&mut self.live_scratch);
        let copied = self.copy_job_runs(map, dev, plane, victim, now, max, &mut run);
        self.live_scratch = run;
        let copied = copied?;
        if copied > 0 {
            // The next pages' entries, tested at the next step: cache misses
            // at random places, so start them now (those not started at an
            // earlier step: a background step is often one copy).
            let job = &mut self.jobs[p];
            let to = (job.next + 8).min(job.end);
            let from = job.next.max(job.prefetched).min(to);
            if map.live_bits().is_some() {
                for u in from..to {
                    map.prefetch(Lpn(dev.array.oob_unit_raw(u as u32)));
                }
            } else {
                for &src in &job.pages[from..to] {
                    map.prefetch(Lpn(dev.array.oob_unit_raw(src)));
                }
            }
            job.prefetched = to;
            return Ok(copied);
        }
        self.end_job(map, dev, plane, now)?;
        Ok(1)
    }

    /// Erases `plane`'s GC victim, every live page copied, and gives the
    /// plane its next job if it is still below its trigger (victims that
    /// freed little).
    fn end_job<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, plane: PlaneId, now: SimTime) -> Result<()> {
        let job = &mut self.jobs[plane.idx()];
        let victim = BlockId(job.victim);
        let cause = job.cause.take().unwrap_or(Cause::Gc);
        job.victim = NO_BLOCK;
        // The job's reads are booked before its erase, in block order.
        self.erase_victim(map, dev, victim, now, now, cause)?;
        if self.pool.free_count(plane) < self.trigger {
            self.start_job(map, dev, plane, now);
        }
        self.note_owing(plane);
        Ok(())
    }

    /// Copies the job's next live pages, at most `max`, in runs: as many
    /// as fit in the active block, and where the map sorts pages into
    /// streams, as many in a row as go to one stream (each run ends where
    /// the next page's stream differs, and that page opens the next run, so
    /// pages are copied in the order, and to the pages, that copying them
    /// one by one would give). `run` is scratch space. Returns the pages
    /// copied: 0 when the victim has no live page left.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn copy_job_runs<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        victim: BlockId,
        now: SimTime,
        max: u32,
        run: &mut Vec<u32>,
    ) -> Result<u32> {
        let p = plane.idx();
        // Whole destination pages of units: a partial one would be padded.
        let upp = 1usize << self.unit_shift;
        let mut left = (max.max(1) as usize + upp - 1) & !(upp - 1);
        let streams = map.streams() > 1;
        let runs_of_one = streams && one_page_gc_runs();
        let mut copied = 0;
        // A live page taken whose stream differed from its run's.
        let mut carried = None;
        while left > 0 {
            let (first, stream) = match carried.take() {
                Some(taken) => taken,
                None => {
                    let Some(src) = next_live(map, dev, &mut self.jobs[p]) else { break };
                    (src, self.gc_stream(map, dev.array.oob_unit_raw(src)))
                }
            };
            // GC may run inside a host allocation: its stream comes back after.
            let host_stream = std::mem::replace(&mut self.stream, stream);
            let page = self.next_page(map, dev, plane, now, true);
            self.stream = host_stream;
            let dst = page?
                .ok_or_else(|| Error::invariant("page", format!("GC of {victim} found no free page in its plane")))?;
            let room = ((self.geo.pages_per_block - self.geo.page_in_block(dst)) as usize) << self.unit_shift;
            let limit = if runs_of_one { 1 } else { left.min(room) };
            if !streams && map.live_bits().is_none() {
                // One stream, one run: gathered in place over the job's list
                // (its pages before the job's next are done with), not
                // pushed into `run`: 0.9% of the foundation run's
                // instructions less.
                let job = &mut self.jobs[p];
                debug_assert_eq!(job.pages[job.next - 1], first, "the run's first page, just taken");
                let mut pages = std::mem::take(&mut job.pages);
                let (from, len) = gather_live(map, dev, &mut pages, &mut job.next, limit);
                let mut held = job.held;
                let moved = self.move_live(map, dev, victim, (&pages[from..from + len], None), dst, now, &mut held);
                self.jobs[p].pages = pages;
                moved?;
                self.jobs[p].held = held;
                copied += len as u32;
                break;
            }
            run.clear();
            run.reserve(limit);
            run.push(first);
            // `gc_stream` in the loop, its part from `self` read before the
            // job is borrowed (the job once, not a page).
            let own_stream = self.own_gc_stream(map);
            let job = &mut self.jobs[p];
            // Every live unit from the run's first to the job's next, where
            // the run was taken from the live bits.
            let mut span = None;
            match map.live_bits() {
                // One stream, one run: the live bits name its pages.
                Some(bits) if !streams => {
                    take_live(bits, &mut job.next, job.end, limit, run);
                    span = Some(first..job.next as u32);
                }
                _ => {
                    while run.len() < limit {
                        let Some(src) = next_live(map, dev, job) else { break };
                        if streams {
                            let next_stream = own_stream.unwrap_or_else(|| map.gc_stream(dev.array.oob_unit_raw(src)));
                            if next_stream != stream {
                                carried = Some((src, next_stream));
                                break;
                            }
                        }
                        run.push(src);
                    }
                }
            }
            let mut held = self.jobs[p].held;
            self.move_live(map, dev, victim, (run, span), dst, now, &mut held)?;
            self.jobs[p].held = held;
            copied += run.len() as u32;
            left = left.saturating_sub(run.len());
            if runs_of_one || (carried.is_none() && (run.len() < limit || !streams)) {
                break; // a test's one page, the victim done, or one stream's run all there is
            }
        }
        Ok(copied)
    }

    /// Copies `run`, live pages of `victim`, to consecutive pages from `dst`
    /// and moves their map entries and valid counts along; returns when the
    /// last page's data has left the victim.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn move_live<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        victim: BlockId,
        (run, span): (&[u32], Option<Range<u32>>),
        dst: Ppn,
        now: SimTime,
        held: &mut u32,
    ) -> Result<SimTime> {
        let cause_of = self.copy_cause::<M>();
        let reads_done = if self.unit_shift == 0 {
            dev.copy_run(run, dst, now, cause_of)?
        } else {
            let upp = 1 << self.unit_shift;
            self.stats.units_padded += (run.len().next_multiple_of(upp) - run.len()) as u64;
            dev.copy_units(run, dst, now, cause_of, held)?
        };
        // Packed from `dst` on: the i-th unit lands at unit address
        // `dst × units per page + i` (the map's value, a PPN for page units).
        match span {
            Some(span) => map.moved_span(dev, run, dst.0 << self.unit_shift, now, span),
            None => map.moved_run(dev, run, dst.0 << self.unit_shift, now),
        }
        self.pool.transfer_valid(victim, self.geo.block_of(dst), run.len() as u32, now);
        self.stats.gc_pages_copied += run.len() as u64;
        Ok(reads_done)
    }

    /// Makes the copies the host write about to land on `plane` owes its
    /// GC job, ahead of it, as few runs as fit.
    #[inline(always)]
    fn pay_gc_debt<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, plane: PlaneId, now: SimTime) -> Result<()> {
        self.accrue_gc_debt(plane);
        while self.jobs[plane.idx()].debt >= COPY {
            let owed = self.jobs[plane.idx()].debt / COPY;
            let steps = self.gc_steps_inline(map, dev, plane, now, owed)?;
            let job = &mut self.jobs[plane.idx()];
            job.debt = job.debt.saturating_sub(steps * COPY);
            if steps == 0 || job.victim == NO_BLOCK {
                job.debt = 0;
                break;
            }
        }
        self.note_owing(plane);
        Ok(())
    }

    /// Adds a host page's share of `plane`'s GC job to what the job is owed.
    fn accrue_gc_debt(&mut self, plane: PlaneId) {
        let job = &mut self.jobs[plane.idx()];
        if job.victim == NO_BLOCK {
            return;
        }
        job.debt += job.rate;
        if job.next >= job.end {
            // Every copy made: the erase is due now, not when the plane
            // next idles (a busy plane would otherwise open its next block
            // with the victim still unerased).
            job.debt = job.debt.max(COPY);
        }
        self.note_owing(plane);
    }

    /// One background step on `plane` at `at`: of its GC job (with
    /// `gc.debt = "background"` paying off what host pages owe), or of
    /// the map's deferred work while the job is owed no copy (or there is
    /// none). Returns when the plane could take the next step, `None` when
    /// it has nothing left.
    fn background_step<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        at: SimTime,
    ) -> Result<Option<SimTime>> {
        // The map's work goes first while the job is owed no copy: GC's
        // own pace is set by what it is owed. (Asked first: a map without
        // such work answers 0 at no cost, on every GC step.)
        if map.background_backlog() > 0
            && !self.owes_copies(plane)
            && let Some(done) = map.background(self, dev, plane, at)?
        {
            return Ok(Some(done));
        }
        self.gc_step(map, dev, plane, at)
    }

    /// One step of `plane`'s GC job at `at`; with `gc.debt =
    /// "background"` it pays off what host pages owe. Returns when the
    /// plane could take the next step, `None` when it has no job.
    fn gc_step<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        at: SimTime,
    ) -> Result<Option<SimTime>> {
        // With `gc.debt = "background"`, the copies host pages owe are
        // booked as one run a host read can still go before (see
        // `engine::device::preempt`): as a copy a step would be timed, at
        // the cost of a run. Idle GC (nothing owed) steps a copy at a time,
        // as a host write may come to its plane.
        let job = &mut self.jobs[plane.idx()];
        job.run_booked = false;
        let owed = if self.debt_behind { job.debt / COPY } else { 0 };
        let run = owed > 1 && self.unit_shift == 0 && map.moves_in_ram() && dev.can_keep_copy_runs();
        let steps = if run {
            let n = dev.copies_to_keep(plane, owed);
            dev.begin_keeping();
            let steps = self.gc_steps(map, dev, plane, at, n);
            dev.end_keeping();
            steps?
        } else {
            self.gc_steps(map, dev, plane, at, 1)?
        };
        if self.debt_behind {
            let job = &mut self.jobs[plane.idx()];
            job.debt = if job.victim == NO_BLOCK { 0 } else { job.debt.saturating_sub(steps * COPY) };
            job.run_booked = run && job.victim != NO_BLOCK;
            self.note_owing(plane);
        }
        Ok((steps > 0).then(|| dev.plane_free(plane)))
    }

    /// Runs `plane`'s GC job, and any it leads to, to the end until the
    /// plane has `until_free` free blocks, ahead of a host write that found
    /// them gone (counted when there was a job). With several map streams
    /// the jobs after that are left to their pace: run to the end, a plane
    /// whose victims free a tenth of a block each made one write wait for a
    /// dozen of them. With one, all run: with GC's own frontier, a job left
    /// mid-victim after a power cut found no free page for its copies (the
    /// conformance grid, `gc.frontier = "separate"`).
    fn finish_jobs<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
        until_free: u32,
    ) -> Result<()> {
        let until_free = if map.streams() > 1 { until_free } else { u32::MAX };
        let mut waited = false;
        while self.pool.free_count(plane) < until_free && self.gc_steps(map, dev, plane, now, u32::MAX)? > 0 {
            waited = true;
        }
        self.stats.gc_jobs_waited_out += waited as u64;
        Ok(())
    }

    /// Copies live pages each into the stream the map sends it to.
    #[allow(clippy::too_many_arguments)]
    fn copy_streams<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        victim: BlockId,
        plane: PlaneId,
        live: &[u32],
        now: SimTime,
        reads_done: &mut SimTime,
    ) -> Result<()> {
        let mut by_stream = vec![Vec::new(); map.streams()];
        for &src in live {
            by_stream[map.gc_stream(dev.array.oob_lpn_raw(Ppn(src)))].push(src);
        }
        // GC may run inside a host allocation: its stream comes back after.
        let host_stream = self.stream;
        let result = by_stream.iter().enumerate().try_for_each(|(s, pages)| {
            self.stream = s;
            self.copy_live(map, dev, victim, plane, pages, now, reads_done)
        });
        self.stream = host_stream;
        result
    }

    /// Starts loading share `i` of [`EARLY_PREFETCH`] of the forward-map
    /// entries GC's scan of the plane's likely next victim will test: they
    /// are cache misses at random places, the bulk of GC's cost at high
    /// write amplification.
    fn prefetch_victim_share<M: MapTable>(&self, map: &M, dev: &Device, plane: PlaneId, i: u32) {
        if let Some(next) = self.pool.likely_victim(plane) {
            let w = dev.array.written_pages(next);
            self.prefetch_entries(map, dev, next, i * w / EARLY_PREFETCH..(i + 1) * w / EARLY_PREFETCH);
        }
    }

    fn prefetch_entries<M: MapTable>(&self, map: &M, dev: &Device, block: BlockId, pages: Range<u32>) {
        let first = self.geo.ppn(block, 0).0;
        for src in first + pages.start..first + pages.end {
            map.prefetch(Lpn(dev.array.oob_lpn_raw(Ppn(src))));
        }
    }

    /// Copies the live pages of `victim` into its plane, a run per
    /// destination block, in chunks: between chunks it prefetches a share of
    /// the next victim's entries, spread out because a burst of prefetches
    /// outruns the CPU's outstanding-miss slots and most are lost.
    #[allow(clippy::too_many_arguments)]
    fn copy_live<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        victim: BlockId,
        plane: PlaneId,
        live: &[u32],
        now: SimTime,
        reads_done: &mut SimTime,
    ) -> Result<()> {
        // In pages' worth of units, so only a victim's last page is padded.
        let chunk = 16usize << self.unit_shift;
        let next = self.pool.likely_victim(plane).map(|b| (b, dev.array.written_pages(b)));
        let per_chunk = next.map_or(0, |(_, w)| w.div_ceil(live.len().div_ceil(chunk).max(1) as u32));
        let mut prefetched = 0;
        let mut held = u32::MAX;
        let mut rest = live;
        while !rest.is_empty() {
            let dst = self
                .next_page(map, dev, plane, now, true)?
                .ok_or_else(|| Error::invariant("page", format!("GC of {victim} found no free page in its plane")))?;
            let room = ((self.geo.pages_per_block - self.geo.page_in_block(dst)) as usize) << self.unit_shift;
            let (run, after) = rest.split_at(room.min(rest.len()).min(chunk));
            if let Some((b, written)) = next {
                let end = (prefetched + per_chunk).min(written);
                self.prefetch_entries(map, dev, b, prefetched..end);
                prefetched = end;
            }
            *reads_done = (*reads_done).max(self.move_live(map, dev, victim, (run, None), dst, now, &mut held)?);
            rest = after;
        }
        if let Some((b, written)) = next {
            self.prefetch_entries(map, dev, b, prefetched..written);
        }
        Ok(())
    }

    /// Looks up the entry a write of `lpn` replaces; a partial write of a
    /// mapped one reads its old page first (read-modify-write). Returns the
    /// old entry and when the write's data may go to flash.
    #[inline]
    fn lookup_for_write<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        lpn: Lpn,
        full: bool,
        now: SimTime,
        ready: SimTime,
    ) -> Result<(u32, SimTime)> {
        let (old, known) = map.lookup(self, dev, lpn, now)?;
        let mut start = if M::SERIAL_WRITES { ready.max(known) } else { ready };
        if !full && is_mapped(old) {
            start = dev.read(Ppn(old >> self.unit_shift), start.max(known), Cause::Host)?;
            self.stats.rmw_reads += 1;
        }
        Ok((old, start))
    }

    /// Writes `pieces`, runs of sectors of one logical page each with its
    /// bytes (payload mode), as one page: one program, and with any sector
    /// left out, one read of the old page (read-modify-write).
    #[inline(always)]
    fn write_page<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        pieces: &[(PageChunk, Option<&[u8]>)],
        now: SimTime,
        ready: SimTime,
    ) -> Result<SimTime> {
        let (c, data) = pieces[0];
        debug_assert!(pieces.iter().all(|(p, _)| p.lpn == c.lpn), "pieces of one page");
        // Runs of one page are apart (adjacent ones would be one run): several never fill it.
        let full = pieces.len() == 1 && c.is_full_page(self.geo.sectors_per_page);
        let (old, start) = self.lookup_for_write(map, dev, c.lpn, full, now, ready)?;
        // Assemble a partial page now: GC below may move or erase the old page.
        if data.is_some() && !full {
            // Only a mapped page has data: NEVER and TRIMMED are not page numbers.
            match is_mapped(old).then(|| dev.array.page_data(Ppn(old))).flatten() {
                Some(bytes) => self.scratch.copy_from_slice(bytes),
                None => self.scratch.fill(0),
            }
            for &(p, bytes) in pieces {
                let bytes = bytes.ok_or_else(|| Error::invariant("page", "a write batch mixes data and none"))?;
                self.scratch[p.byte_range()].copy_from_slice(&bytes[p.buf_range()]);
            }
        }
        if is_mapped(old) {
            self.stale(self.geo.block_of(Ppn(old)), now);
        }
        // Unmapped while GC may run, so GC does not copy the page being replaced.
        map.set(c.lpn, TRIMMED);
        self.stream = map.host_stream(c.lpn, old);
        let ppn = self.alloc_host_page(map, dev, now, true);
        self.stream = 0;
        let ppn = ppn?;
        let payload = match data {
            // A full page goes to flash straight from the host buffer.
            Some(data) if full => Payload::Bytes(&data[c.buf_range()]),
            Some(_) => Payload::Bytes(&self.scratch),
            None => Payload::None,
        };
        let done = dev.program_batched(ppn, c.lpn, start, Cause::Host, payload)?;
        map.set(c.lpn, ppn.0);
        self.pool.add_valid(self.geo.block_of(ppn), now);
        Ok(done)
    }

    /// Puts a never-written page on flash at no cost, as if written before
    /// the run; returns where it is now (the map may move it at once).
    fn place<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<u32> {
        let ppn = self.alloc_host_page(map, dev, now, false)?;
        dev.place(ppn, lpn, Payload::None)?;
        self.pool.add_valid(self.geo.block_of(ppn), now);
        self.stats.placed_reads += 1;
        map.placed(self, dev, lpn, ppn, now)?;
        Ok(map.get(lpn.0))
    }
}

/// The order in which consecutive allocations visit planes: the first unit
/// of `order` varies fastest.
fn stripe_positions(stripe: &[PlaneId]) -> Vec<u32> {
    let mut pos = vec![0; stripe.len()];
    for (i, plane) in stripe.iter().enumerate() {
        pos[plane.idx()] = i as u32;
    }
    pos
}

fn stripe_sequence(geo: &Geometry, order: &[StripeUnit]) -> Vec<PlaneId> {
    let size = |u: StripeUnit| match u {
        StripeUnit::Channel => geo.channels,
        StripeUnit::Chip => geo.chips_per_channel,
        StripeUnit::Die => geo.dies_per_chip,
        StripeUnit::Plane => geo.planes_per_die,
    };
    (0..geo.planes)
        .map(|i| {
            let (mut rem, mut coord) = (i, [0u32; 4]);
            for &u in order {
                coord[u as usize] = rem % size(u);
                rem /= size(u);
            }
            geo.plane_id(coord[0], coord[1], coord[2], coord[3])
        })
        .collect()
}

impl<M: MapTable> PageMapped<M> {
    /// [`Ftl::write_batch`] with a unit a page: a span at a time, but spans
    /// in a row within one page (a buffered page's dirty runs, apart) as one
    /// page write, as a controller merges them: one read of the old page and
    /// one program, where a write a run would read and program it per run.
    fn write_pages<'a>(
        &mut self,
        dev: &mut Device,
        spans: &[(Span, Option<&'a [u8]>)],
        now: SimTime,
        ready: SimTime,
    ) -> Result<SimTime> {
        let spp = self.core.geo.sectors_per_page;
        let one_page = |span: Span| {
            let mut chunks = page_chunks(span, spp);
            chunks.next().filter(|_| chunks.next().is_none())
        };
        let mut done = ready;
        let mut rest = spans;
        while let Some((&(span, data), after)) = rest.split_first() {
            // The next spans in a row within this one's page.
            let page = one_page(span);
            let same_page = |&(s, d): &(Span, Option<&'a [u8]>)| {
                page.and_then(|c| one_page(s).filter(|p| p.lpn == c.lpn)).map(|p| (p, d))
            };
            let n = match page.filter(|_| after.first().and_then(same_page).is_some()) {
                None => {
                    done = done.max(self.write(dev, span, now, ready, data)?);
                    1
                }
                Some(c) => {
                    let pieces: Vec<_> = std::iter::once((c, data)).chain(after.iter().map_while(same_page)).collect();
                    self.map.begin_request();
                    let written = self.core.write_page(&mut self.map, dev, &pieces, now, ready)?;
                    self.core.reclaim_empties(dev, now)?;
                    done = done.max(written).max(self.map.end_request());
                    pieces.len()
                }
            };
            rest = &rest[n..];
        }
        Ok(done)
    }
}

impl<M: MapTable> Ftl for PageMapped<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn prefetch(&self, span: Span) {
        self.map.prefetch(self.core.first_entry(span));
    }

    fn prefetch_mapped(&self, span: Span) {
        self.map.prefetch_mapped(self.core.first_entry(span));
    }

    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let (core, map) = (&mut self.core, &mut self.map);
        map.begin_request();
        if core.unit_shift != 0 {
            let done = core.read_units(map, dev, span, now, out)?;
            return Ok(done.max(map.end_request()));
        }
        let mut done = now;
        for c in page_chunks(span, core.geo.sectors_per_page) {
            let (mut m, known) = map.lookup(core, dev, c.lpn, now)?;
            if m == NEVER && core.unwritten == UnwrittenReads::Place {
                m = core.place(map, dev, c.lpn, now)?;
            }
            if is_mapped(m) {
                done = done.max(dev.read(Ppn(m), known, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match is_mapped(m).then(|| dev.array.page_data(Ppn(m))).flatten() {
                    Some(page) => dst.copy_from_slice(&page[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(done.max(map.end_request()))
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        self.map.begin_request();
        let mut done = ready;
        if self.core.unit_shift != 0 {
            done = self.core.write_units(&mut self.map, dev, &[(span, data)], now, ready)?;
        } else {
            // The call's pages may form multi-plane groups (`timing.multi_plane`).
            dev.begin_batch();
            let written = page_chunks(span, self.core.geo.sectors_per_page).try_fold(done, |d, c| {
                Ok(d.max(self.core.write_page(&mut self.map, dev, &[(c, data)], now, ready)?))
            });
            let batch_done = dev.end_batch();
            done = written?.max(batch_done);
        }
        self.core.reclaim_empties(dev, now)?;
        Ok(done.max(self.map.end_request()))
    }

    fn write_batch(
        &mut self,
        dev: &mut Device,
        spans: &[(Span, Option<&[u8]>)],
        now: SimTime,
        ready: SimTime,
    ) -> Result<SimTime> {
        if self.core.unit_shift == 0 {
            // One batch: the spans' pages may form multi-plane groups.
            dev.begin_batch();
            let written = self.write_pages(dev, spans, now, ready);
            let batch_done = dev.end_batch();
            return Ok(written?.max(batch_done));
        }
        self.map.begin_request();
        let done = self.core.write_units(&mut self.map, dev, spans, now, ready)?;
        self.core.reclaim_empties(dev, now)?;
        Ok(done.max(self.map.end_request()))
    }

    fn flush(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let done = self.map.flush(&mut self.core, dev, now)?;
        Ok(done.max(self.core.journal.flush(dev, now)))
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        let (core, map) = (&mut self.core, &mut self.map);
        map.begin_request();
        let mut done = now;
        // Map entries are units (pages with one unit a page).
        let pages = whole_pages(span, core.geo.sectors_per_page);
        let (mut x, end) = (pages.start << core.unit_shift, pages.end << core.unit_shift);
        let group = map.trim_group_size();
        while x < end {
            if group > 0 && x % group == 0 && end - x >= group {
                for y in x..x + group {
                    core.trimmed(dev, y, map.get(y), now);
                }
                done = done.max(map.trim_group(core, dev, x / group, now)?);
                x += group;
                continue;
            }
            let (old, known) = map.lookup(core, dev, Lpn(x), now)?;
            done = done.max(known);
            core.trimmed(dev, x, old, now);
            map.set(Lpn(x), TRIMMED);
            x += 1;
        }
        core.reclaim_empties(dev, now)?;
        Ok(done.max(map.end_request()))
    }

    fn background(&mut self, dev: &mut Device, plane: PlaneId, at: SimTime) -> Result<Option<SimTime>> {
        self.core.background_step(&mut self.map, dev, plane, at)
    }

    fn settle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>> {
        let Some(done) = self.map.settle(&mut self.core, dev, now)? else { return Ok(None) };
        self.core.reclaim_empties(dev, now)?;
        Ok(Some(done))
    }

    fn destage_must_wait(&self) -> bool {
        self.core.every_plane_owes()
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.core.stats.clone();
        self.map.stats(&mut s);
        s
    }

    fn ram_accesses(&self) -> u64 {
        let mut s = FtlStats::default();
        self.map.stats(&mut s);
        s.ram_accesses
    }

    fn reset_stats(&mut self) {
        self.core.stats = FtlStats::default();
        self.map.reset_stats();
    }

    fn saved_state(&mut self) -> Option<&mut dyn super::SavedState> {
        Some(self)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        self.map.ram_bytes(&self.core.geo)
    }

    fn blocks_with_valid_data(&self) -> u64 {
        self.core.pool.blocks_with_valid_data()
    }

    fn physical(&self, lpn: Lpn) -> Option<Ppn> {
        if self.core.unit_shift != 0 {
            return self.core.physical_unit(&self.map, lpn);
        }
        let v = self.map.get(lpn.0);
        is_mapped(v).then_some(Ppn(v))
    }

    fn page_data<'a>(&'a self, dev: &'a Device, lpn: Lpn) -> Option<std::borrow::Cow<'a, [u8]>> {
        if self.core.unit_shift != 0 {
            return self.core.page_of_units(&self.map, dev, lpn).map(std::borrow::Cow::Owned);
        }
        self.physical(lpn).and_then(|p| dev.array.page_data(p)).map(std::borrow::Cow::Borrowed)
    }

    fn precondition_functional(
        &mut self,
        dev: &mut Device,
        c: &Conditioning,
        rng: &mut crate::rng::SimRng,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        match self.map.as_dram() {
            Some(map) => functional::precondition(&mut self.core, map, dev, c, rng, tick),
            None => Err(functional::unsupported(format!("this drive runs the '{}' FTL", M::NAME))),
        }
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        self.core.check(&self.map, dev)?;
        self.map.check(dev)
    }

    /// Rebuilds the map from a scan of every page's OOB
    /// ([`recovery::scan`]); GC jobs, block states and the map's cache
    /// start afresh.
    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        if self.core.unit_shift > 0 {
            // The scan reads one LPN per page; units would need one per unit.
            return Err(Error::config(
                "ftl.map_unit_bytes",
                "power cuts are not modelled with mapping units smaller than the page".to_string(),
            ));
        }
        let scan = recovery::scan(dev, now, self.map.entries(), self.core.logical)?;
        self.core.journal.lose();
        let values: Vec<u32> = (0..scan.newest.len())
            .map(|x| match scan.newest[x] {
                recovery::NONE if scan.trimmed.get(x).copied().unwrap_or(false) => TRIMMED,
                recovery::NONE => NEVER,
                p => p,
            })
            .collect();
        let mut report = scan.report;
        self.core.restore(&scan.written, &scan.valid, report.recovered_at);
        let done = self.map.recover(&mut self.core, dev, &values, report.recovered_at)?;
        report.recovery_us += (done - report.recovered_at).as_us_f64();
        report.recovered_at = done;
        Ok(report)
    }
}

impl PageCore {
    /// The map entry of `span`'s first sector (entries are mapping units:
    /// pages with one unit a page).
    #[inline]
    fn first_entry(&self, span: Span) -> Lpn {
        let spp = (self.geo.sectors_per_page >> self.unit_shift) as u64;
        Lpn(super::split_sector(span.start.0, spp).0 as u32)
    }

    /// After a power cut: blocks as recovery found them, partly written
    /// ones active again (in any stream: DAC's regions are lost anyway),
    /// no GC job.
    fn restore(&mut self, written: &[u32], valid: &[u32], now: SimTime) {
        self.active.fill(NO_BLOCK);
        for b in self.pool.restore(written, valid, now) {
            let plane = self.geo.plane_of(b).idx();
            let slots = plane * self.streams..(plane + 1) * self.streams;
            match slots.into_iter().find(|&s| self.active[s] == NO_BLOCK) {
                Some(slot) => self.active[slot] = b.0,
                None => self.pool.close(b, now),
            }
        }
        for job in &mut self.jobs {
            *job = GcJob::default();
        }
        self.owing.fill(false);
        self.owing_count = 0;
        self.takes_known = false;
        (self.stream, self.cursor) = (0, 0);
    }
}

impl PageCore {
    fn check<M: MapTable>(&self, map: &M, dev: &Device) -> Result<()> {
        let fail = |reason: String| Err(Error::invariant(M::NAME, reason));
        if !self.staged.is_empty() {
            return fail(format!("{} units staged between host writes", self.staged.len()));
        }
        let mut valid = vec![0u32; self.geo.blocks as usize];
        for x in 0..map.entries() {
            let m = map.get(x);
            if !is_mapped(m) {
                continue;
            }
            // Unit addresses (PPNs with one unit a page).
            let ppn = Ppn(m >> self.unit_shift);
            match dev.array.read(ppn) {
                Ok(_) if dev.array.oob_unit_raw(m) == x => {}
                _ => return fail(format!("entry {x} maps to {ppn} (unit {m}), whose OOB does not hold it")),
            }
            valid[self.geo.block_of(ppn).idx()] += 1;
        }
        for b in 0..self.geo.blocks {
            let block = BlockId(b);
            if self.pool.valid(block) != valid[b as usize] {
                return fail(format!(
                    "{block}: pool counts {} valid pages, the map {}",
                    self.pool.valid(block),
                    valid[b as usize]
                ));
            }
            if self.pool.state(block) == BlockState::Free && dev.array.written_pages(block) != 0 {
                return fail(format!("{block} is free but not erased"));
            }
        }
        for (slot, &a) in self.active.iter().enumerate() {
            if a != NO_BLOCK && self.pool.state(BlockId(a)) != BlockState::Active {
                let (plane, stream) = (slot / self.streams, slot % self.streams);
                return fail(format!("active block {a} of plane {plane}, stream {stream} is not in the active state"));
            }
        }
        if self.takes_known {
            for (pos, &plane) in self.stripe.iter().enumerate() {
                let noted = self.takes[pos / 64] >> (pos % 64) & 1 == 1;
                if noted != self.takes_pages(plane) {
                    return fail(format!(
                        "plane {} noted as taking host pages while owing GC nothing: {noted}, but takes them: {}",
                        plane.0, !noted
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
thread_local! {
    /// Tests compare GC's multi-stream runs with copying a page at a time.
    pub(crate) static ONE_PAGE_GC_RUNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[inline(always)]
fn one_page_gc_runs() -> bool {
    #[cfg(test)]
    return ONE_PAGE_GC_RUNS.get();
    #[cfg(not(test))]
    false
}

/// The causes of a page-mapped FTL's GC copies: the map's own pages (LPNs
/// from `logical` on, where it keeps pages on flash) are its cost, the
/// rest GC's.
#[derive(Clone, Copy)]
struct CopyCauses {
    logical: u32,
    table_pages: bool,
}

impl CauseOf for CopyCauses {
    #[inline(always)]
    fn of(&self, lpn: Lpn) -> Cause {
        if self.table_pages && lpn.0 >= self.logical { Cause::Mapping } else { Cause::Gc }
    }

    #[inline(always)]
    fn uniform(&self) -> Option<Cause> {
        (!self.table_pages).then_some(Cause::Gc)
    }
}

/// Gathers the run that starts with `pages[*next - 1]` (taken live): the
/// live pages after it, up to `limit` in all, moved down to follow it in
/// place, as [`next_live`] would take them one by one (the pages between
/// are done with). Returns where the run starts and its length.
#[inline(always)]
fn gather_live<M: MapTable>(
    map: &M,
    dev: &Device,
    pages: &mut [u32],
    next: &mut usize,
    limit: usize,
) -> (usize, usize) {
    let from = *next - 1;
    let (mut end, mut r) = (*next, *next);
    while end - from < limit && r < pages.len() {
        let src = pages[r];
        r += 1;
        // Written whether live or not (`end` < `r`): no branch on liveness.
        pages[end] = src;
        end += map.unit_is_live(dev, src) as usize;
    }
    *next = r;
    (from, end - from)
}

/// The job's next unit still live (not overwritten or trimmed since its
/// victim was scanned), taken.
fn next_live<M: MapTable>(map: &M, dev: &Device, job: &mut GcJob) -> Option<u32> {
    if let Some(bits) = map.live_bits() {
        return next_set(bits, &mut job.next, job.end);
    }
    while let Some(&src) = job.pages.get(job.next) {
        job.next += 1;
        if map.unit_is_live(dev, src) {
            return Some(src);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::hybrid::testing::drive;

    /// A block TRIM leaves empty is erased at once (`gc.reclaim_empty`),
    /// outside any GC job: its plane's free blocks grow, and whether it
    /// takes host pages while owing nothing can change (`check` compares
    /// the planes noted so with each plane's state).
    #[test]
    fn planes_taking_host_pages_are_noted_as_trimmed_blocks_are_erased() {
        use crate::ftl::hybrid::testing::{trim, write};
        let (mut ftl, mut dev) = drive("page", &["geometry.channels=2", "gc.reclaim_empty=true"]);
        let lpns: Vec<u32> = (0..64).collect();
        let mut rng = crate::rng::SimRng::new(5);
        for _ in 0..40 {
            write(ftl.as_mut(), &mut dev, &lpns[..rng.below(64) as usize]);
            let start = rng.below(56) as u32;
            trim(ftl.as_mut(), &mut dev, start, 8);
        }
        assert!(dev.counters.erases[Cause::Gc as usize] > 0, "no block was erased");
    }

    #[test]
    fn a_units_live_bit_follows_the_entry_that_maps_to_it() {
        let (_, mut dev) = drive("page", &[]);
        let mut map = DramMap::new(8, 128);
        map.set(Lpn(3), 70);
        map.set(Lpn(5), 9);
        assert!(map.is_live(3, 70) && map.is_live(5, 9));
        map.set(Lpn(3), 71); // overwritten
        map.moved(&mut dev, 5, 9, Ppn(100), SimTime::ZERO); // GC
        map.set(Lpn(5), TRIMMED);
        assert!(!map.unit_live(70) && !map.unit_live(9) && !map.unit_live(100));
        assert!(map.unit_live(71));
        map.check(&dev).unwrap();
        // As recovery leaves it.
        map.fwd.copy_from_slice(&[NEVER, 4, 2, NEVER, TRIMMED, NEVER, NEVER, NEVER]);
        map.mark_live();
        assert!(map.unit_live(4) && map.unit_live(2) && !map.unit_live(71));
        map.check(&dev).unwrap();
        // A bit out of step with the map is an invariant failure.
        map.live[0] |= 1 << 7;
        assert!(map.check(&dev).unwrap_err().to_string().contains("3 units marked live, 2 entries mapped"));
        map.live[0] &= !(1 << 4);
        map.live[0] &= !(1 << 7);
        assert!(map.check(&dev).unwrap_err().to_string().contains("entry 1 maps to unit 4, not marked live"));
    }

    proptest::proptest! {
        /// The word-at-a-time walks over live bits (a GC job's span, its
        /// next runs, a victim's list) agree with reading the bits unit by
        /// unit, over any range, from any point, into a list that may hold
        /// entries already.
        #[test]
        fn live_bit_walks_read_the_bits_unit_by_unit(
            words in proptest::collection::vec(proptest::num::u64::ANY, 1..5),
            ends in (0u32..=320, 0u32..=320),
            from in 0u32..=320,
            limit in 0usize..24,
            had in 0usize..3,
        ) {
            let units = words.len() as u32 * 64;
            let (start, end) = (ends.0.min(ends.1).min(units), ends.0.max(ends.1).min(units));
            let live_units = |from: u32| -> Vec<u32> {
                (from..end).filter(|&u| words[u as usize / 64] >> (u % 64) & 1 == 1).collect()
            };
            let all = live_units(start);
            let before = vec![u32::MAX; had];

            let mut listed = before.clone();
            live_in(&words, start..end, &mut listed);
            proptest::prop_assert_eq!(&listed[had..], &all[..]);
            proptest::prop_assert_eq!(live_span(&words, start..end), (all.len() as u32, all.last().map_or(start, |&u| u + 1)));

            let next = start + from % (end - start + 1);
            let rest = live_units(next);
            let (mut taken, mut at) = (before.clone(), next as usize);
            take_live(&words, &mut at, end as usize, limit, &mut taken);
            let room = limit.saturating_sub(had);
            let expected: Vec<u32> = rest.iter().copied().take(room).collect();
            proptest::prop_assert_eq!(&taken[had..], &expected[..]);
            let expected_at = match expected.last() {
                _ if room == 0 => next as usize,
                Some(&u) if expected.len() == room => u as usize + 1,
                _ => end as usize,
            };
            proptest::prop_assert_eq!(at, expected_at);

            let mut at = next as usize;
            let first = next_set(&words, &mut at, end as usize);
            proptest::prop_assert_eq!(first, rest.first().copied());
            proptest::prop_assert_eq!(at, first.map_or(end as usize, |u| u as usize + 1));
        }
    }
}
