//! The μ-Tree's leaves by their low keys, in RAM beside the tree: which leaf
//! covers a key, found in two short sorted arrays instead of a descent
//! through the inner nodes.
//!
//! A simulator's shortcut, not part of the modelled controller: lookups
//! still visit (and pay for) every node on the path, which the leaves'
//! parent links give. Why: a descent binary-searches one inner node per
//! level, each a few cache misses on a drive's worth of extents (a
//! quarter of a μ-FTL run's time went to them); here the search is one
//! line of `lo` behind `top`, which stays in cache. Leaves split, merge
//! and move keys about once per hundred commands, so keeping the arrays
//! sorted by moving their tails costs little.

use serde::{Deserialize, Serialize};

/// Leaves per sample of [`LeafIndex::top`]: one cache line of `lo`.
const STEP: usize = 16;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeafIndex {
    /// Every leaf's low key, ascending; the first is 0 (the first leaf
    /// covers from key 0 on).
    lo: Vec<u32>,
    /// The leaf (node index) of each low key.
    leaf: Vec<u32>,
    /// `lo[i * STEP]` for each `i`.
    top: Vec<u32>,
    /// Changes so far (leaves added, removed or relabelled): a [`Found`]
    /// of an earlier version may no longer hold.
    version: u64,
}

/// A leaf found: its node, and the keys it covers, `lo..hi`, as of the
/// index's `version` ([`LeafIndex::holds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    pub leaf: u32,
    pub lo: u32,
    pub hi: u64,
    version: u64,
}

impl Found {
    /// No leaf (a hint not yet set, a prefetch stage not yet filled): of
    /// no version, so it never holds.
    pub const NONE: Found = Found { leaf: u32::MAX, lo: 0, hi: 0, version: u64::MAX };
}

/// Beyond every key: where the last leaf's range ends.
pub const UNBOUNDED: u64 = 1 << 32;

impl LeafIndex {
    /// An index of one leaf covering every key.
    pub fn new(leaf: u32) -> LeafIndex {
        LeafIndex { lo: vec![0], leaf: vec![leaf], top: vec![0], version: 0 }
    }

    /// The position of the leaf covering `key`: the last low key `<= key`.
    #[inline]
    fn position(&self, key: u32) -> usize {
        let s = (self.top.partition_point(|&k| k <= key) - 1) * STEP;
        let seg = &self.lo[s..self.lo.len().min(s + STEP)];
        s + seg.partition_point(|&k| k <= key) - 1
    }

    /// The leaf covering `key`.
    #[inline]
    pub fn find(&self, key: u32) -> Found {
        let i = self.position(key);
        let hi = self.lo.get(i + 1).map_or(UNBOUNDED, |&k| k as u64);
        Found { leaf: self.leaf[i], lo: self.lo[i], hi, version: self.version }
    }

    /// Whether `f` still says which leaf covers the keys of its range: no
    /// leaf has been added, removed or relabelled since it was found.
    #[inline]
    pub fn holds(&self, f: &Found) -> bool {
        f.version == self.version
    }

    /// A new leaf covers from `lo` (split off the leaf that did).
    pub fn insert(&mut self, lo: u32, leaf: u32) {
        let i = self.lo.partition_point(|&k| k < lo);
        debug_assert!(self.lo.get(i) != Some(&lo), "two leaves from key {lo}");
        self.lo.insert(i, lo);
        self.leaf.insert(i, leaf);
        self.resample(i);
        self.version += 1;
    }

    /// The leaf covering from `lo` left the tree (merged into the one before).
    pub fn remove(&mut self, lo: u32) {
        let i = self.exact(lo);
        self.lo.remove(i);
        self.leaf.remove(i);
        self.resample(i);
        self.version += 1;
    }

    /// The leaf covering from `old` now covers from `new` (it lent keys to
    /// or borrowed keys from the leaf before it), staying between its
    /// neighbours.
    pub fn relabel(&mut self, old: u32, new: u32) {
        let i = self.exact(old);
        debug_assert!(i > 0 && self.lo[i - 1] < new && self.lo.get(i + 1).is_none_or(|&k| new < k));
        self.lo[i] = new;
        if i % STEP == 0 {
            self.top[i / STEP] = new;
        }
        self.version += 1;
    }

    fn exact(&self, lo: u32) -> usize {
        let i = self.position(lo);
        debug_assert_eq!(self.lo[i], lo, "no leaf covers from key {lo}");
        i
    }

    /// Samples again from position `i` on (the entries there moved).
    fn resample(&mut self, i: usize) {
        self.top.truncate(i / STEP);
        let from = self.top.len() * STEP;
        self.top.extend(self.lo[from..].iter().step_by(STEP));
    }

    /// The leaves and their low keys, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.lo.iter().copied().zip(self.leaf.iter().copied())
    }

    /// Whether the samples match the low keys they sample.
    pub fn sampled(&self) -> bool {
        self.top.iter().copied().eq(self.lo.iter().step_by(STEP).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Against a sorted map of low keys: splits, merges and relabels
        /// in any order leave every key found in the leaf whose range holds it.
        #[test]
        fn finds_what_a_sorted_map_finds(ops in prop::collection::vec((0u8..3, 1u32..5_000, any::<u16>()), 1..400)) {
            let mut index = LeafIndex::new(0);
            let mut model = BTreeMap::from([(0u32, 0u32)]);
            let mut next_leaf = 1;
            for (op, key, pick) in ops {
                match op {
                    0 if !model.contains_key(&key) => {
                        index.insert(key, next_leaf);
                        model.insert(key, next_leaf);
                        next_leaf += 1;
                    }
                    1 if model.len() > 1 => {
                        let lo = *model.keys().nth(1 + pick as usize % (model.len() - 1)).unwrap();
                        index.remove(lo);
                        model.remove(&lo);
                    }
                    2 if model.len() > 1 => {
                        let i = 1 + pick as usize % (model.len() - 1);
                        let keys: Vec<u32> = model.keys().copied().collect();
                        let (before, old) = (keys[i - 1], keys[i]);
                        let after = keys.get(i + 1).copied().unwrap_or(u32::MAX);
                        let new = before + 1 + key % (after - before - 1).max(1);
                        if new < after && new != old {
                            index.relabel(old, new);
                            let leaf = model.remove(&old).unwrap();
                            model.insert(new, leaf);
                        }
                    }
                    _ => {}
                }
                prop_assert!(index.sampled());
            }
            prop_assert!(index.entries().eq(model.iter().map(|(&k, &v)| (k, v))));
            for key in (0..5_200).step_by(7) {
                let (&lo, &leaf) = model.range(..=key).next_back().unwrap();
                let hi = model.range(key + 1..).next().map_or(UNBOUNDED, |(&k, _)| k as u64);
                let f = index.find(key);
                prop_assert_eq!((f.leaf, f.lo, f.hi), (leaf, lo, hi));
            }
        }
    }
}
