//! The μ-Tree (Kang, Jung, Kang and Kim, "μ-Tree: an ordered index structure
//! for NAND flash memory", EMSOFT 2007) as μ-FTL stores its map in it: a
//! B⁺-tree on flash whose update writes the whole path from a leaf to the
//! root into one new page (the leaf takes half the page, its parent a
//! quarter, and so on, so a level-`i` node holds `page / 2^(i+1) / 8`
//! entries of 8 B).
//!
//! Entries are `u32` keys with a `u32` value (μ-FTL's extents and bitmap
//! entries, see [`super`]). Each node covers the keys from its low key up to
//! its right neighbour's on the same level; leaves hold their entries,
//! inner nodes their children, both as sorted arrays. A node over capacity
//! splits at its median member. A node left under half full borrows a
//! member from a sibling under the same parent, or merges with one, as in a
//! B⁺-tree, and the root level is added and dropped as needed; the nodes
//! this changes reach flash with the paths of leaves under them.
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
//! `bitmap_keys` on); a path is charged by its leaf's low key.
//!
//! In memory (none of this is modelled controller RAM, which is the caches'
//! page budget): nodes live in an arena addressed by index and recycled
//! through a free list, each level threaded left to right; tree pages are
//! slots of the blocks the tree writes, each listing the path written into
//! it and counting the nodes whose current version it still holds; both
//! caches are intrusive LRU lists over those indices. A [`LeafIndex`]
//! finds the leaf covering a key without descending (a lookup still visits
//! and pays for the whole path, which the leaf's parent links give), and a
//! search in a leaf looks first where an even spread of its keys would put
//! the key ([`search`]): both spare the cache misses of bisecting.
//! A steady-state operation allocates nothing.

use super::leaf_index::{self, Found, LeafIndex};
use super::lru::DenseLru;
use super::space::Space;
use crate::engine::{AllCopies, Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, Ppn, SimTime};
use serde::{Deserialize, Serialize};
use std::cell::Cell;

const NIL: u32 = u32::MAX;
/// Tree pages GC moves between prefetching a page's leaf pointer and moving it.
const MOVE_AHEAD: usize = 8;
/// Bytes of one entry: 4 B key, 4 B value (Fig. 3's 25-bit PPN + 7-bit length).
pub const ENTRY_BYTES: u32 = 8;

/// One node. `keys` are a leaf's entry keys (values in `vals`) or an inner
/// node's children's low keys (children in `kids`); `keys[0]` of an inner
/// node is its own low key.
#[derive(Default, Serialize, Deserialize)]
struct Node {
    level: u8,
    /// The lowest key the node covers (borrowing from its left sibling
    /// lowers it; from the right, raises the right's).
    lo: u32,
    parent: u32,
    /// Neighbours on the same level, in key order.
    prev: u32,
    next: u32,
    keys: Vec<u32>,
    vals: Vec<u32>,
    kids: Vec<u32>,
}

/// Tree traffic and cache counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// The pages of the blocks the tree writes: per page, whether it is a live
/// (valid) tree page, the nodes written into it and how many of those
/// still have their current version there.
#[derive(Serialize, Deserialize)]
struct TreePages {
    geo: Geometry,
    /// Per device block: its index among tree blocks, or [`NIL`].
    index_of: Vec<u32>,
    /// Per tree-block index: the device block, or [`NIL`] when unused.
    block: Vec<u32>,
    free: Vec<u32>,
    /// Per slot (tree-block index × pages per block + page).
    listed: Vec<bool>,
    /// The path written into the page. A node that has moved on since stays
    /// listed (its page says where it is now): taking it out would read
    /// the list, a cache miss, at every path write.
    nodes: Vec<Vec<u32>>,
    /// Nodes whose current version is in the page.
    live: Vec<u8>,
}

impl TreePages {
    fn new(geo: &Geometry) -> TreePages {
        TreePages {
            geo: geo.clone(),
            index_of: vec![NIL; geo.blocks as usize],
            block: Vec::new(),
            free: Vec::new(),
            listed: Vec::new(),
            nodes: Vec::new(),
            live: Vec::new(),
        }
    }

    /// The tree starts writing block `b`.
    fn open(&mut self, b: BlockId) {
        let ppb = self.geo.pages_per_block as usize;
        let i = self.free.pop().unwrap_or_else(|| {
            self.block.push(NIL);
            self.listed.resize(self.block.len() * ppb, false);
            self.nodes.resize_with(self.block.len() * ppb, Vec::new);
            self.live.resize(self.block.len() * ppb, 0);
            self.block.len() as u32 - 1
        });
        self.block[i as usize] = b.0;
        self.index_of[b.idx()] = i;
    }

    /// Block `b`, erased, is the tree's no more.
    fn close(&mut self, b: BlockId) {
        let i = std::mem::replace(&mut self.index_of[b.idx()], NIL);
        debug_assert!(i != NIL, "{b} is not a tree block");
        self.block[i as usize] = NIL;
        self.free.push(i);
    }

    /// The slot of a page of a tree block.
    #[inline]
    fn slot(&self, ppn: u32) -> u32 {
        let slot = self.slot_of(ppn);
        debug_assert!(slot.is_some(), "page {ppn} is not in a tree block");
        slot.unwrap_or(NIL)
    }

    /// The slot of `ppn`, or `None` when it is not in a tree block (or is
    /// [`NIL`]: a hint that may be stale).
    #[inline]
    fn slot_of(&self, ppn: u32) -> Option<u32> {
        let i = *self.index_of.get(self.geo.block_of(Ppn(ppn)).idx())?;
        (i != NIL).then(|| i * self.geo.pages_per_block + self.geo.page_in_block(Ppn(ppn)))
    }

    fn ppn(&self, slot: u32) -> u32 {
        let ppb = self.geo.pages_per_block;
        self.geo.ppn(BlockId(self.block[(slot / ppb) as usize]), slot % ppb).0
    }

    fn is_listed(&self, ppn: u32) -> bool {
        self.slot_of(ppn).is_some_and(|s| self.listed[s as usize])
    }

    /// Listed pages (live tree pages, and dead ones not yet released).
    fn listed(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.listed.len() as u32).filter(|&s| self.listed[s as usize]).map(|s| self.ppn(s))
    }
}

