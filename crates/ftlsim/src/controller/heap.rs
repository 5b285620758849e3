//! The heap-based adaptive replacement of Chang et al. (COFTL, Section
//! III), one mechanism for its two users: COFTL's data cache
//! ([`crate::ftl::coftl::cache`], slots of one virtual page) and the write
//! buffer's `cache.policy = "heap"` ([`super::buffer`], slots of one page
//! or mapping unit). The users keep what a slot holds; this keeps how
//! valuable it is and which to give up.
//!
//! Each slot counts its accesses (`cnt`) and keeps the time of the last one
//! (`t_last`); its value at time `t` is `cnt / (t − t_last)`, frequency over
//! recency. Clean and dirty slots sit in two min-heaps on that
//! value. On replacement the clean root is given up when its value is below
//! α × the dirty root's value, else the dirty root is (written back first):
//! a dirty eviction costs a program where a clean one costs at most a later
//! read, so α (program time / read time by default: [`alpha_or_derived`])
//! weighs the two. A slot may also be in neither heap while keeping its
//! counts (the write buffer's pages being destaged: neither clean nor
//! dirty, and not to be given up).
//!
//! Values change with time for every slot at once, and not in the same
//! order (a slot hit often long ago falls behind one hit once just now), so
//! no order by value holds at every time: a binary heap ordered at one time
//! must be re-ordered (O(n)) before each replacement. Between slots with
//! the same count, though, the order never changes (the one accessed
//! earlier is worth less). So each "heap" keeps its slots grouped by count,
//! each group ordered by last access; its root at time `t`, the true
//! minimum at `t`, is the least of the groups' first slots compared at `t`.
//! That costs one comparison per distinct count in the heap, few in
//! practice (most pages are accessed a handful of times), against n for a
//! re-ordering. Values are compared exactly, as cross products in 128-bit
//! integers; `t − t_last` counts from 1 ns so a slot touched at the
//! replacement time has a finite value. Ties go to the slot touched
//! earlier, then the lower slot number, so runs are deterministic.

use crate::config::Config;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// `Entry::heap` of a slot in neither heap.
const OUT: u8 = 2;

/// The α to use: `configured` if set (> 0), else the one the paper sets,
/// the time to write a page (program and transfer) over the time to read
/// one, from `cfg`'s timing. A page set's planes work in parallel, so the
/// ratio is the same for COFTL's virtual pages.
pub fn alpha_or_derived(configured: f64, cfg: &Config) -> f64 {
    if configured > 0.0 {
        return configured;
    }
    let transfer_ns = cfg.timing.bus_ns_per_byte * cfg.geometry.page_size as f64;
    (cfg.timing.program_us * 1e3 + transfer_ns) / (cfg.timing.read_us * 1e3 + transfer_ns).max(1.0)
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Entry {
    cnt: u64,
    t_last: SimTime,
    /// 0: clean heap, 1: dirty heap, [`OUT`]: neither.
    heap: u8,
}

const EMPTY: Entry = Entry { cnt: 0, t_last: SimTime::ZERO, heap: OUT };

/// One heap: its slots by access count, each count's by (last access, slot).
type Groups = BTreeMap<u64, BTreeSet<(SimTime, u32)>>;

/// The clean and dirty heaps over slots `0..n` and their counts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ValueHeaps {
    entries: Vec<Entry>,
    /// Clean (0) and dirty (1).
    heaps: [Groups; 2],
    lens: [usize; 2],
    alpha: f64,
}

