//! The heap-based adaptive replacement of Chang et al. (COFTL, Section
//! III), one mechanism for its two users: COFTL's data cache
//! ([`crate::ftl::coftl::cache`], slots of one virtual page) and the write
//! buffer's `cache.policy = "heap"` ([`super::buffer`], slots of one page
//! or mapping unit). The users keep what a slot holds; this keeps how
//! valuable it is and which to give up.
//!
//! Each slot counts its accesses (`cnt`) and keeps the time of the last one
//! (`t_last`); its value at time `t` is `cnt / (t − t_last)`, frequency over
//! recency. Clean and dirty slots sit in two binary min-heaps on that
//! value. On replacement the clean root is given up when its value is below
//! α × the dirty root's value, else the dirty root is (written back first):
//! a dirty eviction costs a program where a clean one costs at most a later
//! read, so α (program time / read time by default: [`derived_alpha`])
//! weighs the two. A slot may also be in neither heap while keeping its
//! counts (the write buffer's pages being destaged: neither clean nor
//! dirty, and not to be given up).
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

use crate::config::Config;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

const NIL: u32 = u32::MAX;
/// `Entry::heap` of a slot in neither heap.
const OUT: u8 = 2;

/// The α the paper sets: the time to write a page (program and transfer)
/// over the time to read one, from `cfg`'s timing. A page set's planes work
/// in parallel, so the ratio is the same for COFTL's virtual pages.
pub fn derived_alpha(cfg: &Config) -> f64 {
    let transfer_ns = cfg.timing.bus_ns_per_byte * cfg.geometry.page_size as f64;
    (cfg.timing.program_us * 1e3 + transfer_ns) / (cfg.timing.read_us * 1e3 + transfer_ns).max(1.0)
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Entry {
    cnt: u64,
    t_last: SimTime,
    /// Index in its heap (NIL when in none).
    pos: u32,
    /// 0: clean heap, 1: dirty heap, [`OUT`]: neither.
    heap: u8,
}

const EMPTY: Entry = Entry { cnt: 0, t_last: SimTime::ZERO, pos: NIL, heap: OUT };

/// The clean and dirty min-heaps over slots `0..n` and their counts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ValueHeaps {
    entries: Vec<Entry>,
    /// Min-heaps of slot numbers: clean (0) and dirty (1).
    heaps: [Vec<u32>; 2],
    alpha: f64,
}

