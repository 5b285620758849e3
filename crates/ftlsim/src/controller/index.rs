//! Page number → slot of a cache (the write buffer's, COFTL's data cache).
//!
//! An open-addressing table with linear probing, at most a quarter full,
//! so a lookup reads one cache line nearly always and a removal's
//! backward shift seldom moves an entry (at most half full, the buffered
//! foundation run took 6,064 instructions a request against 6,018, and
//! callgrind's branch model mispredicted 35.2 branches a request against
//! 32.7: probe lengths are data-dependent). It exists instead of a
//! `HashMap` for [`SlotIndex::prefetch`]: a buffer of 16,384 slots has an
//! index larger than the CPU's nearest caches, and its lookups and the
//! removal of each evicted page were most of the buffer's time until their
//! entries could be fetched ahead (the key to remove is known one eviction
//! early, the key to look up a few commands early).

use serde::{Deserialize, Serialize};

/// `key << 32 | slot`; a key of `u32::MAX` marks an empty entry (no page
/// or virtual page number reaches it: they are below the drive's size).
const EMPTY: u64 = u64::MAX;

/// Entries kept per key at least: the table is at most a quarter full
/// (see the module's comment), from creation and as it grows.
const ENTRIES_PER_KEY: usize = 4;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SlotIndex {
    entries: Vec<u64>,
    /// log2 of `entries.len()`.
    bits: u32,
    len: usize,
}

impl SlotIndex {
    /// An index for up to `n` keys without growing.
    pub fn with_capacity(n: usize) -> SlotIndex {
        let bits = (ENTRIES_PER_KEY * n.max(4)).next_power_of_two().trailing_zeros();
        SlotIndex { entries: vec![EMPTY; 1 << bits], bits, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fibonacci hashing: the top bits of a multiply, so neighbouring keys
    /// land far apart.
    #[inline]
    fn home(&self, key: u32) -> usize {
        ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.entries.len() - 1
    }

    /// The entry holding `key`, or the empty one ending its probe.
    #[inline]
    fn find(&self, key: u32) -> (usize, bool) {
        let mut i = self.home(key);
        loop {
            let e = self.entries[i];
            if e == EMPTY {
                return (i, false);
            }
            if (e >> 32) as u32 == key {
                return (i, true);
            }
            i = (i + 1) & self.mask();
        }
    }

    /// The slot of `key`. An empty index answers without reading its table
    /// (a cache miss for a buffer nothing was written to yet).
    #[inline]
    pub fn get(&self, key: u32) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        match self.find(key) {
            (i, true) => Some(self.entries[i] as u32),
            _ => None,
        }
    }

    /// Maps `key` to `slot`; returns the slot it mapped to before.
    pub fn insert(&mut self, key: u32, slot: u32) -> Option<u32> {
        assert!(key != u32::MAX, "page number {key} is the index's empty mark");
        let (i, found) = self.find(key);
        let entry = (key as u64) << 32 | slot as u64;
        if found {
            let old = self.entries[i] as u32;
            self.entries[i] = entry;
            return Some(old);
        }
        self.entries[i] = entry;
        self.len += 1;
        if ENTRIES_PER_KEY * self.len > self.entries.len() {
            self.grow();
        }
        None
    }

    /// Forgets `key`; returns its slot. Later entries of the probe move
    /// back over the hole (no tombstones: probes stay short forever).
    pub fn remove(&mut self, key: u32) -> Option<u32> {
        let (mut hole, found) = self.find(key);
        if !found {
            return None;
        }
        let slot = self.entries[hole] as u32;
        self.len -= 1;
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let e = self.entries[j];
            if e == EMPTY {
                break;
            }
            // The entry at j may fill the hole unless its home lies
            // cyclically in (hole, j]: then the hole is not on its probe.
            let home = self.home((e >> 32) as u32);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.entries[hole] = e;
                hole = j;
            }
        }
        self.entries[hole] = EMPTY;
        Some(slot)
    }

    /// A hint that `key` is looked up, inserted or removed soon.
    #[inline]
    pub fn prefetch(&self, key: u32) {
        crate::mem::prefetch(&self.entries, self.home(key));
    }

    pub fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.len = 0;
    }

    /// (key, slot) pairs, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.entries.iter().filter(|&&e| e != EMPTY).map(|&e| ((e >> 32) as u32, e as u32))
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.entries);
        self.bits += 1;
        self.entries = vec![EMPTY; 1 << self.bits];
        self.len = 0;
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.insert((e >> 32) as u32, e as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Any sequence of inserts and removes, keys crowded into few
        /// homes so probes wrap and removals shift, agrees with a map.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec((any::<bool>(), 0u32..64, 0u32..1000), 0..400)) {
            let mut index = SlotIndex::with_capacity(4);
            let mut model = HashMap::new();
            for (insert, key, slot) in ops {
                // Keys spread over the whole u32 range too.
                let key = key.wrapping_mul(0x0101_0101) % (u32::MAX - 1);
                if insert {
                    prop_assert_eq!(index.insert(key, slot), model.insert(key, slot));
                } else {
                    prop_assert_eq!(index.remove(key), model.remove(&key));
                }
                prop_assert_eq!(index.len(), model.len());
                for (&k, &s) in &model {
                    prop_assert_eq!(index.get(k), Some(s));
                }
                let mut listed: Vec<_> = index.iter().collect();
                listed.sort();
                let mut expected: Vec<_> = model.iter().map(|(&k, &s)| (k, s)).collect();
                expected.sort();
                prop_assert_eq!(listed, expected);
            }
        }
    }

    #[test]
    fn removal_keeps_wrapped_probes_reachable() {
        // Keys sharing the last home wrap to the table's start; removing
        // the first must move the wrapped ones back.
        let mut index = SlotIndex::with_capacity(4);
        let last = index.entries.len() - 1;
        let keys: Vec<u32> = (0..u32::MAX).filter(|&k| index.home(k) == last).take(3).collect();
        for (s, &k) in keys.iter().enumerate() {
            index.insert(k, s as u32);
        }
        assert_eq!(index.remove(keys[0]), Some(0));
        assert_eq!(index.get(keys[1]), Some(1));
        assert_eq!(index.get(keys[2]), Some(2));
        assert_eq!(index.get(keys[0]), None);
    }
}
