//! COFTL's heap-based adaptive data cache (Chang et al., Section III).
//!
//! A slot holds one virtual page: the sectors written or read into it (a
//! mask over the virtual page's sectors, so partial pages need no read) and,
//! with payloads, their bytes. Each slot counts its accesses (`cnt`) and
//! keeps the time of the last one (`t_last`); its value at time `t` is
//! `cnt / (t − t_last)`, frequency over recency. Clean and dirty slots sit
//! in two binary min-heaps on that value. On replacement the clean root is
//! evicted (dropped) when its value is below α × the dirty root's value,
//! else the dirty root is (written back first): a dirty eviction costs a
//! page-set program where a clean one costs at most a later page-set read,
//! so α (program time / read time by default) weighs the two.
//!
//! Values change with time for every slot at once, and not in the same
//! order (a slot hit often long ago falls behind one hit once just now), so
//! a heap ordered at one time is not ordered at a later one. The heaps are
//! kept ordered as of the last change and re-ordered (Floyd's O(n) heapify)
//! at the time of each replacement, so the root compared is the true
//! minimum at that time. Values are compared exactly, as cross products in
//! 128-bit integers; `t − t_last` counts from 1 ns so a slot touched at the
//! replacement time has a finite value. Ties go to the slot touched
//! earlier, then the lower slot number, so runs are deterministic.

use crate::controller::buffer::{LpnHasher, SectorMask};
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

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

#[derive(Clone, Copy, Debug)]
struct Slot {
    vpn: u32,
    mask: SectorMask,
    dirty: bool,
    cnt: u64,
    t_last: SimTime,
    /// Index in its heap (NIL when free).
    pos: u32,
}

/// The cache's bookkeeping; no timing and no flash here (the FTL drives it).
pub struct AdaptiveCache {
    slots: Vec<Slot>,
    index: HashMap<u32, u32, BuildHasherDefault<LpnHasher>>,
    free: Vec<u32>,
    /// Min-heaps of slot numbers: clean (0) and dirty (1).
    heaps: [Vec<u32>; 2],
    alpha: f64,
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
        let empty = Slot { vpn: NIL, mask: 0, dirty: false, cnt: 0, t_last: SimTime::ZERO, pos: NIL };
        AdaptiveCache {
            slots: vec![empty; slots as usize],
            index: HashMap::with_capacity_and_hasher(slots as usize, Default::default()),
            free: (0..slots).rev().collect(),
            heaps: [Vec::new(), Vec::new()],
            alpha,
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
        if self.index.is_empty() { None } else { self.index.get(&vpn).copied() }
    }

    pub fn mask(&self, slot: u32) -> SectorMask {
        self.slots[slot as usize].mask
    }

    pub fn vpn(&self, slot: u32) -> u32 {
        self.slots[slot as usize].vpn
    }

    pub fn is_dirty(&self, slot: u32) -> bool {
        self.slots[slot as usize].dirty
    }

    /// `cnt / (t − t_last)`, for tests and the α rule.
    pub fn value(&self, slot: u32, t: SimTime) -> f64 {
        let s = &self.slots[slot as usize];
        s.cnt as f64 / (t.0.saturating_sub(s.t_last.0) + 1) as f64
    }

    /// Whether slot `a`'s value at `t` is below `b`'s (ties: older, then lower slot).
    fn less(&self, a: u32, b: u32, t: SimTime) -> bool {
        let (x, y) = (&self.slots[a as usize], &self.slots[b as usize]);
        let age = |s: &Slot| (t.0.saturating_sub(s.t_last.0) + 1) as u128;
        let (l, r) = (x.cnt as u128 * age(y), y.cnt as u128 * age(x));
        l < r || (l == r && (x.t_last, a) < (y.t_last, b))
    }

    fn heap_of(&self, slot: u32) -> usize {
        self.slots[slot as usize].dirty as usize
    }

    fn place(&mut self, h: usize, i: usize, slot: u32) {
        self.heaps[h][i] = slot;
        self.slots[slot as usize].pos = i as u32;
    }

