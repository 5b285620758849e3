//! Functional preconditioning of the page FTL (`--precondition
//! fill=F,overwrite=X,mode=functional`): the state a sequential fill and
//! uniform random page overwrites leave, built on the NAND array and the
//! FTL's own block pool with no time at all: no device timing, no engine,
//! no write buffer, and the forward map written once, at the end.
//!
//! Why it leaves the state `fast` leaves, in distribution: every filled
//! LPN is mapped to exactly one valid unit (page, with one unit a page), so
//! an LPN drawn uniformly is a valid unit drawn uniformly. The overwrites
//! therefore draw physical units uniformly, redrawing until one is live (a
//! bit each, [`DramMap`]'s live bits), and take the LPN from its OOB; GC
//! moves OOB entries and live bits. Neither host writes nor GC copies touch
//! the forward map, whose random accesses are most of a fast-forwarded
//! overwrite's cost. Units smaller than the page are packed as `fast`
//! packs them: a page's worth of distinct overwrites a program behind a
//! write buffer (an LPN drawn while its unit waits for the page is a hit,
//! drawn with the probability a uniform LPN would be), one unit and
//! padding without one; GC packs a victim's live units, padding its last
//! page.
//!
//! What differs from `fast` (measured in `docs/preconditioning.md`):
//!
//! - planes are taken in stripe order, as `ftl.allocation = "static"`
//!   does: without time no plane is free sooner than another;
//! - GC reclaims whole victims: with `gc.mode = "blocking"` when the host
//!   opens a block on a plane at its reserve, as the timed path does; with
//!   preemptible GC, the job a host block opened below the trigger starts
//!   is done at once, and the jobs it chains to while the plane stays
//!   below it, their copies ahead of the host's pages (a job's are spread
//!   over the block, paced to end as it fills), so the plane's free blocks
//!   go as with jobs, one below the reserve and back;
//! - ages (cost-benefit's) run on a clock of one tPROG a host page;
//! - the seed's random numbers draw pages, not LPNs: the same seed gives
//!   another drive than `fast`, with the same statistics.
//!
//! Mapping units smaller than the 4 KiB an overwrite writes (the 2 KiB
//! pages of the TRIM and HAT papers' drives; 1 KiB units in 4 KiB pages)
//! are written `group` units an overwrite, the 4 KiB-aligned run `fast`
//! draws: its other units cannot be found from the drawn one's OOB, so
//! there the forward map is kept as the state is built (each program and
//! GC copy updates it) and the overwrites draw runs of LPNs, as `fast`
//! does.
//!
//! Supported: the page FTL (a map wholly in RAM), without multi-plane GC,
//! on a new drive, whose overwrites write whole mapping units (units of at
//! least 4 KiB, one an overwrite) or whole pages (smaller units, pages of
//! at most 4 KiB); others are refused, naming why.

use super::{DramMap, PageCore, set_range, set_unit};
use crate::config::GcMode;
use crate::engine::Device;
use crate::error::{Error, Result};
use crate::ftl::pool::BlockState;
use crate::nand::{NO_LPN, Payload};
use crate::rng::SimRng;
use crate::sim::PRECONDITION_PROGRESS;
use crate::units::{BlockId, Lpn, Nanos, PlaneId, Ppn, SimTime};

/// What functional preconditioning writes: `filled` logical pages in
/// order from LPN 0, then `overwrites` of uniformly drawn filled mapping
/// units (pages, unless `ftl.map_unit_bytes` is smaller).
#[derive(Clone, Copy, Debug)]
pub struct Conditioning {
    pub filled: u64,
    pub overwrites: u64,
    /// Overwritten units packed into a page program: a page's worth behind
    /// a write buffer (its destagers pack them, as `fast` does), else one,
    /// the rest of the page padded.
    pub batch: usize,
    /// Time a host page advances the pool's clock (ages for cost-benefit).
    pub page_time: Nanos,
    /// Units an overwrite writes: 1, or with units smaller than 4 KiB,
    /// 4 KiB's worth (whole pages of them), the aligned run of LPNs
    /// `group * s ..`.
    pub group: u32,
}

