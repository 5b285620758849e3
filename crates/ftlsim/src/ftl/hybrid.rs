//! The state and mechanisms shared by the block-mapped FTLs (`block`,
//! `bast`, `fast`): the data-block map, page placement at fixed offsets,
//! block allocation from the shared [`BlockPool`], the read path, TRIM (the
//! [`TrimList`] or immediate unmapping), and the invariant check. The merge
//! operations built on it live in [`super::merge`]; the schemes decide when
//! to merge and where host pages go.
//!
//! Every scheme maps a logical block (a *key*, see [`Stripes`]) to at most
//! one data block, where offset `o` of the key lives at page `o`. NAND pages
//! of a block must be programmed in order, so a data block can only be
//! written from its write pointer on: an offset below it needs a new block
//! (a merge). A trimmed hole below a written offset is left erased (the NAND
//! lets a page be skipped, never revisited), so a merge saves both the read
//! and the program of a trimmed page, as the TRIM paper's merges do;
//! `ftl.pad_trimmed_holes` programs it as padding instead (ftlsim's earlier
//! model). A never-written hole is *padded*, programmed without data and
//! counted, as data placed before the run would sit there.
//!
//! Where each logical page's live copy is (data block or log block) is kept
//! in one forward index, as the page FTL does, so reads and merges find it
//! at once; it is the simulation's index, not a modelled table: each scheme
//! reports the RAM of the tables it would really keep (data map, log page
//! maps, TRIM list or per-page bitmap).

mod recovery;

use super::pool::{BlockPool, BlockState};
use super::recovery::TrimJournal;
use super::striping::{Stripes, emptiest_plane};
use super::trim_list::TrimList;
use super::{FtlStats, PageChunk, Span, page_chunks, whole_pages};
use crate::config::{Config, TrimMode, UnwrittenReads};
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, Ppn, SimTime};
use serde::{Deserialize, Serialize};

/// Forward-index value of a logical page never written.
const NEVER: u32 = u32::MAX;
/// Forward-index value of a trimmed (or merged-away trimmed) logical page.
const TRIMMED: u32 = u32::MAX - 1;
/// No block.
pub const NONE: u32 = u32::MAX;

#[inline]
fn is_mapped(v: u32) -> bool {
    v < TRIMMED
}

#[derive(Serialize, Deserialize)]
pub struct Hybrid {
    pub geo: Geometry,
    pub stripes: Stripes,
    fwd: crate::mem::BigVec<u32>,
    /// Data block of each key, or [`NONE`].
    data: Vec<u32>,
    pub pool: BlockPool,
    /// The TRIM list (list mode with TRIM on).
    trims: Option<TrimList>,
    trim_enabled: bool,
    pad_trimmed: bool,
    unwritten: UnwrittenReads,
    /// One page of bytes, for assembling payloads of host writes.
    scratch: Vec<u8>,
    /// TRIMs not yet durable (see `ftl::recovery`).
    journal: TrimJournal,
    pub stats: FtlStats,
}

