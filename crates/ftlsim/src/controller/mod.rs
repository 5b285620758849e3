//! The controller between the host interface and the FTL: the write buffer
//! (a DRAM data cache shared by every FTL) and the scheduler of background
//! work. The FTL decides what background work does (which victim, which
//! copies, where); the controller decides when, the same way for every FTL.
//!
//! **Background work.** An FTL asks for background time on a plane with
//! [`Device::wake`]; the controller then calls [`Ftl::background`] for that
//! plane, one step at a time, whenever the plane is free before the next
//! host command arrives, until the FTL says it is done. Steps are run in
//! time order across planes (a min-heap on (time, insertion order), so
//! equal times are first come, first served). A host command arriving while
//! a step runs waits for that step only. When the FTL says a destage would
//! have to pay GC copies first ([`Ftl::destage_must_wait`]), destagers wait
//! idle and a background step that pays the copies off restarts one; a
//! writer stalled on a full buffer with none in flight runs background work
//! ahead until one starts (its admission time is found at its issue, so
//! work booked then may precede host commands issued meanwhile).
//!
//! **Write buffer** (`cache.bytes` > 0). A write completes once its data has
//! crossed the host link and sits in the buffer; if every slot is dirty or
//! being destaged, the writer stalls until one is free (counted). Dirty
//! pages are destaged to the FTL oldest first (with `cache.policy =
//! "heap"`, lowest value first, and a full buffer may make the writer wait
//! for a write-back though clean pages remain: [`buffer`]) by `cache.destage_depth`
//! destagers (default: one per array unit, so destaging can keep every die
//! programming), each starting its next page as
//! soon as its last one is on flash, so destaging overlaps host work on the
//! same resources and the FTL's allocation spreads it over the planes.
//! A page dirty in runs apart (two writes, a gap between) goes as one
//! batch of its runs, which the page-mapped FTLs write as one page (one
//! read of the old page, one program) and the others a run at a time.
//! Reads wholly held in the buffer are served from it; others read flash
//! and take the buffer's newer sectors on top. TRIM drops whole buffered
//! pages; FLUSH (and FUA, a FLUSH after the write) destages everything
//! dirty and completes when all of it is on flash.
//!
//! With `timing.multi_plane`, a destager hands the FTL the oldest dirty
//! pages, as many as a die has planes, in one [`Ftl::write_batch`], so
//! they may form one multi-plane program (each completes when the batch
//! does).
//!
//! With mapping units smaller than the page (`ftl.map_unit_bytes`), the
//! buffer's slots are units, and a destager hands the FTL the oldest page's
//! worth of dirty units in one [`Ftl::write_batch`], so the FTL packs units
//! of different LPNs, written by different host commands, into one page.

pub mod buffer;
pub mod cores;
pub mod heap;
pub mod index;

use crate::config::Config;
use crate::engine::Device;
use crate::error::Result;
use crate::ftl::{Ftl, Span, page_chunks};
use crate::units::{PlaneId, Sector, SimTime};
use buffer::{BufferStats, SectorMask, WriteBuffer, overlay_held, sector_mask};
use cores::Cores;
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;

/// Task id of a destager in the schedule (plane ids are the others).
const DESTAGE: u32 = u32::MAX;

/// A task in the schedule, due at `due`: among tasks due at once, the one
/// scheduled first runs first. Ordered for [`BinaryHeap`]'s max-heap with
/// the soonest on top, comparing due time and insertion order as one
/// integer (the order is unique, so the task never decides): sifting
/// compares entries several times a host command behind a write buffer.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Due {
    due: SimTime,
    order: u64,
    task: u32,
}

impl Due {
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.due.0 as u128) << 64 | self.order as u128
    }
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
    #[inline(always)]
    fn le(&self, other: &Self) -> bool {
        self.key() >= other.key()
    }
    #[inline(always)]
    fn lt(&self, other: &Self) -> bool {
        self.key() > other.key()
    }
    #[inline(always)]
    fn ge(&self, other: &Self) -> bool {
        self.key() <= other.key()
    }
    #[inline(always)]
    fn gt(&self, other: &Self) -> bool {
        self.key() < other.key()
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key().cmp(&self.key())
    }
}

