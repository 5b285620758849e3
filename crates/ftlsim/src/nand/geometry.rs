//! Derived, checked geometry constants and physical address arithmetic.
//!
//! Numbering is plane-major: a plane's blocks are consecutive block ids and
//! a block's pages consecutive PPNs. Planes are numbered channel-major
//! (`((channel * chips + chip) * dies + die) * planes + plane`), so a PPN
//! decodes into a full physical address by division alone.

use crate::config::GeometryConfig;
use crate::units::{BlockId, PlaneId, Ppn};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_size: u32,
    /// Total planes, blocks and pages of the device.
    pub planes: u32,
    pub blocks: u32,
    pub pages: u32,
    pub sectors_per_page: u32,
}

/// A PPN decoded into its physical coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    pub channel: u32,
    pub chip: u32,
    pub die: u32,
    pub plane: u32,
    pub block: u32,
    pub page: u32,
}

impl Geometry {
    /// Builds from a validated config (see [`crate::config::Config::validate`]).
    pub fn new(c: &GeometryConfig) -> Geometry {
        let planes = c.channels * c.chips_per_channel * c.dies_per_chip * c.planes_per_die;
        let blocks = planes * c.blocks_per_plane;
        Geometry {
            channels: c.channels,
            chips_per_channel: c.chips_per_channel,
            dies_per_chip: c.dies_per_chip,
            planes_per_die: c.planes_per_die,
            blocks_per_plane: c.blocks_per_plane,
            pages_per_block: c.pages_per_block,
            page_size: c.page_size,
            planes,
            blocks,
            pages: blocks * c.pages_per_block,
            sectors_per_page: c.page_size / 512,
        }
    }

    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }

    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        BlockId(ppn.0 / self.pages_per_block)
    }

    #[inline]
    pub fn page_in_block(&self, ppn: Ppn) -> u32 {
        ppn.0 % self.pages_per_block
    }

    #[inline]
    pub fn ppn(&self, block: BlockId, page: u32) -> Ppn {
        Ppn(block.0 * self.pages_per_block + page)
    }

    #[inline]
    pub fn plane_of(&self, block: BlockId) -> PlaneId {
        PlaneId(block.0 / self.blocks_per_plane)
    }

    /// The first block of a plane; its blocks are `first..first + blocks_per_plane`.
    #[inline]
    pub fn first_block(&self, plane: PlaneId) -> BlockId {
        BlockId(plane.0 * self.blocks_per_plane)
    }

    /// Global die index of a plane.
    #[inline]
    pub fn die_of(&self, plane: PlaneId) -> u32 {
        plane.0 / self.planes_per_die
    }

    /// Channel of a plane.
    #[inline]
    pub fn channel_of(&self, plane: PlaneId) -> u32 {
        plane.0 / (self.planes_per_die * self.dies_per_chip * self.chips_per_channel)
    }

    pub fn plane_id(&self, channel: u32, chip: u32, die: u32, plane: u32) -> PlaneId {
        PlaneId(((channel * self.chips_per_channel + chip) * self.dies_per_chip + die) * self.planes_per_die + plane)
    }

    pub fn address(&self, ppn: Ppn) -> Address {
        let block = self.block_of(ppn);
        let plane_id = self.plane_of(block).0;
        let plane = plane_id % self.planes_per_die;
        let die_id = plane_id / self.planes_per_die;
        let die = die_id % self.dies_per_chip;
        let chip_id = die_id / self.dies_per_chip;
        Address {
            channel: chip_id / self.chips_per_channel,
            chip: chip_id % self.chips_per_channel,
            die,
            plane,
            block: block.0 % self.blocks_per_plane,
            page: self.page_in_block(ppn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry::new(&GeometryConfig {
            channels: 4,
            chips_per_channel: 2,
            dies_per_chip: 2,
            planes_per_die: 2,
            blocks_per_plane: 10,
            pages_per_block: 8,
            page_size: 4096,
        })
    }

    #[test]
    fn counts() {
        let g = geo();
        assert_eq!(g.planes, 32);
        assert_eq!(g.blocks, 320);
        assert_eq!(g.pages, 2560);
        assert_eq!(g.dies(), 16);
        assert_eq!(g.sectors_per_page, 8);
    }

    #[test]
    fn address_round_trip() {
        let g = geo();
        for ch in 0..4 {
            for chip in 0..2 {
                for die in 0..2 {
                    for pl in 0..2 {
                        let p = g.plane_id(ch, chip, die, pl);
                        assert_eq!(g.channel_of(p), ch);
                        let b = BlockId(g.first_block(p).0 + 3);
                        let a = g.address(g.ppn(b, 5));
                        assert_eq!(a, Address { channel: ch, chip, die, plane: pl, block: 3, page: 5 });
                        assert_eq!(g.die_of(p), (ch * 2 + chip) * 2 + die);
                    }
                }
            }
        }
    }
}
