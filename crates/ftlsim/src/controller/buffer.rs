//! The write buffer's bookkeeping: which logical pages it holds, in what
//! state, and which to destage or evict next. No timing and no FTL here;
//! [`super::Controller`] drives it.
//!
//! A slot holds one logical page: the sectors written into it (a mask, so
//! partial pages need no read), and with payloads their bytes. A slot is
//! *dirty* (newer than flash; on the dirty list, destaged oldest first),
//! *in flight* (its destage is booked and ends at a known time; its data
//! still serves reads), or *clean* (on flash and still cached; on the clean
//! list, evicted first). A write to a cached page makes it dirty again.
//!
//! Replacement (`cache.policy`) is LRU (a hit moves an entry to the tail of
//! its list), FIFO (hits do not move it), or COFTL's heap rule
//! ([`super::heap`]): clean and dirty slots sit in two min-heaps on
//! accesses / time since the last access (host reads and writes of the
//! page count as accesses; a destage does not), dirty pages are destaged
//! lowest value first, and a slot is made by dropping the clean root when
//! its value is below α × the dirty root's, else by writing the dirty root
//! back at once and waiting for it (the writer stalls, as it does under LRU
//! and FIFO when no page is clean; this write-back may be one more than
//! `cache.destage_depth` in flight). With no page clean there is nothing to
//! weigh, and the writer waits for the destages in flight as under LRU. A
//! page being destaged is in neither heap: it can be neither destaged again
//! nor dropped, but its accesses still count.
//! `dirty_evictions` counts the replacements that waited for a write-back,
//! `clean_evictions` those that dropped a clean page at once.

use super::heap::ValueHeaps;
use super::index::SlotIndex;
use crate::config::CachePolicy;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NIL: u32 = u32::MAX;
const NO_LPN: u32 = u32::MAX;

/// Sectors of one page (bit i: sector i), pages of up to 128 sectors.
pub type SectorMask = u128;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlotState {
    Free,
    Dirty,
    InFlight,
    Clean,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Slot {
    lpn: u32,
    mask: SectorMask,
    state: SlotState,
    prev: u32,
    next: u32,
    /// Destages of the slot so far: tells a stale in-flight entry from the
    /// current one.
    destages: u32,
}

/// A destage in flight as [`WriteBuffer::in_flight`] holds it: one
/// comparison of integers where a triple's would branch at each field.
#[inline(always)]
fn in_flight(end: SimTime, slot: u32, destages: u32) -> u128 {
    (end.0 as u128) << 64 | (slot as u128) << 32 | destages as u128
}

/// The (end, slot, destage number) an [`in_flight`] entry packs.
#[inline(always)]
fn unpack_in_flight(e: u128) -> (SimTime, u32, u32) {
    (SimTime((e >> 64) as u64), (e >> 32) as u32, e as u32)
}

/// A doubly linked list threaded through the slots.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL, len: 0 };

/// Counters of the buffer, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    /// Host page writes absorbed by a page already buffered.
    pub write_hits: u64,
    pub write_misses: u64,
    /// Host page reads served wholly from the buffer.
    pub read_hits: u64,
    pub read_misses: u64,
    /// Pages written to the FTL from the buffer.
    pub destaged_pages: u64,
    /// Clean pages dropped to make room.
    pub evictions: u64,
    /// Of those, pages dropped at once (the clean root, or the head of
    /// the clean list) ...
    #[serde(default)]
    pub clean_evictions: u64,
    /// ... and replacements that first waited for a dirty page's
    /// write-back (the heap rule chose the dirty root, or no page was clean).
    #[serde(default)]
    pub dirty_evictions: u64,
    /// Host writes that waited for room, and the time they waited.
    pub stalls: u64,
    pub stall_ns: u64,
}

#[derive(Serialize, Deserialize)]
pub struct WriteBuffer {
    policy: CachePolicy,
    slots: Vec<Slot>,
    index: SlotIndex,
    free: Vec<u32>,
    dirty: List,
    clean: List,
    /// Destages in flight: (end, slot, the slot's destage number), packed
    /// by [`in_flight`] into one integer that orders as the triple does.
    in_flight: BinaryHeap<Reverse<u128>>,
    /// Page bytes per slot, when payloads are stored.
    data: Vec<u8>,
    page_bytes: usize,
    /// `CachePolicy::Heap`: the clean and dirty heaps, in place of the lists.
    heaps: Option<ValueHeaps>,
    /// The last admission found no room: the next one waited for a write-back.
    waited: bool,
    /// The dirty page the heap rule chose to give up: admissions wait for
    /// its write-back and then take its slot.
    evicting: Option<u32>,
    pub stats: BufferStats,
}

