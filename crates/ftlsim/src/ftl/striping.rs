//! How the block-mapped FTLs spread logical pages over chips, as in Figures
//! 1 and 2 of Kim et al., "FTL Design for TRIM Command".
//!
//! Each chip (channel × chip of a channel) runs its own block-mapped FTL over
//! its own logical blocks. A logical block of one chip is named by a *key*,
//! `chip * blocks_per_chip + lbn`, and a page of it by (key, offset). With
//! **page** striping consecutive logical pages go to consecutive chips, so a
//! request's pages spread over all channels and one logical block's pages
//! are `chips` host pages apart; with **block** striping consecutive logical
//! blocks go to consecutive chips and a request stays on one chip until it
//! crosses a block boundary. Chips are numbered channel first, so page
//! striping alternates channels before chips of one channel.
//!
//! The *striped page* of (key, offset) is `key * pages_per_block + offset`:
//! a host range of pages is one contiguous striped range on every chip
//! ([`Stripes::chip_ranges`]), which is what the TRIM list stores.

use crate::config::Striping;
use crate::nand::Geometry;
use crate::units::{Lpn, PlaneId};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Stripes {
    mode: Striping,
    chips: u32,
    ppb: u32,
    keys_per_chip: u32,
    logical_pages: u64,
    channels: u32,
    planes_per_chip: u32,
}

impl Stripes {
    pub fn new(mode: Striping, geo: &Geometry, logical_pages: u64) -> Stripes {
        let chips = geo.channels * geo.chips_per_channel;
        let ppb = geo.pages_per_block as u64;
        let keys_per_chip = match mode {
            Striping::Page => logical_pages.div_ceil(chips as u64).div_ceil(ppb),
            Striping::Block => logical_pages.div_ceil(ppb).div_ceil(chips as u64),
        };
        Stripes {
            mode,
            chips,
            ppb: geo.pages_per_block,
            keys_per_chip: keys_per_chip as u32,
            logical_pages,
            channels: geo.channels,
            planes_per_chip: geo.dies_per_chip * geo.planes_per_die,
        }
    }

    pub fn chips(&self) -> u32 {
        self.chips
    }

    /// Logical blocks per chip (the last may be partly beyond the logical space).
    pub fn keys_per_chip(&self) -> u32 {
        self.keys_per_chip
    }

    pub fn keys(&self) -> u32 {
        self.keys_per_chip * self.chips
    }

    #[inline]
    pub fn chip_of(&self, key: u32) -> u32 {
        key / self.keys_per_chip
    }

    /// The planes of a chip.
    pub fn planes(&self, chip: u32, geo: &Geometry) -> std::ops::Range<u32> {
        let first = geo.plane_id(chip % self.channels, chip / self.channels, 0, 0).0;
        first..first + self.planes_per_chip
    }

    /// The (key, offset) holding a logical page.
    #[inline]
    pub fn locate(&self, lpn: Lpn) -> (u32, u32) {
        let (c, ppb) = (self.chips, self.ppb);
        match self.mode {
            Striping::Page => {
                let (chip, local) = (lpn.0 % c, lpn.0 / c);
                (chip * self.keys_per_chip + local / ppb, local % ppb)
            }
            Striping::Block => {
                let g = lpn.0 / ppb;
                ((g % c) * self.keys_per_chip + g / c, lpn.0 % ppb)
            }
        }
    }

    /// The logical page at (key, offset), `None` beyond the logical space.
    #[inline]
    pub fn lpn(&self, key: u32, off: u32) -> Option<Lpn> {
        let (chip, lbn) = (key / self.keys_per_chip, key % self.keys_per_chip);
        let (c, ppb) = (self.chips as u64, self.ppb as u64);
        let lpn = match self.mode {
            Striping::Page => (lbn as u64 * ppb + off as u64) * c + chip as u64,
            Striping::Block => (lbn as u64 * c + chip as u64) * ppb + off as u64,
        };
        (lpn < self.logical_pages).then_some(Lpn(lpn as u32))
    }

