//! Least-recently-used sets of `u32` keys.
//!
//! - [`DenseLru`]: keys are small dense ids (the μ-Tree's node and tree-page
//!   slots), threaded on an intrusive doubly linked list over arrays indexed
//!   by key: O(1) everything, no hashing, no allocation once the arrays have
//!   grown to the largest id.
//! - [`Lru`]: keys are sparse (COFTL's virtual blocks); recency is a counter,
//!   so eviction order never depends on hash order and runs are
//!   deterministic.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Default, Serialize, Deserialize)]
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

const NIL: u32 = u32::MAX;
/// `links[id][0]` of an id not in the set.
const OUT: u32 = u32::MAX - 1;

/// An LRU set of dense ids: `head` is the most, `tail` the least recently used.
/// An id's links and membership share one 8-byte entry (one cache line).
#[derive(Default, Serialize, Deserialize)]
pub struct DenseLru {
    /// Per id: `[prev, next]` towards head and tail ([`NIL`] at the ends),
    /// or `[OUT, _]` when the id is not in the set.
    links: Vec<[u32; 2]>,
    head: u32,
    tail: u32,
    len: usize,
}

impl DenseLru {
    pub fn new() -> DenseLru {
        DenseLru { head: NIL, tail: NIL, ..Default::default() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Starts loading `id`'s entry, for a [`contains`](Self::contains) or
    /// [`hit`](Self::hit) soon (a random id's is a cache miss).
    #[inline]
    pub fn prefetch(&self, id: u32) {
        crate::mem::prefetch(&self.links, id as usize);
    }

    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.links.get(id as usize).is_some_and(|l| l[0] != OUT)
    }

    fn unlink(&mut self, id: u32) {
        let [p, n] = self.links[id as usize];
        match p {
            NIL => self.head = n,
            p => self.links[p as usize][1] = n,
        }
        match n {
            NIL => self.tail = p,
            n => self.links[n as usize][0] = p,
        }
    }

    fn push_head(&mut self, id: u32) {
        self.links[id as usize] = [NIL, self.head];
        match self.head {
            NIL => self.tail = id,
            h => self.links[h as usize][0] = id,
        }
        self.head = id;
    }

    /// Makes `id` the most recently used, inserting it; returns whether it
    /// was present.
    pub fn touch(&mut self, id: u32) -> bool {
        debug_assert!(id < OUT, "id {id} out of range");
        let i = id as usize;
        if i >= self.links.len() {
            let len = (i + 1).max(self.links.len() * 2);
            self.links.resize(len, [OUT, NIL]);
        }
        let present = self.links[i][0] != OUT;
        if present {
            if self.head == id {
                return true;
            }
            self.unlink(id);
        } else {
            self.len += 1;
        }
        self.push_head(id);
        present
    }

    /// Makes `id` the most recently used only when present.
    pub fn hit(&mut self, id: u32) -> bool {
        self.contains(id) && self.touch(id)
    }

    pub fn remove(&mut self, id: u32) -> bool {
        if !self.contains(id) {
            return false;
        }
        self.unlink(id);
        self.links[id as usize][0] = OUT;
        self.len -= 1;
        true
    }

    /// The least recently used id.
    pub fn oldest(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// Keeps at most `capacity` ids, dropping the least recently used.
    pub fn trim_to(&mut self, capacity: usize) {
        while self.len > capacity {
            self.remove(self.tail);
        }
    }

    /// Ids from the least to the most recently used.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.oldest(), |&id| Some(self.links[id as usize][0]).filter(|&p| p != NIL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_evicts_least_recently_used_like_the_sparse_one() {
        let (mut d, mut s) = (DenseLru::new(), Lru::default());
        // The same pseudo-random script on both: they agree at every step.
        let mut x = 7u32;
        for step in 0..5000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let id = (x >> 16) % 40;
            match step % 5 {
                0 | 1 => assert_eq!(d.touch(id), s.touch(id)),
                2 => assert_eq!(d.hit(id), s.hit(id)),
                3 => assert_eq!(d.remove(id), s.remove(id)),
                _ => {
                    d.trim_to(12);
                    s.trim_to(12);
                }
            }
            assert_eq!((d.len(), d.oldest()), (s.len(), s.oldest()));
        }
        assert_eq!(d.keys().collect::<Vec<_>>(), s.keys().collect::<Vec<_>>());
        assert!(!d.is_empty());
    }

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
