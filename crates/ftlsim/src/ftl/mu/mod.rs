//! `mu`: μ-FTL, Lee, Shin, Kim and Kim, "μ-FTL: A Memory-Efficient Flash
//! Translation Layer Supporting Multiple Mapping Granularities" (EMSOFT 2008),
//! Section 4.
//!
//! The map is a set of *extents* ⟨l, p, n⟩: logical pages `l..l+n` live at
//! physical pages `p..p+n` of one block (`n` ≤ pages per block ≤ 128, a 7-bit
//! length beside a 25-bit PPN). They are kept in the μ-Tree ([`tree`]) on
//! flash, behind small page-granular read and write caches. A write of
//! `l..l+n` first cuts every extent it overlaps (Section 4.2.3: *delete*
//! one it covers, *split* one that covers it, *trim right* one that starts
//! before it, *trim left* one that ends after it), then inserts its own
//! extent, merged with a neighbour that is logically and physically
//! contiguous in the same block.
//!
//! Invalid pages are counted per block (1 B each) to choose GC victims, and
//! recorded through the [`bitmap`] cache into bitmap entries in the tree
//! (one 32-page bitmap per sub-block holding an invalid page). GC starts
//! when free blocks fall to `gc.min_free_blocks` (2) and runs until
//! `ftl.gc_until_free` (12, at most the spare blocks beyond the update
//! blocks) are free; its victim is the block with the most
//! invalid pages, tree blocks included; it reads the victim's bitmaps (cache
//! bucket and tree entries), copies each valid page into the update block of
//! its [`partition`], and updates the extents. A block left wholly invalid
//! is erased at once. Tree traffic is flash traffic under
//! [`Cause::Mapping`]; [`MuStats`] splits it between the map and the bitmaps.
//!
//! Controller RAM is a budget (`ftl.mu_ram_bytes`, by default 4 B per block,
//! a block-mapped FTL's table, as the paper's (A+B+C) configurations): the
//! invalid counters, the bitmap cache, and the rest in whole pages for the
//! μ-Tree caches. On a drive too small for that table to hold two tree
//! pages beside the counters and the bitmap cache, the default is the
//! least budget that does.
//!
//! Crash recovery (`--power-cut`) scans every page's OOB and rebuilds the
//! μ-Tree from the data pages, not from the tree's own pages ([`recovery`]
//! says why and what it costs); TRIMs survive a cut once a FLUSH has
//! journalled them, as for the other FTLs.
//!
//! Simplifications: tree pages' validity is known from the tree's own
//! pointers rather than from bitmaps; tree writes go to a single tree
//! update block; reads of
//! never-written pages placed under `host.unwritten_reads = "place"` still
//! pay their tree updates; map lookups in RAM cost no time.

pub mod bitmap;
pub mod leaf_index;
pub mod lru;
pub mod partition;
pub mod recovery;
pub mod space;
pub mod tree;

use super::pool::{BlockPool, BlockState};
use super::recovery::TrimJournal;
use super::{Ftl, FtlStats, PageChunk, RecoveryReport, Span, page_chunks, whole_pages};
use crate::config::{Config, UnwrittenReads};
use crate::engine::{AllCopies, Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, Ppn, SimTime};
use bitmap::BitmapCache;
use leaf_index::Found;
use partition::Partitions;
use serde::{Deserialize, Serialize};
use space::Space;
use std::cell::Cell;
use tree::MuTree;

/// Tree keys from here on are bitmap entries (`BITMAP_KEYS + block ×
/// sub-blocks + sub-block`); below, extents keyed by their first LPN.
const BITMAP_KEYS: u32 = 1 << 31;
/// Pages per bitmap entry (a `u32`'s bits, as [`BitmapCache::take_bits`] marks them).
const SUB_BLOCK: u32 = u32::BITS;
/// The longest extent Fig. 3's 7-bit length records.
const MAX_EXTENT: u32 = 128;
/// Bitmap entries of a block at most.
const MAX_SUBS: usize = MAX_EXTENT.div_ceil(SUB_BLOCK) as usize;
/// A block's invalid pages, one bitmap per sub-block (the first `subs` used).
type SubBits = [u32; MAX_SUBS];
/// Fig. 3's 25-bit PPN.
const MAX_PAGES: u64 = 1 << 25;
/// GC copies whose tree leaves are prefetched ahead of the copy (their
/// entries half as far ahead).
const GC_PREFETCH_AHEAD: usize = 16;
/// Host commands between prefetching a leaf's node and its entry.
const LEAF_STAGES: usize = 4;

/// An extent's tree value as Fig. 3 records it in 4 B: the 25-bit PPN of
/// its first page and its length (1 to 128) less one in 7 bits.
#[inline]
fn pack(ppn: u32, len: u32) -> u32 {
    debug_assert!((ppn as u64) < MAX_PAGES && (1..=MAX_EXTENT).contains(&len), "extent {ppn}+{len}");
    ppn << 7 | (len - 1)
}

