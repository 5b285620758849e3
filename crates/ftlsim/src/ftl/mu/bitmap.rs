//! μ-FTL's bitmap cache: a hash table, bucketed by block, of invalid
//! extents ⟨block, offset, length⟩ (4 B each: a 25-bit page number and a
//! 7-bit length, like the extents of Fig. 3), merged on insert when they
//! touch or overlap.
//!
//! Invalid pages reach the μ-Tree's bitmap entries (one 32-page bitmap per
//! sub-block that has an invalid page) only through this cache. An entry
//! leaves it in one of three ways:
//!
//! 1. **flush**: the cache is over capacity; the block with the most
//!    entries is written to its bitmap entries in the tree;
//! 2. **taken by GC**: its block is the victim, whose valid pages GC finds
//!    from the tree's bitmaps and this bucket together;
//! 3. **dropped**: its block became wholly invalid and is erased at once,
//!    so the entries are discarded without reaching the tree.
//!
//! Simplification: the hash table is an array of buckets indexed by block
//! (the extents, not the array, count against the budget), and a flush
//! picks the lowest-numbered among equally full blocks (deterministic).

use serde::{Deserialize, Serialize};

/// Bytes of one cached invalid extent.
pub const EXTENT_BYTES: u64 = 4;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BitmapStats {
    pub inserts: u64,
}

#[derive(Serialize, Deserialize)]
pub struct BitmapCache {
    capacity: u64,
    len: u64,
    /// Per block: disjoint, non-touching runs (first page, pages), sorted.
    /// Indexed by block (grown on demand); an empty array is no bucket.
    /// Each keeps its capacity, so a bucket made again allocates nothing.
    buckets: Vec<Vec<(u32, u32)>>,
    /// Every bucket by its runs, so the fullest is found without a scan
    /// (a scan of every bucket per flush was a fifth of `mu`'s time).
    by_size: BySize,
    pub stats: BitmapStats,
}

impl BitmapCache {
    pub fn new(bytes: u64) -> BitmapCache {
        BitmapCache {
            capacity: bytes / EXTENT_BYTES,
            len: 0,
            buckets: Vec::new(),
            by_size: BySize::default(),
            stats: BitmapStats::default(),
        }
    }

    /// Cached invalid extents.
    pub fn extents(&self) -> u64 {
        self.len
    }

    pub fn is_over(&self) -> bool {
        self.len > self.capacity
    }

    /// Records pages `first..first + n` of `block` invalid, merging runs.
    pub fn insert(&mut self, block: u32, first: u32, n: u32) {
        self.stats.inserts += 1;
        let b = block as usize;
        if b >= self.buckets.len() {
            self.buckets.resize_with(b + 1, Vec::new);
        }
        let runs = &mut self.buckets[b];
        let (mut lo, mut hi) = (first, first + n);
        let before = runs.len();
        if before > 0 {
            self.by_size.remove(before, block);
        }
        runs.retain(|&(s, len)| {
            let touches = s <= hi && lo <= s + len;
            if touches {
                lo = lo.min(s);
                hi = hi.max(s + len);
            }
            !touches
        });
        let at = runs.partition_point(|&(s, _)| s < lo);
        runs.insert(at, (lo, hi - lo));
        self.by_size.insert(runs.len(), block);
        self.len = self.len + runs.len() as u64 - before as u64;
    }

    /// The block whose flush frees the most entries.
    pub fn fullest(&self) -> Option<u32> {
        self.by_size.fullest()
    }

    /// Removes a block's runs, as a list (tests; the FTL takes them as
    /// bits, [`take_bits`](Self::take_bits)).
    #[cfg(test)]
    pub fn take(&mut self, block: u32) -> Vec<(u32, u32)> {
        let runs = self.runs(block).to_vec();
        self.drop_bucket(block);
        runs
    }

    /// Removes a block's runs (to flush them or hand them to GC) into
    /// `bits`, one `u32` per 32 pages (bit `i % 32` of word `i / 32` for
    /// page `i`); returns the pages marked.
    pub fn take_bits(&mut self, block: u32, bits: &mut [u32]) -> u32 {
        let mut pages = 0;
        for &(s, n) in self.runs(block) {
            pages += n;
            for i in s..s + n {
                bits[(i / u32::BITS) as usize] |= 1 << (i % u32::BITS);
            }
        }
        self.drop_bucket(block);
        pages
    }

    /// Empties a block's bucket, keeping its array for reuse.
    fn drop_bucket(&mut self, block: u32) {
        let Some(runs) = self.buckets.get_mut(block as usize) else { return };
        if !runs.is_empty() {
            self.by_size.remove(runs.len(), block);
            self.len -= runs.len() as u64;
            runs.clear();
        }
    }

    /// Power failed: every cached extent is lost (recovery rebuilds the
    /// bitmaps in the tree).
    pub fn clear(&mut self) {
        self.buckets.clear();
        self.by_size = BySize::default();
        self.len = 0;
    }

