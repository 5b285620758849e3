//! μ-FTL's flash space: the shared [`BlockPool`] (free blocks, valid counts,
//! victim index) plus the paper's per-block invalid-page counters (1 B per
//! block), which choose GC victims and say when a block is wholly invalid
//! and can be erased at once.

use crate::error::{Error, Result};
use crate::ftl::pool::{BlockPool, BlockState};
use crate::ftl::striping::emptiest_plane;
use crate::nand::Geometry;
use crate::units::{BlockId, PlaneId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Space {
    pub geo: Geometry,
    pub pool: BlockPool,
    /// Invalid pages of each block.
    pub invalid: Vec<u8>,
}

impl Space {
    pub fn new(geo: Geometry, pool: BlockPool) -> Space {
        Space { invalid: vec![0; geo.blocks as usize], pool, geo }
    }

    pub fn free_blocks(&self) -> u32 {
        (0..self.geo.planes).map(|p| self.pool.free_count(PlaneId(p))).sum()
    }

    /// A free block from the plane with the most free blocks.
    pub fn take_block(&mut self, what: &str) -> Result<BlockId> {
        let plane = emptiest_plane(0..self.geo.planes, |p| self.pool.free_count(p));
        self.pool
            .take_free(plane)
            .ok_or_else(|| Error::DeviceFull(format!("mu: no free block left for the {what}; GC cannot reclaim one")))
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