impl WriteBuffer {
    /// A buffer of `pages` slots; `alpha` is the heap rule's α (unused by
    /// the other policies).
    pub fn new(pages: u32, page_bytes: usize, policy: CachePolicy, alpha: f64, payloads: bool) -> WriteBuffer {
        let slot = Slot { lpn: NO_LPN, mask: 0, state: SlotState::Free, prev: NIL, next: NIL, destages: 0 };
        WriteBuffer {
            policy,
            slots: vec![slot; pages as usize],
            index: SlotIndex::with_capacity(pages as usize),
            free: (0..pages).rev().collect(),
            dirty: EMPTY,
            clean: EMPTY,
            in_flight: BinaryHeap::new(),
            data: if payloads { vec![0; pages as usize * page_bytes] } else { Vec::new() },
            page_bytes,
            heaps: (policy == CachePolicy::Heap).then(|| ValueHeaps::new(pages, alpha)),
            waited: false,
            evicting: None,
            stats: BufferStats::default(),
        }
    }

    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    /// A power cut: every slot's contents (and any destage in flight) are
    /// lost; the counters stay.
    pub fn lose_contents(&mut self) {
        let payloads = !self.data.is_empty();
        let stats = std::mem::take(&mut self.stats);
        let alpha = self.heaps.as_ref().map_or(0.0, ValueHeaps::alpha);
        *self = WriteBuffer::new(self.capacity(), self.page_bytes, self.policy, alpha, payloads);
        self.stats = stats;
    }

    /// Sectors held in dirty slots: host data not yet on flash, nor on its
    /// way (a destage writes a slot's every sector).
    pub fn dirty_sectors(&self) -> u64 {
        let dirty = self.slots.iter().filter(|s| s.state == SlotState::Dirty);
        dirty.map(|s| s.mask.count_ones() as u64).sum()
    }

    pub fn dirty_pages(&self) -> u32 {
        match &self.heaps {
            Some(h) => h.len(true) as u32,
            None => self.dirty.len,
        }
    }

    /// Puts `s` on the list (or into the heap) of `state`, dirty or clean.
    fn enlist(&mut self, s: u32, state: SlotState) {
        match self.heaps.as_mut() {
            Some(h) => {
                h.push(s, state == SlotState::Dirty);
                self.slots[s as usize].state = state;
            }
            None => self.push_back(s, state),
        }
    }

    /// Takes `s` off its list (or out of its heap).
    fn delist(&mut self, s: u32) {
        match self.heaps.as_mut() {
            Some(h) => h.take_out(s),
            None => self.unlink(s),
        }
    }

    /// Frees slot `s` (its index entry already gone).
    fn free_slot(&mut self, s: u32) {
        if let Some(h) = self.heaps.as_mut() {
            h.remove(s);
        }
        self.slots[s as usize].state = SlotState::Free;
        self.free.push(s);
    }

    fn list(&mut self, state: SlotState) -> &mut List {
        match state {
            SlotState::Dirty => &mut self.dirty,
            SlotState::Clean => &mut self.clean,
            SlotState::Free | SlotState::InFlight => unreachable!("only dirty and clean slots are listed"),
        }
    }

    fn push_back(&mut self, s: u32, state: SlotState) {
        let tail = self.list(state).tail;
        self.slots[s as usize].state = state;
        self.slots[s as usize].prev = tail;
        self.slots[s as usize].next = NIL;
        if tail == NIL {
            self.list(state).head = s;
        } else {
            self.slots[tail as usize].next = s;
        }
        let l = self.list(state);
        l.tail = s;
        l.len += 1;
    }