/// An extent's first PPN and length, from [`pack`].
#[inline]
fn unpack(v: u32) -> (u32, u32) {
    (v >> 7, (v & 0x7f) + 1)
}

/// μ-FTL's own report fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MuStats {
    /// Extents and bitmap entries in the μ-Tree at the end, and its height.
    pub extents: u64,
    pub bitmap_entries: u64,
    pub tree_height: u32,
    /// Tree node visits of lookups, and those served from RAM.
    pub tree_node_visits: u64,
    pub tree_cache_hits: u64,
    /// Tree page reads and programs on behalf of the map and of the bitmaps.
    pub map_tree_reads: u64,
    pub map_tree_programs: u64,
    pub bitmap_tree_reads: u64,
    pub bitmap_tree_programs: u64,
    /// Tree pages GC moved.
    pub tree_pages_relocated: u64,
    /// Bitmap cache: invalid extents recorded; blocks flushed to the tree,
    /// taken by GC, dropped when wholly invalid.
    pub bitmap_inserts: u64,
    pub bitmap_flushes: u64,
    pub bitmap_taken_by_gc: u64,
    pub bitmap_dropped: u64,
    /// Blocks erased at once for being wholly invalid.
    pub wholly_invalid_erases: u64,
    /// Overlap cases of Section 4.2.3 and extent merges on insert.
    pub overlap_delete: u64,
    pub overlap_split: u64,
    pub overlap_trim_right: u64,
    pub overlap_trim_left: u64,
    pub extent_merges: u64,
}

/// What a remap makes of the pages it unmaps.
#[derive(Clone, Copy)]
enum Old {
    /// The host overwrote or trimmed them: they become invalid.
    Invalid,
    /// GC copied them from this page on: they must be exactly those pages,
    /// all mapped.
    MovedFrom(u32),
}

/// Pages being written into one update block, mapped once the run ends.
#[derive(Clone, Copy)]
struct Run {
    lpn: u32,
    ppn: u32,
    n: u32,
}

#[derive(Serialize, Deserialize)]
pub struct Mu {
    geo: Geometry,
    space: Space,
    tree: MuTree,
    bitmaps: BitmapCache,
    parts: Partitions,
    logical: u32,
    subs: u32,
    gc_low: u32,
    gc_until: u32,
    ram_bytes: u64,
    unwritten: UnwrittenReads,
    /// Logical pages ever written or placed (simulation bookkeeping for
    /// placed reads, not a modelled table).
    ever: Vec<u64>,
    to_erase: Vec<BlockId>,
    /// Extents a remap cuts, left there after it (a TRIM journals their
    /// pages), and pages a GC run copies (kept to reuse their allocations).
    over: Vec<(u32, u32, u32)>,
    srcs: Vec<u32>,
    scratch: Vec<u8>,
    /// Leaves [`Ftl::prefetch`] has started loading and the keys looked
    /// for in them, oldest first (their entries follow when they leave).
    /// Hints only: not saved.
    #[serde(skip, default = "no_prefetches")]
    prefetched: Cell<[(Found, u32); LEAF_STAGES]>,
    /// TRIMs not yet durable (see `ftl::recovery`).
    journal: TrimJournal,
    stats: FtlStats,
    mu: MuStats,
}

fn no_prefetches() -> Cell<[(Found, u32); LEAF_STAGES]> {
    Cell::new([(Found::NONE, 0); LEAF_STAGES])
}

/// The RAM split: the tree cache's read and write pages.
fn ram_split(cfg: &Config, geo: &Geometry) -> Result<(u64, u32, u32)> {
    let f = &cfg.ftl;
    let fixed = geo.blocks as u64 + f.mu_bitmap_cache_bytes;
    let page = geo.page_size as u64;
    // The smallest budget that works: counters, bitmap cache, and a read
    // and a write page for the μ-Tree.
    let least = fixed + 2 * page;
    // A block-mapped table (4 B per block) is below that on drives of fewer
    // than (bitmap cache + 2 pages) / 3 blocks (5,462 with 4 KiB pages and
    // the 8 KiB cache): the default then takes the least budget.
    let budget = if f.mu_ram_bytes == 0 { (geo.blocks as u64 * 4).max(least) } else { f.mu_ram_bytes };
    if budget < least {
        return Err(Error::config(
            "ftl.mu_ram_bytes",
            format!(
                "{budget} B leave no two pages for the μ-Tree caches (a read and a write page of {page} B) after {} B \
                 of invalid counters (1 B per block) and {} B of bitmap cache (ftl.mu_bitmap_cache_bytes); raise it \
                 to at least {least}, or leave it 0 for the default (4 B per block, at least {least} B)",
                geo.blocks, f.mu_bitmap_cache_bytes,
            ),
        ));
    }
    let tree_pages = (budget - fixed) / page;
    let write = if f.mu_write_cache_pages == 0 { (tree_pages / 2) as u32 } else { f.mu_write_cache_pages };
    if write as u64 >= tree_pages {
        return Err(Error::config(
            "ftl.mu_write_cache_pages",
            format!("{write} leaves no read cache of the {tree_pages} μ-Tree cache pages"),
        ));
    }
    Ok((budget, tree_pages as u32 - write, write))
}