/// `task`'s schedule entry, due at `t` (`inserted` counts the entries made).
fn entry(inserted: &mut u64, t: SimTime, task: u32) -> Due {
    *inserted += 1;
    Due { due: t, order: *inserted, task }
}

#[derive(Serialize, Deserialize)]
pub struct Controller {
    buffer: Option<WriteBuffer>,
    /// (time, insertion order, task): planes with background work, and
    /// busy destagers.
    schedule: BinaryHeap<Due>,
    inserted: u64,
    queued: Vec<bool>,
    idle_destagers: u32,
    /// The time the controller has reached (wakes are scheduled no earlier).
    now: SimTime,
    wakes: Vec<u32>,
    /// Sectors of a buffer slot: a page, or a mapping unit.
    sectors_per_page: u32,
    /// Mapping units per page: slots a destage batches.
    units_per_page: u32,
    payloads: bool,
    /// How long the last host write waited for buffer space.
    pub last_stall: crate::units::Nanos,
    /// `ftl.trim`: TRIM acts (else it is acknowledged and ignored).
    trim_enabled: bool,
    destagers: u32,
    /// Whole pages a destager takes at once: a die's planes with
    /// `timing.multi_plane`, else one.
    destage_pages: usize,
    /// The FTL has held a destage back until GC copies were paid
    /// ([`Ftl::destage_must_wait`]): background steps restart destagers.
    #[serde(default)]
    held_for_gc: bool,
    /// The firmware cores host commands and TRIMs take time on.
    pub cores: Cores,
}

impl Controller {
    pub fn new(cfg: &Config, dev: &Device) -> Controller {
        let geo = dev.geometry();
        let units_per_page = cfg.units_per_page();
        let page = geo.page_size as u64 / units_per_page as u64;
        let buffer = (cfg.cache.bytes > 0).then(|| {
            WriteBuffer::new(
                (cfg.cache.bytes / page) as u32,
                page as usize,
                cfg.cache.policy,
                heap::alpha_or_derived(cfg.cache.alpha, cfg),
                dev.array.stores_payloads(),
            )
        });
        // A controller keeps every die programming while dirty pages wait: one
        // destage in flight per array unit unless configured fewer (one per
        // channel left a 4-die channel's drive at a quarter of its program
        // bandwidth once the buffer filled).
        let destagers = if cfg.cache.destage_depth > 0 { cfg.cache.destage_depth } else { dev.units() as u32 };
        Controller {
            buffer,
            schedule: BinaryHeap::new(),
            inserted: 0,
            queued: vec![false; geo.planes as usize],
            idle_destagers: destagers,
            now: SimTime::ZERO,
            wakes: Vec::new(),
            sectors_per_page: geo.sectors_per_page / units_per_page,
            units_per_page,
            payloads: dev.array.stores_payloads(),
            last_stall: crate::units::Nanos::ZERO,
            trim_enabled: cfg.ftl.trim,
            destagers,
            destage_pages: if cfg.timing.multi_plane { geo.planes_per_die as usize } else { 1 },
            held_for_gc: false,
            cores: Cores::new(cfg.controller.cores, crate::units::Nanos::from_us_f64(cfg.controller.command_us)),
        }
    }

    pub fn buffer_stats(&self) -> Option<&BufferStats> {
        self.buffer.as_ref().map(|b| &b.stats)
    }

    pub fn buffer_capacity(&self) -> u32 {
        self.buffer.as_ref().map_or(0, WriteBuffer::capacity)
    }

    pub fn reset_stats(&mut self) {
        if let Some(b) = self.buffer.as_mut() {
            b.stats = BufferStats::default();
        }
    }

    /// Dirty pages in the buffer (not yet on flash, nor on their way).
    pub fn dirty_pages(&self) -> u32 {
        self.buffer.as_ref().map_or(0, WriteBuffer::dirty_pages)
    }

    /// Sectors of host data in the buffer not yet on flash, nor on their way.
    pub fn dirty_sectors(&self) -> u64 {
        self.buffer.as_ref().map_or(0, WriteBuffer::dirty_sectors)
    }

    fn push(&mut self, t: SimTime, task: u32) {
        self.schedule.push(entry(&mut self.inserted, t, task));
    }

