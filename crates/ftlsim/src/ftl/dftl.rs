//! `dftl`: the demand-based page-mapping FTL of Gupta, Kim and Urgaonkar
//! (ASPLOS 2009), as Hu et al. describe it in "Achieving Page-Mapping FTL
//! Performance at Block-Mapping FTL Cost by Hiding Address Translation".
//!
//! The page map lives in translation pages on the same flash as the data
//! (`page size / 4 B` entries each), located by a global translation
//! directory (GTD) in controller SRAM. A cached mapping table (CMT) of
//! `ftl.cache_bytes / ftl.cache_entry_bytes` entries, LRU, holds recently
//! used entries. Address translation sits on the request's critical path:
//!
//! - a miss first writes back the LRU victim if it is dirty — a
//!   read-modify-write of its translation page that takes every dirty cached
//!   entry of that page along (batch update) — then reads the translation
//!   page holding the wanted entry; only then does the data operation start.
//!   One request reads each translation page at most once: its other misses
//!   on that page take their entries from the page already read (HAT: "one
//!   extra read operation can fetch 512 mapping entries"), so a 32 KiB read
//!   of consecutive pages costs one translation read, not one per page;
//! - GC moving a data page updates its cached entry, or, when it is not
//!   cached, its translation page, rewritten once per victim however many
//!   of its entries the victim's moves changed (Gupta et al.'s batch
//!   update) — after the victim is done, in the background, into the
//!   translation blocks: with preemptible GC the engine's background
//!   steps write them, one a plane at a time, on planes whose GC is owed
//!   no copy, and past one a plane each translation writes a plane's
//!   share (under a steady write load GC is owed copies most of the
//!   time); with blocking GC, which has no background steps, the next
//!   translation writes them all. Rewriting during GC itself
//!   would spend the collected plane's reserve on pages GC did not
//!   reclaim, and with small blocks a victim's copies plus its translation
//!   rewrites can exceed the block it frees. Each victim's batch is its
//!   own, however late it is written and however many planes' GC jobs
//!   move pages meanwhile: a page two victims dirtied is rewritten for
//!   each, so the count does not depend on scheduling (queue depth, GC
//!   mode, debt mode), only on the victims' moves — until the queue of
//!   rewrites passes its bound (a block a plane, or the table's pages if
//!   more), where a page already queued takes later victims' updates
//!   along: victims that free less than their rewrites take (all live,
//!   under FIFO) would otherwise queue rewrites without end. Blocking GC,
//!   collecting victims inside the rewrites' own allocations, reaches it;
//! - translation pages live in translation blocks of their own (Gupta et
//!   al. §3.1: a write stream apart from data, with its own active block
//!   per plane; with dynamic allocation each on a plane holding no more
//!   than its share of them, see [`DftlMap::spread`]), garbage-collected
//!   by the same greedy GC as data blocks
//!   (OOB LPN = logical pages + translation page number); GC moving one
//!   updates the GTD. The report counts their
//!   reads, programs and GC copies as `mapping`, and so the erase of a
//!   victim written mostly with translation pages.
//!
//! A FLUSH rewrites every translation page with dirty cached entries (the
//! CMT is volatile).
//!
//! The data side is `page`'s ([`PageMapped`]). With a CMT as large as the
//! table no entry is ever evicted and DFTL behaves exactly as `page`.
//!
//! Simplifications: the updates of victims being collected (one a plane
//! under preemptible GC) and of batches not yet written are held in
//! controller RAM not charged to the CMT; a translation page never written holds
//! no data worth reading, so a miss on it costs nothing (it exists once an
//! entry of it is written back, or data is placed under it); SRAM lookups
//! take no time; TRIM translates like a write, but a translation page the
//! range covers whole is read once (for its entries' old pages) and
//! dropped, not rewritten: the GTD forgets it, as if never written
//! (recovery after a power cut may find its old copy again; the TRIM
//! journal still keeps the data trimmed).

