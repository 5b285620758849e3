//! Block allocation and GC victim selection, shared by every FTL.
//!
//! Each plane owns its blocks. A block is `Free` (erased, in the plane's free
//! queue), `Active` (being programmed), or `Closed` (a GC candidate). The pool
//! keeps each block's valid-page count, and indexes closed blocks by it in
//! per-plane, per-count intrusive lists so no policy scans all blocks:
//!
//! - **greedy**: the head of the lowest non-empty count list, found in a
//!   per-plane bitmap of non-empty lists (a word per 64 counts);
//! - **cost-benefit** (Kawaguchi et al.; Rosenblum & Ousterhout): maximize
//!   `age · (1 − u) / 2u` where age is the time since the block last changed.
//!   A block moves to the tail of its list whenever its count changes, so
//!   each list's head is its oldest block and only heads need scoring;
//! - **fifo**: the oldest closed block (Desnoyers' LRW);
//! - **random**: a uniformly random closed block (rejection sampling);
//! - **d-choices** (Van Houdt): the fewest-valid of `d` random closed blocks.
//!
//! Free blocks are handed out oldest-erased first, which spreads erases.

use crate::config::{GcConfig, VictimPolicy};
use crate::error::{Error, Result};
use crate::nand::{FastDiv, Geometry};
use crate::rng::SimRng;
use crate::units::{BlockId, PlaneId, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const NIL: u32 = u32::MAX;
/// Random-policy probes before falling back to greedy (only reached when
/// almost no block of the plane is closed).
const RANDOM_PROBES: u32 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockState {
    Free,
    Active,
    Closed,
    /// Chosen as a GC victim and out of the index: while its live pages are
    /// copied away, each invalidation is a counter decrement, not a list move.
    Reclaiming,
}

#[derive(Serialize, Deserialize)]
pub struct BlockPool {
    blocks_per_plane: u32,
    by_blocks_per_plane: FastDiv,
    /// Valid units of each plane (the sum of its blocks' counts).
    plane_valid: Vec<u64>,
    /// Units a block holds: its pages, or its mapping units (see
    /// [`counting_units`](BlockPool::counting_units)); valid counts go to it.
    pages_per_block: u32,
    policy: VictimPolicy,
    d: u32,
    rng: SimRng,
    /// Each block's entry, indexed by block id.
    blocks: Vec<BlockEntry>,
    /// List heads and tails, indexed `plane * (pages_per_block + 1) + valid`.
    heads: Vec<u32>,
    tails: Vec<u32>,
    /// A bit per list, set while it is non-empty: [`words`](Self::words) a plane.
    nonempty: Vec<u64>,
    free: Vec<VecDeque<BlockId>>,
    closed: Vec<u32>,
    /// Closed blocks in closing order (FIFO policy only), with the closing
    /// serial that makes stale entries recognisable.
    fifo: Vec<VecDeque<(BlockId, u32)>>,
}

/// What the pool keeps of a block, in one place: a change of a closed
/// block's valid count (every host write's old page) reads and writes its
/// count, state, change time and list links, which six arrays held on six
/// cache lines (in valgrind's cache model on the foundation benchmark,
/// `relink` missed the L1 cache 2.6 times a host write on reads, 0.6 with
/// the entry). Aligned so an entry never straddles two lines.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[repr(C, align(32))]
struct BlockEntry {
    last_change: SimTime,
    /// Neighbours in the block's list of closed blocks with its count.
    prev: u32,
    next: u32,
    /// Closings so far (FIFO policy): tells a FIFO queue's stale entries.
    close_serial: u32,
    valid: u16,
    state: BlockState,
}

impl BlockEntry {
    /// A block never used: erased, in no list.
    const FREE: BlockEntry = BlockEntry {
        last_change: SimTime::ZERO,
        prev: NIL,
        next: NIL,
        close_serial: 0,
        valid: 0,
        state: BlockState::Free,
    };
}

impl BlockPool {
    /// A pool with every block free.
    pub fn new(geo: &Geometry, gc: &GcConfig, seed: u64) -> BlockPool {
        BlockPool::counting_units(geo, gc, seed, 1)
    }

    /// A pool whose valid counts are in mapping units, `units_per_page` a
    /// page (an FTL mapping units smaller than the page).
    pub fn counting_units(geo: &Geometry, gc: &GcConfig, seed: u64, units_per_page: u32) -> BlockPool {
        let blocks = geo.blocks as usize;
        let per_block = geo.pages_per_block * units_per_page;
        let lists = geo.planes as usize * (per_block as usize + 1);
        let free = (0..geo.planes)
            .map(|p| {
                let first = geo.first_block(PlaneId(p)).0;
                (first..first + geo.blocks_per_plane).map(BlockId).collect()
            })
            .collect();
        BlockPool {
            blocks_per_plane: geo.blocks_per_plane,
            by_blocks_per_plane: FastDiv::new(geo.blocks_per_plane),
            plane_valid: vec![0; geo.planes as usize],
            pages_per_block: per_block,
            policy: gc.policy,
            d: gc.d,
            rng: SimRng::derived(seed, 0x6763),
            blocks: vec![BlockEntry::FREE; blocks],
            heads: vec![NIL; lists],
            tails: vec![NIL; lists],
            nonempty: vec![0; geo.planes as usize * (per_block as usize + 1).div_ceil(64)],
            free,
            closed: vec![0; geo.planes as usize],
            fifo: vec![VecDeque::new(); if gc.policy == VictimPolicy::Fifo { geo.planes as usize } else { 0 }],
        }
    }

    #[inline]
    fn plane_of(&self, b: BlockId) -> usize {
        self.by_blocks_per_plane.div(b.0) as usize
    }

    /// Valid units in `plane`.
    pub fn plane_valid(&self, plane: PlaneId) -> u64 {
        self.plane_valid[plane.idx()]
    }

    #[inline]
    fn list(&self, plane: usize, valid: u16) -> usize {
        plane * (self.pages_per_block as usize + 1) + valid as usize
    }

    pub fn state(&self, b: BlockId) -> BlockState {
        self.blocks[b.idx()].state
    }

    #[inline]
    pub fn valid(&self, b: BlockId) -> u32 {
        self.blocks[b.idx()].valid as u32
    }

    pub fn free_count(&self, plane: PlaneId) -> u32 {
        self.free[plane.idx()].len() as u32
    }

    pub fn closed_count(&self, plane: PlaneId) -> u32 {
        self.closed[plane.idx()]
    }

    /// Takes the oldest-erased free block of a plane and makes it active.
    pub fn take_free(&mut self, plane: PlaneId) -> Option<BlockId> {
        let b = self.free[plane.idx()].pop_front()?;
        self.blocks[b.idx()].state = BlockState::Active;
        Some(b)
    }

    /// An active block is full (or abandoned): it becomes a GC candidate.
    pub fn close(&mut self, b: BlockId, now: SimTime) {
        debug_assert_eq!(self.blocks[b.idx()].state, BlockState::Active, "{b} closed twice");
        self.blocks[b.idx()].state = BlockState::Closed;
        let plane = self.plane_of(b);
        self.closed[plane] += 1;
        self.blocks[b.idx()].last_change = now;
        self.link(b);
        if let Some(q) = self.fifo.get_mut(plane) {
            let serial = &mut self.blocks[b.idx()].close_serial;
            *serial = serial.wrapping_add(1);
            q.push_back((b, *serial));
        }
    }

    /// A page of `b` became valid (programmed with live data).
    #[inline]
    pub fn add_valid(&mut self, b: BlockId, now: SimTime) {
        self.change_valid(b, 1, now);
    }

    /// `n` pages of `b` became valid at once (a run of programs).
    #[inline]
    pub fn add_valid_pages(&mut self, b: BlockId, n: u32, now: SimTime) {
        self.change_valid(b, n as i32, now);
    }

    /// A page of `b` became invalid (overwritten, trimmed, or copied away).
    #[inline]
    pub fn invalidate(&mut self, b: BlockId, now: SimTime) {
        self.change_valid(b, -1, now);
    }

    /// `n` pages moved from block `from` to block `to` (GC copies).
    #[inline]
    pub fn transfer_valid(&mut self, from: BlockId, to: BlockId, n: u32, now: SimTime) {
        self.change_valid(from, -(n as i32), now);
        self.change_valid(to, n as i32, now);
    }

    /// Inlined: the counts are a few instructions (an active block's, a
    /// program's, are all of it); a closed block's move between the lists
    /// is a call.
    #[inline(always)]
    fn change_valid(&mut self, b: BlockId, delta: i32, now: SimTime) {
        let old = self.blocks[b.idx()].valid;
        let v = old as i32 + delta;
        assert!(
            (0..=self.pages_per_block as i32).contains(&v),
            "valid count of {b} would become {v}: an FTL double-counted a page"
        );
        self.blocks[b.idx()].valid = v as u16;
        // The plane found once for the count and both lists (a division
        // each time: a host page's invalidation moves its old block).
        let plane = self.plane_of(b);
        self.plane_valid[plane] = (self.plane_valid[plane] as i64 + delta as i64) as u64;
        if self.blocks[b.idx()].state == BlockState::Closed {
            self.relink(b, plane, old, v as u16, now);
        }
    }

    /// Closed block `b` of `plane`, changed at `now`, moves from the list
    /// of blocks with `old` valid pages to that with `new`.
    #[inline(never)]
    fn relink(&mut self, b: BlockId, plane: usize, old: u16, new: u16, now: SimTime) {
        self.blocks[b.idx()].last_change = now;
        self.unlink_from(b, plane, old);
        self.link_to(b, plane, new);
    }

    /// Takes a closed block (a chosen victim) out of the victim index while
    /// GC empties it; [`release`](Self::release) frees it afterwards.
    pub fn start_reclaim(&mut self, b: BlockId) {
        debug_assert_eq!(self.blocks[b.idx()].state, BlockState::Closed, "{b} reclaimed while not closed");
        if self.blocks[b.idx()].state == BlockState::Closed {
            self.unlink(b);
            let plane = self.plane_of(b);
            self.closed[plane] -= 1;
            self.blocks[b.idx()].state = BlockState::Reclaiming;
        }
    }

    /// An erased block returns to its plane's free queue. Its valid count
    /// must have dropped to zero: erasing live data is an FTL bug.
    pub fn release(&mut self, b: BlockId) -> Result<()> {
        let valid = self.blocks[b.idx()].valid;
        if valid != 0 {
            return Err(Error::invariant("block pool", format!("{b} released with {valid} valid pages")));
        }
        let plane = self.plane_of(b);
        match self.blocks[b.idx()].state {
            BlockState::Closed => {
                self.unlink(b);
                self.closed[plane] -= 1;
            }
            BlockState::Active | BlockState::Reclaiming => {}
            BlockState::Free => return Err(Error::invariant("block pool", format!("{b} released twice"))),
        }
        self.blocks[b.idx()].state = BlockState::Free;
        self.free[plane].push_back(b);
        Ok(())
    }

    /// Rebuilds the pool after a power cut from what recovery found on
    /// flash: a block with no page programmed is free (in block order:
    /// erase ages were RAM), a full one is closed with `valid[b]` valid
    /// pages, a GC candidate, and a partly written one is left active for
    /// the FTL to write on or [`close`](Self::close); those are returned.
    pub fn restore(&mut self, written: &[u32], valid: &[u32], now: SimTime) -> Vec<BlockId> {
        self.rebuild(written, valid, now, true)
    }

    /// As [`restore`](Self::restore), but every block with a page
    /// programmed is left active (the block-mapped FTLs keep their data and
    /// log blocks out of the victim index).
    pub fn restore_in_use(&mut self, written: &[u32], valid: &[u32]) {
        self.rebuild(written, valid, SimTime::ZERO, false);
    }

    fn rebuild(&mut self, written: &[u32], valid: &[u32], now: SimTime, close_full: bool) -> Vec<BlockId> {
        // Change times and closing serials are left as they were: closing
        // a block sets its change time, and the FIFO queues empty below.
        for e in &mut self.blocks {
            *e = BlockEntry { last_change: e.last_change, close_serial: e.close_serial, ..BlockEntry::FREE };
        }
        self.plane_valid.fill(0);
        self.heads.fill(NIL);
        self.tails.fill(NIL);
        self.nonempty.fill(0);
        self.closed.fill(0);
        self.free.iter_mut().for_each(VecDeque::clear);
        self.fifo.iter_mut().for_each(VecDeque::clear);
        let mut partial = Vec::new();
        for b in 0..self.blocks.len() {
            let block = BlockId(b as u32);
            if written[b] == 0 {
                let plane = self.plane_of(block);
                self.free[plane].push_back(block);
                continue;
            }
            self.blocks[b].valid = valid[b] as u16;
            let plane = self.plane_of(block);
            self.plane_valid[plane] += valid[b] as u64;
            self.blocks[b].state = BlockState::Active;
            if !close_full {
                continue;
            }
            if written[b] < self.pages_per_block {
                partial.push(block);
            } else {
                self.close(block, now);
            }
        }
        partial
    }

    /// Bitmap words a plane: one per 64 valid counts (0 to pages per block).
    #[inline]
    fn words(&self) -> usize {
        (self.pages_per_block as usize + 1).div_ceil(64)
    }

    /// The bit of `plane`'s list of blocks with `valid` pages.
    #[inline]
    fn bit(&self, plane: usize, valid: u16) -> (usize, u64) {
        (plane * self.words() + valid as usize / 64, 1 << (valid % 64))
    }

    fn link(&mut self, b: BlockId) {
        self.link_to(b, self.plane_of(b), self.blocks[b.idx()].valid);
    }

    /// [`link`](Self::link) `b` of `plane`, with `valid` pages. This and
    /// [`unlink_from`](Self::unlink_from) are inlined into
    /// [`relink`](Self::relink), out of line itself: inlined into
    /// `change_valid`, the GC copy path's code beside them came out ~80
    /// instructions a request worse on the foundation benchmark.
    #[inline(always)]
    fn link_to(&mut self, b: BlockId, plane: usize, valid: u16) {
        let l = self.list(plane, valid);
        let tail = self.tails[l];
        self.blocks[b.idx()].prev = tail;
        self.blocks[b.idx()].next = NIL;
        if tail == NIL {
            let (w, bit) = self.bit(plane, valid);
            self.nonempty[w] |= bit;
            self.heads[l] = b.0;
        } else {
            self.blocks[tail as usize].next = b.0;
        }
        self.tails[l] = b.0;
    }

    fn unlink(&mut self, b: BlockId) {
        self.unlink_from(b, self.plane_of(b), self.blocks[b.idx()].valid);
    }

    /// [`unlink`](Self::unlink) `b` of `plane` from the list of blocks
    /// with `valid` pages.
    #[inline(always)]
    fn unlink_from(&mut self, b: BlockId, plane: usize, valid: u16) {
        let l = self.list(plane, valid);
        let (p, n) = (self.blocks[b.idx()].prev, self.blocks[b.idx()].next);
        if p == NIL && n == NIL {
            let (w, bit) = self.bit(plane, valid);
            self.nonempty[w] &= !bit;
        }
        if p == NIL {
            self.heads[l] = n;
        } else {
            self.blocks[p as usize].next = n;
        }
        if n == NIL {
            self.tails[l] = p;
        } else {
            self.blocks[n as usize].prev = p;
        }
    }

    /// Chooses a closed block of `plane` to reclaim, by the configured policy.
    /// The block stays closed until [`release`](Self::release).
    pub fn select_victim(&mut self, plane: PlaneId, now: SimTime) -> Option<BlockId> {
        if self.closed[plane.idx()] == 0 {
            return None;
        }
        match self.policy {
            VictimPolicy::Greedy => self.greedy(plane),
            VictimPolicy::CostBenefit => self.cost_benefit(plane, now),
            VictimPolicy::Fifo => self.fifo(plane),
            VictimPolicy::Random => self.random_closed(plane).or_else(|| self.greedy(plane)),
            VictimPolicy::DChoices => {
                let mut best: Option<BlockId> = None;
                for _ in 0..self.d {
                    let Some(b) = self.random_closed(plane) else { break };
                    if best.is_none_or(|c| self.valid(b) < self.valid(c)) {
                        best = Some(b);
                    }
                }
                best.or_else(|| self.greedy(plane))
            }
        }
    }

    /// As [`select_victim`](Self::select_victim), for a plane that can take
    /// only `room` more valid pages (units): a victim with more gives way to
    /// the block with the fewest. After a power cut a plane can have no free
    /// block, only the rest of its open blocks, and the victim its GC was
    /// reclaiming when the power went (greedy's choice never has more live
    /// pages than that rest; FIFO's or a random one can).
    pub fn select_victim_fitting(&mut self, plane: PlaneId, now: SimTime, room: u32) -> Option<BlockId> {
        let victim = self.select_victim(plane, now)?;
        if self.valid(victim) <= room { Some(victim) } else { self.greedy(plane) }
    }

    /// A victim over all planes: the plane whose closed block has the
    /// fewest valid pages decides, and its policy picks there (FTLs that
    /// reclaim across planes). `None` when no closed block has an invalid page.
    pub fn select_victim_anywhere(&mut self, now: SimTime) -> Option<BlockId> {
        let planes = self.free.len() as u32;
        let (v, plane) =
            (0..planes).filter_map(|p| self.fewest_valid(PlaneId(p)).map(|v| (v, p))).min_by_key(|&(v, p)| (v, p))?;
        if v >= self.pages_per_block {
            return None;
        }
        self.select_victim(PlaneId(plane), now)
    }

    /// The fewest valid pages of any closed block of `plane`.
    /// The block [`select_victim`](Self::select_victim) would most likely
    /// pick next, without drawing on the random stream: a hint for
    /// prefetching its mapping entries. `None` for the randomised policies.
    pub fn likely_victim(&self, plane: PlaneId) -> Option<BlockId> {
        match self.policy {
            VictimPolicy::Greedy => self.greedy(plane),
            VictimPolicy::Fifo => self.fifo[plane.idx()].front().map(|&(b, _)| b),
            VictimPolicy::CostBenefit | VictimPolicy::Random | VictimPolicy::DChoices => None,
        }
    }

    pub fn fewest_valid(&self, plane: PlaneId) -> Option<u32> {
        self.greedy(plane).map(|b| self.valid(b))
    }

    /// The closed block of `plane` with the fewest valid pages.
    pub fn greedy(&self, plane: PlaneId) -> Option<BlockId> {
        let (first, words) = (plane.idx() * self.words(), self.words());
        let (i, &word) = self.nonempty[first..first + words].iter().enumerate().find(|&(_, &w)| w != 0)?;
        let valid = i * 64 + word.trailing_zeros() as usize;
        Some(BlockId(self.heads[self.list(plane.idx(), 0) + valid]))
    }

    fn cost_benefit(&self, plane: PlaneId, now: SimTime) -> Option<BlockId> {
        let base = self.list(plane.idx(), 0);
        if self.heads[base] != NIL {
            return Some(BlockId(self.heads[base]));
        }
        let ppb = self.pages_per_block as f64;
        let mut best: Option<(f64, BlockId)> = None;
        for v in 1..=self.pages_per_block as usize {
            let h = self.heads[base + v];
            if h == NIL {
                continue;
            }
            let u = v as f64 / ppb;
            // +1 ns keeps blocks changed "now" comparable instead of all scoring 0.
            let age = (now.since(self.blocks[h as usize].last_change).0 + 1) as f64;
            let score = age * (1.0 - u) / (2.0 * u);
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, BlockId(h)));
            }
        }
        best.map(|(_, b)| b)
    }

    fn fifo(&mut self, plane: PlaneId) -> Option<BlockId> {
        let q = &mut self.fifo[plane.idx()];
        while let Some(&(b, serial)) = q.front() {
            let e = &self.blocks[b.idx()];
            if e.state == BlockState::Closed && e.close_serial == serial {
                return Some(b);
            }
            q.pop_front();
        }
        None
    }

    fn random_closed(&mut self, plane: PlaneId) -> Option<BlockId> {
        let first = plane.0 * self.blocks_per_plane;
        for _ in 0..RANDOM_PROBES {
            let b = BlockId(first + self.rng.below(self.blocks_per_plane as u64) as u32);
            if self.blocks[b.idx()].state == BlockState::Closed {
                return Some(b);
            }
        }
        None
    }

    /// Blocks holding at least one valid page (N_vb).
    pub fn blocks_with_valid_data(&self) -> u64 {
        self.blocks.iter().filter(|e| e.valid > 0).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;

    fn pool(policy: VictimPolicy) -> BlockPool {
        let geo = Geometry::new(&GeometryConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 8,
            pages_per_block: 4,
            page_size: 512,
        });
        let gc = GcConfig { policy, ..GcConfig::default() };
        BlockPool::new(&geo, &gc, 1)
    }

    /// Fills `n` blocks of plane 0 with `valid[i]` valid pages, closed at time i.
    fn fill(p: &mut BlockPool, valid: &[u32]) -> Vec<BlockId> {
        valid
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let b = p.take_free(PlaneId(0)).unwrap();
                for _ in 0..v {
                    p.add_valid(b, SimTime(i as u64));
                }
                p.close(b, SimTime(i as u64));
                b
            })
            .collect()
    }

    proptest::proptest! {
        /// The bitmap of non-empty lists finds what scanning every list
        /// head does, over random closes, count changes, reclaims and
        /// releases, with counts spanning several bitmap words.
        #[test]
        fn greedy_bitmap_agrees_with_scanning_the_lists(ops in proptest::collection::vec((0u8..4, 0usize..32, 0u32..130), 1..300)) {
            let geo = Geometry::new(&GeometryConfig {
                channels: 1,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 2,
                blocks_per_plane: 16,
                pages_per_block: 128,
                page_size: 512,
            });
            let mut p = BlockPool::new(&geo, &GcConfig { policy: VictimPolicy::Greedy, ..GcConfig::default() }, 1);
            for (i, (op, block, n)) in ops.into_iter().enumerate() {
                let (b, now) = (BlockId(block as u32), SimTime(i as u64));
                match (op, p.state(b)) {
                    (0, _) => {
                        if let Some(f) = p.take_free(PlaneId(block as u32 % 2)) {
                            for _ in 0..n.min(128) {
                                p.add_valid(f, now);
                            }
                            p.close(f, now);
                        }
                    }
                    (1, BlockState::Closed) => {
                        for _ in 0..n.min(p.valid(b)) {
                            p.invalidate(b, now);
                        }
                    }
                    (2, BlockState::Closed) => p.start_reclaim(b),
                    (3, BlockState::Closed | BlockState::Reclaiming) => {
                        while p.valid(b) > 0 {
                            p.invalidate(b, now);
                        }
                        p.release(b).unwrap();
                    }
                    _ => {}
                }
                for plane in 0..2 {
                    let base = p.list(plane, 0);
                    let scan = p.heads[base..=base + 128].iter().find(|&&h| h != NIL).map(|&h| BlockId(h));
                    proptest::prop_assert_eq!(p.greedy(PlaneId(plane as u32)), scan);
                }
            }
        }
    }

    #[test]
    fn greedy_picks_fewest_valid_and_tracks_changes() {
        let mut p = pool(VictimPolicy::Greedy);
        let b = fill(&mut p, &[3, 2, 4, 2]);
        assert_eq!(p.select_victim(PlaneId(0), SimTime(9)), Some(b[1]));
        p.invalidate(b[2], SimTime(10));
        p.invalidate(b[2], SimTime(10));
        p.invalidate(b[2], SimTime(10));
        assert_eq!(p.select_victim(PlaneId(0), SimTime(11)), Some(b[2]));
        assert_eq!(p.select_victim(PlaneId(1), SimTime(11)), None, "other plane has no closed blocks");
    }

    #[test]
    fn fifo_picks_oldest_closed() {
        let mut p = pool(VictimPolicy::Fifo);
        let b = fill(&mut p, &[4, 0, 1]);
        assert_eq!(p.select_victim(PlaneId(0), SimTime(5)), Some(b[0]));
        for _ in 0..4 {
            p.invalidate(b[0], SimTime(6));
        }
        p.release(b[0]).unwrap();
        assert_eq!(p.select_victim(PlaneId(0), SimTime(7)), Some(b[1]));
    }

    #[test]
    fn cost_benefit_prefers_old_cold_blocks() {
        let mut p = pool(VictimPolicy::CostBenefit);
        // b0: u=3/4 closed at 0 (old); b1: u=2/4 closed at 1 (young).
        let b = fill(&mut p, &[3, 2]);
        // At t=2: b0 score 3*(1/4)/(3/2)=0.5, b1 score 2*(1/2)/1=1 -> b1.
        assert_eq!(p.select_victim(PlaneId(0), SimTime(2)), Some(b[1]));
        // Much later, both ages ~ equal: the emptier block still wins.
        assert_eq!(p.select_victim(PlaneId(0), SimTime(1_000_000)), Some(b[1]));
        // Touching b1 makes it young again; b0 now old enough to win.
        p.add_valid(b[1], SimTime(1_000_000));
        assert_eq!(p.select_victim(PlaneId(0), SimTime(1_000_001)), Some(b[0]));
    }

    #[test]
    fn random_and_dchoices_only_pick_closed_blocks() {
        for policy in [VictimPolicy::Random, VictimPolicy::DChoices] {
            let mut p = pool(policy);
            let b = fill(&mut p, &[1, 2, 3]);
            let active = p.take_free(PlaneId(0)).unwrap();
            for t in 0..200 {
                let v = p.select_victim(PlaneId(0), SimTime(t)).unwrap();
                assert!(b.contains(&v) && v != active);
            }
        }
    }

    #[test]
    fn release_refuses_live_blocks() {
        let mut p = pool(VictimPolicy::Greedy);
        let b = fill(&mut p, &[1]);
        assert!(p.release(b[0]).is_err());
        p.invalidate(b[0], SimTime(1));
        p.release(b[0]).unwrap();
        assert_eq!(p.free_count(PlaneId(0)), 8);
        assert_eq!(p.closed_count(PlaneId(0)), 0);
    }
}
