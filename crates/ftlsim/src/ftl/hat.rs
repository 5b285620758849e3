//! `hat`: Hu, Jiang, Tian, Xu and Luo, "Achieving Page-Mapping FTL
//! Performance at Block-Mapping FTL Cost by Hiding Address Translation"
//! (MSST 2010).
//!
//! The whole page map (SMT) sits in byte-addressable PCM, updated in place
//! one entry at a time, on its own access path ([`Device::pcm_read`],
//! [`Device::pcm_write`]: a PCM timeline independent of the flash channels).
//! A quick mapping table (QMT) in controller RAM caches entries, LRU, each
//! with an update bit. Following the paper's Algorithm 1 and Figures 6–7:
//!
//! - a QMT hit translates at once;
//! - a miss reads the entry from PCM (0.115 µs) while the request waits for
//!   its flash unit, so the data operation starts at the later of the two;
//!   a write's data does not wait for the lookup at all (only the old page's
//!   bookkeeping needs it);
//! - a victim with its update bit set is written back to PCM (90 µs) in
//!   parallel with the data operation (Figure 7), on the PCM's own timeline.
//!   One PCM write programs an aligned run of `pcm.entries_per_write`
//!   entries (a part's program buffer), so the victim's dirty neighbours in
//!   that run are written, and cleaned, with it; at 1 (the paper's
//!   Algorithm 1, which `repro hat` pins) each entry is written alone.
//!   The PCM takes one write at a time: the evicted entry waits in the
//!   controller until the PCM takes it, and so does the request that
//!   evicted it (it cannot complete while its entry would be lost), but not
//!   for the write itself. Write-backs thus occupy the PCM like any other
//!   resource: under sustained misses with dirty victims the PCM's write
//!   bandwidth (one entry per `pcm.write_us`) bounds the drive, while an
//!   idle PCM adds no latency. Lookups are served ahead of queued
//!   write-backs (write pausing) and delay them by their own access time;
//! - GC moving a page updates its QMT entry, or the SMT in PCM directly: a
//!   background write that occupies the PCM (later write-backs queue behind
//!   it) without holding the request GC runs under.
//!
//! The data side is `page`'s ([`PageMapped`]); no mapping data is on flash,
//! so flash operations and erases equal `page`'s for the same input.
//!
//! A FLUSH writes every dirty QMT entry back to PCM (RAM is volatile), a
//! PCM write per run of `pcm.entries_per_write` holding any. A TRIM updates
//! its entries through the QMT like writes, so a range larger than the QMT
//! costs a PCM write per run of entries, not per entry.
//!
//! Simplifications: one PCM device, writes first come, first served; RAM
//! lookups take no time.

use super::FtlStats;
use super::cmt::CachedMap;
use super::page::{MapTable, NEVER, PageCore, PageMapped};
use crate::config::Config;
use crate::engine::Device;
use crate::error::Result;
use crate::nand::Geometry;
use crate::units::{Lpn, Ppn, SimTime};
use serde::{Deserialize, Serialize};

pub type Hat = PageMapped<HatMap>;

impl Hat {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Hat> {
        let logical = cfg.logical_pages() as u32;
        // The cache's dirty lists group the entries one PCM write programs.
        let map = HatMap {
            m: CachedMap::new(logical, &cfg.ftl, cfg.pcm.entries_per_write, NEVER),
            writes_taken: SimTime::ZERO,
        };
        PageMapped::with_map(cfg, dev, map)
    }
}

#[derive(Serialize, Deserialize)]
pub struct HatMap {
    m: CachedMap,
    /// When the PCM has taken the current request's writes.
    writes_taken: SimTime,
}

impl MapTable for HatMap {
    const NAME: &'static str = "hat";
    const SERIAL_WRITES: bool = false;
    const TABLE_PAGES: bool = false;

    fn entries(&self) -> u32 {
        self.m.entries()
    }

    #[inline]
    fn get(&self, x: u32) -> u32 {
        self.m.cur(x)
    }

    fn lookup(&mut self, _: &mut PageCore, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<(u32, SimTime)> {
        if let Some(v) = self.m.hit(lpn) {
            return Ok((v, now));
        }
        let known = dev.pcm_read(now);
        if self.m.cache.is_full() {
            let victim = self.m.cache.lru().expect("a full cache has an LRU entry");
            if self.m.cache.is_dirty(victim) {
                self.writes_taken = self.writes_taken.max(dev.pcm_write(now).0);
                self.m.cache.write_back_group(self.m.cache.group_of(victim), |_| {});
            }
        }
        Ok((self.m.load("hat", lpn)?, known))
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, value: u32) {
        self.m.set(lpn, value);
    }

    fn flush(&mut self, _: &mut PageCore, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        for run in self.m.cache.dirty_groups() {
            done = done.max(dev.pcm_write(now).1);
            self.m.cache.write_back_group(run, |_| {});
        }
        Ok(done)
    }

    #[inline]
    fn begin_request(&mut self) {
        self.writes_taken = SimTime::ZERO;
    }

    #[inline]
    fn end_request(&mut self) -> SimTime {
        self.writes_taken
    }

    #[inline]
    fn moved(&mut self, dev: &mut Device, x: u32, _: u32, dst: Ppn, now: SimTime) {
        if !self.m.moved(x, dst.0) {
            dev.pcm_write(now);
        }
    }

    fn placed(&mut self, _: &mut PageCore, _: &mut Device, lpn: Lpn, ppn: Ppn, _: SimTime) -> Result<()> {
        self.m.placed(lpn, ppn.0);
        Ok(())
    }

    fn stats(&self, stats: &mut FtlStats) {
        self.m.stats(stats);
    }

    fn reset_stats(&mut self) {
        self.m.reset_stats();
    }

    fn ram_bytes(&self, geo: &Geometry) -> u64 {
        // The SMT is in PCM, not RAM.
        self.m.ram_bytes(geo)
    }

    fn check(&self, _dev: &Device) -> Result<()> {
        self.m.check("hat")
    }

    /// PCM entries that differ from what recovery found are rewritten.
    fn recover(&mut self, _: &mut PageCore, dev: &mut Device, values: &[u32], now: SimTime) -> Result<SimTime> {
        self.writes_taken = SimTime::ZERO;
        let mut runs: Vec<u32> = self.m.recover(values).into_iter().map(|x| self.m.cache.group_of(x)).collect();
        // Ascending already: `recover` lists the entries in order.
        runs.dedup();
        Ok(runs.iter().fold(now, |done, _| done.max(dev.pcm_write(now).1)))
    }
}