impl ValueHeaps {
    pub fn new(slots: u32, alpha: f64) -> ValueHeaps {
        ValueHeaps { entries: vec![EMPTY; slots as usize], heaps: [Vec::new(), Vec::new()], alpha }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The slots of the clean or the dirty heap, in heap order.
    pub fn slots(&self, dirty: bool) -> &[u32] {
        &self.heaps[dirty as usize]
    }

    /// Whether `slot` is in the dirty heap.
    pub fn is_dirty(&self, slot: u32) -> bool {
        self.entries[slot as usize].heap == 1
    }

    /// Whether `slot` is in either heap.
    pub fn is_listed(&self, slot: u32) -> bool {
        self.entries[slot as usize].heap != OUT
    }

    /// `cnt / (t − t_last)`, for tests and the α rule.
    pub fn value(&self, slot: u32, t: SimTime) -> f64 {
        let e = &self.entries[slot as usize];
        e.cnt as f64 / (t.0.saturating_sub(e.t_last.0) + 1) as f64
    }

    /// Whether slot `a`'s value at `t` is below `b`'s (ties: older, then lower slot).
    fn less(&self, a: u32, b: u32, t: SimTime) -> bool {
        let (x, y) = (&self.entries[a as usize], &self.entries[b as usize]);
        let age = |e: &Entry| (t.0.saturating_sub(e.t_last.0) + 1) as u128;
        let (l, r) = (x.cnt as u128 * age(y), y.cnt as u128 * age(x));
        l < r || (l == r && (x.t_last, a) < (y.t_last, b))
    }

    fn place(&mut self, h: usize, i: usize, slot: u32) {
        self.heaps[h][i] = slot;
        self.entries[slot as usize].pos = i as u32;
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

    /// Puts an unlisted slot into the clean or dirty heap, counts kept.
    pub fn push(&mut self, slot: u32, dirty: bool, t: SimTime) {
        debug_assert!(!self.is_listed(slot), "slot {slot} is in a heap already");
        let h = dirty as usize;
        self.entries[slot as usize].heap = h as u8;
        self.heaps[h].push(slot);
        let i = self.heaps[h].len() - 1;
        self.sift_up(h, i, t);
    }

    /// Takes a slot out of its heap (if in one), counts kept.
    pub fn take_out(&mut self, slot: u32, t: SimTime) {
        let Entry { pos, heap, .. } = self.entries[slot as usize];
        if heap == OUT {
            return;
        }
        let h = heap as usize;
        let i = pos as usize;
        let last = self.heaps[h].pop().expect("a listed slot is in its heap");
        self.entries[slot as usize].pos = NIL;
        self.entries[slot as usize].heap = OUT;
        if last != slot {
            self.place(h, i, last);
            self.sift_down(h, i, t);
            let i = self.entries[last as usize].pos as usize;
            self.sift_up(h, i, t);
        }
    }

    /// A slot's first access at `t`: counted once, into the clean or dirty heap.
    pub fn insert(&mut self, slot: u32, dirty: bool, t: SimTime) {
        self.take_out(slot, t);
        self.entries[slot as usize] = Entry { cnt: 1, t_last: t, ..EMPTY };
        self.push(slot, dirty, t);
    }

    /// An access at `t`: counts it and re-sifts the slot (if in a heap).
    pub fn touch(&mut self, slot: u32, t: SimTime) {
        let heap = self.entries[slot as usize].heap;
        self.take_out(slot, t);
        let e = &mut self.entries[slot as usize];
        e.cnt += 1;
        e.t_last = t;
        if heap != OUT {
            self.push(slot, heap == 1, t);
        }
    }

    /// Moves a slot into the clean or dirty heap (from the other, or from none).
    pub fn set_dirty(&mut self, slot: u32, dirty: bool, t: SimTime) {
        let heap = self.entries[slot as usize].heap;
        if heap != dirty as u8 {
            self.take_out(slot, t);
            self.push(slot, dirty, t);
        }
    }

    /// Forgets a slot (freed): out of its heap, counts cleared.
    pub fn remove(&mut self, slot: u32, t: SimTime) {
        self.take_out(slot, t);
        self.entries[slot as usize] = EMPTY;
    }

    /// Re-orders both heaps by the values at `t` (Floyd's heapify).
    pub fn reorder(&mut self, t: SimTime) {
        self.reorder_heap(0, t);
        self.reorder_heap(1, t);
    }

    fn reorder_heap(&mut self, h: usize, t: SimTime) {
        for i in (0..self.heaps[h].len() / 2).rev() {
            self.sift_down(h, i, t);
        }
    }

    /// The α rule at `t`: the clean root if its value is below α × the
    /// dirty root's, else the dirty root, as (slot, dirty); `None` when
    /// both heaps are empty.
    pub fn victim(&mut self, t: SimTime) -> Option<(u32, bool)> {
        self.reorder(t);
        match (self.heaps[0].first().copied(), self.heaps[1].first().copied()) {
            (None, None) => None,
            (Some(c), None) => Some((c, false)),
            (None, Some(d)) => Some((d, true)),
            (Some(c), Some(d)) => {
                let clean_first = self.value(c, t) < self.alpha * self.value(d, t);
                Some(if clean_first { (c, false) } else { (d, true) })
            }
        }
    }

    /// Up to `n` slots of the clean or dirty heap of lowest value at `t`,
    /// lowest first (the first is that heap's root after re-ordering).
    pub fn lowest(&mut self, dirty: bool, n: usize, t: SimTime) -> Vec<u32> {
        let h = dirty as usize;
        self.reorder_heap(h, t);
        if n <= 1 {
            return self.heaps[h].first().copied().into_iter().take(n).collect();
        }
        let order = |a: &u32, b: &u32| {
            if self.less(*a, *b, t) {
                std::cmp::Ordering::Less
            } else if a == b {
                std::cmp::Ordering::Equal
            } else {
                std::cmp::Ordering::Greater
            }
        };
        let mut v = self.heaps[h].clone();
        if v.len() > n {
            v.select_nth_unstable_by(n - 1, order);
            v.truncate(n);
        }
        v.sort_unstable_by(order);
        v
    }

    /// Checks positions, and heap order at `t` if given (the heaps are
    /// ordered as of their last change or re-ordering).
    pub fn check(&self, t: Option<SimTime>) -> Result<(), String> {
        for h in 0..2 {
            for (i, &s) in self.heaps[h].iter().enumerate() {
                let e = &self.entries[s as usize];
                if e.pos as usize != i || e.heap as usize != h {
                    return Err(format!("slot {s} misplaced in heap {h}"));
                }
                if i > 0 && t.is_some_and(|t| self.less(s, self.heaps[h][(i - 1) / 2], t)) {
                    return Err(format!("heap {h} out of order at {i} (time {t:?})"));
                }
            }
        }
        let listed = self.entries.iter().filter(|e| e.heap != OUT).count();
        if listed != self.heaps[0].len() + self.heaps[1].len() {
            return Err(format!(
                "{listed} slots claim a heap; the heaps hold {}",
                self.heaps[0].len() + self.heaps[1].len()
            ));
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
    fn lowest_lists_a_heap_in_value_order_at_the_time_given() {
        let mut h = ValueHeaps::new(8, 1.0);
        // Slot s: s + 1 accesses, the last at 10 s ns.
        for s in 0..6u32 {
            h.insert(s, true, t(0));
            for _ in 0..s {
                h.touch(s, t(10 * s as u64));
            }
        }
        h.insert(6, false, t(0));
        // At t = 100: values (s+1)/(101 − 10 s): 1/101, 2/91, 3/81, 4/71, 5/61, 6/51.
        assert_eq!(h.lowest(true, 3, t(100)), vec![0, 1, 2]);
        assert_eq!(h.lowest(true, 1, t(100)), vec![0]);
        assert_eq!(h.lowest(true, 10, t(100)), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(h.lowest(false, 2, t(100)), vec![6]);
        h.check(Some(t(100))).unwrap();
    }

    #[test]
    fn a_slot_taken_out_keeps_its_counts_and_is_never_the_victim() {
        let mut h = ValueHeaps::new(4, 1.0);
        h.insert(0, true, t(0));
        h.insert(1, true, t(50));
        h.take_out(0, t(60));
        assert!(!h.is_listed(0));
        assert_eq!(h.victim(t(100)), Some((1, true)));
        h.touch(0, t(70)); // counted while out, not listed
        assert!(!h.is_listed(0));
        h.push(0, false, t(80));
        assert_eq!(h.value(0, t(80)), 2.0 / 11.0);
        h.remove(0, t(90));
        assert!(!h.is_listed(0) && h.value(0, t(90)) == 0.0);
        h.check(Some(t(100))).unwrap();
    }
}