impl Mu {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Mu> {
        let geo = dev.geometry().clone();
        let ppb = geo.pages_per_block;
        if ppb > MAX_EXTENT {
            return Err(Error::config(
                "geometry.pages_per_block",
                format!("{ppb}: μ-FTL's 7-bit extent length addresses at most {MAX_EXTENT} pages per block"),
            ));
        }
        if geo.pages as u64 > MAX_PAGES {
            return Err(Error::config(
                "geometry",
                format!("{} physical pages exceed the 2^25 μ-FTL's 25-bit PPNs address", geo.pages),
            ));
        }
        let logical = cfg.logical_pages() as u32;
        let subs = ppb.div_ceil(SUB_BLOCK);
        let (ram_bytes, read_pages, write_pages) = ram_split(cfg, &geo)?;
        let f = &cfg.ftl;
        if f.partition_bytes % geo.page_size as u64 != 0 {
            return Err(Error::config(
                "ftl.partition_bytes",
                format!("{} is not a multiple of the {} B page", f.partition_bytes, geo.page_size),
            ));
        }
        let part_pages = (f.partition_bytes / geo.page_size as u64).min(logical as u64) as u32;
        let parts = Partitions::new(logical, part_pages);
        let gc_low = cfg.gc.min_free_blocks;
        if f.gc_until_free <= gc_low {
            return Err(Error::config(
                "ftl.gc_until_free",
                format!("{} must exceed gc.min_free_blocks ({gc_low}), where GC starts", f.gc_until_free),
            ));
        }
        let spare = geo.blocks as u64 - (logical as u64).div_ceil(ppb as u64);
        let needed = parts.count() as u64 + 2 + gc_low as u64;
        if spare < needed {
            return Err(Error::config(
                "overprovisioning",
                format!(
                    "leaves {spare} spare blocks; μ-FTL needs {needed}: an update block for each of {} partitions \
                     (ftl.partition_bytes), one for the μ-Tree, one to write into, and gc.min_free_blocks",
                    parts.count()
                ),
            ));
        }
        let pool = BlockPool::new(&geo, &cfg.gc, cfg.seed);
        // A target the spare cannot reach would collect every block with an
        // invalid page at each episode.
        let gc_until = f.gc_until_free.min((spare - parts.count() as u64 - 1) as u32);
        Ok(Mu {
            space: Space::new(geo.clone(), pool),
            tree: MuTree::new(&geo, read_pages, write_pages, Lpn(logical), BITMAP_KEYS),
            bitmaps: BitmapCache::new(f.mu_bitmap_cache_bytes),
            parts,
            logical,
            subs,
            gc_low,
            gc_until,
            ram_bytes,
            unwritten: cfg.host.unwritten_reads,
            ever: vec![0; (logical as usize).div_ceil(64)],
            to_erase: Vec::new(),
            over: Vec::new(),
            srcs: Vec::new(),
            scratch: if dev.array.stores_payloads() { vec![0; geo.page_size as usize] } else { Vec::new() },
            prefetched: no_prefetches(),
            journal: TrimJournal::new(dev),
            stats: FtlStats::default(),
            mu: MuStats::default(),
            geo,
        })
    }

    /// Where `lpn` lives, by the extents (no cost).
    fn mapped(&self, lpn: u32) -> Option<Ppn> {
        let (a, v) = self.tree.floor(lpn)?;
        let (q, m) = unpack(v);
        (a < BITMAP_KEYS && lpn < a + m).then(|| Ppn(q + lpn - a))
    }

    fn same_block(&self, a: u32, b: u32) -> bool {
        self.geo.block_of(Ppn(a)) == self.geo.block_of(Ppn(b))
    }

