//! COFTL's physical block sets, virtual addresses and OOB tags.
//!
//! Lanes are the planes in channel-first order (lane j is on channel
//! j mod channels). Lanes are grouped `k` at a time; a block set is block
//! `b` of each plane of one group, so its `k` blocks lie on `k` different
//! planes, on different channels whenever `k` ≤ channels. Set `s` is block
//! `s / groups` of group `s mod groups`, so consecutive sets rotate over
//! the groups. A page set is the pages at one offset of a set's blocks.
//!
//! Logical page `l` is lane `l mod k` of virtual page `l / k`; virtual page
//! `p` is virtual page address (VPA) `p mod V` of virtual block (VBA)
//! `p / V`, where V is a set's data page sets (pages per block − 2: the
//! last two page sets hold summary and replacement pages).

use crate::nand::{FastDiv, Geometry};
use crate::units::{BlockId, Ppn};
use serde::{Deserialize, Serialize};

/// OOB words: data pages hold their LPN; COFTL's own pages set bit 31 and
/// say what they are in bits 30..29, with an LPN or a VBA below.
pub const TAG: u32 = 1 << 31;
const KIND: u32 = 29;
pub const LOW: u32 = (1 << KIND) - 1;
pub const PAD: u32 = TAG;
pub const SUMMARY: u32 = TAG | 1 << KIND;
pub const LINK: u32 = TAG | 2 << KIND;
pub const LOG: u32 = TAG | 3 << KIND;

/// What a page's OOB says it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oob {
    Data(u32),
    /// Padding at a logical page's place (no data: reads as zeros).
    Pad(u32),
    /// A virtual page table snapshot of a virtual block.
    Summary(u32),
    /// The replacement page naming the next set of a virtual block's chain.
    Link(u32),
    Log,
}

pub fn decode(word: u32) -> Oob {
    if word & TAG == 0 {
        return Oob::Data(word);
    }
    match word & !LOW {
        PAD => Oob::Pad(word & LOW),
        SUMMARY => Oob::Summary(word & LOW),
        LINK => Oob::Link(word & LOW),
        _ => Oob::Log,
    }
}

/// Set geometry and address arithmetic.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sets {
    /// Blocks (lanes) per set.
    pub k: u32,
    pub pages_per_block: u32,
    pub blocks_per_plane: u32,
    groups: u32,
    /// Plane of each lane, channel-first.
    lane_plane: Vec<u32>,
    /// All sets; the last two are the log's dual buffer.
    pub sets: u32,
    /// Data page sets per set (V): the virtual pages of a virtual block.
    pub v: u32,
    pub vbs: u32,
    pub logical_pages: u32,
    /// Division by `groups`, `k` and `v` (none need be a power of two):
    /// every address of a merge's copies and host pages is decoded, and a
    /// `div` instruction per decode was most of the merge loop's own time.
    by_groups: FastDiv,
    by_k: FastDiv,
    by_v: FastDiv,
}

impl Sets {
    pub fn new(geo: &Geometry, k: u32, logical_pages: u32) -> Sets {
        let per_channel = geo.planes / geo.channels;
        let lane_plane = (0..geo.planes).map(|j| (j % geo.channels) * per_channel + j / geo.channels).collect();
        let groups = geo.planes / k;
        let v = geo.pages_per_block - 2;
        Sets {
            k,
            pages_per_block: geo.pages_per_block,
            blocks_per_plane: geo.blocks_per_plane,
            groups,
            lane_plane,
            sets: groups * geo.blocks_per_plane,
            v,
            vbs: logical_pages.div_ceil(v * k),
            logical_pages,
            by_groups: FastDiv::new(groups),
            by_k: FastDiv::new(k),
            by_v: FastDiv::new(v),
        }
    }

    /// Blocks of the drive (every plane's).
    pub fn blocks_total(&self) -> usize {
        self.lane_plane.len() * self.blocks_per_plane as usize
    }

    /// Sets that hold data (all but the log's two).
    pub fn data_sets(&self) -> u32 {
        self.sets - 2
    }

    pub fn log_set(&self, which: usize) -> u32 {
        self.sets - 2 + which as u32
    }