impl Hybrid {
    /// `log_blocks` per chip besides the data blocks; `what` names the
    /// config key that sets them, for the error when they do not fit.
    pub fn new(cfg: &Config, dev: &Device, log_blocks: u32, what: &str) -> Result<Hybrid> {
        let geo = dev.geometry().clone();
        let logical = cfg.logical_pages();
        let stripes = Stripes::new(cfg.ftl.striping, &geo, logical);
        let per_chip = geo.blocks / stripes.chips();
        // Data blocks, logs, and one block a merge builds into.
        let needed = stripes.keys_per_chip() as u64 + log_blocks as u64 + 1;
        if (per_chip as u64) < needed {
            return Err(Error::config(
                what,
                format!(
                    "{} needs {needed} blocks per chip ({} data, {log_blocks} log, 1 for merges) but a chip has \
                     {per_chip}; lower it or raise overprovisioning",
                    cfg.ftl.name,
                    stripes.keys_per_chip()
                ),
            ));
        }
        let list = cfg.ftl.trim && cfg.ftl.trim_mode == TrimMode::List;
        let space = stripes.keys() as u64 * geo.pages_per_block as u64;
        Ok(Hybrid {
            fwd: crate::mem::big_vec(logical as usize, NEVER),
            data: vec![NONE; stripes.keys() as usize],
            pool: BlockPool::new(&geo, &cfg.gc, cfg.seed),
            trims: list.then(|| TrimList::new(space, cfg.ftl.trim_list_groups)),
            trim_enabled: cfg.ftl.trim,
            pad_trimmed: cfg.ftl.pad_trimmed_holes,
            unwritten: cfg.host.unwritten_reads,
            scratch: if dev.array.stores_payloads() { vec![0; geo.page_size as usize] } else { Vec::new() },
            journal: TrimJournal::new(dev),
            stats: FtlStats::default(),
            stripes,
            geo,
        })
    }

    #[inline]
    pub fn ppb(&self) -> u32 {
        self.geo.pages_per_block
    }

    #[inline]
    pub fn data_block(&self, key: u32) -> Option<BlockId> {
        (self.data[key as usize] != NONE).then(|| BlockId(self.data[key as usize]))
    }

    pub fn set_data_block(&mut self, key: u32, b: Option<BlockId>) {
        self.data[key as usize] = b.map_or(NONE, |b| b.0);
    }

    #[inline]
    pub fn written(&self, dev: &Device, b: BlockId) -> u32 {
        dev.array.written_pages(b)
    }

    /// The logical page at (key, offset); an offset beyond the logical space
    /// is a bug of the caller.
    pub fn lpn(&self, key: u32, off: u32) -> Result<Lpn> {
        self.stripes.lpn(key, off).ok_or_else(|| {
            Error::invariant("hybrid", format!("offset {off} of logical block {key} is beyond the space"))
        })
    }

    #[inline]
    fn listed(&self, lpn: Lpn) -> bool {
        self.trims.as_ref().is_some_and(|l| !l.is_empty() && l.contains(self.stripes.striped(lpn)))
    }

    /// Where the live copy of a logical page is: mapped and not listed as trimmed.
    #[inline]
    pub fn live(&self, lpn: Lpn) -> Option<Ppn> {
        let m = self.fwd[lpn.idx()];
        (is_mapped(m) && !self.listed(lpn)).then_some(Ppn(m))
    }

    /// `lpn` is trimmed for good: unmapped, its copy (if any) no longer
    /// valid. Returns whether it had one.
    fn unmap_trimmed(&mut self, lpn: Lpn, now: SimTime) -> bool {
        let old = std::mem::replace(&mut self.fwd[lpn.idx()], TRIMMED);
        if is_mapped(old) {
            self.pool.invalidate(self.geo.block_of(Ppn(old)), now);
        }
        is_mapped(old)
    }

    /// Whether `lpn` maps to the page `ppn` (listed as trimmed or not: a
    /// merge must still realize it).
    #[inline]
    pub fn maps_to(&self, lpn: Lpn, ppn: Ppn) -> bool {
        self.fwd.get(lpn.idx()) == Some(&ppn.0)
    }

    /// A free block of `chip`, from its plane with the most free blocks.
    pub fn alloc(&mut self, chip: u32) -> Result<BlockId> {
        let planes = self.stripes.planes(chip, &self.geo);
        let plane = emptiest_plane(planes, |p| self.pool.free_count(p));
        self.pool.take_free(plane).ok_or_else(|| Error::invariant("hybrid", format!("chip {chip} has no free block")))
    }