/// Candidate pages drawn ahead of their use, their live bit and OOB
/// prefetched: both are cache misses at random places. (An overwrite
/// takes physical / filled pages draws on average: 1.07 on the bench
/// drive filled whole, 10.7 filled to a tenth.)
const AHEAD: usize = 16;

/// Tells `tick` of the pages written, `from` to `to`, at each multiple of
/// [`PRECONDITION_PROGRESS`] passed: the counts its caller reports (a
/// call a page cost ~4% of the bench drive's preconditioning).
#[inline]
fn tick_through(tick: &mut dyn FnMut(u64) -> Result<()>, from: u64, to: u64) -> Result<()> {
    let mut at = (from / PRECONDITION_PROGRESS + 1) * PRECONDITION_PROGRESS;
    while at <= to {
        tick(at)?;
        at += PRECONDITION_PROGRESS;
    }
    Ok(())
}

/// Candidates drawn ahead, oldest first: a queue of at most [`AHEAD`],
/// without a `VecDeque`'s capacity bookkeeping (~20 instructions an
/// overwrite).
struct Ahead {
    drawn: [u32; AHEAD],
    head: usize,
    len: usize,
}

impl Ahead {
    const MASK: usize = {
        assert!(AHEAD.is_power_of_two());
        AHEAD - 1
    };

    fn new() -> Ahead {
        Ahead { drawn: [0; AHEAD], head: 0, len: 0 }
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.len == AHEAD
    }

    #[inline(always)]
    fn push(&mut self, x: u32) {
        debug_assert!(!self.is_full());
        self.drawn[(self.head + self.len) & Self::MASK] = x;
        self.len += 1;
    }

    /// The oldest; the queue must be full.
    #[inline(always)]
    fn pop_full(&mut self) -> u32 {
        assert!(self.is_full(), "drawn ahead");
        let x = self.drawn[self.head];
        self.head = (self.head + 1) & Self::MASK;
        self.len -= 1;
        x
    }

    /// The `i`-th oldest.
    #[inline(always)]
    fn get(&self, i: usize) -> Option<u32> {
        (i < self.len).then(|| self.drawn[(self.head + i) & Self::MASK])
    }
}

/// The refusal of a drive functional preconditioning does not model.
pub fn unsupported(why: impl std::fmt::Display) -> Error {
    Error::Workload {
        key: "precondition.mode".into(),
        reason: format!(
            "functional preconditioning models the page FTL, overwrites of whole mapping units and no multi-plane \
             GC, on a new drive; {why}: use mode=fast"
        ),
    }
}

/// Conditions a new drive as `c` says (see the module doc); `tick` is
/// told the pages written so far, fill then overwrites.
pub(super) fn precondition(
    core: &mut PageCore,
    map: &mut DramMap,
    dev: &mut Device,
    c: &Conditioning,
    rng: &mut SimRng,
    tick: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    if core.multi_plane_gc {
        return Err(unsupported("this drive's GC copies across planes (timing.multi_plane)"));
    }
    if (0..core.geo.blocks).any(|b| dev.array.written_pages(BlockId(b)) != 0) {
        return Err(unsupported("this drive has been written"));
    }
    let upp = 1usize << core.unit_shift;
    if c.group > 1 && c.group as usize % upp != 0 {
        let page = core.geo.page_size;
        return Err(unsupported(format!(
            "its {}-byte mapping units are smaller than the 4 KiB overwrites, which would fill part of a \
             {page}-byte page",
            page >> core.unit_shift
        )));
    }
    let mut f = Functional {
        core,
        live: &mut map.live,
        fwd: (c.group > 1).then_some(&mut map.fwd[..]),
        dev,
        now: SimTime::ZERO,
        page_time: c.page_time,
        staged: Vec::with_capacity(upp),
    };
    // The fill packs each filled page's units, in order, into one page:
    // in whole stripe rounds where every plane's block has room for them.
    let mut page = 0;
    while page < c.filled {
        let mut written = f.fill_rounds(page, c.filled)?;
        if written == 0 {
            f.staged.extend((0..upp as u32).map(|k| ((page as u32) << f.core.unit_shift) + k));
            f.program_staged()?;
            written = 1;
        }
        tick_through(tick, page, page + written)?;
        page += written;
    }
    if f.fwd.is_some() {
        f.overwrite_groups(c, rng, tick)?;
    } else {
        f.overwrite(c, rng, tick)?;
    }
    // Every filled unit once on flash: none left behind in a batch, none twice.
    let (mapped, filled) = (map.map_from_live(dev), c.filled << core.unit_shift);
    let live: u64 = map.live.iter().map(|w| w.count_ones() as u64).sum();
    if mapped != filled || live != filled {
        let why = format!("functional preconditioning left {mapped} of {filled} units mapped, {live} live");
        return Err(Error::invariant("page", why));
    }
    Ok(())
}