    /// The schedule's top task, just run, due again at `t`: moved in place
    /// with the entry a push would make. Inlined: 13acfb7's build left it
    /// out of line, where its sift moved entries through `memcpy` calls
    /// (plain foundation run 4,711 -> 4,751 instructions a request).
    #[inline(always)]
    fn requeue_top(&mut self, t: SimTime, task: u32) {
        let mut top = self.schedule.peek_mut().expect("the task run is at the top");
        debug_assert_eq!(top.task, task, "the task run is at the top");
        *top = entry(&mut self.inserted, t, task);
    }

    /// The schedule's top task, just run, is done.
    fn drop_top(&mut self) {
        self.schedule.pop();
    }

    /// Runs the background work due before `t` (the next host command's
    /// issue time), in time order; afterwards nothing is booked before `t`.
    #[inline]
    pub fn run_until(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, t: SimTime) -> Result<()> {
        // Called at every host command, most of which find nothing due.
        if dev.has_wakes() || self.schedule.peek().is_some_and(|e| e.due < t) {
            self.run(ftl, dev, t, false)?;
        }
        self.now = self.now.max(t);
        dev.advance(t);
        Ok(())
    }

    /// Runs background work until there is none left: the buffer is clean
    /// and no plane has a GC job. Returns when the last of it ends.
    pub fn settle(&mut self, ftl: &mut dyn Ftl, dev: &mut Device) -> Result<SimTime> {
        let mut end = self.now;
        while let Some(done) = self.drain_one(ftl, dev, self.now)? {
            end = end.max(done);
        }
        end = end.max(self.run(ftl, dev, SimTime(u64::MAX), false)?);
        if let Some(b) = self.buffer.as_mut() {
            b.retire(SimTime(u64::MAX));
        }
        Ok(end)
    }

    /// Power fails: the buffer's contents (dirty pages not yet on flash
    /// included) and every pending task are lost; counters stay.
    pub fn power_cut(&mut self, at: SimTime) {
        if let Some(b) = self.buffer.as_mut() {
            b.lose_contents();
        }
        self.schedule.clear();
        self.queued.fill(false);
        self.idle_destagers = self.destagers;
        self.now = self.now.max(at);
    }

    /// Forgets every pending task's time (the clock restarts at zero once
    /// everything has settled).
    pub fn restart_clock(&mut self) {
        debug_assert!(self.schedule.iter().all(|e| e.task == DESTAGE));
        self.idle_destagers += self.schedule.len() as u32;
        self.schedule.clear();
        self.now = SimTime::ZERO;
        self.cores.restart();
    }

    /// Runs the background work due before `t`, in time order; returns
    /// when the last of it ends. With `until_destage`, runs on, a time's
    /// tasks at a time (those due before the next's time plus 1 ns), until
    /// a destage has started or nothing is left.
    fn run(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, mut t: SimTime, until_destage: bool) -> Result<SimTime> {
        let mut last = SimTime::ZERO;
        loop {
            if dev.has_wakes() {
                dev.take_wakes(&mut self.wakes);
                for i in 0..self.wakes.len() {
                    let p = self.wakes[i];
                    if !self.queued[p as usize] {
                        self.queued[p as usize] = true;
                        let at = dev.plane_free(PlaneId(p)).max(self.now);
                        self.push(at, p);
                    }
                }
                self.wakes.clear();
            }
            // The task stays at the top while it runs (nothing it does
            // touches the schedule) and is moved in place if due again: one
            // sift rather than a pop's and a push's, the same entry a push
            // would make, so the same order.
            let Some(&Due { due: time, task, .. }) = self.schedule.peek() else { break };
            if time >= t {
                if until_destage && !self.destage_started() {
                    t = time + crate::units::Nanos(1);
                    continue;
                }
                break;
            }
            self.now = self.now.max(time);
            if task == DESTAGE {
                match self.destage(ftl, dev, time).inspect_err(|_| self.drop_top())? {
                    Some(done) => {
                        last = last.max(done);
                        self.requeue_top(done, DESTAGE);
                    }
                    None => {
                        self.drop_top();
                        self.idle_destagers += 1;
                    }
                }
                continue;
            }
            let plane = PlaneId(task);
            let at = time.max(dev.plane_free(plane));
            if at >= t {
                // The plane took host work meanwhile: due again once free
                // (about every other host command finds a GC plane so).
                self.requeue_top(at, task);
                continue;
            }
            match ftl.background(dev, plane, at).inspect_err(|_| self.drop_top())? {
                Some(next) => {
                    last = last.max(next);
                    self.requeue_top(next, task);
                }
                None => {
                    self.drop_top();
                    self.queued[task as usize] = false;
                }
            }
            // A step may have paid off the last copy a plane owed, which
            // idle destagers were waiting for (`gc.debt = "background"`).
            if self.held_for_gc
                && self.idle_destagers > 0
                && self.dirty_pages() >= self.units_per_page
                && !ftl.destage_must_wait()
            {
                self.idle_destagers -= 1;
                self.push(at, DESTAGE);
            }
        }
        Ok(last)
    }