    fn unlink(&mut self, s: u32) {
        let Slot { prev, next, state, .. } = self.slots[s as usize];
        if prev == NIL {
            self.list(state).head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.list(state).tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        self.list(state).len -= 1;
    }

    /// Moves in-flight destages that have ended by `t` to the clean list
    /// (or frees them, if their page was trimmed meanwhile).
    pub fn retire(&mut self, t: SimTime) {
        while let Some(&Reverse(e)) = self.in_flight.peek() {
            let (end, s, n) = unpack_in_flight(e);
            if end > t {
                break;
            }
            self.in_flight.pop();
            let slot = &self.slots[s as usize];
            if slot.state != SlotState::InFlight || slot.destages != n {
                continue; // rewritten meanwhile: dirty again, or destaged anew
            }
            if self.slots[s as usize].lpn == NO_LPN {
                self.free_slot(s);
            } else {
                self.enlist(s, SlotState::Clean);
            }
        }
    }

    /// The earliest end of a destage in flight.
    pub fn next_retirement(&self) -> Option<SimTime> {
        self.in_flight.peek().map(|&Reverse(e)| unpack_in_flight(e).0)
    }

    /// The latest end of a destage in flight.
    pub fn last_retirement(&self) -> Option<SimTime> {
        self.in_flight.iter().map(|&Reverse(e)| unpack_in_flight(e).0).max()
    }

    /// The slot holding `lpn`, if buffered.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        self.index.get(lpn)
    }

    /// Sectors of a buffered page held in the buffer.
    pub fn mask(&self, slot: u32) -> SectorMask {
        self.slots[slot as usize].mask
    }

    pub fn state(&self, slot: u32) -> SlotState {
        self.slots[slot as usize].state
    }

    /// A read hit on `slot` at `t`: LRU refreshes it, the heap rule counts it.
    pub fn touch(&mut self, slot: u32, t: SimTime) {
        let state = self.slots[slot as usize].state;
        if let Some(h) = self.heaps.as_mut() {
            h.touch(slot, t);
        } else if self.policy == CachePolicy::Lru && matches!(state, SlotState::Dirty | SlotState::Clean) {
            self.unlink(slot);
            self.push_back(slot, state);
        }
    }

    /// Writes `mask` sectors of `lpn` into the buffer if there is room at
    /// `t` (a cached page, a free slot, or a clean page to evict).
    /// `None`: every slot is dirty or in flight, or the heap rule chose
    /// to give up a dirty page, which must be written back first.
    pub fn admit(&mut self, lpn: u32, mask: SectorMask, t: SimTime) -> Option<u32> {
        match self.lookup(lpn) {
            Some(s) => Some(self.admit_hit(s, mask, t)),
            None => self.admit_miss(lpn, mask, t),
        }
    }

    /// [`admit`](Self::admit) of a page found buffered in `s`.
    fn admit_hit(&mut self, s: u32, mask: SectorMask, t: SimTime) -> u32 {
        self.stats.write_hits += 1;
        let state = self.slots[s as usize].state;
        if let Some(h) = self.heaps.as_mut() {
            h.touch(s, t);
            h.set_dirty(s, true);
            self.slots[s as usize].state = SlotState::Dirty;
            self.slots[s as usize].mask |= mask;
            return s;
        }
        match state {
            SlotState::Dirty if self.policy == CachePolicy::Fifo => {}
            SlotState::Dirty | SlotState::Clean => {
                self.unlink(s);
                self.push_back(s, SlotState::Dirty);
            }
            // Its destage ends as booked; the new data needs another.
            SlotState::InFlight => self.push_back(s, SlotState::Dirty),
            SlotState::Free => unreachable!("indexed slots are in use"),
        }
        self.slots[s as usize].mask |= mask;
        s
    }