    /// Maps `l..l+n` to `new..` (or unmaps it with `None`): cuts the
    /// overlapped extents, then inserts the new one, merged with contiguous
    /// neighbours. Returns the pages that were mapped.
    fn remap(&mut self, l: u32, n: u32, new: Option<u32>, old: Old, now: SimTime) -> Result<u64> {
        if let Some(p) = new {
            if self.remap_in_place(l, n, p, old, now) {
                return Ok(n as u64);
            }
        }
        let end = l + n;
        let mut over = std::mem::take(&mut self.over);
        over.clear();
        if let Some((a, v)) = self.tree.before(l) {
            let (q, m) = unpack(v);
            if a + m > l {
                over.push((a, q, m));
            }
        }
        over.extend(self.tree.range(l, end).map(|(a, v)| (a, unpack(v).0, unpack(v).1)));
        if let Old::MovedFrom(src) = old {
            // The extents must map exactly `src..` to `l..end`, every page.
            let mut next = l;
            for &(a, q, m) in &over {
                let s = a.max(l);
                if s != next || q + (s - a) != src + (s - l) {
                    return Err(self.not_moved(src + (next - l), next));
                }
                next = (a + m).min(end);
            }
            if next != end {
                return Err(self.not_moved(src + (next - l), next));
            }
        }
        let mut unmapped = 0;
        for &(a, q, m) in &over {
            let (s, e) = (a.max(l), (a + m).min(end));
            unmapped += (e - s) as u64;
            if let Old::Invalid = old {
                self.invalidate(q + (s - a), e - s, now);
            }
            let (cut_left, cut_right) = (a < l, a + m > end);
            match (cut_left, cut_right) {
                (true, true) => self.mu.overlap_split += 1,
                (true, false) => self.mu.overlap_trim_right += 1,
                (false, true) => self.mu.overlap_trim_left += 1,
                (false, false) => self.mu.overlap_delete += 1,
            }
            if cut_left {
                self.tree.insert(a, pack(q, l - a));
            } else {
                self.tree.remove(a);
            }
            if cut_right {
                self.tree.insert(end, pack(q + (end - a), a + m - end));
            }
        }
        self.over = over;
        if let Some(p) = new {
            self.insert_merged(l, p, n);
        }
        Ok(unmapped)
    }

    /// [`remap`](Self::remap)'s common case in one tree step: `l..l+n` is
    /// exactly one extent (a *delete*), which [`MuTree::replace`] can
    /// overwrite, and the new extent merges with neither neighbour. Leaves
    /// everything as `remap` would (random overwrites and GC copies of
    /// single pages are nearly all this case); returns false, having changed
    /// nothing, when it does not apply.
    fn remap_in_place(&mut self, l: u32, n: u32, p: u32, old: Old, now: SimTime) -> bool {
        let Some(spot) = self.tree.spot(l) else { return false };
        let (q, m) = unpack(spot.value);
        let ((a, v), (next, sv)) = (spot.before, spot.after);
        let (pq, pm) = unpack(v);
        let end = l + n;
        let exact = m == n && a + pm <= l && next >= end;
        let moved = match old {
            Old::Invalid => true,
            Old::MovedFrom(src) => q == src,
        };
        // `insert_merged`'s two merge rules, against the same neighbours.
        let merges_left = a + pm == l && pq + pm == p && self.same_block(pq, p);
        let merges_right = next == end && end < self.logical && unpack(sv).0 == p + n && self.same_block(p, p + n);
        if !exact || !moved || merges_left || merges_right {
            return false;
        }
        if let Old::Invalid = old {
            self.invalidate(q, n, now);
        }
        self.mu.overlap_delete += 1;
        self.tree.replace(&spot, pack(p, n));
        true
    }

    fn not_moved(&self, ppn: u32, lpn: u32) -> Error {
        Error::invariant("mu", format!("page {ppn} is valid by the bitmaps but the extents map LPN {lpn} elsewhere"))
    }

    fn insert_merged(&mut self, l: u32, p: u32, n: u32) {
        let (mut k, mut q, mut m) = (l, p, n);
        if let Some((a, v)) = self.tree.before(l) {
            let (pq, pm) = unpack(v);
            if a + pm == l && pq + pm == p && self.same_block(pq, p) {
                (k, q, m) = (a, pq, pm + n);
                self.mu.extent_merges += 1;
            }
        }
        if let Some((sq, sm)) = self.tree.get(l + n).filter(|_| l + n < self.logical).map(unpack) {
            if sq == p + n && self.same_block(p, sq) {
                self.tree.remove(l + n);
                m += sm;
                self.mu.extent_merges += 1;
            }
        }
        self.tree.insert(k, pack(q, m));
    }

    /// Pages `ppn..ppn+n` of one block became invalid.
    fn invalidate(&mut self, ppn: u32, n: u32, now: SimTime) {
        let b = self.geo.block_of(Ppn(ppn));
        self.bitmaps.insert(b.0, self.geo.page_in_block(Ppn(ppn)), n);
        if self.space.invalidate(Ppn(ppn), n, now) {
            self.to_erase.push(b);
        }
    }

    /// The invalid pages of data block `b` as sub-block bitmaps, from its
    /// bitmap-cache bucket and, when the counter says some are not cached,
    /// its bitmap entries in the tree, which are removed. Returns them and
    /// when the tree reads are done.
    fn take_invalid(&mut self, dev: &mut Device, b: BlockId, now: SimTime) -> Result<(SubBits, SimTime)> {
        let mut bits = [0u32; MAX_SUBS];
        let cached = self.bitmaps.take_bits(b.0, &mut bits);
        let mut t = now;
        if self.space.invalid[b.idx()] as u32 > cached {
            for s in 0..self.subs {
                let key = BITMAP_KEYS + b.0 * self.subs + s;
                t = self.tree.lookup(dev, key, t)?;
                if let Some(v) = self.tree.remove(key) {
                    bits[s as usize] |= v;
                }
            }
        }
        Ok((bits, t))
    }

