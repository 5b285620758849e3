//! μ-FTL's logical partitions: the logical space cut into equal partitions
//! (256 MiB by default), each writing into its own update block, allocated
//! lazily on its first write. Keeping partitions apart keeps a partition's
//! pages physically together, so extents stay long; a write that crosses a
//! partition or fills its update block is split into one extent per piece.

use crate::units::{BlockId, Lpn};
use serde::{Deserialize, Serialize};

const NONE: u32 = u32::MAX;

#[derive(Serialize, Deserialize)]
pub struct Partitions {
    pages_each: u32,
    update: Vec<u32>,
}

impl Partitions {
    /// `pages_each` logical pages per partition (0: one for the whole space).
    pub fn new(logical_pages: u32, pages_each: u32) -> Partitions {
        let pages_each = if pages_each == 0 { logical_pages.max(1) } else { pages_each };
        Partitions { pages_each, update: vec![NONE; logical_pages.div_ceil(pages_each).max(1) as usize] }
    }

    pub fn count(&self) -> u32 {
        self.update.len() as u32
    }

    #[inline]
    pub fn of(&self, lpn: Lpn) -> u32 {
        lpn.0 / self.pages_each
    }

    pub fn update_block(&self, part: u32) -> Option<BlockId> {
        let b = self.update[part as usize];
        (b != NONE).then_some(BlockId(b))
    }

    pub fn set_update_block(&mut self, part: u32, b: Option<BlockId>) {
        self.update[part as usize] = b.map_or(NONE, |b| b.0);
    }

    /// Power failed: no partition has an update block until recovery
    /// finds them.
    pub fn clear(&mut self) {
        self.update.fill(NONE);
    }

    pub fn update_blocks(&self) -> impl Iterator<Item = BlockId> + '_ {
        self.update.iter().filter(|&&b| b != NONE).map(|&b| BlockId(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_the_space() {
        let p = Partitions::new(100, 32);
        assert_eq!(p.count(), 4);
        assert_eq!((p.of(Lpn(31)), p.of(Lpn(32)), p.of(Lpn(99))), (0, 1, 3));
        assert_eq!(Partitions::new(100, 0).count(), 1);
    }
}
