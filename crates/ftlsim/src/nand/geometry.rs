//! Derived, checked geometry constants and physical address arithmetic.
//!
//! Numbering is plane-major: a plane's blocks are consecutive block ids and
//! a block's pages consecutive PPNs. Planes are numbered channel-major
//! (`((channel * chips + chip) * dies + die) * planes + plane`), so a PPN
//! decodes into a full physical address by division alone.

use crate::config::GeometryConfig;
use crate::units::{BlockId, PlaneId, Ppn};
use serde::{Deserialize, Serialize};

/// Division of 32-bit numbers by a fixed divisor with a multiply instead of
/// a `div` instruction (Lemire, Kaser & Kurz, "Faster remainder by direct
/// computation", 2019): exact for every 32-bit numerator. PPN decoding runs
/// several divisions per flash operation, so this matters on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    pub fn new(d: u32) -> FastDiv {
        assert!(d > 0, "division by zero");
        FastDiv { d, m: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 } }
    }

    #[inline]
    pub fn div(self, n: u32) -> u32 {
        if self.d == 1 { n } else { ((self.m as u128 * n as u128) >> 64) as u32 }
    }

    #[inline]
    pub fn rem(self, n: u32) -> u32 {
        if self.d == 1 { 0 } else { ((self.m.wrapping_mul(n as u64) as u128 * self.d as u128) >> 64) as u32 }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    by_pages_per_block: FastDiv,
    by_blocks_per_plane: FastDiv,
    by_planes_per_channel: FastDiv,
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
            by_pages_per_block: FastDiv::new(c.pages_per_block),
            by_blocks_per_plane: FastDiv::new(c.blocks_per_plane),
            by_planes_per_channel: FastDiv::new(c.planes_per_die * c.dies_per_chip * c.chips_per_channel),
        }
    }

    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }

    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        BlockId(self.by_pages_per_block.div(ppn.0))
    }

    #[inline]
    pub fn page_in_block(&self, ppn: Ppn) -> u32 {
        self.by_pages_per_block.rem(ppn.0)
    }

    #[inline]
    pub fn ppn(&self, block: BlockId, page: u32) -> Ppn {
        Ppn(block.0 * self.pages_per_block + page)
    }

    #[inline]
    pub fn plane_of(&self, block: BlockId) -> PlaneId {
        PlaneId(self.by_blocks_per_plane.div(block.0))
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
        self.by_planes_per_channel.div(plane.0)
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
    fn fast_division_is_exact() {
        let mut x = 0x9E37_79B9u32;
        for d in [1u32, 2, 3, 7, 64, 100, 128, 1096, 4095, 65535, 1 << 20, u32::MAX] {
            let f = FastDiv::new(d);
            for n in [0u32, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1, u32::MAX / 2] {
                assert_eq!((f.div(n), f.rem(n)), (n / d, n % d), "{n} / {d}");
            }
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                assert_eq!((f.div(x), f.rem(x)), (x / d, x % d), "{x} / {d}");
            }
        }
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
