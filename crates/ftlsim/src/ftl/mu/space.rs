//! μ-FTL's flash space: the shared [`BlockPool`] (free blocks, valid counts,
//! victim index) plus the paper's per-block invalid-page counters (1 B per
//! block), which choose GC victims and say when a block is wholly invalid
//! and can be erased at once.

use crate::error::{Error, Result};
use crate::ftl::pool::{BlockPool, BlockState};
use crate::nand::Geometry;
use crate::units::{BlockId, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Space {
    pub geo: Geometry,
    pub pool: BlockPool,
    /// Invalid pages of each block.
    pub invalid: Vec<u8>,
    /// Blocks taken from each plane so far.
    taken: Vec<u64>,
}

impl Space {
    pub fn new(geo: Geometry, pool: BlockPool) -> Space {
        Space { invalid: vec![0; geo.blocks as usize], pool, taken: vec![0; geo.planes as usize], geo }
    }

    pub fn free_blocks(&self) -> u32 {
        (0..self.geo.planes).map(|p| self.pool.free_count(PlaneId(p))).sum()
    }

    /// A free block from the plane that has given the fewest so far (the
    /// lowest on ties), of those with one free: every plane takes its
    /// share of the writes, whatever GC frees where. Taken from the plane
    /// with the most free blocks, as before, the tree's blocks (most of
    /// GC's victims) drew the next tree blocks to the planes they were
    /// freed on, and the tree's writes piled onto a few planes:
    /// `bench/mu.sh`'s first 300,000 requests kept one plane busy 86% of
    /// the time and the others 19–54%, 121 IOPS; now each 44–50%, 157 IOPS
    /// (WA 43.63 → 43.57). Not by time (the plane free soonest), so a
    /// fast-forwarded preconditioning still leaves the drive a timed one
    /// would.
    pub fn take_block(&mut self, what: &str) -> Result<BlockId> {
        let no_block = || Error::DeviceFull(format!("mu: no free block left for the {what}; GC cannot reclaim one"));
        let plane = (0..self.geo.planes)
            .map(PlaneId)
            .filter(|&p| self.pool.free_count(p) > 0)
            .min_by_key(|&p| (self.taken[p.idx()], p.0))
            .ok_or_else(no_block)?;
        self.taken[plane.idx()] += 1;
        self.pool.take_free(plane).ok_or_else(no_block)
    }

    /// `n` pages from `ppn` on became invalid; returns whether their block
    /// is now closed and wholly invalid (to be erased at once).
    pub fn invalidate(&mut self, ppn: Ppn, n: u32, now: SimTime) -> bool {
        let b = self.geo.block_of(ppn);
        self.invalid[b.idx()] += n as u8;
        for _ in 0..n {
            self.pool.invalidate(b, now);
        }
        self.wholly_invalid(b)
    }

    pub fn wholly_invalid(&self, b: BlockId) -> bool {
        self.pool.state(b) == BlockState::Closed && self.invalid[b.idx()] as u32 == self.geo.pages_per_block
    }

    /// A block erased: back to the pool with a zero counter.
    pub fn release(&mut self, b: BlockId) -> Result<()> {
        self.invalid[b.idx()] = 0;
        self.pool.release(b)
    }

    /// The closed block with the most invalid pages over all planes, if it
    /// has any.
    pub fn victim(&mut self, now: SimTime) -> Option<BlockId> {
        self.pool.select_victim_anywhere(now)
    }
}