    fn sift_up(&mut self, h: usize, mut i: usize, t: SimTime) {
        let s = self.heaps[h][i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heaps[h][parent];
            if !self.less(s, p, t) {
                break;
            }
            self.place(h, i, p);
            i = parent;
        }
        self.place(h, i, s);
    }

    fn sift_down(&mut self, h: usize, mut i: usize, t: SimTime) {
        let n = self.heaps[h].len();
        let s = self.heaps[h][i];
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            let mut best = s;
            for c in [l, r] {
                if c < n && self.less(self.heaps[h][c], best, t) {
                    m = c;
                    best = self.heaps[h][c];
                }
            }
            if m == i {
                break;
            }
            self.place(h, i, best);
            i = m;
        }
        self.place(h, i, s);
    }

    fn heap_push(&mut self, slot: u32, t: SimTime) {
        let h = self.heap_of(slot);
        self.heaps[h].push(slot);
        let i = self.heaps[h].len() - 1;
        self.sift_up(h, i, t);
    }

    fn heap_remove(&mut self, slot: u32, t: SimTime) {
        let h = self.heap_of(slot);
        let i = self.slots[slot as usize].pos as usize;
        let last = self.heaps[h].pop().expect("a listed slot is in its heap");
        self.slots[slot as usize].pos = NIL;
        if last != slot {
            self.place(h, i, last);
            self.sift_down(h, i, t);
            let i = self.slots[last as usize].pos as usize;
            self.sift_up(h, i, t);
        }
    }

    /// Re-orders both heaps by the values at `t` (Floyd's heapify).
    pub fn reorder(&mut self, t: SimTime) {
        for h in 0..2 {
            for i in (0..self.heaps[h].len() / 2).rev() {
                self.sift_down(h, i, t);
            }
        }
    }

    /// An access at `t`: counts it and re-sifts the slot.
    pub fn touch(&mut self, slot: u32, t: SimTime) {
        self.heap_remove(slot, t);
        let s = &mut self.slots[slot as usize];
        s.cnt += 1;
        s.t_last = t;
        self.heap_push(slot, t);
    }

    /// Adds `vpn` in a free slot (the caller made room), clean or dirty,
    /// holding `mask`; counts as its first access.
    pub fn insert(&mut self, vpn: u32, mask: SectorMask, dirty: bool, t: SimTime) -> u32 {
        let slot = self.free.pop().expect("insert needs a free slot");
        self.slots[slot as usize] = Slot { vpn, mask, dirty, cnt: 1, t_last: t, pos: NIL };
        self.index.insert(vpn, slot);
        self.heap_push(slot, t);
        slot
    }

    /// Adds sectors to a cached page, making it dirty if `dirty`.
    pub fn add(&mut self, slot: u32, mask: SectorMask, dirty: bool, t: SimTime) {
        self.slots[slot as usize].mask |= mask;
        if dirty && !self.slots[slot as usize].dirty {
            self.heap_remove(slot, t);
            self.slots[slot as usize].dirty = true;
            self.heap_push(slot, t);
        }
    }

    /// The page is on flash now: it stays cached, clean.
    pub fn mark_clean(&mut self, slot: u32, t: SimTime) {
        if self.slots[slot as usize].dirty {
            self.heap_remove(slot, t);
            self.slots[slot as usize].dirty = false;
            self.heap_push(slot, t);
        }
    }

    /// Clears sectors (trimmed); a slot left with none is freed.
    pub fn forget(&mut self, slot: u32, mask: SectorMask, t: SimTime) {
        self.slots[slot as usize].mask &= !mask;
        if self.slots[slot as usize].mask == 0 {
            self.remove(slot, t);
        }
    }

    /// Drops a slot (evicted, superseded or emptied).
    pub fn remove(&mut self, slot: u32, t: SimTime) {
        self.heap_remove(slot, t);
        self.index.remove(&self.slots[slot as usize].vpn);
        self.slots[slot as usize].vpn = NIL;
        self.slots[slot as usize].mask = 0;
        self.free.push(slot);
    }

    /// The α rule at `t`: the clean root if its value is below α × the
    /// dirty root's, else the dirty root; `None` when the cache is empty.
    pub fn victim(&mut self, t: SimTime) -> Option<Victim> {
        self.reorder(t);
        let pick =
            |s: u32, c: &Self| Victim { slot: s, vpn: c.slots[s as usize].vpn, dirty: c.slots[s as usize].dirty };
        match (self.heaps[0].first().copied(), self.heaps[1].first().copied()) {
            (None, None) => None,
            (Some(c), None) => Some(pick(c, self)),
            (None, Some(d)) => Some(pick(d, self)),
            (Some(c), Some(d)) => {
                let clean_first = self.value(c, t) < self.alpha * self.value(d, t);
                Some(pick(if clean_first { c } else { d }, self))
            }
        }
    }

    /// Dirty slots, lowest virtual page first (FLUSH writes them back in
    /// address order, so a sequential run stays sequential).
    pub fn dirty_slots(&self) -> Vec<u32> {
        let mut v = self.heaps[1].clone();
        v.sort_by_key(|&s| self.slots[s as usize].vpn);
        v
    }

    /// Empties the cache (power cut): dirty data not yet on flash is lost.
    pub fn clear(&mut self) {
        let n = self.slots.len() as u32;
        *self = AdaptiveCache::new(n, self.vpage_bytes, self.alpha, !self.data.is_empty());
    }

    pub fn page(&self, slot: u32) -> &[u8] {
        let at = slot as usize * self.vpage_bytes;
        &self.data[at..at + self.vpage_bytes]
    }

    pub fn page_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * self.vpage_bytes;
        &mut self.data[at..at + self.vpage_bytes]
    }

    /// Checks positions and the index, and heap order at `t` if given
    /// (the heaps are ordered as of their last change or re-ordering).
    pub fn check(&self, t: Option<SimTime>) -> Result<(), String> {
        for h in 0..2 {
            for (i, &s) in self.heaps[h].iter().enumerate() {
                if self.slots[s as usize].pos as usize != i || self.heap_of(s) != h {
                    return Err(format!("slot {s} misplaced in heap {h}"));
                }
                if i > 0 && t.is_some_and(|t| self.less(s, self.heaps[h][(i - 1) / 2], t)) {
                    return Err(format!("heap {h} out of order at {i} (time {t:?})"));
                }
            }
        }
        if self.heaps[0].len() + self.heaps[1].len() + self.free.len() != self.slots.len() {
            return Err("slots are neither free nor in a heap".into());
        }
        for (&vpn, &s) in &self.index {
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
        c.check(Some(t(100))).unwrap();
        // At t=1000 the order flips: a = 3/981 < b = 1/911? 3*911 = 2733 > 981 -> b lower.
        assert_eq!(c.victim(t(1000)).unwrap().vpn, 2, "values age at different rates: re-ordered at replacement");
        c.check(Some(t(1000))).unwrap();
        c.remove(b, t(1000));
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
        c.add(s, 0b100, true, t(5));
        assert!(c.is_dirty(s) && c.mask(s) == 0b111);
        assert_eq!(c.dirty_slots(), vec![s]);
        c.mark_clean(s, t(6));
        assert!(c.dirty_slots().is_empty());
        c.forget(s, 0b011, t(7));
        assert_eq!(c.lookup(7), Some(s));
        c.forget(s, 0b100, t(7));
        assert_eq!(c.lookup(7), None);
        assert!(c.has_room());
        c.check(Some(t(7))).unwrap();
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
                Some(s) if x % 5 == 0 => c.remove(s, now),
                Some(s) => {
                    c.touch(s, now);
                    c.add(s, 1, x % 3 == 0, now);
                }
                None => {
                    if !c.has_room() {
                        let v = c.victim(now).unwrap();
                        c.check(Some(now)).unwrap();
                        c.remove(v.slot, now);
                    }
                    c.insert(vpn, 1, x % 2 == 0, now);
                }
            }
        }
        c.reorder(t(20_000));
        c.check(Some(t(20_000))).unwrap();
    }
}