#[derive(Serialize, Deserialize)]
pub struct MuTree {
    nodes: Vec<Node>,
    /// Per node: the flash page of its current version, or [`NIL`]. Beside
    /// the nodes rather than in them: GC rewrites it for every node of
    /// every tree page it moves, and a dense array keeps those writes in cache.
    page: Vec<u32>,
    /// The leaf last found, with the keys it covers: most searches land
    /// where the last one did, so they skip the descent (and the look at
    /// the next leaf's low key, a cache miss, that checking its range
    /// would take). Used while the leaf index [holds](LeafIndex::holds) it.
    hint: Cell<Found>,
    /// Which leaf covers a key, without descending (see [`leaf_index`]).
    leaves: LeafIndex,
    free_nodes: Vec<u32>,
    root: u32,
    height: u32,
    /// Entries: `[0]` extents, `[1]` bitmap entries.
    counts: [u64; 2],
    page_size: u32,
    pages: TreePages,
    /// Tree-page slots.
    read_cache: DenseLru,
    read_pages: usize,
    /// Dirty leaves (node indices).
    dirty: DenseLru,
    write_pages: usize,
    update: u32,
    /// Pages whose last node moved out, to be invalidated.
    dead: Vec<u32>,
    /// A GC victim's live pages (kept to reuse its allocation).
    live: Vec<u32>,
    /// A lookup's path, leaf first (kept to reuse its allocation).
    #[serde(skip)]
    path: Vec<u32>,
    /// OOB LPN of tree pages (beyond the logical space).
    tag: Lpn,
    /// Keys from here on are the bitmap cache's (traffic counted as its).
    bitmap_keys: u32,
    pub stats: TreeStats,
}

/// An entry [`MuTree::replace`] can overwrite in place, with its
/// neighbours' keys and values.
pub struct Spot {
    leaf: u32,
    i: usize,
    pub before: (u32, u32),
    pub value: u32,
    pub after: (u32, u32),
}

/// Entries of the tree in key order from some key on.
pub struct Range<'a> {
    tree: &'a MuTree,
    leaf: u32,
    i: usize,
    end: u32,
}

impl Iterator for Range<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        while self.leaf != NIL {
            let n = &self.tree.nodes[self.leaf as usize];
            if let Some(&k) = n.keys.get(self.i) {
                if k >= self.end {
                    self.leaf = NIL;
                    return None;
                }
                self.i += 1;
                return Some((k, n.vals[self.i - 1]));
            }
            (self.leaf, self.i) = (n.next, 0);
        }
        None
    }
}

impl MuTree {
    pub fn new(geo: &Geometry, read_pages: u32, write_pages: u32, tag: Lpn, bitmap_keys: u32) -> MuTree {
        let mut t = MuTree {
            nodes: Vec::new(),
            page: Vec::new(),
            hint: Cell::new(Found::NONE),
            leaves: LeafIndex::new(0),
            free_nodes: Vec::new(),
            root: NIL,
            height: 1,
            counts: [0; 2],
            page_size: geo.page_size,
            pages: TreePages::new(geo),
            read_cache: DenseLru::new(),
            read_pages: read_pages as usize,
            dirty: DenseLru::new(),
            write_pages: write_pages.max(1) as usize,
            update: NIL,
            dead: Vec::new(),
            live: Vec::new(),
            path: Vec::new(),
            tag,
            bitmap_keys,
            stats: TreeStats::default(),
        };
        t.root = t.new_node(0, 0);
        t.leaves = LeafIndex::new(t.root);
        t
    }

    fn cause(&self, key: u32) -> usize {
        (key >= self.bitmap_keys) as usize
    }

    pub fn tag(&self) -> Lpn {
        self.tag
    }

    /// Members a node of `level` holds (at least 2, so a split makes progress).
    pub fn capacity(&self, level: usize) -> u32 {
        (self.page_size >> (level + 1)).checked_div(ENTRY_BYTES).unwrap_or(0).max(2)
    }

    /// Pages of the read and the write cache.
    pub fn cache_pages(&self) -> (usize, usize) {
        (self.read_pages, self.write_pages)
    }

    /// Dirty leaves in the write cache.
    pub fn dirty_leaves(&self) -> usize {
        self.dirty.len()
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// Extents (keys below `bitmap_keys`) and bitmap entries in the tree.
    pub fn entry_counts(&self) -> [u64; 2] {
        self.counts
    }

    /// Live tree pages.
    pub fn live_page_list(&self) -> impl Iterator<Item = u32> + '_ {
        self.pages.listed()
    }

    fn new_node(&mut self, level: u8, lo: u32) -> u32 {
        let fresh = Node { level, lo, parent: NIL, prev: NIL, next: NIL, ..Node::default() };
        match self.free_nodes.pop() {
            Some(i) => {
                self.page[i as usize] = NIL;
                let n = &mut self.nodes[i as usize];
                // Keep the arrays' capacity: recycled nodes allocate nothing.
                let (mut keys, mut vals, mut kids) =
                    (std::mem::take(&mut n.keys), std::mem::take(&mut n.vals), std::mem::take(&mut n.kids));
                keys.clear();
                vals.clear();
                kids.clear();
                *n = Node { keys, vals, kids, ..fresh };
                i
            }
            None => {
                self.nodes.push(fresh);
                self.page.push(NIL);
                self.nodes.len() as u32 - 1
            }
        }
    }

    /// The leaf covering `key`.
    #[inline]
    fn leaf_of(&self, key: u32) -> u32 {
        self.found(key).leaf
    }

    /// The leaf covering `key` and its range: the hint's when it covers the
    /// key, else found in the leaf index (and made the hint).
    #[inline]
    fn found(&self, key: u32) -> Found {
        let h = self.hint.get();
        if self.leaves.holds(&h) && h.lo <= key && (key as u64) < h.hi {
            debug_assert!({
                let node = &self.nodes[h.leaf as usize];
                let hi =
                    if node.next == NIL { leaf_index::UNBOUNDED } else { self.nodes[node.next as usize].lo as u64 };
                node.level == 0 && node.lo == h.lo && hi == h.hi
            });
            return h;
        }
        let f = self.leaves.find(key);
        self.hint.set(f);
        f
    }

    /// Leaf `f` (from [`prefetch_leaf`](Self::prefetch_leaf)) is where the
    /// next operation's key is: the hint, used if no leaf has changed since
    /// (GC looks up each copy's leaf twice, to prefetch it and to change it).
    pub fn reuse(&self, f: Found) {
        self.hint.set(f);
    }

    /// Starts loading the node of the leaf covering `key` into the CPU
    /// cache, for an update soon; returns the leaf and its range, whose
    /// entry [`prefetch_entry`](Self::prefetch_entry) loads once the node
    /// has arrived (a random key's leaf is a cache miss, and so is each
    /// step of a search in it). Changes nothing.
    pub fn prefetch_leaf(&self, key: u32) -> Found {
        let f = self.leaves.find(key);
        self.prefetch_node(f.leaf);
        f
    }

