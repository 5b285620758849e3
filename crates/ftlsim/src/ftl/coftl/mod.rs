//! `coftl`: the multi-chipped caching FTL of Chang et al., "An Efficient FTL
//! Design for Multi-chipped Solid-State Drives", Section III.
//!
//! **Sets and virtual pages** ([`sets`]). A physical block set is `k`
//! blocks on `k` planes, channels first (`ftl.coftl_set_blocks`, the
//! paper's "blocks per virtual block"; default one per channel); a page set
//! is the pages at one offset of a set, read or programmed on all its
//! planes in parallel. A virtual page is `k` consecutive logical pages and
//! is stored as one page set.
//!
//! **Two-level translation.** LBA → virtual block (VBA) → virtual page
//! (VPA) → page set. The virtual block table (VBT: each virtual block's
//! chain of sets) stays in RAM; a virtual block's virtual page table (VPT:
//! V entries of chain position, offset and a lane-validity mask) is cached
//! in an LRU of `ftl.cache_bytes` / (4 B × V) tables. A miss reads the
//! table's latest summary page and the OOB of the page sets written after
//! it; a dirty table's eviction writes a summary (a commit); both are
//! `mapping` traffic.
//!
//! **Chain-based blocks.** A virtual block maps to at most n_b + 1 sets
//! (`ftl.coftl_replacements` = n_b): a primary and replacements, each
//! written from its first page set on. A set's last-but-one page set holds
//! the summary (the VPT when the set filled), its last the replacement page
//! naming the next set. An update is written out of place at the end of the
//! chain; a full chain is merged first.
//!
//! **Circular cleaner.** A virtual block is flagged while it has more than
//! one set. When free sets fall to the reserve (`gc.threshold` of the
//! spare sets, at least one), the cleaner scans the virtual blocks
//! circularly from where it last stopped and merges the next flagged one:
//! its live virtual pages are copied in VPA order into a fresh primary, and
//! the old sets are erased to the end of the free list. Every
//! `ftl.coftl_wl_erases` set erases it also reclaims the next unflagged
//! virtual block the same way (wear levelling: cold data leaves its set).
//!
//! **Data cache** ([`cache`], `ftl.coftl_cache_bytes`): virtual-page slots
//! in clean and dirty min-heaps on cnt / (t_now − t_last), replaced by the
//! α rule. Reads smaller than a virtual page are cached clean; writes of
//! whole virtual pages bypass it; other writes are cached dirty and written
//! back on eviction or FLUSH. The heaps and the α rule are
//! [`crate::controller::heap`], shared with the controller's write buffer
//! (`cache.policy = "heap"` gives any FTL, COFTL included, a page-slot
//! write buffer replaced by the same rule). COFTL keeps its own cache of
//! virtual-page slots rather than becoming that buffer: its slots span a
//! page set across channels, it caches small reads and bypasses whole
//! virtual-page writes, and it writes a dirty victim back at replacement
//! where the buffer destages in the background (see [`cache`]).
//!
//! **Crash recovery** ([`recovery`]): the VBT and free list are written as
//! log versions into a dual buffer (the last two sets), a new one when the
//! `ftl.coftl_log_free_sets` free sets listed in the latest are used up.
//! Recovery reads the latest version, the first page of each listed free
//! set, the replacement pages of each chain and the last set of each chain,
//! and reports the time and pages.
//!
//! Simplifications: power fails between host commands (flash operations
//! already issued complete); a summary or replacement page is one page on
//! one plane of the set (its end lane, rotated by set: [`Sets::end_lane`]), and a commit in mid-set takes a whole page set
//! (the other planes padded) so pages stay in order; reads of never-written
//! data return zeros without flash work (`host.unwritten_reads` is not
//! consulted); the cleaner runs when a write needs a set, and the write
//! does not wait for its merge: it takes a free set of the reserve at once.
//! The merge changes the tables and the array then, and issues its copies
//! a copy's time apart, each booked when the engine's clock reaches it
//! ([`crate::engine::Device::begin_deferred`]): host operations issued
//! before a copy take the planes first (preemption at copy granularity, GC
//! at most half the planes' time while it lasts), and one that needs the
//! merge's blocks (a write taking a set it erases, a read of a page it
//! moved) has the rest of it booked back to back first. A merge of a full
//! chain, which its write waits for, books its copies back to back at once. Summary, replacement and log pages carry their contents in
//! [`FlashMeta`], a model of what those pages hold, which recovery is the
//! only reader of; everything else it rebuilds from OOB.
//!
//! Invariants (`check_invariants`): chains hold at most n_b + 1 sets; every
//! set is in exactly one chain, the free list or the log; each valid lane
//! of a VPT entry points at a programmed page whose OOB is its LPN.

pub mod cache;
pub mod recovery;
pub mod sets;

use super::{Ftl, FtlStats, Span};
use crate::config::Config;
use crate::controller::buffer::SectorMask;
use crate::engine::{Cause, Device, PacedPage};
use crate::error::{Error, Result};
use crate::ftl::mu::lru::Lru;
use crate::nand::Payload;
use crate::units::{BlockId, Lpn, Nanos, Ppn, SimTime};
use cache::{AdaptiveCache, CacheStats};
use serde::{Deserialize, Serialize};
use sets::{LINK, Loc, PAD, SUMMARY, Sets};
use std::collections::{BTreeSet, VecDeque};

const NIL: u32 = u32::MAX;

/// COFTL's own counters (the report's `coftl`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoftlStats {
    pub cache: CacheStats,
    /// Cleaner merges (flagged virtual blocks, and full chains merged in
    /// the foreground) and wear-levelling reclaims.
    pub merges: u64,
    pub wear_level_reclaims: u64,
    /// Summary page sets written: at set fill, VPT evictions and FLUSH.
    pub summaries: u64,
    pub replacement_sets: u64,
    pub log_versions: u64,
    pub vpt_misses: u64,
    /// Pages copied so a partially written virtual page stays whole.
    pub lane_copies: u64,
}