    /// Writes the fullest bucket of the bitmap cache into the tree's bitmap entries.
    fn flush_bitmaps(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        let Some(b) = self.bitmaps.fullest() else { return Ok(()) };
        self.mu.bitmap_flushes += 1;
        let mut bits = [0u32; MAX_SUBS];
        self.bitmaps.take_bits(b, &mut bits);
        for (s, &add) in bits[..self.subs as usize].iter().enumerate().filter(|(_, v)| **v != 0) {
            let key = BITMAP_KEYS + b * self.subs + s as u32;
            self.tree.lookup(dev, key, now)?;
            self.tree.insert_or(key, add);
        }
        Ok(())
    }

    /// After each command: erases wholly invalid blocks, flushes the bitmap
    /// cache to capacity, and writes back the tree's write cache to capacity.
    fn finish(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        self.erase_wholly_invalid(dev, now)?;
        while self.bitmaps.is_over() {
            self.flush_bitmaps(dev, now)?;
        }
        self.write_back(dev, false, now)
    }

    /// Writes back the tree's write cache down to capacity (`all`: empty),
    /// collecting first whenever free blocks fall to the threshold: a
    /// write-back after a long GC may take several blocks.
    fn write_back(&mut self, dev: &mut Device, all: bool, now: SimTime) -> Result<()> {
        while self.tree.must_write_back(all) {
            if self.space.free_blocks() <= self.gc_low {
                self.collect(dev, now)?;
            }
            self.tree.write_back_oldest(&mut self.space, dev, now)?;
        }
        self.tree.release_dead(&mut self.space, dev, now)
    }

    fn erase_wholly_invalid(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        while let Some(b) = self.to_erase.pop() {
            if !self.space.wholly_invalid(b) {
                continue; // collected meanwhile
            }
            if !self.bitmaps.runs(b.0).is_empty() {
                self.mu.bitmap_dropped += 1;
            }
            self.take_invalid(dev, b, now)?;
            self.mu.wholly_invalid_erases += 1;
            self.erase_data(dev, b, now)?;
            self.space.release(b)?;
        }
        Ok(())
    }

    /// A full block leaves service: wholly invalid ones are erased soon.
    fn close(&mut self, b: BlockId, now: SimTime) {
        self.space.pool.close(b, now);
        if self.space.wholly_invalid(b) {
            self.to_erase.push(b);
        }
    }

    /// Maps the pages of a finished run.
    fn commit(&mut self, run: &mut Option<Run>, now: SimTime) -> Result<()> {
        if let Some(r) = run.take() {
            self.remap(r.lpn, r.n, Some(r.ppn), Old::Invalid, now)?;
        }
        Ok(())
    }

    /// The next page of `lpn`'s partition's update block. Opening a block
    /// ends the host's run first; for the host, it starts GC when free
    /// blocks have fallen to the threshold.
    fn alloc(&mut self, dev: &mut Device, lpn: u32, now: SimTime, run: Option<&mut Option<Run>>) -> Result<Ppn> {
        let part = self.parts.of(Lpn(lpn));
        let for_gc = run.is_none();
        if let Some(run) = run {
            if let Some(b) = self.parts.update_block(part) {
                if dev.array.written_pages(b) < self.geo.pages_per_block {
                    return Ok(self.geo.ppn(b, dev.array.written_pages(b)));
                }
            }
            self.commit(run, now)?;
        }
        loop {
            if let Some(b) = self.parts.update_block(part) {
                let w = dev.array.written_pages(b);
                if w < self.geo.pages_per_block {
                    return Ok(self.geo.ppn(b, w));
                }
                self.close(b, now);
                self.parts.set_update_block(part, None);
            }
            if !for_gc && self.space.free_blocks() <= self.gc_low {
                self.collect(dev, now)?;
                if self.parts.update_block(part).is_some() {
                    continue; // GC opened this partition's block: use it
                }
            }
            let b = self.space.take_block("partition update block")?;
            self.parts.set_update_block(part, Some(b));
            return Ok(self.geo.ppn(b, 0));
        }
    }

    /// GC: reclaims victims until `gc_until` blocks are free or none has an
    /// invalid page.
    fn collect(&mut self, dev: &mut Device, now: SimTime) -> Result<()> {
        let mut budget = self.geo.blocks;
        while self.space.free_blocks() < self.gc_until && budget > 0 {
            budget -= 1;
            // In this order: erasing a wholly invalid block drops its
            // bitmap entries from the tree, which may free a node and leave
            // a tree page dead; released after, it is not a victim's live
            // page (tree GC refuses dead pages still listed).
            self.erase_wholly_invalid(dev, now)?;
            self.tree.release_dead(&mut self.space, dev, now)?;
            let Some(victim) = self.space.victim(now) else { break };
            if self.space.pool.valid(victim) >= self.geo.pages_per_block {
                break;
            }
            self.reclaim(dev, victim, now)?;
        }
        Ok(())
    }

