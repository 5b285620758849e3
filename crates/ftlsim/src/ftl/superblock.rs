//! `superblock`: the superblock FTL of Kang, Jo, Kim and Lee, "A
//! superblock-based flash translation layer for NAND flash memory" (EMSOFT
//! 2006), as μ-FTL (Lee et al., EMSOFT 2008) uses it for comparison.
//!
//! `ftl.superblock_blocks` (N) adjacent logical blocks form a superblock,
//! mapped at block level to a set of at most N + `ftl.superblock_extra_blocks`
//! (M) physical blocks; inside a superblock any logical page may live in
//! any page of its blocks (page mapping), the map being kept in the spare
//! areas. Each superblock writes into its own update block. When it needs a
//! new block while holding N + M, it collects within itself: its block with
//! the fewest valid pages is copied into a fresh block, which becomes the
//! update block, and erased. When free blocks fall to `gc.min_free_blocks`,
//! global GC reclaims the drive's block with the fewest valid pages into its
//! own superblock's update block, until `ftl.gc_until_free` are free.
//!
//! RAM: the superblock table, N + M block numbers of 4 B per superblock.
//! The page offset within a superblock must fit the spare area, which
//! bounds the superblock: (N + M) × pages per block ≤ 65,536 (16 bits).
//!
//! Crash recovery (`--power-cut`): the OOB scan the page-mapped FTLs use
//! ([`recovery::scan`]) finds each page's newest copy, which also tells
//! which superblock owns each block; blocks left without one are erased, a
//! superblock's partly written block becomes its update block again. (No
//! superblock is found over its limit: its GC ends with an erase, and an
//! erase is a barrier the cut cannot split, `engine::power`.) TRIMs survive
//! a cut once a FLUSH has journalled them, as for the other FTLs.
//!
//! Simplifications: the paper's page-map hierarchy in the spare areas is
//! read at no cost (the simulation keeps the page map in an index that is
//! not a modelled table); no separate hot/cold update blocks.

