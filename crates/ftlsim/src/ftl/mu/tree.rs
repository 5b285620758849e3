//! The μ-Tree (Kang, Jung, Kang and Kim, "μ-Tree: an ordered index structure
//! for NAND flash memory", EMSOFT 2007) as μ-FTL stores its map in it: a
//! B⁺-tree on flash whose update writes the whole path from a leaf to the
//! root into one new page (the leaf takes half the page, its parent a
//! quarter, and so on, so a level-`i` node holds `page / 2^(i+1) / 8`
//! entries of 8 B).
//!
//! Entries are `u32` keys with a `u64` value (μ-FTL's extents and bitmap
//! entries, see [`super`]). Each level is an ordered map from a node's low
//! key to the node; a node covers the keys from its own up to the next
//! node's and counts its members (entries at the leaves, child nodes above).
//! A node over capacity splits at its median member; an emptied node is
//! absorbed by a sibling; the root level is added and dropped as needed.
//! Simplification: under-full nodes are not rebalanced.
//!
//! Flash costs are real device operations under [`Cause::Mapping`]:
//!
//! - a lookup visits one node per level, root first; a node is free when it
//!   is dirty (in the write cache) or was never written, a hit when its page
//!   is in the page-granular LRU read cache, and otherwise a page read;
//! - a change dirties the leaf whose path it touches; the write cache holds
//!   `write_pages` dirty leaves, LRU, and beyond that the oldest dirty leaf's
//!   path is programmed into one new page of the tree's own update block;
//!   a page stays valid while some node's current version lives in it;
//! - GC relocates a tree page's live nodes with it.
//!
//! Flash traffic is also counted by who caused it, for the paper's overhead
//! split: the data map (extent keys) or the bitmap cache (bitmap keys, from
//! `bitmap_keys` on); a path is charged by its leaf's keys.

use super::lru::Lru;
use super::space::Space;
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::nand::Payload;
use crate::units::{BlockId, Lpn, Ppn, SimTime};
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::ops::RangeBounds;

const NONE: u32 = u32::MAX;
/// Bytes of one entry: 4 B key, 4 B value (Fig. 3's 25-bit PPN + 7-bit length).
pub const ENTRY_BYTES: u32 = 8;

#[derive(Clone, Copy, Debug)]
struct Node {
    count: u32,
    /// Flash page of the node's current version, or [`NONE`].
    page: u32,
}

/// Tree traffic and cache counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Page reads and programs: `[0]` for extents, `[1]` for bitmaps.
    pub reads: [u64; 2],
    pub programs: [u64; 2],
    /// Node visits of lookups, and those served from RAM (read or write cache).
    pub visits: u64,
    pub visit_hits: u64,
    /// Pages moved by GC.
    pub relocated: u64,
}

pub struct MuTree {
    entries: BTreeMap<u32, u64>,
    /// `levels[0]` are the leaves, the last level the root.
    levels: Vec<BTreeMap<u32, Node>>,
    page_size: u32,
    /// Tree pages on flash: the nodes (level, key) whose current version each holds.
    pages: BTreeMap<u32, Vec<(u8, u32)>>,
    read_cache: Lru,
    read_pages: usize,
    dirty: Lru,
    write_pages: usize,
    update: u32,
    /// Pages whose last node moved out, to be invalidated.
    dead: Vec<u32>,
    /// OOB LPN of tree pages (beyond the logical space).
    tag: Lpn,
    /// Keys from here on are the bitmap cache's (traffic counted as its).
    bitmap_keys: u32,
    pub stats: TreeStats,
}

impl MuTree {
    pub fn new(page_size: u32, read_pages: u32, write_pages: u32, tag: Lpn, bitmap_keys: u32) -> MuTree {
        let mut root = BTreeMap::new();
        root.insert(0, Node { count: 0, page: NONE });
        MuTree {
            entries: BTreeMap::new(),
            levels: vec![root],
            page_size,
            pages: BTreeMap::new(),
            read_cache: Lru::default(),
            read_pages: read_pages as usize,
            dirty: Lru::default(),
            write_pages: write_pages.max(1) as usize,
            update: NONE,
            dead: Vec::new(),
            tag,
            bitmap_keys,
            stats: TreeStats::default(),
        }
    }

    /// Members a node of `level` holds (at least 2, so a split makes progress).
    fn cause(&self, key: u32) -> usize {
        (key >= self.bitmap_keys) as usize
    }