    /// [`admit`](Self::admit) of a page not buffered: a writer that found
    /// no room admits again with this once room may have come (waiting
    /// buffers no page: the page is still not buffered, and its index
    /// entry need not be looked up again).
    pub fn admit_miss(&mut self, lpn: u32, mask: SectorMask, t: SimTime) -> Option<u32> {
        debug_assert!(self.lookup(lpn).is_none(), "page {lpn} is buffered");
        self.retire(t);
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                let Some(s) = self.clean_victim(t) else {
                    self.waited = true;
                    return None;
                };
                self.delist(s);
                self.index.remove(self.slots[s as usize].lpn);
                self.stats.evictions += 1;
                if self.waited {
                    self.stats.dirty_evictions += 1;
                } else {
                    self.stats.clean_evictions += 1;
                }
                s
            }
        };
        self.waited = false;
        self.evicting = None;
        self.stats.write_misses += 1;
        self.slots[s as usize].lpn = lpn;
        self.slots[s as usize].mask = mask;
        self.index.insert(lpn, s);
        match self.heaps.as_mut() {
            Some(h) => {
                h.insert(s, true, t);
                self.slots[s as usize].state = SlotState::Dirty;
            }
            None => self.push_back(s, SlotState::Dirty),
        }
        Some(s)
    }

    /// A hint that `lpn` is admitted or looked up soon.
    #[inline]
    pub fn prefetch(&self, lpn: u32) {
        self.index.prefetch(lpn);
    }

    /// The clean page to drop for room at `t`: the head of the clean list,
    /// or by the heap rule the clean root unless the dirty root is to go
    /// instead (then `None` until that page is clean, as when nothing is).
    /// With nothing clean the heap rule has nothing to weigh: the writer
    /// waits for destages as under the other policies.
    fn clean_victim(&mut self, t: SimTime) -> Option<u32> {
        let Some(h) = self.heaps.as_mut() else {
            return (self.clean.head != NIL).then_some(self.clean.head);
        };
        if let Some(d) = self.evicting {
            return (self.slots[d as usize].state == SlotState::Clean).then_some(d);
        }
        if h.len(false) == 0 {
            return None;
        }
        match h.victim(t)? {
            (s, false) => Some(s),
            (d, true) => {
                self.evicting = Some(d);
                None
            }
        }
    }

    /// The dirty page an admission waits for, if its write-back is not
    /// booked yet (the heap rule's dirty victim): (slot, lpn, mask).
    pub fn dirty_victim(&self) -> Option<(u32, u32, SectorMask)> {
        let d = self.evicting?;
        let slot = &self.slots[d as usize];
        (slot.state == SlotState::Dirty).then_some((d, slot.lpn, slot.mask))
    }

    /// The dirty page to destage next at `t`: (slot, lpn, mask). The
    /// oldest (LRU, FIFO), or the dirty root (heap).
    pub fn next_dirty(&self, t: SimTime) -> Option<(u32, u32, SectorMask)> {
        let s = match &self.heaps {
            Some(h) => h.lowest(true, 1, t).pop()?,
            None => self.dirty.head,
        };
        (s != NIL).then(|| (s, self.slots[s as usize].lpn, self.slots[s as usize].mask))
    }

    /// The page destaged after `slot` if nothing changes meanwhile (LRU,
    /// FIFO; the heap rule's order is only known at its time). Its slot
    /// was fetched by the call before; the one after it is fetched now.
    pub fn dirty_after(&self, slot: u32) -> Option<u32> {
        if self.heaps.is_some() {
            return None;
        }
        let next = self.slots[slot as usize].next;
        if next == NIL {
            return None;
        }
        let after = self.slots[next as usize].next;
        if after != NIL {
            crate::mem::prefetch_all(&self.slots, after as usize);
        }
        Some(self.slots[next as usize].lpn)
    }

    /// Up to `n` dirty pages (slots) to destage at `t`, first to go first,
    /// as [`next_dirty`](Self::next_dirty) gives one.
    pub fn oldest_dirty(&self, n: usize, t: SimTime) -> Vec<(u32, u32, SectorMask)> {
        if let Some(h) = &self.heaps {
            let lowest = h.lowest(true, n, t);
            return lowest.into_iter().map(|s| (s, self.slots[s as usize].lpn, self.slots[s as usize].mask)).collect();
        }
        let mut out = Vec::with_capacity(n);
        let mut s = self.dirty.head;
        while s != NIL && out.len() < n {
            let slot = &self.slots[s as usize];
            out.push((s, slot.lpn, slot.mask));
            s = slot.next;
        }
        out
    }

    /// `slot`'s destage is booked and ends at `end`.
    pub fn destaging(&mut self, slot: u32, end: SimTime) {
        self.delist(slot);
        let s = &mut self.slots[slot as usize];
        s.state = SlotState::InFlight;
        s.destages = s.destages.wrapping_add(1);
        self.in_flight.push(Reverse(in_flight(end, slot, s.destages)));
        // A full buffer evicts the page a few admissions after its destage
        // ends; its index entry, untouched since it was buffered long ago,
        // is on its way by then (its removal was most of an admission).
        self.index.prefetch(s.lpn);
        self.stats.destaged_pages += 1;
    }

    /// Forgets a page (trimmed): its slot is free at once, or when its
    /// destage in flight ends.
    pub fn discard(&mut self, lpn: u32) {
        let Some(s) = self.index.remove(lpn) else { return };
        if self.evicting == Some(s) {
            self.evicting = None;
        }
        match self.slots[s as usize].state {
            SlotState::Dirty | SlotState::Clean => {
                self.delist(s);
                self.free_slot(s);
            }
            SlotState::InFlight => {}
            SlotState::Free => unreachable!("indexed slots are in use"),
        }
        self.slots[s as usize].lpn = NO_LPN;
        self.slots[s as usize].mask = 0;
    }

    /// The bytes of `slot`'s page (payload mode).
    pub fn page(&self, slot: u32) -> &[u8] {
        let at = slot as usize * self.page_bytes;
        &self.data[at..at + self.page_bytes]
    }

    pub fn page_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * self.page_bytes;
        &mut self.data[at..at + self.page_bytes]
    }

    /// Checks the lists and the index against the slots (tests).
    pub fn check(&self) -> Result<(), String> {
        let count = |st: SlotState| self.slots.iter().filter(|s| s.state == st).count() as u32;
        let (dirty, clean) = match &self.heaps {
            Some(h) => {
                h.check()?;
                for (dirty, state) in [(false, SlotState::Clean), (true, SlotState::Dirty)] {
                    if let Some(&s) = h.slots(dirty).iter().find(|&&s| self.slots[s as usize].state != state) {
                        return Err(format!(
                            "slot {s} is in the {state:?} heap but {:?}",
                            self.slots[s as usize].state
                        ));
                    }
                }
                (h.len(true) as u32, h.len(false) as u32)
            }
            None => (self.dirty.len, self.clean.len),
        };
        if count(SlotState::Dirty) != dirty || count(SlotState::Clean) != clean {
            return Err("list lengths differ from slot states".into());
        }
        if count(SlotState::Free) as usize != self.free.len() {
            return Err("free slots differ from the free stack".into());
        }
        for (lpn, s) in self.index.iter() {
            if self.slots[s as usize].lpn != lpn {
                return Err(format!("index maps page {lpn} to slot {s}, which holds {}", self.slots[s as usize].lpn));
            }
        }
        Ok(())
    }
}