    /// Runs background work in time order until a destager has started,
    /// or none is left; whether one started.
    fn run_until_a_destage(&mut self, ftl: &mut dyn Ftl, dev: &mut Device) -> Result<bool> {
        if !self.destage_started() {
            let Some(&Due { due: time, .. }) = self.schedule.peek() else { return Ok(false) };
            self.run(ftl, dev, time + crate::units::Nanos(1), true)?;
        }
        Ok(self.destage_started())
    }

    /// Whether a destage is in flight.
    fn destage_started(&self) -> bool {
        self.buffer.as_ref().is_some_and(|b| b.next_retirement().is_some())
    }

    /// A destager's next batch: the oldest dirty page at `at`, or, with
    /// sub-page units, a page's worth of them once that many are dirty (a
    /// lone unit waits for company, a FLUSH or idle time rather than going
    /// to flash padded); none while the FTL would first have to make GC
    /// copies owed by other writes. Returns when it is on flash.
    fn destage(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, at: SimTime) -> Result<Option<SimTime>> {
        if self.units_per_page > 1 && self.dirty_pages() < self.units_per_page {
            return Ok(None);
        }
        if ftl.destage_must_wait() {
            self.held_for_gc = true;
            return Ok(None);
        }
        self.drain_one(ftl, dev, at)
    }

    /// Destages the oldest dirty page (or page's worth of units, however
    /// few) at `at`; returns when it is on flash.
    fn drain_one(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, at: SimTime) -> Result<Option<SimTime>> {
        if self.units_per_page > 1 {
            return self.destage_oldest(ftl, dev, at, self.units_per_page as usize);
        }
        if self.destage_pages > 1 {
            return self.destage_oldest(ftl, dev, at, self.destage_pages);
        }
        let spp = self.sectors_per_page;
        let Some(buf) = self.buffer.as_mut() else { return Ok(None) };
        let Some((slot, lpn, mask)) = buf.next_dirty(at) else { return Ok(None) };
        // The next page to go was buffered long ago: its mapping has left
        // the cache. One destage ahead is time enough to fetch it, and by
        // the end of this one what the mapping points to.
        let next =
            buf.dirty_after(slot).map(|next| Span { start: Sector(next as u64 * spp as u64), sectors: spp as u64 });
        if let Some(next) = next {
            ftl.prefetch(next);
        }
        let done = {
            let mut runs = slot_spans(buf, slot, lpn, mask, spp, self.payloads);
            let first = runs.next().expect("a dirty slot has a dirty sector");
            match runs.next() {
                None => ftl.write(dev, first.0, at, at, first.1)?,
                // Runs apart: one batch, so the FTL can merge them into one page write.
                Some(second) => {
                    let spans: Vec<_> = [first, second].into_iter().chain(runs).collect();
                    ftl.write_batch(dev, &spans, at, at)?
                }
            }
        };
        if let Some(next) = next {
            ftl.prefetch_mapped(next);
        }
        buf.destaging(slot, done);
        Ok(Some(done))
    }

    /// Destages the `n` oldest dirty slots at `at` as one batch: a page's
    /// worth of units, which the FTL packs, or with `timing.multi_plane` a
    /// die's worth of pages, which may form one multi-plane program.
    /// Returns when the last is on flash.
    fn destage_oldest(
        &mut self,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        at: SimTime,
        n: usize,
    ) -> Result<Option<SimTime>> {
        let Some(buf) = self.buffer.as_mut() else { return Ok(None) };
        let oldest = buf.oldest_dirty(n, at);
        if oldest.is_empty() {
            return Ok(None);
        }
        self.destage_slots(ftl, dev, at, &oldest).map(Some)
    }

