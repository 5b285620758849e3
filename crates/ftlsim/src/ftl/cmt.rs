//! The mapping cache of demand-cached page maps: DFTL's cached mapping table
//! (CMT) and HAT's quick mapping table (QMT).
//!
//! [`MapCache`] is an LRU set of mapping entries, each with a dirty (HAT:
//! "update") bit, in fixed arrays with O(1) hit, insert and eviction. Dirty
//! entries can be threaded into per-group lists so DFTL finds every dirty
//! entry of one translation page, and HAT of one PCM write, without
//! scanning.
//!
//! [`CachedMap`] models the table's contents in two layers: `stored`, the
//! image the backing store holds (DFTL's translation pages, HAT's PCM), and
//! `cur`, the value the FTL acts on. Both sit with the entry's cache slot in
//! one 16-byte record, so GC updating an entry touches one cache line. An entry may differ between them only
//! while it is cached and dirty; a miss loads the *stored* value, so a lost
//! write-back reads stale data (the conformance suite sees it) or trips the
//! check that the loaded value is the current one.

use crate::config::FtlConfig;
use crate::error::{Error, Result};
use crate::ftl::FtlStats;
use crate::mem::Flat;
use crate::nand::Geometry;
use crate::units::Lpn;
use serde::{Deserialize, Serialize};

const NIL: u32 = u32::MAX;

/// One mapping entry: its current value, its backing-store image, and its
/// cache slot (or `NIL`).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub struct Entry {
    pub cur: u32,
    pub stored: u32,
    slot: u32,
}