impl ValueHeaps {
    pub fn new(slots: u32, alpha: f64) -> ValueHeaps {
        ValueHeaps { entries: vec![EMPTY; slots as usize], heaps: Default::default(), lens: [0, 0], alpha }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Slots in the clean or the dirty heap.
    pub fn len(&self, dirty: bool) -> usize {
        self.lens[dirty as usize]
    }

    /// The slots of the clean or dirty heap (by count, then last access).
    pub fn slots(&self, dirty: bool) -> Vec<u32> {
        self.heaps[dirty as usize].values().flat_map(|g| g.iter().map(|&(_, s)| s)).collect()
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

    fn order(&self, a: u32, b: u32, t: SimTime) -> Ordering {
        if a == b {
            Ordering::Equal
        } else if self.less(a, b, t) {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    }

    /// Puts an unlisted slot into the clean or dirty heap, counts kept.
    pub fn push(&mut self, slot: u32, dirty: bool) {
        let e = &mut self.entries[slot as usize];
        debug_assert!(e.heap == OUT, "slot {slot} is in a heap already");
        let h = dirty as usize;
        e.heap = h as u8;
        self.heaps[h].entry(e.cnt).or_default().insert((e.t_last, slot));
        self.lens[h] += 1;
    }

    /// Takes a slot out of its heap (if in one), counts kept.
    pub fn take_out(&mut self, slot: u32) {
        let e = &mut self.entries[slot as usize];
        if e.heap == OUT {
            return;
        }
        let h = e.heap as usize;
        e.heap = OUT;
        let group = self.heaps[h].get_mut(&e.cnt).expect("a listed slot's count has a group");
        let found = group.remove(&(e.t_last, slot));
        debug_assert!(found, "slot {slot} missing from its group");
        if group.is_empty() {
            self.heaps[h].remove(&e.cnt);
        }
        self.lens[h] -= 1;
    }

    /// A slot's first access at `t`: counted once, into the clean or dirty heap.
    pub fn insert(&mut self, slot: u32, dirty: bool, t: SimTime) {
        self.take_out(slot);
        self.entries[slot as usize] = Entry { cnt: 1, t_last: t, heap: OUT };
        self.push(slot, dirty);
    }

    /// An access at `t`: counts it (and moves the slot to its new group).
    pub fn touch(&mut self, slot: u32, t: SimTime) {
        let heap = self.entries[slot as usize].heap;
        self.take_out(slot);
        let e = &mut self.entries[slot as usize];
        e.cnt += 1;
        e.t_last = t;
        if heap != OUT {
            self.push(slot, heap == 1);
        }
    }

    /// Moves a slot into the clean or dirty heap (from the other, or from none).
    pub fn set_dirty(&mut self, slot: u32, dirty: bool) {
        if self.entries[slot as usize].heap != dirty as u8 {
            self.take_out(slot);
            self.push(slot, dirty);
        }
    }

    /// Forgets a slot (freed): out of its heap, counts cleared.
    pub fn remove(&mut self, slot: u32) {
        self.take_out(slot);
        self.entries[slot as usize] = EMPTY;
    }

    /// The root of heap `h` at `t`: the least of its groups' first slots.
    fn root(&self, h: usize, t: SimTime) -> Option<u32> {
        let firsts = self.heaps[h].values().map(|g| g.first().expect("groups are not empty").1);
        firsts.reduce(|a, b| if self.less(b, a, t) { b } else { a })
    }

    /// The α rule at `t`: the clean root if its value is below α × the
    /// dirty root's, else the dirty root, as (slot, dirty); `None` when
    /// both heaps are empty.
    pub fn victim(&self, t: SimTime) -> Option<(u32, bool)> {
        match (self.root(0, t), self.root(1, t)) {
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
    /// lowest first (the first is that heap's root).
    pub fn lowest(&self, dirty: bool, n: usize, t: SimTime) -> Vec<u32> {
        let h = dirty as usize;
        if n <= 1 {
            return self.root(h, t).into_iter().take(n).collect();
        }
        // The n lowest are among the first n of each group.
        let mut v: Vec<u32> = self.heaps[h].values().flat_map(|g| g.iter().take(n).map(|&(_, s)| s)).collect();
        v.sort_unstable_by(|&a, &b| self.order(a, b, t));
        v.truncate(n);
        v
    }

    /// Checks the groups against the slots' counts, last accesses and heaps.
    pub fn check(&self) -> Result<(), String> {
        for h in 0..2 {
            let mut n = 0;
            for (&cnt, group) in &self.heaps[h] {
                if group.is_empty() {
                    return Err(format!("heap {h} keeps an empty group of count {cnt}"));
                }
                for &(t_last, s) in group {
                    let e = &self.entries[s as usize];
                    if (e.cnt, e.t_last, e.heap as usize) != (cnt, t_last, h) {
                        return Err(format!("slot {s} misplaced in heap {h}"));
                    }
                    n += 1;
                }
            }
            if n != self.lens[h] {
                return Err(format!("heap {h} holds {n} slots, counted {}", self.lens[h]));
            }
        }
        let listed = self.entries.iter().filter(|e| e.heap != OUT).count();
        if listed != self.lens[0] + self.lens[1] {
            return Err(format!("{listed} slots claim a heap; the heaps hold {}", self.lens[0] + self.lens[1]));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_lists_a_heap_in_value_order_at_the_time_given() {
        let mut h = ValueHeaps::new(8, 1.0);
        // Slot s: s + 1 accesses, the last at 10 s ns.
        for s in 0..6u32 {
            h.insert(s, true, SimTime(0));
            for _ in 0..s {
                h.touch(s, SimTime(10 * s as u64));
            }
        }
        h.insert(6, false, SimTime(0));
        // At t = 100: values (s+1)/(101 − 10 s): 1/101, 2/91, 3/81, 4/71, 5/61, 6/51.
        assert_eq!(h.lowest(true, 3, SimTime(100)), vec![0, 1, 2]);
        assert_eq!(h.lowest(true, 1, SimTime(100)), vec![0]);
        assert_eq!(h.lowest(true, 10, SimTime(100)), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(h.lowest(false, 2, SimTime(100)), vec![6]);
        h.check().unwrap();
    }

    #[test]
    fn a_slot_taken_out_keeps_its_counts_and_is_never_the_victim() {
        let mut h = ValueHeaps::new(4, 1.0);
        h.insert(0, true, SimTime(0));
        h.insert(1, true, SimTime(50));
        h.take_out(0);
        assert!(!h.is_listed(0));
        assert_eq!(h.victim(SimTime(100)), Some((1, true)));
        h.touch(0, SimTime(70)); // counted while out, not listed
        assert!(!h.is_listed(0));
        h.push(0, false);
        assert_eq!(h.value(0, SimTime(80)), 2.0 / 11.0);
        h.remove(0);
        assert!(!h.is_listed(0) && h.value(0, SimTime(90)) == 0.0);
        h.check().unwrap();
    }

    #[test]
    fn roots_and_lowest_match_a_full_sort_under_random_operations() {
        let mut h = ValueHeaps::new(24, 2.0);
        let mut rng = crate::rng::SimRng::new(7);
        for step in 0..3000u64 {
            let x = rng.next_u64();
            let (now, s) = (SimTime(step * 7), (x % 24) as u32);
            match (x >> 8) % 6 {
                0 => h.remove(s),
                1 => h.take_out(s),
                2 if h.is_listed(s) => h.set_dirty(s, !h.is_dirty(s)),
                3 | 4 if h.is_listed(s) || x % 3 == 0 => h.touch(s, now),
                _ if !h.is_listed(s) => h.insert(s, x % 2 == 0, now),
                _ => {}
            }
            h.check().unwrap();
            let at = SimTime(step * 7 + x % 500);
            for dirty in [false, true] {
                let mut all = h.slots(dirty);
                all.sort_by(|&a, &b| h.order(a, b, at));
                assert_eq!(h.lowest(dirty, 3, at), all.iter().copied().take(3).collect::<Vec<_>>());
                assert_eq!(h.root(dirty as usize, at), all.first().copied());
            }
        }
    }
}
