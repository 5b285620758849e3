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
use std::cmp::Reverse;
use std::collections::BTreeSet;

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
    /// (runs, block) of every bucket, so the fullest is found without a
    /// scan (a scan of every bucket per flush was a fifth of `mu`'s time).
    by_size: BTreeSet<(usize, Reverse<u32>)>,
    pub stats: BitmapStats,
}

impl BitmapCache {
    pub fn new(bytes: u64) -> BitmapCache {
        BitmapCache {
            capacity: bytes / EXTENT_BYTES,
            len: 0,
            buckets: Vec::new(),
            by_size: BTreeSet::new(),
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
            self.by_size.remove(&(before, Reverse(block)));
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
        self.by_size.insert((runs.len(), Reverse(block)));
        self.len = self.len + runs.len() as u64 - before as u64;
    }

    /// The block whose flush frees the most entries.
    pub fn fullest(&self) -> Option<u32> {
        self.by_size.last().map(|&(_, Reverse(b))| b)
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
            self.by_size.remove(&(runs.len(), Reverse(block)));
            self.len -= runs.len() as u64;
            runs.clear();
        }
    }

    /// Power failed: every cached extent is lost (recovery rebuilds the
    /// bitmaps in the tree).
    pub fn clear(&mut self) {
        self.buckets.clear();
        self.by_size.clear();
        self.len = 0;
    }

    pub fn runs(&self, block: u32) -> &[(u32, u32)] {
        self.buckets.get(block as usize).map_or(&[], |r| r.as_slice())
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
}