impl Flat for Entry {
    const BYTES: usize = 12;
    #[inline(always)]
    fn put(self, out: &mut [u8]) {
        for (field, out) in [self.cur, self.stored, self.slot].into_iter().zip(out.chunks_exact_mut(4)) {
            field.put(out);
        }
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Entry {
        Entry { cur: u32::get(&b[0..4]), stored: u32::get(&b[4..8]), slot: u32::get(&b[8..12]) }
    }
}

#[derive(Serialize, Deserialize)]
pub struct MapCache {
    capacity: u32,
    len: u32,
    pub ent: crate::mem::BigVec<Entry>,
    key: Vec<u32>,
    dirty: Vec<bool>,
    /// LRU list over slots: `head` most, `tail` least recently used.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    /// Entries per group (0: no dirty lists).
    group_size: u32,
    group_head: Vec<u32>,
    dprev: Vec<u32>,
    dnext: Vec<u32>,
}

impl MapCache {
    /// A cache of `capacity` entries over `entries` entries, with dirty
    /// lists per group of `group_size` entries when that is non-zero.
    pub fn new(entries: u32, capacity: u32, group_size: u32, unmapped: u32) -> MapCache {
        let capacity = capacity.clamp(1, entries.max(1));
        let slots = capacity as usize;
        let lists = if group_size == 0 { 0 } else { entries.div_ceil(group_size) as usize };
        MapCache {
            capacity,
            len: 0,
            ent: crate::mem::big_vec(entries as usize, Entry { cur: unmapped, stored: unmapped, slot: NIL }),
            key: vec![NIL; slots],
            dirty: vec![false; slots],
            prev: vec![NIL; slots],
            next: vec![NIL; slots],
            head: NIL,
            tail: NIL,
            group_size,
            group_head: vec![NIL; lists],
            dprev: vec![NIL; if lists > 0 { slots } else { 0 }],
            dnext: vec![NIL; if lists > 0 { slots } else { 0 }],
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The group entry `x` is in (a grouped cache).
    #[inline]
    pub fn group_of(&self, x: u32) -> u32 {
        x / self.group_size
    }

    pub fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    pub fn contains(&self, x: u32) -> bool {
        self.ent[x as usize].slot != NIL
    }

    pub fn is_dirty(&self, x: u32) -> bool {
        let s = self.ent[x as usize].slot;
        s != NIL && self.dirty[s as usize]
    }

    /// The least recently used entry.
    pub fn lru(&self) -> Option<u32> {
        (self.tail != NIL).then(|| self.key[self.tail as usize])
    }

    /// A hit makes `x` the most recently used entry.
    #[inline]
    pub fn touch(&mut self, x: u32) -> bool {
        let s = self.ent[x as usize].slot;
        if s == NIL {
            return false;
        }
        if s != self.head {
            self.unlink(s);
            self.push_front(s);
        }
        true
    }

    /// Caches `x` (clean), evicting the least recently used entry when
    /// full. Evicting a dirty entry would lose an update: the caller must
    /// have written it back first.
    pub fn insert(&mut self, x: u32) -> Result<()> {
        debug_assert!(!self.contains(x), "entry {x} cached twice");
        let s = if self.len < self.capacity {
            self.len += 1;
            self.len - 1
        } else {
            let s = self.tail;
            if self.dirty[s as usize] {
                return Err(Error::invariant("map cache", format!("evicting dirty entry {}", self.key[s as usize])));
            }
            self.unlink(s);
            self.ent[self.key[s as usize] as usize].slot = NIL;
            s
        };
        self.key[s as usize] = x;
        self.dirty[s as usize] = false;
        self.ent[x as usize].slot = s;
        self.push_front(s);
        Ok(())
    }

    /// Marks cached entry `x` as differing from the backing store.
    #[inline]
    pub fn mark_dirty(&mut self, x: u32) {
        let s = self.ent[x as usize].slot;
        assert!(s != NIL, "mapping entry {x} updated while not cached");
        if self.dirty[s as usize] {
            return;
        }
        self.dirty[s as usize] = true;
        if let Some(g) = x.checked_div(self.group_size) {
            let g = g as usize;
            let h = self.group_head[g];
            self.dprev[s as usize] = NIL;
            self.dnext[s as usize] = h;
            if h != NIL {
                self.dprev[h as usize] = s;
            }
            self.group_head[g] = s;
        }
    }

    /// The groups holding a dirty cached entry, ascending (a grouped cache).
    pub fn dirty_groups(&self) -> Vec<u32> {
        let mut groups: Vec<u32> =
            (0..self.len as usize).filter(|&s| self.dirty[s]).map(|s| self.group_of(self.key[s])).collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// Writes every dirty entry of group `g` back to the image and cleans
    /// it, calling `f` on each.
    pub fn write_back_group(&mut self, g: u32, mut f: impl FnMut(u32)) {
        let mut s = std::mem::replace(&mut self.group_head[g as usize], NIL);
        while s != NIL {
            self.dirty[s as usize] = false;
            let x = self.key[s as usize];
            let e = &mut self.ent[x as usize];
            e.stored = e.cur;
            f(x);
            s = self.dnext[s as usize];
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NIL;
        self.next[s as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    /// Checks the LRU list, the index and the dirty lists agree.
    pub fn check(&self) -> Result<()> {
        let fail = |reason: String| Err(Error::invariant("map cache", reason));
        let (mut n, mut s) = (0, self.head);
        while s != NIL {
            n += 1;
            if n > self.len || self.ent[self.key[s as usize] as usize].slot != s {
                return fail(format!("LRU list and index disagree at slot {s}"));
            }
            s = self.next[s as usize];
        }
        if n != self.len {
            return fail(format!("LRU list holds {n} of {} entries", self.len));
        }
        if self.group_size > 0 {
            let mut listed = 0;
            for (g, &h) in self.group_head.iter().enumerate() {
                let mut s = h;
                while s != NIL {
                    listed += 1;
                    if !self.dirty[s as usize] || self.key[s as usize].checked_div(self.group_size) != Some(g as u32) {
                        return fail(format!("dirty list of group {g} holds slot {s} wrongly"));
                    }
                    s = self.dnext[s as usize];
                }
            }
            let dirty = self.dirty[..self.len as usize].iter().filter(|&&d| d).count();
            if listed != dirty {
                return fail(format!("{dirty} dirty entries, {listed} on dirty lists"));
            }
        }
        Ok(())
    }
}

/// A cached page map: the entries with their cache, and the counters of
/// the report.
#[derive(Serialize, Deserialize)]
pub struct CachedMap {
    pub cache: MapCache,
    entry_bytes: u64,
    lookups: u64,
    hits: u64,
    ram_accesses: u64,
}

impl CachedMap {
    /// A map of `entries`, `cfg.ftl`'s cache, dirty lists per `group_size`.
    pub fn new(entries: u32, cfg: &FtlConfig, group_size: u32, unmapped: u32) -> CachedMap {
        let capacity = cfg.cache_entries().min(u32::MAX as u64) as u32;
        CachedMap {
            cache: MapCache::new(entries, capacity, group_size, unmapped),
            entry_bytes: cfg.cache_entry_bytes as u64,
            lookups: 0,
            hits: 0,
            ram_accesses: 0,
        }
    }

    pub fn entries(&self) -> u32 {
        self.cache.ent.len() as u32
    }

    /// The current value of entry `x`.
    #[inline]
    pub fn cur(&self, x: u32) -> u32 {
        self.cache.ent[x as usize].cur
    }

    /// A host translation served by the cache, if it holds the entry.
    #[inline]
    pub fn hit(&mut self, lpn: Lpn) -> Option<u32> {
        self.lookups += 1;
        if self.cache.touch(lpn.0) {
            self.hits += 1;
            self.ram_accesses += 1;
            return Some(self.cur(lpn.0));
        }
        None
    }

    /// Caches `lpn` with the value the backing store holds (after a miss
    /// has paid to read it).
    pub fn load(&mut self, ftl: &'static str, lpn: Lpn) -> Result<u32> {
        let e = self.cache.ent[lpn.idx()];
        if e.stored != e.cur {
            return Err(Error::invariant(
                ftl,
                format!("LPN {} loads {} from the backing store, but its mapping is {}", lpn.0, e.stored, e.cur),
            ));
        }
        self.cache.insert(lpn.0)?;
        self.ram_accesses += 1;
        Ok(e.stored)
    }

    #[inline]
    pub fn set(&mut self, lpn: Lpn, value: u32) {
        self.ram_accesses += 1;
        self.cache.ent[lpn.idx()].cur = value;
        self.cache.mark_dirty(lpn.0);
    }

    /// GC moved entry `x`: a cached entry becomes dirty; an uncached one is
    /// updated in the backing store (returns false: the caller pays for it).
    #[inline]
    pub fn moved(&mut self, x: u32, value: u32) -> bool {
        let e = &mut self.cache.ent[x as usize];
        e.cur = value;
        if e.slot != NIL {
            self.ram_accesses += 1;
            self.cache.mark_dirty(x);
            return true;
        }
        e.stored = value;
        false
    }

    /// Every entry of group `g` takes `value` in the backing store and the
    /// cache alike (DFTL: a translation page a TRIM emptied whole): its
    /// dirty updates are void, its cached entries stay, clean. A RAM access
    /// an entry.
    pub fn drop_group(&mut self, g: u32, value: u32) {
        self.cache.write_back_group(g, |_| {});
        let size = self.cache.group_size as usize;
        let first = g as usize * size;
        let end = (first + size).min(self.cache.ent.len());
        let entries = &mut self.cache.ent[first..end];
        self.ram_accesses += entries.len() as u64;
        for e in entries {
            (e.cur, e.stored) = (value, value);
        }
    }

    /// A mapping as if written before the run: current and stored alike.
    pub fn placed(&mut self, lpn: Lpn, value: u32) {
        let e = &mut self.cache.ent[lpn.idx()];
        (e.cur, e.stored) = (value, value);
    }

    /// Power failed: the cache's contents are lost and every entry `x`
    /// takes `values[x]` as its current and stored value alike. Returns
    /// the entries whose stored image changed (the caller pays to write
    /// them back).
    pub fn recover(&mut self, values: &[u32]) -> Vec<u32> {
        let c = &self.cache;
        let mut fresh = MapCache::new(c.ent.len() as u32, c.capacity, c.group_size, NIL);
        let mut changed = Vec::new();
        for (x, &v) in values.iter().enumerate() {
            if c.ent[x].stored != v {
                changed.push(x as u32);
            }
            let e = &mut fresh.ent[x];
            (e.cur, e.stored) = (v, v);
        }
        self.cache = fresh;
        changed
    }

    /// Controller RAM of the cache and of 16-bit valid counts per block.
    pub fn ram_bytes(&self, geo: &Geometry) -> u64 {
        self.cache.capacity() as u64 * self.entry_bytes + geo.blocks as u64 * 2
    }

    pub fn stats(&self, s: &mut FtlStats) {
        s.map_cached = true;
        s.map_lookups = self.lookups;
        s.map_hits = self.hits;
        s.ram_accesses = self.ram_accesses;
    }

    pub fn reset_stats(&mut self) {
        (self.lookups, self.hits, self.ram_accesses) = (0, 0, 0);
    }

    /// Every entry not dirty in the cache equals its stored image.
    pub fn check(&self, ftl: &'static str) -> Result<()> {
        self.cache.check()?;
        for (x, e) in self.cache.ent.iter().enumerate() {
            if e.cur != e.stored && !self.cache.is_dirty(x as u32) {
                return Err(Error::invariant(
                    ftl,
                    format!("LPN {x} maps to {}, not dirty, but stored as {}", e.cur, e.stored),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_a_snapshot_table() {
        use bincode::Options;
        let enc = bincode::options().with_fixint_encoding();
        let per = crate::mem::CHUNK_BYTES / Entry::BYTES;
        let v = crate::mem::big_vec(per + 2, Entry { cur: 0, stored: 0, slot: NIL });
        let mut v = v.clone();
        for (i, e) in v.iter_mut().enumerate() {
            *e = Entry { cur: i as u32, stored: !(i as u32), slot: (i as u32).rotate_left(7) };
        }
        let bytes = enc.serialize(&v).unwrap();
        let back: crate::mem::BigVec<Entry> = enc.deserialize(&bytes).unwrap();
        assert_eq!(back.len(), v.len());
        for (a, b) in back.iter().zip(v.iter()) {
            assert_eq!((a.cur, a.stored, a.slot), (b.cur, b.stored, b.slot));
        }
    }

    #[test]
    fn lru_evicts_least_recently_used_and_refuses_dirty_victims() {
        let mut c = MapCache::new(100, 3, 10, u32::MAX);
        for x in [1, 2, 3] {
            c.insert(x).unwrap();
        }
        assert!(c.is_full());
        assert!(c.touch(1));
        assert_eq!(c.lru(), Some(2));
        c.mark_dirty(2);
        assert!(c.insert(4).is_err(), "a dirty victim must be written back first");
        let mut cleaned = Vec::new();
        c.write_back_group(0, |x| cleaned.push(x));
        assert_eq!(cleaned, vec![2]);
        c.insert(4).unwrap();
        assert!(!c.contains(2) && c.contains(4));
        assert_eq!(c.lru(), Some(3));
        c.check().unwrap();
    }

    #[test]
    fn dirty_lists_group_entries() {
        let mut c = MapCache::new(100, 8, 10, u32::MAX);
        for x in [5, 15, 7, 9] {
            c.insert(x).unwrap();
            c.mark_dirty(x);
        }
        c.check().unwrap();
        let mut g0 = Vec::new();
        c.write_back_group(0, |x| g0.push(x));
        g0.sort();
        assert_eq!(g0, vec![5, 7, 9]);
        assert!(c.is_dirty(15) && !c.is_dirty(5));
        c.check().unwrap();
    }

    #[test]
    fn a_lost_write_back_is_caught_on_load() {
        let cfg = FtlConfig { cache_bytes: 8, ..FtlConfig::default() };
        let mut m = CachedMap::new(10, &cfg, 1, u32::MAX);
        assert_eq!(m.hit(Lpn(3)), None);
        m.load("t", Lpn(3)).unwrap();
        m.set(Lpn(3), 42);
        assert!(m.check("t").is_ok());
        // Clear the dirty bit without writing back: the stored image is stale.
        m.cache.write_back_group(3, |_| {});
        m.cache.ent[3].stored = u32::MAX;
        assert!(m.check("t").is_err());
        m.cache.insert(4).unwrap();
        assert!(m.load("t", Lpn(3)).is_err());
    }
}
