//! The TRIM list of the hybrid FTLs: the hash-bucketed list (HBL) of Kim,
//! Kim, Lee and Won, "FTL Design for TRIM Command".
//!
//! A TRIM is acknowledged at once and its range kept here; merges consult
//! the list so trimmed pages are neither copied nor kept, and reads of a
//! listed page return zeros. The address space is split into groups of
//! consecutive pages (the hash buckets); a range is split at group
//! boundaries and each group keeps a sorted list of disjoint, non-adjacent
//! `[start, end)` ranges, so a lookup is one division and a binary search.
//!
//! Addresses are pages of the FTL's striped space (a chip's logical blocks
//! side by side), where a host range is contiguous on every chip. The paper
//! keeps sectors; TRIM acts on whole pages here, so pages lose nothing.
//!
//! Invariant: within a group, ranges are sorted, non-empty, disjoint and
//! separated by at least one page; `entries` is the sum of the group lengths.

use serde::{Deserialize, Serialize};

/// Modelled controller RAM of one entry: a 4 B start and a 4 B length.
pub const ENTRY_BYTES: u64 = 8;
/// Modelled controller RAM of one group head (pointer and length).
pub const GROUP_BYTES: u64 = 8;

#[derive(Serialize, Deserialize)]
pub struct TrimList {
    group_pages: u32,
    groups: Vec<Vec<(u32, u32)>>,
    entries: u64,
    peak_entries: u64,
    /// Entry reads and writes insertions made (RAM accesses, for the TRIM
    /// cost model).
    accesses: u64,
}

impl TrimList {
    /// A list over `space_pages` pages in `groups` groups (at least one).
    pub fn new(space_pages: u64, groups: u32) -> TrimList {
        let groups = groups.max(1) as u64;
        let group_pages = space_pages.div_ceil(groups).clamp(1, u32::MAX as u64) as u32;
        let n = space_pages.div_ceil(group_pages as u64).max(1) as usize;
        TrimList { group_pages, groups: vec![Vec::new(); n], entries: 0, peak_entries: 0, accesses: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Ranges currently listed.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Most ranges listed at once since [`reset_peak`](Self::reset_peak).
    pub fn peak_entries(&self) -> u64 {
        self.peak_entries
    }

    pub fn reset_peak(&mut self) {
        self.peak_entries = self.entries;
    }

    /// Modelled controller RAM of the list holding `entries` ranges.
    pub fn bytes(&self, entries: u64) -> u64 {
        entries * ENTRY_BYTES + self.groups.len() as u64 * GROUP_BYTES
    }

    /// Whether `page` lies in a listed range.
    #[inline]
    pub fn contains(&self, page: u32) -> bool {
        let g = &self.groups[(page / self.group_pages) as usize];
        let i = g.partition_point(|r| r.1 <= page);
        i < g.len() && g[i].0 <= page
    }

    /// Lists the pages `start..end`.
    pub fn insert(&mut self, start: u32, end: u32) {
        let mut accesses = 0;
        self.each_group(start, end, |g, s, e| {
            // Two binary searches over the group, then the merged entry
            // written and the entries it absorbs read (the shift of the
            // tail is one block move, not counted per entry).
            let probes = 2 * (u64::BITS - (g.len() as u64).leading_zeros()) as u64;
            let i = g.partition_point(|r| r.1 < s);
            let j = g.partition_point(|r| r.0 <= e);
            accesses += probes + 1 + (j - i) as u64;
            let merged = if i < j { (s.min(g[i].0), e.max(g[j - 1].1)) } else { (s, e) };
            let before = g.len();
            g.splice(i..j, [merged]);
            g.len() as i64 - before as i64
        });
        self.accesses += accesses;
    }

    /// RAM accesses insertions have made so far.
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// Unlists the pages `start..end` (written again, or realized by a merge).
    pub fn remove(&mut self, start: u32, end: u32) {
        if self.entries == 0 {
            return;
        }
        self.each_group(start, end, |g, s, e| {
            let i = g.partition_point(|r| r.1 <= s);
            let j = g.partition_point(|r| r.0 < e);
            if i == j {
                return 0;
            }
            let (first, last) = (g[i], g[j - 1]);
            let left = (first.0 < s).then_some((first.0, s));
            let right = (last.1 > e).then_some((e, last.1));
            let before = g.len();
            g.splice(i..j, left.into_iter().chain(right));
            g.len() as i64 - before as i64
        });
    }

    /// Applies `f` to each group's part of `start..end`; `f` returns the
    /// change in the group's range count.
    fn each_group(&mut self, start: u32, end: u32, mut f: impl FnMut(&mut Vec<(u32, u32)>, u32, u32) -> i64) {
        let mut s = start;
        while s < end {
            let gi = s / self.group_pages;
            let group_end = ((gi as u64 + 1) * self.group_pages as u64).min(end as u64) as u32;
            let delta = f(&mut self.groups[gi as usize], s, group_end);
            self.entries = (self.entries as i64 + delta) as u64;
            s = group_end;
        }
        self.peak_entries = self.peak_entries.max(self.entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(l: &TrimList, n: u32) -> Vec<u32> {
        (0..n).filter(|&p| l.contains(p)).collect()
    }

    #[test]
    fn ranges_split_at_group_boundaries_and_coalesce() {
        let mut l = TrimList::new(100, 10);
        l.insert(5, 25);
        assert_eq!(l.entries(), 3, "5..10, 10..20, 20..25");
        assert_eq!(listed(&l, 100), (5..25).collect::<Vec<_>>());
        l.insert(25, 27);
        l.insert(3, 5);
        assert_eq!(l.entries(), 3, "adjacent ranges coalesce");
        assert_eq!(listed(&l, 100), (3..27).collect::<Vec<_>>());
        l.insert(28, 29);
        assert_eq!(l.entries(), 4);
    }

    #[test]
    fn removal_splits_ranges() {
        let mut l = TrimList::new(64, 1);
        l.insert(0, 64);
        l.remove(10, 12);
        assert_eq!(l.entries(), 2);
        assert!(l.contains(9) && !l.contains(10) && !l.contains(11) && l.contains(12));
        l.remove(0, 64);
        assert!(l.is_empty());
        assert_eq!(l.peak_entries(), 2);
        l.reset_peak();
        assert_eq!(l.peak_entries(), 0);
    }

    #[test]
    fn matches_a_bitmap_on_random_operations() {
        let mut rng = crate::rng::SimRng::new(3);
        let mut l = TrimList::new(300, 7);
        let mut bits = vec![false; 300];
        for _ in 0..2000 {
            let s = rng.below(300) as u32;
            let e = (s + 1 + rng.below(40) as u32).min(300);
            let on = rng.below(2) == 0;
            if on {
                l.insert(s, e);
            } else {
                l.remove(s, e);
            }
            bits[s as usize..e as usize].fill(on);
            for p in 0..300 {
                assert_eq!(l.contains(p), bits[p as usize], "page {p}");
            }
        }
        let runs = l.groups.iter().flatten().count() as u64;
        assert_eq!(runs, l.entries());
        for g in &l.groups {
            for w in g.windows(2) {
                assert!(w[0].1 < w[1].0, "sorted, disjoint, non-adjacent: {g:?}");
            }
        }
    }
}