    pub fn tag(&self) -> Lpn {
        self.tag
    }

    /// Live tree pages.
    pub fn live_page_list(&self) -> impl Iterator<Item = u32> + '_ {
        self.pages.keys().copied()
    }

    pub fn capacity(&self, level: usize) -> u32 {
        (self.page_size >> (level + 1)).checked_div(ENTRY_BYTES).unwrap_or(0).max(2)
    }

    /// Dirty leaves in the write cache.
    pub fn dirty_leaves(&self) -> usize {
        self.dirty.len()
    }

    pub fn height(&self) -> u32 {
        self.levels.len() as u32
    }

    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    pub fn count_in(&self, keys: impl RangeBounds<u32>) -> usize {
        self.entries.range(keys).count()
    }

    pub fn get(&self, key: u32) -> Option<u64> {
        self.entries.get(&key).copied()
    }

    /// The entry with the greatest key `<= key`.
    pub fn floor(&self, key: u32) -> Option<(u32, u64)> {
        self.entries.range(..=key).next_back().map(|(&k, &v)| (k, v))
    }

    pub fn range(&self, keys: impl RangeBounds<u32>) -> impl DoubleEndedIterator<Item = (u32, u64)> + '_ {
        self.entries.range(keys).map(|(&k, &v)| (k, v))
    }

    fn node_key(&self, level: usize, key: u32) -> u32 {
        *self.levels[level].range(..=key).next_back().expect("every level has a node at key 0").0
    }

    fn node_mut(&mut self, level: usize, key: u32) -> &mut Node {
        let k = self.node_key(level, key);
        self.levels[level].get_mut(&k).expect("node exists")
    }

    fn next_key(&self, level: usize, key: u32) -> Option<u32> {
        self.levels[level].range((Excluded(key), Unbounded)).next().map(|(&k, _)| k)
    }

    /// Visits the path to `key`, paying for nodes neither cached nor dirty;
    /// returns when the leaf is known.
    pub fn lookup(&mut self, dev: &mut Device, key: u32, mut t: SimTime) -> Result<SimTime> {
        for level in (0..self.levels.len()).rev() {
            let k = self.node_key(level, key);
            let page = self.levels[level][&k].page;
            self.stats.visits += 1;
            if (level == 0 && self.dirty.contains(k)) || page == NONE || self.read_cache.hit(page) {
                self.stats.visit_hits += 1;
                continue;
            }
            t = dev.read(Ppn(page), t, Cause::Mapping)?;
            self.stats.reads[self.cause(key)] += 1;
            self.read_cache.touch(page);
            self.read_cache.trim_to(self.read_pages);
        }
        Ok(t)
    }

    fn touch_leaf(&mut self, key: u32) {
        let leaf = self.node_key(0, key);
        self.dirty.touch(leaf);
    }

    /// Inserts or replaces an entry (the caller has looked it up).
    pub fn insert(&mut self, key: u32, value: u64) {
        if self.entries.insert(key, value).is_none() {
            self.grow(0, key);
        }
        self.touch_leaf(key);
    }

    pub fn remove(&mut self, key: u32) -> Option<u64> {
        let v = self.entries.remove(&key)?;
        self.touch_leaf(key);
        self.shrink(0, key);
        Some(v)
    }

    /// The keys of the members of a node of `level` covering `lo..hi`.
    fn members(&self, level: usize, lo: u32, hi: Option<u32>) -> Box<dyn Iterator<Item = u32> + '_> {
        let keys = (std::ops::Bound::Included(lo), hi.map_or(Unbounded, Excluded));
        if level == 0 {
            Box::new(self.entries.range(keys).map(|(&k, _)| k))
        } else {
            Box::new(self.levels[level - 1].range(keys).map(|(&k, _)| k))
        }
    }

    /// The node of `level` holding `key` gained a member: split it when full.
    fn grow(&mut self, level: usize, key: u32) {
        let lo = self.node_key(level, key);
        let count = {
            let n = self.node_mut(level, key);
            n.count += 1;
            n.count
        };
        if count <= self.capacity(level) {
            return;
        }
        let hi = self.next_key(level, lo);
        let half = count / 2;
        let mid = self.members(level, lo, hi).nth(half as usize).expect("a full node has its members");
        self.levels[level].get_mut(&lo).expect("node exists").count = half;
        self.levels[level].insert(mid, Node { count: count - half, page: NONE });
        // The new node reaches flash with the path of a leaf under it.
        self.touch_leaf(mid);
        if level + 1 == self.levels.len() {
            let mut root = BTreeMap::new();
            root.insert(0, Node { count: 2, page: NONE });
            self.levels.push(root);
        } else {
            self.grow(level + 1, mid);
        }
    }

    /// The node of `level` holding `key` lost a member: an emptied node is
    /// absorbed by a sibling under the same parent.
    fn shrink(&mut self, level: usize, key: u32) {
        let lo = self.node_key(level, key);
        let n = self.node_mut(level, key);
        n.count -= 1;
        if n.count > 0 || level + 1 == self.levels.len() {
            return;
        }
        let parent_lo = self.node_key(level + 1, lo);
        let parent_hi = self.next_key(level + 1, parent_lo);
        let gone = match self.next_key(level, lo).filter(|&s| parent_hi.is_none_or(|h| s < h)) {
            // The successor's members move into this node's range.
            Some(s) => {
                let succ = self.levels[level][&s];
                self.levels[level].get_mut(&lo).expect("node exists").count = succ.count;
                s
            }
            None if lo != parent_lo => lo,
            None => return, // the parent's only child stays, empty
        };
        let page = self.levels[level].remove(&gone).expect("node exists").page;
        self.forget(level, gone, page);
        if level == 0 {
            self.dirty.remove(gone);
        }
        self.touch_leaf(lo);
        self.shrink(level + 1, gone);
        let top = self.levels.len() - 1;
        if top > 0 && self.levels[top].len() == 1 && self.levels[top][&0].count == 1 {
            let root = self.levels.pop().expect("a top level");
            self.forget(top, 0, root[&0].page);
        }
    }

    /// Node (level, key) no longer lives in `page`.
    fn forget(&mut self, level: usize, key: u32, page: u32) {
        if page == NONE {
            return;
        }
        let nodes = self.pages.get_mut(&page).expect("a node's page is listed");
        nodes.retain(|&n| n != (level as u8, key));
        if nodes.is_empty() {
            self.dead.push(page);
        }
    }

    /// Dirty leaves beyond the write cache's capacity (`all`: any dirty leaf).
    pub fn must_write_back(&self, all: bool) -> bool {
        self.dirty.len() > if all { 0 } else { self.write_pages }
    }

    /// Writes back the least recently dirtied path.
    pub fn write_back_oldest(&mut self, space: &mut Space, dev: &mut Device, t: SimTime) -> Result<()> {
        match self.dirty.oldest() {
            Some(leaf) => self.write_path(space, dev, leaf, t),
            None => Ok(()),
        }
    }

    /// A page of the tree's update block.
    fn alloc(&mut self, space: &mut Space, dev: &Device, now: SimTime) -> Result<Ppn> {
        let ppb = space.geo.pages_per_block;
        if self.update != NONE {
            let b = BlockId(self.update);
            let used = dev.array.written_pages(b);
            if used < ppb {
                return Ok(space.geo.ppn(b, used));
            }
            space.pool.close(b, now);
            self.update = NONE;
        }
        let b = space.take_block("μ-Tree")?;
        self.update = b.0;
        Ok(space.geo.ppn(b, 0))
    }

    /// Programs the path from `leaf` to the root into one new page.
    fn write_path(&mut self, space: &mut Space, dev: &mut Device, leaf: u32, t: SimTime) -> Result<()> {
        let ppn = self.alloc(space, dev, t)?;
        dev.program(ppn, self.tag, t, Cause::Mapping, Payload::None)?;
        self.stats.programs[self.cause(leaf)] += 1;
        space.pool.add_valid(space.geo.block_of(ppn), t);
        let mut nodes = Vec::with_capacity(self.levels.len());
        for level in 0..self.levels.len() {
            let k = self.node_key(level, leaf);
            let old = std::mem::replace(&mut self.node_mut(level, leaf).page, ppn.0);
            self.forget(level, k, old);
            nodes.push((level as u8, k));
        }
        self.pages.insert(ppn.0, nodes);
        self.dirty.remove(leaf);
        self.read_cache.touch(ppn.0);
        self.read_cache.trim_to(self.read_pages);
        Ok(())
    }

    /// Pages left without a live node become invalid; a closed tree block
    /// left wholly invalid is erased at once.
    pub fn release_dead(&mut self, space: &mut Space, dev: &mut Device, t: SimTime) -> Result<()> {
        while let Some(p) = self.dead.pop() {
            if self.pages.get(&p).is_none_or(|n| !n.is_empty()) {
                continue; // rewritten into since, or already gone
            }
            self.pages.remove(&p);
            self.read_cache.remove(p);
            if space.invalidate(Ppn(p), 1, t) {
                let b = space.geo.block_of(Ppn(p));
                dev.erase(b, t, Cause::Mapping)?;
                space.release(b)?;
            }
        }
        Ok(())
    }

    /// Live tree pages of block `b`.
    pub fn live_pages(&self, space: &Space, b: BlockId) -> Vec<u32> {
        let first = space.geo.ppn(b, 0).0;
        self.pages
            .range(first..first + space.geo.pages_per_block)
            .filter(|(_, n)| !n.is_empty())
            .map(|(&p, _)| p)
            .collect()
    }

    /// GC: copies live tree page `src` to a new tree page; returns when the
    /// source has been read.
    pub fn relocate(&mut self, space: &mut Space, dev: &mut Device, src: u32, t: SimTime) -> Result<SimTime> {
        let dst = self.alloc(space, dev, t)?;
        let read = dev.copy_run(&[src], dst, t, |_| Cause::Mapping)?;
        self.stats.relocated += 1;
        let nodes = self.pages.remove(&src).expect("a live tree page");
        for &(level, key) in &nodes {
            self.levels[level as usize].get_mut(&key).expect("node exists").page = dst.0;
        }
        self.pages.insert(dst.0, nodes);
        if self.read_cache.remove(src) {
            self.read_cache.touch(dst.0);
        }
        space.pool.transfer_valid(space.geo.block_of(Ppn(src)), space.geo.block_of(dst), 1, t);
        Ok(read)
    }

    /// The tree's own invariants: member counts, capacities, node pages.
    pub fn check(&self, space: &Space, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("mu", format!("μ-Tree: {r}")));
        for (level, nodes) in self.levels.iter().enumerate() {
            if !nodes.contains_key(&0) {
                return fail(format!("level {level} has no node at key 0"));
            }
            let keys: Vec<u32> = nodes.keys().copied().collect();
            for (i, (&lo, n)) in nodes.iter().enumerate() {
                let hi = keys.get(i + 1).copied();
                let members = self.members(level, lo, hi).count();
                if members as u32 != n.count || n.count > self.capacity(level) {
                    return fail(format!(
                        "node {lo} of level {level} counts {} members, holds {members}, capacity {}",
                        n.count,
                        self.capacity(level)
                    ));
                }
                if n.page != NONE && !self.pages.get(&n.page).is_some_and(|v| v.contains(&(level as u8, lo))) {
                    return fail(format!("node {lo} of level {level} is in page {} which does not list it", n.page));
                }
            }
        }
        if self.levels.len() > 1 && self.levels.last().is_some_and(|r| r.len() != 1) {
            return fail("the root level has more than one node".into());
        }
        for (&p, nodes) in &self.pages {
            if nodes.is_empty() || dev.array.oob_lpn(Ppn(p)) != Some(self.tag) {
                return fail(format!("page {p} is listed live but holds no node or no tree data"));
            }
        }
        if self.dirty.len() > self.write_pages || self.read_cache.len() > self.read_pages {
            return fail("a cache holds more pages than its capacity".into());
        }
        if let Some(p) = self.read_cache.keys().find(|p| !self.pages.contains_key(p)) {
            return fail(format!("read cache holds dead page {p}"));
        }
        if self.update != NONE && space.pool.state(BlockId(self.update)) != crate::ftl::pool::BlockState::Active {
            return fail("the tree's update block is not active".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_grow_a_root_and_removals_shrink_it() {
        // 512 B pages: leaves of 32 entries, parents of 16.
        let mut t = MuTree::new(512, 4, 4, Lpn(1 << 30), 1 << 31);
        for k in 0..100 {
            t.insert(k * 3, k as u64);
        }
        assert_eq!(t.height(), 2);
        assert!(t.levels[0].len() >= 4, "{} leaves", t.levels[0].len());
        for k in 0..100 {
            assert_eq!(t.remove(k * 3), Some(k as u64));
        }
        assert_eq!(t.height(), 1);
        assert_eq!(t.entry_count(), 0);
    }
}