impl DramMap {
    /// The forward map from the live bits and the OOB LPNs of the units
    /// they mark; returns the entries mapped.
    fn map_from_live(&mut self, dev: &Device) -> u64 {
        // Each entry is a miss at a random place: written `AHEAD` live
        // units after its prefetch, in the same order (~5% of the bench
        // drive's preconditioning was waiting for them).
        let fwd = &mut self.fwd[..];
        fwd.fill(super::NEVER);
        let mut mapped = 0;
        let mut map = |fwd: &mut [u32], (lpn, unit): (u32, u32)| {
            let entry = &mut fwd[lpn as usize];
            mapped += (*entry == super::NEVER) as u64;
            *entry = unit;
        };
        let mut pending = [(0, 0); AHEAD];
        let mut n = 0;
        for (w, &bits) in self.live.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let unit = (w * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let lpn = dev.array.oob_unit_raw(unit);
                crate::mem::prefetch(fwd, lpn as usize);
                let slot = &mut pending[n % AHEAD];
                if n >= AHEAD {
                    map(fwd, *slot);
                }
                *slot = (lpn, unit);
                n += 1;
            }
        }
        for k in n.saturating_sub(AHEAD)..n {
            map(fwd, pending[k % AHEAD]);
        }
        mapped
    }
}

/// The page FTL's core with its live bits and the array, as functional
/// preconditioning changes them.
struct Functional<'a> {
    core: &'a mut PageCore,
    /// A bit per mapping unit (a page, with one unit a page).
    live: &'a mut [u64],
    /// The forward map, kept as the state is built (overwrites of several
    /// units a write); `None`: written from the live bits at the end.
    fwd: Option<&'a mut [u32]>,
    dev: &'a mut Device,
    now: SimTime,
    page_time: Nanos,
    /// The LPNs of the units the next page programs.
    staged: Vec<u32>,
}

/// Maps the LPN each of `units` holds (its OOB entry) to it.
fn map_units(fwd: &mut [u32], dev: &Device, units: std::ops::Range<u32>) {
    for unit in units {
        fwd[dev.array.oob_unit_raw(unit) as usize] = unit;
    }
}