/// A summary page's contents: its offset, the VPT's locations and lane masks.
type Summary = (u32, Box<[Loc]>, Box<[u16]>);

/// What is on flash for recovery to read: summary snapshots, replacement
/// pages and log versions (the contents of those pages; OOB says where).
#[derive(Default, Serialize, Deserialize)]
pub struct FlashMeta {
    /// Per set: (offset, VPT locations, lane masks) of each summary.
    summaries: Vec<Vec<Summary>>,
    /// Per set: the next set its replacement page names (NIL: not written).
    links: Vec<u32>,
    log: [recovery::LogBuffer; 2],
}

/// Everything in controller RAM (lost on a power cut).
#[derive(Serialize, Deserialize)]
struct Tables {
    chains: Vec<Vec<u32>>,
    /// Next page set to write in each chain's last set.
    next_off: Vec<u32>,
    /// Latest summary of each chain: (position, offset).
    summary_at: Vec<Option<(u32, u32)>>,
    locs: Vec<Loc>,
    masks: Vec<u16>,
    free: VecDeque<u32>,
    cursor: u32,
    wl_cursor: u32,
    erases_since_wl: u32,
    /// Allocations since the latest log version, and free sets it listed.
    since_log: u32,
    listed: u32,
    log_current: usize,
    log_seq: u64,
    vpt_lru: Lru,
    vpt_dirty: Vec<bool>,
    trim_pending: BTreeSet<u32>,
}

