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
//! Replacement is LRU (a hit moves an entry to the tail of its list) or
//! FIFO (hits do not move it).

use crate::config::CachePolicy;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

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

/// A doubly linked list threaded through the slots.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL, len: 0 };

/// Hashes a logical page number: a multiply, for a map on the hot path
/// whose keys are not chosen by an adversary (and a fixed function, so runs
/// are deterministic).
#[derive(Default)]
pub struct LpnHasher(u64);

impl Hasher for LpnHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, x: u32) {
        let h = (x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

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
    /// Host writes that waited for room, and the time they waited.
    pub stalls: u64,
    pub stall_ns: u64,
}

#[derive(Serialize, Deserialize)]
pub struct WriteBuffer {
    policy: CachePolicy,
    slots: Vec<Slot>,
    index: HashMap<u32, u32, BuildHasherDefault<LpnHasher>>,
    free: Vec<u32>,
    dirty: List,
    clean: List,
    /// Destages in flight: (end, slot, the slot's destage number).
    in_flight: BinaryHeap<Reverse<(SimTime, u32, u32)>>,
    /// Page bytes per slot, when payloads are stored.
    data: Vec<u8>,
    page_bytes: usize,
    pub stats: BufferStats,
}

impl WriteBuffer {
    pub fn new(pages: u32, page_bytes: usize, policy: CachePolicy, payloads: bool) -> WriteBuffer {
        let slot = Slot { lpn: NO_LPN, mask: 0, state: SlotState::Free, prev: NIL, next: NIL, destages: 0 };
        WriteBuffer {
            policy,
            slots: vec![slot; pages as usize],
            index: HashMap::with_capacity_and_hasher(pages as usize, Default::default()),
            free: (0..pages).rev().collect(),
            dirty: EMPTY,
            clean: EMPTY,
            in_flight: BinaryHeap::new(),
            data: if payloads { vec![0; pages as usize * page_bytes] } else { Vec::new() },
            page_bytes,
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
        *self = WriteBuffer::new(self.capacity(), self.page_bytes, self.policy, payloads);
        self.stats = stats;
    }

    pub fn dirty_pages(&self) -> u32 {
        self.dirty.len
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
        while let Some(&Reverse((end, s, n))) = self.in_flight.peek() {
            if end > t {
                break;
            }
            self.in_flight.pop();
            let slot = &self.slots[s as usize];
            if slot.state != SlotState::InFlight || slot.destages != n {
                continue; // rewritten meanwhile: dirty again, or destaged anew
            }
            if self.slots[s as usize].lpn == NO_LPN {
                self.slots[s as usize].state = SlotState::Free;
                self.free.push(s);
            } else {
                self.push_back(s, SlotState::Clean);
            }
        }
    }

    /// The earliest end of a destage in flight.
    pub fn next_retirement(&self) -> Option<SimTime> {
        self.in_flight.peek().map(|Reverse((end, ..))| *end)
    }

    /// The latest end of a destage in flight.
    pub fn last_retirement(&self) -> Option<SimTime> {
        self.in_flight.iter().map(|Reverse((end, ..))| *end).max()
    }

    /// The slot holding `lpn`, if buffered.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        if self.index.is_empty() {
            return None;
        }
        self.index.get(&lpn).copied()
    }

    /// Sectors of a buffered page held in the buffer.
    pub fn mask(&self, slot: u32) -> SectorMask {
        self.slots[slot as usize].mask
    }

    pub fn state(&self, slot: u32) -> SlotState {
        self.slots[slot as usize].state
    }

    /// A read hit on `slot`: LRU refreshes it.
    pub fn touch(&mut self, slot: u32) {
        let state = self.slots[slot as usize].state;
        if self.policy == CachePolicy::Lru && matches!(state, SlotState::Dirty | SlotState::Clean) {
            self.unlink(slot);
            self.push_back(slot, state);
        }
    }

    /// Writes `mask` sectors of `lpn` into the buffer if there is room at
    /// `t` (a cached page, a free slot, or a clean page to evict).
    /// `None`: every slot is dirty or in flight.
    pub fn admit(&mut self, lpn: u32, mask: SectorMask, t: SimTime) -> Option<u32> {
        if let Some(s) = self.lookup(lpn) {
            self.stats.write_hits += 1;
            let state = self.slots[s as usize].state;
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
            return Some(s);
        }
        self.retire(t);
        let s = match self.free.pop() {
            Some(s) => s,
            None if self.clean.head != NIL => {
                let s = self.clean.head;
                self.unlink(s);
                self.index.remove(&self.slots[s as usize].lpn);
                self.stats.evictions += 1;
                s
            }
            None => return None,
        };
        self.stats.write_misses += 1;
        self.slots[s as usize].lpn = lpn;
        self.slots[s as usize].mask = mask;
        self.index.insert(lpn, s);
        self.push_back(s, SlotState::Dirty);
        Some(s)
    }

    /// The oldest dirty page, taken for destaging: (slot, lpn, mask).
    pub fn next_dirty(&self) -> Option<(u32, u32, SectorMask)> {
        let s = self.dirty.head;
        (s != NIL).then(|| (s, self.slots[s as usize].lpn, self.slots[s as usize].mask))
    }

    /// Up to `n` of the oldest dirty pages (slots), oldest first, as
    /// [`next_dirty`](Self::next_dirty) gives one.
    pub fn oldest_dirty(&self, n: usize) -> Vec<(u32, u32, SectorMask)> {
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
        self.unlink(slot);
        let s = &mut self.slots[slot as usize];
        s.state = SlotState::InFlight;
        s.destages = s.destages.wrapping_add(1);
        self.in_flight.push(Reverse((end, slot, s.destages)));
        self.stats.destaged_pages += 1;
    }

    /// Forgets a page (trimmed): its slot is free at once, or when its
    /// destage in flight ends.
    pub fn discard(&mut self, lpn: u32) {
        let Some(s) = self.index.remove(&lpn) else { return };
        match self.slots[s as usize].state {
            SlotState::Dirty | SlotState::Clean => {
                self.unlink(s);
                self.slots[s as usize].state = SlotState::Free;
                self.free.push(s);
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
        if count(SlotState::Dirty) != self.dirty.len || count(SlotState::Clean) != self.clean.len {
            return Err("list lengths differ from slot states".into());
        }
        if count(SlotState::Free) as usize != self.free.len() {
            return Err("free slots differ from the free stack".into());
        }
        for (&lpn, &s) in &self.index {
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

    #[test]
    fn dirty_pages_destage_oldest_first_and_clean_ones_are_evicted() {
        let mut b = WriteBuffer::new(2, 4096, CachePolicy::Lru, false);
        let full = sector_mask(0, 8);
        assert!(b.admit(10, full, SimTime(0)).is_some());
        assert!(b.admit(11, full, SimTime(0)).is_some());
        assert_eq!(b.admit(12, full, SimTime(0)), None, "both dirty: no room");
        let (s, lpn, _) = b.next_dirty().unwrap();
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
        let mut b = WriteBuffer::new(4, 4096, CachePolicy::Fifo, false);
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
}