    /// Destages the dirty `slots` (slot, page or unit, mask) at `at` as one
    /// batch; returns when the last is on flash.
    fn destage_slots(
        &mut self,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        at: SimTime,
        slots: &[(u32, u32, SectorMask)],
    ) -> Result<SimTime> {
        let sectors = self.sectors_per_page;
        let buf = self.buffer.as_mut().expect("destaging needs a buffer");
        let spans: Vec<_> = slots
            .iter()
            .flat_map(|&(slot, unit, mask)| slot_spans(buf, slot, unit, mask, sectors, self.payloads))
            .collect();
        let done = ftl.write_batch(dev, &spans, at, at)?;
        for &(slot, ..) in slots {
            buf.destaging(slot, done);
        }
        Ok(done)
    }

    /// A hint that a command on `span` comes soon: its buffer entry is
    /// fetched into cache. Never changes results.
    pub fn prefetch(&self, span: Span) {
        if let Some(buf) = &self.buffer {
            buf.prefetch(crate::ftl::split_sector(span.start.0, self.sectors_per_page as u64).0 as u32);
        }
    }

    /// A hint that a write of `span` comes a few commands from now, its
    /// mapping prefetched earlier (see [`Ftl::prefetch_mapped`]): passed to
    /// the FTL when the write goes straight to it; behind the buffer the
    /// FTL writes at destage time, and the destage hints then.
    pub fn prefetch_write(&self, ftl: &dyn Ftl, span: Span) {
        if self.buffer.is_none() {
            ftl.prefetch_mapped(span);
        }
    }

    /// A host write whose data has crossed the link by `ready`; returns
    /// when it is complete (buffered, or on flash without a buffer).
    #[inline]
    pub fn write(
        &mut self,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        span: Span,
        issue: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        self.last_stall = crate::units::Nanos::ZERO;
        if self.buffer.is_none() {
            return ftl.write(dev, span, issue, ready, data);
        }
        self.write_buffered(ftl, dev, span, ready, data)
    }

    /// [`write`](Self::write) into the buffer (out of line: without one, a
    /// write is a call to the FTL).
    fn write_buffered(
        &mut self,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        span: Span,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        // Behind the buffer the write's own work is its host transfer: the
        // destages it starts are not, nor their waits for a bus (its wait
        // for room is counted as its stall).
        let own = dev.served_from();
        let mut done = ready;
        for c in page_chunks(span, self.sectors_per_page) {
            let mask = sector_mask(c.first_sector, c.sectors);
            let mut t = ready;
            let mut admitted = self.buffer.as_mut().expect("checked above").admit(c.lpn.0, mask, t);
            let slot = loop {
                if let Some(s) = admitted {
                    break s;
                }
                let buf = self.buffer.as_mut().expect("checked above");
                // No room. The heap rule chose a dirty page to give up:
                // book its write-back now and wait for it.
                if let Some(victim) = buf.dirty_victim() {
                    self.destage_slots(ftl, dev, t, &[victim])?;
                } else {
                    // Else wait for the first destage in flight to end, or
                    // start one now if none is.
                    match buf.next_retirement() {
                        Some(end) => t = t.max(end),
                        None => {
                            // Destagers wait for planes' GC to be paid off
                            // (`gc.debt = "background"`): run the background
                            // work that lets one go rather than force a destage
                            // that would pay the copies first.
                            if !(ftl.destage_must_wait() && self.run_until_a_destage(ftl, dev)?) {
                                self.drain_one(ftl, dev, t)?;
                            }
                        }
                    }
                }
                // Waiting buffered no page: this one is still not buffered,
                // and its index entry need not be looked up again.
                admitted = self.buffer.as_mut().expect("checked above").admit_miss(c.lpn.0, mask, t);
            };
            let buf = self.buffer.as_mut().expect("checked above");
            if let Some(data) = data {
                buf.page_mut(slot)[c.byte_range()].copy_from_slice(&data[c.buf_range()]);
            }
            if t > ready {
                buf.stats.stalls += 1;
                buf.stats.stall_ns += (t - ready).0;
            }
            done = done.max(t);
        }
        self.last_stall = done - ready;
        while self.idle_destagers > 0 && self.dirty_pages() > 0 {
            self.idle_destagers -= 1;
            match self.destage(ftl, dev, ready)? {
                Some(end) => self.push(end, DESTAGE),
                None => {
                    // Too few sub-page units dirty for a batch yet, or no
                    // plane free of GC debt.
                    self.idle_destagers += 1;
                    break;
                }
            }
        }
        dev.restore_served(own);
        Ok(done)
    }

