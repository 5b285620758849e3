//! The μ-Tree (Kang, Jung, Kang and Kim, "μ-Tree: an ordered index structure
//! for NAND flash memory", EMSOFT 2007) as μ-FTL stores its map in it: a
//! B⁺-tree on flash whose update writes the whole path from a leaf to the
//! root into one new page (the leaf takes half the page, its parent a
//! quarter, and so on, so a level-`i` node holds `page / 2^(i+1) / 8`
//! entries of 8 B).
//!
//! Entries are `u32` keys with a `u64` value (μ-FTL's extents and bitmap
//! entries, see [`super`]). Each node covers the keys from its low key up to
//! its right neighbour's on the same level; leaves hold their entries,
//! inner nodes their children, both as sorted arrays. A node over capacity
//! splits at its median member; an emptied node is absorbed by a sibling
//! under the same parent; the root level is added and dropped as needed.
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
//! `bitmap_keys` on); a path is charged by its leaf's low key.
//!
//! In memory (none of this is modelled controller RAM, which is the caches'
//! page budget): nodes live in an arena addressed by index and recycled
//! through a free list, each level threaded left to right; tree pages are
//! slots of the blocks the tree writes, each listing the nodes whose current
//! version it holds; both caches are intrusive LRU lists over those indices.
//! A steady-state operation allocates nothing.

use super::lru::DenseLru;
use super::space::Space;
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, Ppn, SimTime};

const NIL: u32 = u32::MAX;
/// Bytes of one entry: 4 B key, 4 B value (Fig. 3's 25-bit PPN + 7-bit length).
pub const ENTRY_BYTES: u32 = 8;

/// One node. `keys` are a leaf's entry keys (values in `vals`) or an inner
/// node's children's low keys (children in `kids`); `keys[0]` of an inner
/// node is its own low key.
#[derive(Default)]
struct Node {
    level: u8,
    /// The lowest key the node covers; fixed for the node's life.
    lo: u32,
    parent: u32,
    /// Neighbours on the same level, in key order.
    prev: u32,
    next: u32,
    /// Flash page of the node's current version, or [`NIL`].
    page: u32,
    keys: Vec<u32>,
    vals: Vec<u64>,
    kids: Vec<u32>,
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

/// The pages of the blocks the tree writes: per page, whether it is a live
/// (valid) tree page and the nodes whose current version it holds.
struct TreePages {
    geo: Geometry,
    /// Per device block: its index among tree blocks, or [`NIL`].
    index_of: Vec<u32>,
    /// Per tree-block index: the device block, or [`NIL`] when unused.
    block: Vec<u32>,
    free: Vec<u32>,
    /// Per slot (tree-block index × pages per block + page).
    listed: Vec<bool>,
    nodes: Vec<Vec<u32>>,
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
        }
    }

    /// The tree starts writing block `b`.
    fn open(&mut self, b: BlockId) {
        let ppb = self.geo.pages_per_block as usize;
        let i = self.free.pop().unwrap_or_else(|| {
            self.block.push(NIL);
            self.listed.resize(self.block.len() * ppb, false);
            self.nodes.resize_with(self.block.len() * ppb, Vec::new);
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
        let i = self.index_of[self.geo.block_of(Ppn(ppn)).idx()];
        debug_assert!(i != NIL, "page {ppn} is not in a tree block");
        i * self.geo.pages_per_block + self.geo.page_in_block(Ppn(ppn))
    }

    fn ppn(&self, slot: u32) -> u32 {
        let ppb = self.geo.pages_per_block;
        self.geo.ppn(BlockId(self.block[(slot / ppb) as usize]), slot % ppb).0
    }

    fn is_listed(&self, ppn: u32) -> bool {
        let i = self.index_of[self.geo.block_of(Ppn(ppn)).idx()];
        i != NIL && self.listed[self.slot(ppn) as usize]
    }

    /// Listed pages (live tree pages, and dead ones not yet released).
    fn listed(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.listed.len() as u32).filter(|&s| self.listed[s as usize]).map(|s| self.ppn(s))
    }
}

pub struct MuTree {
    nodes: Vec<Node>,
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
    /// OOB LPN of tree pages (beyond the logical space).
    tag: Lpn,
    /// Keys from here on are the bitmap cache's (traffic counted as its).
    bitmap_keys: u32,
    pub stats: TreeStats,
}

/// Entries of the tree in key order from some key on.
pub struct Range<'a> {
    tree: &'a MuTree,
    leaf: u32,
    i: usize,
    end: u32,
}