    /// Starts loading leaf `n`'s node and what `lookup` and `write_path`
    /// ask of it besides: its page pointer and its write-cache links.
    fn prefetch_node(&self, n: u32) {
        crate::mem::prefetch_all(&self.nodes, n as usize);
        crate::mem::prefetch(&self.page, n as usize);
        self.dirty.prefetch(n);
    }

    /// Starts loading, in leaf `f` (from [`prefetch_leaf`](Self::prefetch_leaf)),
    /// the keys and values around where [`search`] looks for `key` first,
    /// and the read-cache entry of the leaf's page, which `lookup` asks
    /// about. The tree may have changed since, which costs only useless
    /// prefetches.
    pub fn prefetch_entry(&self, f: Found, key: u32) {
        let Some(node) = self.nodes.get(f.leaf as usize).filter(|node| node.level == 0) else { return };
        let at = window(node.keys.len(), key, f.lo, f.hi);
        for i in [at, at + WINDOW - 1] {
            crate::mem::prefetch(&node.keys, i);
        }
        for i in (at..at + WINDOW).step_by(64 / size_of::<u32>()).chain([at + WINDOW - 1]) {
            crate::mem::prefetch(&node.vals, i);
        }
        if let Some(slot) = self.page.get(f.leaf as usize).and_then(|&p| self.pages.slot_of(p)) {
            self.read_cache.prefetch(slot);
        }
    }

    /// Where `key` is, or would go, among the keys of `leaf` (as
    /// [`slice::binary_search`]); `leaf` covers the [hint](Self::hint)'s range.
    #[inline]
    fn search_leaf(&self, leaf: u32, key: u32) -> std::result::Result<usize, usize> {
        let h = self.hint.get();
        debug_assert!(h.leaf == leaf, "the hint is the leaf's");
        search(&self.nodes[leaf as usize].keys, key, h.lo, h.hi)
    }

    /// The leftmost leaf under node `n`.
    fn first_leaf(&self, mut n: u32) -> u32 {
        while self.nodes[n as usize].level > 0 {
            n = self.nodes[n as usize].kids[0];
        }
        n
    }

    pub fn get(&self, key: u32) -> Option<u32> {
        let leaf = self.leaf_of(key);
        self.search_leaf(leaf, key).ok().map(|i| self.nodes[leaf as usize].vals[i])
    }

    /// The entry with the greatest key `<= key`.
    pub fn floor(&self, key: u32) -> Option<(u32, u32)> {
        let mut leaf = self.leaf_of(key);
        let mut i = self.nodes[leaf as usize].keys.partition_point(|&k| k <= key);
        // Leaves before may be empty (an only child stays, empty).
        while i == 0 {
            leaf = self.nodes[leaf as usize].prev;
            if leaf == NIL {
                return None;
            }
            i = self.nodes[leaf as usize].keys.len();
        }
        let n = &self.nodes[leaf as usize];
        Some((n.keys[i - 1], n.vals[i - 1]))
    }

    /// The entry with the greatest key `< key`.
    pub fn before(&self, key: u32) -> Option<(u32, u32)> {
        key.checked_sub(1).and_then(|k| self.floor(k))
    }