    /// Erases a block holding no live page and returns it to the pool.
    pub fn erase(&mut self, dev: &mut Device, b: BlockId, not_before: SimTime, cause: Cause) -> Result<SimTime> {
        if self.pool.valid(b) != 0 {
            return Err(Error::invariant("hybrid", format!("erase of {b} with {} live pages", self.pool.valid(b))));
        }
        let journalled = self.journal.before_erase(dev, not_before);
        let done = dev.erase(b, journalled, cause)?;
        self.pool.release(b)?;
        Ok(done)
    }

    /// A FLUSH: the TRIMs since the last one become durable.
    pub fn flush(&mut self, dev: &mut Device, now: SimTime) -> SimTime {
        self.journal.flush(dev, now)
    }

    /// Programs `ppn` as the new live copy of `lpn`.
    fn program_live(
        &mut self,
        dev: &mut Device,
        ppn: Ppn,
        lpn: Lpn,
        not_before: SimTime,
        cause: Cause,
        payload: Payload<'_>,
    ) -> Result<SimTime> {
        let done = dev.program(ppn, lpn, not_before, cause, payload)?;
        let old = self.fwd[lpn.idx()];
        if is_mapped(old) {
            self.pool.invalidate(self.geo.block_of(Ppn(old)), not_before);
        }
        self.fwd[lpn.idx()] = ppn.0;
        self.pool.add_valid(self.geo.block_of(ppn), not_before);
        Ok(done)
    }

    /// Programs host data (assembled by [`prepare`](Self::prepare)) at `ppn`.
    pub fn program_host(&mut self, dev: &mut Device, ppn: Ppn, lpn: Lpn, not_before: SimTime) -> Result<SimTime> {
        let scratch = std::mem::take(&mut self.scratch);
        let payload = if scratch.is_empty() { Payload::None } else { Payload::Bytes(&scratch) };
        let done = self.program_live(dev, ppn, lpn, not_before, Cause::Host, payload);
        self.scratch = scratch;
        done
    }

    /// Before a host page is written: assembles its payload (old bytes under
    /// the new ones) and reads the old page first for a partial write.
    /// Returns when the data is ready to program.
    pub fn prepare(&mut self, dev: &mut Device, c: PageChunk, ready: SimTime, data: Option<&[u8]>) -> Result<SimTime> {
        let old = self.live(c.lpn);
        let mut start = ready;
        if let Some(old) = old.filter(|_| !c.is_full_page(self.geo.sectors_per_page)) {
            start = dev.read(old, ready, Cause::Host)?;
            self.stats.rmw_reads += 1;
        }
        if let Some(data) = data {
            match old.and_then(|p| dev.array.page_data(p)) {
                Some(bytes) => self.scratch.copy_from_slice(bytes),
                None => self.scratch.fill(0),
            }
            self.scratch[c.byte_range()].copy_from_slice(&data[c.buf_range()]);
        }
        Ok(start)
    }

    /// Before a host write: its pages leave the TRIM list, their trimmed
    /// old copies unmapped first (a partial write keeps zeros around its data).
    pub fn unlist_span(&mut self, span: Span, now: SimTime) {
        if self.trims.as_ref().is_none_or(TrimList::is_empty) {
            return;
        }
        let spp = self.geo.sectors_per_page as u64;
        let first = (span.start.0 / spp) as u32;
        let end = (span.start.0 + span.sectors).div_ceil(spp) as u32;
        for lpn in (first..end).map(Lpn) {
            if is_mapped(self.fwd[lpn.idx()]) && self.listed(lpn) {
                self.unmap_trimmed(lpn, now);
            }
        }
        if let Some(list) = self.trims.as_mut() {
            for (s, e) in self.stripes.chip_ranges(first, end) {
                list.remove(s, e);
            }
        }
    }

