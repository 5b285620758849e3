//! A least-recently-used set of sparse `u32` keys: the μ-Tree's page-granular
//! read and write caches (keys are flash pages and leaf keys, far too sparse
//! for the dense arrays of [`crate::ftl::cmt::MapCache`]).
//!
//! Recency is a counter, so eviction order never depends on hash order and
//! runs are deterministic.

use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub struct Lru {
    clock: u64,
    age: HashMap<u32, u64>,
    by_age: BTreeMap<u64, u32>,
}

impl Lru {
    pub fn len(&self) -> usize {
        self.age.len()
    }

    pub fn is_empty(&self) -> bool {
        self.age.is_empty()
    }

    pub fn contains(&self, key: u32) -> bool {
        self.age.contains_key(&key)
    }

    /// Makes `key` the most recently used, inserting it; returns whether it
    /// was present.
    pub fn touch(&mut self, key: u32) -> bool {
        self.clock += 1;
        let old = self.age.insert(key, self.clock);
        if let Some(old) = old {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.clock, key);
        old.is_some()
    }

    /// Makes `key` the most recently used only when present.
    pub fn hit(&mut self, key: u32) -> bool {
        self.contains(key) && self.touch(key)
    }

    pub fn remove(&mut self, key: u32) -> bool {
        match self.age.remove(&key) {
            Some(a) => {
                self.by_age.remove(&a);
                true
            }
            None => false,
        }
    }

    /// The least recently used key.
    pub fn oldest(&self) -> Option<u32> {
        self.by_age.values().next().copied()
    }

    /// Keeps at most `capacity` keys, dropping the least recently used.
    pub fn trim_to(&mut self, capacity: usize) {
        while self.len() > capacity {
            let Some(k) = self.oldest() else { break };
            self.remove(k);
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_age.values().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut l = Lru::default();
        for k in [5, 9, 7] {
            assert!(!l.touch(k));
        }
        assert!(l.hit(5));
        assert!(!l.hit(3));
        l.trim_to(2);
        assert!(!l.contains(9) && l.contains(5) && l.contains(7));
        assert_eq!(l.oldest(), Some(7));
    }
}