    /// A host read; returns when its data is ready for the host link.
    pub fn read(
        &mut self,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        span: Span,
        issue: SimTime,
        mut out: Option<&mut [u8]>,
    ) -> Result<SimTime> {
        let spp = self.sectors_per_page;
        let Some(buf) = self.buffer.as_mut() else { return ftl.read(dev, span, issue, out) };
        let held = |buf: &WriteBuffer, lpn: u32, mask: SectorMask| {
            buf.lookup(lpn).filter(|&s| buf.mask(s) & mask == mask).is_some()
        };
        let pages = page_chunks(span, spp).count() as u64;
        let all_held = page_chunks(span, spp).all(|c| held(buf, c.lpn.0, sector_mask(c.first_sector, c.sectors)));
        let done = if all_held {
            buf.stats.read_hits += pages;
            for c in page_chunks(span, spp) {
                if let Some(s) = buf.lookup(c.lpn.0) {
                    buf.touch(s, issue);
                }
            }
            issue
        } else {
            buf.stats.read_misses += pages;
            ftl.read(dev, span, issue, out.as_deref_mut())?
        };
        // The buffer's sectors are newer than flash's.
        if let Some(out) = out {
            let buf = self.buffer.as_ref().expect("checked above");
            for c in page_chunks(span, spp) {
                if let Some(s) = buf.lookup(c.lpn.0) {
                    overlay_held(buf.mask(s), buf.page(s), c.first_sector, &mut out[c.buf_range()]);
                }
            }
        }
        Ok(done)
    }

    pub fn trim(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, span: Span, issue: SimTime) -> Result<SimTime> {
        // `ftl.trim` off: acknowledged and ignored, here once for every FTL
        // (buffered data included).
        if !self.trim_enabled {
            return Ok(issue);
        }
        if let Some(buf) = self.buffer.as_mut() {
            // Whole pages, as the FTLs trim; their slots (units or pages).
            let pages = crate::ftl::whole_pages(span, self.sectors_per_page * self.units_per_page);
            for slot_lpn in pages.start * self.units_per_page..pages.end * self.units_per_page {
                buf.discard(slot_lpn);
            }
        }
        ftl.trim(dev, span, issue)
    }

    /// Destages everything dirty; completes when all of it is on flash.
    pub fn flush(&mut self, ftl: &mut dyn Ftl, dev: &mut Device, issue: SimTime) -> Result<SimTime> {
        let mut done = issue;
        while let Some(end) = self.drain_one(ftl, dev, issue)? {
            done = done.max(end);
        }
        if let Some(buf) = self.buffer.as_ref() {
            done = done.max(buf.last_retirement().unwrap_or(issue));
        }
        ftl.flush(dev, done)
    }

    /// Every sector of logical page `lpn` held newer than flash: the FTL's
    /// own data cache's (COFTL's), then the write buffer's, as
    /// [`buffered`](Self::buffered) gives them. The one list of where such
    /// data lives, for whatever must see it (a read of the drive's
    /// contents, TRIM zeroing a partial page).
    pub fn held<'a>(&'a self, ftl: &'a dyn Ftl, lpn: u32) -> impl Iterator<Item = (SectorMask, &'a [u8], u32)> + 'a {
        let cached = ftl.cached_page(crate::units::Lpn(lpn)).map(|(mask, bytes)| (mask, bytes, 0));
        cached.into_iter().chain(self.buffered(lpn))
    }

    /// The buffered sectors of logical page `lpn`, slot by slot: each
    /// slot's sector mask, its bytes (payload mode; else empty) and its
    /// first sector in the page (0 but for sub-page unit slots).
    pub fn buffered(&self, lpn: u32) -> impl Iterator<Item = (SectorMask, &[u8], u32)> {
        let upp = self.units_per_page;
        let (spu, payloads) = (self.sectors_per_page, self.payloads);
        self.buffer.iter().flat_map(move |buf| {
            (lpn * upp..(lpn + 1) * upp).filter_map(move |unit| {
                let s = buf.lookup(unit)?;
                Some((buf.mask(s), if payloads { buf.page(s) } else { &[][..] }, (unit - lpn * upp) * spu))
            })
        })
    }

    pub fn check(&self) -> std::result::Result<(), String> {
        self.buffer.as_ref().map_or(Ok(()), WriteBuffer::check)
    }
}