impl Functional<'_> {
    /// `c.overwrites` overwrites of valid units drawn uniformly, `c.batch`
    /// distinct ones to a page.
    fn overwrite(&mut self, c: &Conditioning, rng: &mut SimRng, tick: &mut dyn FnMut(u64) -> Result<()>) -> Result<()> {
        if c.overwrites == 0 {
            return Ok(());
        }
        let units = (self.core.geo.pages as u64) << self.core.unit_shift;
        let filled = c.filled << self.core.unit_shift;
        let mut ahead = Ahead::new();
        for i in 0..c.overwrites {
            // A staged unit's LPN has no valid unit on flash: drawn among
            // the filled LPNs (as `fast` draws), it is a hit on the
            // gathering batch, as on a write buffer.
            if !self.staged.is_empty() && rng.below(filled) < self.staged.len() as u64 {
                tick_through(tick, c.filled + i, c.filled + i + 1)?;
                continue;
            }
            let old = loop {
                while !ahead.is_full() {
                    let u = rng.below(units) as u32;
                    crate::mem::prefetch(self.live, u as usize / 64);
                    self.dev.array.prefetch_oob_unit(u);
                    ahead.push(u);
                }
                let u = ahead.pop_full();
                if super::unit_live(self.live, u) {
                    break u;
                }
            };
            set_unit(self.live, old, false);
            self.core.stale(self.core.geo.block_of(Ppn(old >> self.core.unit_shift)), self.now);
            self.staged.push(self.dev.array.oob_unit_raw(old));
            if self.staged.len() == c.batch {
                self.program_staged()?;
            }
            self.reclaim_empties()?;
            tick_through(tick, c.filled + i, c.filled + i + 1)?;
        }
        // The last batch, however few (its last draw may have been a hit).
        if !self.staged.is_empty() {
            self.program_staged()?;
            self.reclaim_empties()?;
        }
        Ok(())
    }

    /// `c.overwrites` overwrites of `c.group` units each (whole pages),
    /// the aligned runs of filled LPNs drawn uniformly (as `fast` draws
    /// them), their old units found in the forward map kept as it goes.
    fn overwrite_groups(
        &mut self,
        c: &Conditioning,
        rng: &mut SimRng,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let shift = self.core.unit_shift;
        let runs = (c.filled << shift) / c.group as u64;
        if c.overwrites == 0 || runs == 0 {
            return Ok(());
        }
        let mut ahead = Ahead::new();
        for i in 0..c.overwrites {
            while !ahead.is_full() {
                let first = rng.below(runs) as u32 * c.group;
                let fwd = self.fwd.as_deref().expect("kept");
                crate::mem::prefetch(fwd, first as usize);
                // Halfway, the run's entries have landed: where they point
                // (its old pages' OOB and live bits) is the next miss.
                if let Some(half) = ahead.get(AHEAD / 2) {
                    for &old in &fwd[half as usize..(half + c.group) as usize] {
                        self.dev.array.prefetch_oob_unit(old);
                        crate::mem::prefetch(self.live, old as usize / 64);
                    }
                }
                ahead.push(first);
            }
            let first = ahead.pop_full();
            for lpn in first..first + c.group {
                let old = self.fwd.as_deref().expect("kept")[lpn as usize];
                let on_flash = old != super::NEVER && self.dev.array.oob_unit_raw(old) == lpn;
                if !on_flash || !super::unit_live(self.live, old) {
                    let why =
                        format!("functional preconditioning: logical page {lpn} maps to {old}, not its live copy");
                    return Err(Error::invariant("page", why));
                }
                set_unit(self.live, old, false);
                self.core.stale(self.core.geo.block_of(Ppn(old >> shift)), self.now);
                self.staged.push(lpn);
                if self.staged.len() == 1 << shift {
                    self.program_staged()?;
                    self.reclaim_empties()?;
                }
            }
            let per = (c.group >> shift) as u64;
            tick_through(tick, c.filled + i * per, c.filled + (i + 1) * per)?;
        }
        Ok(())
    }

    /// The fill's next pages, LPNs from `from` on, in whole stripe rounds:
    /// as many rounds as every plane's host block has room for, none if
    /// one has no room left (then [`program_staged`](Self::program_staged)
    /// opens its next block, GC first if due, a page at a time). The same
    /// pages, LPNs, order and counts as a page at a time, the pages found
    /// once a round's run rather than each. Returns the pages written.
    fn fill_rounds(&mut self, from: u64, filled: u64) -> Result<u64> {
        let n = self.core.stripe.len();
        if self.core.unit_shift != 0 || n == 0 {
            return Ok(0);
        }
        let mut rounds = ((filled - from) / n as u64).min(u32::MAX as u64) as u32;
        let mut firsts = Vec::with_capacity(n);
        for k in 0..n {
            let plane = self.core.stripe[(self.core.cursor + k) % n];
            let Some((first, room)) = self.host_room(plane) else { return Ok(0) };
            rounds = rounds.min(room);
            firsts.push(first);
        }
        if rounds == 0 {
            return Ok(0);
        }
        self.dev.array.program_rounds(&firsts, rounds, from as u32)?;
        let core = &mut *self.core;
        for &first in &firsts {
            let written = first.0..first.0 + rounds;
            set_range(self.live, written.clone(), true);
            if let Some(fwd) = self.fwd.as_deref_mut() {
                map_units(fwd, self.dev, written);
            }
            core.pool.add_valid_pages(core.geo.block_of(first), rounds, self.now);
        }
        let pages = rounds as u64 * n as u64;
        self.now += Nanos(self.page_time.0 * pages);
        Ok(pages)
    }

    /// Programs the staged units as one page (the rest padded) on the next
    /// plane in stripe order with room. Inlined for the common case, that
    /// plane's host block with room (a call and the search through
    /// [`next_page`](Self::next_page) were ~40% of an overwrite's cost).
    #[inline(always)]
    fn program_staged(&mut self) -> Result<()> {
        match self.host_room(self.core.stripe[self.core.cursor]) {
            Some((ppn, _)) => {
                self.core.cursor = self.core.next_cursor();
                self.program_at(ppn)
            }
            None => self.program_staged_searching(),
        }
    }

    /// `plane`'s host block (its stream 0: preconditioning writes one).
    #[inline(always)]
    fn host_slot(&self, plane: PlaneId) -> usize {
        plane.idx() * self.core.streams
    }

    /// The next page of `plane`'s host block and the pages left in it, if
    /// it has a block with room (none is opened or closed here).
    #[inline(always)]
    fn host_room(&self, plane: PlaneId) -> Option<(Ppn, u32)> {
        let a = self.core.active[self.host_slot(plane)];
        (a != super::NO_BLOCK).then(|| self.core.room_in(&*self.dev, a)).flatten()
    }

    /// [`program_staged`](Self::program_staged) where the cursor's plane
    /// has no room in its host block: it opens one (GC first, if due), or
    /// the next plane takes the page.
    #[inline(never)]
    fn program_staged_searching(&mut self) -> Result<()> {
        for _ in 0..self.core.stripe.len() {
            let plane = self.core.stripe[self.core.cursor];
            self.core.cursor = self.core.next_cursor();
            if let Some(ppn) = self.next_page(plane, false)? {
                return self.program_at(ppn);
            }
        }
        Err(Error::DeviceFull("functional preconditioning: no plane has a free page and GC cannot reclaim one".into()))
    }

    /// Programs the staged units into `ppn` (the rest of the page padded).
    #[inline(always)]
    fn program_at(&mut self, ppn: Ppn) -> Result<()> {
        let (shift, units) = (self.core.unit_shift, self.staged.len() as u32);
        if shift == 0 {
            self.dev.array.program(ppn, Lpn(self.staged[0]), Payload::None)?;
        } else {
            self.staged.resize(1 << shift, NO_LPN);
            self.dev.array.program_units(ppn, &self.staged, None)?;
        }
        let written = ppn.0 << shift..(ppn.0 << shift) + units;
        set_range(self.live, written.clone(), true);
        if let Some(fwd) = self.fwd.as_deref_mut() {
            map_units(fwd, self.dev, written);
        }
        self.core.pool.add_valid_pages(self.core.geo.block_of(ppn), units, self.now);
        self.staged.clear();
        self.now += self.page_time;
        Ok(())
    }

    /// The next page of `plane` for the host or (`for_gc`) GC's copies, as
    /// `PageCore::next_page` finds it: a host page opening a block first
    /// lets GC restore the plane's reserve; GC draws on the reserve.
    fn next_page(&mut self, plane: PlaneId, for_gc: bool) -> Result<Option<Ppn>> {
        let slot = if for_gc { self.core.gc_slot(plane) } else { self.host_slot(plane) };
        let mut collected = for_gc;
        loop {
            if let Some((ppn, _)) = self.core.active_page(&*self.dev, slot, self.now) {
                return Ok(Some(ppn));
            }
            let core = &mut *self.core;
            let free = core.pool.free_count(plane);
            if !collected {
                collected = true;
                let due = match core.gc_mode {
                    GcMode::Blocking => free <= core.reserve || free < core.trigger,
                    // The job fell behind: the host waits for whole victims.
                    GcMode::Preemptible => free < core.host_floor,
                };
                if due {
                    let (live, mut fwd, now) = (&mut *self.live, self.fwd.as_deref_mut(), self.now);
                    core.collect_by(self.dev, plane, now, |core, dev, victim| {
                        reclaim(core, live, fwd.as_deref_mut(), dev, victim, now)
                    })?;
                }
                continue;
            }
            // The last free block stays GC's, as on the timed path.
            if !for_gc && free <= 1 {
                return Ok(None);
            }
            let Some(b) = core.take_free(plane) else { return Ok(None) };
            core.active[slot] = b.0;
            if !for_gc && core.gc_mode == GcMode::Preemptible && core.pool.free_count(plane) < core.trigger {
                // Its copies may take the block's first pages.
                self.job(plane)?;
                continue;
            }
            return Ok(Some(core.geo.ppn(b, 0)));
        }
    }

    /// The GC job a host block opened below the trigger starts
    /// (`PageCore::start_job`'s victim), and those it chains to while the
    /// plane stays below it (`PageCore::end_job`), done at once: a job is
    /// paced to end as the host fills the block, so the plane's free
    /// blocks go as a job's do, one below the reserve and back.
    fn job(&mut self, plane: PlaneId) -> Result<()> {
        let core = &mut *self.core;
        for _ in 0..core.geo.blocks_per_plane {
            if core.pool.free_count(plane) >= core.trigger || !core.worth_collecting(plane) {
                break;
            }
            let Some(victim) = core.select_victim(self.dev, plane, self.now) else { break };
            if core.no_gain(core.pool.valid(victim)) && core.pool.fewest_valid(plane).is_none_or(|v| core.no_gain(v)) {
                break; // the plane is full of live data: nothing to gain
            }
            reclaim(core, self.live, self.fwd.as_deref_mut(), self.dev, victim, self.now)?;
        }
        Ok(())
    }

    /// Erases the closed blocks an overwrite left without a valid page
    /// (`gc.reclaim_empty`); inlined for the common case, none.
    #[inline(always)]
    fn reclaim_empties(&mut self) -> Result<()> {
        if self.core.empties.is_empty() { Ok(()) } else { self.erase_empties() }
    }

    #[inline(never)]
    fn erase_empties(&mut self) -> Result<()> {
        while let Some(block) = self.core.empties.pop() {
            if self.core.pool.valid(block) == 0 && self.core.pool.state(block) == BlockState::Closed {
                self.dev.array.erase(block)?;
                self.core.release(block)?;
            }
        }
        Ok(())
    }
}

