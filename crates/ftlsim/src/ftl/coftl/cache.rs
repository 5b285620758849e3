//! COFTL's heap-based adaptive data cache (Chang et al., Section III).
//!
//! A slot holds one virtual page: the sectors written or read into it (a
//! mask over the virtual page's sectors, so partial pages need no read) and,
//! with payloads, their bytes. Which slot to give up is decided by the
//! clean and dirty min-heaps on cnt / (t_now − t_last) and the α rule of
//! [`crate::controller::heap`], the mechanism the controller's write buffer
//! also uses under `cache.policy = "heap"`: this module keeps what the slots
//! hold, that one their values.
//!
//! Why COFTL keeps a cache of its own rather than being the controller
//! buffer with the heap policy: its slots are virtual pages (a page set
//! across channels, read and written whole), the buffer's are pages or
//! mapping units; it caches reads smaller than a virtual page clean and
//! lets whole-virtual-page writes bypass, where the buffer holds writes
//! only; and it writes a dirty victim back when replacing it, where the
//! buffer destages in the background. Folding those into the buffer would
//! change every COFTL result (and the paper's Figure 8) for no gain in
//! fidelity; sharing the replacement mechanism keeps the rule in one place.

use crate::controller::buffer::SectorMask;
use crate::controller::heap::ValueHeaps;
use crate::controller::index::SlotIndex;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

const NIL: u32 = u32::MAX;

/// The data cache's counters (the report's `coftl.cache`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Host virtual-page accesses served by the cache (reads wholly held,
    /// and writes absorbed by a cached virtual page).
    pub hits: u64,
    pub misses: u64,
    /// Whole-virtual-page writes sent past the cache to flash.
    pub bypassed: u64,
    /// Dirty virtual pages written to flash (evictions and FLUSH).
    pub write_backs: u64,
    pub clean_evictions: u64,
    pub dirty_evictions: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Slot {
    vpn: u32,
    mask: SectorMask,
}

/// The cache's bookkeeping; no timing and no flash here (the FTL drives it).
#[derive(Serialize, Deserialize)]
pub struct AdaptiveCache {
    slots: Vec<Slot>,
    index: SlotIndex,
    free: Vec<u32>,
    /// Values and the α rule; a slot in use is in its clean or dirty heap.
    heaps: ValueHeaps,
    data: Vec<u8>,
    vpage_bytes: usize,
    pub stats: CacheStats,
}

/// What a replacement chose: the slot and whether it is dirty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub slot: u32,
    pub vpn: u32,
    pub dirty: bool,
}

impl AdaptiveCache {
    pub fn new(slots: u32, vpage_bytes: usize, alpha: f64, payloads: bool) -> AdaptiveCache {
        AdaptiveCache {
            slots: vec![Slot { vpn: NIL, mask: 0 }; slots as usize],
            index: SlotIndex::with_capacity(slots as usize),
            free: (0..slots).rev().collect(),
            heaps: ValueHeaps::new(slots, alpha),
            data: if payloads { vec![0; slots as usize * vpage_bytes] } else { Vec::new() },
            vpage_bytes,
            stats: CacheStats::default(),
        }
    }

    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    pub fn has_room(&self) -> bool {
        !self.free.is_empty()
    }

    pub fn lookup(&self, vpn: u32) -> Option<u32> {
        self.index.get(vpn)
    }

    pub fn mask(&self, slot: u32) -> SectorMask {
        self.slots[slot as usize].mask
    }

    pub fn vpn(&self, slot: u32) -> u32 {
        self.slots[slot as usize].vpn
    }

    pub fn is_dirty(&self, slot: u32) -> bool {
        self.heaps.is_dirty(slot)
    }

    /// `cnt / (t − t_last)`, for tests and the α rule.
    pub fn value(&self, slot: u32, t: SimTime) -> f64 {
        self.heaps.value(slot, t)
    }

    /// An access at `t`: counts it.
    pub fn touch(&mut self, slot: u32, t: SimTime) {
        self.heaps.touch(slot, t);
    }

    /// Adds `vpn` in a free slot (the caller made room), clean or dirty,
    /// holding `mask`; counts as its first access.
    pub fn insert(&mut self, vpn: u32, mask: SectorMask, dirty: bool, t: SimTime) -> u32 {
        let slot = self.free.pop().expect("insert needs a free slot");
        self.slots[slot as usize] = Slot { vpn, mask };
        self.index.insert(vpn, slot);
        self.heaps.insert(slot, dirty, t);
        slot
    }

    /// Adds sectors to a cached page, making it dirty if `dirty`.
    pub fn add(&mut self, slot: u32, mask: SectorMask, dirty: bool) {
        self.slots[slot as usize].mask |= mask;
        if dirty {
            self.heaps.set_dirty(slot, true);
        }
    }

    /// The page is on flash now: it stays cached, clean.
    pub fn mark_clean(&mut self, slot: u32) {
        self.heaps.set_dirty(slot, false);
    }

    /// Clears sectors (trimmed); a slot left with none is freed.
    pub fn forget(&mut self, slot: u32, mask: SectorMask) {
        self.slots[slot as usize].mask &= !mask;
        if self.slots[slot as usize].mask == 0 {
            self.remove(slot);
        }
    }

    /// Drops a slot (evicted, superseded or emptied).
    pub fn remove(&mut self, slot: u32) {
        self.heaps.remove(slot);
        self.index.remove(self.slots[slot as usize].vpn);
        self.slots[slot as usize].vpn = NIL;
        self.slots[slot as usize].mask = 0;
        self.free.push(slot);
    }