    /// Entries with keys in `lo..end`, in key order.
    pub fn range(&self, lo: u32, end: u32) -> Range<'_> {
        let leaf = self.leaf_of(lo);
        let i = self.nodes[leaf as usize].keys.partition_point(|&k| k < lo);
        Range { tree: self, leaf, i, end }
    }

    /// Every entry, in key order.
    pub fn entries(&self) -> Range<'_> {
        Range { tree: self, leaf: self.first_leaf(self.root), i: 0, end: u32::MAX }
    }

    /// Visits the path to `key`, paying for nodes neither cached nor dirty;
    /// returns when the leaf is known.
    pub fn lookup(&mut self, dev: &mut Device, key: u32, mut t: SimTime) -> Result<SimTime> {
        let f = self.found(key);
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut n = f.leaf;
        while n != NIL {
            path.push(n);
            n = self.nodes[n as usize].parent;
        }
        // The caller changes the entry next (its node has arrived): start
        // loading it while the path is visited. Done already where the
        // caller prefetched ahead, a few instructions then.
        self.prefetch_entry(f, key);
        // Root first, as a descent would visit them.
        let visited = path.iter().rev().try_for_each(|&n| {
            let (level, page) = (self.nodes[n as usize].level, self.page[n as usize]);
            self.stats.visits += 1;
            if (level == 0 && self.dirty.contains(n)) || page == NIL || self.read_cache.hit(self.pages.slot(page)) {
                self.stats.visit_hits += 1;
            } else {
                t = dev.read(Ppn(page), t, Cause::Mapping)?;
                self.stats.reads[self.cause(key)] += 1;
                self.read_cache.touch(self.pages.slot(page));
                self.read_cache.trim_to(self.read_pages);
            }
            Ok(())
        });
        self.path = path;
        visited?;
        Ok(t)
    }

    /// Inserts or replaces an entry (the caller has looked it up).
    pub fn insert(&mut self, key: u32, value: u32) {
        let leaf = self.leaf_of(key);
        let at = self.search_leaf(leaf, key);
        let n = &mut self.nodes[leaf as usize];
        match at {
            Ok(i) => n.vals[i] = value,
            Err(i) => {
                n.keys.insert(i, key);
                n.vals.insert(i, value);
                self.counts[self.cause(key)] += 1;
                self.grow(leaf);
            }
        }
        let leaf = self.leaf_of(key);
        self.dirty.touch(leaf);
    }

    /// ORs `bits` into entry `key`'s value, or inserts it as `bits`: what
    /// [`insert`](Self::insert) of `get(key).unwrap_or(0) | bits` does, with
    /// one search of the leaf.
    pub fn insert_or(&mut self, key: u32, bits: u32) {
        let leaf = self.leaf_of(key);
        match self.search_leaf(leaf, key) {
            Ok(i) => {
                self.nodes[leaf as usize].vals[i] |= bits;
                self.dirty.touch(leaf);
            }
            Err(_) => self.insert(key, bits),
        }
    }

    /// Entry `key` where [`replace`](Self::replace) can overwrite it: found
    /// with its neighbours in its leaf, and its removal would not rebalance.
    /// `None` when it is not in the tree, is its leaf's first or last
    /// entry, or sits in a leaf at its minimum.
    pub fn spot(&self, key: u32) -> Option<Spot> {
        let leaf = self.leaf_of(key);
        let i = self.search_leaf(leaf, key).ok()?;
        let n = &self.nodes[leaf as usize];
        if i == 0 || i + 1 == n.keys.len() || (leaf != self.root && self.members(leaf) <= self.min_members(0)) {
            return None;
        }
        Some(Spot {
            leaf,
            i,
            before: (n.keys[i - 1], n.vals[i - 1]),
            value: n.vals[i],
            after: (n.keys[i + 1], n.vals[i + 1]),
        })
    }

    /// Overwrites the entry at `spot` (from [`spot`](Self::spot), the tree
    /// unchanged since) in one step, leaving the tree, its counts and its
    /// write cache exactly as `remove` then `insert` of the key would: the
    /// leaf stays above its minimum, so neither rebalances, and both dirty
    /// the same leaf.
    pub fn replace(&mut self, spot: &Spot, value: u32) {
        self.nodes[spot.leaf as usize].vals[spot.i] = value;
        self.dirty.touch(spot.leaf);
    }

    pub fn remove(&mut self, key: u32) -> Option<u32> {
        let leaf = self.leaf_of(key);
        let i = self.search_leaf(leaf, key).ok()?;
        let n = &mut self.nodes[leaf as usize];
        n.keys.remove(i);
        let v = n.vals.remove(i);
        self.counts[self.cause(key)] -= 1;
        self.dirty.touch(leaf);
        self.rebalance(leaf);
        Some(v)
    }

    fn members(&self, n: u32) -> u32 {
        self.nodes[n as usize].keys.len() as u32
    }

    /// Node `n` gained a member: split it when full.
    fn grow(&mut self, n: u32) {
        let level = self.nodes[n as usize].level;
        let count = self.members(n);
        if count <= self.capacity(level as usize) {
            return;
        }
        let half = count as usize / 2;
        let mid = self.nodes[n as usize].keys[half];
        let m = self.new_node(level, mid);
        let (mut keys, mut vals, mut kids) = {
            let mn = &mut self.nodes[m as usize];
            (std::mem::take(&mut mn.keys), std::mem::take(&mut mn.vals), std::mem::take(&mut mn.kids))
        };
        let nn = &mut self.nodes[n as usize];
        keys.extend(nn.keys.drain(half..));
        if level == 0 {
            vals.extend(nn.vals.drain(half..));
        } else {
            kids.extend(nn.kids.drain(half..));
        }
        let after = std::mem::replace(&mut nn.next, m);
        let parent = nn.parent;
        for &k in &kids {
            self.nodes[k as usize].parent = m;
        }
        if after != NIL {
            self.nodes[after as usize].prev = m;
        }
        let mn = &mut self.nodes[m as usize];
        (mn.keys, mn.vals, mn.kids, mn.prev, mn.next) = (keys, vals, kids, n, after);
        if level == 0 {
            self.leaves.insert(mid, m);
        }
        // The new node reaches flash with the path of a leaf under it.
        let leaf = self.first_leaf(m);
        self.dirty.touch(leaf);
        if n == self.root {
            let r = self.new_node(level + 1, 0);
            let rn = &mut self.nodes[r as usize];
            rn.keys.extend([0, mid]);
            rn.kids.extend([n, m]);
            self.nodes[n as usize].parent = r;
            self.nodes[m as usize].parent = r;
            self.root = r;
            self.height += 1;
        } else {
            self.nodes[m as usize].parent = parent;
            let p = &mut self.nodes[parent as usize];
            let at = p.keys.partition_point(|&k| k <= mid);
            p.keys.insert(at, mid);
            p.kids.insert(at, m);
            self.grow(parent);
        }
    }

    /// The fewest members a node of `level` keeps: half its capacity, as in
    /// a B⁺-tree. The root is exempt, and so is a node below a non-root
    /// level whose minimum is 1 (capacity 2 or 3; with 4 KiB pages, level 7
    /// and up): there a node may be an only child.
    pub fn min_members(&self, level: usize) -> u32 {
        self.capacity(level) / 2
    }

    /// Node `n` lost a member: below half full it borrows one from a sibling
    /// under the same parent that can spare one, or else merges with a
    /// sibling, and the parent, a member short, is rebalanced in turn; a
    /// root left with one child gives way to it. A node that is its
    /// parent's only child (a level of capacity 2 or 3 allows it) has no
    /// sibling and stays as it is.
    fn rebalance(&mut self, n: u32) {
        if n == self.root {
            self.collapse_root();
            return;
        }
        let level = self.nodes[n as usize].level as usize;
        let min = self.min_members(level);
        if self.members(n) >= min {
            return;
        }
        let parent = self.nodes[n as usize].parent;
        let (left, right) = self.siblings(n);
        if right != NIL && self.members(right) > min {
            self.move_first(right, n);
        } else if left != NIL && self.members(left) > min {
            self.move_last(left, n);
        } else if right != NIL {
            self.merge(n, right);
            self.rebalance(parent);
        } else if left != NIL {
            self.merge(left, n);
            self.rebalance(parent);
        }
    }

    /// A root inner node with one child: the child becomes the root.
    fn collapse_root(&mut self) {
        while self.height > 1 && self.members(self.root) == 1 {
            let root = self.root;
            let child = self.nodes[root as usize].kids[0];
            self.nodes[child as usize].parent = NIL;
            self.root = child;
            self.height -= 1;
            self.free_node(root);
        }
    }

    /// `n`'s neighbours under the same parent, or [`NIL`].
    fn siblings(&self, n: u32) -> (u32, u32) {
        let node = &self.nodes[n as usize];
        let under = |s: u32| if s != NIL && self.nodes[s as usize].parent == node.parent { s } else { NIL };
        (under(node.prev), under(node.next))
    }

    /// A node changed: it reaches flash with the path of a leaf under it.
    fn dirty_under(&mut self, n: u32) {
        let leaf = self.first_leaf(n);
        self.dirty.touch(leaf);
    }

    /// Moves the first member of `right` to the end of its left sibling
    /// `n`; `right`'s low key becomes its new first member's.
    fn move_first(&mut self, right: u32, n: u32) {
        let (to, from) = two(&mut self.nodes, n, right);
        to.keys.push(from.keys.remove(0));
        if from.level == 0 {
            to.vals.push(from.vals.remove(0));
        } else {
            to.kids.push(from.kids.remove(0));
        }
        let old_lo = std::mem::replace(&mut from.lo, from.keys[0]);
        let (new_lo, parent) = (from.lo, from.parent);
        if from.level == 0 {
            self.leaves.relabel(old_lo, new_lo);
        }
        if let Some(&k) = self.nodes[n as usize].kids.last() {
            self.nodes[k as usize].parent = n;
        }
        self.set_child_key(parent, old_lo, new_lo);
        self.dirty_under(n);
        self.dirty_under(right);
    }

    /// Moves the last member of `left` to the front of its right sibling
    /// `n`, whose low key becomes that member's.
    fn move_last(&mut self, left: u32, n: u32) {
        let (to, from) = two(&mut self.nodes, n, left);
        let key = from.keys.pop().expect("a sibling with members to spare");
        to.keys.insert(0, key);
        if from.level == 0 {
            to.vals.insert(0, from.vals.pop().expect("a value per key"));
        } else {
            to.kids.insert(0, from.kids.pop().expect("a child per key"));
        }
        let old_lo = std::mem::replace(&mut to.lo, key);
        let parent = to.parent;
        if to.level == 0 {
            self.leaves.relabel(old_lo, key);
        }
        if let Some(&k) = self.nodes[n as usize].kids.first() {
            self.nodes[k as usize].parent = n;
        }
        self.set_child_key(parent, old_lo, key);
        self.dirty_under(n);
        self.dirty_under(left);
    }

    /// A child of `parent` now starts at `new` instead of `old`.
    fn set_child_key(&mut self, parent: u32, old: u32, new: u32) {
        let p = &mut self.nodes[parent as usize];
        let at = p.keys.binary_search(&old).expect("a child is listed in its parent");
        p.keys[at] = new;
    }

    /// Moves every member of `right` into its left sibling `left`, which
    /// takes over its range; `right` leaves the tree.
    fn merge(&mut self, left: u32, right: u32) {
        let (to, from) = two(&mut self.nodes, left, right);
        if from.level == 0 {
            self.leaves.remove(from.lo);
        }
        to.keys.append(&mut from.keys);
        to.vals.append(&mut from.vals);
        let first_kid = to.kids.len();
        to.kids.append(&mut from.kids);
        for i in first_kid..self.nodes[left as usize].kids.len() {
            let k = self.nodes[left as usize].kids[i];
            self.nodes[k as usize].parent = left;
        }
        self.unlink(right);
        self.dirty.remove(right);
        self.free_node(right);
        self.dirty_under(left);
    }

    /// Takes node `n` out of its level and its parent.
    fn unlink(&mut self, n: u32) {
        let Node { prev, next, parent, lo, .. } = self.nodes[n as usize];
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let p = &mut self.nodes[parent as usize];
        let at = p.keys.binary_search(&lo).expect("a child is listed in its parent");
        p.keys.remove(at);
        p.kids.remove(at);
    }

    /// A node's current version is no longer in `page`.
    fn forget(&mut self, page: u32) {
        if page == NIL {
            return;
        }
        let slot = self.pages.slot(page) as usize;
        self.pages.live[slot] -= 1;
        if self.pages.live[slot] == 0 {
            self.dead.push(page);
        }
    }

    /// Node `n` leaves the tree.
    fn free_node(&mut self, n: u32) {
        let page = std::mem::replace(&mut self.page[n as usize], NIL);
        self.forget(page);
        self.free_nodes.push(n);
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
        if self.update != NIL {
            let b = BlockId(self.update);
            let used = dev.array.written_pages(b);
            if used < ppb {
                return Ok(space.geo.ppn(b, used));
            }
            space.pool.close(b, now);
            self.update = NIL;
        }
        let b = space.take_block("μ-Tree")?;
        self.update = b.0;
        self.pages.open(b);
        Ok(space.geo.ppn(b, 0))
    }

    /// Programs the path from `leaf` to the root into one new page.
    fn write_path(&mut self, space: &mut Space, dev: &mut Device, leaf: u32, t: SimTime) -> Result<()> {
        // The least recently dirtied leaf is seldom in cache: it starts
        // loading while the program is timed.
        self.prefetch_node(leaf);
        let ppn = self.alloc(space, dev, t)?;
        dev.program(ppn, self.tag, t, Cause::Mapping, Payload::None)?;
        self.stats.programs[self.cause(self.nodes[leaf as usize].lo)] += 1;
        space.pool.add_valid(space.geo.block_of(ppn), t);
        let slot = self.pages.slot(ppn.0) as usize;
        let mut path = std::mem::take(&mut self.pages.nodes[slot]);
        path.clear();
        let mut n = leaf;
        while n != NIL {
            let old = std::mem::replace(&mut self.page[n as usize], ppn.0);
            self.forget(old);
            path.push(n);
            n = self.nodes[n as usize].parent;
        }
        self.pages.live[slot] = path.len() as u8;
        self.pages.nodes[slot] = path;
        self.pages.listed[slot] = true;
        self.dirty.remove(leaf);
        self.read_cache.touch(slot as u32);
        self.read_cache.trim_to(self.read_pages);
        Ok(())
    }

    /// Pages left without a live node become invalid; a closed tree block
    /// left wholly invalid is erased at once.
    pub fn release_dead(&mut self, space: &mut Space, dev: &mut Device, t: SimTime) -> Result<()> {
        while let Some(p) = self.dead.pop() {
            if !self.pages.is_listed(p) || self.pages.live[self.pages.slot(p) as usize] != 0 {
                continue; // rewritten into since, or already gone
            }
            let slot = self.pages.slot(p);
            self.pages.listed[slot as usize] = false;
            self.read_cache.remove(slot);
            if space.invalidate(Ppn(p), 1, t) {
                let b = space.geo.block_of(Ppn(p));
                dev.erase(b, t, Cause::Mapping)?;
                self.pages.close(b);
                space.release(b)?;
            }
        }
        Ok(())
    }

    /// Whether `b` is a block the tree writes.
    pub fn owns(&self, b: BlockId) -> bool {
        self.pages.index_of[b.idx()] != NIL
    }

    /// GC of tree block `victim`: copies its live pages to new tree pages,
    /// moving their nodes with them, then erases the victim. The pages go
    /// in runs, as many as the tree's update block has room for, each
    /// timed and counted page by page exactly as single-page copies would be.
    pub fn reclaim(&mut self, space: &mut Space, dev: &mut Device, victim: BlockId, t: SimTime) -> Result<()> {
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        let ppb = space.geo.pages_per_block;
        let first = self.pages.index_of[victim.idx()] * ppb;
        debug_assert!(self.owns(victim), "{victim} is not a tree block");
        for i in 0..ppb {
            let slot = (first + i) as usize;
            if !self.pages.listed[slot] {
                continue;
            }
            let src = space.geo.ppn(victim, i).0;
            if self.pages.live[slot] == 0 {
                return Err(Error::invariant("mu", format!("μ-Tree: GC found dead page {src} not yet released")));
            }
            // Its node list is read when it moves: a cache miss to start now.
            crate::mem::prefetch(&self.pages.nodes[slot], 0);
            live.push(src);
        }
        let mut done = t;
        let mut copied = 0;
        // A live page's slot, from its page number: the victim's pages have
        // consecutive slots, as do the destination's.
        let victim_first = space.geo.ppn(victim, 0).0;
        let from = |src: u32| first + (src - victim_first);
        while copied < live.len() {
            let dst = self.alloc(space, dev, t)?;
            let room = (space.geo.pages_per_block - space.geo.page_in_block(dst)) as usize;
            let run = &live[copied..live.len().min(copied + room)];
            done = done.max(dev.copy_run(run, dst, t, AllCopies(Cause::Mapping))?);
            let to = self.pages.slot(dst.0);
            for (i, &src) in run.iter().enumerate() {
                if let Some(&ahead) = live.get(copied + i + MOVE_AHEAD) {
                    self.prefetch_moved(from(ahead));
                }
                self.moved((src, from(src)), (dst.0 + i as u32, to + i as u32));
            }
            // The run's valid counts at once: one block to another, the same
            // counts and victim order as page by page.
            space.pool.transfer_valid(victim, space.geo.block_of(dst), run.len() as u32, t);
            copied += run.len();
        }
        self.live = live;
        dev.erase(victim, done, Cause::Mapping)?;
        self.pages.close(victim);
        space.release(victim)
    }

    /// Starts loading the page pointer of the first listed node of the live
    /// tree page in `slot` (its leaf, usually the node still there), which
    /// [`moved`](Self::moved) compares: a random node's, a cache miss.
    fn prefetch_moved(&self, slot: u32) {
        if let Some(&n) = self.pages.nodes[slot as usize].first() {
            crate::mem::prefetch(&self.page, n as usize);
        }
    }

    /// Live tree page `src` (in slot `from`) was copied to `dst` (slot
    /// `to`): its nodes and cache entry follow it (its valid count, the
    /// caller's).
    fn moved(&mut self, (src, from): (u32, u32), (dst, to): (u32, u32)) {
        debug_assert_eq!((from, to), (self.pages.slot(src), self.pages.slot(dst)));
        self.stats.relocated += 1;
        let (from, to) = (from as usize, to as usize);
        self.pages.nodes.swap(from, to);
        self.pages.live[to] = std::mem::take(&mut self.pages.live[from]);
        self.pages.listed[from] = false;
        self.pages.listed[to] = true;
        // The list runs from the leaf up and the leaf is usually the one
        // node still here: stop at the last live one (each look at a node
        // that has moved on is a cache miss).
        let mut left = self.pages.live[to];
        for &n in &self.pages.nodes[to] {
            if left == 0 {
                break;
            }
            if self.page[n as usize] == src {
                self.page[n as usize] = dst;
                left -= 1;
            }
        }
        if self.read_cache.remove(from as u32) {
            self.read_cache.touch(to as u32);
        }
    }

    /// The tree's own invariants: its shape (see [`check_shape`](Self::check_shape)),
    /// node pages, caches.
    pub fn check(&self, space: &Space, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("mu", format!("μ-Tree: {r}")));
        if let Err(r) = self.check_shape() {
            return fail(r);
        }
        for (n, node) in self.live_nodes() {
            let page = self.page[n as usize];
            if page != NIL && !self.pages.nodes[self.pages.slot(page) as usize].contains(&n) {
                return fail(format!(
                    "node {} of level {} is in page {} which does not list it",
                    node.lo, node.level, page
                ));
            }
        }
        for p in self.pages.listed() {
            let slot = self.pages.slot(p) as usize;
            let here = self.pages.nodes[slot].iter().filter(|&&n| self.page[n as usize] == p).count();
            if here != self.pages.live[slot] as usize {
                return fail(format!("page {p} counts {} live nodes but holds {here}", self.pages.live[slot]));
            }
            if here == 0 || dev.array.oob_lpn(Ppn(p)) != Some(self.tag) {
                return fail(format!("page {p} is listed live but holds no node or no tree data"));
            }
        }
        if self.dirty.len() > self.write_pages || self.read_cache.len() > self.read_pages {
            return fail("a cache holds more pages than its capacity".into());
        }
        if let Some(s) = self.read_cache.keys().find(|&s| !self.pages.listed[s as usize]) {
            return fail(format!("read cache holds dead page {}", self.pages.ppn(s)));
        }
        if self.update != NIL && space.pool.state(BlockId(self.update)) != crate::ftl::pool::BlockState::Active {
            return fail("the tree's update block is not active".into());
        }
        Ok(())
    }

    /// Nodes in the tree, level by level from the root, left to right.
    fn live_nodes(&self) -> impl Iterator<Item = (u32, &Node)> + '_ {
        let firsts = std::iter::successors(Some(self.root), |&n| self.nodes[n as usize].kids.first().copied());
        firsts.flat_map(|first| {
            std::iter::successors(Some(first), |&n| Some(self.nodes[n as usize].next).filter(|&x| x != NIL))
                .map(|n| (n, &self.nodes[n as usize]))
        })
    }

    /// The B⁺-tree's shape: each level ordered and linked from key 0; every
    /// inner node lists its children by their low keys; keys inside their
    /// node's range; no node over capacity, none under its minimum (see
    /// [`min_members`](Self::min_members)); entries counted; only live
    /// leaves in the write cache.
    pub fn check_shape(&self) -> std::result::Result<(), String> {
        let root = &self.nodes[self.root as usize];
        if root.lo != 0 || root.parent != NIL || root.level as u32 + 1 != self.height {
            return Err(format!("the root covers from {}, has a parent or sits at the wrong level", root.lo));
        }
        if self.height > 1 && root.keys.len() < 2 {
            return Err("a root of one child".into());
        }
        let mut counts = [0u64; 2];
        let mut seen = 0;
        for (n, node) in self.live_nodes() {
            seen += 1;
            let level = node.level as usize;
            let at = format!("node {} of level {level}", node.lo);
            let hi = (node.next != NIL).then(|| self.nodes[node.next as usize].lo);
            if node.prev == NIL && node.lo != 0 {
                return Err(format!("{at} starts its level but not at key 0"));
            }
            if node.next != NIL && (self.nodes[node.next as usize].prev != n || hi <= Some(node.lo)) {
                return Err(format!("{at} is badly linked or out of order"));
            }
            let members = node.keys.len() as u32;
            // Below a non-root node that may hold one member, a node may be
            // an only child, with no sibling to borrow from or merge with.
            let top = self.height as usize - 1;
            let exempt = n == self.root || (top >= level + 2 && self.min_members(top - 1) < 2);
            if members > self.capacity(level) || (!exempt && members < self.min_members(level)) {
                return Err(format!(
                    "{at} holds {members}, capacity {}, minimum {}",
                    self.capacity(level),
                    self.min_members(level)
                ));
            }
            if !node.keys.windows(2).all(|w| w[0] < w[1])
                || node.keys.first().is_some_and(|&k| k < node.lo)
                || node.keys.last().is_some_and(|&k| hi.is_some_and(|h| k >= h))
            {
                return Err(format!("{at} holds keys out of order or outside its range"));
            }
            if level == 0 {
                if node.vals.len() != node.keys.len() || !node.kids.is_empty() {
                    return Err(format!("{at} has {} values for {members} keys", node.vals.len()));
                }
                for &k in &node.keys {
                    counts[self.cause(k)] += 1;
                }
                continue;
            }
            if node.keys.first() != Some(&node.lo) || node.kids.len() != node.keys.len() {
                return Err(format!("{at} does not start with its first child"));
            }
            for (&k, &c) in node.keys.iter().zip(&node.kids) {
                let child = &self.nodes[c as usize];
                if child.lo != k || child.parent != n || child.level as usize + 1 != level {
                    return Err(format!("{at} lists child {k} that does not match"));
                }
            }
            let last_kid = *node.kids.last().expect("inner nodes have children");
            let next_first = if node.next == NIL { NIL } else { self.nodes[node.next as usize].kids[0] };
            if self.nodes[last_kid as usize].next != next_first {
                return Err(format!("{at}'s children are not contiguous on their level"));
            }
        }
        let leaves = std::iter::successors(Some(self.first_leaf(self.root)), |&n| {
            Some(self.nodes[n as usize].next).filter(|&x| x != NIL)
        });
        if !leaves.map(|n| (self.nodes[n as usize].lo, n)).eq(self.leaves.entries()) || !self.leaves.sampled() {
            return Err("the leaf index does not list the leaves by their low keys".into());
        }
        if seen + self.free_nodes.len() != self.nodes.len() {
            return Err(format!("{seen} nodes in the tree and {} free of {}", self.free_nodes.len(), self.nodes.len()));
        }
        if counts != self.counts {
            return Err(format!("counts {:?} entries, holds {counts:?}", self.counts));
        }
        if let Some(n) = self.dirty.keys().find(|&n| self.nodes[n as usize].level != 0 || self.free_nodes.contains(&n))
        {
            return Err(format!("the write cache holds node {n}, not a live leaf"));
        }
        Ok(())
    }
}