    fn reclaim(&mut self, dev: &mut Device, victim: BlockId, now: SimTime) -> Result<()> {
        self.stats.gc_invocations += 1;
        self.space.pool.start_reclaim(victim);
        if self.tree.owns(victim) {
            return self.tree.reclaim(&mut self.space, dev, victim, now);
        }
        let first = self.geo.ppn(victim, 0).0;
        if !self.bitmaps.runs(victim.0).is_empty() {
            self.mu.bitmap_taken_by_gc += 1;
        }
        let (bits, t) = self.take_invalid(dev, victim, now)?;
        let mut done = t;
        let written = dev.array.written_pages(victim);
        let valid: Vec<(u32, u32)> = (0..written)
            .filter(|&i| bits[(i / SUB_BLOCK) as usize] & (1 << (i % SUB_BLOCK)) == 0)
            .map(|i| (first + i, dev.array.oob_lpn_raw(Ppn(first + i))))
            .collect();
        // Each run's extent is looked up and rewritten: start loading the
        // leaves of those ahead, nodes first, then entries.
        // The leaves found for the node prefetch, by index in `valid`, so
        // the entry prefetch need not look again.
        // The copy's lookup takes the leaf found too, if none has changed since.
        let mut leaves = [(usize::MAX, Found::NONE); GC_PREFETCH_AHEAD];
        for (j, &(_, lpn)) in valid.iter().enumerate().take(GC_PREFETCH_AHEAD) {
            leaves[j] = (j, self.tree.prefetch_leaf(lpn));
        }
        let mut i = 0;
        while i < valid.len() {
            // Before the prefetch of the copy GC_PREFETCH_AHEAD on takes its slot.
            let (k, found) = leaves[i % GC_PREFETCH_AHEAD];
            if k == i {
                self.tree.reuse(found);
            }
            let j = i + GC_PREFETCH_AHEAD;
            if let Some(&(_, lpn)) = valid.get(j) {
                leaves[j % GC_PREFETCH_AHEAD] = (j, self.tree.prefetch_leaf(lpn));
            }
            let j = i + GC_PREFETCH_AHEAD / 2;
            if let Some(&(_, lpn)) = valid.get(j) {
                let leaf = match leaves[j % GC_PREFETCH_AHEAD] {
                    (k, leaf) if k == j => leaf,
                    _ => self.tree.prefetch_leaf(lpn),
                };
                self.tree.prefetch_entry(leaf, lpn);
            }
            // A run of pages contiguous on both sides, in one partition.
            let (src, lpn) = valid[i];
            let part = self.parts.of(Lpn(lpn));
            let mut n = 1;
            while i + n < valid.len()
                && valid[i + n] == (src + n as u32, lpn + n as u32)
                && self.parts.of(Lpn(lpn + n as u32)) == part
            {
                n += 1;
            }
            let known = self.tree.lookup(dev, lpn, t)?;
            let mut moved = 0;
            while moved < n as u32 {
                let dst = self.alloc(dev, lpn + moved, now, None)?;
                let room = self.geo.pages_per_block - self.geo.page_in_block(dst);
                let k = room.min(n as u32 - moved);
                let mut srcs = std::mem::take(&mut self.srcs);
                srcs.clear();
                srcs.extend(src + moved..src + moved + k);
                done = done.max(dev.copy_run(&srcs, dst, known, AllCopies(Cause::Gc))?);
                self.srcs = srcs;
                self.remap(lpn + moved, k, Some(dst.0), Old::MovedFrom(src + moved), now)?;
                self.space.pool.transfer_valid(victim, self.geo.block_of(dst), k, now);
                self.stats.gc_pages_copied += k as u64;
                moved += k;
            }
            i += n;
        }
        self.erase_data(dev, victim, done)?;
        self.space.release(victim)
    }

    /// Erases data block `b` once the pending TRIMs are journalled (one of
    /// its pages may be the newest copy of a trimmed page).
    fn erase_data(&mut self, dev: &mut Device, b: BlockId, t: SimTime) -> Result<SimTime> {
        let journalled = self.journal.before_erase(dev, t);
        dev.erase(b, journalled, Cause::Gc)
    }

    /// Puts a never-written page on flash at no cost (`unwritten_reads = "place"`).
    fn place(&mut self, dev: &mut Device, lpn: u32, now: SimTime) -> Result<Ppn> {
        let mut run = None;
        let ppn = self.alloc(dev, lpn, now, Some(&mut run))?;
        dev.place(ppn, Lpn(lpn), Payload::None)?;
        self.space.pool.add_valid(self.geo.block_of(ppn), now);
        self.ever[lpn as usize / 64] |= 1 << (lpn % 64);
        self.stats.placed_reads += 1;
        self.remap(lpn, 1, Some(ppn.0), Old::Invalid, now)?;
        Ok(ppn)
    }