    #[inline]
    pub fn block(&self, set: u32, lane: u32) -> BlockId {
        let b = self.by_groups.div(set);
        let g = set - b * self.groups;
        BlockId(self.lane_plane[(g * self.k + lane) as usize] * self.blocks_per_plane + b)
    }

    #[inline]
    pub fn ppn(&self, set: u32, lane: u32, off: u32) -> Ppn {
        Ppn(self.block(set, lane).0 * self.pages_per_block + off)
    }

    /// (VBA, VPA, lane) of a logical page.
    #[inline]
    pub fn locate(&self, lpn: u32) -> (u32, u32, u32) {
        let vpn = self.by_k.div(lpn);
        let (vb, vpa) = self.split_vpn(vpn);
        (vb, vpa, lpn - vpn * self.k)
    }

    /// (VBA, VPA) of a virtual page.
    #[inline]
    pub fn split_vpn(&self, vpn: u32) -> (u32, u32) {
        let vb = self.by_v.div(vpn);
        (vb, vpn - vb * self.v)
    }

    #[inline]
    pub fn lpn(&self, vb: u32, vpa: u32, lane: u32) -> u32 {
        (vb * self.v + vpa) * self.k + lane
    }

    /// The lane of a set's end pages (summary at V, replacement at V + 1),
    /// rotated by the set's block row and group: recovery and table
    /// reloads read the end pages of many sets at once, and on one lane
    /// they would all queue on one channel's bus. Consecutive sets (of one
    /// row, over the groups) land on different channels, and each row
    /// shifts by one lane, so a range of sets covers every plane.
    #[inline]
    pub fn end_lane(&self, set: u32) -> u32 {
        let b = self.by_groups.div(set);
        self.by_k.rem(b + set - b * self.groups)
    }

    /// The lane whose OOB a scan reads at page set `off` of `set`: every
    /// lane of a data or mid-set summary page set names the same virtual
    /// page or block, so scans rotate over the lanes (and channels) from
    /// the set's end lane on, rather than queue on one; the summary and
    /// replacement pages at the end of a set are on its end lane only.
    #[inline]
    pub fn scan_lane(&self, set: u32, off: u32) -> u32 {
        let end = self.end_lane(set);
        if off < self.v { self.by_k.rem(end + off) } else { end }
    }

    /// The VBA of a page whose OOB names an LPN.
    pub fn vb_of_lpn(&self, lpn: u32) -> u32 {
        self.by_v.div(self.by_k.div(lpn))
    }
}

/// A VPT entry's location: chain position and page-set offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loc(pub u32);

impl Loc {
    pub const NONE: Loc = Loc(u32::MAX);

    pub fn new(idx: u32, off: u32) -> Loc {
        Loc(idx << 16 | off)
    }

    pub fn is_none(self) -> bool {
        self == Loc::NONE
    }

    pub fn idx(self) -> u32 {
        self.0 >> 16
    }

    pub fn off(self) -> u32 {
        self.0 & 0xffff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;

    #[test]
    fn a_set_spans_channels_first_and_addresses_round_trip() {
        let geo = Geometry::new(&GeometryConfig {
            channels: 4,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 8,
            pages_per_block: 16,
            page_size: 4096,
        });
        let s = Sets::new(&geo, 4, 1000);
        let channels: Vec<u32> = (0..4).map(|l| geo.channel_of(geo.plane_of(s.block(5, l)))).collect();
        assert_eq!(channels, [0, 1, 2, 3], "one block per channel");
        assert_eq!((s.sets, s.v, s.vbs), (16, 14, 18));
        for lpn in [0, 3, 4, 57, 999] {
            let (vb, vpa, lane) = s.locate(lpn);
            assert_eq!(s.lpn(vb, vpa, lane), lpn);
            assert_eq!(s.vb_of_lpn(lpn), vb);
        }
        for w in [7, PAD | 7, SUMMARY | 3, LINK | 3, LOG | 9] {
            assert!(matches!(
                (w, decode(w)),
                (7, Oob::Data(7)) | (_, Oob::Pad(7)) | (_, Oob::Summary(3)) | (_, Oob::Link(3)) | (_, Oob::Log)
            ));
        }
    }
}