use super::FtlStats;
use super::cmt::CachedMap;
use super::page::{BARRED, MapTable, NEVER, PageCore, PageMapped, TRIMMED, is_mapped};
use crate::config::{Config, GcMode};
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{Lpn, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub type Dftl = PageMapped<DftlMap>;

/// The write stream of translation pages: DFTL keeps them in translation
/// blocks of their own, apart from data blocks (Gupta et al. §3.1). Mixed
/// with data, each block GC reclaims would hold live translation pages too,
/// rewritten far more often than the data around them.
const TRANSLATION_STREAM: usize = 1;

impl Dftl {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Dftl> {
        let logical = cfg.logical_pages() as u32;
        let epp = dev.geometry().page_size / 4;
        let pages = logical.div_ceil(epp);
        let geo = dev.geometry();
        let map = DftlMap {
            m: CachedMap::new(logical, &cfg.ftl, epp, NEVER),
            logical,
            epp,
            gtd: vec![NEVER; pages as usize],
            in_flight: vec![(SimTime::ZERO, SimTime::ZERO); pages as usize],
            open: vec![Vec::new(); geo.planes as usize],
            unit_shift: cfg.units_per_page().trailing_zeros(),
            due: VecDeque::new(),
            queued: vec![0; pages as usize],
            queue_bound: (pages as usize).max((geo.pages_per_block * geo.planes) as usize),
            fetched: Vec::new(),
            held: vec![0; geo.planes as usize],
            rank: Vec::new(),
            paced: cfg.gc.mode == GcMode::Preemptible,
            ripe: 0,
        };
        PageMapped::with_map(cfg, dev, map)
    }
}

#[derive(Serialize, Deserialize)]
pub struct DftlMap {
    m: CachedMap,
    logical: u32,
    /// Mapping entries per translation page.
    epp: u32,
    /// Global translation directory: where each translation page is.
    gtd: Vec<u32>,
    /// When each translation page's latest rewrite was assembled in the
    /// controller and when its program ends: until then the controller
    /// still holds the page, and a read of it is served from there.
    in_flight: Vec<(SimTime, SimTime)>,
    /// Per plane, the translation pages the moves of the victim GC is
    /// collecting there updated in the image (its batch, open; a page
    /// listed once per move).
    open: Vec<Vec<u32>>,
    /// Mapping units per page, as a shift: a move's source unit address
    /// names its victim's plane once shifted to a page.
    unit_shift: u32,
    /// The batches of victims done, to be rewritten (oldest first; see
    /// [`paced`](Self::paced)): a page appears once per victim that dirtied it, until
    /// the list holds [`queue_bound`](Self::queue_bound) rewrites; from
    /// then on a page already listed takes later victims' updates along.
    /// Without that bound, where victims free less than their rewrites
    /// take (victims all live, few translation pages), each rewrite's GC
    /// would list more rewrites without end.
    due: VecDeque<u32>,
    /// How many times each translation page is listed in `due`.
    queued: Vec<u32>,
    /// Rewrites `due` holds before a page listed takes later victims'
    /// updates along: a block a plane, or the table's pages if more.
    queue_bound: usize,
    /// Translation pages the current request has read, with when each was
    /// in the controller: the request's other misses on them are served
    /// from that read ("one extra read operation can fetch 512 mapping
    /// entries", HAT §2), not by reading the page again.
    fetched: Vec<(u32, SimTime)>,
    /// Per plane, the translation pages whose current copy is there.
    held: Vec<u32>,
    /// [`ranked`](Self::ranked)'s buffer.
    #[serde(skip)]
    rank: Vec<u64>,
    /// Preemptible GC: the engine's background steps write the rewrites
    /// due, one a plane at a time, and a translation only a plane's share
    /// of those past one a plane ([`write_backlog`](Self::write_backlog)).
    /// (Blocking GC has no background steps: the next translation writes
    /// them all.)
    paced: bool,
    /// The rewrites at the front of `due` that background steps may write:
    /// those due when the last host request began (none without `paced`). A rewrite's allocation
    /// may finish a victim whose batch is due in turn; where victims free
    /// less than their rewrites take (FIFO GC, a one-entry CMT), rewrites
    /// taken as they came due kept the engine's background busy without
    /// end. Each request ripens what came due before it, as a translation
    /// writes only the rewrites due when it starts.
    ripe: usize,
}

impl DftlMap {
    /// [`held`](Self::held) as the GTD says.
    fn held_by_gtd(&self, geo: &Geometry) -> Vec<u32> {
        let mut held = vec![0; self.held.len()];
        for &ppn in self.gtd.iter().filter(|&&p| is_mapped(p)) {
            held[geo.plane_of(geo.block_of(Ppn(ppn))).idx()] += 1;
        }
        held
    }

    /// Where dynamic allocation writes a translation page: on the plane
    /// free soonest, as data pages, but only among planes holding at most
    /// 15% more than their share of the translation pages, plus one, on
    /// channels that do too (a plane's share is below one page on a small
    /// drive); among planes free at once, on the one whose channel, then
    /// itself, holds the fewest. Fills `rank` with each plane's rank: the
    /// channel's count, then the plane's, or [`BARRED`] past the 15%.
    ///
    /// Free to go to the plane free soonest, a sequential fill writes one
    /// every `page size / 4` data pages, in step with the data's rotation,
    /// at the same point of it each time: on `modern-tlc` three of the
    /// eight channels took 5% of them, and random reads, each reading its
    /// translation page first, ran at 65% of the bus bound (90% now, after
    /// `overwrite=0.5` too). Under random writes with `gc.debt =
    /// "background"` they gathered on a few planes (up to 302 on one,
    /// against a share of 22), where the translation reads of later writes
    /// queued: 44% of the bound at QD 32 (81% now). Placed by number
    /// instead (MQSim's way), each rewrite waits for its one plane, busy or
    /// not: with `gc.debt = "ahead"` 53% of the bound against 79% (75%
    /// now). The 15% is the balance measured between reads and writes: with
    /// 25% writes reached 86% and 78% but reads after `overwrite=0.5` 71%
    /// (the planes of most translation pages held 30 against 22); with 10%,
    /// 76% and 72%, reads 87% (measured before preconditioning left no
    /// rewrites to the run). Static allocation's cursor, shared with data,
    /// spreads them already.
    fn spread(&self, geo: &Geometry, rank: &mut Vec<u64>) {
        let total = self.held.iter().map(|&n| n as u64).sum::<u64>();
        // `n` of `total` is near a share of `parts` if `n × parts × 100 ≤
        // total × 115 + parts × 100`: the largest such `n`, found once.
        let most = |parts: u32| (total * 115 + parts as u64 * 100) / (parts as u64 * 100);
        let (plane_most, channel_most) = (most(geo.planes), most(geo.channels));
        rank.resize(self.held.len(), BARRED);
        // Planes are numbered channel by channel.
        let per_channel = (geo.planes / geo.channels) as usize;
        for (held, rank) in self.held.chunks_exact(per_channel).zip(rank.chunks_exact_mut(per_channel)) {
            let channel = held.iter().map(|&n| n as u64).sum::<u64>();
            for (r, &n) in rank.iter_mut().zip(held) {
                let near = n as u64 <= plane_most && channel <= channel_most;
                *r = if near { channel << 32 | n as u64 } else { BARRED };
            }
        }
    }

    /// `f` with the planes' ranks as [`spread`](Self::spread) has them now,
    /// in a buffer kept for it: every translation write ranks the planes
    /// (10.7 million in the bench drive's fill and overwrite), and a
    /// buffer allocated each time was a good part of that cost.
    fn ranked<R>(&mut self, dev: &mut Device, f: impl FnOnce(&mut Self, &mut Device, &mut [u64]) -> R) -> R {
        let mut rank = std::mem::take(&mut self.rank);
        self.spread(dev.geometry(), &mut rank);
        let result = f(self, dev, &mut rank);
        self.rank = rank;
        result
    }

    /// Translation page `t`'s current copy goes from where the GTD had it
    /// (returned) to `new`: a page, or `NEVER` (the page dropped).
    fn relocated(&mut self, geo: &Geometry, t: u32, new: u32) -> u32 {
        let old = std::mem::replace(&mut self.gtd[t as usize], new);
        let plane_of = |ppn: u32| geo.plane_of(geo.block_of(Ppn(ppn))).idx();
        if is_mapped(old) {
            self.held[plane_of(old)] -= 1;
        }
        if is_mapped(new) {
            self.held[plane_of(new)] += 1;
        }
        old
    }

    /// A page of the translation stream for a translation page, among the
    /// planes `rank` does not bar (see [`spread`](Self::spread)).
    fn alloc_translation_page(
        &mut self,
        core: &mut PageCore,
        dev: &mut Device,
        now: SimTime,
        paced: bool,
        rank: &[u64],
    ) -> Result<Ppn> {
        core.alloc_stream_page(self, dev, now, paced, (TRANSLATION_STREAM, rank))
    }

    /// Rewrites translation page `t` with every dirty cached entry of it:
    /// reads the old page (if any), programs the new one. Returns the
    /// program's end.
    fn write_back(&mut self, core: &mut PageCore, dev: &mut Device, t: u32, now: SimTime) -> Result<SimTime> {
        self.ranked(dev, |map, dev, rank| map.write_back_ranked(core, dev, t, now, rank))
    }

    /// [`write_back`](Self::write_back), the new copy among the planes
    /// `rank` does not bar.
    fn write_back_ranked(
        &mut self,
        core: &mut PageCore,
        dev: &mut Device,
        t: u32,
        now: SimTime,
        rank: &[u64],
    ) -> Result<SimTime> {
        let start = self.fetch(dev, t, now)?;
        let ppn = self.alloc_translation_page(core, dev, now, true, rank)?;
        // Only now: GC during the allocation may have dirtied more entries
        // of this page, moved its old copy, or rewritten it.
        self.m.cache.write_back_group(t, |_| {});
        let geo = dev.geometry();
        let current = self.gtd[t as usize];
        if is_mapped(current) {
            core.stale(geo.block_of(Ppn(current)), now);
        }
        core.pool.add_valid(geo.block_of(ppn), now);
        self.relocated(geo, t, ppn.0);
        let done = dev.program(ppn, Lpn(self.logical + t), start, Cause::Mapping, Payload::None)?;
        self.in_flight[t as usize] = (start, done);
        Ok(done)
    }

    /// Writes the rewrites due at `now`; returns when the last ends. (Each
    /// may finish a victim more, whose batch is due the next time.)
    fn write_due(&mut self, core: &mut PageCore, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let batches = std::mem::take(&mut self.due);
        self.ripe = 0;
        let mut done = now;
        for &t in &batches {
            done = done.max(self.write_back(core, dev, t, now)?);
            // Not before: a victim GC finished while allocating its page
            // may have had its update of it taken along.
            self.queued[t as usize] -= 1;
        }
        if self.due.is_empty() {
            self.due = batches;
            self.due.clear();
        }
        Ok(done)
    }

    /// Of the rewrites due past one a plane, a plane's share: background
    /// steps write them while a plane's GC is owed nothing, but under a
    /// steady write load GC is owed copies most of the time and, left to
    /// them, the rewrites due grew without end (the run borrowing the
    /// time they take). Past that, each translation takes its share: a
    /// rewrite a plane at most, however many are due.
    fn write_backlog(&mut self, core: &mut PageCore, dev: &mut Device, now: SimTime) -> Result<()> {
        let planes = self.held.len();
        let excess = self.due.len().saturating_sub(planes);
        for _ in 0..excess.div_ceil(planes) {
            self.ranked(dev, |map, dev, rank| map.rewrite_oldest(core, dev, now, rank))?;
        }
        Ok(())
    }

    /// Writes the oldest rewrite due (if any) among the planes `rank` does
    /// not bar; returns when its program ends.
    fn rewrite_oldest(
        &mut self,
        core: &mut PageCore,
        dev: &mut Device,
        now: SimTime,
        rank: &[u64],
    ) -> Result<Option<SimTime>> {
        let Some(t) = self.due.pop_front() else { return Ok(None) };
        self.ripe = self.ripe.saturating_sub(1);
        let done = self.write_back_ranked(core, dev, t, now, rank)?;
        // Not before: a victim GC finished while allocating its page may
        // have had its update of it taken along.
        self.queued[t as usize] -= 1;
        Ok(Some(done))
    }

    /// Translation page `t` in the controller for the current request, from
    /// `now`: [`fetch`](Self::fetch)ed once a request, its other misses on
    /// it served from that (returns when that fetch had it).
    fn fetch_once(&mut self, dev: &mut Device, t: u32, now: SimTime) -> Result<SimTime> {
        if let Some(&(_, fetched)) = self.fetched.iter().find(|&&(p, _)| p == t) {
            return Ok(fetched);
        }
        let fetched = self.fetch(dev, t, now)?;
        self.fetched.push((t, fetched));
        Ok(fetched)
    }

    /// Translation page `t` in the controller, from `now`: read from flash,
    /// or, while its latest rewrite is still being programmed, where the
    /// controller holds it (nothing, if it was never written). Returns when.
    fn fetch(&self, dev: &mut Device, t: u32, now: SimTime) -> Result<SimTime> {
        let page = self.gtd[t as usize];
        if !is_mapped(page) {
            return Ok(now);
        }
        let (assembled, programmed) = self.in_flight[t as usize];
        if programmed > now { Ok(now.max(assembled)) } else { dev.read(Ppn(page), now, Cause::Mapping) }
    }
}

impl MapTable for DftlMap {
    const NAME: &'static str = "dftl";
    const SERIAL_WRITES: bool = true;
    const TABLE_PAGES: bool = true;

    fn entries(&self) -> u32 {
        self.logical + self.gtd.len() as u32
    }

    #[inline]
    fn get(&self, x: u32) -> u32 {
        if x < self.logical {
            self.m.cur(x)
        } else {
            self.gtd.get((x - self.logical) as usize).copied().unwrap_or(NEVER)
        }
    }

    fn lookup(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<(u32, SimTime)> {
        if let Some(v) = self.m.hit(lpn) {
            return Ok((v, now));
        }
        // Rewrites GC could not afford: background work, off this request's
        // path (its booking is: a plane's next reads wait behind them).
        if !self.paced {
            self.write_due(core, dev, now)?;
        } else {
            self.write_backlog(core, dev, now)?;
        }
        let mut t = now;
        if self.m.cache.is_full() {
            let victim = self.m.cache.lru().expect("a full cache has an LRU entry");
            if self.m.cache.is_dirty(victim) {
                t = self.write_back(core, dev, victim / self.epp, now)?;
            }
        }
        t = t.max(self.fetch_once(dev, lpn.0 / self.epp, t)?);
        Ok((self.m.load("dftl", lpn)?, t))
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, value: u32) {
        self.m.set(lpn, value);
    }

    /// The rewrites due: left for the next miss, they were the first work
    /// of a run after preconditioning (on `modern-tlc`, 5,799 of them
    /// booked at its first read, which waited 36 ms).
    fn settle(&mut self, core: &mut PageCore, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>> {
        if self.due.is_empty() {
            return Ok(None);
        }
        self.write_due(core, dev, now).map(Some)
    }

    /// The oldest rewrite due, onto `plane` (unless it holds more than its
    /// share of translation pages: then none): the plane's own work, so its
    /// next step waits for its program only, not for work elsewhere.
    /// Written all at the next translation, the rewrites of victims that
    /// planes in step finished together were thousands of programs booked
    /// at one instant, and the reads behind them waited up to 200 ms
    /// (`modern-tlc`, a random mix at QD 32).
    fn background(
        &mut self,
        core: &mut PageCore,
        dev: &mut Device,
        plane: PlaneId,
        now: SimTime,
    ) -> Result<Option<SimTime>> {
        if self.ripe == 0 {
            return Ok(None);
        }
        self.ranked(dev, |map, dev, rank| {
            if rank[plane.idx()] == BARRED {
                return Ok(None);
            }
            for (other, r) in rank.iter_mut().enumerate() {
                if other != plane.idx() {
                    *r = BARRED;
                }
            }
            map.rewrite_oldest(core, dev, now, rank)
        })
    }

    #[inline]
    fn background_backlog(&self) -> usize {
        self.ripe
    }

    fn trim_group_size(&self) -> u32 {
        self.epp
    }

    /// Translation page `t` trimmed whole: read once (its entries' old
    /// pages lose their valid counts), then dropped: the GTD forgets it
    /// and its copy on flash is stale. Nothing is written; a later miss on
    /// it costs nothing, as on a page never written.
    fn trim_group(&mut self, core: &mut PageCore, dev: &mut Device, t: u32, now: SimTime) -> Result<SimTime> {
        let known = self.fetch_once(dev, t, now)?;
        self.m.drop_group(t, TRIMMED);
        let old = self.relocated(dev.geometry(), t, NEVER);
        if is_mapped(old) {
            core.stale(dev.geometry().block_of(Ppn(old)), now);
        }
        Ok(known)
    }

    fn flush(&mut self, core: &mut PageCore, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let mut pages = self.m.cache.dirty_groups();
        for batch in &mut self.open {
            pages.append(batch);
        }
        for &t in &self.due {
            self.queued[t as usize] = 0;
        }
        pages.extend(self.due.drain(..));
        self.ripe = 0;
        pages.sort_unstable();
        pages.dedup();
        let mut done = now;
        for t in pages {
            done = done.max(self.write_back(core, dev, t, now)?);
        }
        Ok(done)
    }

    #[inline]
    fn begin_request(&mut self) {
        self.fetched.clear();
        if self.paced {
            self.ripe = self.due.len();
        }
    }

    /// Translation pages a move dirties are written later, not here.
    fn moves_in_ram(&self) -> bool {
        true
    }

    /// The victim's batch is closed, each page once: due.
    fn victim_done(&mut self, plane: PlaneId) {
        let batch = &mut self.open[plane.idx()];
        batch.sort_unstable();
        batch.dedup();
        for &t in batch.iter() {
            let queued = &mut self.queued[t as usize];
            if *queued == 0 || self.due.len() < self.queue_bound {
                *queued += 1;
                self.due.push_back(t);
            }
        }
        batch.clear();
    }

    #[inline]
    fn moved(&mut self, dev: &mut Device, x: u32, from: u32, dst: Ppn, _: SimTime) {
        if x >= self.logical {
            self.relocated(dev.geometry(), x - self.logical, dst.0);
        } else if !self.m.moved(x, dst.0) {
            let geo = dev.geometry();
            let plane = geo.plane_of(geo.block_of(Ppn(from >> self.unit_shift)));
            self.open[plane.idx()].push(x / self.epp);
        }
    }

    fn placed(&mut self, core: &mut PageCore, dev: &mut Device, lpn: Lpn, ppn: Ppn, now: SimTime) -> Result<()> {
        self.m.placed(lpn, ppn.0);
        let t = lpn.0 / self.epp;
        if !is_mapped(self.gtd[t as usize]) {
            // Its translation page was on flash before the run too.
            let page = self.ranked(dev, |map, dev, rank| map.alloc_translation_page(core, dev, now, false, rank))?;
            dev.place(page, Lpn(self.logical + t), Payload::None)?;
            core.pool.add_valid(dev.geometry().block_of(page), now);
            self.relocated(dev.geometry(), t, page.0);
        }
        Ok(())
    }

    fn stats(&self, stats: &mut FtlStats) {
        self.m.stats(stats);
    }

    /// After preconditioning the clock starts again at zero: every
    /// rewrite made before is on flash.
    fn reset_stats(&mut self) {
        self.m.reset_stats();
        self.in_flight.fill((SimTime::ZERO, SimTime::ZERO));
    }

    fn ram_bytes(&self, geo: &Geometry) -> u64 {
        // The CMT is SRAM, charged alike; the GTD takes 4 B per translation page.
        self.m.ram_bytes(geo) + self.gtd.len() as u64 * 4
    }

    /// The GTD from the translation pages found; translation pages whose
    /// entries differ from what recovery found are rewritten in the
    /// background, as GC's deferred rewrites are.
    fn recover(&mut self, _: &mut PageCore, dev: &mut Device, values: &[u32], now: SimTime) -> Result<SimTime> {
        let (data, tables) = values.split_at(self.logical as usize);
        self.gtd.copy_from_slice(tables);
        self.held = self.held_by_gtd(dev.geometry());
        // The controller's copies of pages being rewritten went with the power.
        self.in_flight.fill((SimTime::ZERO, SimTime::ZERO));
        self.open.iter_mut().for_each(Vec::clear);
        self.fetched.clear();
        let mut due: Vec<u32> = self.m.recover(data).into_iter().map(|x| x / self.epp).collect();
        due.sort_unstable();
        due.dedup();
        self.due = due.into();
        self.ripe = 0;
        self.queued.fill(0);
        for &t in &self.due {
            self.queued[t as usize] = 1;
        }
        Ok(now)
    }

    fn streams(&self) -> usize {
        2
    }

    #[inline]
    fn gc_stream(&mut self, x: u32) -> usize {
        if x >= self.logical { TRANSLATION_STREAM } else { 0 }
    }

    fn check(&self, dev: &Device) -> Result<()> {
        let pages = self.gtd.len() as u32;
        if self.held != self.held_by_gtd(dev.geometry()) {
            return Err(Error::invariant("dftl", "translation pages counted per plane differ from the GTD's"));
        }
        if let Some(t) = self.open.iter().flatten().chain(&self.due).find(|&&t| t >= pages) {
            return Err(Error::invariant("dftl", format!("translation page {t} to rewrite; there are {pages}")));
        }
        let listed = self.queued.iter().map(|&n| n as usize).sum::<usize>();
        if listed != self.due.len() {
            return Err(Error::invariant("dftl", format!("{listed} rewrites counted, {} listed", self.due.len())));
        }
        self.m.check("dftl")
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::engine::Cause;
    use crate::job::{Input, Job};
    use crate::nand::NO_LPN;
    use crate::report::Report;
    use crate::sim::{Precondition, Simulation};
    use crate::trace::{HostCmd, Op};
    use crate::units::{BlockId, Sector, SimTime};

    /// `workload` on `preset` with `options`, after `precondition`.
    fn run(preset: &str, options: &[&str], workload: &str, precondition: Precondition) -> (Simulation, Report) {
        let config = Config::load(preset, &options.iter().map(|o| o.to_string()).collect::<Vec<_>>()).unwrap();
        let input = Input::Workload(workload.into());
        let job = Job { config: config.clone(), input, precondition: None, snapshot_dir: None };
        let mut sim = Simulation::new(config).unwrap();
        let mut prepared = job.prepare(sim.logical_sectors()).unwrap();
        sim.precondition(precondition).unwrap();
        let r = sim.run(prepared.source.as_mut(), &prepared.options, &mut |_, _| true).unwrap();
        (sim, r)
    }

    /// Translation pages go to translation blocks, data to data blocks: no
    /// block is ever written with both, through write-backs, GC's copies of
    /// either and the fill's placed translation pages.
    #[test]
    fn translation_pages_and_data_never_share_a_block() {
        let o = ["geometry.blocks_per_plane=64", "ftl.name=\"dftl\"", "ftl.cache_bytes=4096", "gc.mode=\"blocking\""];
        let workload = "rw=randrw,rwmixread=30,bs=512-8k,ios=20000,iodepth=8";
        let (sim, r) = run("hat-table4", &o, workload, Precondition::new(1.0, 0.5));
        let logical = sim.config().logical_pages() as u32;
        assert!(
            r.flash_programs_by_cause.mapping > 0 && r.blocks_erased > 0,
            "the run must write translation pages and GC"
        );
        let dev = sim.device();
        let geo = dev.geometry();
        let (mut mixed, mut table_blocks) = (0, 0);
        for b in 0..geo.blocks {
            let block = BlockId(b);
            let (mut data, mut table) = (false, false);
            for i in 0..dev.array.written_pages(block) {
                match dev.array.oob_lpn_raw(geo.ppn(block, i)) {
                    NO_LPN => {}
                    x if x >= logical => table = true,
                    _ => data = true,
                }
            }
            mixed += (data && table) as u32;
            table_blocks += table as u32;
        }
        assert!(table_blocks > 0);
        assert_eq!(mixed, 0, "{mixed} blocks hold data and translation pages ({table_blocks} hold translation pages)");
    }

    /// A sequential fill writes a translation page every `page size / 4`
    /// data pages, in step with the data's rotation over the planes: free
    /// to go to the plane free soonest, they went to a few channels, where
    /// random reads, each reading its translation page first, queued (here
    /// 94% and 20% of the time on the busiest and idlest channel). Held
    /// near their share, every channel has its own (90% and 83%).
    #[test]
    fn random_reads_after_a_sequential_fill_keep_every_channel_busy() {
        let o = ["ftl.name=\"dftl\"", "geometry.blocks_per_plane=64", "geometry.pages_per_block=32"];
        let workload = "rw=randread,bs=4k,ios=20000,iodepth=256,seed=3";
        let (_, r) = run("modern-tlc", &o, workload, Precondition::new(1.0, 0.0));
        let (busiest, idlest) = (r.utilization.channels_busiest, r.utilization.channels_idlest);
        assert!(r.flash_reads_by_cause.mapping > 10_000, "random reads miss the CMT");
        assert!(idlest > 0.8 * busiest, "channels busy {busiest:.3} at most, {idlest:.3} at least");
    }

    /// Random writes rewrite translation pages all the time: free to go to
    /// the plane free soonest, they gathered on a few planes (here 32 on
    /// one, against a share of 7.5; on `modern-tlc` 302 against 22, its
    /// array 44% busy at QD 32 as later writes' translation reads queued
    /// there). Held near their share, none takes more than 15% above it.
    #[test]
    fn random_writes_keep_translation_pages_near_their_share_of_each_plane() {
        let o = [
            "ftl.name=\"dftl\"",
            "nand.record_sequence=true",
            "geometry.chips_per_channel=1",
            "geometry.dies_per_chip=1",
            "geometry.planes_per_die=2",
            "geometry.blocks_per_plane=128",
            "geometry.pages_per_block=64",
            "geometry.page_size=4096",
        ];
        let workload = "rw=randwrite,bs=4k,ios=20000,iodepth=32,seed=3";
        let (sim, r) = run("modern-tlc", &o, workload, Precondition::new(1.0, 0.5));
        assert!(r.flash_programs_by_cause.mapping > 10_000, "random writes rewrite translation pages");
        let logical = sim.config().logical_pages() as u32;
        let dev = sim.device();
        let geo = dev.geometry();
        // Each translation page's current copy: its latest program.
        let mut latest = std::collections::HashMap::new();
        for b in 0..geo.blocks {
            let block = BlockId(b);
            for i in 0..dev.array.written_pages(block) {
                let ppn = geo.ppn(block, i);
                let x = dev.array.oob_lpn_raw(ppn);
                if x >= logical && x != NO_LPN {
                    let seq = dev.array.oob_seq(ppn).unwrap();
                    let e = latest.entry(x).or_insert((seq, block));
                    if seq > e.0 {
                        *e = (seq, block);
                    }
                }
            }
        }
        let mut per_plane = vec![0u32; geo.planes as usize];
        for &(_, block) in latest.values() {
            per_plane[geo.plane_of(block).idx()] += 1;
        }
        let share = per_plane.iter().sum::<u32>() as f64 / per_plane.len() as f64;
        let most = *per_plane.iter().max().unwrap() as f64;
        assert!(most <= share * 1.15 + 2.0, "translation pages a plane: {per_plane:?}");
    }

    /// Preconditioning ends with a settled drive: the rewrites its last GC
    /// victims queued are written then, not left to the run's first miss
    /// (on `modern-tlc`, 5,799 translation-page programs booked ahead of the
    /// first reads, which waited up to 36 ms). Here random reads right after
    /// an overwrite program almost no translation page (486 for 1,669
    /// misses when the rewrites were left to them), and none waits more
    /// than a few reads' time (4.8 ms then).
    #[test]
    fn a_run_after_preconditioning_finds_no_rewrites_left() {
        let o = ["ftl.name=\"dftl\"", "geometry.blocks_per_plane=64", "geometry.pages_per_block=32"];
        let workload = "rw=randread,bs=4k,ios=2000,iodepth=128,seed=3";
        let (_, r) = run("modern-tlc", &o, workload, Precondition::new(1.0, 0.5));
        let misses = r.flash_reads_by_cause.mapping;
        assert!(misses > 1000, "random reads miss the CMT: {misses}");
        assert!(r.flash_programs_by_cause.mapping * 10 < misses, "{:?}", r.flash_programs_by_cause);
        let max_ms = r.latency_us.read.max / 1000.0;
        assert!(max_ms < 2.0, "a read waited {max_ms:.1} ms");
    }

    /// Under a uniform random load the planes' GC jobs run in step and
    /// finish their victims together. Their batches' rewrites, written all
    /// at the next translation, were thousands of programs booked at one
    /// instant, and reads queued behind them: here the slowest read waited
    /// 354 ms, p99 145 ms, the run at 56% of its bound. Written by the
    /// engine's background steps a plane at a time (and past a rewrite a
    /// plane, a plane's share at each translation): 41 ms, 29 ms, 87%.
    #[test]
    fn rewrites_due_go_a_plane_at_a_time_not_all_at_once() {
        let o = ["ftl.name=\"dftl\"", "geometry.blocks_per_plane=64", "geometry.pages_per_block=32"];
        let workload = "rw=randrw,rwmixread=70,bs=4k,ios=8000,iodepth=32,seed=3";
        let (_, r) = run("modern-tlc", &o, workload, Precondition::new(1.0, 0.5));
        assert!(r.flash_programs_by_cause.mapping > 10_000, "GC's moves dirty translation pages");
        let (p99_ms, max_ms) = (r.latency_us.read.p99 / 1000.0, r.latency_us.read.max / 1000.0);
        assert!(max_ms < 100.0 && p99_ms < 60.0, "reads waited up to {max_ms:.1} ms, p99 {p99_ms:.1} ms");
        let share = r.bound.as_ref().unwrap().share;
        assert!(share > 0.75, "the run at {:.0}% of its bound", share * 100.0);
    }

    /// A translation page still being programmed after its rewrite is in
    /// the controller: a miss on it then reads nothing from flash. With one
    /// cached entry, a read of another translation page's entry evicts the
    /// write's dirty one (page 0 is rewritten), and a read beside it misses
    /// on page 0 while that is programmed.
    #[test]
    fn a_translation_page_being_rewritten_is_read_from_the_controller() {
        let o = ["ftl.name=\"dftl\"", "ftl.cache_bytes=8", "cache.bytes=0"];
        let config = Config::load("hat-table4", &o.map(String::from)).unwrap();
        let spp = (config.geometry.page_size / 512) as u64;
        let epp = (config.geometry.page_size / 4) as u64;
        let mut sim = Simulation::new(config).unwrap();
        let cmd = |op, lpn: u64| HostCmd {
            time: SimTime::ZERO,
            op,
            start: Sector(lpn * spp),
            sectors: spp,
            continued: false,
        };
        let mapping = |sim: &Simulation| {
            let c = &sim.device().counters;
            (c.reads[Cause::Mapping as usize], c.programs[Cause::Mapping as usize])
        };
        let written = sim.submit(&cmd(Op::Write, 0), SimTime::ZERO, None, None).unwrap();
        sim.submit(&cmd(Op::Read, epp), written, None, None).unwrap();
        assert_eq!(mapping(&sim), (0, 1), "page 0 rewritten; page 1 placed with the unwritten data read");
        sim.submit(&cmd(Op::Read, 0), written, None, None).unwrap();
        assert_eq!(mapping(&sim), (0, 1), "page 0 read from flash while the controller held it");
        // Long after, both pages are on flash and read from there.
        let later = SimTime(written.0 + 1_000_000_000);
        sim.submit(&cmd(Op::Read, epp), later, None, None).unwrap();
        sim.submit(&cmd(Op::Read, 0), later, None, None).unwrap();
        assert_eq!(mapping(&sim), (2, 1));
    }
}