    pub fn runs(&self, block: u32) -> &[(u32, u32)] {
        self.buckets.get(block as usize).map_or(&[], |r| r.as_slice())
    }
}

/// Blocks by their buckets' runs: per count, a bitmap of the blocks with
/// that many, and a bitmap of its non-zero words, so the fullest bucket,
/// the lowest-numbered among equals, is two short scans away. Kept at
/// every insert (a bucket's count moves by one, mostly), where an ordered
/// set's removal and insertion were a fiftieth of a `mu` run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct BySize {
    /// `blocks[n]`: bit `b` set when block `b`'s bucket holds `n` runs.
    blocks: Vec<Vec<u64>>,
    /// `words[n]`: bit `w` set when word `w` of `blocks[n]` is not zero.
    words: Vec<Vec<u64>>,
    /// The most runs a bucket holds (0: none).
    top: usize,
}

impl BySize {
    fn insert(&mut self, n: usize, block: u32) {
        if n >= self.blocks.len() {
            self.blocks.resize_with(n + 1, Vec::new);
            self.words.resize_with(n + 1, Vec::new);
        }
        let (w, bit) = (block as usize / 64, block % 64);
        let blocks = &mut self.blocks[n];
        if w >= blocks.len() {
            blocks.resize(w + 1, 0);
        }
        debug_assert!(blocks[w] & (1 << bit) == 0, "block {block} listed twice");
        blocks[w] |= 1 << bit;
        let words = &mut self.words[n];
        if w / 64 >= words.len() {
            words.resize(w / 64 + 1, 0);
        }
        words[w / 64] |= 1 << (w % 64);
        self.top = self.top.max(n);
    }

    fn remove(&mut self, n: usize, block: u32) {
        let (w, bit) = (block as usize / 64, block % 64);
        let blocks = &mut self.blocks[n];
        debug_assert!(blocks[w] & (1 << bit) != 0, "block {block} not listed with {n} runs");
        blocks[w] &= !(1 << bit);
        if blocks[w] == 0 {
            self.words[n][w / 64] &= !(1 << (w % 64));
            // Only the last block with the most runs going lowers the most.
            if n == self.top {
                while self.top > 0 && self.words[self.top].iter().all(|&x| x == 0) {
                    self.top -= 1;
                }
            }
        }
    }

    /// The lowest-numbered block among those with the most runs.
    fn fullest(&self) -> Option<u32> {
        if self.top == 0 {
            return None;
        }
        let words = &self.words[self.top];
        let (i, &word) = words.iter().enumerate().find(|&(_, &x)| x != 0)?;
        let w = i * 64 + word.trailing_zeros() as usize;
        Some((w * 64) as u32 + self.blocks[self.top][w].trailing_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_when_they_touch_or_overlap() {
        let mut c = BitmapCache::new(64);
        c.insert(3, 4, 2);
        c.insert(3, 10, 1);
        assert_eq!(c.runs(3), &[(4, 2), (10, 1)]);
        c.insert(3, 6, 4); // fills the gap: one run 4..11
        assert_eq!(c.runs(3), &[(4, 7)]);
        assert_eq!(c.extents(), 1);
        c.insert(3, 0, 1);
        c.insert(5, 0, 1);
        assert_eq!(c.extents(), 3);
        assert_eq!(c.fullest(), Some(3));
        assert_eq!(c.take(3), vec![(0, 1), (4, 7)]);
        assert_eq!(c.extents(), 1);
        assert_eq!(c.fullest(), Some(5));
        c.insert(7, 0, 1);
        assert_eq!(c.fullest(), Some(5), "among equals, the lowest-numbered block");
        c.insert(7, 4, 1);
        assert_eq!(c.fullest(), Some(7));
        c.take(7);
        c.take(5);
        assert_eq!(c.fullest(), None);
    }

    #[test]
    fn over_capacity_after_the_last_entry_that_fits() {
        let mut c = BitmapCache::new(8); // two entries
        c.insert(0, 0, 1);
        c.insert(1, 0, 1);
        assert!(!c.is_over());
        c.insert(2, 0, 1);
        assert!(c.is_over());
    }

    proptest::proptest! {
        /// The fullest bucket, the lowest-numbered among equals, is the one
        /// an ordered set of (runs, block) names, whatever the inserts and
        /// takes (blocks many bitmap words apart).
        #[test]
        fn the_fullest_bucket_is_the_ordered_sets(ops in proptest::collection::vec((0u32..9000, 0u32..128, proptest::bool::weighted(0.8)), 1..400)) {
            use std::cmp::Reverse;
            let mut c = BitmapCache::new(1 << 20);
            for (block, page, insert) in ops {
                let block = block % 37 * 241;
                if insert {
                    c.insert(block, page, 1);
                } else {
                    c.take(block);
                }
                let model = (0..9000u32).filter(|&b| !c.runs(b).is_empty()).map(|b| (c.runs(b).len(), Reverse(b))).max();
                proptest::prop_assert_eq!(c.fullest(), model.map(|(_, Reverse(b))| b));
            }
        }
    }
}