/// Copies the sectors of `page` that `held` marks, from `first` on, over
/// `out` (sector `first` at `out`'s start): a buffered page's newer sectors
/// over what flash returned.
pub fn overlay_held(held: SectorMask, page: &[u8], first: u32, out: &mut [u8]) {
    for (i, dst) in out.chunks_exact_mut(512).enumerate() {
        let sector = first as usize + i;
        if held >> sector & 1 == 1 {
            dst.copy_from_slice(&page[sector * 512..(sector + 1) * 512]);
        }
    }
}

/// The mask of sectors `first .. first + n` of a page.
#[inline]
pub fn sector_mask(first: u32, n: u32) -> SectorMask {
    let ones = if n >= 128 { SectorMask::MAX } else { (1 << n) - 1 };
    ones << first
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A destage in flight packed orders as its (end, slot, number)
        /// triple does.
        #[test]
        fn packed_destages_order_as_their_triples(
            a in (proptest::prelude::any::<u64>(), proptest::prelude::any::<u32>(), proptest::prelude::any::<u32>()),
            b in (proptest::prelude::any::<u64>(), proptest::prelude::any::<u32>(), proptest::prelude::any::<u32>()),
            same_end in proptest::prelude::any::<bool>(),
        ) {
            let b = if same_end { (a.0, b.1, b.2) } else { b };
            let pack = |(e, s, n): (u64, u32, u32)| in_flight(SimTime(e), s, n);
            proptest::prop_assert_eq!(pack(a).cmp(&pack(b)), a.cmp(&b));
            proptest::prop_assert_eq!(unpack_in_flight(pack(a)), (SimTime(a.0), a.1, a.2));
        }
    }

    #[test]
    fn dirty_pages_destage_oldest_first_and_clean_ones_are_evicted() {
        let mut b = WriteBuffer::new(2, 4096, CachePolicy::Lru, 0.0, false);
        let full = sector_mask(0, 8);
        assert!(b.admit(10, full, SimTime(0)).is_some());
        assert!(b.admit(11, full, SimTime(0)).is_some());
        assert_eq!(b.admit(12, full, SimTime(0)), None, "both dirty: no room");
        let (s, lpn, _) = b.next_dirty(SimTime(0)).unwrap();
        assert_eq!(lpn, 10);
        b.destaging(s, SimTime(100));
        assert_eq!(b.admit(12, full, SimTime(50)), None, "in flight until 100");
        assert_eq!(b.next_retirement(), Some(SimTime(100)));
        assert!(b.admit(12, full, SimTime(100)).is_some(), "clean after its destage: evicted");
        assert_eq!((b.stats.evictions, b.stats.write_misses), (1, 3));
        assert_eq!(b.lookup(10), None);
        b.check().unwrap();
    }

    #[test]
    fn a_rewrite_of_a_page_in_flight_makes_it_dirty_again() {
        let mut b = WriteBuffer::new(4, 4096, CachePolicy::Fifo, 0.0, false);
        let s = b.admit(7, sector_mask(0, 4), SimTime(0)).unwrap();
        b.destaging(s, SimTime(100));
        assert_eq!(b.admit(7, sector_mask(4, 4), SimTime(10)), Some(s));
        assert_eq!(b.state(s), SlotState::Dirty);
        assert_eq!(b.mask(s), sector_mask(0, 8));
        b.retire(SimTime(200));
        assert_eq!(b.state(s), SlotState::Dirty, "the old destage's end does not clean newer data");
        b.discard(7);
        assert_eq!(b.lookup(7), None);
        b.check().unwrap();
    }

    fn heap(pages: u32, alpha: f64) -> WriteBuffer {
        WriteBuffer::new(pages, 4096, CachePolicy::Heap, alpha, false)
    }

    const FULL: SectorMask = u128::MAX >> 120;

    #[test]
    fn heap_policy_destages_the_dirty_root_at_the_time_asked() {
        let mut b = heap(4, 1.0);
        // Page 10: written at 0, 10 and 20; page 11: once at 90.
        for at in [0, 10, 20] {
            b.admit(10, FULL, SimTime(at)).unwrap();
        }
        b.admit(11, FULL, SimTime(90)).unwrap();
        // At 100: 3/81 < 1/11, page 10 goes first; at 1000 1/911 < 3/981.
        assert_eq!(b.next_dirty(SimTime(100)).unwrap().1, 10);
        assert_eq!(b.next_dirty(SimTime(1000)).unwrap().1, 11);
        let order: Vec<u32> = b.oldest_dirty(4, SimTime(100)).iter().map(|d| d.1).collect();
        assert_eq!(order, vec![10, 11]);
        // A read hit counts: page 11 read at 990 and 995 is worth 3/6 > 3/981.
        let s = b.lookup(11).unwrap();
        b.touch(s, SimTime(990));
        b.touch(s, SimTime(995));
        assert_eq!(b.next_dirty(SimTime(1000)).unwrap().1, 10);
        assert_eq!((b.stats.write_hits, b.stats.write_misses), (2, 2));
        b.check().unwrap();
    }

    /// A buffer of two pages: page 1 clean (written at 0, on flash by 10,
    /// read `reads` times at 0), page 2 dirty (written at 0).
    fn clean_and_dirty(alpha: f64, reads: u32) -> WriteBuffer {
        let mut b = heap(2, alpha);
        let s = b.admit(1, FULL, SimTime(0)).unwrap();
        b.destaging(s, SimTime(10));
        b.retire(SimTime(10));
        assert_eq!(b.state(s), SlotState::Clean);
        for _ in 0..reads {
            b.touch(s, SimTime(0));
        }
        b.admit(2, FULL, SimTime(0)).unwrap();
        b.check().unwrap();
        b
    }

    #[test]
    fn heap_policy_drops_the_clean_root_below_alpha_times_the_dirty_root() {
        // Equal histories, equal values v: the clean page goes iff v < αv.
        let mut b = clean_and_dirty(2.0, 0);
        assert!(b.admit(3, FULL, SimTime(50)).is_some());
        assert_eq!((b.lookup(1), b.stats.clean_evictions, b.stats.dirty_evictions), (None, 1, 0));
        for alpha in [1.0, 0.5] {
            let mut b = clean_and_dirty(alpha, 0);
            assert_eq!(b.admit(3, FULL, SimTime(50)), None, "α {alpha}: the dirty root is to go");
            assert!(b.lookup(1).is_some());
        }
        // A clean page read 4 times (5 accesses) against a dirty one
        // written once: worth keeping at α 4 (5v ≥ 4v), not at α 6.
        assert_eq!(clean_and_dirty(4.0, 4).admit(3, FULL, SimTime(99)), None);
        let mut b = clean_and_dirty(6.0, 4);
        assert!(b.admit(3, FULL, SimTime(99)).is_some());
        assert_eq!(b.lookup(1), None);
    }

    #[test]
    fn heap_policy_dirty_eviction_waits_for_the_write_back() {
        let mut b = clean_and_dirty(1.0, 0);
        assert_eq!(b.dirty_victim(), None);
        assert_eq!(b.admit(3, FULL, SimTime(50)), None);
        // The controller books the chosen page's write-back; the writer
        // waits for it, and the clean page is kept meanwhile.
        let (s, lpn, _) = b.dirty_victim().unwrap();
        assert_eq!(lpn, 2);
        b.destaging(s, SimTime(100));
        assert_eq!(b.dirty_victim(), None, "booked");
        assert_eq!(b.next_retirement(), Some(SimTime(100)));
        assert_eq!(b.admit(3, FULL, SimTime(60)), None, "page 2 in flight: the clean page 1 stays");
        assert_eq!(b.admit(3, FULL, SimTime(100)), Some(s), "page 2 on flash: its slot is taken");
        assert!(b.lookup(1).is_some() && b.lookup(2).is_none());
        assert_eq!((b.stats.evictions, b.stats.clean_evictions, b.stats.dirty_evictions), (1, 0, 1));
        assert_eq!(b.stats.destaged_pages, 2);
        b.check().unwrap();
    }

    #[test]
    fn heap_policy_rewrite_in_flight_and_trim_keep_the_heaps_consistent() {
        let mut b = heap(3, 18.0);
        let s = b.admit(7, sector_mask(0, 4), SimTime(0)).unwrap();
        b.destaging(s, SimTime(100));
        assert_eq!(b.admit(7, sector_mask(4, 4), SimTime(10)), Some(s));
        assert_eq!((b.state(s), b.mask(s), b.dirty_pages()), (SlotState::Dirty, sector_mask(0, 8), 1));
        b.retire(SimTime(200));
        assert_eq!(b.state(s), SlotState::Dirty, "the old destage's end does not clean newer data");
        b.check().unwrap();
        let (s2, ..) = b.next_dirty(SimTime(200)).unwrap();
        b.destaging(s2, SimTime(300));
        b.discard(7);
        assert_eq!((b.lookup(7), b.state(s2)), (None, SlotState::InFlight));
        b.retire(SimTime(300));
        assert_eq!(b.state(s2), SlotState::Free);
        b.check().unwrap();
    }

    #[test]
    fn heap_policy_stays_consistent_under_random_operations() {
        let mut b = heap(8, 3.0);
        let mut rng = crate::rng::SimRng::new(99);
        for step in 0..4000u64 {
            let x = rng.next_u64();
            let now = SimTime(step * 10);
            let lpn = (x % 24) as u32;
            match x % 7 {
                0 => b.discard(lpn),
                1 => {
                    if let Some(s) = b.lookup(lpn) {
                        b.touch(s, now);
                    }
                }
                2 | 3 => {
                    if let Some((s, ..)) = b.next_dirty(now) {
                        b.destaging(s, SimTime(now.0 + x % 50));
                    }
                }
                _ => {
                    b.retire(now);
                    if b.admit(lpn, FULL, now).is_none() {
                        if let Some((d, ..)) = b.dirty_victim() {
                            b.destaging(d, SimTime(now.0 + 5));
                        }
                    }
                }
            }
            b.check().unwrap();
        }
        let s = &b.stats;
        assert_eq!(s.evictions, s.clean_evictions + s.dirty_evictions);
        assert!(s.clean_evictions > 0 && s.dirty_evictions > 0, "{s:?}");
    }
}