    /// The striped page of a logical page.
    #[inline]
    pub fn striped(&self, lpn: Lpn) -> u32 {
        let (key, off) = self.locate(lpn);
        key * self.ppb + off
    }

    /// The striped pages of logical pages `first..end`: one contiguous
    /// range per chip that holds any of them.
    pub fn chip_ranges(&self, first: u32, end: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.chips).filter_map(move |chip| {
            if first >= end {
                return None;
            }
            let base = chip * self.keys_per_chip * self.ppb;
            let (lo, hi) = match self.mode {
                Striping::Page => {
                    let c = self.chips;
                    ((first + c - 1 - chip) / c, (end + c - 1 - chip) / c)
                }
                Striping::Block => self.block_striped_range(chip, first, end)?,
            };
            (lo < hi).then_some((base + lo, base + hi))
        })
    }

    /// Chip-local page range of `first..end` under block striping.
    fn block_striped_range(&self, chip: u32, first: u32, end: u32) -> Option<(u32, u32)> {
        let (c, ppb) = (self.chips, self.ppb);
        let (ga, gb) = (first / ppb, (end - 1) / ppb);
        let g1 = ga + (chip + c - ga % c) % c;
        if g1 > gb {
            return None;
        }
        let gl = gb - (gb % c + c - chip) % c;
        let lo = (g1 / c) * ppb + if g1 == ga { first % ppb } else { 0 };
        let hi = (gl / c) * ppb + if gl == gb { (end - 1) % ppb + 1 } else { ppb };
        Some((lo, hi))
    }
}

/// The plane of a chip with the most free blocks (lowest index on ties).
pub fn emptiest_plane(planes: std::ops::Range<u32>, free: impl Fn(PlaneId) -> u32) -> PlaneId {
    planes.map(PlaneId).max_by_key(|&p| (free(p), std::cmp::Reverse(p.0))).expect("a chip has planes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;

    fn geo(channels: u32, chips: u32) -> Geometry {
        Geometry::new(&GeometryConfig {
            channels,
            chips_per_channel: chips,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 8,
            pages_per_block: 4,
            page_size: 2048,
        })
    }

    #[test]
    fn locate_and_lpn_are_inverse_and_ranges_cover_exactly() {
        for mode in [Striping::Page, Striping::Block] {
            let g = geo(3, 2);
            let logical = 100;
            let s = Stripes::new(mode, &g, logical);
            let mut seen = vec![false; (s.keys() * 4) as usize];
            for lpn in 0..logical as u32 {
                let (key, off) = s.locate(Lpn(lpn));
                assert_eq!(s.lpn(key, off), Some(Lpn(lpn)), "{mode:?} {lpn}");
                assert!(!std::mem::replace(&mut seen[s.striped(Lpn(lpn)) as usize], true));
            }
            for (a, b) in [(0, 100), (5, 6), (3, 29), (17, 64), (40, 41)] {
                let mut from_ranges: Vec<u32> = s.chip_ranges(a, b).flat_map(|(x, y)| x..y).collect();
                let mut direct: Vec<u32> = (a..b).map(|l| s.striped(Lpn(l))).collect();
                from_ranges.sort();
                direct.sort();
                assert_eq!(from_ranges, direct, "{mode:?} {a}..{b}");
            }
        }
    }

    #[test]
    fn page_striping_spreads_a_request_over_channels_first() {
        let g = geo(2, 2);
        let s = Stripes::new(Striping::Page, &g, 64);
        let chips: Vec<u32> = (0..4).map(|l| s.chip_of(s.locate(Lpn(l)).0)).collect();
        assert_eq!(chips, [0, 1, 2, 3]);
        assert_eq!(s.planes(1, &g), 4..6, "stripe chip 1 is channel 1, chip 0");
        let b = Stripes::new(Striping::Block, &g, 64);
        assert_eq!(b.chip_of(b.locate(Lpn(3)).0), 0);
        assert_eq!(b.chip_of(b.locate(Lpn(4)).0), 1);
    }
}