    /// The α rule at `t`: the clean root if its value is below α × the
    /// dirty root's, else the dirty root; `None` when the cache is empty.
    pub fn victim(&self, t: SimTime) -> Option<Victim> {
        let (slot, dirty) = self.heaps.victim(t)?;
        Some(Victim { slot, vpn: self.slots[slot as usize].vpn, dirty })
    }

    /// Dirty slots, lowest virtual page first (FLUSH writes them back in
    /// address order, so a sequential run stays sequential).
    pub fn dirty_slots(&self) -> Vec<u32> {
        let mut v = self.heaps.slots(true);
        v.sort_by_key(|&s| self.slots[s as usize].vpn);
        v
    }

    /// Empties the cache (power cut): dirty data not yet on flash is lost.
    pub fn clear(&mut self) {
        let n = self.slots.len() as u32;
        *self = AdaptiveCache::new(n, self.vpage_bytes, self.heaps.alpha(), !self.data.is_empty());
    }

    pub fn page(&self, slot: u32) -> &[u8] {
        let at = slot as usize * self.vpage_bytes;
        &self.data[at..at + self.vpage_bytes]
    }

    pub fn page_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * self.vpage_bytes;
        &mut self.data[at..at + self.vpage_bytes]
    }

    /// Checks the heaps, that every slot in use is in one, and the index.
    pub fn check(&self) -> Result<(), String> {
        self.heaps.check()?;
        let listed = self.heaps.len(false) + self.heaps.len(true);
        if listed + self.free.len() != self.slots.len() {
            return Err("slots are neither free nor in a heap".into());
        }
        for (vpn, s) in self.index.iter() {
            if self.slots[s as usize].vpn != vpn {
                return Err(format!("index maps virtual page {vpn} to slot {s}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> SimTime {
        SimTime(ns)
    }

    #[test]
    fn heap_root_is_the_lowest_value_at_replacement_time() {
        let mut c = AdaptiveCache::new(4, 0, 1.0, false);
        // Page 1: three hits around t=0..20; page 2: one access at t=90.
        let a = c.insert(1, 1, false, t(0));
        c.touch(a, t(10));
        c.touch(a, t(20));
        let b = c.insert(2, 1, false, t(90));
        // At t=100: a = 3/81, b = 1/11 -> a is lower (evicted first).
        assert_eq!(c.victim(t(100)).unwrap().vpn, 1);
        c.check().unwrap();
        // At t=1000 the order flips: a = 3/981 < b = 1/911? 3*911 = 2733 > 981 -> b lower.
        assert_eq!(c.victim(t(1000)).unwrap().vpn, 2, "values age at different rates: re-ordered at replacement");
        c.check().unwrap();
        c.remove(b);
        assert_eq!(c.victim(t(1000)).unwrap().vpn, 1);
    }

    #[test]
    fn alpha_rule_prefers_clean_unless_it_is_worth_alpha_times_the_dirty() {
        // Clean page 1 and dirty page 2 with equal history: equal values.
        let build = |alpha: f64| {
            let mut c = AdaptiveCache::new(4, 0, alpha, false);
            c.insert(1, 1, false, t(0));
            c.insert(2, 1, true, t(0));
            c
        };
        // value(clean) = value(dirty) = v: clean goes iff v < alpha * v, i.e. alpha > 1.
        assert_eq!(build(2.0).victim(t(50)).unwrap(), Victim { slot: 0, vpn: 1, dirty: false });
        assert_eq!(build(1.0).victim(t(50)).unwrap(), Victim { slot: 1, vpn: 2, dirty: true });
        assert_eq!(build(0.5).victim(t(50)).unwrap().vpn, 2);
        // A clean page hit 5 times against a dirty one hit once: with alpha
        // 4 the clean one is still worth keeping (5v >= 4v), with 6 not.
        for (alpha, evicted) in [(4.0, 2), (6.0, 1)] {
            let mut c = AdaptiveCache::new(4, 0, alpha, false);
            let s = c.insert(1, 1, false, t(0));
            for _ in 0..4 {
                c.touch(s, t(0));
            }
            c.insert(2, 1, true, t(0));
            assert_eq!(c.victim(t(99)).unwrap().vpn, evicted, "alpha {alpha}");
        }
    }

    #[test]
    fn dirtying_moves_a_slot_between_heaps_and_forget_frees_it() {
        let mut c = AdaptiveCache::new(2, 0, 1.0, false);
        let s = c.insert(7, 0b11, false, t(0));
        c.add(s, 0b100, true);
        assert!(c.is_dirty(s) && c.mask(s) == 0b111);
        assert_eq!(c.dirty_slots(), vec![s]);
        c.mark_clean(s);
        assert!(c.dirty_slots().is_empty());
        c.forget(s, 0b011);
        assert_eq!(c.lookup(7), Some(s));
        c.forget(s, 0b100);
        assert_eq!(c.lookup(7), None);
        assert!(c.has_room());
        c.check().unwrap();
    }

    #[test]
    fn heaps_stay_ordered_under_random_operations() {
        let mut c = AdaptiveCache::new(16, 0, 2.0, false);
        let mut x = 12345u64;
        for step in 0..2000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let now = t(step * 10);
            let vpn = (x % 40) as u32;
            match c.lookup(vpn) {
                Some(s) if x % 5 == 0 => c.remove(s),
                Some(s) => {
                    c.touch(s, now);
                    c.add(s, 1, x % 3 == 0);
                }
                None => {
                    if !c.has_room() {
                        let v = c.victim(now).unwrap();
                        c.check().unwrap();
                        c.remove(v.slot);
                    }
                    c.insert(vpn, 1, x % 2 == 0, now);
                }
            }
        }
        c.check().unwrap();
    }
}