impl Tables {
    fn new(s: &Sets) -> Tables {
        let vbs = s.vbs as usize;
        Tables {
            chains: vec![Vec::new(); vbs],
            next_off: vec![0; vbs],
            summary_at: vec![None; vbs],
            locs: vec![Loc::NONE; vbs * s.v as usize],
            masks: vec![0; vbs * s.v as usize],
            free: (0..s.data_sets()).collect(),
            cursor: 0,
            wl_cursor: 0,
            erases_since_wl: 0,
            since_log: 0,
            listed: 0,
            log_current: 0,
            log_seq: 0,
            vpt_lru: Lru::default(),
            vpt_dirty: vec![false; vbs],
            trim_pending: BTreeSet::new(),
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct Coftl {
    s: Sets,
    spp: u32,
    page_bytes: usize,
    max_chain: usize,
    reserve: usize,
    vpt_capacity: usize,
    wl_erases: u32,
    log_free_sets: u32,
    payloads: bool,
    t: Tables,
    flash: FlashMeta,
    cache: Option<AdaptiveCache>,
    stats: FtlStats,
    co: CoftlStats,
    /// A page's bytes (read-modify-write) and a virtual page's (write-back).
    scratch: Vec<u8>,
    vscratch: Vec<u8>,
    /// A write-back's virtual page (a read may hold `vscratch` meanwhile).
    wscratch: Vec<u8>,
}

impl Coftl {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Coftl> {
        let geo = dev.geometry();
        let f = &cfg.ftl;
        let k = if f.coftl_set_blocks == 0 { geo.channels } else { f.coftl_set_blocks };
        if k > 16 || geo.planes % k != 0 {
            return Err(Error::config(
                "ftl.coftl_set_blocks",
                format!("{k} must divide the drive's {} planes and be at most 16", geo.planes),
            ));
        }
        let spp = geo.sectors_per_page;
        if k * spp > 128 {
            return Err(Error::config(
                "ftl.coftl_set_blocks",
                format!("a virtual page of {k} pages of {spp} sectors exceeds the 128 sectors (64 KiB) COFTL tracks"),
            ));
        }
        if geo.pages_per_block < 4 {
            return Err(Error::config("geometry.pages_per_block", "COFTL needs at least 4 (2 for summary and link)"));
        }
        if f.coftl_replacements == 0 {
            return Err(Error::config("ftl.coftl_replacements", "n_b must be at least 1 replacement set"));
        }
        if f.coftl_replacements > 255 {
            return Err(Error::config("ftl.coftl_replacements", "must be at most 255"));
        }
        let logical = cfg.logical_pages();
        if logical >= sets::LOW as u64 {
            return Err(Error::config("geometry", format!("{logical} logical pages exceed COFTL's 2^29 - 1")));
        }
        let s = Sets::new(geo, k, logical as u32);
        let spare = s.data_sets() as i64 - s.vbs as i64;
        let n_b = f.coftl_replacements as i64;
        if spare < n_b + 2 {
            return Err(Error::config(
                "overprovisioning",
                format!(
                    "COFTL needs {} sets for {} virtual blocks of {} virtual pages, n_b + 2 = {} spare and 2 for \
                     its log, but the drive has {} sets of {k} blocks: raise overprovisioning or lower \
                     ftl.coftl_replacements",
                    s.vbs as i64 + n_b + 4,
                    s.vbs,
                    s.v,
                    n_b + 2,
                    s.sets
                ),
            ));
        }
        let version_pages = recovery::version_pages(&s, s.data_sets(), geo.page_size);
        if version_pages > k * geo.pages_per_block {
            return Err(Error::config(
                "ftl.coftl_set_blocks",
                format!("a log version takes {version_pages} pages, more than a set's {}", k * geo.pages_per_block),
            ));
        }
        if !(f.coftl_alpha.is_finite() && f.coftl_alpha >= 0.0) {
            return Err(Error::config("ftl.coftl_alpha", format!("{} must be finite and non-negative", f.coftl_alpha)));
        }
        if f.coftl_log_free_sets == 0 {
            return Err(Error::config("ftl.coftl_log_free_sets", "a log version must list at least 1 free set"));
        }
        let vpage_bytes = (k * geo.page_size) as u64;
        let cache = (f.coftl_cache_bytes > 0).then(|| {
            // Program time / read time of a page set, as the paper sets α.
            let alpha = crate::controller::heap::alpha_or_derived(f.coftl_alpha, cfg);
            AdaptiveCache::new(
                (f.coftl_cache_bytes / vpage_bytes).max(1) as u32,
                vpage_bytes as usize,
                alpha,
                dev.array.stores_payloads(),
            )
        });
        if f.coftl_cache_bytes > 0 && f.coftl_cache_bytes < vpage_bytes {
            return Err(Error::config(
                "ftl.coftl_cache_bytes",
                format!("{} holds no whole {vpage_bytes}-byte virtual page; use 0 for no cache", f.coftl_cache_bytes),
            ));
        }
        let spare = spare as usize;
        let reserve = ((cfg.gc.threshold * spare as f64).ceil() as usize).clamp(1, spare - n_b as usize - 1);
        let flash = FlashMeta {
            summaries: vec![Vec::new(); s.sets as usize],
            links: vec![NIL; s.sets as usize],
            log: Default::default(),
        };
        Ok(Coftl {
            spp,
            page_bytes: geo.page_size as usize,
            max_chain: n_b as usize + 1,
            reserve,
            vpt_capacity: (f.cache_bytes / (4 * s.v as u64)).max(1) as usize,
            wl_erases: f.coftl_wl_erases,
            log_free_sets: f.coftl_log_free_sets,
            payloads: dev.array.stores_payloads(),
            t: Tables::new(&s),
            flash,
            cache,
            stats: FtlStats { map_cached: true, ..FtlStats::default() },
            co: CoftlStats::default(),
            scratch: vec![0; geo.page_size as usize],
            vscratch: vec![0; vpage_bytes as usize],
            wscratch: vec![0; vpage_bytes as usize],
            s,
        })
    }

    fn vpage_sectors(&self) -> u32 {
        self.s.k * self.spp
    }

    fn lane_mask(&self, lane: u32) -> SectorMask {
        crate::controller::buffer::sector_mask(lane * self.spp, self.spp)
    }

    fn entry(&self, vb: u32, vpa: u32) -> usize {
        (vb * self.s.v + vpa) as usize
    }

    /// The page holding lane `lane` of an entry.
    fn lane_ppn(&self, vb: u32, loc: Loc, lane: u32) -> Ppn {
        self.s.ppn(self.t.chains[vb as usize][loc.idx() as usize], lane, loc.off())
    }

    // ---- VPT cache -------------------------------------------------------

    /// Makes `vb`'s VPT available in RAM (reading it on a miss, evicting
    /// another, committing it if dirty); `dirty` marks it changed. Returns
    /// when it is available.
    fn vpt_access(&mut self, dev: &mut Device, vb: u32, t: SimTime, dirty: bool) -> Result<SimTime> {
        self.stats.map_lookups += 1;
        self.stats.ram_accesses += 1;
        let mut at = t;
        if self.t.vpt_lru.contains(vb) {
            self.stats.map_hits += 1;
        } else {
            while self.t.vpt_lru.len() >= self.vpt_capacity {
                let victim = self.t.vpt_lru.oldest().expect("a full cache has a victim");
                self.t.vpt_lru.remove(victim);
                if self.t.vpt_dirty[victim as usize] {
                    at = at.max(self.commit(dev, victim, t)?);
                }
            }
            at = at.max(self.vpt_read(dev, vb, t)?);
            self.co.vpt_misses += 1;
        }
        self.t.vpt_lru.touch(vb);
        if dirty {
            self.t.vpt_dirty[vb as usize] = true;
        }
        Ok(at)
    }

    /// The flash reads of loading `vb`'s VPT: its latest summary, then the
    /// OOB of each page set written after it in the last set.
    fn vpt_read(&mut self, dev: &mut Device, vb: u32, t: SimTime) -> Result<SimTime> {
        let chain = &self.t.chains[vb as usize];
        let Some(&last) = chain.last() else { return Ok(t) };
        let last_idx = chain.len() as u32 - 1;
        let mut reads = Vec::new();
        let first = match self.t.summary_at[vb as usize] {
            Some((idx, off)) => {
                let set = chain[idx as usize];
                reads.push(self.s.ppn(set, self.s.scan_lane(set, off), off));
                if idx == last_idx { off + 1 } else { 0 }
            }
            None => 0,
        };
        reads.extend(
            (first..self.t.next_off[vb as usize]).map(|off| self.s.ppn(last, self.s.scan_lane(last, off), off)),
        );
        let mut done = t;
        for p in reads {
            done = done.max(dev.read(p, t, Cause::Mapping)?);
        }
        Ok(done)
    }

    /// Writes `vb`'s VPT as a summary page set at the end of its chain.
    fn commit(&mut self, dev: &mut Device, vb: u32, t: SimTime) -> Result<SimTime> {
        if self.t.chains[vb as usize].is_empty() {
            self.t.vpt_dirty[vb as usize] = false;
            self.t.trim_pending.remove(&vb);
            return Ok(t); // nothing mapped: the VBT says so
        }
        let t = self.ensure_room(dev, vb, t)?;
        let off = self.t.next_off[vb as usize];
        let done = self.write_summary(dev, vb, off, t)?;
        self.advance(dev, vb, done)
    }

    /// One page set written in `vb`'s last set: the offset moves on, and a
    /// set whose data area is full gets its summary.
    fn advance(&mut self, dev: &mut Device, vb: u32, t: SimTime) -> Result<SimTime> {
        self.t.next_off[vb as usize] += 1;
        if self.t.next_off[vb as usize] == self.s.v {
            return self.write_summary(dev, vb, self.s.v, t);
        }
        Ok(t)
    }

    /// Programs a summary (the VPT now) at `off` of `vb`'s last set: one
    /// page on the set's end lane; in mid-set on every lane (the others
    /// padding, to keep order).
    fn write_summary(&mut self, dev: &mut Device, vb: u32, off: u32, t: SimTime) -> Result<SimTime> {
        let set = *self.t.chains[vb as usize].last().expect("a chain to summarize");
        let lanes = if off == self.s.v { self.s.end_lane(set)..self.s.end_lane(set) + 1 } else { 0..self.s.k };
        let mut done = t;
        for lane in lanes {
            let p = self.s.ppn(set, lane, off);
            done = done.max(dev.program(p, Lpn(SUMMARY | vb), t, Cause::Mapping, Payload::None)?);
        }
        let range = self.entry(vb, 0)..self.entry(vb, self.s.v);
        let snap = (off, self.t.locs[range.clone()].into(), self.t.masks[range].into());
        self.flash.summaries[set as usize].push(snap);
        self.t.summary_at[vb as usize] = Some((self.t.chains[vb as usize].len() as u32 - 1, off));
        // The summary is the VPT as it is now: a later eviction has nothing
        // to commit (else a full set's table, evicted, would take a whole
        // replacement set for a summary equal to the one just written).
        self.t.vpt_dirty[vb as usize] = false;
        self.t.trim_pending.remove(&vb);
        self.co.summaries += 1;
        Ok(done)
    }

    // ---- space: allocation, chains, cleaner -----------------------------

    /// Makes sure `vb`'s chain has a page set to write: a primary for an
    /// unmapped block, a replacement when the last set is full, a merge
    /// when the chain is at its bound.
    fn ensure_room(&mut self, dev: &mut Device, vb: u32, mut t: SimTime) -> Result<SimTime> {
        loop {
            let chain_len = self.t.chains[vb as usize].len();
            if chain_len > 0 && self.t.next_off[vb as usize] < self.s.v {
                return Ok(t);
            }
            if chain_len == 0 || chain_len < self.max_chain {
                self.clean(dev, t, vb)?;
                let set = self.pop_free(dev, t)?;
                if let Some(&last) = self.t.chains[vb as usize].last() {
                    // The replacement page of the full set names the new one.
                    let p = self.s.ppn(last, self.s.end_lane(last), self.s.pages_per_block - 1);
                    t = t.max(dev.program(p, Lpn(LINK | vb), t, Cause::Mapping, Payload::None)?);
                    self.flash.links[last as usize] = set;
                    self.co.replacement_sets += 1;
                }
                self.t.chains[vb as usize].push(set);
                self.t.next_off[vb as usize] = 0;
                return Ok(t);
            }
            self.clean(dev, t, vb)?;
            t = self.merge(dev, vb, t, false)?;
        }
    }

    /// Runs the circular cleaner while free sets are at the reserve or
    /// below (never merging `busy`, whose chain the caller is extending).
    /// Its merges start at `t` on their own sets' planes, paced; the
    /// caller does not wait for them: a free set is left (the reserve is
    /// at least one), a later operation on a merged or erased block waits
    /// for the merge's work on it, and so a write that needs a set takes
    /// one at once (issue 12: it used to wait for the whole merge, ~250 ms
    /// on the repro's drive, its own planes idle).
    fn clean(&mut self, dev: &mut Device, t: SimTime, busy: u32) -> Result<()> {
        while self.t.free.len() <= self.reserve {
            let vbs = self.s.vbs;
            let start = self.t.cursor;
            let found =
                (0..vbs).map(|i| (start + i) % vbs).find(|&vb| vb != busy && self.t.chains[vb as usize].len() > 1);
            let Some(vb) = found else { break };
            self.t.cursor = (vb + 1) % vbs;
            self.merge(dev, vb, t, true)?;
            self.stats.gc_invocations += 1;
        }
        self.wear_level(dev, t, busy)?;
        Ok(())
    }

    /// Every `ftl.coftl_wl_erases` set erases, reclaims the next unflagged
    /// virtual block (one set, cold data) into a fresh set.
    fn wear_level(&mut self, dev: &mut Device, t: SimTime, busy: u32) -> Result<SimTime> {
        if self.wl_erases == 0 || self.t.erases_since_wl < self.wl_erases || self.t.free.len() <= self.reserve {
            return Ok(t);
        }
        self.t.erases_since_wl = 0;
        let vbs = self.s.vbs;
        let start = self.t.wl_cursor;
        let found = (0..vbs).map(|i| (start + i) % vbs).find(|&vb| vb != busy && self.t.chains[vb as usize].len() == 1);
        let Some(vb) = found else { return Ok(t) };
        self.t.wl_cursor = (vb + 1) % vbs;
        self.co.wear_level_reclaims += 1;
        self.merge(dev, vb, t, true)
    }

    /// Takes the free list's head, writing a log version first when the
    /// latest one's listed sets are used up.
    fn pop_free(&mut self, dev: &mut Device, t: SimTime) -> Result<u32> {
        if self.t.free.is_empty() {
            return Err(Error::DeviceFull(format!(
                "COFTL has no free block set ({} virtual blocks on {} sets)",
                self.s.vbs, self.s.sets
            )));
        }
        if self.t.log_seq == 0 || self.t.since_log >= self.t.listed {
            self.write_log_version(dev, t)?;
        }
        self.t.since_log += 1;
        Ok(self.t.free.pop_front().expect("checked non-empty"))
    }

    /// Copies `vb`'s live virtual pages in VPA order into a fresh primary
    /// and erases its old sets to the end of the free list.
    /// `paced` (the cleaner's merges, which no write waits for): the
    /// copies are [`merge_pace`](Self::merge_pace) apart, each booked when
    /// the clock reaches it (the merge's copies, summary and erases are
    /// deferred work: [`Device::begin_deferred`]).
    fn merge(&mut self, dev: &mut Device, vb: u32, t: SimTime, paced: bool) -> Result<SimTime> {
        let mut t = t;
        if !self.t.vpt_lru.contains(vb) {
            t = self.vpt_read(dev, vb, t)?; // the table, read without caching it
        }
        let old = std::mem::take(&mut self.t.chains[vb as usize]);
        let live = (0..self.s.v).filter(|&vpa| !self.t.locs[self.entry(vb, vpa)].is_none()).count();
        let mut done = t;
        let mut off = 0;
        let pace = if paced { self.merge_pace(dev) } else { Nanos::ZERO };
        // The new primary first: taking it may write a log version, which
        // is not the merge's own work.
        let new_set = if live > 0 { Some(self.pop_free(dev, t)?) } else { None };
        if paced {
            dev.begin_deferred();
        }
        if let Some(set) = new_set {
            // Each lane's first page in the new set and in the old ones: a
            // copy's pages are these plus its offset, not decoded anew.
            let (s, k) = (&self.s, self.s.k as usize);
            let dst_first: Vec<u32> = (0..s.k).map(|lane| s.ppn(set, lane, 0).0).collect();
            let src_first: Vec<u32> = old.iter().flat_map(|&o| (0..s.k).map(move |lane| s.ppn(o, lane, 0).0)).collect();
            // Virtual page by virtual page, a copy or a pad on each lane;
            // the device times them (in a fast-forward, a unit at a time).
            let mut pages = Vec::with_capacity(live * k);
            for vpa in 0..self.s.v {
                let e = self.entry(vb, vpa);
                let (loc, mask) = (self.t.locs[e], self.t.masks[e]);
                if loc.is_none() {
                    continue;
                }
                let at = t + Nanos(pace.0 * off as u64);
                let first_lpn = self.s.lpn(vb, vpa, 0);
                let src_first = &src_first[loc.idx() as usize * k..][..k];
                for lane in 0..k {
                    let (lpn, copied) = (first_lpn + lane as u32, mask >> lane & 1 == 1);
                    pages.push(PacedPage {
                        src: copied.then(|| Ppn(src_first[lane] + loc.off())),
                        dst: Ppn(dst_first[lane] + off),
                        lpn: Lpn(if copied { lpn } else { PAD | lpn }),
                        at,
                    });
                }
                self.t.locs[e] = Loc::new(0, off);
                off += 1;
            }
            done = done.max(dev.copy_paced(&pages, Cause::Gc)?);
            let copied = pages.iter().filter(|p| p.src.is_some()).count() as u64;
            self.stats.gc_pages_copied += copied;
            self.stats.pages_padded += pages.len() as u64 - copied;
            self.t.chains[vb as usize].push(set);
        }
        self.t.next_off[vb as usize] = off;
        self.t.summary_at[vb as usize] = None;
        // The new primary's scan is the table: nothing left to commit.
        self.t.vpt_dirty[vb as usize] = false;
        self.t.trim_pending.remove(&vb);
        if off == self.s.v {
            done = self.write_summary(dev, vb, off, done)?;
        }
        for set in old {
            done = done.max(self.erase_set(dev, set, t)?);
        }
        if paced {
            dev.end_deferred();
        }
        self.co.merges += 1;
        Ok(done)
    }

    /// The interval between a merge's copies: two copies' time (a page
    /// read, its transfers and a program), so each copy leaves its planes
    /// idle for as long as it held them, and a host operation booked later
    /// takes that gap rather than waiting for the whole merge (~250 ms of
    /// back-to-back copies on the repro's drive): GC preempted copy by copy,
    /// as the engine's design asks, at half the planes' time while it lasts.
    fn merge_pace(&self, dev: &Device) -> Nanos {
        let t = dev.timing();
        let copy = t.command + t.read + t.page_transfer + t.command + t.page_transfer + t.program;
        Nanos(2 * copy.0)
    }

    fn erase_set(&mut self, dev: &mut Device, set: u32, t: SimTime) -> Result<SimTime> {
        let mut done = t;
        for lane in 0..self.s.k {
            let b = self.s.block(set, lane);
            if dev.array.written_pages(b) > 0 {
                done = done.max(dev.erase(b, t, Cause::Gc)?);
            }
        }
        self.flash.summaries[set as usize].clear();
        self.flash.links[set as usize] = NIL;
        self.t.free.push_back(set);
        self.t.erases_since_wl += 1;
        Ok(done)
    }

    // ---- the data path ---------------------------------------------------

    /// Writes sectors `mask` of virtual page (vb, vpa) as a new page set:
    /// lanes fully in `mask` from `src`, partial lanes merged with their old
    /// page, untouched valid lanes copied, the rest padded.
    fn write_vpage(
        &mut self,
        dev: &mut Device,
        vpn: u32,
        mask: SectorMask,
        src: Option<&[u8]>,
        ready: SimTime,
        cause: Cause,
    ) -> Result<SimTime> {
        let (vb, vpa) = self.s.split_vpn(vpn);
        let t = self.vpt_access(dev, vb, ready, true)?;
        let t = self.ensure_room(dev, vb, t)?;
        let e = self.entry(vb, vpa);
        let (old, old_mask) = (self.t.locs[e], self.t.masks[e]);
        let idx = self.t.chains[vb as usize].len() as u32 - 1;
        let set = self.t.chains[vb as usize][idx as usize];
        let off = self.t.next_off[vb as usize];
        let (spp, page) = (self.spp as usize, self.page_bytes);
        let mut done = t;
        let mut new_mask = 0u16;
        for lane in 0..self.s.k {
            let lpn = self.s.lpn(vb, vpa, lane);
            let dst = self.s.ppn(set, lane, off);
            let bits = mask & self.lane_mask(lane);
            let old_ppn = (!old.is_none() && old_mask >> lane & 1 == 1).then(|| self.lane_ppn(vb, old, lane));
            if lpn >= self.s.logical_pages || (bits == 0 && old_ppn.is_none()) {
                done = done.max(dev.program(dst, Lpn(PAD | lpn), t, cause, Payload::None)?);
                self.stats.pages_padded += 1;
                continue;
            }
            new_mask |= 1 << lane;
            let lane_src = src.map(|s| &s[lane as usize * page..(lane as usize + 1) * page]);
            if bits == self.lane_mask(lane) {
                let payload = lane_src.map_or(Payload::None, Payload::Bytes);
                done = done.max(dev.program(dst, Lpn(lpn), t, cause, payload)?);
            } else if bits == 0 {
                let from = old_ppn.expect("checked above");
                let r = dev.read(from, t, cause)?;
                done = done.max(dev.program(dst, Lpn(lpn), r, cause, Payload::CopyFrom(from))?);
                self.co.lane_copies += 1;
            } else {
                let mut start = t;
                self.scratch.fill(0);
                if let Some(from) = old_ppn {
                    start = dev.read(from, t, cause)?;
                    self.stats.rmw_reads += 1;
                    if let Some(d) = dev.array.page_data(from) {
                        self.scratch.copy_from_slice(d);
                    }
                }
                let payload = match lane_src {
                    Some(s) => {
                        let first = lane as usize * spp;
                        for i in 0..spp {
                            if mask >> (first + i) & 1 == 1 {
                                self.scratch[i * 512..(i + 1) * 512].copy_from_slice(&s[i * 512..(i + 1) * 512]);
                            }
                        }
                        Payload::Bytes(&self.scratch)
                    }
                    None => Payload::None,
                };
                done = done.max(dev.program(dst, Lpn(lpn), start, cause, payload)?);
            }
        }
        self.t.locs[e] = Loc::new(idx, off);
        self.t.masks[e] = new_mask;
        self.advance(dev, vb, done)
    }

    /// Reads the lanes of (vb, vpa) that `mask` touches into `out` (the
    /// virtual page's bytes); returns when the last read completes.
    fn read_vpage(
        &mut self,
        dev: &mut Device,
        vb: u32,
        vpa: u32,
        mask: SectorMask,
        t: SimTime,
        mut out: Option<&mut [u8]>,
    ) -> Result<SimTime> {
        let e = self.entry(vb, vpa);
        if self.t.locs[e].is_none() {
            if let Some(o) = out {
                o.fill(0);
            }
            return Ok(t);
        }
        let t = self.vpt_access(dev, vb, t, false)?;
        let (loc, lanes) = (self.t.locs[e], self.t.masks[e]);
        let mut done = t;
        for lane in 0..self.s.k {
            if mask & self.lane_mask(lane) == 0 {
                continue;
            }
            let range = lane as usize * self.page_bytes..(lane as usize + 1) * self.page_bytes;
            if lanes >> lane & 1 == 0 {
                if let Some(o) = out.as_deref_mut() {
                    o[range].fill(0);
                }
                continue;
            }
            let p = self.lane_ppn(vb, loc, lane);
            done = done.max(dev.read(p, t, Cause::Host)?);
            if let (Some(o), Some(d)) = (out.as_deref_mut(), dev.array.page_data(p)) {
                o[range].copy_from_slice(d);
            }
        }
        Ok(done)
    }

    /// Makes room in the data cache by the α rule; returns when a dirty
    /// victim's write-back is done.
    fn make_room(&mut self, dev: &mut Device, t: SimTime) -> Result<SimTime> {
        let mut at = t;
        loop {
            let cache = self.cache.as_mut().expect("cache on");
            if cache.has_room() {
                return Ok(at);
            }
            let v = cache.victim(t).expect("a full cache has a victim");
            if v.dirty {
                at = at.max(self.write_back(dev, v.slot, t)?);
                let cache = self.cache.as_mut().expect("cache on");
                cache.stats.dirty_evictions += 1;
            } else {
                cache.stats.clean_evictions += 1;
            }
            self.cache.as_mut().expect("cache on").remove(v.slot);
        }
    }

    /// Writes a dirty slot's sectors to flash; it stays cached, clean.
    fn write_back(&mut self, dev: &mut Device, slot: u32, t: SimTime) -> Result<SimTime> {
        let cache = self.cache.as_mut().expect("cache on");
        let (vpn, mask) = (cache.vpn(slot), cache.mask(slot));
        cache.stats.write_backs += 1;
        let mut buf = std::mem::take(&mut self.wscratch);
        if self.payloads {
            buf.copy_from_slice(cache.page(slot));
        }
        let src = self.payloads.then_some(&buf[..]);
        let r = self.write_vpage(dev, vpn, mask, src, t, Cause::Cache);
        self.wscratch = buf;
        self.cache.as_mut().expect("cache on").mark_clean(slot);
        r
    }

    /// The virtual pages of a span: (vpn, sector mask within it, first
    /// sector of the span's part, its byte offset in the command buffer).
    fn vpage_parts(&self, span: Span) -> Vec<(u32, SectorMask, usize)> {
        let vs = self.vpage_sectors() as u64;
        let mut parts: Vec<(u32, SectorMask, usize)> = Vec::new();
        let end = span.start.0 + span.sectors;
        let mut sector = span.start.0;
        while sector < end {
            let (vpn, first) = (sector / vs, sector % vs);
            let n = (vs - first).min(end - sector);
            let mask = crate::controller::buffer::sector_mask(first as u32, n as u32);
            parts.push((vpn as u32, mask, ((sector - span.start.0) * 512) as usize));
            sector += n;
        }
        parts
    }

    /// Copies a command buffer's part into/out of a virtual-page buffer.
    fn sectors(mask: SectorMask) -> std::ops::Range<usize> {
        let first = mask.trailing_zeros() as usize;
        let n = mask.count_ones() as usize;
        first * 512..(first + n) * 512
    }

    fn write_part(
        &mut self,
        dev: &mut Device,
        vpn: u32,
        mask: SectorMask,
        part: Option<&[u8]>,
        ready: SimTime,
    ) -> Result<SimTime> {
        let full = crate::controller::buffer::sector_mask(0, self.vpage_sectors());
        let bytes = Self::sectors(mask);
        let Some(cache) = self.cache.as_mut() else {
            let mut buf = std::mem::take(&mut self.vscratch);
            if let Some(p) = part {
                buf[bytes].copy_from_slice(p);
            }
            let r = self.write_vpage(dev, vpn, mask, part.map(|_| &buf[..]), ready, Cause::Host);
            self.vscratch = buf;
            return r;
        };
        if mask == full {
            // Sequential writes of whole virtual pages bypass the cache.
            cache.stats.bypassed += 1;
            if let Some(s) = cache.lookup(vpn) {
                cache.remove(s);
            }
            return self.write_vpage(dev, vpn, mask, part, ready, Cause::Host);
        }
        let mut done = ready;
        let slot = match cache.lookup(vpn) {
            Some(s) => {
                cache.stats.hits += 1;
                cache.touch(s, ready);
                cache.add(s, mask, true);
                s
            }
            None => {
                cache.stats.misses += 1;
                done = self.make_room(dev, ready)?;
                self.cache.as_mut().expect("cache on").insert(vpn, mask, true, ready)
            }
        };
        if let Some(p) = part {
            self.cache.as_mut().expect("cache on").page_mut(slot)[bytes].copy_from_slice(p);
        }
        Ok(done)
    }

    fn read_part(
        &mut self,
        dev: &mut Device,
        vpn: u32,
        mask: SectorMask,
        out: Option<&mut [u8]>,
        t: SimTime,
    ) -> Result<SimTime> {
        let (vb, vpa) = self.s.split_vpn(vpn);
        let bytes = Self::sectors(mask);
        let full = crate::controller::buffer::sector_mask(0, self.vpage_sectors());
        let held = self.cache.as_ref().and_then(|c| c.lookup(vpn).map(|s| (s, c.mask(s))));
        if let Some((slot, m)) = held.filter(|&(_, m)| m & mask == mask) {
            let cache = self.cache.as_mut().expect("held");
            cache.stats.hits += 1;
            cache.touch(slot, t);
            if let Some(o) = out {
                o.copy_from_slice(&cache.page(slot)[bytes]);
            }
            debug_assert_eq!(m & mask, mask);
            return Ok(t);
        }
        let mut buf = std::mem::take(&mut self.vscratch);
        let r = self.read_vpage(dev, vb, vpa, mask, t, self.payloads.then_some(&mut buf[..]));
        let mut done = match r {
            Ok(d) => d,
            Err(e) => {
                self.vscratch = buf;
                return Err(e);
            }
        };
        let vsectors = self.vpage_sectors() as usize;
        if let Some(cache) = self.cache.as_mut() {
            cache.stats.misses += 1;
            match held {
                Some((slot, m)) => {
                    // The cache's sectors are newer; it takes flash's others.
                    if self.payloads {
                        let page = cache.page_mut(slot);
                        for i in 0..vsectors {
                            if mask >> i & 1 == 1 {
                                let r = i * 512..(i + 1) * 512;
                                if m >> i & 1 == 1 {
                                    buf[r.clone()].copy_from_slice(&page[r]);
                                } else {
                                    page[r.clone()].copy_from_slice(&buf[r]);
                                }
                            }
                        }
                    }
                    let cache = self.cache.as_mut().expect("cache on");
                    cache.add(slot, mask, false);
                    cache.touch(slot, t);
                }
                None if mask != full => {
                    // Reads smaller than a virtual page are cached clean.
                    done = done.max(self.make_room(dev, t)?);
                    let cache = self.cache.as_mut().expect("cache on");
                    let slot = cache.insert(vpn, mask, false, t);
                    if self.payloads {
                        cache.page_mut(slot)[bytes.clone()].copy_from_slice(&buf[bytes.clone()]);
                    }
                }
                None => {}
            }
        }
        if let Some(o) = out {
            o.copy_from_slice(&buf[bytes]);
        }
        self.vscratch = buf;
        Ok(done)
    }

    fn trim_page(&mut self, dev: &mut Device, lpn: u32, t: SimTime) -> Result<SimTime> {
        let (vb, vpa, lane) = self.s.locate(lpn);
        let lane_mask = self.lane_mask(lane);
        if let Some(cache) = self.cache.as_mut() {
            if let Some(slot) = cache.lookup(vb * self.s.v + vpa) {
                cache.forget(slot, lane_mask);
            }
        }
        let e = self.entry(vb, vpa);
        if self.t.locs[e].is_none() || self.t.masks[e] >> lane & 1 == 0 {
            return Ok(t);
        }
        let t = self.vpt_access(dev, vb, t, true)?;
        self.t.masks[e] &= !(1 << lane);
        if self.t.masks[e] == 0 {
            self.t.locs[e] = Loc::NONE;
        }
        self.t.trim_pending.insert(vb);
        self.stats.trimmed_pages += 1;
        Ok(t)
    }
}

impl Ftl for Coftl {
    fn name(&self) -> &'static str {
        "coftl"
    }

    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let mut done = now;
        for (vpn, mask, at) in self.vpage_parts(span) {
            let len = mask.count_ones() as usize * 512;
            let part = out.as_deref_mut().map(|o| &mut o[at..at + len]);
            done = done.max(self.read_part(dev, vpn, mask, part, now)?);
        }
        Ok(done)
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        _now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        let mut done = ready;
        for (vpn, mask, at) in self.vpage_parts(span) {
            let len = mask.count_ones() as usize * 512;
            done = done.max(self.write_part(dev, vpn, mask, data.map(|d| &d[at..at + len]), ready)?);
        }
        Ok(done)
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        for lpn in super::whole_pages(span, self.spp) {
            done = done.max(self.trim_page(dev, lpn, now)?);
        }
        Ok(done)
    }

    fn flush(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        let dirty = self.cache.as_ref().map(AdaptiveCache::dirty_slots).unwrap_or_default();
        for slot in dirty {
            done = done.max(self.write_back(dev, slot, now)?);
        }
        // Trims change only the RAM table: a summary makes them durable.
        while let Some(vb) = self.t.trim_pending.pop_first() {
            done = done.max(self.commit(dev, vb, now)?);
        }
        Ok(done)
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        let mut co = self.co.clone();
        if let Some(c) = &self.cache {
            co.cache = c.stats.clone();
        }
        s.coftl = Some(co);
        s
    }

    fn saved_state(&mut self) -> Option<&mut dyn super::SavedState> {
        Some(self)
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats { map_cached: true, ..FtlStats::default() };
        self.co = CoftlStats::default();
        if let Some(c) = self.cache.as_mut() {
            c.stats = CacheStats::default();
        }
    }

    fn mapping_ram_bytes(&self) -> u64 {
        // VBT (a primary per virtual block), free list, cached VPTs.
        let vpt = self.vpt_capacity.min(self.s.vbs as usize) as u64 * self.s.v as u64 * 4;
        self.s.vbs as u64 * 4 + self.s.data_sets() as u64 * 4 + vpt
    }

    fn blocks_with_valid_data(&self) -> u64 {
        let mapped = (0..self.s.logical_pages).filter_map(|lpn| self.physical(Lpn(lpn)));
        super::distinct_blocks(self.s.blocks_total(), mapped.map(|p| BlockId(p.0 / self.s.pages_per_block)))
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        let bad = |reason: String| Err(Error::invariant("coftl", reason));
        let mut owner = vec![NIL; self.s.sets as usize];
        for (vb, chain) in self.t.chains.iter().enumerate() {
            if chain.len() > self.max_chain {
                return bad(format!(
                    "virtual block {vb} chains {} sets, over n_b + 1 = {}",
                    chain.len(),
                    self.max_chain
                ));
            }
            for &set in chain {
                if owner[set as usize] != NIL {
                    return bad(format!("set {set} is in two chains"));
                }
                owner[set as usize] = vb as u32;
            }
            if self.t.next_off[vb] > self.s.v {
                return bad(format!("virtual block {vb} writes past its data area"));
            }
        }
        for &set in &self.t.free {
            if owner[set as usize] != NIL {
                return bad(format!("set {set} is free and in a chain"));
            }
            owner[set as usize] = NIL - 1;
            if (0..self.s.k).any(|l| dev.array.written_pages(self.s.block(set, l)) > 0) {
                return bad(format!("free set {set} is not erased"));
            }
        }
        if let Some(set) = (0..self.s.data_sets()).find(|&s| owner[s as usize] == NIL) {
            return bad(format!("set {set} is neither free nor in a chain"));
        }
        for vb in 0..self.s.vbs {
            for vpa in 0..self.s.v {
                let e = self.entry(vb, vpa);
                let (loc, mask) = (self.t.locs[e], self.t.masks[e]);
                if loc.is_none() != (mask == 0) {
                    return bad(format!("VPT entry ({vb}, {vpa}) has location {loc:?} and lanes {mask:#x}"));
                }
                if loc.is_none() {
                    continue;
                }
                for lane in (0..self.s.k).filter(|l| mask >> l & 1 == 1) {
                    let p = self.lane_ppn(vb, loc, lane);
                    let lpn = self.s.lpn(vb, vpa, lane);
                    // A padded lane holds no data: mapping it (as a recovery
                    // that took every lane for valid would) is wrong, though
                    // it reads as zeros.
                    let held = dev.array.read(p).map(|l| sets::decode(l.0));
                    if !matches!(held, Ok(sets::Oob::Data(l)) if l == lpn) {
                        return bad(format!("logical page {lpn} maps to {p}, which does not hold it"));
                    }
                }
            }
        }
        if let Some(c) = &self.cache {
            c.check().or_else(|e| bad(format!("data cache: {e}")))?;
        }
        Ok(())
    }

    fn physical(&self, lpn: Lpn) -> Option<Ppn> {
        let (vb, vpa, lane) = self.s.locate(lpn.0);
        let e = self.entry(vb, vpa);
        let loc = self.t.locs[e];
        (!loc.is_none() && self.t.masks[e] >> lane & 1 == 1).then(|| self.lane_ppn(vb, loc, lane))
    }

    fn cached_page(&self, lpn: Lpn) -> Option<(SectorMask, &[u8])> {
        let cache = self.cache.as_ref()?;
        let (vb, vpa, lane) = self.s.locate(lpn.0);
        let slot = cache.lookup(vb * self.s.v + vpa)?;
        let held = (cache.mask(slot) >> (lane * self.spp)) & crate::controller::buffer::sector_mask(0, self.spp);
        if held == 0 || !cache.is_dirty(slot) {
            return None;
        }
        let page = if self.payloads {
            &cache.page(slot)[lane as usize * self.page_bytes..(lane as usize + 1) * self.page_bytes]
        } else {
            &[][..]
        };
        Some((held, page))
    }

    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<super::RecoveryReport> {
        if let Some(c) = self.cache.as_mut() {
            c.clear();
        }
        recovery::recover(self, dev, now)
    }
}

#[cfg(test)]
mod tests;