/// Keys [`search`] looks among first: about a cache line's.
const WINDOW: usize = 16;

/// Where [`search`] looks first among `len` keys spread over `lo..hi`:
/// the window centred where an even spread would put `key` (a leaf's
/// extents start at random pages under random writes, so the guess is
/// mostly within a few keys), kept inside the keys when it can be.
#[inline]
fn window(len: usize, key: u32, lo: u32, hi: u64) -> usize {
    let span = hi.saturating_sub(lo as u64).max(1);
    let guess = (key.saturating_sub(lo) as u64).min(span) * len as u64 / span;
    (guess as usize).saturating_sub(WINDOW / 2).min(len.saturating_sub(WINDOW))
}

/// Where `key` is, or would go, among a leaf's sorted `keys` covering
/// `lo..hi`, as [`slice::binary_search`] says, but looking first in the
/// [`window`] where an even spread would put it: the one or two cache
/// lines there (which [`MuTree::prefetch_entry`] loaded) usually decide,
/// where bisecting all of them takes a miss at each of its first steps.
#[inline]
fn search(keys: &[u32], key: u32, lo: u32, hi: u64) -> std::result::Result<usize, usize> {
    let at = window(keys.len(), key, lo, hi);
    let near = &keys[at..keys.len().min(at + WINDOW)];
    match (near.first(), near.last()) {
        (Some(&first), Some(&last)) if first <= key && key <= last => {
            near.binary_search(&key).map(|i| at + i).map_err(|i| at + i)
        }
        _ => keys.binary_search(&key),
    }
}