impl Iterator for Range<'_> {
    type Item = (u32, u64);

    fn next(&mut self) -> Option<(u32, u64)> {
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
            tag,
            bitmap_keys,
            stats: TreeStats::default(),
        };
        t.root = t.new_node(0, 0);
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
        let fresh = Node { level, lo, parent: NIL, prev: NIL, next: NIL, page: NIL, ..Node::default() };
        match self.free_nodes.pop() {
            Some(i) => {
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
                self.nodes.len() as u32 - 1
            }
        }
    }

    /// The leaf covering `key`.
    #[inline]
    fn leaf_of(&self, key: u32) -> u32 {
        let mut n = self.root;
        loop {
            let node = &self.nodes[n as usize];
            if node.level == 0 {
                return n;
            }
            n = node.kids[node.keys.partition_point(|&k| k <= key) - 1];
        }
    }

    /// The leftmost leaf under node `n`.
    fn first_leaf(&self, mut n: u32) -> u32 {
        while self.nodes[n as usize].level > 0 {
            n = self.nodes[n as usize].kids[0];
        }
        n
    }

    pub fn get(&self, key: u32) -> Option<u64> {
        let n = &self.nodes[self.leaf_of(key) as usize];
        n.keys.binary_search(&key).ok().map(|i| n.vals[i])
    }

    /// The entry with the greatest key `<= key`.
    pub fn floor(&self, key: u32) -> Option<(u32, u64)> {
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
    pub fn before(&self, key: u32) -> Option<(u32, u64)> {
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
        let mut n = self.root;
        loop {
            let node = &self.nodes[n as usize];
            let (level, page) = (node.level, node.page);
            let next = if level == 0 { NIL } else { node.kids[node.keys.partition_point(|&k| k <= key) - 1] };
            self.stats.visits += 1;
            if (level == 0 && self.dirty.contains(n)) || page == NIL || self.read_cache.hit(self.pages.slot(page)) {
                self.stats.visit_hits += 1;
            } else {
                t = dev.read(Ppn(page), t, Cause::Mapping)?;
                self.stats.reads[self.cause(key)] += 1;
                self.read_cache.touch(self.pages.slot(page));
                self.read_cache.trim_to(self.read_pages);
            }
            if level == 0 {
                return Ok(t);
            }
            n = next;
        }
    }

    /// Inserts or replaces an entry (the caller has looked it up).
    pub fn insert(&mut self, key: u32, value: u64) {
        let leaf = self.leaf_of(key);
        let n = &mut self.nodes[leaf as usize];
        match n.keys.binary_search(&key) {
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

    pub fn remove(&mut self, key: u32) -> Option<u64> {
        let leaf = self.leaf_of(key);
        let n = &mut self.nodes[leaf as usize];
        let i = n.keys.binary_search(&key).ok()?;
        n.keys.remove(i);
        let v = n.vals.remove(i);
        self.counts[self.cause(key)] -= 1;
        self.dirty.touch(leaf);
        self.shrink(leaf);
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

    /// Node `n` lost a member: an emptied node is absorbed by a sibling
    /// under the same parent.
    fn shrink(&mut self, n: u32) {
        if self.members(n) > 0 || n == self.root {
            return;
        }
        let (level, parent, prev, succ) = {
            let nn = &self.nodes[n as usize];
            (nn.level, nn.parent, nn.prev, nn.next)
        };
        let gone = if succ != NIL && self.nodes[succ as usize].parent == parent {
            // The successor's members move into this node's range.
            let (a, b) = two(&mut self.nodes, n, succ);
            std::mem::swap(&mut a.keys, &mut b.keys);
            std::mem::swap(&mut a.vals, &mut b.vals);
            std::mem::swap(&mut a.kids, &mut b.kids);
            for i in 0..self.nodes[n as usize].kids.len() {
                let k = self.nodes[n as usize].kids[i];
                self.nodes[k as usize].parent = n;
            }
            succ
        } else if self.nodes[parent as usize].kids[0] != n {
            n
        } else {
            return; // the parent's only child stays, empty
        };
        self.unlink(gone);
        let page = self.nodes[gone as usize].page;
        self.forget(gone, page);
        if level == 0 {
            self.dirty.remove(gone);
        }
        let covering = match (level, gone == n) {
            (0, true) => prev,
            (0, false) => n,
            _ => {
                let lo = self.nodes[n as usize].lo;
                self.leaf_of(lo)
            }
        };
        self.dirty.touch(covering);
        self.free_nodes.push(gone);
        self.shrink(parent);
        let root = self.root;
        if self.height > 1 && self.members(root) == 1 {
            let child = self.nodes[root as usize].kids[0];
            self.nodes[child as usize].parent = NIL;
            self.root = child;
            self.height -= 1;
            let page = self.nodes[root as usize].page;
            self.forget(root, page);
            self.free_nodes.push(root);
        }
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

    /// Node `n` no longer lives in `page`.
    fn forget(&mut self, n: u32, page: u32) {
        if page == NIL {
            return;
        }
        let slot = self.pages.slot(page) as usize;
        let nodes = &mut self.pages.nodes[slot];
        nodes.retain(|&x| x != n);
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
        let ppn = self.alloc(space, dev, t)?;
        dev.program(ppn, self.tag, t, Cause::Mapping, Payload::None)?;
        self.stats.programs[self.cause(self.nodes[leaf as usize].lo)] += 1;
        space.pool.add_valid(space.geo.block_of(ppn), t);
        let slot = self.pages.slot(ppn.0) as usize;
        let mut path = std::mem::take(&mut self.pages.nodes[slot]);
        path.clear();
        let mut n = leaf;
        while n != NIL {
            let old = std::mem::replace(&mut self.nodes[n as usize].page, ppn.0);
            self.forget(n, old);
            path.push(n);
            n = self.nodes[n as usize].parent;
        }
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
            if !self.pages.is_listed(p) || !self.pages.nodes[self.pages.slot(p) as usize].is_empty() {
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

    /// GC of tree block `victim`: copies each live page to a new tree page,
    /// moving its nodes with it, then erases the victim.
    pub fn reclaim(&mut self, space: &mut Space, dev: &mut Device, victim: BlockId, t: SimTime) -> Result<()> {
        let mut done = t;
        for i in 0..space.geo.pages_per_block {
            let src = space.geo.ppn(victim, i).0;
            if !self.pages.is_listed(src) {
                continue;
            }
            if self.pages.nodes[self.pages.slot(src) as usize].is_empty() {
                return Err(Error::invariant("mu", format!("μ-Tree: GC found dead page {src} not yet released")));
            }
            done = done.max(self.relocate(space, dev, src, t)?);
        }
        dev.erase(victim, done, Cause::Mapping)?;
        self.pages.close(victim);
        space.release(victim)
    }

    /// Copies live tree page `src` to a new tree page; returns when the
    /// source has been read.
    fn relocate(&mut self, space: &mut Space, dev: &mut Device, src: u32, t: SimTime) -> Result<SimTime> {
        let dst = self.alloc(space, dev, t)?;
        let read = dev.copy_run(&[src], dst, t, |_| Cause::Mapping)?;
        self.stats.relocated += 1;
        let (from, to) = (self.pages.slot(src) as usize, self.pages.slot(dst.0) as usize);
        self.pages.nodes.swap(from, to);
        self.pages.listed[from] = false;
        self.pages.listed[to] = true;
        for &n in &self.pages.nodes[to] {
            self.nodes[n as usize].page = dst.0;
        }
        if self.read_cache.remove(from as u32) {
            self.read_cache.touch(to as u32);
        }
        space.pool.transfer_valid(space.geo.block_of(Ppn(src)), space.geo.block_of(dst), 1, t);
        Ok(read)
    }

    /// The tree's own invariants: levels, members and capacities, node
    /// pages, caches.
    pub fn check(&self, space: &Space, dev: &Device) -> Result<()> {
        let fail = |r: String| Err(Error::invariant("mu", format!("μ-Tree: {r}")));
        let root = &self.nodes[self.root as usize];
        if root.lo != 0 || root.parent != NIL || root.level as u32 + 1 != self.height {
            return fail(format!("the root covers from {}, has a parent or sits at the wrong level", root.lo));
        }
        if self.height > 1 && root.keys.len() < 2 {
            return fail("a root of one child".into());
        }
        let mut counts = [0u64; 2];
        // Each level, left to right, from its node at key 0.
        let mut first = self.root;
        for level in (0..self.height).rev() {
            let (mut n, mut last) = (first, None);
            if self.nodes[n as usize].lo != 0 || self.nodes[n as usize].prev != NIL {
                return fail(format!("level {level} does not start at key 0"));
            }
            while n != NIL {
                let node = &self.nodes[n as usize];
                let hi = (node.next != NIL).then(|| self.nodes[node.next as usize].lo);
                let at = |k: u32| format!("node {} of level {level}", k);
                if node.level as u32 != level || last.is_some_and(|l| l >= node.lo) {
                    return fail(format!("{} is out of order or on the wrong level", at(node.lo)));
                }
                if node.next != NIL && self.nodes[node.next as usize].prev != n {
                    return fail(format!("{} is badly linked", at(node.lo)));
                }
                let members = node.keys.len() as u32;
                if members > self.capacity(level as usize) || (members == 0 && level > 0) {
                    return fail(format!("{} holds {members}, capacity {}", at(node.lo), self.capacity(level as usize)));
                }
                if !node.keys.windows(2).all(|w| w[0] < w[1])
                    || node.keys.first().is_some_and(|&k| k < node.lo)
                    || node.keys.last().is_some_and(|&k| hi.is_some_and(|h| k >= h))
                {
                    return fail(format!("{} holds keys out of order or outside its range", at(node.lo)));
                }
                if level == 0 {
                    if node.vals.len() != node.keys.len() {
                        return fail(format!("{} has {} values for {} keys", at(node.lo), node.vals.len(), members));
                    }
                    for &k in &node.keys {
                        counts[self.cause(k)] += 1;
                    }
                } else {
                    if node.keys.first() != Some(&node.lo) || node.kids.len() != node.keys.len() {
                        return fail(format!("{} does not start with its first child", at(node.lo)));
                    }
                    for (&k, &c) in node.keys.iter().zip(&node.kids) {
                        let child = &self.nodes[c as usize];
                        if child.lo != k || child.parent != n || child.level as u32 + 1 != level {
                            return fail(format!("{} lists child {k} that does not match", at(node.lo)));
                        }
                    }
                    let last_kid = *node.kids.last().expect("inner nodes have children");
                    let next_first = if node.next == NIL { NIL } else { self.nodes[node.next as usize].kids[0] };
                    if self.nodes[last_kid as usize].next != next_first {
                        return fail(format!("{}'s children are not contiguous on their level", at(node.lo)));
                    }
                }
                if node.page != NIL && !self.pages.nodes[self.pages.slot(node.page) as usize].contains(&n) {
                    return fail(format!("{} is in page {} which does not list it", at(node.lo), node.page));
                }
                (last, n) = (Some(node.lo), node.next);
            }
            if level > 0 {
                first = self.nodes[first as usize].kids[0];
            }
        }
        if counts != self.counts {
            return fail(format!("counts {:?} entries, holds {counts:?}", self.counts));
        }
        for p in self.pages.listed() {
            if self.pages.nodes[self.pages.slot(p) as usize].is_empty() || dev.array.oob_lpn(Ppn(p)) != Some(self.tag) {
                return fail(format!("page {p} is listed live but holds no node or no tree data"));
            }
        }
        if self.dirty.len() > self.write_pages || self.read_cache.len() > self.read_pages {
            return fail("a cache holds more pages than its capacity".into());
        }
        if let Some(n) = self.dirty.keys().find(|&n| self.nodes[n as usize].level != 0 || self.free_nodes.contains(&n))
        {
            return fail(format!("the write cache holds node {n}, not a live leaf"));
        }
        if let Some(s) = self.read_cache.keys().find(|&s| !self.pages.listed[s as usize]) {
            return fail(format!("read cache holds dead page {}", self.pages.ppn(s)));
        }
        if self.update != NIL && space.pool.state(BlockId(self.update)) != crate::ftl::pool::BlockState::Active {
            return fail("the tree's update block is not active".into());
        }
        Ok(())
    }
}

/// Two distinct nodes, mutably.
fn two(nodes: &mut [Node], a: u32, b: u32) -> (&mut Node, &mut Node) {
    let (a, b) = (a as usize, b as usize);
    assert_ne!(a, b);
    if a < b {
        let (l, r) = nodes.split_at_mut(b);
        (&mut l[a], &mut r[0])
    } else {
        let (l, r) = nodes.split_at_mut(a);
        (&mut r[0], &mut l[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;

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
            t.insert(k * 3, k as u64);
        }
        assert_eq!(t.height(), 2);
        assert!(t.members(t.root) >= 4, "{} leaves", t.members(t.root));
        for k in 0..100 {
            assert_eq!(t.remove(k * 3), Some(k as u64));
        }
        assert_eq!(t.height(), 1);
        assert_eq!(t.entry_counts(), [0, 0]);
    }
}