use super::pool::{BlockPool, BlockState};
use super::recovery::{self, TrimJournal};
use super::{Ftl, FtlStats, RecoveryReport, Span, page_chunks, whole_pages};
use crate::config::{Config, UnwrittenReads};
use crate::engine::{AllCopies, Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

const NEVER: u32 = u32::MAX;
const TRIMMED: u32 = u32::MAX - 1;
const NONE: u32 = u32::MAX;
/// GC's map entries prefetched this many pages ahead of their test.
const PREFETCH_AHEAD: u32 = 8;

#[inline]
fn is_mapped(v: u32) -> bool {
    v < TRIMMED
}

#[derive(Serialize, Deserialize)]
pub struct Superblock {
    geo: Geometry,
    pool: BlockPool,
    /// Where each logical page is (the spare-area page maps).
    fwd: crate::mem::BigVec<u32>,
    /// Physical blocks of each superblock, its update block among them.
    blocks: Vec<Vec<BlockId>>,
    update: Vec<u32>,
    /// Superblock owning each physical block, or [`NONE`].
    owner: Vec<u32>,
    pages_per_sb: u32,
    limit: u32,
    gc_low: u32,
    gc_until: u32,
    unwritten: UnwrittenReads,
    scratch: Vec<u8>,
    /// TRIMs not yet durable (see `recovery`).
    journal: TrimJournal,
    stats: FtlStats,
}

/// Pages a superblock may span, its extra blocks included: a page offset
/// within it is kept in 16 bits of spare area.
const MAX_SUPERBLOCK_PAGES: u64 = 1 << 16;

/// The spare blocks a drive has for superblocks, and what they need.
#[derive(Clone, Copy)]
struct Room {
    blocks: u64,
    pages_per_block: u64,
    /// GC's free-block reserve (`gc.min_free_blocks`).
    gc: u64,
}

impl Room {
    /// For `logical` pages in superblocks of `sb_blocks` blocks: the
    /// superblocks, the spare blocks (beyond those the logical pages fill),
    /// and the spare blocks needed (every superblock may hold a part-filled
    /// update block, and GC needs its reserve and one more).
    fn of(self, logical: u64, sb_blocks: u64) -> (u64, u64, u64) {
        let sbs = logical.div_ceil(sb_blocks * self.pages_per_block);
        let spare = self.blocks.saturating_sub(logical.div_ceil(self.pages_per_block));
        (sbs, spare, sbs + self.gc + 1)
    }

    fn fits(self, logical: u64, sb_blocks: u64) -> bool {
        let (_, spare, needed) = self.of(logical, sb_blocks);
        spare >= needed
    }

    /// What would make the drive fit: larger superblocks (up to
    /// [`MAX_SUPERBLOCK_PAGES`] with the extra blocks) or more
    /// over-provisioning (in thousandths, rounded up).
    fn remedy(self, cfg: &Config) -> String {
        let f = &cfg.ftl;
        let logical = cfg.logical_pages();
        let largest = (MAX_SUPERBLOCK_PAGES / self.pages_per_block).saturating_sub(f.superblock_extra_blocks as u64);
        let blocks = (f.superblock_blocks as u64 + 1..=largest).find(|&s| self.fits(logical, s));
        // The logical space the config's own arithmetic gives at `milli` thousandths.
        let logical_at = |milli: u64| Config { overprovisioning: milli as f64 / 1000.0, ..cfg.clone() }.logical_pages();
        let fits_at = |milli: u64| self.fits(logical_at(milli), f.superblock_blocks as u64);
        // Fewer logical pages only help: the least sufficient thousandth by
        // bisection, up to 100 (a drive of 1/101 logical space).
        let (mut lo, mut hi) = ((cfg.overprovisioning * 1000.0).floor() as u64, 100_000u64);
        let op = fits_at(hi).then(|| {
            while lo + 1 < hi {
                let mid = (lo + hi) / 2;
                if fits_at(mid) { hi = mid } else { lo = mid }
            }
            format!("overprovisioning to at least {:.3}", hi as f64 / 1000.0)
        });
        let now = f.superblock_blocks;
        match (blocks, op) {
            (Some(s), Some(op)) => format!("set ftl.superblock_blocks to at least {s} (now {now}), or {op}"),
            (Some(s), None) => format!("set ftl.superblock_blocks to at least {s} (now {now})"),
            (None, Some(op)) => format!("set {op}"),
            (None, None) => format!("the drive has too few blocks for superblocks and GC's {} reserve", self.gc),
        }
    }
}

impl Superblock {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Superblock> {
        let geo = dev.geometry().clone();
        let f = &cfg.ftl;
        if f.superblock_blocks == 0 {
            return Err(Error::config("ftl.superblock_blocks", "must be at least 1"));
        }
        let limit = f.superblock_blocks + f.superblock_extra_blocks;
        if limit as u64 * geo.pages_per_block as u64 > MAX_SUPERBLOCK_PAGES {
            return Err(Error::config(
                "ftl.superblock_blocks",
                format!(
                    "{limit} blocks of {} pages: a page offset within the superblock no longer fits the 16 bits of \
                     spare area",
                    geo.pages_per_block
                ),
            ));
        }
        if f.gc_until_free <= cfg.gc.min_free_blocks {
            return Err(Error::config(
                "ftl.gc_until_free",
                format!("{} must exceed gc.min_free_blocks ({})", f.gc_until_free, cfg.gc.min_free_blocks),
            ));
        }
        let logical = cfg.logical_pages() as u32;
        let pages_per_sb = f.superblock_blocks * geo.pages_per_block;
        let room = Room {
            blocks: geo.blocks as u64,
            pages_per_block: geo.pages_per_block as u64,
            gc: cfg.gc.min_free_blocks as u64,
        };
        let (sbs, spare, needed) = room.of(logical as u64, f.superblock_blocks as u64);
        let sbs = sbs as u32;
        if spare < needed {
            return Err(Error::config(
                "overprovisioning",
                format!(
                    "leaves {spare} spare blocks; {sbs} superblocks need {needed} (an update block each, and GC's): {}",
                    room.remedy(cfg)
                ),
            ));
        }
        Ok(Superblock {
            pool: BlockPool::new(&geo, &cfg.gc, cfg.seed),
            fwd: crate::mem::big_vec(logical as usize, NEVER),
            blocks: vec![Vec::new(); sbs as usize],
            update: vec![NONE; sbs as usize],
            owner: vec![NONE; geo.blocks as usize],
            pages_per_sb,
            limit,
            gc_low: cfg.gc.min_free_blocks,
            // A target the spare cannot reach would collect every block with
            // an invalid page at each episode.
            gc_until: f.gc_until_free.min((spare - sbs as u64) as u32),
            unwritten: cfg.host.unwritten_reads,
            scratch: if dev.array.stores_payloads() { vec![0; geo.page_size as usize] } else { Vec::new() },
            journal: TrimJournal::new(dev),
            stats: FtlStats::default(),
            geo,
        })
    }

    fn free_blocks(&self) -> u32 {
        (0..self.geo.planes).map(|p| self.pool.free_count(PlaneId(p))).sum()
    }

    fn take_free(&mut self, sb: u32) -> Result<BlockId> {
        let plane = super::striping::emptiest_plane(0..self.geo.planes, |p| self.pool.free_count(p));
        let b = self
            .pool
            .take_free(plane)
            .ok_or_else(|| Error::DeviceFull("superblock: no free block left and GC cannot reclaim one".into()))?;
        self.owner[b.idx()] = sb;
        self.blocks[sb as usize].push(b);
        Ok(b)
    }

    fn erase(&mut self, dev: &mut Device, b: BlockId, t: SimTime) -> Result<SimTime> {
        let journalled = self.journal.before_erase(dev, t);
        let done = dev.erase(b, journalled, Cause::Gc)?;
        self.pool.release(b)?;
        let sb = std::mem::replace(&mut self.owner[b.idx()], NONE);
        if sb != NONE {
            self.blocks[sb as usize].retain(|&x| x != b);
        }
        Ok(done)
    }

    /// The next page of superblock `sb`'s update block. For the host this
    /// may start global GC, and collects within the superblock at its limit;
    /// GC's copies may exceed the limit while the victim is still held.
    fn alloc(&mut self, dev: &mut Device, sb: u32, now: SimTime, host: bool) -> Result<Ppn> {
        loop {
            if self.update[sb as usize] != NONE {
                let u = BlockId(self.update[sb as usize]);
                let w = dev.array.written_pages(u);
                if w < self.geo.pages_per_block {
                    return Ok(self.geo.ppn(u, w));
                }
                self.pool.close(u, now);
                self.update[sb as usize] = NONE;
            }
            if host && self.free_blocks() <= self.gc_low {
                self.collect(dev, now)?;
                if self.update[sb as usize] != NONE {
                    continue;
                }
            }
            if host && self.blocks[sb as usize].len() as u32 >= self.limit {
                self.collect_within(dev, sb, now)?;
                continue;
            }
            let b = self.take_free(sb)?;
            self.update[sb as usize] = b.0;
        }
    }

    /// Copies the valid pages of `victim` into `sb`'s update block, then erases it.
    fn reclaim(&mut self, dev: &mut Device, sb: u32, victim: BlockId, now: SimTime) -> Result<()> {
        self.stats.gc_invocations += 1;
        self.pool.start_reclaim(victim);
        let first = self.geo.ppn(victim, 0).0;
        let end = first + dev.array.written_pages(victim);
        let mut done = now;
        // Each page's map entry is a cache miss at a random place: start
        // them PREFETCH_AHEAD pages ahead of the test.
        for src in first..end.min(first + PREFETCH_AHEAD) {
            crate::mem::prefetch(&self.fwd, dev.array.oob_lpn_raw(Ppn(src)) as usize);
        }
        // The live pages go in runs, as many as the update block has room
        // for: one device call each, timed and counted as page by page
        // (GC's allocation touches no device, so nothing comes between).
        let mut run = Vec::with_capacity(self.geo.pages_per_block as usize);
        let mut src = first;
        while src < end {
            let Some(live) = self.next_live(dev, &mut src, end) else { break };
            let dst = self.alloc(dev, sb, now, false)?;
            let room = self.geo.pages_per_block - self.geo.page_in_block(dst);
            run.clear();
            run.push(live);
            while (run.len() as u32) < room {
                let Some(live) = self.next_live(dev, &mut src, end) else { break };
                run.push(live);
            }
            done = done.max(dev.copy_run(&run, dst, now, AllCopies(Cause::Gc))?);
            for (i, &from) in run.iter().enumerate() {
                let lpn = dev.array.oob_lpn_raw(Ppn(from));
                self.fwd[lpn as usize] = dst.0 + i as u32;
            }
            self.pool.transfer_valid(victim, self.geo.block_of(dst), run.len() as u32, now);
            self.stats.gc_pages_copied += run.len() as u64;
        }
        self.erase(dev, victim, done).map(|_| ())
    }

    /// The next live page of a victim from `*src` on (below `end`), moving
    /// `*src` past it.
    fn next_live(&self, dev: &Device, src: &mut u32, end: u32) -> Option<u32> {
        while *src < end {
            let s = *src;
            *src += 1;
            if s + PREFETCH_AHEAD < end {
                crate::mem::prefetch(&self.fwd, dev.array.oob_lpn_raw(Ppn(s + PREFETCH_AHEAD)) as usize);
            }
            if self.fwd.get(dev.array.oob_lpn_raw(Ppn(s)) as usize) == Some(&s) {
                return Some(s);
            }
        }
        None
    }

    /// Global GC: the drive's emptiest blocks, each into its own superblock.
    fn collect(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        let mut budget = self.geo.blocks;
        while self.free_blocks() < self.gc_until && budget > 0 {
            budget -= 1;
            let Some(victim) = self.pool.select_victim_anywhere(now) else { break };
            if self.pool.valid(victim) >= self.geo.pages_per_block {
                break;
            }
            self.reclaim(dev, self.owner[victim.idx()], victim, now)?;
        }
        Ok(())
    }

    /// GC within a superblock at its limit: its emptiest block is copied
    /// into a fresh block, which becomes the update block.
    fn collect_within(&mut self, dev: &mut Device, sb: u32, now: SimTime) -> Result<()> {
        let victim = self.blocks[sb as usize]
            .iter()
            .copied()
            .filter(|&b| self.pool.state(b) == BlockState::Closed)
            .min_by_key(|&b| (self.pool.valid(b), b.0))
            .ok_or_else(|| {
                Error::invariant("superblock", format!("superblock {sb} at its limit has no closed block"))
            })?;
        if self.pool.valid(victim) == 0 {
            return self.erase(dev, victim, now).map(|_| ());
        }
        let fresh = self.take_free(sb)?;
        self.update[sb as usize] = fresh.0;
        self.reclaim(dev, sb, victim, now)
    }

    /// Unmaps `lpn`'s current page.
    fn unmap(&mut self, lpn: u32, now: SimTime) -> bool {
        let old = std::mem::replace(&mut self.fwd[lpn as usize], TRIMMED);
        if is_mapped(old) {
            self.pool.invalidate(self.geo.block_of(Ppn(old)), now);
        }
        is_mapped(old)
    }

    /// Writes one page of `lpn` (payload in `self.scratch` or `bytes`).
    fn program(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        start: SimTime,
        now: SimTime,
        bytes: Option<&[u8]>,
        placed: bool,
    ) -> Result<SimTime> {
        self.unmap(lpn, now);
        let ppn = self.alloc(dev, lpn / self.pages_per_sb, now, true)?;
        let payload = match bytes {
            Some(b) => Payload::Bytes(b),
            None if !self.scratch.is_empty() && !placed => Payload::Bytes(&self.scratch),
            None => Payload::None,
        };
        let done = if placed {
            dev.place(ppn, Lpn(lpn), payload)?;
            start
        } else {
            dev.program(ppn, Lpn(lpn), start, Cause::Host, payload)?
        };
        self.fwd[lpn as usize] = ppn.0;
        self.pool.add_valid(self.geo.block_of(ppn), now);
        Ok(done)
    }
}

impl Ftl for Superblock {
    fn name(&self) -> &'static str {
        "superblock"
    }

    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let mut done = now;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            if self.fwd[c.lpn.idx()] == NEVER && self.unwritten == UnwrittenReads::Place {
                self.program(dev, c.lpn.0, now, now, None, true)?;
                self.stats.placed_reads += 1;
            }
            let m = self.fwd[c.lpn.idx()];
            if is_mapped(m) {
                done = done.max(dev.read(Ppn(m), now, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match is_mapped(m).then(|| dev.array.page_data(Ppn(m))).flatten() {
                    Some(page) => dst.copy_from_slice(&page[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(done)
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        let mut done = ready;
        let spp = self.geo.sectors_per_page;
        for c in page_chunks(span, spp) {
            let old = self.fwd[c.lpn.idx()];
            let mut start = ready;
            if !c.is_full_page(spp) && is_mapped(old) {
                start = dev.read(Ppn(old), ready, Cause::Host)?;
                self.stats.rmw_reads += 1;
            }
            let full = data.filter(|_| c.is_full_page(spp)).map(|d| &d[c.buf_range()]);
            if let Some(data) = data.filter(|_| !c.is_full_page(spp)) {
                match is_mapped(old).then(|| dev.array.page_data(Ppn(old))).flatten() {
                    Some(bytes) => self.scratch.copy_from_slice(bytes),
                    None => self.scratch.fill(0),
                }
                self.scratch[c.byte_range()].copy_from_slice(&data[c.buf_range()]);
            }
            done = done.max(self.program(dev, c.lpn.0, start, now, full, false)?);
        }
        Ok(done)
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        for lpn in whole_pages(span, self.geo.sectors_per_page) {
            if self.unmap(lpn, now) {
                self.stats.trimmed_pages += 1;
                self.journal.trimmed(dev, lpn);
            }
            // The entry's lookup and update, as the page FTL's.
            self.stats.ram_accesses += 2;
        }
        Ok(now)
    }

    fn flush(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        Ok(self.journal.flush(dev, now))
    }

    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        self.recover(dev, now)
    }

    fn stats(&self) -> FtlStats {
        self.stats.clone()
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    fn saved_state(&mut self) -> Option<&mut dyn super::SavedState> {
        Some(self)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        self.blocks.len() as u64 * self.limit as u64 * 4
    }

    fn blocks_with_valid_data(&self) -> u64 {
        self.pool.blocks_with_valid_data()
    }

    fn physical(&self, lpn: Lpn) -> Option<Ppn> {
        let v = self.fwd[lpn.idx()];
        is_mapped(v).then_some(Ppn(v))
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("superblock", r));
        let mut valid = vec![0u32; self.geo.blocks as usize];
        for (lpn, &m) in self.fwd.iter().enumerate() {
            if !is_mapped(m) {
                continue;
            }
            let b = self.geo.block_of(Ppn(m));
            if dev.array.read(Ppn(m)).ok() != Some(Lpn(lpn as u32)) {
                return fail(format!("LPN {lpn} maps to page {m}, whose OOB does not hold it"));
            }
            if self.owner[b.idx()] != lpn as u32 / self.pages_per_sb {
                return fail(format!("LPN {lpn} lives in {b}, not a block of its superblock"));
            }
            valid[b.idx()] += 1;
        }
        for b in (0..self.geo.blocks).map(BlockId) {
            if self.pool.valid(b) != valid[b.idx()] {
                return fail(format!("{b}: pool counts {} valid, the map {}", self.pool.valid(b), valid[b.idx()]));
            }
            let owned = self.owner[b.idx()] != NONE;
            if owned == (self.pool.state(b) == BlockState::Free) {
                return fail(format!("{b}: owned {owned} but in state {:?}", self.pool.state(b)));
            }
        }
        for (sb, blocks) in self.blocks.iter().enumerate() {
            if blocks.len() as u32 > self.limit {
                return fail(format!("superblock {sb} holds {} blocks, over its limit {}", blocks.len(), self.limit));
            }
            if blocks.iter().any(|b| self.owner[b.idx()] != sb as u32) {
                return fail(format!("superblock {sb} lists a block it does not own"));
            }
        }
        Ok(())
    }
}

impl Superblock {
    /// Rebuilds the page map, block ownership and update blocks from a
    /// scan of flash after a power cut at `now` (see the module doc).
    fn recover(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        let logical = self.fwd.len() as u32;
        let scan = recovery::scan(dev, now, logical, logical)?;
        self.journal.lose();
        self.owner.fill(NONE);
        self.blocks.iter_mut().for_each(Vec::clear);
        self.update.fill(NONE);
        for (x, &p) in scan.newest.iter().enumerate() {
            self.fwd[x] = match p {
                recovery::NONE if scan.trimmed[x] => TRIMMED,
                recovery::NONE => NEVER,
                p => {
                    // A block holds the pages of one superblock only.
                    self.owner[self.geo.block_of(Ppn(p)).idx()] = x as u32 / self.pages_per_sb;
                    p
                }
            };
        }
        let mut report = scan.report;
        let t = report.recovered_at;
        let partial = self.pool.restore(&scan.written, &scan.valid, t);
        let mut done = t;
        for b in (0..self.geo.blocks).map(BlockId) {
            if scan.written[b.idx()] > 0 && scan.valid[b.idx()] == 0 {
                // No newest copy in it (stale, or torn throughout): garbage.
                done = done.max(self.erase(dev, b, t)?);
            } else if self.owner[b.idx()] != NONE {
                self.blocks[self.owner[b.idx()] as usize].push(b);
            }
        }
        for b in partial.into_iter().filter(|b| self.owner[b.idx()] != NONE) {
            let sb = self.owner[b.idx()] as usize;
            if self.update[sb] == NONE {
                self.update[sb] = b.0;
            } else {
                self.pool.close(b, t);
            }
        }
        report.recovery_us += (done - t).as_us_f64();
        report.recovered_at = done;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use crate::ftl::hybrid::testing::{drive, tiny, write};
    use crate::units::Lpn;

    #[test]
    fn pages_stay_in_their_superblock_and_gc_collects_within_it() {
        // 32 logical pages of 4-page blocks: two superblocks of 4 blocks, at most 5 each.
        let (mut ftl, mut dev) = drive("superblock", &["ftl.superblock_extra_blocks=1", "ftl.gc_until_free=3"]);
        let lpns: Vec<u32> = (0..400u32).map(|i| if i % 2 == 0 { i % 3 } else { (i * 7) % 16 }).collect();
        write(ftl.as_mut(), &mut dev, &lpns);
        let geo = dev.geometry().clone();
        let blocks: std::collections::BTreeSet<_> =
            (0..16).filter_map(|l| ftl.physical(Lpn(l))).map(|p| geo.block_of(p)).collect();
        assert!(blocks.len() <= 5, "superblock 0 spread over {} blocks", blocks.len());
        // Superblock 0 rewrote its 5 blocks many times over: GC erased within it.
        assert!(dev.counters.erases[crate::engine::Cause::Gc as usize] > 10);
    }

    /// The value after `key` in an error message, up to the next space,
    /// parenthesis or comma.
    fn after(msg: &str, key: &str) -> String {
        let at = msg.find(key).unwrap_or_else(|| panic!("{key:?} not in {msg:?}")) + key.len();
        msg[at..].split([' ', ',', ')']).next().unwrap().to_string()
    }

    #[test]
    fn a_drive_without_room_for_its_superblocks_is_refused_with_what_would_fit() {
        let refused = |o: &[&str]| {
            let (cfg, dev) = tiny("superblock", o);
            crate::ftl::build("superblock", &cfg, &dev).err().map(|e| e.to_string())
        };
        // 16 blocks of 4 pages: at 50% over-provisioning 42 logical pages in
        // 11 blocks leave 5 spare, and 3 superblocks of 4 blocks need 6.
        let msg = refused(&["overprovisioning=0.5"]).expect("too little spare for 4-block superblocks");
        assert!(msg.contains("leaves 5 spare blocks; 3 superblocks need 6"), "{msg}");
        let blocks: u32 = after(&msg, "ftl.superblock_blocks to at least ").parse().unwrap();
        let op: f64 = after(&msg, "overprovisioning to at least ").parse().unwrap();
        assert_eq!((blocks, op), (6, 0.561), "{msg}");
        // Each suggestion is the least that fits.
        for (fits, o) in [(true, blocks), (false, blocks - 1)] {
            let set = format!("ftl.superblock_blocks={o}");
            assert_eq!(refused(&["overprovisioning=0.5", &set]).is_none(), fits, "{set}");
        }
        for (fits, o) in [(true, op), (false, op - 0.001)] {
            let set = format!("overprovisioning={o:.3}");
            assert_eq!(refused(&[&set]).is_none(), fits, "{set}");
        }
    }

    #[test]
    fn ram_is_the_superblock_table() {
        let (ftl, _) = drive("superblock", &[]);
        // Two superblocks of 4 + 2 blocks, 4 B each.
        assert_eq!(ftl.mapping_ram_bytes(), 2 * 6 * 4);
    }
}