/// Two distinct nodes, mutably.
fn two(nodes: &mut [Node], a: u32, b: u32) -> (&mut Node, &mut Node) {
    crate::mem::two_mut(nodes, a as usize, b as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;
    use proptest::prelude::*;

    fn tree(page_size: u32) -> MuTree {
        let geo = Geometry::new(&GeometryConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 64,
            pages_per_block: 8,
            page_size,
        });
        MuTree::new(&geo, 4, 4, Lpn(1 << 30), 1 << 31)
    }

    #[test]
    fn splits_grow_a_root_and_removals_shrink_it() {
        // 512 B pages: leaves of 32 entries, parents of 16.
        let mut t = tree(512);
        for k in 0..100 {
            t.insert(k * 3, k);
            t.check_shape().unwrap();
        }
        assert_eq!(t.height(), 2);
        assert!(t.members(t.root) >= 4, "{} leaves", t.members(t.root));
        for k in 0..100 {
            assert_eq!(t.remove(k * 3), Some(k));
            t.check_shape().unwrap();
        }
        assert_eq!(t.height(), 1);
        assert_eq!(t.entry_counts(), [0, 0]);
    }

    #[test]
    fn mass_deletion_merges_nodes_and_lowers_the_tree() {
        // 1 KiB pages: leaves of 64, then 32, 16: 20,000 entries make three levels.
        let mut t = tree(1024);
        for k in 0..20_000u32 {
            t.insert(k.wrapping_mul(2_654_435_761) >> 8, k);
        }
        t.check_shape().unwrap();
        let (height, nodes) = (t.height(), t.nodes.len() - t.free_nodes.len());
        assert!(height >= 3, "height {height}");
        // Delete 99% in key order, as when a large file is overwritten.
        let keys: Vec<u32> = t.entries().map(|(k, _)| k).collect();
        for (i, &k) in keys.iter().enumerate() {
            if i % 100 != 0 {
                let before = t.check_shape();
                t.remove(k).unwrap();
                if let Err(e) = t.check_shape() {
                    panic!("removing {k} (step {i}, before {before:?}): {e}");
                }
            }
        }
        t.check_shape().unwrap();
        assert_eq!(t.entry_counts()[0], 200);
        // 200 entries fill 200 / 32 leaves at worst, under one parent.
        assert_eq!(t.height(), 2, "after deleting 99% (was {height})");
        let live = t.nodes.len() - t.free_nodes.len();
        assert!(live <= 200 / 32 + 1, "{live} nodes left of {nodes}");
        let kept: Vec<u32> = t.entries().map(|(k, _)| k).collect();
        assert_eq!(kept, keys.iter().step_by(100).copied().collect::<Vec<_>>());
    }

    #[test]
    fn an_underfull_leaf_borrows_from_a_sibling_that_can_spare() {
        let mut t = tree(512); // leaves of 32: a split leaves 16 and 17
        for k in 0..33 {
            t.insert(k, k);
        }
        assert_eq!(t.height(), 2);
        let [l, r] = [t.nodes[t.root as usize].kids[0], t.nodes[t.root as usize].kids[1]];
        assert_eq!((t.members(l), t.members(r)), (16, 17));
        t.remove(0); // left at 15 < 16: borrows the right's first entry
        t.check_shape().unwrap();
        assert_eq!((t.members(l), t.members(r)), (16, 16));
        assert_eq!(t.nodes[r as usize].lo, 17, "the right leaf now starts at its new first key");
        assert!(t.dirty.contains(l) && t.dirty.contains(r), "both leaves reach flash");
        t.remove(1); // neither can spare one: merged, and the root gives way
        t.check_shape().unwrap();
        assert_eq!((t.height(), t.entry_counts()[0]), (1, 31));
        assert_eq!(t.floor(1), None);
        assert_eq!(t.floor(40), Some((32, 32)));
    }

    #[test]
    fn a_leaf_found_before_the_leaves_changed_is_not_reused() {
        let mut t = tree(512); // leaves of 32
        for k in 0..32 {
            t.insert(k, k);
        }
        let found = t.prefetch_leaf(30);
        t.reuse(found);
        assert_eq!(t.get(30), Some(30), "reused while current");
        t.insert(32, 32); // the leaf splits: key 30 moves to the right half
        assert_ne!(t.prefetch_leaf(30).leaf, found.leaf);
        // The old find still covers key 30 by its range; taken as the hint,
        // the search would look in the left half and miss it.
        t.reuse(found);
        assert_eq!(t.get(30), Some(30), "a stale leaf taken");
        t.reuse(t.prefetch_leaf(31));
        assert_eq!(t.get(31), Some(31));
    }

    /// What a tree looks like from outside and to its write cache: every
    /// level's nodes (low key, keys, values), the dirty leaves in LRU order,
    /// the entry counts and the height.
    type Snapshot = (Vec<(u8, u32, Vec<u32>, Vec<u32>)>, Vec<u32>, [u64; 2], u32);

    fn snapshot(t: &MuTree) -> Snapshot {
        let nodes = t.live_nodes().map(|(_, n)| (n.level, n.lo, n.keys.clone(), n.vals.clone())).collect();
        (nodes, t.dirty.keys().collect(), t.entry_counts(), t.height())
    }

    proptest::proptest! {
        /// `replace` leaves a tree exactly as removing then inserting the
        /// key does, whenever `spot` offers it; the trees take the same
        /// random inserts and removals (of 512 B pages: 32-entry leaves, so
        /// leaves often sit at their minimum, where `spot` must decline).
        #[test]
        fn replace_in_place_leaves_what_remove_and_insert_leave(
            ops in proptest::collection::vec((0u8..4, 0u32..400, 0u32..1000), 1..1500),
        ) {
            let (mut fast, mut slow) = (tree(512), tree(512));
            for (op, key, value) in ops {
                let key = key * 3;
                match op {
                    0 | 1 => {
                        fast.insert(key, value);
                        slow.insert(key, value);
                    }
                    2 => {
                        proptest::prop_assert_eq!(fast.remove(key), slow.remove(key));
                    }
                    _ => match fast.spot(key) {
                        Some(spot) => {
                            proptest::prop_assert_eq!(Some(spot.value), slow.get(key));
                            proptest::prop_assert_eq!(Some(spot.before), slow.before(key));
                            proptest::prop_assert_eq!(slow.range(key + 1, u32::MAX).next(), Some(spot.after));
                            fast.replace(&spot, value);
                            slow.remove(key);
                            slow.insert(key, value);
                        }
                        None => {
                            // Declined: in the tree, the leaf's end or its
                            // minimum, so a removal there could rebalance.
                            let leaf = slow.leaf_of(key);
                            let n = &slow.nodes[leaf as usize];
                            let i = n.keys.binary_search(&key);
                            proptest::prop_assert!(
                                i.is_err()
                                    || i == Ok(0)
                                    || i == Ok(n.keys.len() - 1)
                                    || (leaf != slow.root && n.keys.len() as u32 <= slow.min_members(0))
                            );
                        }
                    },
                }
                proptest::prop_assert_eq!(snapshot(&fast), snapshot(&slow));
            }
            fast.check_shape().unwrap();
        }
    }

    proptest! {
        /// The search that looks near the guess first answers as a binary
        /// search of all the keys does, whatever the keys' spread and the
        /// range they are said to cover.
        #[test]
        fn search_answers_as_a_binary_search(
            keys in prop::collection::btree_set(0u32..10_000, 0..300),
            key in 0u32..10_000,
            (lo, span) in (0u32..10_000, 1u64..20_000),
        ) {
            let keys: Vec<u32> = keys.into_iter().collect();
            prop_assert_eq!(search(&keys, key, lo, lo as u64 + span), keys.binary_search(&key));
        }
    }

    #[test]
    fn spot_offers_an_inner_entry_of_a_leaf_above_its_minimum_only() {
        let mut t = tree(512); // leaves of 32, minimum 16
        for k in 0..33 {
            t.insert(k, k);
        }
        // Leaves of 16 (0..16) and 17 (16..33).
        assert!(t.spot(5).is_none(), "a leaf at its minimum declines");
        assert!(t.spot(16).is_none() && t.spot(32).is_none(), "a leaf's first and last entries decline");
        assert!(t.spot(40).is_none(), "not in the tree");
        let spot = t.spot(20).expect("an inner entry of a leaf above its minimum");
        assert_eq!((spot.before, spot.value, spot.after), ((19, 19), 20, (21, 21)));
        t.replace(&spot, 7);
        assert_eq!(t.get(20), Some(7));
        t.check_shape().unwrap();
    }

    #[test]
    fn random_updates_keep_the_shape_and_agree_with_a_sorted_map() {
        let mut model = std::collections::BTreeMap::new();
        let mut t = tree(512);
        let mut x = 12_345u64;
        for step in 0..30_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 3000) as u32 * 7;
            // Grow for a while, then shrink, so both paths are exercised.
            if (x >> 20) % 8 < if (step / 5000) % 2 == 0 { 6 } else { 2 } {
                t.insert(key, step);
                model.insert(key, step);
            } else {
                assert_eq!(t.remove(key), model.remove(&key));
            }
            if step % 97 == 0 {
                t.check_shape().unwrap();
                let probe = (x >> 32) as u32 % 21_500;
                assert_eq!(t.floor(probe), model.range(..=probe).next_back().map(|(&k, &v)| (k, v)));
                assert_eq!(t.get(probe), model.get(&probe).copied());
                let want: Vec<(u32, u32)> = model.range(probe..probe + 500).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(t.range(probe, probe + 500).collect::<Vec<_>>(), want);
            }
        }
        t.check_shape().unwrap();
        assert_eq!(t.entries().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }
}