    /// Copies the live pages of `key` at offsets from `into`'s write pointer
    /// up to `to` into `into`, in order, skipping trimmed holes and padding
    /// the others. Returns when the last program is done.
    pub fn fill(&mut self, dev: &mut Device, key: u32, into: BlockId, to: u32, t: SimTime) -> Result<SimTime> {
        let mut done = t;
        for off in self.written(dev, into)..to {
            let lpn = self.lpn(key, off)?;
            let dst = self.geo.ppn(into, off);
            done = match self.live(lpn) {
                Some(src) => {
                    let read = dev.read(src, t, Cause::Merge)?;
                    self.stats.merge_pages_copied += 1;
                    self.program_live(dev, dst, lpn, read, Cause::Merge, Payload::CopyFrom(src))?
                }
                None if self.is_trimmed(lpn) && !self.pad_trimmed => {
                    dev.skip(dst)?;
                    // Its list entry may go before any write: keep it
                    // trimmed (a listed page still mapped is realized here).
                    self.unmap_trimmed(lpn, t);
                    self.stats.pages_skipped += 1;
                    done
                }
                None => self.pad(dev, dst, lpn, t, Cause::Merge)?,
            };
        }
        Ok(done)
    }

    /// Whether the host trimmed `lpn` (listed or already unmapped) and has
    /// not written it since.
    #[inline]
    fn is_trimmed(&self, lpn: Lpn) -> bool {
        self.fwd[lpn.idx()] == TRIMMED || self.listed(lpn)
    }

    /// Programs a page without data to keep a block's pages in order.
    pub fn pad(&mut self, dev: &mut Device, dst: Ppn, lpn: Lpn, t: SimTime, cause: Cause) -> Result<SimTime> {
        self.stats.pages_padded += 1;
        dev.program(dst, lpn, t, cause, Payload::Pad)
    }

    /// One past the highest offset of `key` with a live copy (0: none).
    pub fn live_end(&self, key: u32) -> u32 {
        (0..self.ppb())
            .rev()
            .find(|&off| self.stripes.lpn(key, off).is_some_and(|l| self.live(l).is_some()))
            .map_or(0, |o| o + 1)
    }

    /// Before a merge of `key`: the listed pages of the key are unmapped for
    /// good (copies at offsets from `from` on are saved) and its entries
    /// leave the list.
    pub fn realize_trims(&mut self, key: u32, from: u32, now: SimTime) {
        if self.trims.as_ref().is_none_or(TrimList::is_empty) {
            return;
        }
        let base = key * self.ppb();
        let mut saved = 0;
        for off in 0..self.ppb() {
            let Some(lpn) = self.stripes.lpn(key, off) else { break };
            let listed = |s: &Self| s.trims.as_ref().is_some_and(|l| l.contains(base + off));
            if is_mapped(self.fwd[lpn.idx()]) && listed(self) {
                saved += (off >= from) as u64;
                self.unmap_trimmed(lpn, now);
            }
        }
        self.stats.trim_copies_saved += saved;
        let end = base + self.ppb();
        if let Some(list) = self.trims.as_mut() {
            list.remove(base, end);
        }
    }

    /// Records a merge that reclaimed a log block touching `assoc` data blocks.
    pub fn record_log_merge(&mut self, assoc: u64) {
        self.stats.log_merges += 1;
        self.stats.assoc_sum += assoc;
        self.stats.assoc_max = self.stats.assoc_max.max(assoc);
    }