/// The sector runs dirty in buffer `slot` (holding page or unit `index`
/// of `sectors` sectors, dirty sectors in `mask`) as spans to write, each
/// with its bytes when payloads are stored.
fn slot_spans(
    buf: &WriteBuffer,
    slot: u32,
    index: u32,
    mask: SectorMask,
    sectors: u32,
    payloads: bool,
) -> impl Iterator<Item = (Span, Option<&[u8]>)> + '_ {
    sector_runs(mask, sectors).map(move |(first, n)| {
        let span = Span { start: Sector(index as u64 * sectors as u64 + first as u64), sectors: n as u64 };
        let data = payloads.then(|| &buf.page(slot)[first as usize * 512..(first + n) as usize * 512]);
        (span, data)
    })
}

/// The runs of consecutive set bits of `mask` below `spp`: (first, length).
/// (Counted a bit at a time, this was a tenth of the write buffer's cost.)
fn sector_runs(mask: SectorMask, spp: u32) -> impl Iterator<Item = (u32, u32)> {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= spp {
            return None;
        }
        let first = i + (mask >> i).trailing_zeros().min(spp - i);
        if first >= spp {
            i = spp;
            return None;
        }
        let n = (mask >> first).trailing_ones().min(spp - first);
        i = first + n;
        Some((first, n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_runs_split_a_mask() {
        let runs: Vec<_> = sector_runs(0b0111_0011, 8).collect();
        assert_eq!(runs, vec![(0, 2), (4, 3)]);
        assert_eq!(sector_runs(u128::MAX, 8).collect::<Vec<_>>(), vec![(0, 8)]);
        assert_eq!(sector_runs(0, 8).count(), 0);
    }

    proptest::proptest! {
        /// The schedule pops entries in (due time, insertion order) order,
        /// as a heap of the plain triples reversed does, and its
        /// comparisons agree with that order.
        #[test]
        fn schedule_pops_soonest_first_then_first_scheduled(
            times in proptest::collection::vec(0u64..8, 1..64),
            wide in proptest::prelude::any::<u64>(),
        ) {
            let (mut inserted, mut heap) = (0, BinaryHeap::new());
            let mut plain = BinaryHeap::new();
            for (i, &t) in times.iter().enumerate() {
                // Times differing in the high bits too.
                let t = SimTime(if i % 2 == 0 { t } else { wide.wrapping_add(t) });
                let e = entry(&mut inserted, t, i as u32);
                plain.push(std::cmp::Reverse((e.due, e.order, e.task)));
                heap.push(e);
            }
            let entries: Vec<Due> = heap.iter().copied().collect();
            for a in &entries {
                for b in &entries {
                    let expected = (b.due, b.order).cmp(&(a.due, a.order));
                    proptest::prop_assert_eq!(a.cmp(b), expected);
                    proptest::prop_assert_eq!(a < b, expected.is_lt());
                    proptest::prop_assert_eq!(a <= b, expected.is_le());
                    proptest::prop_assert_eq!(a > b, expected.is_gt());
                    proptest::prop_assert_eq!(a >= b, expected.is_ge());
                }
            }
            while let Some(e) = heap.pop() {
                let std::cmp::Reverse(p) = plain.pop().expect("as many entries");
                proptest::prop_assert_eq!((e.due, e.order, e.task), p);
            }
        }

        /// Against a bit-by-bit reading of the mask, for any page size.
        #[test]
        fn sector_runs_are_the_masks_runs(mask: u128, spp in 1u32..=128) {
            let mut expected = Vec::new();
            for i in 0..spp {
                if mask >> i & 1 == 1 {
                    match expected.last_mut() {
                        Some((first, n)) if *first + *n == i => *n += 1,
                        _ => expected.push((i, 1)),
                    }
                }
            }
            proptest::prop_assert_eq!(sector_runs(mask, spp).collect::<Vec<_>>(), expected);
        }
    }
}