    /// Assembles a partial page's payload (old bytes under the new) and
    /// reads the old page first; returns when the data is ready.
    fn prepare(
        &mut self,
        dev: &mut Device,
        c: PageChunk,
        ready: SimTime,
        known: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        if c.is_full_page(self.geo.sectors_per_page) {
            return Ok(ready);
        }
        let old = self.mapped(c.lpn.0);
        let mut start = ready;
        if let Some(old) = old {
            start = dev.read(old, ready.max(known), Cause::Host)?;
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
}

impl Ftl for Mu {
    fn name(&self) -> &'static str {
        "mu"
    }

    /// The leaf's node now, its entry `LEAF_STAGES` commands later.
    fn prefetch(&self, span: Span) {
        let spp = self.geo.sectors_per_page as u64;
        let key = super::split_sector(span.start.0, spp).0 as u32;
        let leaf = self.tree.prefetch_leaf(key);
        let mut leaves = self.prefetched.get();
        self.tree.prefetch_entry(leaves[0].0, leaves[0].1);
        leaves.rotate_left(1);
        leaves[LEAF_STAGES - 1] = (leaf, key);
        self.prefetched.set(leaves);
    }

    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let mut done = now;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            let known = self.tree.lookup(dev, c.lpn.0, now)?;
            let mut m = self.mapped(c.lpn.0);
            let ever = self.ever[c.lpn.idx() / 64] & (1 << (c.lpn.0 % 64)) != 0;
            if m.is_none() && !ever && self.unwritten == UnwrittenReads::Place {
                m = Some(self.place(dev, c.lpn.0, now)?);
            }
            if let Some(p) = m {
                done = done.max(dev.read(p, known, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match m.and_then(|p| dev.array.page_data(p)) {
                    Some(page) => dst.copy_from_slice(&page[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        self.finish(dev, now)?;
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
        let mut run: Option<Run> = None;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            let known = self.tree.lookup(dev, c.lpn.0, now)?;
            let start = self.prepare(dev, c, ready, known, data)?;
            let ppn = self.alloc(dev, c.lpn.0, now, Some(&mut run))?;
            let payload = match data {
                Some(data) if c.is_full_page(self.geo.sectors_per_page) => Payload::Bytes(&data[c.buf_range()]),
                Some(_) => Payload::Bytes(&self.scratch),
                None => Payload::None,
            };
            done = done.max(dev.program(ppn, c.lpn, start, Cause::Host, payload)?);
            self.space.pool.add_valid(self.geo.block_of(ppn), now);
            self.ever[c.lpn.idx() / 64] |= 1 << (c.lpn.0 % 64);
            run = match run {
                Some(r) if r.ppn + r.n == ppn.0 && r.lpn + r.n == c.lpn.0 && self.same_block(r.ppn, ppn.0) => {
                    Some(Run { n: r.n + 1, ..r })
                }
                other => {
                    let mut other = other;
                    self.commit(&mut other, now)?;
                    Some(Run { lpn: c.lpn.0, ppn: ppn.0, n: 1 })
                }
            };
        }
        self.commit(&mut run, now)?;
        self.finish(dev, now)?;
        Ok(done)
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        let pages = whole_pages(span, self.geo.sectors_per_page);
        if pages.is_empty() {
            return Ok(now);
        }
        let known = self.tree.lookup(dev, pages.start, now)?;
        self.stats.trimmed_pages += self.remap(pages.start, pages.end - pages.start, None, Old::Invalid, now)?;
        for &(a, _, m) in &self.over {
            for lpn in a.max(pages.start)..(a + m).min(pages.end) {
                self.journal.trimmed(dev, lpn);
            }
        }
        self.finish(dev, now)?;
        Ok(known)
    }

    /// Writes the tree's write cache back, as a drive that trusts its
    /// on-flash tree must (this model's recovery does not read it, see
    /// [`recovery`], but keeps the cost), and journals the TRIMs since the
    /// last FLUSH; returns when the journal is on flash.
    fn flush(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        self.write_back(dev, true, now)?;
        Ok(self.journal.flush(dev, now))
    }

    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        self.recover(dev, now)
    }

    /// Without the tree walk [`stats`](Ftl::stats) makes for its extent counts.
    fn ram_accesses(&self) -> u64 {
        self.stats.ram_accesses
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        let t = &self.tree.stats;
        let mut mu = self.mu.clone();
        [mu.extents, mu.bitmap_entries] = self.tree.entry_counts();
        mu.tree_height = self.tree.height();
        mu.tree_node_visits = t.visits;
        mu.tree_cache_hits = t.visit_hits;
        (mu.map_tree_reads, mu.bitmap_tree_reads) = (t.reads[0], t.reads[1]);
        (mu.map_tree_programs, mu.bitmap_tree_programs) = (t.programs[0], t.programs[1]);
        mu.tree_pages_relocated = t.relocated;
        mu.bitmap_inserts = self.bitmaps.stats.inserts;
        s.map_cached = true;
        s.map_lookups = t.visits;
        s.map_hits = t.visit_hits;
        s.mu = Some(mu);
        s
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.mu = MuStats::default();
        self.tree.stats = Default::default();
        self.bitmaps.stats = Default::default();
    }

    fn saved_state(&mut self) -> Option<&mut dyn super::SavedState> {
        Some(self)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        self.ram_bytes
    }

    fn blocks_with_valid_data(&self) -> u64 {
        self.space.pool.blocks_with_valid_data()
    }

    fn physical(&self, lpn: Lpn) -> Option<Ppn> {
        self.mapped(lpn.0)
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        self.tree.check(&self.space, dev)?;
        self.check_extents(dev)?;
        self.check_blocks(dev)
    }
}

impl Mu {
    /// Extents are disjoint, inside one block each, and each page's OOB
    /// names its LPN; the valid count of every block is its extents' pages
    /// plus its live tree pages.
    fn check_extents(&self, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("mu", r));
        let mut valid = vec![0u32; self.geo.blocks as usize];
        let mut end = 0;
        for (a, v) in self.tree.range(0, BITMAP_KEYS) {
            let (q, m) = unpack(v);
            if m == 0 || m > self.geo.pages_per_block || a < end || a + m > self.logical {
                return fail(format!("extent ⟨{a}, {q}, {m}⟩ is empty, too long, overlaps or leaves the space"));
            }
            if !self.same_block(q, q + m - 1) {
                return fail(format!("extent ⟨{a}, {q}, {m}⟩ crosses a block boundary"));
            }
            for i in 0..m {
                if dev.array.read(Ppn(q + i)).ok() != Some(Lpn(a + i)) {
                    return fail(format!("extent ⟨{a}, {q}, {m}⟩: page {} does not hold LPN {}", q + i, a + i));
                }
            }
            valid[self.geo.block_of(Ppn(q)).idx()] += m;
            end = a + m;
        }
        for p in self.tree.live_page_list() {
            valid[self.geo.block_of(Ppn(p)).idx()] += 1;
        }
        for b in (0..self.geo.blocks).map(BlockId) {
            if self.space.pool.valid(b) != valid[b.idx()] {
                return fail(format!(
                    "{b}: pool counts {} valid pages, the map {}",
                    self.space.pool.valid(b),
                    valid[b.idx()]
                ));
            }
        }
        Ok(())
    }

    /// Invalid counters equal written minus valid pages; for data blocks
    /// they also equal the bitmaps (tree entries and cache), which mark
    /// exactly the written pages no extent maps.
    fn check_blocks(&self, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("mu", r));
        for b in (0..self.geo.blocks).map(BlockId) {
            let written = dev.array.written_pages(b);
            let state = self.space.pool.state(b);
            if state == BlockState::Free {
                if written != 0 || self.space.invalid[b.idx()] != 0 {
                    return fail(format!("{b} is free but written or counted invalid"));
                }
                continue;
            }
            let invalid = self.space.invalid[b.idx()] as u32;
            if invalid != written - self.space.pool.valid(b) {
                return fail(format!(
                    "{b}: invalid counter {invalid}, but {written} written and {} valid",
                    self.space.pool.valid(b)
                ));
            }
            if written == 0 || dev.array.oob_lpn(self.geo.ppn(b, 0)) == Some(self.tree.tag()) {
                continue;
            }
            let mut bits = vec![0u32; self.subs as usize];
            for s in 0..self.subs {
                bits[s as usize] = self.tree.get(BITMAP_KEYS + b.0 * self.subs + s).unwrap_or(0);
            }
            for &(s, n) in self.bitmaps.runs(b.0) {
                for i in s..s + n {
                    bits[(i / SUB_BLOCK) as usize] |= 1 << (i % SUB_BLOCK);
                }
            }
            let marked: u32 = bits.iter().map(|v| v.count_ones()).sum();
            if marked != invalid {
                return fail(format!("{b}: invalid counter {invalid}, bitmaps mark {marked}"));
            }
            for i in 0..written {
                let ppn = self.geo.ppn(b, i);
                let live = dev.array.oob_lpn(ppn).is_some_and(|l| self.mapped(l.0) == Some(ppn));
                let marked = bits[(i / SUB_BLOCK) as usize] & (1 << (i % SUB_BLOCK)) != 0;
                if live == marked {
                    return fail(format!("{ppn}: live {live} but marked invalid {marked}"));
                }
            }
        }
        for b in self.parts.update_blocks() {
            if self.space.pool.state(b) != BlockState::Active {
                return fail(format!("update block {b} is not active"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