/// Empties GC's `victim` into its plane's GC block (the copies' OOB and
/// live bits) and erases it.
fn reclaim(
    core: &mut PageCore,
    live: &mut [u64],
    fwd: Option<&mut [u32]>,
    dev: &mut Device,
    victim: BlockId,
    now: SimTime,
) -> Result<()> {
    core.pool.start_reclaim(victim);
    let (plane, shift) = (core.geo.plane_of(victim), core.unit_shift);
    let units =
        core.geo.ppn(victim, 0).0 << shift..(core.geo.ppn(victim, 0).0 + dev.array.written_pages(victim)) << shift;
    let mut moving = std::mem::take(&mut core.live_scratch);
    moving.clear();
    super::live_in(live, units.clone(), &mut moving);
    set_range(live, units, false);
    let mut rest = &moving[..];
    let mut f = Functional { core, live, fwd, dev, now, page_time: Nanos::ZERO, staged: Vec::new() };
    while !rest.is_empty() {
        let dst = f.next_page(plane, true)?.ok_or_else(|| {
            Error::invariant(
                "page",
                format!("functional preconditioning: GC of {victim} found no free page in its plane"),
            )
        })?;
        // Packed from `dst` on; only the victim's last page is padded.
        let room = ((f.core.geo.pages_per_block - f.core.geo.page_in_block(dst)) as usize) << shift;
        let (run, after) = rest.split_at(room.min(rest.len()));
        if shift == 0 {
            f.dev.array.copy_run(run, dst)?;
        } else {
            f.dev.array.copy_units(run, dst)?;
        }
        let copied = dst.0 << shift..(dst.0 << shift) + run.len() as u32;
        set_range(f.live, copied.clone(), true);
        if let Some(fwd) = f.fwd.as_deref_mut() {
            map_units(fwd, f.dev, copied);
        }
        f.core.pool.transfer_valid(victim, f.core.geo.block_of(dst), run.len() as u32, now);
        rest = after;
    }
    f.core.live_scratch = moving;
    f.dev.array.erase(victim)?;
    f.core.release(victim)
}