    /// Reads a span; listed and unwritten pages read as zeros.
    pub fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let mut done = now;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            let listed = self.listed(c.lpn);
            let mut m = self.fwd[c.lpn.idx()];
            if !listed && m == NEVER && self.unwritten == UnwrittenReads::Place {
                match self.place(dev, c.lpn)? {
                    Some(p) => m = p.0,
                    None => done = done.max(self.read_hole(dev, c.lpn, now)?),
                }
            }
            let live = (!listed && is_mapped(m)).then_some(Ppn(m));
            if let Some(p) = live {
                done = done.max(dev.read(p, now, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match live.and_then(|p| dev.array.page_data(p)) {
                    Some(page) => dst.copy_from_slice(&page[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(done)
    }

    /// Puts a never-written page at its offset of its data block at no cost,
    /// as if written before the run (holes before it placed as padding).
    /// `None` when the offset is already used in the data block.
    fn place(&mut self, dev: &mut Device, lpn: Lpn) -> Result<Option<Ppn>> {
        let (key, off) = self.stripes.locate(lpn);
        let b = match self.data_block(key) {
            Some(b) => b,
            None => {
                let b = self.alloc(self.stripes.chip_of(key))?;
                self.set_data_block(key, Some(b));
                b
            }
        };
        let wp = self.written(dev, b);
        if wp > off {
            return Ok(None);
        }
        for o in wp..off {
            dev.place(self.geo.ppn(b, o), self.lpn(key, o)?, Payload::Pad)?;
        }
        let ppn = self.geo.ppn(b, off);
        dev.place(ppn, lpn, Payload::None)?;
        self.fwd[lpn.idx()] = ppn.0;
        self.pool.add_valid(b, SimTime::ZERO);
        self.stats.placed_reads += 1;
        Ok(Some(ppn))
    }

    /// A never-written page whose data-block offset is already used (a pad
    /// or a stale page): read that page, for the time placed data would take.
    fn read_hole(&mut self, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<SimTime> {
        let (key, off) = self.stripes.locate(lpn);
        let b = self.data_block(key).ok_or_else(|| Error::invariant("hybrid", "hole without a data block"))?;
        // Timed as a read whatever the page holds: a power cut may have torn it.
        Ok(dev.scan_oob(self.geo.ppn(b, off), now, Cause::Host).1)
    }

    /// Applies a TRIM: listed, or unmapped at once. Returns the keys it left
    /// without a live page (immediate mode only), for the scheme to reclaim
    /// their blocks.
    pub fn trim(&mut self, dev: &Device, span: Span) -> Vec<u32> {
        let pages = whole_pages(span, self.geo.sectors_per_page);
        for lpn in pages.clone().map(Lpn) {
            if self.live(lpn).is_some() {
                self.stats.trimmed_pages += 1;
                self.journal.trimmed(dev, lpn.0);
            }
        }
        if let Some(list) = self.trims.as_mut() {
            let before = list.accesses();
            for (s, e) in self.stripes.chip_ranges(pages.start, pages.end) {
                list.insert(s, e);
            }
            self.stats.ram_accesses += list.accesses() - before;
            return Vec::new();
        }
        let mut keys = Vec::new();
        // Each page's entry read and rewritten in the RAM map.
        self.stats.ram_accesses += 2 * pages.len() as u64;
        for lpn in pages.map(Lpn) {
            if self.unmap_trimmed(lpn, SimTime::ZERO) {
                keys.push(self.stripes.locate(lpn).0);
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|&key| self.live_end(key) == 0);
        keys
    }

    /// Immediate TRIM: erases the data block of a key left with no live page.
    pub fn drop_dead_data(&mut self, dev: &mut Device, key: u32, now: SimTime) -> Result<SimTime> {
        match self.data_block(key) {
            Some(b) if self.live_end(key) == 0 && self.pool.valid(b) == 0 => {
                self.set_data_block(key, None);
                self.erase(dev, b, now, Cause::Gc)
            }
            _ => Ok(now),
        }
    }

    pub fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        if let Some(l) = &self.trims {
            s.trim_list_entries = l.entries();
            s.trim_list_peak_entries = l.peak_entries();
            s.trim_list_bytes = l.bytes(l.peak_entries());
        }
        s
    }

    pub fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        if let Some(l) = self.trims.as_mut() {
            l.reset_peak();
        }
    }

    /// Modelled RAM of the shared tables: the data-block map, and the TRIM
    /// list at its peak (list mode) or a per-page bitmap (immediate mode).
    pub fn ram_bytes(&self) -> u64 {
        let map = self.data.len() as u64 * 4;
        match &self.trims {
            Some(l) => map + l.bytes(l.peak_entries()),
            None if self.trim_enabled => map + (self.geo.pages as u64).div_ceil(8),
            None => map,
        }
    }

    /// Blocks holding at least one live page (N_vb), listed pages excluded.
    pub fn blocks_with_valid_data(&self) -> u64 {
        let mapped = (0..self.fwd.len() as u32).filter_map(|lpn| self.live(Lpn(lpn)));
        super::distinct_blocks(self.geo.blocks as usize, mapped.map(|p| self.geo.block_of(p)))
    }

    /// Checks the shared invariants: every mapped page's OOB names it; a
    /// page in a key's data block sits at its offset, any other in a block
    /// `may_hold(key, block)` accepts; the pool's valid counts match; data
    /// blocks are in use and free blocks erased.
    pub fn check_invariants(&self, dev: &Device, may_hold: impl Fn(u32, BlockId) -> bool) -> Result<()> {
        let fail = |reason: String| Err(Error::invariant("hybrid", reason));
        let mut valid = vec![0u32; self.geo.blocks as usize];
        for (lpn, &m) in self.fwd.iter().enumerate() {
            if !is_mapped(m) {
                continue;
            }
            let (ppn, block) = (Ppn(m), self.geo.block_of(Ppn(m)));
            if !matches!(dev.array.read(ppn), Ok(l) if l.idx() == lpn) {
                return fail(format!("LPN {lpn} maps to {ppn}, whose OOB does not hold it"));
            }
            let (key, off) = self.stripes.locate(Lpn(lpn as u32));
            let in_data = self.data_block(key) == Some(block);
            if in_data && self.geo.page_in_block(ppn) != off {
                return fail(format!("LPN {lpn} (offset {off}) sits at page {} of its data block", ppn.0));
            }
            if !in_data && !may_hold(key, block) {
                return fail(format!("LPN {lpn} of logical block {key} lives in {block}, not its data or log block"));
            }
            valid[block.idx()] += 1;
        }
        for b in (0..self.geo.blocks).map(BlockId) {
            if self.pool.valid(b) != valid[b.idx()] {
                return fail(format!(
                    "{b}: pool counts {} valid pages, the map {}",
                    self.pool.valid(b),
                    valid[b.idx()]
                ));
            }
            if self.pool.state(b) == BlockState::Free && dev.array.written_pages(b) != 0 {
                return fail(format!("{b} is free but not erased"));
            }
        }
        for (key, &d) in self.data.iter().enumerate() {
            if d != NONE && self.pool.state(BlockId(d)) != BlockState::Active {
                return fail(format!("data block {d} of logical block {key} is not in use"));
            }
        }
        Ok(())
    }
}

/// The [`super::Ftl`] methods every block-mapped scheme answers from its
/// `core` field.
macro_rules! core_delegates {
    () => {
        fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, out: Option<&mut [u8]>) -> Result<SimTime> {
            self.core.read(dev, span, now, out)
        }

        fn stats(&self) -> FtlStats {
            self.core.stats()
        }

        fn reset_stats(&mut self) {
            self.core.reset_stats();
        }

        fn blocks_with_valid_data(&self) -> u64 {
            self.core.blocks_with_valid_data()
        }

        fn physical(&self, lpn: crate::units::Lpn) -> Option<crate::units::Ppn> {
            self.core.live(lpn)
        }

        fn flush(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime> {
            Ok(self.core.flush(dev, now))
        }

        fn saved_state(&mut self) -> Option<&mut dyn super::SavedState> {
            Some(self)
        }
    };
}
pub(crate) use core_delegates;

/// A log-block scheme, which places host pages one at a time.
pub trait PageWrites {
    fn core_mut(&mut self) -> &mut Hybrid;

    fn write_page(&mut self, dev: &mut Device, c: PageChunk, ready: SimTime, data: Option<&[u8]>) -> Result<SimTime>;

    /// A host write: its pages leave the TRIM list, then go one by one.
    fn write_span(&mut self, dev: &mut Device, span: Span, ready: SimTime, data: Option<&[u8]>) -> Result<SimTime> {
        self.core_mut().unlist_span(span, ready);
        let spp = self.core_mut().geo.sectors_per_page;
        let mut done = ready;
        for c in page_chunks(span, spp) {
            done = done.max(self.write_page(dev, c, ready, data)?);
        }
        Ok(done)
    }
}

/// Hand-built drives for the merge-cost tests of the schemes.
#[cfg(test)]
pub(crate) mod testing {
    use crate::config::Config;
    use crate::engine::Device;
    use crate::ftl::{Ftl, FtlStats, Span, build};
    use crate::nand::{Geometry, NandArray, Timing};
    use crate::units::{Sector, SimTime};

    /// One chip, 16 blocks of 4 single-sector pages, 32 logical pages: LPN
    /// `4 * key + offset`.
    pub fn drive(ftl: &str, overrides: &[&str]) -> (Box<dyn Ftl>, Device) {
        let (cfg, dev) = tiny(ftl, overrides);
        (build(ftl, &cfg, &dev).unwrap(), dev)
    }

    /// [`drive`]'s configuration and device, to build an FTL by its type.
    pub fn tiny(ftl: &str, overrides: &[&str]) -> (Config, Device) {
        let text = r#"
name = "tiny"
overprovisioning = 1.0
[geometry]
channels = 1
blocks_per_plane = 16
pages_per_block = 4
page_size = 512
[timing]
read_us = 20.0
program_us = 200.0
erase_us = 1500.0
bus_ns_per_byte = 1.0
"#;
        let mut all = vec![format!("ftl.name={ftl}")];
        all.extend(overrides.iter().map(|s| s.to_string()));
        let cfg = Config::from_toml_str(text, "tiny", &all).unwrap();
        let geo = Geometry::new(&cfg.geometry);
        let timing = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
        let dev = Device::new(NandArray::new(geo, 1000, false, false), timing);
        (cfg, dev)
    }

    /// Writes the pages `lpns`, one command each.
    pub fn write(ftl: &mut dyn Ftl, dev: &mut Device, lpns: &[u32]) {
        for &l in lpns {
            let span = Span { start: Sector(l as u64), sectors: 1 };
            ftl.write(dev, span, SimTime::ZERO, SimTime::ZERO, None).unwrap();
        }
        ftl.check_invariants(dev).unwrap();
    }

    pub fn trim(ftl: &mut dyn Ftl, dev: &mut Device, start: u32, pages: u32) {
        let span = Span { start: Sector(start as u64), sectors: pages as u64 };
        ftl.trim(dev, span, SimTime::ZERO).unwrap();
        ftl.check_invariants(dev).unwrap();
    }

    /// What a step cost: (merge copies, erases, merges switch/partial/full).
    #[derive(Debug, PartialEq, Eq)]
    pub struct Cost {
        pub copies: u64,
        pub erases: u64,
        pub kinds: [u64; 3],
    }

    pub fn cost(ftl: &mut dyn Ftl, dev: &mut Device, step: impl FnOnce(&mut dyn Ftl, &mut Device)) -> Cost {
        let snap = |s: FtlStats, d: &Device| {
            let erases = d.counters.erases.iter().sum::<u64>();
            (s.merge_pages_copied, erases, [s.merges_switch, s.merges_partial, s.merges_full])
        };
        let before = snap(ftl.stats(), dev);
        step(ftl, dev);
        let after = snap(ftl.stats(), dev);
        Cost {
            copies: after.0 - before.0,
            erases: after.1 - before.1,
            kinds: [0, 1, 2].map(|i| after.2[i] - before.2[i]),
        }
    }
}
